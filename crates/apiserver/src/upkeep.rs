//! Background work a Kubernetes control plane does and clients observe through watches:
//!
//! * [`crds`]: the CRD controllers (names, establishing, serving custom resources, and the
//!   cleanup of a deleted CRD's instances);
//! * [`aggregation`]: ClusterRoles with an `aggregationRule` hold the rules they pick;
//! * [`gc`]: the garbage collector (propagation policies, dangling owner references);
//! * [`graceful`]: the kubelet's removal of a pod once its grace period is over;
//! * [`namespaces`]: the cleanup of a deleted namespace's content, then of the namespace.
//!
//! The registry announces the objects a delete marked (see
//! [`crate::registry::MarkedForDeletion`]); [`start`] routes each to the
//! controller that finishes it. (The compactor needs only storage and lives beside it:
//! `listwatch_storage::compactor`.)

use std::sync::{Arc, Weak};

use listwatch_meta::ApiError;
use tokio::sync::mpsc;

use crate::registry::MarkedForDeletion;
use crate::state::ApiState;

pub mod aggregation;
pub mod crds;
mod follow;
pub mod gc;
pub mod graceful;
pub mod namespaces;

/// Starts every controller; `marked` is the receiving end of the stores' deletion notices.
pub async fn start(state: &Arc<ApiState>, marked: mpsc::UnboundedReceiver<MarkedForDeletion>) -> Result<(), ApiError> {
    // Stored CRDs are served again first, so the other controllers see their resources too.
    crds::start(state).await?;
    gc::start(state).await?;
    aggregation::start(state).await?;
    let (cleanup_tx, cleanup_rx) = mpsc::unbounded_channel();
    tokio::spawn(namespaces::run(Arc::downgrade(state), cleanup_rx));
    tokio::spawn(route_marked(Arc::downgrade(state), marked, cleanup_tx));
    if !state.config.compaction_interval.is_zero() {
        tokio::spawn(listwatch_storage::compactor::run(
            state.storage.clone(),
            state.config.compaction_interval,
            state.shutdown.clone(),
        ));
    }
    Ok(())
}

/// Sends each object marked for deletion to the controller that finishes its deletion: a
/// namespace to the cleanup, a pod with a grace period to the kubelet's stand-in.
async fn route_marked(
    state: Weak<ApiState>,
    mut marked: mpsc::UnboundedReceiver<MarkedForDeletion>,
    namespaces: mpsc::UnboundedSender<String>,
) {
    while let Some(notice) = marked.recv().await {
        let Some(state) = state.upgrade() else { return };
        let resource = notice.resource;
        if resource.kind == "Namespace" && resource.group.is_empty() {
            let _ = namespaces.send(notice.object.name().to_string());
        }
        if notice.grace_seconds > 0 && resource.graceful_deletion {
            graceful::remove_after_grace(&state, state.store_of(resource), &notice.object, notice.grace_seconds);
        }
    }
}
