//! What kube's custom resource handler (`customresource_handler.go`) decides before a verb
//! runs, for requests to custom resources: creates are refused while the CRD is being deleted
//! (405), strategic merge patches are refused (415: CRs take JSON patch, merge patch and
//! apply), a deprecated version's requests carry its warning, and a PUT must name the
//! resourceVersion it updates (CRs allow no unconditional update).

use http::HeaderMap;
use listwatch_meta::status::StatusCause;
use listwatch_meta::{ApiError, Resource};
use serde_json::{Map, Value};

use super::patch_kind::PatchKind;
use crate::customresources::resource::served;
use crate::request::{ResourceRequest, Verb};
use crate::state::ApiState;

/// The patch types a custom resource takes, as kube's 415 lists them.
const PATCH_TYPES: [&str; 3] =
    ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

/// Refuses what the CR handler refuses; returns the warnings every answer to the request
/// carries (a deprecated version's).
pub async fn check(
    state: &ApiState,
    resource: &Resource,
    req: &ResourceRequest,
    headers: &HeaderMap,
) -> Result<Vec<String>, ApiError> {
    let Some(served) = served(resource) else { return Ok(Vec::new()) };
    if req.verb == Verb::Create && req.subresource.is_none() && terminating(state, &served.crd_name).await? {
        let mut refused = ApiError::method_not_supported(&resource.group_resource(), "create");
        refused.0.message = "create not allowed while custom resource definition is terminating".into();
        return Err(refused);
    }
    if req.verb == Verb::Patch && PatchKind::from_headers(headers) == Ok(PatchKind::Strategic) {
        return Err(ApiError::unsupported_media_type_of(&PATCH_TYPES));
    }
    Ok(served.deprecation_warning.iter().cloned().collect())
}

/// Whether the CRD is being deleted, read from storage: a create right after the CRD's delete
/// was answered must see it, whether or not the CRD controller has yet.
async fn terminating(state: &ApiState, crd_name: &str) -> Result<bool, ApiError> {
    let Some(crd) = state.crds().read(None, crd_name).await? else { return Ok(true) };
    let crd =
        listwatch_apiextensions::CustomResourceDefinition::from_value(&crd.value()).map_err(ApiError::internal)?;
    Ok(crd.is_condition_true("Terminating") || crd.metadata.get("deletionTimestamp").is_some_and(|t| !t.is_null()))
}

/// kube's 422 for a PUT of a custom resource without `metadata.resourceVersion`.
pub fn require_resource_version(resource: &Resource, object: &Map<String, Value>, name: &str) -> Result<(), ApiError> {
    if resource.dynamic.is_none() {
        return Ok(());
    }
    let rv = object.get("metadata").and_then(|m| m.get("resourceVersion")).and_then(Value::as_str).unwrap_or("");
    if !rv.is_empty() {
        return Ok(());
    }
    // kube's registry names the resource where the kind would be (`crontabs.stable.example.com`).
    Err(ApiError::invalid(
        resource.group,
        resource.plural,
        name,
        vec![StatusCause::new(
            "FieldValueInvalid",
            "Invalid value: 0x0: must be specified for an update",
            "metadata.resourceVersion",
        )],
    ))
}
