//! Deleting one object with kube's semantics: preconditions (uid, resourceVersion), then
//! finalizers and grace periods, which keep the object (marked with a `deletionTimestamp`)
//! instead of removing it. An object kept that way is announced as [`MarkedForDeletion`] to
//! the controllers, which finish the job (the kubelet's removal after a pod's grace period, a
//! namespace's cleanup); the registry itself runs no background work.

use std::sync::Arc;

use listwatch_meta::object::to_storage_bytes;
use listwatch_meta::{ApiError, Object, Resource};
use listwatch_storage::StorageError;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::update::{MAX_UPDATE_ATTEMPTS, read_kv};
use super::{ResourceStore, custom_strategy, editable, metadata_mut, storage_error, strategy};
use crate::options::DeleteOptions;

/// An object a delete kept and marked for deletion.
#[derive(Debug)]
pub struct MarkedForDeletion {
    /// Its resource.
    pub resource: &'static Resource,
    /// Its new state, with `deletionTimestamp` set.
    pub object: Arc<Object>,
    /// The grace period it was given (0 when finalizers alone keep it).
    pub grace_seconds: i64,
}

/// Where a store announces the objects it marks for deletion.
pub type DeletionNotices = mpsc::UnboundedSender<MarkedForDeletion>;

/// The outcome of deleting one object.
pub enum Deletion {
    /// Gone: the last state at the deletion's revision.
    Deleted(Arc<Object>),
    /// Still there, being deleted (finalizers or a grace period): its new state.
    Pending(Arc<Object>),
}

/// The preconditions of a delete, checked as kube checks them before storage does: a 409 that
/// names the kind and both values (`rest.BeforeDelete`), or for a namespace, whose registry
/// checks them itself, one in the storage's words on the resource.
fn check_delete_preconditions(
    resource: &listwatch_meta::Resource,
    options: &DeleteOptions,
    existing: &Object,
) -> Result<(), ApiError> {
    let name = existing.name();
    let namespace_registry = resource.group.is_empty() && resource.kind == "Namespace";
    let conflict = |detail: String| {
        if namespace_registry {
            ApiError::conflict(&resource.group_resource(), name, &format!("Precondition failed: {detail}"))
        } else {
            ApiError::conflict(&listwatch_meta::GroupResource::new(resource.group, resource.kind), name, &detail)
        }
    };
    if let Some(uid) = &options.precondition_uid
        && uid != existing.uid()
    {
        return Err(conflict(if namespace_registry {
            format!("UID in precondition: {uid}, UID in object meta: {}", existing.uid())
        } else {
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                existing.uid()
            )
        }));
    }
    let rv_precondition = options.precondition_rv.map(|rv| rv.to_string()).or(options.precondition_rv_text.clone());
    let stored = existing.resource_version().to_string();
    if let Some(rv) = &rv_precondition
        && *rv != stored
    {
        return Err(conflict(if namespace_registry {
            format!("ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {stored}")
        } else {
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({stored}). The object might have been modified"
            )
        }));
    }
    Ok(())
}

/// How a delete treats one object.
#[derive(Debug, Default)]
pub struct DeletionPolicy {
    /// Keep the object (mark it as being deleted) instead of removing it now.
    pub keep: bool,
    /// The grace period the object gets (pods bound to a node).
    pub grace_seconds: i64,
    /// Finalizers the delete adds (`orphan`, `foregroundDeletion`).
    pub add_finalizers: Vec<String>,
    /// The delete changes finalizers of an object already being deleted.
    pub changes_finalizers: bool,
}

/// How a delete treats `object`: kept for its finalizers (or those the propagation policy
/// adds) or its grace period, or removed now.
pub fn deletion_policy(resource: &Resource, object: &Map<String, Value>, options: &DeleteOptions) -> DeletionPolicy {
    let finalizers = strategy::finalizers(object);
    let mut policy = DeletionPolicy::default();
    if resource.group.is_empty() && resource.kind == "Namespace" {
        // A namespace's own finalizer (spec.finalizers) holds it while its content goes.
        let spec_finalizers = object
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        policy.keep = spec_finalizers || !finalizers.is_empty();
        return policy;
    }
    let deleting = object.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null());
    if custom_strategy::is_crd(resource) && !deleting {
        // kube's CRD registry: the first delete only marks it, with the cleanup finalizer
        // (whatever the propagation policy); the CRD controller deletes its instances.
        policy.add_finalizers.push(custom_strategy::CLEANUP_FINALIZER.into());
        policy.changes_finalizers = true;
        policy.keep = true;
        return policy;
    }
    match options.propagation_policy.as_deref() {
        Some("Orphan") => policy.add_finalizers.push("orphan".into()),
        Some("Foreground") => policy.add_finalizers.push("foregroundDeletion".into()),
        _ => {}
    }
    policy.changes_finalizers = policy.add_finalizers.iter().any(|f| !finalizers.contains(f));
    if resource.graceful_deletion {
        let spec = object.get("spec");
        let bound = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let phase = object.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str).unwrap_or("");
        let terminal = matches!(phase, "Succeeded" | "Failed");
        let default = spec.and_then(|s| s.get("terminationGracePeriodSeconds")).and_then(Value::as_i64).unwrap_or(30);
        let grace = options.grace_period_seconds.unwrap_or(default);
        // kube deletes an unbound or finished pod at once, and gives a negative grace period
        // one second (the pod strategy's `CheckGracefulDelete`).
        policy.grace_seconds = match grace {
            _ if !bound || terminal => 0,
            g if g < 0 => 1,
            g => g,
        };
    }
    policy.keep = !finalizers.is_empty() || !policy.add_finalizers.is_empty() || policy.grace_seconds > 0;
    policy
}

impl ResourceStore {
    /// Deletes one object with kube's semantics (preconditions, finalizers, graceful deletion).
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deletion, ApiError> {
        let store = self;
        let resource = store.resource;
        let gr = resource.group_resource();
        let key = store.key(store.scope(namespace), name);
        let mut current = read_kv(store, &key).await?;
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let Some(kv) = current.take() else { return Err(ApiError::not_found(&gr, name)) };
            let existing = Object::from_storage(resource, &kv.value, kv.mod_revision).map_err(ApiError::internal)?;
            check_delete_preconditions(resource, options, &existing)?;
            let mut object = editable(&existing);
            let policy = deletion_policy(resource, &object, options);
            if policy.keep {
                // Finalizers (or a grace period) hold it: mark it and let them finish.
                let already =
                    object.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null());
                if already && !policy.changes_finalizers {
                    return Ok(Deletion::Pending(Arc::new(existing)));
                }
                strategy::mark_deleting(resource, &mut object, policy.grace_seconds);
                for f in &policy.add_finalizers {
                    let list = metadata_mut(&mut object).entry("finalizers").or_insert_with(|| json!([]));
                    if let Some(list) = list.as_array_mut()
                        && !list.iter().any(|v| v == f)
                    {
                        list.push(json!(f));
                    }
                }
                if options.dry_run {
                    let obj = Object::from_value(resource, Value::Object(object), existing.resource_version())
                        .map_err(ApiError::internal)?;
                    return Ok(Deletion::Pending(Arc::new(obj)));
                }
                let bytes = to_storage_bytes(resource, Value::Object(object.clone()));
                match store.storage.update(key.as_bytes(), bytes, kv.mod_revision).await {
                    Ok(written) => {
                        let obj = Arc::new(
                            Object::from_value(resource, Value::Object(object), written.revision)
                                .map_err(ApiError::internal)?,
                        );
                        // The controllers finish the deletion; with none listening (a server
                        // shutting down) there is nothing left to finish it.
                        let _ = store.deletions.send(MarkedForDeletion {
                            resource,
                            object: obj.clone(),
                            grace_seconds: policy.grace_seconds,
                        });
                        return Ok(Deletion::Pending(obj));
                    }
                    Err(StorageError::Conflict { current: now }) => {
                        current = now;
                        continue;
                    }
                    Err(e) => return Err(storage_error(e)),
                }
            }
            if options.dry_run {
                return Ok(Deletion::Deleted(Arc::new(existing)));
            }
            match store.storage.delete(key.as_bytes(), Some(kv.mod_revision)).await {
                Ok(deleted) => {
                    let last = Object::from_storage(resource, &deleted.prev.value, deleted.revision)
                        .map_err(ApiError::internal)?;
                    let last = Arc::new(last);
                    return Ok(Deletion::Deleted(last));
                }
                Err(StorageError::Conflict { current: now }) => current = now,
                Err(StorageError::NotFound) => return Err(ApiError::not_found(&gr, name)),
                Err(e) => return Err(storage_error(e)),
            }
        }
        Err(ApiError::conflict(&gr, name, "too many concurrent updates; please try again"))
    }
}
