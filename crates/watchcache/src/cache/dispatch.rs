//! The client watchers of one cache and how each event reaches them (the dispatch half of
//! kube-apiserver's `cacher.go`).
//!
//! Every registered watcher has a bounded queue. An event goes to each interested watcher by a
//! non-blocking send; the watchers whose queue is full are waited for together, within the
//! shared time budget (`budget.rs`), and those still full when it runs out are closed. Due
//! watchers get periodic bookmarks the same way, skipped when their queue is full.
//!
//! Dispatch never reads the objects or the window: an event arrives here already applied
//! (`window.rs`). A new watcher takes its snapshot and registers under the state lock
//! (`WatchCache::watch`) and drops queued events its snapshot already holds, so it sees each
//! event once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{Inner, WatchCacheConfig};
use crate::event::CacheEvent;
use crate::watcher::Queued;

#[derive(Default)]
pub(super) struct Watchers {
    pub(super) next_id: u64,
    pub(super) registered: HashMap<u64, Registered>,
}

pub(super) struct Registered {
    pub(super) namespace: Option<String>,
    pub(super) tx: mpsc::Sender<Queued>,
    /// When the next bookmark is due (`None`: no bookmarks, or past the last one).
    pub(super) next_bookmark: Option<Instant>,
    pub(super) deadline: Instant,
}

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
        self.watchers.lock().registered.remove(&id);
    }

    pub(super) fn terminate_all_watchers(&self) -> usize {
        let removed = std::mem::take(&mut self.watchers.lock().registered);
        removed.len()
    }

    /// Sends `event` to every interested watcher; waits for blocked ones within the budget
    /// and closes those that stay blocked.
    pub(super) async fn dispatch(&self, event: &Arc<CacheEvent>) {
        let mut blocked = Vec::new();
        {
            let mut watchers = self.watchers.lock();
            let mut gone = Vec::new();
            for (&id, w) in &watchers.registered {
                if w.namespace.as_deref().is_some_and(|ns| ns != event.object.namespace()) {
                    continue;
                }
                match w.tx.try_send(Queued::Event(event.clone())) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => blocked.push((id, w.tx.clone())),
                    Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
                }
            }
            for id in gone {
                watchers.registered.remove(&id);
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
            if !ok && watchers.registered.remove(id).is_some() {
                self.terminated.fetch_add(1, Ordering::Relaxed);
                tracing::info!(resource = self.resource.plural, "closing a watcher that does not keep up");
            }
        }
    }

    /// Gives due watchers a bookmark at the cache's resourceVersion (skipped if their queue is
    /// full, as kube does).
    pub(super) fn send_bookmarks(&self) {
        let rv = *self.rv_tx.borrow();
        let now = Instant::now();
        let mut watchers = self.watchers.lock();
        // A shorter interval set meanwhile brings later bookmarks forward.
        let latest = now + self.config.current_bookmark_interval();
        for w in watchers.registered.values_mut() {
            let Some(due) = w.next_bookmark else { continue };
            if due > latest {
                w.next_bookmark = Some(latest);
            }
            if due.min(latest) > now {
                continue;
            }
            if w.tx.try_send(Queued::Bookmark(rv)).is_ok() {
                w.next_bookmark = next_bookmark_time(&self.config, now, w.deadline);
            }
        }
    }
}
