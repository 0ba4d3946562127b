//! A watch cache with many registered watchers, for `benches/dispatch.rs` only: it reaches the
//! dispatcher directly (one event in, the interested queues fed) so the bench times dispatch
//! alone, without storage, decoding or the cache's task in the way. Not an API.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use listwatch_meta::{EventType, Object, Registry, Resource};
use listwatch_storage::Storage;
use listwatch_storage::memory::MemoryStore;

use super::{WatchCache, WatchCacheConfig};
use crate::event::CacheEvent;
use crate::watcher::{CacheWatcher, WatchStart, WatcherOptions};

/// A started cache of configmaps, `namespaces × per_namespace` watchers, one ready event per
/// namespace.
pub struct DispatchFixture {
    cache: WatchCache,
    watchers: Vec<CacheWatcher>,
    /// One MODIFIED event per namespace (`ns-<i>`), dispatched again and again.
    events: Vec<Arc<CacheEvent>>,
}

fn configmaps() -> &'static Resource {
    Registry.find("", "v1", "configmaps").expect("configmaps are registered")
}

fn configmap(resource: &Resource, namespace: &str, name: &str, resource_version: i64) -> Arc<Object> {
    let stored = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{namespace}"}},"data":{{"k":"v"}}}}"#
    );
    Arc::new(Object::from_storage(resource, stored.as_bytes(), resource_version).expect("a configmap"))
}

impl DispatchFixture {
    /// Starts the cache (on an ephemeral memory store) and registers `per_namespace` watchers
    /// in each of `namespaces` namespaces (`ns-0`, `ns-1`, …), each asking for bookmarks when
    /// `bookmarks` is set (the first one due a bookmark interval from now).
    pub async fn new(namespaces: usize, per_namespace: usize, bookmarks: bool) -> DispatchFixture {
        let resource = configmaps();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
        let cache = WatchCache::start(resource, "/registry/configmaps/".into(), storage, WatchCacheConfig::default());
        assert!(cache.wait_ready(Duration::from_secs(10)).await, "the cache is ready");
        let start = cache.resource_version();
        let mut watchers = Vec::with_capacity(namespaces * per_namespace);
        for ns in 0..namespaces {
            for _ in 0..per_namespace {
                let options = WatcherOptions {
                    start: WatchStart::Exact(start),
                    namespace: Some(format!("ns-{ns}")),
                    name: None,
                    predicate: None,
                    bookmarks,
                    initial_events_end_bookmark: false,
                    deadline: Instant::now() + Duration::from_secs(3600),
                };
                watchers.push(cache.watch(options).await.expect("a cache watch"));
            }
        }
        let events = (0..namespaces)
            .map(|ns| {
                let object = configmap(resource, &format!("ns-{ns}"), "cm", start + 1);
                Arc::new(CacheEvent::new(EventType::Modified, object.clone(), Some(object)))
            })
            .collect();
        DispatchFixture { cache, watchers, events }
    }

    /// Dispatches the event of namespace `ns-<namespace>` to the registered watchers.
    pub async fn dispatch(&self, namespace: usize) {
        self.cache.inner.dispatch(&self.events[namespace]).await;
    }

    /// One tick of the bookmark timer.
    pub fn bookmark_tick(&self) {
        self.cache.inner.send_bookmarks();
    }

    /// Empties every watcher's queue, so that dispatch never finds one full.
    pub fn drain(&mut self) {
        let mut out = Vec::new();
        for watcher in &mut self.watchers {
            // Takes what is queued; pending (nothing left) or a closed watch ends it. Outside
            // tokio's cooperative budget, which would otherwise run out within one `block_on`
            // and make a queue that still holds events look empty.
            while tokio::task::unconstrained(watcher.next_batch(&mut out, 1024)).now_or_never() == Some(true) {
                out.clear();
            }
        }
    }

    /// How many watchers the cache has registered.
    pub fn registered(&self) -> usize {
        self.cache.stats().registered_watchers
    }
}
