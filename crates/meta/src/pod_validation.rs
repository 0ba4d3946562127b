//! Pod specs as kube-apiserver 1.32 checks them (`pkg/apis/core/validation`), with its field
//! paths and texts, so a client refused by a real cluster is refused here the same way.
//!
//! * [`validate_pod_spec`] (`ValidatePodSpec`, also run on the template of a Deployment or
//!   ReplicaSet): at least one container; each container (and init container) named by a
//!   DNS-1123 label unique in the pod, with an image and a supported `imagePullPolicy` and
//!   `terminationMessagePolicy`; a supported `restartPolicy` and `dnsPolicy`; node selector
//!   labels; the names of the service account and the node; `hostname` and `subdomain`.
//! * [`validate_pod_update`] (`ValidatePodUpdate`): a pod's spec is fixed once created but for
//!   its images, a shorter `activeDeadlineSeconds`, its tolerations and scheduling gates, and a
//!   negative grace period turned into 1. Anything else (moving a bound pod to another node,
//!   adding a container) is `spec: Forbidden: pod updates may not change fields other than ...`
//!   followed by a difference of the two specs.
//!
//! kube validates after defaulting, and this server does not default: a field the client left
//! out is one kube would have filled in with a valid value, so only values the client sent are
//! checked (`restartPolicy` absent is fine, `restartPolicy: Sometimes` is not).
//!
//! Not checked: volumes, ports, environment, probes, resources, security contexts, affinity,
//! tolerations; the difference shown after the Forbidden text is a plain listing of the changed
//! fields, not go-cmp's rendering of Go structs.

use serde_json::{Map, Value};

use crate::validation::{FieldError, go_quote, is_dns1123_label, is_dns1123_subdomain};
use crate::write_validation::validate_labels;

const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
const TERMINATION_MESSAGE_POLICIES: [&str; 2] = ["File", "FallbackToLogsOnError"];

/// The fields a pod update may change, as kube lists them (InPlacePodVerticalScaling is off by
/// default in 1.32, so container resources are not among them).
pub const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn text<'a>(object: &'a Map<String, Value>, field: &str) -> &'a str {
    object.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A value the client set that must be one of `supported` (an empty one is defaulted).
fn check_supported(
    errors: &mut Vec<FieldError>,
    object: &Map<String, Value>,
    field: &str,
    path: &str,
    supported: &[&str],
) {
    let value = text(object, field);
    if !value.is_empty() && !supported.contains(&value) {
        errors.push(FieldError::not_supported(path, &go_quote(value), supported));
    }
}

/// `validateContainerCommon`, the part this server checks.
fn validate_container(container: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = text(container, "name");
    if name.is_empty() {
        errors.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        errors.extend(is_dns1123_label(name).iter().map(|m| FieldError::invalid(format!("{path}.name"), name, m)));
    }
    if text(container, "image").is_empty() {
        errors.push(FieldError::required(format!("{path}.image"), ""));
    }
    let policy_path = format!("{path}.terminationMessagePolicy");
    check_supported(&mut errors, container, "terminationMessagePolicy", &policy_path, &TERMINATION_MESSAGE_POLICIES);
    let pull_path = format!("{path}.imagePullPolicy");
    check_supported(&mut errors, container, "imagePullPolicy", &pull_path, &PULL_POLICIES);
    errors
}

/// The containers of a list (the schema has made every element an object).
fn containers<'a>(spec: &'a Map<String, Value>, field: &str) -> Vec<&'a Map<String, Value>> {
    spec.get(field)
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

/// `ValidatePodSpec` at `path` (`spec`, or `spec.template.spec` in a workload's template).
pub fn validate_pod_spec(spec: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    // validateContainers: names unique among the regular containers...
    let regular = containers(spec, "containers");
    if regular.is_empty() {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, container) in regular.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        errors.extend(validate_container(container, &at));
        let name = text(container, "name");
        if names.contains(&name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), name));
        } else {
            names.push(name);
        }
    }
    // ...and validateInitContainers: unique among init and regular containers.
    let mut all: Vec<&str> = regular.iter().map(|c| text(c, "name")).collect();
    for (i, container) in containers(spec, "initContainers").iter().enumerate() {
        let at = format!("{path}.initContainers[{i}]");
        errors.extend(validate_container(container, &at));
        let name = text(container, "name");
        if all.contains(&name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), name));
        } else if !name.is_empty() {
            all.push(name);
        }
    }
    check_supported(&mut errors, spec, "restartPolicy", &format!("{path}.restartPolicy"), &RESTART_POLICIES);
    check_supported(&mut errors, spec, "dnsPolicy", &format!("{path}.dnsPolicy"), &DNS_POLICIES);
    if let Some(selector) = spec.get("nodeSelector").and_then(Value::as_object) {
        errors.extend(validate_labels(selector, &format!("{path}.nodeSelector")));
    }
    for (field, check) in [
        ("serviceAccountName", is_dns1123_subdomain as fn(&str) -> Vec<String>),
        ("nodeName", is_dns1123_subdomain),
        ("hostname", is_dns1123_label),
        ("subdomain", is_dns1123_label),
    ] {
        let value = text(spec, field);
        if !value.is_empty() {
            errors.extend(check(value).iter().map(|m| FieldError::invalid(format!("{path}.{field}"), value, m)));
        }
    }
    errors
}

/// `ValidateContainerUpdates`: the same number of containers, each still with an image
/// without surrounding whitespace. `true` when kube stops validating there.
fn validate_container_updates(
    new: &[&Map<String, Value>],
    old: &[&Map<String, Value>],
    path: &str,
) -> (Vec<FieldError>, bool) {
    if new.len() != old.len() {
        return (vec![FieldError::forbidden(path, "pod updates may not add or remove containers")], true);
    }
    let mut errors = Vec::new();
    for (i, container) in new.iter().enumerate() {
        let image = text(container, "image");
        if image.is_empty() {
            errors.push(FieldError::required(format!("{path}[{i}].image"), ""));
        }
        if image.trim() != image {
            errors.push(FieldError::invalid(
                format!("{path}[{i}].image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
    }
    (errors, false)
}

/// A JSON value as kube's semantic equality compares decoded objects: nulls, empty lists and
/// empty maps are the same as absent fields.
fn normalized(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(items.iter().map(|v| normalized(v).unwrap_or(Value::Null)).collect())),
        Value::Object(map) => {
            let kept: Map<String, Value> =
                map.iter().filter_map(|(k, v)| normalized(v).map(|v| (k.clone(), v))).collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// How the difference lists a value: strings quoted as Go does, anything else as JSON.
fn shown(value: Option<&Value>, other: Option<&Value>) -> String {
    match (value, other) {
        (Some(Value::String(s)), _) => go_quote(s),
        (Some(v), _) => v.to_string(),
        (None, Some(Value::String(_))) => "\"\"".to_owned(),
        (None, _) => "nil".to_owned(),
    }
}

/// The changed top-level fields of two specs, one `-`/`+` pair each, in the shape of the
/// go-cmp difference kube appends (Go field names are the JSON names capitalized).
fn spec_difference(old: &Map<String, Value>, new: &Map<String, Value>) -> String {
    let mut out = String::from("  core.PodSpec{\n");
    let mut fields: Vec<&String> = old.keys().collect();
    fields.extend(new.keys().filter(|k| !old.contains_key(*k)));
    for field in fields {
        let (before, after) = (old.get(field), new.get(field));
        if before == after {
            continue;
        }
        let mut go_name = field.clone();
        if let Some(first) = go_name.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        out.push_str(&format!("- \t{go_name}: {},\n", shown(before, after)));
        out.push_str(&format!("+ \t{go_name}: {},\n", shown(after, before)));
    }
    out.push_str("  }\n");
    out
}

fn spec_of(pod: &Map<String, Value>) -> Map<String, Value> {
    pod.get("spec").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `ValidatePodUpdate` beyond metadata and the new spec's own validity.
pub fn validate_pod_update(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let (old_spec, new_spec) = (spec_of(old), spec_of(new));
    let mut errors = Vec::new();
    for field in ["containers", "initContainers"] {
        let (found, stop) = validate_container_updates(
            &containers(&new_spec, field),
            &containers(&old_spec, field),
            &format!("spec.{field}"),
        );
        errors.extend(found);
        if stop {
            return errors;
        }
    }
    let deadline = |spec: &Map<String, Value>| spec.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(&new_spec), deadline(&old_spec)) {
        (Some(new), _) if !(0..=i64::from(i32::MAX)).contains(&new) => {
            errors.push(FieldError::invalid_raw(
                "spec.activeDeadlineSeconds",
                &new.to_string(),
                "must be between 0 and 2147483647, inclusive",
            ));
            return errors;
        }
        (Some(new), Some(old)) if old < new => {
            errors.push(FieldError::invalid_raw(
                "spec.activeDeadlineSeconds",
                &new.to_string(),
                "must be less than or equal to previous value",
            ));
            return errors;
        }
        (None, Some(_)) => errors.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            "null",
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    // What may change is taken from the old spec; whatever differs then is forbidden.
    let mut munged = new_spec.clone();
    for field in ["containers", "initContainers"] {
        let old_images: Vec<Option<Value>> =
            containers(&old_spec, field).iter().map(|c| c.get("image").cloned()).collect();
        if let Some(list) = munged.get_mut(field).and_then(Value::as_array_mut) {
            for (container, image) in list.iter_mut().zip(old_images) {
                if let Some(container) = container.as_object_mut() {
                    match image {
                        Some(image) => container.insert("image".into(), image),
                        None => container.shift_remove("image"),
                    };
                }
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match old_spec.get(field) {
            Some(value) => munged.insert(field.into(), value.clone()),
            None => munged.shift_remove(field),
        };
    }
    let grace = |spec: &Map<String, Value>| spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(&old_spec).is_some_and(|g| g < 0) && grace(&munged) == Some(1) {
        munged.insert("terminationGracePeriodSeconds".into(), old_spec["terminationGracePeriodSeconds"].clone());
    }
    let (old_norm, munged_norm) = (normalized(&Value::Object(old_spec.clone())), normalized(&Value::Object(munged)));
    if old_norm != munged_norm {
        let empty = Map::new();
        let as_map =
            |v: &Option<Value>| v.as_ref().and_then(Value::as_object).cloned().unwrap_or_else(|| empty.clone());
        errors.push(FieldError::forbidden(
            "spec",
            &format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{}",
                spec_difference(&as_map(&old_norm), &as_map(&munged_norm))
            ),
        ));
    }
    errors
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

    #[test]
    fn containers_are_required_named_and_imaged() {
        assert_eq!(texts(&validate_pod_spec(&map(json!({})), "spec")), vec!["spec.containers: Required value"]);
        assert_eq!(
            texts(&validate_pod_spec(&map(json!({"containers": []})), "spec")),
            vec!["spec.containers: Required value"]
        );
        assert!(validate_pod_spec(&map(json!({"containers": [{"name": "c", "image": "i"}]})), "spec").is_empty());
        let errors = validate_pod_spec(&map(json!({"containers": [{"name": "c"}, {"image": "i"}]})), "spec");
        assert_eq!(
            texts(&errors),
            vec!["spec.containers[0].image: Required value", "spec.containers[1].name: Required value"]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueRequired");
        let bad = validate_pod_spec(&map(json!({"containers": [{"name": "Bad_Name", "image": "i"}]})), "spec");
        assert!(
            bad[0]
                .to_string()
                .starts_with("spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label")
        );
    }

    #[test]
    fn duplicate_names_across_init_and_regular_containers() {
        let spec = map(json!({
            "containers": [{"name": "c", "image": "i"}, {"name": "c", "image": "i"}],
            "initContainers": [{"name": "c", "image": "i"}, {"name": "d", "image": "i"}, {"name": "d", "image": "i"}]
        }));
        let errors = validate_pod_spec(&spec, "spec");
        assert_eq!(
            texts(&errors),
            vec![
                "spec.containers[1].name: Duplicate value: \"c\"",
                "spec.initContainers[0].name: Duplicate value: \"c\"",
                "spec.initContainers[2].name: Duplicate value: \"d\"",
            ]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueDuplicate");
    }

    #[test]
    fn policies_the_client_set() {
        let spec = map(json!({
            "restartPolicy": "Sometimes",
            "dnsPolicy": "Whatever",
            "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Sometimes"}]
        }));
        assert_eq!(
            texts(&validate_pod_spec(&spec, "spec")),
            vec![
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Unsupported value: \"Whatever\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            ]
        );
        let fine =
            map(json!({"restartPolicy": "", "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Never"}]}));
        assert!(validate_pod_spec(&fine, "spec").is_empty());
        let node =
            validate_pod_spec(&map(json!({"nodeName": "Node_1", "containers": [{"name": "c", "image": "i"}]})), "spec");
        assert!(node[0].to_string().starts_with("spec.nodeName: Invalid value: \"Node_1\""), "{node:?}");
    }

    fn pod(spec: Value) -> Map<String, Value> {
        map(json!({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": "Running"}}))
    }

    #[test]
    fn updates_may_change_images_only() {
        let old = pod(json!({"nodeName": "n1", "containers": [{"name": "c", "image": "a"}]}));
        let image = pod(json!({"nodeName": "n1", "containers": [{"name": "c", "image": "b"}]}));
        assert!(validate_pod_update(&old, &image).is_empty());
        // Nulls and empty lists are the same as absent fields.
        let same = pod(
            json!({"nodeName": "n1", "volumes": [], "hostname": null, "containers": [{"name": "c", "image": "a"}]}),
        );
        assert!(validate_pod_update(&old, &same).is_empty());
        let moved = pod(json!({"nodeName": "n2", "containers": [{"name": "c", "image": "a"}]}));
        let errors = validate_pod_update(&old, &moved);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec");
        assert_eq!(errors[0].as_cause().1, "FieldValueForbidden");
        assert_eq!(
            errors[0].message,
            format!(
                "Forbidden: pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n  core.PodSpec{{\n- \tNodeName: \"n1\",\n+ \tNodeName: \"n2\",\n  }}\n"
            )
        );
        let added =
            pod(json!({"nodeName": "n1", "containers": [{"name": "c", "image": "a"}, {"name": "d", "image": "a"}]}));
        assert_eq!(
            texts(&validate_pod_update(&old, &added)),
            vec!["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
        let renamed = pod(json!({"nodeName": "n1", "containers": [{"name": "x", "image": "a"}]}));
        assert!(
            validate_pod_update(&old, &renamed)[0].message.contains("pod updates may not change fields other than")
        );
    }

    #[test]
    fn active_deadline_may_only_shrink() {
        let old = pod(json!({"activeDeadlineSeconds": 10, "containers": [{"name": "c", "image": "a"}]}));
        let shorter = pod(json!({"activeDeadlineSeconds": 5, "containers": [{"name": "c", "image": "a"}]}));
        assert!(validate_pod_update(&old, &shorter).is_empty());
        let longer = pod(json!({"activeDeadlineSeconds": 11, "containers": [{"name": "c", "image": "a"}]}));
        assert_eq!(
            texts(&validate_pod_update(&old, &longer)),
            vec!["spec.activeDeadlineSeconds: Invalid value: 11: must be less than or equal to previous value"]
        );
        let removed = pod(json!({"containers": [{"name": "c", "image": "a"}]}));
        assert_eq!(
            texts(&validate_pod_update(&old, &removed)),
            vec![
                "spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value"
            ]
        );
    }
}
