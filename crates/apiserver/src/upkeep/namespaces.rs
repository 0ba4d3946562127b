//! Namespace cleanup, kube's namespace controller in short: a deleted namespace turns
//! Terminating, its objects are deleted one revision each, then its `kubernetes` finalizer
//! is dropped, which deletes the namespace itself.

use std::sync::Weak;
use std::time::Duration;

use listwatch_meta::Object;
use listwatch_storage::{KeyRange, RangeRequest};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::options::DeleteOptions;
use crate::registry::delete::Deletion;
use crate::registry::update::{Step, Updated};
use crate::registry::{storage_error, strategy};
use crate::state::ApiState;

/// Deletes the content of namespaces being deleted, then the namespaces.
pub async fn run(state: Weak<ApiState>, mut names: mpsc::UnboundedReceiver<String>) {
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
    for store in state.stores().into_iter().filter(|s| s.resource.namespaced) {
        let prefix = store.prefix(Some(name));
        let resp = store.storage.range(RangeRequest::new(KeyRange::prefix(prefix))).await.map_err(storage_error)?;
        for kv in resp.kvs {
            let Ok(object) = Object::from_storage(store.resource, &kv.value, kv.mod_revision) else { continue };
            remaining += 1;
            let options = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
            match store.delete(Some(name), object.name(), &options).await {
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
    let result = namespaces
        .guaranteed_update(None, name, None, false, |existing| {
            let Value::Object(mut ns) = existing.value() else { unreachable!() };
            if let Some(meta) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("resourceVersion");
            }
            if let Some(spec) = ns.get_mut("spec").and_then(Value::as_object_mut) {
                spec.shift_remove("finalizers");
            }
            let metadata_finalizers = strategy::finalizers(&ns);
            if metadata_finalizers.is_empty() { Ok(Step::Delete) } else { Ok(Step::Write(ns)) }
        })
        .await;
    match result {
        Ok(Updated::Deleted(_)) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => Err(e),
    }
}
