//! Unknown-field reports for `fieldValidation`, and kube-apiserver's wording for them.
//!
//! What kube-apiserver does with a request body's unknown (and duplicate) fields, per the
//! `fieldValidation` query parameter:
//!
//! * `Strict` on POST/PUT: 400 BadRequest, message
//!   `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec.foo", unknown field "data2"`.
//!   The prefix is `transformDecodeError` in apiserver `pkg/endpoints/handlers/rest.go`
//!   (`"%s in version %q cannot be handled as a %s: %v"`), then apimachinery
//!   `runtime.strictDecodingError.Error()` (`pkg/runtime/error.go`): `strict decoding error: `
//!   and the individual errors joined by `", "`, in document order. Each individual error is
//!   sigs.k8s.io/json's: `unknown field "<path>"` or `duplicate field "<path>"`, with the path
//!   written like `spec.template.spec.containers[0].imagee` (no leading dot).
//!   On PATCH the same `strict decoding error: ...` text comes back inside a 422 Invalid for the
//!   field `patch` (apiserver `handlers/patch.go`).
//! * `Warn` (the default since 1.25): the request succeeds and each individual error becomes
//!   one `Warning: 299 - "unknown field \"spec.foo\""` header (`addStrictDecodingWarnings`).
//! * `Ignore`: dropped silently.
//! * Protobuf bodies are never checked: apimachinery's codec factory registers the plain
//!   protobuf serializer as the protobuf "strict" serializer ("note, strict decoding is
//!   unsupported for protobuf, fall back to regular serializing", `codec_factory.go`), and the
//!   generated unmarshallers skip unknown fields. [`crate::decode_object`] still reports them,
//!   so a server can choose.
//!
//! Duplicate keys cannot be found from a parsed `serde_json::Value` (the parser keeps one of
//! them); a server that wants to report them has to look at the raw body.

use listwatch_gocompat::quote::go_quote;
use serde_json::{Map, Value};

use crate::path::Path;
use crate::schema::{Cardinality, Schema, ValueType};

/// The individual strict-decoding error for an unknown field: `unknown field "spec.foo"`.
/// Also the text of the `Warning` header kube-apiserver adds under `fieldValidation=Warn`.
pub fn unknown_field_error(path: &str) -> String {
    format!("unknown field {}", go_quote(path))
}

/// The individual strict-decoding error for a duplicate field: `duplicate field "spec.foo"`.
pub fn duplicate_field_error(path: &str) -> String {
    format!("duplicate field {}", go_quote(path))
}

/// The message of kube-apiserver's 400 BadRequest for a POST/PUT body rejected under
/// `fieldValidation=Strict`; `errors` are individual errors such as [`unknown_field_error`]'s.
pub fn strict_decoding_message(kind: &str, version: &str, errors: &[String]) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {kind}: strict decoding error: {}",
        go_quote(version),
        errors.join(", ")
    )
}

/// Appends the paths of keys in `object` that message `message` does not define, other than
/// `known` (the top level's `apiVersion` and `kind`).
pub(crate) fn check_object(
    schema: &Schema,
    message: usize,
    object: &Map<String, Value>,
    known: &[&str],
    path: &Path<'_>,
    unknown: &mut Vec<String>,
) {
    for (key, value) in object.iter().filter(|(key, _)| !known.contains(&key.as_str())) {
        let path = path.field(key);
        let Some(found) = schema.json_key(message, key) else {
            unknown.push(path.render());
            continue;
        };
        let field = &schema.messages[found.message].fields[found.field];
        match (field.cardinality, value) {
            (Cardinality::Single, value) => check_value(schema, field.value, value, &path, unknown),
            (Cardinality::Repeated, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    check_value(schema, field.value, item, &path.index(i), unknown);
                }
            }
            (Cardinality::Map { .. }, Value::Object(entries)) => {
                for (key, item) in entries {
                    check_value(schema, field.value, item, &path.key(key), unknown);
                }
            }
            // A value of the wrong JSON type is an encoding error, not an unknown field.
            _ => {}
        }
    }
}

fn check_value(schema: &Schema, value_type: ValueType, value: &Value, path: &Path<'_>, unknown: &mut Vec<String>) {
    if let (ValueType::Message(message), Value::Object(object)) = (value_type, value) {
        // Special messages (times, quantities, embedded JSON) have no fields of their own in JSON.
        if schema.messages[message].special.is_none() {
            check_object(schema, message, object, &[], path, unknown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_kube_apiservers() {
        let errors =
            vec![unknown_field_error("spec.replica"), unknown_field_error("spec.template.spec.containers[0].imagee")];
        assert_eq!(
            strict_decoding_message("Deployment", "v1", &errors),
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
             unknown field \"spec.replica\", unknown field \"spec.template.spec.containers[0].imagee\""
        );
        assert_eq!(duplicate_field_error("spec.paused"), "duplicate field \"spec.paused\"");
        assert_eq!(unknown_field_error("a\"b"), "unknown field \"a\\\"b\"");
    }
}
