//! Which watchers an event reaches (the namespace and name indexes), bookmarks on time, and
//! watchers that end leaving nothing registered.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use listwatch_meta::{Registry, WatchEvent};
use listwatch_storage::Storage;
use listwatch_storage::memory::MemoryStore;
use listwatch_watchcache::{CacheWatcher, WatchCache, WatchCacheConfig, WatchStart, WatcherOptions};
use serde_json::json;

async fn start(config: WatchCacheConfig) -> (Arc<dyn Storage>, WatchCache) {
    let resource = Registry.find("", "v1", "configmaps").unwrap();
    let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
    let cache = WatchCache::start(resource, "/registry/configmaps/".into(), storage.clone(), config);
    assert!(cache.wait_ready(Duration::from_secs(5)).await);
    (storage, cache)
}

/// A watch from the cache's current resourceVersion of `namespace` (or all) and `name` (or all).
async fn watch(cache: &WatchCache, namespace: Option<&str>, name: Option<&str>, bookmarks: bool) -> CacheWatcher {
    let options = WatcherOptions {
        start: WatchStart::Exact(cache.resource_version()),
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        predicate: None,
        bookmarks,
        initial_events_end_bookmark: false,
        deadline: Instant::now() + Duration::from_secs(600),
    };
    cache.watch(options).await.unwrap()
}

fn key(namespace: &str, name: &str) -> String {
    format!("/registry/configmaps/{namespace}/{name}")
}

fn value(namespace: &str, name: &str, data: &str) -> Bytes {
    let v =
        json!({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":name,"namespace":namespace},"data":{"k":data}});
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

async fn create(storage: &Arc<dyn Storage>, namespace: &str, name: &str) -> i64 {
    storage.create(key(namespace, name).as_bytes(), value(namespace, name, "0")).await.unwrap().revision
}

/// Updates an object last written at `revision`.
async fn update(storage: &Arc<dyn Storage>, namespace: &str, name: &str, revision: i64) -> i64 {
    let data = revision.to_string();
    storage.update(key(namespace, name).as_bytes(), value(namespace, name, &data), revision).await.unwrap().revision
}

async fn delete(storage: &Arc<dyn Storage>, namespace: &str, name: &str) -> i64 {
    storage.delete(key(namespace, name).as_bytes(), None).await.unwrap().revision
}

async fn next(w: &mut CacheWatcher) -> WatchEvent {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), w.next_batch(&mut out, 1)).await.expect("an event in time");
    out.pop().expect("an event")
}

/// Type, namespace/name, resourceVersion.
fn describe(e: &WatchEvent) -> (&'static str, String, i64) {
    let of = |o: &listwatch_meta::Object| format!("{}/{}", o.namespace(), o.name());
    match e {
        WatchEvent::Added(o) => ("ADDED", of(o), o.resource_version()),
        WatchEvent::Modified(o) => ("MODIFIED", of(o), o.resource_version()),
        WatchEvent::Deleted(o) => ("DELETED", of(o), o.resource_version()),
        WatchEvent::Bookmark { resource_version, .. } => ("BOOKMARK", String::new(), *resource_version),
        WatchEvent::Error(e) => ("ERROR", e.to_string(), 0),
    }
}

fn added(object: &str, rv: i64) -> (&'static str, String, i64) {
    ("ADDED", object.to_owned(), rv)
}

#[tokio::test]
async fn an_event_reaches_watchers_of_its_namespace_and_of_all_not_of_others() {
    let (storage, cache) = start(WatchCacheConfig::default()).await;
    let mut of_ns = watch(&cache, Some("ns"), None, false).await;
    let mut of_other = watch(&cache, Some("other"), None, false).await;
    let mut of_all = watch(&cache, None, None, false).await;
    let r1 = create(&storage, "ns", "a").await;
    let r2 = create(&storage, "other", "b").await;
    // The first event the other namespace's watcher sees is its own: ns/a never reached it.
    assert_eq!(describe(&next(&mut of_other).await), added("other/b", r2));
    assert_eq!(describe(&next(&mut of_ns).await), added("ns/a", r1));
    assert_eq!(describe(&next(&mut of_all).await), added("ns/a", r1));
    assert_eq!(describe(&next(&mut of_all).await), added("other/b", r2));
    // ns/a was not sent to it and then dropped: nothing of it is queued either.
    let r3 = create(&storage, "ns", "c").await;
    assert_eq!(describe(&next(&mut of_ns).await), added("ns/c", r3));
}

#[tokio::test]
async fn a_watch_of_one_name_gets_only_that_objects_events_through_its_deletion() {
    let (storage, cache) = start(WatchCacheConfig::default()).await;
    let r_b = create(&storage, "ns", "b").await;
    let r_a = create(&storage, "ns", "a").await;
    cache.wait_until_fresh(r_a).await.unwrap();
    // A watch of ns/a from the current state: its initial event is a alone.
    let options = WatcherOptions {
        start: WatchStart::Any { initial_events: true },
        namespace: Some("ns".into()),
        name: Some("a".into()),
        predicate: None,
        bookmarks: false,
        initial_events_end_bookmark: false,
        deadline: Instant::now() + Duration::from_secs(600),
    };
    let mut a_in_ns = cache.watch(options).await.unwrap();
    let mut a_anywhere = watch(&cache, None, Some("a"), false).await;
    assert_eq!(describe(&next(&mut a_in_ns).await), added("ns/a", r_a));

    update(&storage, "ns", "b", r_b).await;
    let r1 = update(&storage, "ns", "a", r_a).await;
    let r2 = create(&storage, "other", "a").await;
    delete(&storage, "ns", "b").await;
    let r3 = delete(&storage, "ns", "a").await;
    create(&storage, "ns", "c").await;
    // Created again: the event after the deletion is this one (c's never came).
    let r4 = create(&storage, "ns", "a").await;

    assert_eq!(describe(&next(&mut a_in_ns).await), ("MODIFIED", "ns/a".into(), r1));
    assert_eq!(describe(&next(&mut a_in_ns).await), ("DELETED", "ns/a".into(), r3));
    assert_eq!(describe(&next(&mut a_in_ns).await), added("ns/a", r4));

    assert_eq!(describe(&next(&mut a_anywhere).await), ("MODIFIED", "ns/a".into(), r1));
    assert_eq!(describe(&next(&mut a_anywhere).await), added("other/a", r2));
    assert_eq!(describe(&next(&mut a_anywhere).await), ("DELETED", "ns/a".into(), r3));
    assert_eq!(describe(&next(&mut a_anywhere).await), added("ns/a", r4));
}

/// The resourceVersion of the watch's next event, which must be a bookmark.
async fn next_bookmark(w: &mut CacheWatcher) -> i64 {
    match next(w).await {
        WatchEvent::Bookmark { resource_version, initial_events_end: false } => resource_version,
        other => panic!("expected a bookmark, got {:?}", describe(&other)),
    }
}

#[tokio::test]
async fn a_bookmark_comes_once_its_interval_has_passed() {
    let interval = Duration::from_millis(300);
    let config = WatchCacheConfig {
        bookmark_interval: interval,
        bookmark_tick: Duration::from_millis(20),
        ..Default::default()
    };
    let (storage, cache) = start(config).await;
    let watched_at = Instant::now();
    let mut w = watch(&cache, Some("ns"), None, true).await;
    // Bookmarks carry a resourceVersion past the watch's start.
    let r1 = create(&storage, "ns", "a").await;
    assert_eq!(describe(&next(&mut w).await), added("ns/a", r1));
    assert_eq!(next_bookmark(&mut w).await, r1);
    assert!(watched_at.elapsed() >= interval, "a bookmark after {:?}", watched_at.elapsed());
    // And again later (the watcher was scheduled again): one at the new resourceVersion
    // comes, after the event (and perhaps another bookmark at r1, on a slow machine).
    let r2 = create(&storage, "ns", "b").await;
    loop {
        match describe(&next(&mut w).await) {
            ("BOOKMARK", _, rv) if rv == r2 => break,
            ("BOOKMARK", _, rv) => assert_eq!(rv, r1),
            event => assert_eq!(event, added("ns/b", r2)),
        }
    }
}

#[tokio::test]
async fn shortening_the_interval_brings_a_later_bookmark_forward() {
    let config = WatchCacheConfig {
        bookmark_interval: Duration::from_secs(3600),
        bookmark_tick: Duration::from_millis(20),
        ..Default::default()
    };
    let switch = config.bookmark_interval_override.clone();
    let (storage, cache) = start(config).await;
    let mut w = watch(&cache, Some("ns"), None, true).await;
    let r1 = create(&storage, "ns", "a").await;
    assert_eq!(describe(&next(&mut w).await), added("ns/a", r1));
    // Due in an hour: nothing in the next ticks.
    let mut out = Vec::new();
    assert!(tokio::time::timeout(Duration::from_millis(200), w.next_batch(&mut out, 1)).await.is_err(), "{out:?}");
    // 100 ms from now at the latest, not sooner.
    let shortened_at = Instant::now();
    switch.store(100, Ordering::Relaxed);
    assert_eq!(next_bookmark(&mut w).await, r1);
    assert!(shortened_at.elapsed() >= Duration::from_millis(100), "after {:?}", shortened_at.elapsed());
}

#[tokio::test]
async fn watchers_that_end_leave_nothing_registered() {
    let config = WatchCacheConfig {
        watcher_queue: 4,
        blocked_budget_max: Duration::from_millis(20),
        blocked_budget_refill: Duration::from_millis(10),
        ..Default::default()
    };
    let (storage, cache) = start(config).await;
    // Every kind of index entry, with and without bookmarks; dropped, they are gone.
    let dropped = vec![
        watch(&cache, None, None, true).await,
        watch(&cache, Some("ns"), None, false).await,
        watch(&cache, None, Some("a"), true).await,
        watch(&cache, Some("ns"), Some("a"), false).await,
    ];
    assert_eq!(cache.stats().registered_watchers, 4);
    drop(dropped);
    assert_eq!(cache.stats().registered_watchers, 0);

    // A watch of ns/a that does not read is closed by dispatch (queue of 4: at the 5th
    // event); one that reads, in step with the writes, sees them all.
    let mut stuck = watch(&cache, Some("ns"), Some("a"), true).await;
    let mut reading = watch(&cache, None, None, false).await;
    let mut revision = create(&storage, "ns", "a").await;
    assert_eq!(describe(&next(&mut reading).await), added("ns/a", revision));
    for _ in 1..6 {
        revision = update(&storage, "ns", "a", revision).await;
        assert_eq!(describe(&next(&mut reading).await), ("MODIFIED", "ns/a".into(), revision));
    }
    // The 6th event was dispatched after the 5th's dispatch had closed the stuck one.
    assert_eq!(cache.stats().terminated_watchers, 1);
    assert_eq!(cache.stats().registered_watchers, 1);
    drop(reading);
    assert_eq!(cache.stats().registered_watchers, 0);
    // The closed watch yields what was queued, then ends.
    let mut out = Vec::new();
    while tokio::time::timeout(Duration::from_secs(5), stuck.next_batch(&mut out, 10)).await.unwrap() {}
    assert_eq!(out.len(), 4);
}
