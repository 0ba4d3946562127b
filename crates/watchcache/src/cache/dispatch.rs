//! How each event reaches the cache's client watchers, and their bookmarks (the dispatch half
//! of kube-apiserver's `cacher.go`).
//!
//! Every registered watcher has a bounded queue. An event goes to each watcher it concerns
//! (found through the indexes of `watchers.rs`: by namespace and by object name, so the cost
//! follows those watchers, not all) by a non-blocking send; the watchers whose queue is full
//! are waited for together, within the shared time budget (`budget.rs`), and those still full
//! when it runs out are closed. Due watchers get periodic bookmarks, skipped when their queue
//! is full (they stay due and are tried again on the next tick).
//!
//! Dispatch never reads the objects or the window: an event arrives here already applied
//! (`window.rs`). A new watcher takes its snapshot and registers under the state lock
//! (`WatchCache::watch`) and drops queued events its snapshot already holds, so it sees each
//! event once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{Inner, WatchCacheConfig};
use crate::event::CacheEvent;
use crate::watcher::Queued;

/// kube's `nextBookmarkTime`: a minute from now, or 2 s before the deadline if sooner;
/// none once that is past.
pub(super) fn next_bookmark_time(config: &WatchCacheConfig, now: Instant, deadline: Instant) -> Option<Instant> {
    let before_deadline = deadline.checked_sub(Duration::from_secs(2))?;
    if before_deadline <= now {
        return None;
    }
    Some((now + config.current_bookmark_interval()).min(before_deadline))
}

impl Inner {
    pub(crate) fn unregister(&self, id: u64) {
        self.watchers.lock().remove(id);
    }

    pub(super) fn terminate_all_watchers(&self) -> usize {
        self.watchers.lock().clear()
    }

    /// Sends `event` to every interested watcher; waits for blocked ones within the budget
    /// and closes those that stay blocked.
    pub(super) async fn dispatch(&self, event: &Arc<CacheEvent>) {
        let mut blocked = Vec::new();
        {
            let mut watchers = self.watchers.lock();
            let mut gone = Vec::new();
            for (id, tx) in watchers.interested(event.object.namespace(), event.object.name()) {
                match tx.try_send(Queued::Event(event.clone())) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => blocked.push((id, tx.clone())),
                    Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
                }
            }
            for id in gone {
                watchers.remove(id);
            }
        }
        if blocked.is_empty() {
            return;
        }
        let budget = self.budget.lock().take_available();
        let deadline = tokio::time::Instant::now() + budget;
        let waits = blocked.iter().map(|(_, tx)| async move {
            match tokio::time::timeout_at(deadline, tx.reserve()).await {
                Ok(Ok(permit)) => {
                    permit.send(Queued::Event(event.clone()));
                    true
                }
                _ => false,
            }
        });
        let delivered = futures::future::join_all(waits).await;
        self.budget.lock().return_unused(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let mut watchers = self.watchers.lock();
        for ((id, _), ok) in blocked.iter().zip(delivered) {
            if !ok && watchers.remove(*id) {
                self.terminated.fetch_add(1, Ordering::Relaxed);
                tracing::info!(resource = self.resource.plural, "closing a watcher that does not keep up");
            }
        }
    }

    /// Gives due watchers a bookmark at the cache's resourceVersion (skipped if their queue is
    /// full, as kube does: they stay due). Visits only the watchers due.
    pub(super) fn send_bookmarks(&self) {
        let rv = *self.rv_tx.borrow();
        let now = Instant::now();
        let mut watchers = self.watchers.lock();
        // A shorter interval set meanwhile brings later bookmarks forward.
        watchers.bring_bookmarks_forward(now + self.config.current_bookmark_interval());
        for id in watchers.bookmarks_due(now) {
            let Some(watcher) = watchers.get(id) else { continue };
            match watcher.tx.try_send(Queued::Bookmark(rv)) {
                Ok(()) => {
                    let next = next_bookmark_time(&self.config, now, watcher.deadline);
                    watchers.schedule_bookmark(id, next);
                }
                Err(mpsc::error::TrySendError::Full(_)) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    watchers.remove(id);
                }
            }
        }
    }
}
