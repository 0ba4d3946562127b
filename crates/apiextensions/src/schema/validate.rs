//! Validation of custom resources against a version's schema, with the messages clients see
//! in a 422 (`CronTab.stable.example.com "c1" is invalid: spec.replicas: Invalid value: 15:
//! spec.replicas in body should be less than or equal to 10`).
//!
//! The keyword checks follow kube-openapi's `validate.SchemaValidator` (type, allOf/anyOf/
//! oneOf/not, string, format, number, list, enum, object, in that order for each node), and
//! their errors are mapped to field errors as kube's `kubeOpenAPIResultToFieldErrors` maps
//! them: the path without a leading dot, `Required value`, `Unsupported value: ...`,
//! `Too long`, `Too many`, a `FieldValueTypeInvalid` for types and formats, and
//! `Invalid value` with kube-openapi's sentence for the rest. Then come the checks kube runs
//! besides: `x-kubernetes-embedded-resource` objects need `apiVersion` and `kind`
//! (`objectmeta/validation.go`), and list-type `set`/`map` items must be unique
//! ([`super::list_type`]). `format`s kube does not know (`int32`, ...) never fail.

use listwatch_meta::validation::{FieldError, is_dns1035_label};
use regex::Regex;
use serde_json::Value;

use super::{AdditionalProperties, Schema, format};
use crate::errors;
use crate::go_value::{go_float, json_type_name};
use crate::path::FieldPath;

impl Schema {
    /// Validates a whole custom resource against its version's root schema.
    pub fn validate(&self, object: &Value) -> Vec<FieldError> {
        self.validate_update(object, None)
    }

    /// Validates a custom resource that replaces `old` (`None` on create): the schema's
    /// checks, then its CEL rules ([`super::cel`]) unless an error kube calls blocking stopped
    /// them (then a note that they were not checked).
    pub fn validate_update(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        openapi(self, "", object, &mut errs);
        embedded(self, &FieldPath::root(), object, &mut errs, true);
        super::list_type::validate(self, &FieldPath::root(), object, &mut errs);
        if super::cel::has_rules(self) {
            if errs.iter().any(super::cel::is_blocking) {
                errs.push(super::cel::not_checked());
            } else {
                super::cel::validate(self, &FieldPath::root(), object, old, &mut errs);
            }
        }
        errs
    }

    /// Validates the `status` of a write to `/status` against `properties.status` (kube names
    /// the fields relative to `status` in the sentence and prefixes `status.` to the path).
    pub fn validate_status(&self, status: &Value) -> Vec<FieldError> {
        let Some(schema) = self.properties.get("status") else { return Vec::new() };
        let mut inner = Vec::new();
        openapi(schema, "", status, &mut inner);
        inner
            .into_iter()
            .map(|mut e| {
                e.field = if e.field.is_empty() || e.field == "<nil>" {
                    "status".into()
                } else {
                    format!("status.{}", e.field)
                };
                e
            })
            .collect()
    }
}

/// The field path of a kube-openapi name (`.spec.x` and `spec.x` alike); kube's errors about
/// the whole object print the nil path, `<nil>`.
fn field_path(name: &str) -> FieldPath {
    let trimmed = name.trim_start_matches('.');
    if trimmed.is_empty() { FieldPath::new("<nil>") } else { FieldPath::new(trimmed) }
}

fn type_list(s: &Schema) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        vec![]
    } else {
        vec![s.type_.as_str()]
    }
}

/// kube-openapi's `InvalidType` sentence for a string value (`must be of type integer: "string"`).
fn type_error(name: &str, expected: &str, found: &str) -> FieldError {
    errors::type_invalid(
        &field_path(name),
        &Value::String(found.into()),
        &format!("{name} in body must be of type {expected}: {}", listwatch_meta::validation::go_quote(found)),
    )
}

fn openapi(s: &Schema, name: &str, value: &Value, errs: &mut Vec<FieldError>) {
    let types = type_list(s);
    let supported_format = if format::is_supported(&s.format) { s.format.as_str() } else { "" };
    if value.is_null() {
        if !types.is_empty() && !s.nullable {
            errs.push(type_error(name, &types.join(","), "null"));
        }
        enumeration(s, name, value, errs);
        return;
    }
    // Type.
    let found = json_type_name(value);
    let is_float_int =
        found == "number" && value.as_f64().is_some_and(|f| f.fract() == 0.0) && types.contains(&"integer");
    let is_int_float = found == "integer" && types.contains(&"number");
    let numeric_schema = types.contains(&"number") || types.contains(&"integer");
    let format_lets_it_pass =
        !numeric_schema && !supported_format.is_empty() && matches!(value, Value::String(_) | Value::Array(_));
    if !(types.is_empty() || format_lets_it_pass || types.contains(&found) || is_float_int || is_int_float) {
        errs.push(type_error(name, &types.join(","), found));
    }
    composition(s, name, value, errs);
    match value {
        Value::String(text) => {
            string(s, name, text, errs);
            if !supported_format.is_empty() && !format::is_valid(supported_format, text) {
                errs.push(errors::type_invalid(
                    &field_path(name),
                    value,
                    &format!(
                        "{name} in body must be of type {supported_format}: {}",
                        listwatch_meta::validation::go_quote(text)
                    ),
                ));
            }
        }
        Value::Number(n) => number(s, name, value, n.as_f64().unwrap_or(0.0), errs),
        Value::Array(items) => array(s, name, items, errs),
        _ => {}
    }
    enumeration(s, name, value, errs);
    if let Value::Object(map) = value {
        object(s, name, map, errs);
    }
}

fn composition(s: &Schema, name: &str, value: &Value, errs: &mut Vec<FieldError>) {
    let composite = |detail: String| errors::invalid(&FieldPath::new("<nil>"), &Value::String(String::new()), &detail);
    let quoted = listwatch_meta::validation::go_quote(name);
    if !s.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s.any_of.iter().map(|sub| run(sub, name, value)).collect();
        if results.iter().all(|r| !r.is_empty()) {
            errs.push(composite(format!("{quoted} must validate at least one schema (anyOf)")));
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                errs.extend(best);
            }
        }
    }
    if !s.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s.one_of.iter().map(|sub| run(sub, name, value)).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let more =
                if valid == 0 { "Found none valid".to_string() } else { format!("Found {valid} valid alternatives") };
            errs.push(composite(format!("{quoted} must validate one and only one schema (oneOf). {more}")));
            if valid == 0
                && let Some(best) = results.into_iter().min_by_key(Vec::len)
            {
                errs.extend(best);
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0;
        for sub in &s.all_of {
            let r = run(sub, name, value);
            if r.is_empty() {
                validated += 1;
            }
            errs.extend(r);
        }
        if validated != s.all_of.len() {
            let more = if validated == 0 { ". None validated" } else { "" };
            errs.push(composite(format!("{quoted} must validate all the schemas (allOf){more}")));
        }
    }
    if let Some(not) = &s.not
        && run(not, name, value).is_empty()
    {
        errs.push(composite(format!("{quoted} must not validate the schema (not)")));
    }
}

fn run(s: &Schema, name: &str, value: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    openapi(s, name, value, &mut errs);
    errs
}

fn string(s: &Schema, name: &str, text: &str, errs: &mut Vec<FieldError>) {
    let path = field_path(name);
    let chars = text.chars().count() as i64;
    if let Some(max) = s.max_length
        && chars > max
    {
        errs.push(FieldError::too_long(path.to_string(), usize::try_from(max).unwrap_or(0)));
        return;
    }
    if let Some(min) = s.min_length
        && chars < min
    {
        errs.push(errors::invalid(
            &path,
            &Value::String(text.into()),
            &format!("{name} in body should be at least {min} chars long"),
        ));
        return;
    }
    if !s.pattern.is_empty() {
        match Regex::new(&s.pattern) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => errs.push(errors::invalid(
                &path,
                &Value::String(text.into()),
                &format!("{name} in body should match '{}'", s.pattern),
            )),
            Err(e) => errs.push(errors::invalid(
                &path,
                &Value::String(text.into()),
                &format!("{name} in body should match '{}, but pattern is invalid: {e}'", s.pattern),
            )),
        }
    }
}

fn number(s: &Schema, name: &str, value: &Value, n: f64, errs: &mut Vec<FieldError>) {
    let path = field_path(name);
    if let Some(m) = s.multiple_of {
        if m <= 0.0 {
            errs.push(errors::invalid(
                &path,
                value,
                &format!("factor MultipleOf declared for {name} must be positive: {}", go_float(m)),
            ));
        } else if (n / m).fract() != 0.0 {
            errs.push(errors::invalid(
                &path,
                value,
                &format!("{name} in body should be a multiple of {}", go_float(m)),
            ));
        }
    }
    if let Some(min) = s.minimum {
        let (bad, word) =
            if s.exclusive_minimum { (n <= min, "greater than") } else { (n < min, "greater than or equal to") };
        if bad {
            errs.push(errors::invalid(&path, value, &format!("{name} in body should be {word} {}", go_float(min))));
        }
    }
    if let Some(max) = s.maximum {
        let (bad, word) =
            if s.exclusive_maximum { (n >= max, "less than") } else { (n > max, "less than or equal to") };
        if bad {
            errs.push(errors::invalid(&path, value, &format!("{name} in body should be {word} {}", go_float(max))));
        }
    }
}

fn array(s: &Schema, name: &str, items: &[Value], errs: &mut Vec<FieldError>) {
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            openapi(item_schema, &format!("{name}[{i}]"), item, errs);
        }
    }
    let path = field_path(name);
    let len = items.len() as i64;
    if let Some(min) = s.min_items
        && len < min
    {
        errs.push(errors::invalid(
            &path,
            &Value::from(len),
            &format!("{name} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = s.max_items
        && len > max
    {
        errs.push(errors::too_many(&path, len, max));
    }
    if s.unique_items && items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| json_equal(a, b))) {
        errs.push(errors::invalid(
            &path,
            &Value::String(String::new()),
            &format!("{name} in body shouldn't contain duplicates"),
        ));
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), as Go compares decoded
/// values after conversion.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn enumeration(s: &Schema, name: &str, value: &Value, errs: &mut Vec<FieldError>) {
    let Some(allowed) = &s.enum_ else { return };
    if allowed.is_empty() || (!value.is_null() && allowed.iter().any(|a| json_equal(a, value))) {
        return;
    }
    let supported: Vec<String> =
        allowed.iter().map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned)).collect();
    errs.push(errors::not_supported(&field_path(name), value, &supported));
}

fn object(s: &Schema, name: &str, map: &serde_json::Map<String, Value>, errs: &mut Vec<FieldError>) {
    let path = field_path(name);
    let keys = map.len() as i64;
    if let Some(min) = s.min_properties
        && keys < min
    {
        errs.push(errors::invalid(
            &path,
            &Value::from(keys),
            &format!("{name} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = s.max_properties
        && keys > max
    {
        errs.push(errors::too_many(&path, keys, max));
    }
    match &s.additional_properties {
        Some(AdditionalProperties::Allows(false)) => {
            for key in map.keys().filter(|k| !s.properties.contains_key(*k)) {
                errs.push(errors::invalid(
                    &path,
                    &Value::String(String::new()),
                    &format!("{name}.{key} in body is a forbidden property"),
                ));
            }
        }
        Some(AdditionalProperties::Schema(additional)) => {
            for (key, v) in map.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                openapi(additional, &format!("{name}.{key}"), v, errs);
            }
        }
        _ => {}
    }
    for (key, prop) in &s.properties {
        if let Some(v) = map.get(key) {
            let child = if name.is_empty() { key.clone() } else { format!("{name}.{key}") };
            openapi(prop, &child, v, errs);
        }
    }
    for key in &s.required {
        if !map.contains_key(key) {
            errs.push(errors::required(&field_path(&format!("{name}.{key}")), ""));
        }
    }
}

/// `x-kubernetes-embedded-resource` objects: `apiVersion` and `kind` required and well formed.
fn embedded(s: &Schema, path: &FieldPath, value: &Value, errs: &mut Vec<FieldError>, is_root: bool) {
    match value {
        Value::Object(map) => {
            if s.embedded_resource && !is_root {
                validate_embedded(path, map, errs);
            }
            for (key, v) in map {
                if let Some(prop) = s.properties.get(key) {
                    embedded(prop, &path.child(key), v, errs, false);
                } else if let Some(additional) = s.additional_properties_schema() {
                    embedded(additional, &path.key(key), v, errs, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, v) in items.iter().enumerate() {
                    embedded(item_schema, &path.index(i), v, errs, false);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded(path: &FieldPath, map: &serde_json::Map<String, Value>, errs: &mut Vec<FieldError>) {
    if !map.contains_key("apiVersion") {
        errs.push(errors::required(&path.child("apiVersion"), "must not be empty"));
    }
    if !map.contains_key("kind") {
        errs.push(errors::required(&path.child("kind"), "must not be empty"));
    }
    for (key, v) in map {
        match (key.as_str(), v) {
            ("apiVersion" | "kind", Value::String(text)) if text.is_empty() => {
                errs.push(errors::invalid(&path.child(key), v, "must not be empty"));
            }
            ("apiVersion", Value::String(text)) if text.matches('/').count() > 1 => {
                errs.push(errors::invalid(&path.child(key), v, &format!("unexpected GroupVersion string: {text}")));
            }
            ("kind", Value::String(text)) if !is_dns1035_label(&text.to_lowercase()).is_empty() => {
                let problems = is_dns1035_label(&text.to_lowercase());
                errs.push(errors::invalid(
                    &path.child(key),
                    v,
                    &format!("may have mixed case, but should otherwise match: {}", problems.join(",")),
                ));
            }
            ("apiVersion" | "kind", Value::String(_)) => {}
            ("apiVersion" | "kind", _) => errs.push(errors::invalid(&path.child(key), v, "must be a string")),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab() -> Schema {
        Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["image"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "image": {"type": "string", "maxLength": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                "at": {"type": "string", "format": "date-time"},
                "size": {"type": "integer", "format": "int32"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 3, "minItems": 1, "items": {"type": "string"}},
                "note": {"type": "string", "nullable": true},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
            }}}}))
        .unwrap()
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn kube_messages_for_each_keyword() {
        let cr = json!({"spec": {"replicas": 15, "image": "a-very-long-image", "mode": "c", "cronSpec": "* * * *",
            "at": "soon", "size": 99999999999i64, "port": true, "tags": ["a", "b", "c", "d"], "note": null,
            "pod": {"kind": "Pod"}}});
        let errs = crontab().validate(&cr);
        assert_eq!(
            messages(&errs),
            vec![
                "spec.at: Invalid value: \"soon\": spec.at in body must be of type date-time: \"soon\"",
                "spec.cronSpec: Invalid value: \"* * * *\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
                "spec.image: Too long: may not be more than 10 bytes",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
                "spec.tags: Too many: 4: must have at most 3 items",
                "spec.pod.apiVersion: Required value: must not be empty",
            ]
        );
        assert_eq!(errs[0].error_type.as_str(), "FieldValueTypeInvalid");
        assert_eq!(errs[5].error_type.as_str(), "FieldValueInvalid");
    }

    #[test]
    fn types_required_and_minimums() {
        let errs = crontab().validate(&json!({"spec": {"replicas": "3", "tags": []}}));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
                "spec.image: Required value",
            ]
        );
        let errs = crontab().validate(&json!({"spec": {"image": "x", "replicas": 0}}));
        assert_eq!(
            messages(&errs),
            vec!["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]
        );
        assert!(crontab().validate(&json!({"spec": {"image": "x", "replicas": 2.0, "port": "http"}})).is_empty());
    }

    #[test]
    fn status_errors_are_named_relative_to_status() {
        let s = Schema::parse(&json!({"type": "object", "properties": {"status": {"type": "object",
            "properties": {"replicas": {"type": "integer"}}}}}))
        .unwrap();
        let errs = s.validate_status(&json!({"replicas": "x"}));
        assert_eq!(
            messages(&errs),
            vec!["status.replicas: Invalid value: \"string\": replicas in body must be of type integer: \"string\""]
        );
    }
}
