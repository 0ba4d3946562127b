//! The RBAC authorizer (kube's `plugin/pkg/auth/authorizer/rbac`): a request is allowed when
//! a rule of a role bound to the user covers it. ClusterRoleBindings grant their ClusterRole
//! everywhere; RoleBindings grant a Role of their namespace, or a ClusterRole, in their
//! namespace only. Nothing denies: no matching rule is a 403.
//!
//! The policy is read from the four RBAC resources' watch caches, as kube's authorizer reads
//! its informers: a binding just written applies once the cache has it (milliseconds), not
//! necessarily to the very next request. The parsed policy is kept and rebuilt only when one
//! of the caches has moved on. A ClusterRole with an `aggregationRule` grants the rules of
//! every ClusterRole its selectors pick, computed here when the policy is rebuilt (kube's
//! aggregation controller writes them into the role; [`super::bootstrap`] does that for the
//! default roles).

use std::collections::HashMap;
use std::sync::Arc;

use listwatch_meta::selector::LabelSelector;
use listwatch_meta::validation::go_quote;
use listwatch_meta::{Object, Registry, Resource};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attributes::{Attributes, Decision};
use crate::authn::UserInfo;
use crate::registry::ResourceStore;

pub const GROUP: &str = "rbac.authorization.k8s.io";

/// One rule of a role (`rbacv1.PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(default, rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Whether the rule allows the request (kube's `RuleAllows`).
    pub fn allows(&self, a: &Attributes) -> bool {
        if !self.verbs.iter().any(|v| v == "*" || *v == a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|rule| {
                rule == "*"
                    || *rule == a.path
                    || rule.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix))
            });
        }
        self.api_groups.iter().any(|g| g == "*" || *g == a.api_group)
            && self.matches_resource(&a.resource, &a.subresource)
            && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
    }

    /// kube's `ResourceMatches`: `*`, the resource (without a subresource), `resource/sub`,
    /// `*/sub`, or `resource/*`.
    fn matches_resource(&self, resource: &str, subresource: &str) -> bool {
        let combined = if subresource.is_empty() { resource.to_string() } else { format!("{resource}/{subresource}") };
        self.resources.iter().any(|rule| {
            if rule == "*" || *rule == combined {
                return true;
            }
            if subresource.is_empty() {
                return false;
            }
            rule.strip_prefix("*/").is_some_and(|sub| sub == subresource)
                || rule.strip_suffix("/*").is_some_and(|res| res == resource)
        })
    }
}

/// Who a binding grants (`rbacv1.Subject`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl Subject {
    /// kube's `appliesToUser`; `namespace` is the binding's (a ServiceAccount subject of a
    /// RoleBinding without a namespace means the binding's own).
    pub fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let namespace = if self.namespace.is_empty() { binding_namespace } else { &self.namespace };
                !namespace.is_empty() && user.name == format!("system:serviceaccount:{namespace}:{}", self.name)
            }
            _ => false,
        }
    }

    /// As kube's "allowed by" reason names it (`User "alice"`, and, in kube's order,
    /// `ServiceAccount "name/namespace"`).
    fn describe(&self, binding_namespace: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let namespace = if self.namespace.is_empty() { binding_namespace } else { &self.namespace };
                format!("ServiceAccount {}", go_quote(&format!("{}/{namespace}", self.name)))
            }
            kind => format!("{kind} {}", go_quote(&self.name)),
        }
    }
}

/// What a binding grants (`rbacv1.RoleRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    #[serde(default)]
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

/// A RoleBinding or ClusterRoleBinding as the authorizer needs it.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingFields {
    #[serde(default)]
    subjects: Option<Vec<Subject>>,
    role_ref: RoleRef,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleFields {
    #[serde(default)]
    rules: Option<Vec<PolicyRule>>,
    #[serde(default)]
    aggregation_rule: Option<Value>,
}

/// Every role and binding, parsed; ClusterRoles' aggregated rules resolved.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    roles: HashMap<(String, String), Vec<PolicyRule>>,
    cluster_role_bindings: Vec<Binding>,
    role_bindings: HashMap<String, Vec<Binding>>,
}

/// The parsed policy, kept until one of the caches moves (keyed by their resourceVersions).
#[derive(Default)]
pub struct PolicyCache {
    current: Mutex<Option<([i64; 4], Arc<Policy>)>>,
}

/// The RBAC resources, in the order [`PolicyCache::get`] takes their stores.
pub const RESOURCES: [&str; 4] = ["clusterroles", "roles", "clusterrolebindings", "rolebindings"];

/// The RBAC resource `plural`.
pub fn resource(plural: &str) -> &'static Resource {
    Registry.find(GROUP, "v1", plural).expect("the RBAC resources are registered")
}

impl PolicyCache {
    /// The policy as the caches of `stores` (the four RBAC resources', [`stores`]) hold it
    /// now (as storage holds it when a cache is off or not ready).
    pub async fn get(&self, stores: &[Arc<ResourceStore>]) -> Arc<Policy> {
        let caches: Option<Vec<_>> = stores.iter().map(|s| s.cache.as_ref().filter(|c| c.is_ready())).collect();
        let key = caches.as_ref().map(|caches| {
            let mut key = [0; 4];
            for (slot, cache) in key.iter_mut().zip(caches) {
                *slot = cache.resource_version();
            }
            key
        });
        if let (Some(key), Some((cached, policy))) = (key, self.current.lock().as_ref())
            && key == *cached
        {
            return policy.clone();
        }
        let mut lists = Vec::with_capacity(4);
        for store in stores {
            let objects = match store.cache.as_ref().filter(|c| c.is_ready()) {
                Some(cache) => cache.list(None, None, None).await.map(|l| l.items).ok(),
                None => None,
            };
            let objects = match objects {
                Some(objects) => objects,
                None => store.list_all_now().await.unwrap_or_default(),
            };
            lists.push(objects);
        }
        let policy = Arc::new(Policy::from_objects(&lists[0], &lists[1], &lists[2], &lists[3]));
        if let Some(key) = key {
            *self.current.lock() = Some((key, policy.clone()));
        }
        policy
    }
}

impl Policy {
    fn from_objects(
        cluster_roles: &[Arc<Object>],
        roles: &[Arc<Object>],
        cluster_role_bindings: &[Arc<Object>],
        role_bindings: &[Arc<Object>],
    ) -> Policy {
        let role_fields = |o: &Object| serde_json::from_value::<RoleFields>(o.value()).ok();
        let mut policy = Policy::default();
        let mut aggregating = Vec::new();
        let mut labels = HashMap::new();
        for o in cluster_roles {
            let Some(fields) = role_fields(o) else { continue };
            labels.insert(o.name().to_string(), o.labels().cloned());
            if let Some(rule) = fields.aggregation_rule {
                aggregating.push((o.name().to_string(), rule));
            }
            policy.cluster_roles.insert(o.name().to_string(), fields.rules.unwrap_or_default());
        }
        // Aggregation, one level deep as kube's controller converges to: the rules of every
        // ClusterRole a selector picks, after the role's own.
        let mut aggregated = Vec::new();
        for (name, rule) in &aggregating {
            let selectors: Vec<LabelSelector> = rule
                .get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(LabelSelector::from_api)
                .collect();
            let mut rules = policy.cluster_roles.get(name).cloned().unwrap_or_default();
            let mut picked: Vec<&String> = labels
                .iter()
                .filter(|(other, l)| *other != name && selectors.iter().any(|s| s.matches(l.as_ref())))
                .map(|(other, _)| other)
                .collect();
            picked.sort();
            for other in picked {
                for r in policy.cluster_roles.get(other).into_iter().flatten() {
                    if !rules.contains(r) {
                        rules.push(r.clone());
                    }
                }
            }
            aggregated.push((name.clone(), rules));
        }
        policy.cluster_roles.extend(aggregated);
        for o in roles {
            let Some(fields) = role_fields(o) else { continue };
            policy.roles.insert((o.namespace().to_string(), o.name().to_string()), fields.rules.unwrap_or_default());
        }
        let binding = |o: &Object| {
            let fields = serde_json::from_value::<BindingFields>(o.value()).ok()?;
            Some(Binding {
                name: o.name().to_string(),
                namespace: o.namespace().to_string(),
                role_ref: fields.role_ref,
                subjects: fields.subjects.unwrap_or_default(),
            })
        };
        policy.cluster_role_bindings = cluster_role_bindings.iter().filter_map(|o| binding(o)).collect();
        for b in role_bindings.iter().filter_map(|o| binding(o)) {
            policy.role_bindings.entry(b.namespace.clone()).or_default().push(b);
        }
        policy
    }

    /// The rules a binding grants, or kube's error when its role does not exist.
    fn rules_of(&self, binding: &Binding) -> Result<&[PolicyRule], String> {
        let r = &binding.role_ref;
        self.role_rules(r, &binding.namespace)
            .ok_or_else(|| format!("{}.{GROUP} {} not found", r.kind.to_lowercase(), go_quote(&r.name)))
    }

    /// The rules of the role `role_ref` names for a binding in `namespace`, if it exists.
    pub fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Option<&[PolicyRule]> {
        let found = match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            "Role" => self.roles.get(&(namespace.to_string(), role_ref.name.clone())),
            _ => None,
        };
        found.map(Vec::as_slice)
    }

    /// Visits every rule that applies to `user` in `namespace` (and cluster-wide), with the
    /// binding that grants it, until `visit` returns true; errors of dangling role
    /// references are collected (kube's `VisitRulesFor`).
    fn visit_rules<'a>(
        &'a self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&'a Binding, &'a Subject, &'a PolicyRule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let namespaced = (!namespace.is_empty()).then(|| self.role_bindings.get(namespace)).flatten();
        let bindings = self.cluster_role_bindings.iter().chain(namespaced.into_iter().flatten());
        for binding in bindings {
            let Some(subject) = binding.subjects.iter().find(|s| s.applies_to(user, &binding.namespace)) else {
                continue;
            };
            match self.rules_of(binding) {
                Ok(rules) => {
                    for rule in rules {
                        if visit(binding, subject, rule) {
                            return errors;
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// kube's RBAC decision and reason for one request.
    pub fn authorize(&self, user: &UserInfo, a: &Attributes) -> Decision {
        let mut allowed_by = None;
        let errors = self.visit_rules(user, &a.namespace, |binding, subject, rule| {
            if rule.allows(a) {
                allowed_by = Some((binding, subject));
                return true;
            }
            false
        });
        if let Some((binding, subject)) = allowed_by {
            // kube's describers: a RoleBinding as "name/namespace".
            let kind = if binding.namespace.is_empty() {
                format!("ClusterRoleBinding {}", go_quote(&binding.name))
            } else {
                format!("RoleBinding {}", go_quote(&format!("{}/{}", binding.name, binding.namespace)))
            };
            let role = format!("{} {}", binding.role_ref.kind, go_quote(&binding.role_ref.name));
            let reason = format!("RBAC: allowed by {kind} of {role} to {}", subject.describe(&binding.namespace));
            return Decision::Allow(reason);
        }
        let reason = match errors.as_slice() {
            [] => String::new(),
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        };
        Decision::Deny(reason)
    }

    /// Every rule that applies to `user` in `namespace`, and the errors met (a
    /// SelfSubjectRulesReview's answer).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit_rules(user, namespace, |_, _, rule| {
            rules.push(rule.clone());
            false
        });
        (rules, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(std::string::ToString::to_string).collect();
        PolicyRule { verbs: v(verbs), api_groups: v(groups), resources: v(resources), ..Default::default() }
    }

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            ..Default::default()
        }
    }

    #[test]
    fn resources_match_as_kube_matches_them() {
        let pods = rule(&["get"], &[""], &["pods"]);
        assert!(pods.allows(&attrs("get", "", "pods", "")));
        assert!(!pods.allows(&attrs("get", "", "pods", "log")), "a resource does not cover its subresources");
        assert!(!pods.allows(&attrs("list", "", "pods", "")));
        assert!(!pods.allows(&attrs("get", "apps", "pods", "")));
        assert!(rule(&["get"], &[""], &["pods/log"]).allows(&attrs("get", "", "pods", "log")));
        assert!(rule(&["get"], &[""], &["*/log"]).allows(&attrs("get", "", "pods", "log")));
        assert!(rule(&["get"], &[""], &["pods/*"]).allows(&attrs("get", "", "pods", "log")));
        assert!(!rule(&["get"], &[""], &["pods/*"]).allows(&attrs("get", "", "pods", "")));
        assert!(rule(&["*"], &["*"], &["*"]).allows(&attrs("deletecollection", "apps", "deployments", "scale")));
        let named = PolicyRule { resource_names: vec!["one".into()], ..rule(&["get"], &[""], &["configmaps"]) };
        let mut a = attrs("get", "", "configmaps", "");
        assert!(!named.allows(&a));
        a.name = "one".into();
        assert!(named.allows(&a));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..Default::default()
        };
        let path = |p: &str| Attributes { verb: "get".into(), path: p.into(), ..Default::default() };
        assert!(r.allows(&path("/healthz")));
        assert!(!r.allows(&path("/healthz/etcd")));
        assert!(r.allows(&path("/apis/apps/v1")));
        assert!(!r.allows(&path("/api/v1")));
        assert!(!r.allows(&attrs("get", "", "healthz", "")), "a path rule grants no resource");
    }

    #[test]
    fn service_account_subjects_name_their_namespace() {
        let sa = Subject { kind: "ServiceAccount".into(), name: "ctl".into(), ..Default::default() };
        let user = UserInfo { name: "system:serviceaccount:team:ctl".into(), ..Default::default() };
        assert!(sa.applies_to(&user, "team"));
        assert!(!sa.applies_to(&user, "other"));
        assert!(!sa.applies_to(&user, ""), "a cluster binding's service account needs a namespace");
    }
}
