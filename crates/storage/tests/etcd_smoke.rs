//! Smoke tests of the etcd backend against real etcd servers (scripts/etcd.sh): the pieces the
//! contract suite cannot reach from the outside of one backend, resumption after etcd is killed
//! (with a watcher that keeps reading, one that lags behind committed writes, and one resumed
//! right after a progress notification), and the progress gate on the old etcd 3.4.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::{EventKind, KeyRange, RangeRequest, Storage, StorageError, Watch, WatchRequest, WatchResponse};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions, EtcdVersion, shared_endpoints, unique_prefix};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "listwatch_storage=info".into()),
        )
        .with_test_writer()
        .try_init();
}

async fn connect(endpoints: &[String]) -> EtcdStore {
    EtcdStore::connect(endpoints, EtcdOptions::default()).await.expect("connect to etcd")
}

async fn next(watch: &mut Watch) -> WatchResponse {
    tokio::time::timeout(Duration::from_secs(20), watch.next())
        .await
        .expect("a watch response within 20 s")
        .expect("the watch has not ended")
        .expect("not an error")
}

/// Events (flattened to revisions) until `revision`, skipping progress notifications.
async fn revisions_until(watch: &mut Watch, revision: i64) -> Vec<i64> {
    let mut seen = Vec::new();
    while seen.last().is_none_or(|&r| r < revision) {
        match next(watch).await {
            WatchResponse::Events(events) => seen.extend(events.iter().map(|e| e.revision())),
            WatchResponse::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reads_and_watch_on_shared_etcd() {
    init_tracing();
    let store = connect(&shared_endpoints().await).await;
    let version = store.version().await.unwrap();
    assert_eq!(version.backend, "etcd");
    let p = unique_prefix("writes_reads_and_watch");
    let key = format!("{p}a");

    let r1 = store.create(key.as_bytes(), b("v1")).await.unwrap().revision;
    assert_eq!(store.create(key.as_bytes(), b("v1")).await, Err(StorageError::AlreadyExists));
    let r2 = store.update(key.as_bytes(), b("v2"), r1).await.unwrap().revision;
    match store.update(key.as_bytes(), b("v3"), r1).await {
        Err(StorageError::Conflict { current: Some(kv) }) => {
            assert_eq!((kv.value, kv.mod_revision, kv.version), (b("v2"), r2, 2));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(matches!(store.update(key.as_bytes(), b("v3"), 0).await, Err(StorageError::Conflict { current: Some(_) })));
    assert_eq!(
        store.update(format!("{p}missing").as_bytes(), b("x"), 5).await,
        Err(StorageError::Conflict { current: None })
    );
    assert_eq!(
        store.delete(format!("{p}missing").as_bytes(), Some(5)).await,
        Err(StorageError::Conflict { current: None })
    );
    assert_eq!(store.delete(format!("{p}missing").as_bytes(), None).await, Err(StorageError::NotFound));

    let past = store.range(RangeRequest::new(KeyRange::key(key.clone())).at_revision(r1)).await.unwrap();
    assert_eq!((past.revision, past.kvs[0].value.clone()), (r1, b("v1")));

    let deleted = store.delete(key.as_bytes(), Some(r2)).await.unwrap();
    assert_eq!(deleted.prev.value, b("v2"));
    let r3 = deleted.revision;

    // History, with previous values and a tombstone.
    let mut watch = store.watch(WatchRequest::new(KeyRange::prefix(p.clone()), r1)).await.unwrap();
    let mut events = Vec::new();
    while events.len() < 3 {
        match next(&mut watch).await {
            WatchResponse::Events(batch) => events.extend(batch),
            WatchResponse::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        events.iter().map(|e| (e.kind, e.revision())).collect::<Vec<_>>(),
        vec![(EventKind::Put, r1), (EventKind::Put, r2), (EventKind::Delete, r3)]
    );
    assert!(events[0].is_create() && events[0].prev.is_none());
    assert_eq!(events[2].prev.as_ref().unwrap().value, b("v2"));
    assert_eq!(events[2].kv.version, 0);

    // A requested progress notification covers the history (3.5.16 answers requests).
    assert!(version.supports_request_watch_progress(), "{version:?}");
    watch.progress_requester().request();
    match next(&mut watch).await {
        WatchResponse::Progress(revision) => assert!(revision >= r3),
        other => panic!("expected progress, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_errors_and_watch_3_5() {
    compaction_errors_and_watch(EtcdVersion::V3_5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_errors_and_watch_3_4() {
    compaction_errors_and_watch(EtcdVersion::V3_4).await;
}

async fn compaction_errors_and_watch(version: EtcdVersion) {
    init_tracing();
    let etcd = EtcdProcess::start(EtcdProcessOptions::default().version(version)).await;
    let store = connect(&[etcd.endpoint().to_string()]).await;
    assert_eq!(store.compacted_revision().await.unwrap(), 0);
    let key = b"/c/a";
    let r1 = store.create(key, b("1")).await.unwrap().revision;
    let r2 = store.update(key, b("2"), r1).await.unwrap().revision;
    let r3 = store.update(key, b("3"), r2).await.unwrap().revision;
    store.compact(r2).await.unwrap();

    // A second client has not seen the compaction: it must find it out from etcd.
    let other = connect(&[etcd.endpoint().to_string()]).await;
    assert_eq!(other.compacted_revision().await.unwrap(), r2);
    let read = other.range(RangeRequest::new(KeyRange::key(&key[..])).at_revision(r1)).await;
    assert_eq!(read.unwrap_err(), StorageError::Compacted { compact_revision: r2 });
    assert_eq!(other.compact(r1).await, Err(StorageError::Compacted { compact_revision: r2 }));
    match other.compact(r3 + 10).await {
        Err(StorageError::FutureRevision { current_revision }) => {
            assert_eq!(current_revision, r3);
        }
        other => panic!("expected a future revision error, got {other:?}"),
    }
    match other.range(RangeRequest::new(KeyRange::key(&key[..])).at_revision(r3 + 10)).await {
        Err(StorageError::FutureRevision { current_revision }) => {
            assert_eq!(current_revision, r3);
        }
        other => panic!("expected a future revision error, got {other:?}"),
    }

    let mut watch = other.watch(WatchRequest::new(KeyRange::key(&key[..]), r1)).await.unwrap();
    assert_eq!(next(&mut watch).await, WatchResponse::Compacted(r2));
    assert!(tokio::time::timeout(Duration::from_secs(5), watch.next()).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_after_etcd_is_killed_and_restarted() {
    init_tracing();
    let mut etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
    let store = Arc::new(connect(&[etcd.endpoint().to_string()]).await);
    let range = KeyRange::prefix("/r/");
    let mut watch = store.watch(WatchRequest::new(range.clone(), 0).with_progress_notify()).await.unwrap();
    let first = store.create(b"/r/first", b("x")).await.unwrap().revision;

    // A consumer that keeps reading (so the watch notices each crash at once), until it has
    // seen the revision it is eventually told.
    let (last_tx, mut last_rx) = tokio::sync::watch::channel(i64::MAX);
    let consumer = tokio::spawn(async move {
        let mut seen: Vec<i64> = Vec::new();
        loop {
            if seen.last().is_some_and(|&r| r >= *last_rx.borrow()) {
                return (seen, watch);
            }
            tokio::select! {
                response = next(&mut watch) => match response {
                    WatchResponse::Events(events) => seen.extend(events.iter().map(|e| e.revision())),
                    WatchResponse::Progress(_) => {}
                    other => panic!("unexpected {other:?}"),
                },
                _ = last_rx.changed() => {}
            }
        }
    });

    // A writer that keeps going (and failing while etcd is down) through two crashes.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = tokio::spawn({
        let (store, stop) = (store.clone(), stop.clone());
        async move {
            let mut failures = 0;
            for i in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                if let Err(e) = store.create(format!("/r/{i}").as_bytes(), b("x")).await {
                    assert!(matches!(e, StorageError::Unavailable(_)), "{e:?}");
                    failures += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            failures
        }
    });
    // A short outage (writes that cannot connect are sent again, so they may ride it out), then
    // one longer than the store's resends (about 1.6 s), which the writer must see.
    for outage in [300, 2500] {
        tokio::time::sleep(Duration::from_millis(300)).await;
        etcd.kill().await;
        tokio::time::sleep(Duration::from_millis(outage)).await;
        etcd.restart().await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let failures = writer.await.unwrap();
    assert!(failures > 0, "the writer should have seen etcd down");
    let last = store.current_revision().await.unwrap();
    last_tx.send(last).unwrap();
    let (seen, mut watch) = tokio::time::timeout(Duration::from_secs(30), consumer)
        .await
        .expect("the watch caught up within 30 s")
        .unwrap();

    // The truth: a fresh watch replaying the whole history.
    let mut replay = store.watch(WatchRequest::new(range, first)).await.unwrap();
    let expected = revisions_until(&mut replay, last).await;
    assert!(expected.len() > 10, "too few writes: {expected:?}");
    assert_eq!(seen, expected, "every event exactly once, in order");

    // Progress requests work on the resumed stream.
    watch.progress_requester().request();
    match next(&mut watch).await {
        WatchResponse::Progress(revision) => assert!(revision >= last),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_etcd_progress_comes_from_periodic_notifications_only() {
    init_tracing();
    let options =
        EtcdProcessOptions::default().version(EtcdVersion::V3_4).progress_interval(Duration::from_millis(500));
    let etcd = EtcdProcess::start(options).await;
    let store = connect(&[etcd.endpoint().to_string()]).await;
    let version = store.version().await.unwrap();
    assert!(version.version.starts_with("3.4."), "{version:?}");
    assert!(!version.supports_request_watch_progress());

    // Many events to catch up, then a progress request right away: 3.4.23 would answer it ahead
    // of the events (etcd #15220); the watch must not report progress before they are delivered.
    let mut last = 0;
    for i in 0..300 {
        last = store.create(format!("/old/{i}").as_bytes(), b("x")).await.unwrap().revision;
    }
    let mut watch = store.watch(WatchRequest::new(KeyRange::prefix("/old/"), 1).with_progress_notify()).await.unwrap();
    watch.progress_requester().request();
    let mut delivered = 0;
    loop {
        match next(&mut watch).await {
            WatchResponse::Events(events) => delivered = events.last().unwrap().revision(),
            WatchResponse::Progress(revision) => {
                assert!(
                    delivered >= revision && delivered == last,
                    "progress {revision} before events up to {delivered}"
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// etcd's count of watchers, from its metrics.
fn etcd_watchers(endpoint: &str) -> u64 {
    etcd_metric(endpoint, "etcd_debugging_mvcc_watcher_total") as u64
}

/// One unlabelled metric of etcd's.
fn etcd_metric(endpoint: &str, name: &str) -> f64 {
    let output =
        std::process::Command::new("curl").args(["-fsS", &format!("{endpoint}/metrics")]).output().expect("run curl");
    let metrics = String::from_utf8_lossy(&output.stdout);
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in etcd's metrics:\n{metrics}"))
}

/// Creates `key` once etcd answers again after a restart: the client's connection comes back
/// after a failed attempt or two (a create that failed ambiguously yet applied is found by
/// reading the key). Returns the revision of the create.
async fn create_when_back(store: &EtcdStore, key: &str) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match store.create(key.as_bytes(), b("x")).await {
            Ok(written) => return written.revision,
            Err(StorageError::AlreadyExists) => {
                let read = store.range(RangeRequest::new(KeyRange::key(key.to_string()))).await.unwrap();
                return read.kvs[0].mod_revision;
            }
            Err(StorageError::Unavailable(e)) => {
                assert!(tokio::time::Instant::now() < deadline, "etcd not back within 30 s: {e}");
                // Backoff between attempts, not a wait for an event.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_watcher_gets_every_event_once_after_etcd_is_killed_and_restarted() {
    init_tracing();
    let mut etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
    let store = Arc::new(connect(&[etcd.endpoint().to_string()]).await);
    let range = KeyRange::prefix("/lag/");
    let mut watch = store.watch(WatchRequest::new(range.clone(), 0)).await.unwrap();

    // Writes the watcher does not read while they commit: 24 MiB of events, far more than the
    // watch's buffer, the HTTP/2 windows and the sockets hold, so etcd still owes it events.
    let value = Bytes::from(vec![b'v'; 16 * 1024]);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (store, value) = (store.clone(), value.clone());
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for i in (w..1500).step_by(4) {
                    let key = format!("/lag/{i:05}");
                    revisions.push(store.create(key.as_bytes(), value.clone()).await.unwrap().revision);
                }
                revisions
            })
        })
        .collect();
    let mut written = Vec::new();
    for writer in writers {
        written.extend(writer.await.unwrap());
    }
    written.sort_unstable();
    let first = written[0];

    // etcd holds events back for this watcher: it lags behind committed writes.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let pending = etcd_metric(etcd.endpoint(), "etcd_debugging_mvcc_pending_events_total");
        let slow = etcd_metric(etcd.endpoint(), "etcd_debugging_mvcc_slow_watcher_total");
        if pending > 0.0 || slow > 0.0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "etcd never held events back for the watcher");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    etcd.kill().await;
    etcd.restart().await;
    // A few more writes after the restart: the resumed watch owes those too.
    let mut after = vec![create_when_back(&store, "/lag/after-0").await];
    for i in 1..5 {
        after.push(store.create(format!("/lag/after-{i}").as_bytes(), b("x")).await.unwrap().revision);
    }
    written.extend(&after);
    let last = *written.last().unwrap();
    assert!(written.windows(2).all(|w| w[0] < w[1]));

    // Only now does the watcher read: every event exactly once, in order, nothing missing.
    let mut events = Vec::new();
    while events.last().is_none_or(|e: &Arc<listwatch_storage::Event>| e.revision() < last) {
        match next(&mut watch).await {
            WatchResponse::Events(batch) => events.extend(batch),
            WatchResponse::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let seen: Vec<i64> = events.iter().map(|e| e.revision()).collect();
    assert_eq!(seen, written, "every event exactly once, in order");
    // And the same events, values and all, as a fresh watch replaying the history.
    let mut replay = store.watch(WatchRequest::new(range, first)).await.unwrap();
    let mut expected = Vec::new();
    while expected.last().is_none_or(|e: &Arc<listwatch_storage::Event>| e.revision() < last) {
        match next(&mut replay).await {
            WatchResponse::Events(batch) => expected.extend(batch),
            WatchResponse::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(events == expected, "the resumed watch's events differ from the history");

    // Nothing else follows: a progress notification covers the last revision with no event
    // before it.
    watch.progress_requester().request();
    match next(&mut watch).await {
        WatchResponse::Progress(revision) => assert!(revision >= last),
        other => panic!("expected only a progress notification, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_right_after_a_progress_notification_repeats_nothing() {
    init_tracing();
    let mut etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
    let store = connect(&[etcd.endpoint().to_string()]).await;
    let mut watch = store.watch(WatchRequest::new(KeyRange::prefix("/bm/"), 0)).await.unwrap();
    let mut last = 0;
    for i in 0..3 {
        last = store.create(format!("/bm/{i}").as_bytes(), b("x")).await.unwrap().revision;
    }
    assert_eq!(revisions_until(&mut watch, last).await.last(), Some(&last));

    // A progress notification at exactly the last event's revision: a watch resumed from that
    // revision rather than the next one (the client bug of etcd #15275) would get the event again.
    watch.progress_requester().request();
    match next(&mut watch).await {
        WatchResponse::Progress(revision) => assert_eq!(revision, last),
        other => panic!("expected a progress notification, got {other:?}"),
    }

    // The stream breaks right there, and the watch resumes on the restarted etcd.
    etcd.kill().await;
    etcd.restart().await;
    let new = create_when_back(&store, "/bm/new").await;
    assert!(new > last);

    // The first event after the resume is the new write; nothing is repeated.
    let first_events = loop {
        match next(&mut watch).await {
            WatchResponse::Events(events) => break events,
            WatchResponse::Progress(revision) => assert!(revision >= last, "progress went back to {revision}"),
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(first_events.iter().map(|e| e.revision()).collect::<Vec<_>>(), vec![new]);
    assert!(first_events[0].is_create());
    // And nothing after it: the next response is a progress notification covering it.
    watch.progress_requester().request();
    match next(&mut watch).await {
        WatchResponse::Progress(revision) => assert!(revision >= new),
        other => panic!("expected only a progress notification, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_watch_cancels_it_in_etcd() {
    init_tracing();
    let etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
    let store = connect(&[etcd.endpoint().to_string()]).await;
    let mut watches = Vec::new();
    for i in 0..10 {
        let range = KeyRange::prefix(format!("/w/{i}/"));
        watches.push(store.watch(WatchRequest::new(range, 0)).await.unwrap());
    }
    assert_eq!(etcd_watchers(etcd.endpoint()), 10);
    drop(watches);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while etcd_watchers(etcd.endpoint()) != 0 {
        assert!(tokio::time::Instant::now() < deadline, "etcd still has watchers after they were dropped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_far_above_grpc_default_size_decode() {
    init_tracing();
    let etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
    let store = Arc::new(connect(&[etcd.endpoint().to_string()]).await);

    // 10,000 keys of 1 KiB: a 10 MiB list.
    let value = Bytes::from(vec![b'v'; 1024]);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (store, value) = (store.clone(), value.clone());
            tokio::spawn(async move {
                for i in (w..10_000).step_by(8) {
                    store.create(format!("/list/{i:05}").as_bytes(), value.clone()).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let list = store.range(RangeRequest::new(KeyRange::prefix("/list/"))).await.unwrap();
    assert_eq!((list.kvs.len(), list.count, list.more), (10_000, 10_000, false));

    // 20 updates of a 1 MiB value: replayed from history, one response of about 40 MiB (each
    // event carries its previous value).
    let big = |fill: u8| Bytes::from(vec![fill; 1024 * 1024]);
    let first = store.create(b"/big", big(0)).await.unwrap().revision;
    let mut last = first;
    for fill in 1..20 {
        last = store.update(b"/big", big(fill), last).await.unwrap().revision;
    }
    let mut watch = store.watch(WatchRequest::new(KeyRange::key(&b"/big"[..]), first)).await.unwrap();
    let mut events = Vec::new();
    while events.len() < 20 {
        match next(&mut watch).await {
            WatchResponse::Events(batch) => events.extend(batch),
            WatchResponse::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(events.last().unwrap().revision(), last);
    assert_eq!(events[19].prev.as_ref().unwrap().value, big(18));
}
