//! Background work a Kubernetes control plane does and clients observe through watches:
//!
//! * deletion policy: finalizers keep an object (MODIFIED with `deletionTimestamp`) until the
//!   last one is removed; pods bound to a node get their grace period (default 30 s) and are
//!   removed after it, as the kubelet would; an unbound pod goes at once;
//! * namespace cleanup: a deleted namespace turns Terminating, its objects are deleted one
//!   revision each, then the namespace itself;
//! * the compactor, like kube-apiserver's: every interval, compact to the revision seen one
//!   interval earlier, coordinated through a compare-and-swap on `compact_rev_key` so several
//!   servers can share one etcd.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use listwatch_meta::{Object, Resource};
use listwatch_storage::{KeyRange, RangeRequest, Storage, StorageError};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::resource::ResourceStore;
use crate::server::ApiState;
use crate::write::{self, DeleteOptions, Deletion};

/// How a delete treats one object.
#[derive(Debug, Default)]
pub struct DeletionPolicy {
    /// Keep the object (mark it as being deleted) instead of removing it now.
    pub keep: bool,
    pub grace_seconds: i64,
    /// Finalizers the delete adds (`orphan`, `foregroundDeletion`).
    pub add_finalizers: Vec<String>,
    /// The delete changes finalizers of an object already being deleted.
    pub changes_finalizers: bool,
}

pub fn deletion_policy(resource: &Resource, object: &Map<String, Value>, options: &DeleteOptions) -> DeletionPolicy {
    let finalizers = crate::strategy::finalizers(object);
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

/// The longest a pod's removal is scheduled ahead: longer grace periods wait this long, which
/// is as good as forever and keeps the timer's arithmetic in range.
const MAX_GRACE_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The kubelet's part of graceful deletion: remove the pod once its grace period is over.
pub fn remove_after_grace(state: &ApiState, store: &ResourceStore, object: &Arc<Object>, grace_seconds: i64) {
    // Any i64 a client sent: saturate rather than overflow (tokio sleeps "forever" past ~30 years).
    let delay = Duration::from_secs(u64::try_from(grace_seconds).unwrap_or(0))
        .saturating_add(state.config.pod_termination_delay)
        .min(MAX_GRACE_DELAY);
    let (storage, key, rv) = (
        store.storage.clone(),
        store.key(store.scope(Some(object.namespace())), object.name()),
        object.resource_version(),
    );
    let mut shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
        // Only if nothing changed it meanwhile (a later delete with grace 0 may have won).
        match storage.delete(key.as_bytes(), Some(rv)).await {
            Ok(_) | Err(StorageError::Conflict { .. }) | Err(StorageError::NotFound) => {}
            Err(e) => tracing::warn!(error = %e, key, "could not remove a pod after its grace period"),
        }
    });
}

/// Deletes the content of namespaces being deleted, then the namespaces.
pub async fn namespace_cleanup(state: Weak<ApiState>, mut names: mpsc::UnboundedReceiver<String>) {
    while let Some(name) = names.recv().await {
        let Some(state) = state.upgrade() else { return };
        let state = state.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(50);
            loop {
                match clean_namespace(&state, &name).await {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(namespace = name, error = %e, "namespace cleanup failed; retrying"),
                }
                if *state.shutdown.borrow() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        });
    }
}

/// One pass: delete what is left in the namespace; once it is empty, finalize and delete the
/// namespace. Returns whether the namespace is gone.
async fn clean_namespace(state: &ApiState, name: &str) -> Result<bool, listwatch_meta::ApiError> {
    let mut remaining = 0;
    for store in state.stores().filter(|s| s.resource.namespaced) {
        let prefix = store.prefix(Some(name));
        let resp = store
            .storage
            .range(RangeRequest::new(KeyRange::prefix(prefix)))
            .await
            .map_err(crate::resource::storage_error)?;
        for kv in resp.kvs {
            let Ok(object) = Object::from_storage(store.resource, &kv.value, kv.mod_revision) else { continue };
            remaining += 1;
            let options = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
            match write::delete_one(state, store, Some(name), object.name(), &options).await {
                Ok(Deletion::Deleted(_)) => remaining -= 1,
                Ok(Deletion::Pending(_)) => {}
                Err(e) if e.code() == 404 => remaining -= 1,
                Err(e) => return Err(e),
            }
        }
    }
    if remaining > 0 {
        return Ok(false);
    }
    // Empty: drop the namespace's finalizer; with deletionTimestamp set that deletes it.
    let namespaces = state.store("", "v1", "namespaces").expect("registered");
    let result = write::guaranteed_update(namespaces, None, name, None, false, |existing| {
        let Value::Object(mut ns) = existing.value() else { unreachable!() };
        if let Some(meta) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("resourceVersion");
        }
        if let Some(spec) = ns.get_mut("spec").and_then(Value::as_object_mut) {
            spec.shift_remove("finalizers");
        }
        let metadata_finalizers = crate::strategy::finalizers(&ns);
        if metadata_finalizers.is_empty() { Ok(write::Step::Delete) } else { Ok(write::Step::Write(ns)) }
    })
    .await;
    match result {
        Ok(write::Updated::Deleted(_)) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => Err(e),
    }
}

/// kube-apiserver's compactor (`etcd3/compact.go`).
pub async fn compactor(storage: Arc<dyn Storage>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    const KEY: &[u8] = b"compact_rev_key";
    // `seen` is the key's mod revision last seen (our CAS token, as kube uses its version);
    // `revision` the store revision seen one interval ago.
    let mut seen: i64 = 0;
    let mut revision: i64 = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
        let value = Bytes::from(revision.to_string());
        let written = if seen == 0 { storage.create(KEY, value).await } else { storage.update(KEY, value, seen).await };
        match written {
            Ok(w) => {
                seen = w.revision;
                let to_compact = revision;
                revision = w.revision;
                if to_compact != 0 {
                    match storage.compact(to_compact).await {
                        Ok(()) => tracing::info!(revision = to_compact, "compacted storage"),
                        Err(StorageError::Compacted { .. }) => {}
                        Err(e) => tracing::warn!(error = %e, "compaction failed"),
                    }
                }
            }
            // Another server took this round: follow its token.
            Err(StorageError::AlreadyExists) | Err(StorageError::Conflict { .. }) => {
                match storage.range(RangeRequest::new(KeyRange::key(Bytes::from_static(KEY)))).await {
                    Ok(resp) => {
                        seen = resp.kvs.first().map_or(0, |kv| kv.mod_revision);
                        revision = resp.revision;
                    }
                    Err(e) => tracing::warn!(error = %e, "compactor cannot read its key"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "compactor cannot write its key"),
        }
    }
}
