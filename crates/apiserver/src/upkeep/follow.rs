//! How a controller follows a resource: one watch of all its objects from a revision, with
//! bookmarks, reopened for as long as the server runs and the controller wants it.
//!
//! Every controller that reacts to a resource's changes needs the same loop, and its details
//! are easy to get subtly wrong, so it lives here once ([`follow`]) and each controller only
//! says what a change means to it ([`Follower`]):
//!
//! * the place to resume from (`from`) moves with every event *and* every bookmark, so a
//!   watch reopened after an ordinary end (a cache relist, a dropped watcher) misses nothing
//!   and repeats nothing;
//! * a place that is gone is reported two ways: the open itself fails with 410 (the uncached
//!   path), or the watch opens and its only event is an ERROR 410 (the cache, as kube sends
//!   it). Either way the controller relists and the watch resumes from the revision it read;
//! * a watch that cannot open because the store's watch cache is (re)initializing (a 429
//!   from the delegator) waits until that cache is ready, instead of polling it; other
//!   failures (storage down) retry after a short backoff that grows to [`RETRY_MAX`];
//! * it ends on the server's shutdown, or when the controller no longer wants the resource
//!   (a custom resource's store its CRD no longer serves).
//!
//! The garbage collector (one follow per resource) and the CRD controllers use it; anything
//! that follows a [`ResourceStore`] may.

use std::time::Duration;

use listwatch_meta::{ApiError, WatchEvent};
use tokio::sync::watch;

use crate::options::{ListOptions, RequestedVersion};
use crate::registry::{ResourceStore, WatchSource};

/// Events taken from a watch at a time.
const BATCH: usize = 256;

/// The first wait before reopening a watch that failed for another reason than its cache
/// (storage down); it doubles on each failure in a row up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// How long one wait for a cache to become ready lasts before the loop looks again (whether
/// it is still wanted); a wait ends early on readiness or shutdown.
const CACHE_WAIT: Duration = Duration::from_secs(10);

/// What a controller does with the resource it follows.
pub trait Follower {
    /// Whether the controller still wants this resource; asked before each (re)open of the
    /// watch, and the follow ends on `false`. (A watch that is open ends on its own when its
    /// store stops being served: the store's watchers are dropped.)
    fn wanted(&self) -> bool;

    /// An ADDED, MODIFIED or DELETED event, in the resource's order. Never a BOOKMARK or an
    /// ERROR: [`follow`] handles those.
    async fn change(&mut self, event: &WatchEvent);

    /// The place the watch resumes from is gone (410): the controller lists what it needs
    /// again and returns the revision the next watch starts from. Read it (storage's current
    /// revision) *before* listing, so the listing is at or after it and nothing between the
    /// two is missed. `None` when that failed: the follow waits a little, and the next watch
    /// from the old place expires again.
    async fn expired(&mut self) -> Option<i64>;
}

/// Follows every object of `store` after revision `from`, calling `follower` for each change,
/// until `shutdown` flips (or its sender goes) or the follower is no longer
/// [`wanted`](Follower::wanted).
pub async fn follow(
    store: &ResourceStore,
    mut from: i64,
    mut shutdown: watch::Receiver<bool>,
    follower: &mut impl Follower,
) {
    let mut retry = RETRY_MIN;
    let mut events = Vec::new();
    loop {
        if *shutdown.borrow() || !follower.wanted() {
            return;
        }
        let mut source = match watch_from(store, from).await {
            Ok(source) => source,
            Err(e) if e.code() == 410 => {
                from = match follower.expired().await {
                    Some(now) => now,
                    None => {
                        if !pause(&mut shutdown, &mut retry).await {
                            return;
                        }
                        from
                    }
                };
                continue;
            }
            Err(e) => {
                let waited = match &store.cache {
                    // Initializing or relisting (the 429 the delegator answers then): wait for
                    // it, as long as it takes, rather than poll it.
                    Some(cache) if !cache.is_ready() => tokio::select! {
                        _ = cache.wait_ready(CACHE_WAIT) => true,
                        _ = shutdown.wait_for(|down| *down) => false,
                    },
                    _ => {
                        let resource = store.resource.plural;
                        tracing::debug!(resource, error = %e, "controller watch not opened; retrying");
                        pause(&mut shutdown, &mut retry).await
                    }
                };
                if !waited {
                    return;
                }
                continue;
            }
        };
        retry = RETRY_MIN;
        let mut expired = false;
        loop {
            events.clear();
            let more = tokio::select! {
                more = source.next_batch(&mut events, BATCH) => more,
                _ = shutdown.wait_for(|down| *down) => return,
            };
            for event in &events {
                match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                        from = o.resource_version();
                        follower.change(event).await;
                    }
                    WatchEvent::Bookmark { resource_version, .. } => from = *resource_version,
                    // The watch could not start where we were (our place is gone, a 410 sent
                    // as an ERROR event): it ends, and the next starts after a relist.
                    WatchEvent::Error(e) => expired |= e.code() == 410,
                }
            }
            if !more {
                break;
            }
        }
        if expired {
            match follower.expired().await {
                Some(now) => from = now,
                None => {
                    if !pause(&mut shutdown, &mut retry).await {
                        return;
                    }
                }
            }
        }
    }
}

/// Sleeps `retry`, then doubles it (up to [`RETRY_MAX`]); false if shutdown came first.
async fn pause(shutdown: &mut watch::Receiver<bool>, retry: &mut Duration) -> bool {
    let wait = *retry;
    *retry = (*retry * 2).min(RETRY_MAX);
    tokio::select! {
        _ = tokio::time::sleep(wait) => true,
        _ = shutdown.wait_for(|down| *down) => false,
    }
}

/// A watch of every object of `store` after revision `from`, with bookmarks, for a controller
/// (its watches live as long as the server).
async fn watch_from(store: &ResourceStore, from: i64) -> Result<WatchSource, ApiError> {
    let options = ListOptions {
        resource_version: RequestedVersion::At(from),
        allow_watch_bookmarks: true,
        watch: true,
        ..ListOptions::default()
    };
    store.watch(&options, None, std::time::Instant::now() + std::time::Duration::from_secs(3600 * 24 * 365)).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use listwatch_storage::Storage;
    use listwatch_storage::faults::{FaultyStorage, Outage};
    use listwatch_storage::memory::MemoryStore;
    use serde_json::Value;
    use tokio::sync::mpsc;

    use super::*;
    use crate::config::ServerConfig;
    use crate::state::ApiState;

    /// Reports what it is told: each change's name, and "expired" for each relist.
    struct Recorder(mpsc::UnboundedSender<String>);

    impl Follower for Recorder {
        fn wanted(&self) -> bool {
            !self.0.is_closed()
        }

        async fn change(&mut self, event: &WatchEvent) {
            let (kind, object) = match event {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                other => panic!("a follower is told only of changes, not {other:?}"),
            };
            let _ = self.0.send(format!("{kind} {}", object.name()));
        }

        async fn expired(&mut self) -> Option<i64> {
            let _ = self.0.send("expired".into());
            None
        }
    }

    /// A server's state on a memory store that fails during `outage`'s outages.
    async fn state(watch_cache: bool, outage: &Outage) -> Arc<ApiState> {
        let storage: Arc<dyn Storage> =
            Arc::new(FaultyStorage::new(Arc::new(MemoryStore::ephemeral()), outage.clone()));
        let mut config = ServerConfig { watch_cache, ..ServerConfig::default() };
        config.cache.retry_backoff = Duration::from_millis(20);
        Arc::new(ApiState::new(config, storage, mpsc::unbounded_channel().0).await.expect("state"))
    }

    /// Stores a ConfigMap `name` in `default`; its revision.
    async fn create(state: &ApiState, name: &str) -> i64 {
        let store = state.store("", "v1", "configmaps").expect("registered");
        let mut object = serde_json::json!({"metadata": {"name": name, "namespace": "default"}})
            .as_object()
            .cloned()
            .expect("an object");
        crate::registry::strategy::prepare_for_create(store.resource, &mut object);
        let bytes = listwatch_meta::object::to_storage_bytes(store.resource, Value::Object(object));
        state.storage.create(store.key(Some("default"), name).as_bytes(), bytes).await.expect("created").revision
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("in time").expect("following")
    }

    /// A follow reports every change after its start, resumes where it was after its watch
    /// broke and could not be reopened for a while (storage down: a cache relisting, or no
    /// storage watch), and ends on shutdown.
    #[tokio::test]
    async fn follows_through_storage_outage() {
        for watch_cache in [true, false] {
            let outage = Outage::default();
            let state = state(watch_cache, &outage).await;
            let store = state.store("", "v1", "configmaps").expect("registered").clone();
            let from = create(&state, "before").await;
            // (A change before the cache has listed could be before its window: a 410.)
            if let Some(cache) = &store.cache {
                assert!(cache.wait_ready(Duration::from_secs(10)).await);
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            let task = tokio::spawn({
                let (store, shutdown) = (store.clone(), state.shutdown.clone());
                async move { follow(&store, from, shutdown, &mut Recorder(tx)).await }
            });
            create(&state, "a").await;
            assert_eq!(next(&mut rx).await, "ADDED a", "watch cache {watch_cache}");
            // The watch breaks, and cannot be reopened until storage is back.
            outage.start(Duration::from_secs(60));
            tokio::time::sleep(Duration::from_millis(300)).await;
            outage.start(Duration::ZERO);
            if let Some(cache) = &store.cache {
                // (Relisted after "b", the cache would have forgotten "a": a 410.)
                assert!(!cache.is_ready(), "relisting");
                assert!(cache.wait_ready(Duration::from_secs(10)).await);
            }
            create(&state, "b").await;
            assert_eq!(next(&mut rx).await, "ADDED b", "watch cache {watch_cache}");
            state.shut_down();
            tokio::time::timeout(Duration::from_secs(5), task).await.expect("ends on shutdown").expect("no panic");
            assert!(rx.try_recv().is_err(), "nothing else reported (watch cache {watch_cache})");
        }
    }

    /// A place that is gone (before the cache's window; compacted, uncached) is a relist,
    /// whether the watch opens with an ERROR 410 or does not open.
    #[tokio::test]
    async fn expired_place_relists() {
        for watch_cache in [true, false] {
            let state = state(watch_cache, &Outage::default()).await;
            let store = state.store("", "v1", "configmaps").expect("registered").clone();
            let old = create(&state, "a").await;
            let now = create(&state, "b").await;
            state.storage.compact(now).await.expect("compacted");
            if let Some(cache) = &store.cache {
                assert!(cache.wait_ready(Duration::from_secs(10)).await);
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            let mut recorder = Relister { tx, now: state.storage.clone() };
            let task = tokio::spawn({
                let (store, shutdown) = (store.clone(), state.shutdown.clone());
                async move { follow(&store, old - 1, shutdown, &mut recorder).await }
            });
            assert_eq!(next(&mut rx).await, "expired", "watch cache {watch_cache}");
            create(&state, "c").await;
            assert_eq!(next(&mut rx).await, "ADDED c", "watch cache {watch_cache}");
            state.shut_down();
            tokio::time::timeout(Duration::from_secs(5), task).await.expect("ends").expect("no panic");
        }
    }

    /// A [`Recorder`] whose relist succeeds: it resumes from storage's revision.
    struct Relister {
        tx: mpsc::UnboundedSender<String>,
        now: Arc<dyn Storage>,
    }

    impl Follower for Relister {
        fn wanted(&self) -> bool {
            true
        }

        async fn change(&mut self, event: &WatchEvent) {
            Recorder(self.tx.clone()).change(event).await;
        }

        async fn expired(&mut self) -> Option<i64> {
            let _ = self.tx.send("expired".into());
            self.now.current_revision().await.ok()
        }
    }
}
