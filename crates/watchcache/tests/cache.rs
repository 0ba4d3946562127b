//! The watch cache on the memory store: what its watchers see.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use listwatch_meta::{Object, Registry, Resource, WatchEvent};
use listwatch_storage::Storage;
use listwatch_storage::memory::MemoryStore;
use listwatch_watchcache::{
    CacheError, CacheWatcher, Predicate, WatchCache, WatchCacheConfig, WatchStart, WatcherOptions,
};
use serde_json::json;

fn configmaps() -> &'static Resource {
    Registry.find("", "v1", "configmaps").unwrap()
}

fn value(name: &str, labels: serde_json::Value) -> Bytes {
    let v = json!({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":name,"namespace":"ns","labels":labels},"data":{"k":name}});
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

async fn start(config: WatchCacheConfig) -> (Arc<dyn Storage>, WatchCache) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
    let cache = WatchCache::start(configmaps(), "/registry/configmaps/".into(), storage.clone(), config);
    assert!(cache.wait_ready(Duration::from_secs(5)).await);
    (storage, cache)
}

fn options(start: WatchStart) -> WatcherOptions {
    WatcherOptions {
        start,
        namespace: None,
        name: None,
        predicate: None,
        bookmarks: false,
        initial_events_end_bookmark: false,
        deadline: Instant::now() + Duration::from_secs(60),
    }
}

async fn next(w: &mut CacheWatcher) -> WatchEvent {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), w.next_batch(&mut out, 1)).await.expect("an event in time");
    out.pop().expect("an event")
}

fn describe(e: &WatchEvent) -> (String, String, i64) {
    match e {
        WatchEvent::Added(o) => ("ADDED".into(), o.name().into(), o.resource_version()),
        WatchEvent::Modified(o) => ("MODIFIED".into(), o.name().into(), o.resource_version()),
        WatchEvent::Deleted(o) => ("DELETED".into(), o.name().into(), o.resource_version()),
        WatchEvent::Bookmark { resource_version, .. } => ("BOOKMARK".into(), String::new(), *resource_version),
        WatchEvent::Error(e) => ("ERROR".into(), e.to_string(), 0),
    }
}

#[tokio::test]
async fn exact_start_replays_the_window_then_follows() {
    let (storage, cache) = start(WatchCacheConfig::default()).await;
    let r1 = storage.create(b"/registry/configmaps/ns/a", value("a", json!({}))).await.unwrap().revision;
    let r2 = storage.update(b"/registry/configmaps/ns/a", value("a", json!({"x":"1"})), r1).await.unwrap().revision;
    cache.wait_until_fresh(r2).await.unwrap();
    let mut w = cache.watch(options(WatchStart::Exact(r1))).await.unwrap();
    assert_eq!(describe(&next(&mut w).await), ("MODIFIED".into(), "a".into(), r2));
    let r3 = storage.delete(b"/registry/configmaps/ns/a", None).await.unwrap().revision;
    // DELETED carries the last state at the deletion's revision.
    assert_eq!(describe(&next(&mut w).await), ("DELETED".into(), "a".into(), r3));
}

#[tokio::test]
async fn selector_transitions_are_added_and_deleted() {
    let (storage, cache) = start(WatchCacheConfig::default()).await;
    let wants_x: Predicate = Arc::new(|o: &Object| o.labels().is_some_and(|l| l.contains_key("x")));
    let mut opts = options(WatchStart::Any { initial_events: true });
    opts.predicate = Some(wants_x);
    let mut w = cache.watch(opts).await.unwrap();
    let key = b"/registry/configmaps/ns/a";
    let r1 = storage.create(key, value("a", json!({}))).await.unwrap().revision;
    let r2 = storage.update(key, value("a", json!({"x":"1"})), r1).await.unwrap().revision;
    let r3 = storage.update(key, value("a", json!({"x":"2"})), r2).await.unwrap().revision;
    let r4 = storage.update(key, value("a", json!({})), r3).await.unwrap().revision;
    assert_eq!(describe(&next(&mut w).await), ("ADDED".into(), "a".into(), r2));
    assert_eq!(describe(&next(&mut w).await), ("MODIFIED".into(), "a".into(), r3));
    let stopped = next(&mut w).await;
    assert_eq!(describe(&stopped), ("DELETED".into(), "a".into(), r4));
    // The DELETED of a selector transition carries the previous state (label x=2).
    let WatchEvent::Deleted(o) = stopped else { unreachable!() };
    assert_eq!(o.labels().unwrap()["x"], "2");
}

#[tokio::test]
async fn too_old_resource_version_is_refused() {
    let config = WatchCacheConfig { min_events: 2, max_events: 2, ..Default::default() };
    let (storage, cache) = start(config).await;
    let mut last = 0;
    for i in 0..5 {
        last = storage
            .create(format!("/registry/configmaps/ns/c{i}").as_bytes(), value(&format!("c{i}"), json!({})))
            .await
            .unwrap()
            .revision;
    }
    cache.wait_until_fresh(last).await.unwrap();
    match cache.watch(options(WatchStart::Exact(2))).await {
        Err(CacheError::TooOld { requested: 2, oldest }) => assert_eq!(oldest, last - 2),
        Err(e) => panic!("expected too old, got {e:?}"),
        Ok(_) => panic!("expected too old, got a watcher"),
    }
    assert!(cache.watch(options(WatchStart::Exact(last - 2))).await.is_ok());
}

#[tokio::test]
async fn a_watcher_that_does_not_read_is_closed_and_others_lose_nothing() {
    let config = WatchCacheConfig {
        watcher_queue: 4,
        blocked_budget_max: Duration::from_millis(20),
        blocked_budget_refill: Duration::from_millis(10),
        ..Default::default()
    };
    let (storage, cache) = start(config).await;
    let _stuck = cache.watch(options(WatchStart::Exact(cache.resource_version()))).await.unwrap();
    let mut fast = cache.watch(options(WatchStart::Exact(cache.resource_version()))).await.unwrap();
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        while seen.len() < 50 {
            out.clear();
            assert!(fast.next_batch(&mut out, 64).await);
            seen.extend(out.iter().map(describe));
        }
        (seen, fast)
    });
    let mut revs = Vec::new();
    for i in 0..50 {
        revs.push(
            storage
                .create(format!("/registry/configmaps/ns/s{i}").as_bytes(), value(&format!("s{i}"), json!({})))
                .await
                .unwrap()
                .revision,
        );
    }
    let (seen, _fast) = tokio::time::timeout(Duration::from_secs(10), reader).await.unwrap().unwrap();
    assert_eq!(seen.iter().map(|s| s.2).collect::<Vec<_>>(), revs);
    assert_eq!(cache.stats().terminated_watchers, 1);
    assert_eq!(cache.stats().registered_watchers, 1);
}

#[tokio::test]
async fn bookmarks_follow_progress_and_streaming_lists_end_with_a_marker() {
    let config = WatchCacheConfig {
        bookmark_interval: Duration::from_millis(100),
        bookmark_tick: Duration::from_millis(50),
        ..Default::default()
    };
    let (storage, cache) = start(config).await;
    let r1 = storage.create(b"/registry/configmaps/ns/a", value("a", json!({}))).await.unwrap().revision;
    cache.wait_until_fresh(r1).await.unwrap();
    let mut opts = options(WatchStart::Consistent { initial_events: true });
    opts.bookmarks = true;
    opts.initial_events_end_bookmark = true;
    let mut w = cache.watch(opts).await.unwrap();
    assert_eq!(describe(&next(&mut w).await), ("ADDED".into(), "a".into(), r1));
    match next(&mut w).await {
        WatchEvent::Bookmark { resource_version, initial_events_end: true } => assert_eq!(resource_version, r1),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    // A write to another resource moves storage; progress moves the cache and its bookmarks.
    let other = storage.create(b"/registry/secrets/ns/s", Bytes::from_static(b"{}")).await.unwrap().revision;
    cache.wait_until_fresh(other).await.unwrap();
    loop {
        match next(&mut w).await {
            WatchEvent::Bookmark { resource_version, initial_events_end: false } if resource_version >= other => break,
            WatchEvent::Bookmark { .. } => continue,
            e => panic!("unexpected {e:?}"),
        }
    }
}
