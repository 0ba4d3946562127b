//! RBAC's escalation check (kube's `pkg/registry/rbac` policy-based storages): no one grants
//! what they do not hold. Writing a Role or ClusterRole needs the `escalate` verb on it, or
//! every rule it holds; writing a binding needs `bind` on the role it names, or every rule of
//! that role, in the binding's namespace. An `aggregationRule` (which can gather anything)
//! needs cluster-admin's rights. `system:masters` is exempt, as in kube.
//!
//! The policy is taken once before the write ([`Guard::for_write`]); the check then runs on
//! the object about to be stored (after a patch is applied), inside the storage update.

use std::sync::Arc;

use listwatch_meta::validation::go_quote;
use listwatch_meta::{ApiError, GroupResource, Resource};
use serde_json::{Map, Value};

use super::rbac::{GROUP, Policy, PolicyRule, RoleRef};
use super::{Attributes, AuthorizationMode, SYSTEM_MASTERS};
use crate::authn::UserInfo;
use crate::state::ApiState;

/// The escalation check of one write of an RBAC object.
pub struct Guard {
    policy: Arc<Policy>,
    user: UserInfo,
    resource: &'static Resource,
}

impl Guard {
    /// The check a write of `resource` by `user` needs: `None` when it needs none (not RBAC
    /// mode, not an RBAC kind, or a member of `system:masters`).
    pub async fn for_write(state: &ApiState, user: &UserInfo, resource: &'static Resource) -> Option<Guard> {
        let checked = state.config.authorization == AuthorizationMode::Rbac
            && resource.group == GROUP
            && !user.groups.iter().any(|g| g == SYSTEM_MASTERS);
        if !checked {
            return None;
        }
        Some(Guard { policy: super::policy(state).await, user: user.clone(), resource })
    }

    /// Whether the user may store `object` in `namespace` ("" for cluster-scoped).
    pub fn check(&self, namespace: &str, object: &Map<String, Value>) -> Result<(), ApiError> {
        let name = object.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
        let gr = GroupResource::new(GROUP, self.resource.plural);
        let allowed = |verb: &str, resource: &str, name: &str| {
            let attributes = Attributes {
                verb: verb.into(),
                resource_request: true,
                api_group: GROUP.into(),
                resource: resource.into(),
                namespace: namespace.into(),
                name: name.into(),
                ..Attributes::default()
            };
            self.policy.authorize(&self.user, &attributes).is_allowed()
        };
        match self.resource.kind {
            "Role" | "ClusterRole" => {
                if allowed("escalate", self.resource.plural, name) {
                    return Ok(());
                }
                let rules = rules_of(object);
                self.confirm_no_escalation(namespace, &rules).map_err(|why| ApiError::forbidden(&gr, name, &why))?;
                if object.get("aggregationRule").is_some_and(|a| !a.is_null()) {
                    self.confirm_no_escalation(namespace, &full_authority()).map_err(|_| {
                        ApiError::forbidden(&gr, name, "must have cluster-admin privileges to use the aggregationRule")
                    })?;
                }
                Ok(())
            }
            "RoleBinding" | "ClusterRoleBinding" => {
                let Some(role_ref) =
                    object.get("roleRef").cloned().and_then(|r| serde_json::from_value::<RoleRef>(r).ok())
                else {
                    return Ok(()); // validation refuses it
                };
                let role_resource = if role_ref.kind == "Role" { "roles" } else { "clusterroles" };
                if allowed("bind", role_resource, &role_ref.name) {
                    return Ok(());
                }
                let Some(rules) = self.policy.role_rules(&role_ref, namespace) else {
                    return Err(ApiError::not_found(&GroupResource::new(GROUP, role_resource), &role_ref.name));
                };
                self.confirm_no_escalation(namespace, rules).map_err(|why| ApiError::forbidden(&gr, name, &why))
            }
            _ => Ok(()),
        }
    }

    /// kube's `ConfirmNoEscalation`: the rules the user holds in `namespace` cover `rules`;
    /// else the message listing what they lack.
    fn confirm_no_escalation(&self, namespace: &str, rules: &[PolicyRule]) -> Result<(), String> {
        let (owned, errors) = self.policy.rules_for(&self.user, namespace);
        let missing: Vec<PolicyRule> =
            rules.iter().flat_map(breakdown).filter(|atom| !owned.iter().any(|o| covers(o, atom))).collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut described: Vec<String> = compact(missing).iter().map(compact_string).collect();
        described.sort();
        described.dedup();
        let groups: Vec<String> = self.user.groups.iter().map(|g| go_quote(g)).collect();
        let mut message = format!(
            "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&self.user.name),
            groups.join(" "),
            described.join("\n")
        );
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(message)
    }
}

fn rules_of(object: &Map<String, Value>) -> Vec<PolicyRule> {
    object.get("rules").cloned().and_then(|r| serde_json::from_value(r).ok()).unwrap_or_default()
}

fn full_authority() -> Vec<PolicyRule> {
    let all = || vec!["*".to_string()];
    vec![
        PolicyRule { verbs: all(), api_groups: all(), resources: all(), ..PolicyRule::default() },
        PolicyRule { verbs: all(), non_resource_urls: all(), ..PolicyRule::default() },
    ]
}

/// kube's `BreakdownRule`: one rule per group, resource, verb (and name), or per URL and verb.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |v: &String| vec![v.clone()];
    let mut atoms = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    atoms.push(base);
                } else {
                    atoms.extend(
                        rule.resource_names.iter().map(|n| PolicyRule { resource_names: one(n), ..base.clone() }),
                    );
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            atoms.push(PolicyRule { verbs: one(verb), non_resource_urls: one(url), ..Default::default() });
        }
    }
    atoms
}

/// kube's `ruleCovers`.
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let has = |set: &[String], v: &str| set.iter().any(|s| s == v);
    let has_all = |set: &[String], values: &[String]| values.iter().all(|v| has(set, v));
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = has(&owner.resources, "*")
        || sub.resources.iter().all(|r| {
            has(&owner.resources, r)
                || r.split_once('/').is_some_and(|(_, sub)| has(&owner.resources, &format!("*/{sub}")))
        });
    let urls = sub.non_resource_urls.iter().all(|url| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == "*" || o == url || o.strip_suffix('*').is_some_and(|prefix| url.starts_with(prefix)))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// kube's `CompactRules`: atoms that differ only in their verb become one rule.
fn compact(atoms: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for atom in atoms {
        let simple = atom.non_resource_urls.is_empty();
        match out.iter_mut().find(|r| {
            simple
                && r.non_resource_urls.is_empty()
                && r.api_groups == atom.api_groups
                && r.resources == atom.resources
                && r.resource_names == atom.resource_names
        }) {
            Some(rule) => {
                if !rule.verbs.contains(&atom.verbs[0]) {
                    rule.verbs.extend(atom.verbs);
                }
            }
            None => out.push(atom),
        }
    }
    out
}

/// kube's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let quoted = |values: &[String]| {
        let q: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
        format!("[{}]", q.join(" "))
    };
    let mut parts = Vec::new();
    for (name, values) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !values.is_empty() {
            parts.push(format!("{name}:{}", quoted(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(std::string::ToString::to_string).collect();
        PolicyRule { verbs: v(verbs), api_groups: v(groups), resources: v(resources), ..Default::default() }
    }

    #[test]
    fn owned_rules_cover_what_they_grant() {
        let owner = rule(&[""], &["pods", "*/status"], &["get", "list"]);
        assert!(covers(&owner, &rule(&[""], &["pods"], &["get"])));
        assert!(covers(&owner, &rule(&[""], &["configmaps/status"], &["list"])));
        assert!(!covers(&owner, &rule(&[""], &["pods"], &["delete"])));
        assert!(!covers(&owner, &rule(&["apps"], &["pods"], &["get"])));
        assert!(covers(&rule(&["*"], &["*"], &["*"]), &rule(&["apps"], &["deployments"], &["patch"])));
    }

    #[test]
    fn missing_rights_are_listed_as_kube_lists_them() {
        let atoms = breakdown(&rule(&["", "apps"], &["deployments"], &["get", "create"]));
        assert_eq!(atoms.len(), 4);
        let shown: Vec<String> = compact(atoms).iter().map(compact_string).collect();
        assert_eq!(
            shown,
            [
                r#"{APIGroups:[""], Resources:["deployments"], Verbs:["get" "create"]}"#,
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "create"]}"#,
            ]
        );
    }
}
