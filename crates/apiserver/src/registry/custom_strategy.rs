//! What writes do to CRDs and custom resources beyond the generic strategy of
//! [`super::strategy`], which calls in here:
//!
//! * a CRD (kube's `pkg/registry/customresourcedefinition/strategy.go`, through the typed
//!   library): a create clears the status and records the storage version in
//!   `storedVersions`; an update keeps the status, counts spec changes in `generation` and
//!   adds a new storage version; validation is the library's, with kube's paths and messages;
//! * a custom resource (kube's `pkg/registry/customresource`): validated against its version's
//!   schema after ObjectMeta (type meta, schema, list types, embedded resources, scale
//!   replicas); a write to `/status` validates `status` only; without a status subresource a
//!   status change counts for `generation` like any other.

use listwatch_apiextensions::CustomResourceDefinition;
use listwatch_apiextensions::crd::{GROUP, RESOURCE};
use listwatch_meta::Resource;
use listwatch_meta::validation::FieldError;
use serde_json::{Map, Value};

use crate::customresources::resource::served;

/// The finalizer a CRD's first delete adds; the CRD controller removes it once the CRD's
/// instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `resource` is `customresourcedefinitions`.
pub fn is_crd(resource: &Resource) -> bool {
    resource.group == GROUP && resource.plural == RESOURCE
}

/// kube's CRD `Delete`: a CRD being deleted gets a `deletionTimestamp` (no grace period) and
/// the condition `Terminating`/`InstanceDeletionPending`. Returns false for other kinds.
pub fn mark_crd_deleting(resource: &Resource, object: &mut Map<String, Value>) -> bool {
    if !is_crd(resource) {
        return false;
    }
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    if let Some(mut crd) = typed(object) {
        let condition = listwatch_apiextensions::crd::CustomResourceDefinitionCondition {
            type_: "Terminating".into(),
            status: "True".into(),
            last_transition_time: None,
            reason: "InstanceDeletionPending".into(),
            message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon".into(),
        };
        listwatch_apiextensions::names::set_condition(&mut crd, condition, &now);
        store_typed(object, &crd);
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("deletionTimestamp").or_insert(Value::String(now));
    }
    true
}

fn typed(object: &Map<String, Value>) -> Option<CustomResourceDefinition> {
    CustomResourceDefinition::from_value(&Value::Object(object.clone())).ok()
}

/// Writes the typed CRD back into `object`, keeping its metadata as it is.
fn store_typed(object: &mut Map<String, Value>, crd: &CustomResourceDefinition) {
    if let Value::Object(map) = crd.to_value() {
        for (key, value) in map {
            if key != "metadata" {
                object.insert(key, value);
            }
        }
    }
}

/// After the generic create preparation.
pub fn prepare_for_create(resource: &Resource, object: &mut Map<String, Value>) {
    if !is_crd(resource) {
        return;
    }
    if let Some(mut crd) = typed(object) {
        listwatch_apiextensions::strategy::prepare_for_create(&mut crd);
        store_typed(object, &crd);
    }
}

/// After the generic update preparation of the main resource.
pub fn prepare_for_update(resource: &Resource, old: &Map<String, Value>, new: &mut Map<String, Value>) {
    if !is_crd(resource) {
        return;
    }
    if let (Some(mut crd), Some(old)) = (typed(new), typed(old)) {
        listwatch_apiextensions::strategy::prepare_for_update(&mut crd, &old);
        store_typed(new, &crd);
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("generation".into(), Value::from(crd.generation()));
        }
    }
}

/// Whether a change of `status` counts for `generation`: for a custom resource without a
/// status subresource, status is part of what its generation tracks.
pub fn status_counts_for_generation(resource: &Resource) -> bool {
    served(resource).is_some_and(|s| !s.status_subresource)
}

/// The kind's checks of a create after ObjectMeta's.
pub fn validate_create(resource: &Resource, object: &Map<String, Value>) -> Vec<FieldError> {
    if is_crd(resource) {
        return typed(object)
            .map(|crd| listwatch_apiextensions::validation::validate_create_spec(&crd))
            .unwrap_or_default();
    }
    match served(resource) {
        Some(served) => served.validate(&Value::Object(object.clone()), None),
        None => Vec::new(),
    }
}

/// The kind's checks of an update of the main resource after ObjectMeta's.
pub fn validate_update(resource: &Resource, old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    if is_crd(resource) {
        return match (typed(new), typed(old)) {
            (Some(new), Some(old)) => listwatch_apiextensions::validation::validate_update(&new, &old),
            _ => Vec::new(),
        };
    }
    match served(resource) {
        Some(served) => served.validate(&Value::Object(new.clone()), Some(&Value::Object(old.clone()))),
        None => Vec::new(),
    }
}

/// The checks of a write to `/status` (built-in kinds have none here).
pub fn validate_status_update(resource: &Resource, new: &Map<String, Value>) -> Vec<FieldError> {
    if is_crd(resource) {
        return typed(new)
            .map(|crd| listwatch_apiextensions::validation::validate_status_update(&crd))
            .unwrap_or_default();
    }
    match served(resource) {
        Some(served) => served.validate_status(&Value::Object(new.clone())),
        None => Vec::new(),
    }
}
