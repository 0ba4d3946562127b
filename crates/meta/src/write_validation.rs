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

use serde_json::{Map, Value};

use crate::validation::{FieldError, is_dns1123_subdomain, max_len_error, push_go_escaped, regex_error};

/// Longest name part of a qualified name.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// The most bytes all annotation keys and values of one object may take together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// The most bytes the values of a ConfigMap or Secret may take together (`core.MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;
/// Longest ConfigMap or Secret key (`DNS1123SubdomainMaxLength`).
pub const CONFIG_MAP_KEY_MAX_LENGTH: usize = 253;
/// Longest `fieldManager`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_EXAMPLES: [&str; 3] = ["MyName", "my.name", "123-abc"];
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

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

/// Problems with `key` as a ConfigMap or Secret key (`validation.IsConfigMapKey`): at most 253
/// characters of `[-._a-zA-Z0-9]`, and not `.`, `..` or anything starting with `..`, which
/// would escape the directory the key becomes a file in.
pub fn is_config_map_key(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > CONFIG_MAP_KEY_MAX_LENGTH {
        errors.push(max_len_error(CONFIG_MAP_KEY_MAX_LENGTH));
    }
    let charset = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
    if key.is_empty() || !key.bytes().all(charset) {
        errors.push(regex_error(CONFIG_MAP_KEY_ERR_MSG, CONFIG_MAP_KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    match key {
        "." => errors.push("must not be '.'".to_owned()),
        ".." => errors.push("must not be '..'".to_owned()),
        _ if key.starts_with("..") => errors.push("must not start with '..'".to_owned()),
        _ => {}
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

/// How many bytes a base64 value decodes to (kube counts the decoded bytes of `binaryData`
/// and Secret `data`); the schema has already checked the encoding.
fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end_matches('=');
    trimmed.len() / 4 * 3 + (trimmed.len() % 4).saturating_sub(1)
}

/// `ValidateConfigMap` beyond metadata: keys, a key in both maps (reported on `data`), and the
/// total size, reported on the empty path, which kube prints as `[]`.
pub fn validate_config_map(object: &Map<String, Value>) -> Vec<FieldError> {
    let empty = Map::new();
    let data = object.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let binary = object.get("binaryData").and_then(Value::as_object).unwrap_or(&empty);
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (key, value) in string_entries(data) {
        let path = format!("data[{key}]");
        errors.extend(is_config_map_key(key).iter().map(|m| FieldError::invalid(&path, key, m)));
        if binary.contains_key(key) {
            errors.push(FieldError::invalid(&path, key, "duplicate of key present in binaryData"));
        }
        total = total.saturating_add(value.len());
    }
    for (key, value) in string_entries(binary) {
        let path = format!("binaryData[{key}]");
        errors.extend(is_config_map_key(key).iter().map(|m| FieldError::invalid(&path, key, m)));
        total = total.saturating_add(decoded_len(value));
    }
    if total > MAX_DATA_SIZE {
        errors.push(FieldError::too_long("[]", MAX_DATA_SIZE));
    }
    errors
}

/// `ValidateSecret` beyond metadata: the keys of `data` and `stringData` (which kube merges
/// into `data` before validating), their total size, and the keys the type needs.
pub fn validate_secret(object: &Map<String, Value>) -> Vec<FieldError> {
    let empty = Map::new();
    let data = object.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let string_data = object.get("stringData").and_then(Value::as_object).unwrap_or(&empty);
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (key, value) in string_entries(data) {
        errors.extend(is_config_map_key(key).iter().map(|m| FieldError::invalid(format!("data[{key}]"), key, m)));
        if !string_data.contains_key(key) {
            total = total.saturating_add(decoded_len(value));
        }
    }
    for (key, value) in string_entries(string_data) {
        if !data.contains_key(key) {
            errors.extend(is_config_map_key(key).iter().map(|m| FieldError::invalid(format!("data[{key}]"), key, m)));
        }
        total = total.saturating_add(value.len());
    }
    if total > MAX_DATA_SIZE {
        errors.push(FieldError::too_long("data", MAX_DATA_SIZE));
    }
    errors.extend(validate_secret_type(object));
    errors
}

/// The bytes of a Secret's `key` as kube validates them: `stringData` (merged over `data`
/// before validation) as is, `data` base64-decoded; `None` when the key is in neither.
fn secret_value(object: &Map<String, Value>, key: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let field = |name: &str| object.get(name).and_then(Value::as_object).and_then(|m| m.get(key));
    if let Some(value) = field("stringData") {
        return Some(value.as_str().unwrap_or("").as_bytes().to_vec());
    }
    let value = field("data")?;
    let text = value.as_str().unwrap_or("");
    Some(base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default())
}

/// A Secret's type; kube defaults an empty one to `Opaque` before it validates.
pub fn secret_type(object: &Map<String, Value>) -> &str {
    match object.get("type").and_then(Value::as_str) {
        None | Some("") => "Opaque",
        Some(t) => t,
    }
}

/// What Go's `json.Unmarshal` into a `map[string]interface{}` says about `bytes`, if it fails.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    if let Some(syntax) = crate::go_json::syntax_error(bytes) {
        return Some(syntax);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            Some(crate::go_json::type_error(crate::go_json::json_kind(&other), "", "", "map[string]interface {}"))
        }
        Err(e) => Some(e.to_string()),
    }
}

/// The keys each built-in Secret type needs (the type switch of `ValidateSecret`).
pub fn validate_secret_type(object: &Map<String, Value>) -> Vec<FieldError> {
    let has = |key: &str| secret_value(object, key).is_some();
    let required = |key: &str| FieldError::required(format!("data[{key}]"), "");
    let mut errors = Vec::new();
    match secret_type(object) {
        "kubernetes.io/service-account-token" => {
            let name = object
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                errors.push(FieldError::required("metadata.annotations[kubernetes.io/service-account.name]", ""));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind == "kubernetes.io/dockercfg" { ".dockercfg" } else { ".dockerconfigjson" };
            match secret_value(object, key) {
                None => errors.push(required(key)),
                Some(bytes) => {
                    if let Some(why) = json_object_error(&bytes) {
                        errors.push(FieldError::invalid(format!("data[{key}]"), "<secret contents redacted>", &why));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errors.push(required("username"));
            errors.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if secret_value(object, "ssh-privatekey").is_none_or(|v| v.is_empty()) => {
            errors.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errors.push(required(key));
                }
            }
        }
        _ => {}
    }
    errors
}

/// A map field as Go's `reflect.DeepEqual` of two decoded objects compares it, except that an
/// empty map counts as absent (kube stores neither, so a read-back object has no empty map).
fn same_map(old: &Map<String, Value>, new: &Map<String, Value>, field: &str) -> bool {
    let get = |object: &Map<String, Value>| {
        object.get(field).and_then(Value::as_object).filter(|m| !m.is_empty()).cloned().unwrap_or_default()
    };
    get(old) == get(new)
}

const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";

/// The `immutable: true` rules of `ValidateConfigMapUpdate` and `ValidateSecretUpdate`: the
/// flag stays on and the data (`data`, and `binaryData` of a ConfigMap) does not change.
pub fn validate_immutable_data(old: &Map<String, Value>, new: &Map<String, Value>, fields: &[&str]) -> Vec<FieldError> {
    let immutable = |object: &Map<String, Value>| object.get("immutable").and_then(Value::as_bool) == Some(true);
    if !immutable(old) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    if !immutable(new) {
        errors.push(FieldError::forbidden("immutable", IMMUTABLE_WHEN_SET));
    }
    for field in fields {
        if !same_map(old, new, field) {
            errors.push(FieldError::forbidden(*field, IMMUTABLE_WHEN_SET));
        }
    }
    errors
}

/// `ValidateSecretUpdate` beyond metadata: the type never changes, and an immutable Secret
/// keeps its data (`stringData` counts: kube merges it into `data` first).
pub fn validate_secret_update(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let new_type = secret_type(new);
    if new_type != secret_type(old) {
        errors.push(FieldError::invalid("type", new_type, "field is immutable"));
    }
    errors.extend(validate_immutable_data(&with_string_data(old), &with_string_data(new), &["data"]));
    errors
}

/// The Secret with `stringData` folded into `data`, base64-encoded, as kube validates it.
fn with_string_data(secret: &Map<String, Value>) -> Map<String, Value> {
    use base64::Engine;
    let mut merged = secret.clone();
    if let Some(string_data) = secret.get("stringData").and_then(Value::as_object).filter(|m| !m.is_empty()) {
        let data = merged.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Some(data) = data.as_object_mut() {
            for (key, value) in string_data {
                let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or(""));
                data.insert(key.clone(), Value::String(encoded));
            }
        }
    }
    merged
}

/// `ValidateFieldManager`: at most 128 bytes, and only printable characters, each other one
/// reported with its code point and byte position (`invalid character U+0000 (at position 3)`).
pub fn validate_field_manager(field_manager: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH));
    }
    for (position, c) in field_manager.char_indices() {
        if !crate::validation::is_go_printable(c) {
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
    const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

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
    fn config_map_keys() {
        for good in ["a", "key.name", "KEY_NAME", "key-name", ".a", "a..b", &"k".repeat(253)] {
            assert!(is_config_map_key(good).is_empty(), "{good:?}");
        }
        assert_eq!(is_config_map_key("a b"), vec![CONFIG_KEY_MSG]);
        assert_eq!(is_config_map_key("a/b"), vec![CONFIG_KEY_MSG]);
        assert_eq!(is_config_map_key(""), vec![CONFIG_KEY_MSG]);
        assert_eq!(is_config_map_key("."), vec!["must not be '.'"]);
        assert_eq!(is_config_map_key(".."), vec!["must not be '..'"]);
        assert_eq!(is_config_map_key("..a"), vec!["must not start with '..'"]);
        assert_eq!(is_config_map_key(&"k".repeat(254)), vec!["must be no more than 253 characters"]);
    }

    #[test]
    fn config_maps() {
        let errors = validate_config_map(&map(json!({"data": {"a b": "1", "k": "2"}, "binaryData": {"k": "AA=="}})));
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec![
                format!("data[a b]: Invalid value: \"a b\": {CONFIG_KEY_MSG}"),
                "data[k]: Invalid value: \"k\": duplicate of key present in binaryData".to_owned(),
            ]
        );
        let big = map(json!({"data": {"a": "x".repeat(MAX_DATA_SIZE)}, "binaryData": {"b": "AA=="}}));
        let errors = validate_config_map(&big);
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec!["[]: Too long: may not be more than 1048576 bytes"]
        );
        assert!(validate_config_map(&map(json!({"data": {"a": "x".repeat(MAX_DATA_SIZE)}}))).is_empty());
    }

    #[test]
    fn secrets_count_decoded_bytes_and_string_data() {
        assert_eq!(decoded_len("AA=="), 1);
        assert_eq!(decoded_len("AAA="), 2);
        assert_eq!(decoded_len("AAAA"), 3);
        assert_eq!(decoded_len(""), 0);
        let errors = validate_secret(&map(json!({"data": {"../x": "AA=="}, "stringData": {"a b": "1"}})));
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec![
                "data[../x]: Invalid value: \"../x\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_owned(),
                "data[../x]: Invalid value: \"../x\": must not start with '..'".to_owned(),
                format!("data[a b]: Invalid value: \"a b\": {CONFIG_KEY_MSG}"),
            ]
        );
        let big = map(json!({"stringData": {"a": "x".repeat(MAX_DATA_SIZE + 1)}}));
        assert_eq!(validate_secret(&big)[0].to_string(), "data: Too long: may not be more than 1048576 bytes");
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
    fn secret_types_need_their_keys() {
        let tls = map(json!({"type": "kubernetes.io/tls", "data": {}}));
        let errors = validate_secret(&tls);
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec!["data[tls.crt]: Required value", "data[tls.key]: Required value"]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueRequired");
        let complete =
            map(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "AA=="}, "stringData": {"tls.key": "k"}}));
        assert!(validate_secret(&complete).is_empty());
        let basic = map(json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}));
        assert!(validate_secret(&basic).is_empty());
        let docker = map(json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "[1]"}}));
        assert_eq!(
            validate_secret(&docker)[0].to_string(),
            "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        let token = map(json!({"type": "kubernetes.io/service-account-token", "metadata": {"name": "t"}}));
        assert_eq!(
            validate_secret(&token)[0].to_string(),
            "metadata.annotations[kubernetes.io/service-account.name]: Required value"
        );
        assert!(validate_secret(&map(json!({"type": "example.com/custom"}))).is_empty());
    }

    #[test]
    fn immutable_data_and_secret_types() {
        let old = map(json!({"immutable": true, "data": {"k": "v"}}));
        assert!(
            validate_immutable_data(&old, &map(json!({"immutable": true, "data": {"k": "v"}})), &["data"]).is_empty()
        );
        let errors = validate_immutable_data(
            &old,
            &map(json!({"immutable": false, "data": {"k": "w"}})),
            &["data", "binaryData"],
        );
        assert_eq!(
            errors.iter().map(FieldError::to_string).collect::<Vec<_>>(),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        assert_eq!(errors[0].as_cause().1, "FieldValueForbidden");
        // Not immutable: anything goes.
        assert!(
            validate_immutable_data(&map(json!({"data": {"k": "v"}})), &map(json!({"data": {}})), &["data"]).is_empty()
        );
        // An absent type is Opaque, and stringData counts as data.
        let secret = map(json!({"immutable": true, "data": {"k": "dg=="}}));
        assert!(
            validate_secret_update(
                &secret,
                &map(json!({"type": "Opaque", "immutable": true, "stringData": {"k": "v"}}))
            )
            .is_empty()
        );
        assert_eq!(
            validate_secret_update(&secret, &map(json!({"type": "Other", "immutable": true, "data": {"k": "dg=="}})))
                .iter()
                .map(FieldError::to_string)
                .collect::<Vec<_>>(),
            vec!["type: Invalid value: \"Other\": field is immutable"]
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
