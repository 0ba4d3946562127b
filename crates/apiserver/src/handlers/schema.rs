//! Writes decoded against the kind's schema, and `fieldValidation` (spec: issue "object
//! semantics"; kube-apiserver's strict decoding).
//!
//! For kinds with a protobuf schema, a written object is checked for fields the schema does
//! not know and normalized by a round trip through the schema, so every stored object converts
//! to protobuf and back without loss (and reads back the way kube-apiserver serves it). Unknown
//! or duplicate fields answer 400 under `fieldValidation=Strict`, a `Warning` header each under
//! `Warn` (the default, as upstream), and are dropped silently under `Ignore`.
//!
//! CRDs and custom resources are decoded by [`super::custom_schema`]. Other kinds without a
//! schema keep what was sent, as kube-apiserver keeps custom resources that preserve unknown
//! fields; only duplicate fields are detected for them.

use listwatch_encoding::has_schema;
use listwatch_meta::{ApiError, Resource};
use serde_json::{Map, Value};

pub use super::strict_decoding::{Source, duplicate_fields, patch_invalid};
pub use crate::options::FieldValidation;

/// Checks and normalizes `object` for `resource`; returns the warnings to send.
pub fn decode(
    resource: &Resource,
    object: Map<String, Value>,
    source: Source<'_>,
    validation: FieldValidation,
) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    if super::custom_schema::is_crd(resource) {
        return super::custom_schema::decode_crd(resource, object, source, validation);
    }
    if let Some(served) = crate::customresources::resource::served(resource) {
        return super::custom_schema::decode_custom(served, object, source, validation);
    }
    let value = Value::Object(object);
    let schema = has_schema(resource);
    // Values of the wrong Go type fail the decode itself, before any strict-decoding report.
    if schema {
        let (group, version, kind) = (resource.group, resource.version, resource.kind);
        let error = match source {
            Source::Patch { strategic: true, .. } => {
                listwatch_proto::go_unstructured_error(group, version, kind, &value)
            }
            _ => listwatch_proto::go_decode_error(group, version, kind, &value),
        };
        if let Some(error) = error.map_err(ApiError::internal)? {
            return Err(match source {
                Source::Body(_) => crate::handlers::body_in::cannot_be_handled(kind, version, resource, &error),
                Source::Patch { shown, .. } => patch_invalid(&shown(), &error),
            });
        }
    }
    let mut problems = Vec::new();
    if let Source::Body(body) = source {
        problems.extend(duplicate_fields(body).iter().map(|p| listwatch_proto::duplicate_field_error(p)));
    }
    if schema {
        let unknown = listwatch_proto::check_json_fields(resource.group, resource.version, resource.kind, &value)
            .map_err(ApiError::internal)?;
        problems.extend(unknown.iter().map(|p| listwatch_proto::unknown_field_error(p)));
    }
    if let Source::Patch { strategic: true, .. } = source {
        // The unstructured converter reports unknown fields sorted.
        problems.sort();
    }
    let mut warnings = Vec::new();
    if !problems.is_empty() {
        match validation {
            FieldValidation::Strict => {
                let message = listwatch_proto::strict_decoding_message(resource.kind, resource.version, &problems);
                return Err(match source {
                    Source::Body(_) => ApiError::bad_request(message),
                    Source::Patch { shown, .. } => {
                        patch_invalid(&shown(), &format!("strict decoding error: {}", problems.join(", ")))
                    }
                });
            }
            FieldValidation::Warn => warnings = problems,
            FieldValidation::Ignore => {}
        }
    }
    let value = if !schema {
        value
    } else {
        match (normalize(resource, &value), &source) {
            (Ok(value), _) => value,
            // The patched object does not fit the kind's types: kube's 422 on `patch`.
            (Err(_), Source::Patch { shown, .. }) => {
                return Err(patch_invalid(&shown(), &undecodable_detail(resource, &value)));
            }
            (Err(e), Source::Body(_)) => return Err(e),
        }
    };
    match value {
        Value::Object(map) => Ok((map, warnings)),
        _ => Err(ApiError::bad_request("the object is not a JSON object")),
    }
}

/// Why `value` does not fit the kind's types, as the encoder says it (`spec.replicas: expected
/// an integer`): only for what Go's decoder accepts and the schema does not (see
/// `listwatch_proto::go_decode_error`, which words everything else as kube does).
fn undecodable_detail(resource: &Resource, value: &Value) -> String {
    match listwatch_proto::encode_object(resource.group, resource.version, resource.kind, value) {
        Err(e) => e.to_string(),
        Ok(_) => "the object does not decode".to_owned(),
    }
}

/// The object as the schema sees it: unknown fields dropped, the rest as kube-apiserver
/// serves it.
pub fn normalize(resource: &Resource, value: &Value) -> Result<Value, ApiError> {
    let bytes =
        listwatch_proto::encode_object(resource.group, resource.version, resource.kind, value).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                resource.kind, resource.version, resource.kind
            ))
        })?;
    let decoded = listwatch_proto::decode_object(resource.group, resource.version, resource.kind, &bytes)
        .map_err(ApiError::internal)?;
    Ok(decoded.object)
}

/// Decodes a protobuf request body (`k8s\0` + Unknown) for `resource` into JSON. Unknown
/// protobuf fields are ignored, as kube-apiserver does (it never strict-decodes protobuf).
pub fn decode_protobuf(resource: &Resource, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if !has_schema(resource) {
        return Err(ApiError::unsupported_media_type());
    }
    // The protobuf serializer's own checks, before the envelope is read.
    let unrecognized = |error: &str| crate::handlers::body_in::unrecognized(resource.kind, error, body);
    if body.is_empty() {
        return Err(unrecognized("empty data"));
    }
    if !body.starts_with(&listwatch_proto::MAGIC) {
        // Go prints the prefix bytes as `%v` of a []byte: `[107 56 115 0]`.
        let prefix: Vec<String> = listwatch_proto::MAGIC.iter().map(u8::to_string).collect();
        return Err(unrecognized(&format!(
            "provided data does not appear to be a protobuf message, expected prefix [{}]",
            prefix.join(" ")
        )));
    }
    if body.len() == listwatch_proto::MAGIC.len() {
        return Err(unrecognized("empty body"));
    }
    let envelope = listwatch_proto::unwrap_unknown(body)
        .map_err(|e| ApiError::bad_request(format!("the object provided is unrecognized: {e}")))?;
    let named = crate::handlers::kinds::from_type_meta(envelope.api_version, envelope.kind, resource);
    let type_meta = format!(
        "runtime.TypeMeta{{APIVersion:{}, Kind:{}}}",
        listwatch_meta::validation::go_quote(envelope.api_version),
        listwatch_meta::validation::go_quote(envelope.kind)
    );
    crate::handlers::kinds::decode_failure(&named, resource, &type_meta, &Map::new())
        .map_err(|e| crate::handlers::body_in::cannot_be_handled(&named.kind, &named.version, resource, &e))?;
    let decoded = listwatch_proto::decode_object(resource.group, resource.version, resource.kind, envelope.raw)
        .map_err(|e| {
            crate::handlers::body_in::cannot_be_handled(resource.kind, resource.version, resource, &e.to_string())
        })?;
    match decoded.object {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::bad_request("the object is not a JSON object")),
    }
}
