//! The storage contract: one suite, run against the memory store (ephemeral and durable) and
//! against a real etcd. Tests that compact or kill use a private store; the others share one
//! etcd and isolate themselves by key prefix, so they assert on revisions relative to what they
//! observe, never on absolute numbers.

mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use listwatch_storage::{Event, EventKind, KeyRange, RangeRequest, Storage, StorageError, WatchRequest, WatchResponse};
use support::{Backend, collect_until, next_progress, open_private_store, open_store};

macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() { super::$test(super::Backend::Ephemeral).await })*
        }
        mod memory_durable {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() { super::$test(super::Backend::Memory).await })*
        }
        mod etcd {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() { super::$test(super::Backend::Etcd).await })*
        }
    };
}

contract!(
    create_update_delete_with_conflicts,
    value_too_large_is_refused,
    reads_at_past_revisions,
    range_limit_count_and_more,
    compaction_and_its_errors,
    watch_replays_history_exactly,
    watch_from_compacted_revision_reports_compaction,
    watch_from_now_sees_only_new_writes,
    progress_advances_with_no_events,
    periodic_progress_notifications,
);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn create_update_delete_with_conflicts(backend: Backend) {
    const TEST: &str = "create_update_delete_with_conflicts";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let key = format!("{p}a");
    let r1 = store.create(key.as_bytes(), b("v1")).await.unwrap().revision;
    assert_eq!(store.create(key.as_bytes(), b("again")).await, Err(StorageError::AlreadyExists));

    let r2 = store.update(key.as_bytes(), b("v2"), r1).await.unwrap().revision;
    assert!(r2 > r1);
    // A stale revision is a conflict that carries the current state.
    match store.update(key.as_bytes(), b("v3"), r1).await {
        Err(StorageError::Conflict { current: Some(kv) }) => {
            assert_eq!((kv.value, kv.mod_revision, kv.create_revision, kv.version), (b("v2"), r2, r1, 2));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(matches!(
        store.delete(key.as_bytes(), Some(r1)).await,
        Err(StorageError::Conflict { current: Some(kv) }) if kv.mod_revision == r2
    ));

    let deleted = store.delete(key.as_bytes(), Some(r2)).await.unwrap();
    assert!(deleted.revision > r2);
    assert_eq!((deleted.prev.value, deleted.prev.mod_revision), (b("v2"), r2));
    assert_eq!(store.delete(key.as_bytes(), None).await, Err(StorageError::NotFound));
    assert_eq!(store.update(key.as_bytes(), b("x"), r2).await, Err(StorageError::Conflict { current: None }));
    let read = store.range(RangeRequest::new(KeyRange::key(key.clone()))).await.unwrap();
    assert!(read.kvs.is_empty());
    assert_eq!(read.count, 0);

    // Re-creating starts a new generation.
    let r4 = store.create(key.as_bytes(), b("v4")).await.unwrap().revision;
    let kv = &store.range(RangeRequest::new(KeyRange::key(key.clone()))).await.unwrap().kvs[0];
    assert_eq!((kv.create_revision, kv.mod_revision, kv.version), (r4, r4, 1));

    // An unconditional delete returns the previous value.
    let deleted = store.delete(key.as_bytes(), None).await.unwrap();
    assert_eq!(deleted.prev.value, b("v4"));
}

async fn value_too_large_is_refused(backend: Backend) {
    const TEST: &str = "value_too_large_is_refused";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let key = format!("{p}big");
    let big = Bytes::from(vec![b'x'; listwatch_storage::MAX_REQUEST_BYTES]);
    assert!(matches!(store.create(key.as_bytes(), big.clone()).await, Err(StorageError::ValueTooLarge { .. })));
    let r = store.create(key.as_bytes(), b("small")).await.unwrap().revision;
    assert!(matches!(store.update(key.as_bytes(), big, r).await, Err(StorageError::ValueTooLarge { .. })));
    // Just under the limit is accepted by both backends.
    let fits = Bytes::from(vec![b'y'; listwatch_storage::MAX_REQUEST_BYTES - 4096]);
    store.update(key.as_bytes(), fits, r).await.unwrap();
}

async fn reads_at_past_revisions(backend: Backend) {
    const TEST: &str = "reads_at_past_revisions";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let (a, bk) = (format!("{p}a"), format!("{p}b"));
    let r1 = store.create(a.as_bytes(), b("a1")).await.unwrap().revision;
    let r2 = store.update(a.as_bytes(), b("a2"), r1).await.unwrap().revision;
    let r3 = store.create(bk.as_bytes(), b("b1")).await.unwrap().revision;
    let r4 = store.delete(a.as_bytes(), None).await.unwrap().revision;
    let range = KeyRange::prefix(p.clone());
    let at = |rev| {
        let store = store.clone();
        let range = range.clone();
        async move {
            let resp = store.range(RangeRequest::new(range).at_revision(rev)).await.unwrap();
            assert_eq!(resp.revision, rev, "a read at a revision reports that revision");
            resp.kvs.iter().map(|kv| (kv.value.clone(), kv.mod_revision)).collect::<Vec<_>>()
        }
    };
    assert_eq!(at(r1).await, vec![(b("a1"), r1)]);
    assert_eq!(at(r2).await, vec![(b("a2"), r2)]);
    assert_eq!(at(r3).await, vec![(b("a2"), r2), (b("b1"), r3)]);
    assert_eq!(at(r4).await, vec![(b("b1"), r3)]);
    let latest = store.range(RangeRequest::new(range.clone())).await.unwrap();
    assert!(latest.revision >= r4);
    let current = store.current_revision().await.unwrap();
    assert!(current >= r4);
    match store.range(RangeRequest::new(range).at_revision(current + 1000)).await {
        Err(StorageError::FutureRevision { current_revision }) => {
            assert!(current_revision >= current);
        }
        other => panic!("expected a future-revision error, got {other:?}"),
    }
}

async fn range_limit_count_and_more(backend: Backend) {
    const TEST: &str = "range_limit_count_and_more";
    let (store, p, _guard) = open_store(backend, TEST).await;
    for i in 0..5 {
        store.create(format!("{p}k{i}").as_bytes(), b("v")).await.unwrap();
    }
    // A neighbouring prefix must not leak in (prefix `p/k` vs `p/k2...` style).
    store.create(format!("{}x", p.trim_end_matches('/')).as_bytes(), b("outside")).await.unwrap();
    let range = KeyRange::prefix(p.clone());
    let page = store.range(RangeRequest::new(range.clone()).limit(2)).await.unwrap();
    assert_eq!(page.kvs.len(), 2);
    assert_eq!((page.count, page.more), (5, true));
    assert_eq!(page.kvs[0].key, format!("{p}k0"));
    // The next page starts after the last key, at the same revision.
    let mut next = page.kvs[1].key.to_vec();
    next.push(0);
    let rest = store
        .range(RangeRequest::new(KeyRange::between(next, range.end.clone().unwrap())).at_revision(page.revision))
        .await
        .unwrap();
    assert_eq!(rest.kvs.len(), 3);
    assert_eq!((rest.count, rest.more), (3, false));
    let counted = store.range(RangeRequest::new(range).count_only()).await.unwrap();
    assert!(counted.kvs.is_empty());
    assert_eq!(counted.count, 5);
}

async fn compaction_and_its_errors(backend: Backend) {
    const TEST: &str = "compaction_and_its_errors";
    let (store, p, _guard) = open_private_store(backend, TEST).await;
    let key = format!("{p}a");
    let r1 = store.create(key.as_bytes(), b("1")).await.unwrap().revision;
    let r2 = store.update(key.as_bytes(), b("2"), r1).await.unwrap().revision;
    let r3 = store.update(key.as_bytes(), b("3"), r2).await.unwrap().revision;
    store.compact(r2).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), r2);
    let read = |rev| store.range(RangeRequest::new(KeyRange::key(key.clone())).at_revision(rev));
    assert_eq!(read(r1).await.unwrap_err(), StorageError::Compacted { compact_revision: r2 });
    assert_eq!(read(r2).await.unwrap().kvs[0].value, b("2"));
    assert_eq!(read(r3).await.unwrap().kvs[0].value, b("3"));
    assert_eq!(store.compact(r2).await, Err(StorageError::Compacted { compact_revision: r2 }));
    assert_eq!(store.compact(r1).await, Err(StorageError::Compacted { compact_revision: r2 }));
    assert!(matches!(store.compact(r3 + 100).await, Err(StorageError::FutureRevision { .. })));
}

/// A scripted history on a few keys; returns the events expected for it, in order.
async fn write_history(store: &Arc<dyn Storage>, p: &str) -> Vec<Event> {
    let mut expected = Vec::new();
    let mut current: std::collections::HashMap<String, listwatch_storage::KeyValue> = Default::default();
    let ops: &[(&str, &str)] = &[
        ("a", "a1"),
        ("b", "b1"),
        ("a", "a2"),
        ("c", "c1"),
        ("b", ""),
        ("a", "a3"),
        ("b", "b2"),
        ("c", ""),
        ("a", ""),
    ];
    for (name, value) in ops {
        let key = format!("{p}{name}");
        let prev = current.get(&key).cloned();
        if value.is_empty() {
            let d = store.delete(key.as_bytes(), None).await.unwrap();
            let tombstone = listwatch_storage::KeyValue {
                key: b(&key),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: d.revision,
                version: 0,
            };
            expected.push(Event { kind: EventKind::Delete, kv: tombstone, prev: prev.clone() });
            current.remove(&key);
        } else {
            let revision = match &prev {
                None => store.create(key.as_bytes(), b(value)).await.unwrap().revision,
                Some(kv) => store.update(key.as_bytes(), b(value), kv.mod_revision).await.unwrap().revision,
            };
            let kv = listwatch_storage::KeyValue {
                key: b(&key),
                value: b(value),
                create_revision: prev.as_ref().map_or(revision, |p| p.create_revision),
                mod_revision: revision,
                version: prev.as_ref().map_or(1, |p| p.version + 1),
            };
            expected.push(Event { kind: EventKind::Put, kv: kv.clone(), prev: prev.clone() });
            current.insert(key, kv);
        }
    }
    expected
}

async fn watch_replays_history_exactly(backend: Backend) {
    const TEST: &str = "watch_replays_history_exactly";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let expected = write_history(&store, &p).await;
    let last = expected.last().unwrap().revision();
    for start in [expected[0].revision(), expected[3].revision()] {
        let mut watch = store.watch(WatchRequest::new(KeyRange::prefix(p.clone()), start)).await.unwrap();
        let got = collect_until(&mut watch, last, Duration::from_secs(10)).await;
        let want: Vec<Event> = expected.iter().filter(|e| e.revision() >= start).cloned().collect();
        assert_eq!(got.iter().map(|e| (**e).clone()).collect::<Vec<_>>(), want, "watch from {start}");
    }
}

async fn watch_from_compacted_revision_reports_compaction(backend: Backend) {
    const TEST: &str = "watch_from_compacted_revision_reports_compaction";
    let (store, p, _guard) = open_private_store(backend, TEST).await;
    let expected = write_history(&store, &p).await;
    let compact_at = expected[4].revision();
    store.compact(compact_at).await.unwrap();
    let range = KeyRange::prefix(p.clone());
    let mut watch = store.watch(WatchRequest::new(range.clone(), compact_at - 1)).await.unwrap();
    let first =
        tokio::time::timeout(Duration::from_secs(10), watch.next()).await.expect("a response").expect("not ended");
    assert_eq!(first.unwrap(), WatchResponse::Compacted(compact_at));
    // From the compaction revision itself, history is still there, prev values included.
    let mut watch = store.watch(WatchRequest::new(range, compact_at)).await.unwrap();
    let got = collect_until(&mut watch, expected.last().unwrap().revision(), Duration::from_secs(10)).await;
    let mut want: Vec<Event> = expected.iter().filter(|e| e.revision() >= compact_at).cloned().collect();
    // etcd reads a previous value at revision - 1: for the event at the compaction revision
    // that is compacted, so it comes without one (both backends).
    want[0].prev = None;
    assert_eq!(got.iter().map(|e| (**e).clone()).collect::<Vec<_>>(), want);
}

async fn watch_from_now_sees_only_new_writes(backend: Backend) {
    const TEST: &str = "watch_from_now_sees_only_new_writes";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let old = store.create(format!("{p}old").as_bytes(), b("1")).await.unwrap().revision;
    let mut watch = store.watch(WatchRequest::new(KeyRange::prefix(p.clone()), 0)).await.unwrap();
    let new = store.create(format!("{p}new").as_bytes(), b("2")).await.unwrap().revision;
    let got = collect_until(&mut watch, new, Duration::from_secs(10)).await;
    assert!(got.iter().all(|e| e.revision() > old));
    assert_eq!(got.iter().map(|e| e.revision()).collect::<Vec<_>>(), vec![new]);
    assert!(got[0].is_create());
}

async fn progress_advances_with_no_events(backend: Backend) {
    const TEST: &str = "progress_advances_with_no_events";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let mut watch = store.watch(WatchRequest::new(KeyRange::prefix(format!("{p}quiet/")), 0)).await.unwrap();
    let requester = watch.progress_requester();
    requester.request();
    let first = next_progress(&mut watch, Duration::from_secs(10)).await;
    // A write outside the watched range moves the store's revision; progress follows it.
    let outside = store.create(format!("{p}elsewhere").as_bytes(), b("x")).await.unwrap().revision;
    assert!(outside > first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        requester.request();
        let rev = next_progress(&mut watch, Duration::from_secs(10)).await;
        assert!(rev >= first, "progress never goes back");
        if rev >= outside {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "progress did not reach {outside}");
    }
}

async fn periodic_progress_notifications(backend: Backend) {
    const TEST: &str = "periodic_progress_notifications";
    let (store, p, _guard) = open_store(backend, TEST).await;
    let request = WatchRequest::new(KeyRange::prefix(format!("{p}quiet/")), 0).with_progress_notify();
    let mut watch = store.watch(request).await.unwrap();
    let outside = store.create(format!("{p}elsewhere").as_bytes(), b("x")).await.unwrap().revision;
    // Without asking: the periodic notification (5 s on the suite's etcd and memory store).
    let rev = next_progress(&mut watch, Duration::from_secs(15)).await;
    assert!(rev >= outside);
}
