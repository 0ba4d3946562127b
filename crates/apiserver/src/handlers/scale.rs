//! The `scale` subresource: an autoscaling/v1 `Scale` view of `.spec.replicas` for
//! deployments and replicasets (what `kubectl scale` reads and patches), and of the paths a
//! CRD's `subresources.scale` names for its custom resources. A write through it is recorded
//! in the parent's managedFields as kube records it: an `Update` entry of the parent's version
//! with `subresource: scale`, owning the replicas field.

use bytes::Bytes;
use http::HeaderMap;
use listwatch_meta::registry::Subresource;
use listwatch_meta::{ApiError, Object, Resource};
use serde_json::{Map, Value, json};

use super::field_manager;
use super::patch_kind::PatchKind;
use crate::customresources::resource::served;
use crate::handlers::body_in;
use crate::options::ApplyOptions;
use crate::registry::ResourceStore;
use crate::registry::update::{Step, Updated};
use crate::request::ResourceRequest;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

/// The Scale of an object.
pub fn scale_of(resource: &Resource, object: &Object) -> Value {
    let value = object.value();
    let meta = &value["metadata"];
    let custom = served(resource).and_then(|s| s.scale_view(&value));
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
    let (spec, status, selector) = match custom {
        Some(view) => (view.spec_replicas, view.status_replicas, view.selector),
        None => (
            value.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1),
            value.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            selector,
        ),
    };
    let mut status = json!({"replicas": status});
    if !selector.is_empty() || custom_selector_path(resource).is_none() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec},
        "status": status,
    })
}

/// A custom resource's `labelSelectorPath`, when it is one with a scale subresource (`None`
/// for built-ins, which always report a selector).
fn custom_selector_path(resource: &Resource) -> Option<Option<&str>> {
    served(resource).and_then(|s| s.scale.as_ref()).map(|s| s.label_selector_path.as_deref())
}

fn respond(resource: &Resource, object: &Object) -> HttpResponse {
    response::json(200, Bytes::from(scale_of(resource, object).to_string()))
}

pub async fn get(store: &ResourceStore, req: &ResourceRequest) -> Result<HttpResponse, ApiError> {
    let object = store.read_existing(req.namespace.as_deref(), req.name.as_deref().unwrap_or("")).await?;
    Ok(respond(store.resource, &object))
}

/// Sets `replicas` where the resource keeps it: `.spec.replicas`, or a CRD's
/// `specReplicasPath` (a dotted path; missing parents are made).
fn put_replicas(resource: &Resource, object: &mut Map<String, Value>, replicas: i32) {
    let path = served(resource)
        .and_then(|s| s.scale.as_ref())
        .map_or(".spec.replicas".to_owned(), |s| s.spec_replicas_path.clone());
    let keys: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let Some((last, parents)) = keys.split_last() else { return };
    let mut node = object;
    for key in parents {
        let entry = node.entry(key.to_string()).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        node = entry.as_object_mut().expect("made an object");
    }
    node.insert(last.to_string(), json!(replicas));
}

/// `spec.replicas` of a Scale a client sent: absent is 0 (Go's zero value), anything but an
/// `int32` does not decode. kube answers that with a 400 for a PUT and with its 422 on `patch`
/// for a patch (`shown` renders the patch as kube shows it); the texts are Go's JSON decoder's,
/// or, for a strategic merge patch, its unstructured converter's, which converts any whole
/// number as Go converts an int64 to an int32 (wrapping).
fn scale_replicas(scale: &Value, shown: Option<&dyn Fn() -> String>, strategic: bool) -> Result<i32, ApiError> {
    let value = scale.pointer("/spec/replicas").unwrap_or(&Value::Null);
    let detail = match value {
        Value::Null => return Ok(0),
        Value::Number(n) if strategic => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => return Ok(i as i32),
            (None, Some(f)) if f == f.trunc() => return Ok(f as i64 as i32),
            _ => "cannot convert float64 to int32".to_owned(),
        },
        _ if strategic => "unrecognized type: int32".to_owned(),
        Value::Number(n) => match n.as_i64().and_then(|n| i32::try_from(n).ok()) {
            Some(replicas) => return Ok(replicas),
            None => listwatch_gocompat::json::type_error(&format!("number {n}"), "ScaleSpec", "spec.replicas", "int32"),
        },
        other => listwatch_gocompat::json::type_error(
            listwatch_gocompat::json::json_kind(other),
            "ScaleSpec",
            "spec.replicas",
            "int32",
        ),
    };
    Err(match shown {
        Some(shown) => crate::handlers::schema::patch_invalid(&shown(), &detail),
        None => ApiError::bad_request(format!("Scale in version \"v1\" cannot be handled as a Scale: {detail}")),
    })
}

/// Who writes through `/scale`, and how the parent's managedFields record it.
#[derive(Clone, Copy)]
enum Writer<'a> {
    /// A PUT or a non-apply patch by this manager: its `Update` entry.
    Update(&'a str),
    /// A server-side apply of this Scale configuration.
    Apply { scale: &'a Value, options: &'a ApplyOptions },
}

/// A server-side apply of a Scale configuration (`autoscaling/v1`, kind `Scale`): its
/// `spec.replicas` (and `metadata.resourceVersion`, as a precondition) over the current Scale.
/// The configuration's kind and managedFields are checked as the field manager checks them.
pub async fn apply(
    store: &ResourceStore,
    req: &ResourceRequest,
    config: &Value,
    options: &ApplyOptions,
) -> Result<HttpResponse, ApiError> {
    let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or_default();
    if text("apiVersion") != "autoscaling/v1" || text("kind") != "Scale" {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {}",
            field_manager::gvk_text(text("apiVersion"), text("kind"))
        )));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let writer = Writer::Apply { scale: config, options };
    set_replicas(store, req, options.dry_run, writer, None, |existing| {
        let mut scale = scale_of(store.resource, existing);
        if let Some(replicas) = config.pointer("/spec/replicas") {
            scale["spec"]["replicas"] = replicas.clone();
        }
        if let Some(rv) = config.pointer("/metadata/resourceVersion") {
            scale["metadata"]["resourceVersion"] = rv.clone();
        }
        Ok(scale)
    })
    .await
}

/// Sets `.spec.replicas` from a Scale, honouring its resourceVersion as a precondition.
/// `patch`: the patch type and patch that made the Scale, for a PATCH.
async fn set_replicas(
    store: &ResourceStore,
    req: &ResourceRequest,
    dry_run: bool,
    writer: Writer<'_>,
    patch: Option<(PatchKind, &Value)>,
    mut scale_after: impl FnMut(&Object) -> Result<Value, ApiError>,
) -> Result<HttpResponse, ApiError> {
    let name = req.name.as_deref().unwrap_or("");
    let gr = store.resource.group_resource();
    let updated = store
        .guaranteed_update(req.namespace.as_deref(), name, None, dry_run, |existing| {
            let scale = scale_after(existing)?;
            if let Some(rv) =
                scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty())
                && rv != existing.resource_version().to_string()
            {
                return Err(ApiError::modified_conflict(&gr, name));
            }
            let shown = |scale: &Value| match patch {
                Some((PatchKind::Strategic, patch)) => listwatch_patch::go_value(patch),
                _ => scale.to_string(),
            };
            let shown_scale = || shown(&scale);
            let strategic = matches!(patch, Some((PatchKind::Strategic, _)));
            let replicas = scale_replicas(&scale, patch.map(|_| &shown_scale as &dyn Fn() -> String), strategic)?;
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
            put_replicas(store.resource, &mut object, replicas);
            let object = match writer {
                Writer::Update(manager) => field_manager::record_update(
                    store.resource,
                    Some(Subresource::Scale),
                    &existing.value(),
                    object,
                    manager,
                ),
                Writer::Apply { scale, options } => field_manager::record_scale_apply(
                    store.resource,
                    &existing.value(),
                    object,
                    scale,
                    &options.manager,
                    options.force,
                )
                .map_err(field_manager::apply_error)?,
            };
            let new = crate::registry::strategy::prepare_for_update(store.resource, &old, object, None)?;
            Ok(Step::Write(new))
        })
        .await?;
    match updated {
        Updated::Written(o) | Updated::Unchanged(o) | Updated::Deleted(o) => Ok(respond(store.resource, &o)),
    }
}

pub async fn update(
    _state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    headers: &HeaderMap,
    body: Bytes,
    dry_run: bool,
    manager: &str,
) -> Result<HttpResponse, ApiError> {
    if body_in::input_media_type(headers)? != "application/json" {
        return Err(ApiError::unsupported_media_type());
    }
    // Decoded as any body is: Go's syntax errors, nested as deep as Go allows.
    let scale = body_in::json_of_kind("Scale", &body)?;
    set_replicas(store, req, dry_run, Writer::Update(manager), None, |_| Ok(scale.clone())).await
}

pub async fn patch(
    _state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    kind: PatchKind,
    patch: &Value,
    dry_run: bool,
    manager: &str,
) -> Result<HttpResponse, ApiError> {
    set_replicas(store, req, dry_run, Writer::Update(manager), Some((kind, patch)), |existing| {
        // Scale has no merge keys: strategic merge behaves as a merge patch here.
        let kind = if kind == PatchKind::Strategic { PatchKind::Merge } else { kind };
        kind.apply(store.resource, &scale_of(store.resource, existing), patch)
    })
    .await
}
