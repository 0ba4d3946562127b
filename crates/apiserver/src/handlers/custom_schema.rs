//! Written CRDs and custom resources decoded as kube decodes them, with `fieldValidation`
//! (spec §2.3, §2.4, §2.7); the built-in kinds' decoding is [`super::schema`]'s.
//!
//! * A CRD is decoded into the typed `apiextensions.k8s.io/v1` structs: fields they do not
//!   know are unknown fields (kube's strict decoder names them), and the decoder's defaults
//!   (`singular`, `listKind`, `conversion`, `storedVersions`) are filled in.
//! * A custom resource is pruned against its version's schema (the pruned paths are its
//!   unknown fields) and defaulted.
//!
//! Either way, duplicate keys of a body come first, then unknown fields: under `Strict` a 400
//! for a body (a 422 on `patch` for a patch's result), under `Warn` one `Warning` each, under
//! `Ignore` nothing; the object stored is the pruned, defaulted one.

use listwatch_apiextensions::serving::ServedVersion;
use listwatch_apiextensions::{CustomResourceDefinition, crd};
use listwatch_meta::{ApiError, Resource};
use serde_json::{Map, Value};

use super::strict_decoding::{Source, duplicate_fields, patch_invalid};
use crate::options::FieldValidation;

/// Whether `resource` is `customresourcedefinitions`.
pub fn is_crd(resource: &Resource) -> bool {
    resource.group == crd::GROUP && resource.plural == crd::RESOURCE
}

/// Duplicates of a body, then `unknown`, as strict-decoding errors.
fn problems(source: &Source<'_>, unknown: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if let Source::Body(body) = source {
        out.extend(duplicate_fields(body).iter().map(|p| listwatch_proto::duplicate_field_error(p)));
    }
    out.extend(unknown.iter().map(|p| listwatch_proto::unknown_field_error(p)));
    out
}

/// The directive applied to `problems`: the error under Strict, else the warnings to send.
fn apply_directive(
    kind: &str,
    version: &str,
    source: &Source<'_>,
    problems: Vec<String>,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    if problems.is_empty() {
        return Ok(Vec::new());
    }
    match validation {
        FieldValidation::Strict => Err(match source {
            Source::Body(_) => {
                ApiError::bad_request(listwatch_proto::strict_decoding_message(kind, version, &problems))
            }
            Source::Patch { shown, .. } => {
                patch_invalid(&shown(), &format!("strict decoding error: {}", problems.join(", ")))
            }
        }),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Ignore => Ok(Vec::new()),
    }
}

/// Decodes a written CRD: the typed fields with their defaults; returns the warnings to send.
pub fn decode_crd(
    resource: &Resource,
    object: Map<String, Value>,
    source: Source<'_>,
    validation: FieldValidation,
) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    let raw = Value::Object(object);
    let mut typed = CustomResourceDefinition::from_value(&raw).map_err(|e| {
        let detail = format!("json: {e}");
        match &source {
            Source::Body(_) => {
                crate::handlers::body_in::cannot_be_handled(resource.kind, resource.version, resource, &detail)
            }
            Source::Patch { shown, .. } => patch_invalid(&shown(), &detail),
        }
    })?;
    let unknown = crd::unknown_fields(&raw);
    let warnings = apply_directive(resource.kind, resource.version, &source, problems(&source, &unknown), validation)?;
    listwatch_apiextensions::defaults::set_defaults(&mut typed);
    match typed.to_value() {
        Value::Object(map) => Ok((map, warnings)),
        _ => Err(ApiError::bad_request("the object is not a JSON object")),
    }
}

/// Decodes a written custom resource: pruned and defaulted; returns the warnings to send.
pub fn decode_custom(
    served: &ServedVersion,
    object: Map<String, Value>,
    source: Source<'_>,
    validation: FieldValidation,
) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    let mut value = Value::Object(object);
    let unknown = served.coerce(&mut value);
    let warnings = apply_directive(&served.kind, &served.version, &source, problems(&source, &unknown), validation)?;
    match value {
        Value::Object(map) => Ok((map, warnings)),
        _ => Err(ApiError::bad_request("the object is not a JSON object")),
    }
}
