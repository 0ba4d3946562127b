//! kube's validation of the RBAC kinds (`pkg/apis/rbac/validation`): rules must say what they
//! grant (verbs; resources with groups, or non-resource URLs, never both, and no URLs in a
//! namespaced Role); bindings must refer to an RBAC role by name and list well-formed
//! subjects; a binding's `roleRef` never changes. Run after defaulting (the roleRef's and
//! User/Group subjects' `apiGroup`).

use serde_json::{Map, Value};

use crate::validation::{FieldError, go_quote, is_valid_path_segment_name};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Go's `%#v` of a `[]string`.
fn go_strings(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn strings<'a>(object: &'a Map<String, Value>, key: &str) -> Vec<&'a str> {
    object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn objects<'a>(object: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Map<String, Value>> {
    object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// `ValidatePolicyRule` of each of a role's rules.
pub fn validate_role(object: &Map<String, Value>, namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, rule) in objects(object, "rules").enumerate() {
        let path = format!("rules[{i}]");
        if strings(rule, "verbs").is_empty() {
            errors.push(FieldError::required(format!("{path}.verbs"), "verbs must contain at least one value"));
        }
        let urls = strings(rule, "nonResourceURLs");
        if !urls.is_empty() {
            if namespaced {
                errors.push(FieldError::invalid_raw(
                    format!("{path}.nonResourceURLs"),
                    &go_strings(&urls),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            let resources = ["apiGroups", "resources", "resourceNames"];
            if resources.iter().any(|k| !strings(rule, k).is_empty()) {
                errors.push(FieldError::invalid_raw(
                    format!("{path}.nonResourceURLs"),
                    &go_strings(&urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if strings(rule, "apiGroups").is_empty() {
            errors.push(FieldError::required(
                format!("{path}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if strings(rule, "resources").is_empty() {
            errors.push(FieldError::required(
                format!("{path}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    if !namespaced
        && let Some(aggregation) = object.get("aggregationRule").and_then(Value::as_object)
        && objects(aggregation, "clusterRoleSelectors").next().is_none()
    {
        errors.push(FieldError::required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    errors
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding`: the roleRef, then each subject.
pub fn validate_binding(object: &Map<String, Value>, namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let empty = Map::new();
    let role_ref = object.get("roleRef").and_then(Value::as_object).unwrap_or(&empty);
    let group = text(role_ref, "apiGroup");
    if group != GROUP {
        errors.push(FieldError::not_supported("roleRef.apiGroup", &go_quote(group), &[GROUP]));
    }
    let kind = text(role_ref, "kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        errors.push(FieldError::not_supported("roleRef.kind", &go_quote(kind), kinds));
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errors.push(FieldError::required("roleRef.name", ""));
    } else {
        for message in is_valid_path_segment_name(name) {
            errors.push(FieldError::invalid("roleRef.name", name, &message));
        }
    }
    for (i, subject) in objects(object, "subjects").enumerate() {
        let path = format!("subjects[{i}]");
        let name = text(subject, "name");
        if name.is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), ""));
        }
        let group = text(subject, "apiGroup");
        match text(subject, "kind") {
            "ServiceAccount" => {
                if !group.is_empty() {
                    errors.push(FieldError::not_supported(format!("{path}.apiGroup"), &go_quote(group), &[""]));
                }
                if !namespaced && text(subject, "namespace").is_empty() {
                    errors.push(FieldError::required(format!("{path}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != GROUP {
                    errors.push(FieldError::not_supported(format!("{path}.apiGroup"), &go_quote(group), &[GROUP]));
                }
            }
            other => errors.push(FieldError::not_supported(
                format!("{path}.kind"),
                &go_quote(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errors
}

/// `ValidateRoleBindingUpdate`: the roleRef is fixed once written.
pub fn validate_binding_update(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let (old_ref, new_ref) = (old.get("roleRef"), new.get("roleRef"));
    if old_ref == new_ref {
        return Vec::new();
    }
    let empty = Map::new();
    let r = new_ref.and_then(Value::as_object).unwrap_or(&empty);
    let shown = format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        go_quote(text(r, "apiGroup")),
        go_quote(text(r, "kind")),
        go_quote(text(r, "name"))
    );
    vec![FieldError::invalid_raw("roleRef", &shown, "cannot change roleRef")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rules_say_what_they_grant() {
        let role = map(json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]},
            {"verbs": ["get"]},
        ]}));
        let shown: Vec<String> = validate_role(&role, true).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                r#"rules[1].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
                r#"rules[1].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs"#,
                "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[2].resources: Required value: resource rules must supply at least one resource",
            ]
        );
    }

    #[test]
    fn bindings_name_an_rbac_role_and_real_subjects() {
        let binding = map(json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ""},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "r2"}],
        }));
        let shown: Vec<String> = validate_binding(&binding, false).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
                "roleRef.name: Required value",
                "subjects[0].namespace: Required value",
                r#"subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
            ]
        );
        let old = map(json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}}));
        let new = map(json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "edit"}}));
        assert_eq!(
            validate_binding_update(&old, &new)[0].to_string(),
            r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#
        );
    }
}
