//! The kubelet's part of graceful deletion: a pod bound to a node that a delete gave a grace
//! period (default 30 s) is removed once the period is over, plus `--pod-termination-delay`,
//! unless something changed it meanwhile.

use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::Object;
use listwatch_storage::StorageError;

use crate::registry::ResourceStore;
use crate::state::ApiState;

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
            Ok(_) | Err(StorageError::Conflict { .. } | StorageError::NotFound) => {}
            Err(e) => tracing::warn!(error = %e, key, "could not remove a pod after its grace period"),
        }
    });
}
