//! Deployments and ReplicaSets as kube-apiserver 1.32 checks them
//! (`pkg/apis/apps/validation` `ValidateDeploymentSpec`, `ValidateReplicaSetSpec`, and the
//! strategies' `ValidateUpdate`), with kube's paths and texts:
//!
//! * replica counts and the other counts are not negative;
//! * the selector is required, valid (`ValidateLabelSelector`) and not empty, and it selects
//!   the template's labels (`spec.template.metadata.labels: Invalid value:
//!   map[string]string{...}: `selector` does not match template `labels``);
//! * the template is a valid pod template (`ValidatePodTemplateSpec`) whose pods restart
//!   `Always` and have no `activeDeadlineSeconds`;
//! * in apps/v1 the selector never changes (`spec.selector: Invalid value:
//!   v1.LabelSelector{...}: field is immutable`).
//!
//! Values kube prints with Go's `%#v` (a selector, a label map) are rendered the same way here.
//! Fields kube defaults (`strategy`, `revisionHistoryLimit`) are checked only when sent.

use serde_json::{Map, Value};

use crate::pod_validation::validate_pod_spec;
use crate::validation::{FieldError, go_quote};
use crate::write_validation::{is_qualified_name, is_valid_label_value, validate_annotations, validate_labels};

/// Go's `%#v` of a `map[string]string` (keys sorted, as fmt prints maps); `None` is a nil map.
fn go_string_map(map: Option<&Map<String, Value>>) -> String {
    let Some(map) = map else { return "map[string]string(nil)".to_owned() };
    let mut entries: Vec<(&String, &str)> = map.iter().map(|(k, v)| (k, v.as_str().unwrap_or(""))).collect();
    entries.sort();
    let shown: Vec<String> = entries.iter().map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v))).collect();
    format!("map[string]string{{{}}}", shown.join(", "))
}

/// Go's `%#v` of a `[]string`; `None` is a nil slice.
fn go_strings(values: Option<&Vec<Value>>) -> String {
    let Some(values) = values else { return "[]string(nil)".to_owned() };
    let shown: Vec<String> = values.iter().map(|v| go_quote(v.as_str().unwrap_or(""))).collect();
    format!("[]string{{{}}}", shown.join(", "))
}

/// Go's `%#v` of a `metav1.LabelSelector` (what kube shows of a selector it refuses).
pub fn go_label_selector(selector: &Map<String, Value>) -> String {
    let expressions = match selector.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let shown: Vec<String> = list
                .iter()
                .map(|e| {
                    let text = |f: &str| go_quote(e.get(f).and_then(Value::as_str).unwrap_or(""));
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        text("key"),
                        text("operator"),
                        go_strings(e.get("values").and_then(Value::as_array))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", shown.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{expressions}}}",
        go_string_map(selector.get("matchLabels").and_then(Value::as_object))
    )
}

fn expressions(selector: &Map<String, Value>) -> Vec<&Map<String, Value>> {
    selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect()
}

fn strings(values: Option<&Value>) -> Vec<&str> {
    values.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// `ValidateLabelSelector` (label values must be valid, as workloads ask).
pub fn validate_label_selector(selector: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        errors.extend(validate_labels(labels, &format!("{path}.matchLabels")));
    }
    for (i, expression) in expressions(selector).into_iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = strings(expression.get("values"));
        let operator = expression.get("operator").and_then(Value::as_str).unwrap_or("");
        match operator {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(FieldError::invalid(format!("{at}.operator"), other, "not a valid selector operator")),
        }
        let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
        errors.extend(is_qualified_name(key).iter().map(|m| FieldError::invalid(format!("{at}.key"), key, m)));
        for (j, value) in values.iter().enumerate() {
            errors.extend(
                is_valid_label_value(value).iter().map(|m| FieldError::invalid(format!("{at}.values[{j}]"), value, m)),
            );
        }
    }
    errors
}

/// Whether `metav1.LabelSelectorAsSelector` turns the selector into a selector (its
/// requirements all valid).
fn converts(selector: &Map<String, Value>) -> bool {
    let labels_ok = selector.get("matchLabels").and_then(Value::as_object).is_none_or(|labels| {
        labels
            .iter()
            .all(|(k, v)| is_qualified_name(k).is_empty() && is_valid_label_value(v.as_str().unwrap_or("")).is_empty())
    });
    labels_ok
        && expressions(selector).iter().all(|e| {
            let values = strings(e.get("values"));
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let operator_ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" | "NotIn" => !values.is_empty(),
                "Exists" | "DoesNotExist" => values.is_empty(),
                _ => false,
            };
            operator_ok
                && is_qualified_name(key).is_empty()
                && values.iter().all(|v| is_valid_label_value(v).is_empty())
        })
}

/// Whether the selector selects these labels (`labels.Selector.Matches`).
fn selects(selector: &Map<String, Value>, labels: Option<&Map<String, Value>>) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    match_labels.into_iter().flatten().all(|(k, v)| label(k) == v.as_str())
        && expressions(selector).iter().all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values = strings(e.get("values"));
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        })
}

fn is_empty_selector(selector: &Map<String, Value>) -> bool {
    let count = |field: &str| match selector.get(field) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

fn non_negative(errors: &mut Vec<FieldError>, spec: &Map<String, Value>, field: &str) {
    if let Some(value) = spec.get(field).and_then(Value::as_i64).filter(|v| *v < 0) {
        errors.push(FieldError::invalid_raw(
            format!("spec.{field}"),
            &value.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` after the selector converted (`selector` `None`:
/// there is none, which selects nothing).
fn validate_template(template: &Map<String, Value>, selector: Option<&Map<String, Value>>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let metadata = template.get("metadata").and_then(Value::as_object);
    let labels = metadata.and_then(|m| m.get("labels")).and_then(Value::as_object);
    let matches = match selector {
        None => false,
        Some(selector) => is_empty_selector(selector) || selects(selector, labels),
    };
    if !matches {
        errors.push(FieldError::invalid_raw(
            "spec.template.metadata.labels",
            &go_string_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
    // ValidatePodTemplateSpec.
    if let Some(labels) = labels {
        errors.extend(validate_labels(labels, "spec.template.labels"));
    }
    if let Some(annotations) = metadata.and_then(|m| m.get("annotations")).and_then(Value::as_object) {
        errors.extend(validate_annotations(annotations, "spec.template.annotations"));
    }
    let spec = template.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    errors.extend(validate_pod_spec(&spec, "spec.template.spec"));
    if spec.get("ephemeralContainers").and_then(Value::as_array).is_some_and(|c| !c.is_empty()) {
        errors.push(FieldError::forbidden(
            "spec.template.spec.ephemeralContainers",
            "ephemeral containers not allowed in pod template",
        ));
    }
    let restart = spec.get("restartPolicy").and_then(Value::as_str).unwrap_or("");
    if !restart.is_empty() && restart != "Always" {
        errors.push(FieldError::not_supported("spec.template.spec.restartPolicy", &go_quote(restart), &["Always"]));
    }
    if spec.get("activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        errors.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
    errors
}

/// The selector and template part shared by Deployments and ReplicaSets.
fn validate_selector_and_template(spec: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let selector = spec.get("selector").and_then(Value::as_object);
    match selector {
        None => errors.push(FieldError::required("spec.selector", "")),
        Some(selector) => {
            errors.extend(validate_label_selector(selector, "spec.selector"));
            if is_empty_selector(selector) {
                errors.push(FieldError::invalid_raw(
                    "spec.selector",
                    &go_label_selector(selector),
                    "empty selector is invalid for deployment",
                ));
            }
        }
    }
    if selector.is_some_and(|s| !converts(s)) {
        errors.push(FieldError::invalid_raw(
            "spec.selector",
            &go_label_selector(selector.expect("checked")),
            "invalid label selector",
        ));
    } else {
        let template = spec.get("template").and_then(Value::as_object).cloned().unwrap_or_default();
        errors.extend(validate_template(&template, selector));
    }
    errors
}

fn spec_of(object: &Map<String, Value>) -> Map<String, Value> {
    object.get("spec").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `ValidateDeploymentSpec`.
pub fn validate_deployment(object: &Map<String, Value>) -> Vec<FieldError> {
    let spec = spec_of(object);
    let mut errors = Vec::new();
    non_negative(&mut errors, &spec, "replicas");
    errors.extend(validate_selector_and_template(&spec));
    if let Some(strategy) = spec.get("strategy").and_then(Value::as_object)
        && strategy.get("type").and_then(Value::as_str) == Some("Recreate")
        && strategy.get("rollingUpdate").is_some_and(|v| !v.is_null())
    {
        errors.push(FieldError::forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        ));
    }
    non_negative(&mut errors, &spec, "minReadySeconds");
    non_negative(&mut errors, &spec, "revisionHistoryLimit");
    if let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
        non_negative(&mut errors, &spec, "progressDeadlineSeconds");
        let min_ready = spec.get("minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
        if deadline <= min_ready {
            errors.push(FieldError::invalid_raw(
                "spec.progressDeadlineSeconds",
                &deadline.to_string(),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errors
}

/// `ValidateReplicaSetSpec`.
pub fn validate_replica_set(object: &Map<String, Value>) -> Vec<FieldError> {
    let spec = spec_of(object);
    let mut errors = Vec::new();
    non_negative(&mut errors, &spec, "replicas");
    non_negative(&mut errors, &spec, "minReadySeconds");
    errors.extend(validate_selector_and_template(&spec));
    errors
}

/// A selector as kube's semantic equality compares it: empty maps and lists are absent.
fn normalized_selector(object: &Map<String, Value>) -> Option<Map<String, Value>> {
    let selector = object.get("spec").and_then(|s| s.get("selector")).and_then(Value::as_object)?;
    Some(
        selector
            .iter()
            .filter(|(_, v)| match v {
                Value::Null => false,
                Value::Object(m) => !m.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The apps/v1 strategies' rule that the selector never changes.
pub fn validate_selector_update(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let new_selector = normalized_selector(new);
    if normalized_selector(old) == new_selector {
        return Vec::new();
    }
    let shown = match new.get("spec").and_then(|s| s.get("selector")).and_then(Value::as_object) {
        Some(selector) => go_label_selector(selector),
        None => "\"null\"".to_owned(),
    };
    vec![FieldError::invalid_raw("spec.selector", &shown, "field is immutable")]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    fn texts(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::to_string).collect()
    }

    fn deployment(selector: Value, labels: Value) -> Map<String, Value> {
        map(json!({"spec": {"replicas": 1, "selector": selector, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    }

    #[test]
    fn valid_deployments() {
        assert!(
            validate_deployment(&deployment(json!({"matchLabels": {"app": "x"}}), json!({"app": "x", "b": "c"})))
                .is_empty()
        );
        let expressions = json!({"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["x", "y"]},
            {"key": "tier", "operator": "DoesNotExist"}
        ]});
        assert!(validate_deployment(&deployment(expressions, json!({"app": "y"}))).is_empty());
    }

    #[test]
    fn selector_must_select_the_template() {
        let errors = validate_deployment(&deployment(json!({"matchLabels": {"app": "x"}}), json!({"app": "other"})));
        assert_eq!(
            texts(&errors),
            vec![
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"
            ]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueInvalid");
        let mut missing = deployment(json!({}), json!({"app": "x"}));
        missing["spec"].as_object_mut().unwrap().shift_remove("selector");
        assert_eq!(
            texts(&validate_deployment(&missing)),
            vec![
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"x\"}: `selector` does not match template `labels`",
            ]
        );
        assert_eq!(
            texts(&validate_deployment(&deployment(json!({}), json!({"app": "x"})))),
            vec![
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"
            ]
        );
    }

    #[test]
    fn bad_selectors_and_templates() {
        let bad = deployment(
            json!({"matchExpressions": [{"key": "a", "operator": "Has", "values": ["x"]}]}),
            json!({"a": "x"}),
        );
        assert_eq!(
            texts(&validate_deployment(&bad)),
            vec![
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Has\": not a valid selector operator",
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"a\", Operator:\"Has\", Values:[]string{\"x\"}}}}: invalid label selector",
            ]
        );
        let mut pods = deployment(json!({"matchLabels": {"a": "x"}}), json!({"a": "x"}));
        pods["spec"]["template"]["spec"] = json!({"restartPolicy": "Never", "containers": []});
        assert_eq!(
            texts(&validate_replica_set(&pods)),
            vec![
                "spec.template.spec.containers: Required value",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
    }

    #[test]
    fn selectors_are_immutable() {
        let old = deployment(json!({"matchLabels": {"app": "d1"}}), json!({"app": "d1"}));
        let same = deployment(json!({"matchLabels": {"app": "d1"}, "matchExpressions": []}), json!({"app": "d1"}));
        assert!(validate_selector_update(&old, &same).is_empty());
        let changed = deployment(json!({"matchLabels": {"app": "d2"}}), json!({"app": "d2"}));
        let errors = validate_selector_update(&old, &changed);
        assert_eq!(
            texts(&errors),
            vec![
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"d2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
            ]
        );
    }
}
