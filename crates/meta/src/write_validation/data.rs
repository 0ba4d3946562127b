//! ConfigMap and Secret data as kube-apiserver 1.32 validates it (`pkg/apis/core/validation`):
//! keys, total size, the keys each built-in Secret type needs, and `immutable`. A rule set of its
//! own, for two kinds only, so it sits apart from the metadata and write-option checks beside it;
//! the parent module re-exports it.

use listwatch_gocompat::json::{json_kind, syntax_error, type_error};
use serde_json::{Map, Value};

use super::string_entries;
use crate::validation::{FieldError, max_len_error, regex_error};

/// The most bytes the values of a ConfigMap or Secret may take together (`core.MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;
/// Longest ConfigMap or Secret key (`DNS1123SubdomainMaxLength`).
pub const CONFIG_MAP_KEY_MAX_LENGTH: usize = 253;

const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

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
    if let Some(syntax) = syntax_error(bytes) {
        return Some(syntax);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => Some(type_error(json_kind(&other), "", "", "map[string]interface {}")),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
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
}
