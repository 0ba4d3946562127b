//! The `scale` subresource: an autoscaling/v1 `Scale` view of `.spec.replicas` for
//! deployments and replicasets (what `kubectl scale` reads and patches).

use bytes::Bytes;
use http::HeaderMap;
use listwatch_meta::{ApiError, Object};
use serde_json::{Map, Value, json};

use crate::body_in;
use crate::request::ResourceRequest;
use crate::resource::ResourceStore;
use crate::response::{self, HttpResponse};
use crate::server::ApiState;
use crate::write::{PatchKind, Step, Updated, guaranteed_update};

/// The Scale of an object.
pub fn scale_of(object: &Object) -> Value {
    let value = object.value();
    let meta = &value["metadata"];
    let selector = value
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            let mut pairs: Vec<String> =
                labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
            pairs.sort();
            pairs.join(",")
        })
        .unwrap_or_default();
    let mut metadata = Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(field) {
            metadata.insert(field.into(), v.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": value.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {"replicas": value.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0), "selector": selector},
    })
}

fn respond(object: &Object) -> HttpResponse {
    response::json(200, Bytes::from(scale_of(object).to_string()))
}

pub async fn get(store: &ResourceStore, req: &ResourceRequest) -> Result<HttpResponse, ApiError> {
    let object = store.read_existing(req.namespace.as_deref(), req.name.as_deref().unwrap_or("")).await?;
    Ok(respond(&object))
}

/// Sets `.spec.replicas` from a Scale, honouring its resourceVersion as a precondition.
async fn set_replicas(
    store: &ResourceStore,
    req: &ResourceRequest,
    dry_run: bool,
    mut scale_after: impl FnMut(&Object) -> Result<Value, ApiError>,
) -> Result<HttpResponse, ApiError> {
    let name = req.name.as_deref().unwrap_or("");
    let gr = store.resource.group_resource();
    let updated = guaranteed_update(store, req.namespace.as_deref(), name, None, dry_run, |existing| {
        let scale = scale_after(existing)?;
        if let Some(rv) = scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty())
            && rv != existing.resource_version().to_string()
        {
            return Err(ApiError::modified_conflict(&gr, name));
        }
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::bad_request("the Scale has no spec.replicas"))?;
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![listwatch_meta::status::StatusCause::new(
                    "FieldValueInvalid",
                    format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                    "spec.replicas",
                )],
            ));
        }
        let Value::Object(mut object) = existing.value() else { unreachable!() };
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("resourceVersion");
        }
        let old = object.clone();
        object.entry("spec").or_insert_with(|| json!({}))["replicas"] = json!(replicas);
        let new = crate::strategy::prepare_for_update(store.resource, &old, object, None)?;
        Ok(Step::Write(new))
    })
    .await?;
    match updated {
        Updated::Written(o) | Updated::Unchanged(o) | Updated::Deleted(o) => Ok(respond(&o)),
    }
}

pub async fn update(
    _state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    headers: &HeaderMap,
    body: Bytes,
    dry_run: bool,
) -> Result<HttpResponse, ApiError> {
    let ct = body_in::content_type(headers);
    if !(ct.is_empty() || ct == "application/json") {
        return Err(ApiError::unsupported_media_type(&ct));
    }
    let scale: Value =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("error decoding Scale: {e}")))?;
    set_replicas(store, req, dry_run, |_| Ok(scale.clone())).await
}

pub async fn patch(
    _state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    kind: PatchKind,
    patch: &Value,
    dry_run: bool,
) -> Result<HttpResponse, ApiError> {
    set_replicas(store, req, dry_run, |existing| {
        // Scale has no merge keys: strategic merge behaves as a merge patch here.
        let kind = if kind == PatchKind::Strategic { PatchKind::Merge } else { kind };
        kind.apply(store.resource, &scale_of(existing), patch)
    })
    .await
}
