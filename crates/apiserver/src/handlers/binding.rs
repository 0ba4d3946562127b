//! The `binding` subresource of pods (`POST .../pods/{name}/binding` with a `v1 Binding`),
//! as kube-apiserver's pod `BindingREST`: what a scheduler calls to put a pod on a node. It
//! sets `spec.nodeName` once, merges the binding's annotations into the pod's and records the
//! `PodScheduled=True` condition, writing straight to storage (no strategy, no managedFields,
//! as kube's `GuaranteedUpdate` there). The answer is a `Status` Success with code 201.
//!
//! A pod already bound, or being deleted, is a 409 Conflict on `pods/binding` with kube's
//! words; a gone pod is the pods' 404. kube reports a binding that fails `ValidatePodBinding`
//! (a target kind other than Node, no target name) as a bare error, which its handler turns
//! into a 500; listwatch answers those with the 422 `Binding "<name>" is invalid` the same
//! field errors make elsewhere, a client's mistake not being a server error.

use bytes::Bytes;
use http::HeaderMap;
use listwatch_gocompat::quote::go_quote;
use listwatch_meta::status::{GroupResource, Status, StatusCause};
use listwatch_meta::{ApiError, registry::Subresource};
use serde_json::{Map, Value, json};

use super::body_in;
use crate::options::{OptionsKind, write_options};
use crate::registry::update::Step;
use crate::registry::{ResourceStore, editable, metadata_mut};
use crate::request::{Query, ResourceRequest};
use crate::response::{self, HttpResponse};

/// Whether `req` is a binding: a POST to `pods/{name}/binding`.
pub fn is_binding(store: &ResourceStore, req: &ResourceRequest) -> bool {
    req.subresource.as_deref() == Some(Subresource::Binding.name())
        && store.resource.has_subresource(Subresource::Binding)
}

/// POST of a Binding.
pub async fn create(
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (dry_run, _) = write_options(query, OptionsKind::Create)?;
    let binding = decode(headers, &body)?;
    let name = req.name.as_deref().unwrap_or("");
    let text = |pointer: &str| binding.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    if text("/metadata/name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
    }
    let causes = validate(text("/target/kind"), text("/target/name"));
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Binding", name, causes));
    }
    let node = text("/target/name").to_owned();
    let annotations = binding.pointer("/metadata/annotations").and_then(Value::as_object).cloned();
    let binding_gr = GroupResource::new("", "pods/binding");
    let now = crate::registry::strategy::now_rfc3339();
    store
        .guaranteed_update(req.namespace.as_deref(), name, None, dry_run, |existing| {
            let mut pod = editable(existing);
            if existing.value().pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
                let why = format!("pod {name} is being deleted, cannot be assigned to a host");
                return Err(ApiError::conflict(&binding_gr, name, &why));
            }
            let assigned = pod.get("spec").and_then(|s| s.get("nodeName")).and_then(Value::as_str).unwrap_or("");
            if !assigned.is_empty() {
                let why = format!("pod {name} is already assigned to node {}", go_quote(assigned));
                return Err(ApiError::conflict(&binding_gr, name, &why));
            }
            if pod
                .get("spec")
                .and_then(|s| s.get("schedulingGates"))
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
            {
                let why = format!("pod {name} has non-empty .spec.schedulingGates");
                return Err(ApiError::conflict(&binding_gr, name, &why));
            }
            bind(&mut pod, &node, annotations.as_ref(), &now);
            Ok(Step::Write(pod))
        })
        .await?;
    let mut status = Status::success(None);
    status.code = 201;
    Ok(response::json(201, Bytes::from(status.to_json())))
}

/// The body as JSON (or YAML), a `Binding` if it names a kind.
fn decode(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let json = match body_in::input_media_type(headers)? {
        "application/json" => body.to_vec(),
        "application/yaml" => listwatch_encoding::yaml::to_json(body)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?,
        _ => return Err(ApiError::unsupported_media_type()),
    };
    let binding = body_in::json_of_kind("Binding", &json)?;
    if !binding.is_object() {
        return Err(body_in::unrecognized("Binding", "couldn't get version/kind; json parse error", &json));
    }
    match binding.get("kind").and_then(Value::as_str) {
        None | Some("" | "Binding") => Ok(binding),
        Some(other) => {
            let version = binding.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            Err(ApiError::bad_request(format!(
                "{other} in version {} cannot be handled as a Binding: no kind {} is registered for version {}",
                go_quote(version),
                go_quote(other),
                go_quote(version)
            )))
        }
    }
}

/// kube's `ValidatePodBinding`: the target is a Node (or names no kind) and has a name.
fn validate(kind: &str, name: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !kind.is_empty() && kind != "Node" {
        causes.push(StatusCause::new(
            "FieldValueNotSupported",
            format!("Unsupported value: {}: supported values: \"Node\", \"<empty>\"", go_quote(kind)),
            "target.kind",
        ));
    }
    if name.is_empty() {
        causes.push(StatusCause::new("FieldValueRequired", "Required value", "target.name"));
    }
    causes
}

/// Puts the pod on `node`: its node name, the binding's annotations, and `PodScheduled=True`
/// (kube's `UpdatePodCondition`: the transition time moves only when the status changes).
fn bind(pod: &mut Map<String, Value>, node: &str, annotations: Option<&Map<String, Value>>, now: &str) {
    let spec = pod.entry("spec").or_insert_with(|| json!({}));
    spec["nodeName"] = json!(node);
    if let Some(annotations) = annotations {
        let meta = metadata_mut(pod);
        let entry = meta.entry("annotations").or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        let mine = entry.as_object_mut().expect("made an object");
        for (key, value) in annotations {
            mine.insert(key.clone(), value.clone());
        }
    }
    let status = pod.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status.as_object_mut().expect("an object").entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let conditions = conditions.as_array_mut().expect("an array");
    let scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled")) {
        Some(old) if old.get("status").and_then(Value::as_str) == Some("True") => {}
        Some(old) => *old = scheduled,
        None => conditions.push(scheduled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_sets_the_node_and_the_scheduled_condition_once() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}, "status": {"conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
        .as_object()
        .unwrap()
        .clone();
        let annotations = json!({"a": "b"}).as_object().unwrap().clone();
        bind(&mut pod, "node-1", Some(&annotations), "2026-01-01T00:00:00Z");
        assert_eq!(pod["spec"]["nodeName"], "node-1");
        assert_eq!(pod["metadata"]["annotations"]["a"], "b");
        let conditions = pod["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0]["status"], "True");
        assert!(conditions[0].get("reason").is_none());
    }

    #[test]
    fn the_target_must_be_a_named_node() {
        assert!(validate("", "n").is_empty() && validate("Node", "n").is_empty());
        let causes = validate("Pod", "");
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].field, "target.kind");
    }
}
