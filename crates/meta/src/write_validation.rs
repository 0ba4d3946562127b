//! What kube-apiserver checks in a written object besides its name, and in the options of a
//! write, with kube-apiserver 1.32's texts: a client that gets a 422 `Invalid` from a real
//! cluster gets the same causes here.
//!
//! * Object metadata (`ValidateObjectMetaAccessor` / `...Update` in
//!   `k8s.io/apimachinery/pkg/api/validation/objectmeta.go`): label keys are qualified names
//!   and label values label values ([`validate_labels`]), annotation keys qualified names once
//!   lowercased and all annotations together at most 256 KiB ([`validate_annotations`]),
//!   finalizers qualified names ([`validate_finalizers`]), owner references complete and at
//!   most one of them the controller ([`validate_owner_references`]). Every label error is
//!   reported on `metadata.labels` itself, not on the key, as kube does.
//! * ConfigMap and Secret data (`pkg/apis/core/validation`): keys must pass
//!   [`is_config_map_key`], the values together fit in 1 MiB, and a ConfigMap key may not be
//!   in both `data` and `binaryData` ([`validate_config_map`], [`validate_secret`]); a Secret of
//!   a built-in type has the keys its type needs ([`validate_secret_type`]); an update keeps a
//!   Secret's type and the data of an `immutable` ConfigMap or Secret
//!   ([`validate_secret_update`], [`validate_immutable_data`]).
//! * The options of creates, updates, patches and deletes
//!   (`k8s.io/apimachinery/pkg/apis/meta/v1/validation`): `fieldManager`
//!   ([`validate_field_manager`]), `dryRun` ([`validate_dry_run`]), `fieldValidation`
//!   ([`validate_field_validation`]); kube reports them as `<Kind>Options.meta.k8s.io "" is
//!   invalid`.
//!
//! The texts are those of k8s.io/apimachinery v0.32 (`pkg/util/validation/validation.go`):
//! `a qualified name ...`, `name part must be no more than 63 characters`. Later releases
//! reworded label keys (`a valid label key ...`, `... bytes`); see [`crate::selector`], which
//! follows the newer wording for selector parse errors.
//!
//! Go iterates maps in random order, so kube lists several errors of one map in any order;
//! here they follow the object's key order.

use listwatch_gocompat::quote::{is_go_printable, push_go_escaped};
use serde_json::{Map, Value};

use crate::validation::{FieldError, is_dns1123_subdomain, max_len_error, regex_error};

mod data;
pub use data::*;

/// Longest name part of a qualified name.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// The most bytes all annotation keys and values of one object may take together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Longest `fieldManager`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_EXAMPLES: [&str; 3] = ["MyName", "my.name", "123-abc"];
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Whether `value` matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_qualified_name_part(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Problems with `value` as a qualified name (`validation.IsQualifiedName`): an optional
/// DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(is_dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, &QUALIFIED_NAME_EXAMPLES)
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errors.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !matches_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, &QUALIFIED_NAME_EXAMPLES)
        ));
    }
    errors
}

/// Problems with `value` as a label value (`validation.IsValidLabelValue`).
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errors.push(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errors
}

/// The string entries of a JSON map; other values (which the schema already refused for
/// built-in kinds) are skipped.
fn string_entries(map: &Map<String, Value>) -> impl Iterator<Item = (&String, &str)> {
    map.iter().filter_map(|(k, v)| v.as_str().map(|v| (k, v)))
}

/// `ValidateLabels`: each key a qualified name, each value a label value, every error on `path`.
pub fn validate_labels(labels: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in string_entries(labels) {
        errors.extend(is_qualified_name(key).iter().map(|m| FieldError::invalid(path, key, m)));
        errors.extend(is_valid_label_value(value).iter().map(|m| FieldError::invalid(path, value, m)));
    }
    errors
}

/// `ValidateAnnotations`: each key a qualified name once lowercased (the rule ignores case),
/// and keys plus values at most [`TOTAL_ANNOTATION_SIZE_LIMIT`] bytes.
pub fn validate_annotations(annotations: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (key, value) in string_entries(annotations) {
        errors.extend(is_qualified_name(&key.to_lowercase()).iter().map(|m| FieldError::invalid(path, key, m)));
        total = total.saturating_add(key.len()).saturating_add(value.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errors.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errors
}

/// `ValidateFinalizers`: each a qualified name, and not both `orphan` and `foregroundDeletion`.
pub fn validate_finalizers(finalizers: &[Value], path: &str) -> Vec<FieldError> {
    let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
    let mut errors = Vec::new();
    for name in &names {
        errors.extend(is_qualified_name(name).iter().map(|m| FieldError::invalid(path, name, m)));
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        errors.push(FieldError::invalid_raw(
            path,
            &go_string_slice(&names),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errors
}

/// The group and version of an `apiVersion` as Go's `schema.ParseGroupVersion` splits it;
/// one that does not parse (two slashes) has neither.
fn parse_group_version(api_version: &str) -> (&str, &str) {
    if api_version == "/" {
        return ("", "");
    }
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((group, version)) if !version.contains('/') => (group, version),
        Some(_) => ("", ""),
    }
}

/// Go's `%#v` of a `*bool`: `(*bool)(nil)`, or a pointer, whose address kube prints and
/// nobody can predict; a fixed one stands in for it.
fn go_bool_pointer(value: Option<&Value>) -> &'static str {
    match value {
        Some(Value::Bool(_)) => "(*bool)(0xc000000000)",
        _ => "(*bool)(nil)",
    }
}

/// Go's `%#v` of a `metav1.OwnerReference`, as kube shows it in an `Invalid value`.
fn go_owner_reference(reference: &Map<String, Value>) -> String {
    let text = |field: &str| crate::validation::go_quote(reference.get(field).and_then(Value::as_str).unwrap_or(""));
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        text("apiVersion"),
        text("kind"),
        text("name"),
        text("uid"),
        go_bool_pointer(reference.get("controller")),
        go_bool_pointer(reference.get("blockOwnerDeletion")),
    )
}

/// `ValidateOwnerReferences`: each reference names a version, a kind, a name and a uid (every
/// finding on the list's path plus the field, without an index, as kube reports it), no Event
/// owns anything, and at most one reference is the controller.
pub fn validate_owner_references(references: &[Value], path: &str) -> Vec<FieldError> {
    let empty = Map::new();
    let mut errors = Vec::new();
    let mut first_controller: Option<String> = None;
    for reference in references {
        let reference = reference.as_object().unwrap_or(&empty);
        let text = |field: &str| reference.get(field).and_then(Value::as_str).unwrap_or("");
        let (group, version) = parse_group_version(text("apiVersion"));
        let kind = text("kind");
        if version.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                text("apiVersion"),
                "version must not be empty",
            ));
        }
        for (field, what) in [("kind", "kind"), ("name", "name"), ("uid", "uid")] {
            if text(field).is_empty() {
                errors.push(FieldError::invalid(format!("{path}.{field}"), "", &format!("{what} must not be empty")));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errors.push(FieldError::invalid_raw(
                path,
                &go_owner_reference(reference),
                &format!("{group}/{version}, Kind={kind} is disallowed from being an owner"),
            ));
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            let name = format!("{kind}/{}", text("name"));
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> =
                        references.iter().map(|r| go_owner_reference(r.as_object().unwrap_or(&empty))).collect();
                    errors.push(FieldError::invalid_raw(
                        path,
                        &format!("[]v1.OwnerReference{{{}}}", all.join(", ")),
                        &format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {name}"
                        ),
                    ));
                }
                None => first_controller = Some(name),
            }
        }
    }
    errors
}

/// The part of `ValidateObjectMetaAccessor` that is the same on create and update and that
/// the server does not set itself: labels, annotations, owner references and finalizers.
pub fn validate_object_meta(metadata: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(labels) = metadata.get("labels").and_then(Value::as_object) {
        errors.extend(validate_labels(labels, "metadata.labels"));
    }
    if let Some(annotations) = metadata.get("annotations").and_then(Value::as_object) {
        errors.extend(validate_annotations(annotations, "metadata.annotations"));
    }
    if let Some(references) = metadata.get("ownerReferences").and_then(Value::as_array) {
        errors.extend(validate_owner_references(references, "metadata.ownerReferences"));
    }
    if let Some(finalizers) = metadata.get("finalizers").and_then(Value::as_array) {
        errors.extend(validate_finalizers(finalizers, "metadata.finalizers"));
    }
    errors
}

/// `ValidateFieldManager`: at most 128 bytes, and only printable characters, each other one
/// reported with its code point and byte position (`invalid character U+0000 (at position 3)`).
pub fn validate_field_manager(field_manager: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH));
    }
    for (position, c) in field_manager.char_indices() {
        if !is_go_printable(c) {
            errors.push(FieldError::invalid(
                "fieldManager",
                field_manager,
                &format!("invalid character U+{:04X} (at position {position})", c as u32),
            ));
        }
    }
    errors
}

/// `ValidateDryRun`: every value `All`. kube shows the list as Go's `%#v` of a `[]string`.
pub fn validate_dry_run(values: &[&str]) -> Vec<FieldError> {
    if values.iter().all(|v| *v == "All") {
        return Vec::new();
    }
    vec![FieldError::not_supported("dryRun", &go_string_slice(values), &["All"])]
}

/// `ValidateFieldValidation`: empty, `Ignore`, `Strict` or `Warn`.
pub fn validate_field_validation(value: &str) -> Vec<FieldError> {
    const SUPPORTED: [&str; 4] = ["", "Ignore", "Strict", "Warn"];
    if SUPPORTED.contains(&value) {
        return Vec::new();
    }
    vec![FieldError::not_supported("fieldValidation", &crate::validation::go_quote(value), &SUPPORTED)]
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
pub fn go_string_slice(values: &[&str]) -> String {
    let mut out = String::from("[]string{");
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        for c in value.chars() {
            push_go_escaped(&mut out, c, '"');
        }
        out.push('"');
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    #[test]
    fn qualified_names() {
        for good in ["a", "A", "a.b", "a-b_c.D", "example.com/MyName", "k8s.io/x", &"a".repeat(63)] {
            assert!(is_qualified_name(good).is_empty(), "{good:?}");
        }
        assert_eq!(is_qualified_name("-a"), vec![NAME_PART_MSG]);
        assert_eq!(is_qualified_name("a b"), vec![NAME_PART_MSG]);
        assert_eq!(is_qualified_name(""), vec!["name part must be non-empty", NAME_PART_MSG]);
        assert_eq!(is_qualified_name("x/"), vec!["name part must be non-empty", NAME_PART_MSG]);
        assert_eq!(is_qualified_name(&"a".repeat(64)), vec!["name part must be no more than 63 characters"]);
        assert_eq!(is_qualified_name("/a"), vec!["prefix part must be non-empty"]);
        let prefix = is_qualified_name("Example.com/a");
        assert_eq!(prefix.len(), 1);
        assert!(prefix[0].starts_with("prefix part a lowercase RFC 1123 subdomain must consist of"), "{prefix:?}");
        assert_eq!(
            is_qualified_name(&format!("{}/a", "a".repeat(254))),
            vec!["prefix part must be no more than 253 characters"]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(is_qualified_name("a\0b"), vec![NAME_PART_MSG]);
    }

    #[test]
    fn label_values() {
        for good in ["", "a", "my_value", "1.2-3", &"v".repeat(63)] {
            assert!(is_valid_label_value(good).is_empty(), "{good:?}");
        }
        assert_eq!(is_valid_label_value("-x"), vec![LABEL_VALUE_MSG]);
        assert_eq!(is_valid_label_value("a\0"), vec![LABEL_VALUE_MSG]);
        assert_eq!(is_valid_label_value(&"v".repeat(64)), vec!["must be no more than 63 characters"]);
        assert_eq!(
            is_valid_label_value(&format!("{}-", "v".repeat(64))),
            vec!["must be no more than 63 characters".to_owned(), LABEL_VALUE_MSG.to_owned()]
        );
    }

    #[test]
    fn labels_report_on_the_map() {
        let errors = validate_labels(&map(json!({"ok": "fine", "bad key": "-v"})), "metadata.labels");
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec![
                format!("metadata.labels: Invalid value: \"bad key\": {NAME_PART_MSG}"),
                format!("metadata.labels: Invalid value: \"-v\": {LABEL_VALUE_MSG}"),
            ]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueInvalid");
        let nul = validate_labels(&map(json!({"a": "x\u{0}"})), "metadata.labels");
        assert_eq!(nul[0].message, format!("Invalid value: \"x\\x00\": {LABEL_VALUE_MSG}"));
    }

    #[test]
    fn annotations_ignore_case_and_count_bytes() {
        assert!(validate_annotations(&map(json!({"Example.COM/Key": "anything at all \u{0}"})), "m").is_empty());
        let errors = validate_annotations(&map(json!({"a/b/c": "x"})), "metadata.annotations");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.starts_with("Invalid value: \"a/b/c\": a qualified name"), "{errors:?}");
        let at_limit = map(json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1)}));
        assert!(validate_annotations(&at_limit, "metadata.annotations").is_empty());
        let over = map(json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}));
        let errors = validate_annotations(&over, "metadata.annotations");
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueTooLong");
    }

    #[test]
    fn finalizers() {
        assert!(validate_finalizers(&[json!("kubernetes"), json!("example.com/x")], "f").is_empty());
        let errors = validate_finalizers(&[json!("a b")], "metadata.finalizers");
        assert_eq!(errors[0].to_string(), format!("metadata.finalizers: Invalid value: \"a b\": {NAME_PART_MSG}"));
        let both = validate_finalizers(&[json!("orphan"), json!("foregroundDeletion")], "metadata.finalizers");
        assert_eq!(
            both[0].to_string(),
            "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
        );
    }

    #[test]
    fn owner_references() {
        let good =
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]);
        assert!(validate_owner_references(good.as_array().unwrap(), "metadata.ownerReferences").is_empty());
        let bad = json!([{"apiVersion": "", "kind": "ConfigMap", "name": "", "uid": ""}, {"apiVersion": "a/b/c", "kind": "", "name": "n", "uid": "u"}]);
        let errors = validate_owner_references(bad.as_array().unwrap(), "metadata.ownerReferences");
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
                "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
            ]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueInvalid");
        let event = json!([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]);
        assert_eq!(
            validate_owner_references(event.as_array().unwrap(), "metadata.ownerReferences")[0].to_string(),
            "metadata.ownerReferences: Invalid value: v1.OwnerReference{APIVersion:\"v1\", Kind:\"Event\", Name:\"e\", UID:\"u\", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}: /v1, Kind=Event is disallowed from being an owner"
        );
        let two = json!([
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true}
        ]);
        let errors = validate_owner_references(two.as_array().unwrap(), "metadata.ownerReferences");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].message.ends_with(
                "Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b"
            ),
            "{errors:?}"
        );
    }

    #[test]
    fn write_options() {
        assert!(validate_field_manager(&"m".repeat(128)).is_empty());
        assert_eq!(
            validate_field_manager(&"m".repeat(129))[0].to_string(),
            "fieldManager: Too long: may not be more than 128 bytes"
        );
        assert_eq!(
            validate_field_manager("a\u{0}b")[0].to_string(),
            "fieldManager: Invalid value: \"a\\x00b\": invalid character U+0000 (at position 1)"
        );
        assert_eq!(
            validate_field_manager("é\u{200b}")[0].message,
            "Invalid value: \"é\\u200b\": invalid character U+200B (at position 2)"
        );
        assert!(validate_dry_run(&["All"]).is_empty());
        assert_eq!(
            validate_dry_run(&["foo"])[0].to_string(),
            "dryRun: Unsupported value: []string{\"foo\"}: supported values: \"All\""
        );
        assert_eq!(validate_dry_run(&[""])[0].as_cause().1, "FieldValueNotSupported");
        assert!(validate_field_validation("").is_empty());
        assert!(validate_field_validation("Strict").is_empty());
        assert_eq!(
            validate_field_validation("strict")[0].to_string(),
            "fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
    }
}
