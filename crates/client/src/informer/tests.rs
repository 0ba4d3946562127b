//! The informer against the scripted fake of the reflector tests: what each handler is told, in
//! what order, and when it counts as synced.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use super::*;
use crate::backoff::BackoffConfig;
use crate::event::WatchEvent;
use crate::reflector::tests::{Reply, Script, cm, list, status};
use crate::resource::DynamicObject;

const WAIT: Duration = Duration::from_secs(20);

type Feed = mpsc::UnboundedSender<Result<WatchEvent<DynamicObject>, Error>>;

fn live() -> (Feed, Reply) {
    let (tx, rx) = mpsc::unbounded_channel();
    (tx, Reply::Live(rx))
}

fn informer(script: Arc<Script>) -> SharedInformer<DynamicObject> {
    let mut config = InformerConfig::default();
    config.reflector.name = "test".into();
    config.reflector.backoff = BackoffConfig { initial: Duration::from_millis(1), ..BackoffConfig::default() };
    SharedInformer::new(script, config)
}

/// Records notifications as text and lets a test wait for a count of them. A gated recorder
/// blocks in its first callback until the gate opens: a handler as slow as a test needs.
#[derive(Clone)]
struct Recorder {
    records: Arc<Mutex<Vec<String>>>,
    count: Arc<watch::Sender<usize>>,
    gate: Option<Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>>,
}

impl Recorder {
    fn new() -> Recorder {
        Recorder { records: Arc::default(), count: Arc::new(watch::channel(0).0), gate: None }
    }

    fn gated() -> Recorder {
        Recorder { gate: Some(Arc::default()), ..Recorder::new() }
    }

    fn open_gate(&self) {
        let (open, changed) = &**self.gate.as_ref().expect("a gated recorder");
        *open.lock().unwrap() = true;
        changed.notify_all();
    }

    fn record(&self, text: String) {
        if let Some(gate) = &self.gate {
            let (open, changed) = &**gate;
            let _open = changed.wait_while(open.lock().unwrap(), |open| !*open).unwrap();
        }
        let mut records = self.records.lock();
        records.push(text);
        self.count.send_replace(records.len());
    }

    async fn wait_for(&self, n: usize) -> Vec<String> {
        let mut count = self.count.subscribe();
        let reached = tokio::time::timeout(WAIT, count.wait_for(|c| *c >= n)).await;
        let records = self.records.lock().clone();
        assert!(reached.is_ok(), "waited for {n} notifications, got {records:?}");
        records
    }

    fn records(&self) -> Vec<String> {
        self.records.lock().clone()
    }
}

fn rv(object: &DynamicObject) -> &str {
    object.resource_version().unwrap_or("")
}

impl EventHandler<DynamicObject> for Recorder {
    fn on_add(&self, object: &Arc<DynamicObject>, in_initial_list: bool) {
        self.record(format!("add {}@{}{}", object.name(), rv(object), if in_initial_list { " initial" } else { "" }));
    }
    fn on_update(&self, old: &Arc<DynamicObject>, new: &Arc<DynamicObject>, cause: UpdateCause) {
        self.record(format!("update {} {}->{} {cause:?}", new.name(), rv(old), rv(new)));
    }
    fn on_delete(&self, object: &DeletedObject<DynamicObject>) {
        let kind = if object.is_final_state_unknown() { "tombstone" } else { "known" };
        self.record(format!("delete {}@{} {kind}", object.object().name(), rv(object.object())));
    }
}

fn sorted(mut records: Vec<String>) -> Vec<String> {
    records.sort();
    records
}

#[tokio::test]
async fn handlers_see_the_list_watch_events_and_relist_differences() {
    let (feed, watch_reply) = live();
    let (feed2, watch_reply2) = live();
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![cm("a", "5"), cm("b", "6")], None))),
        watch_reply,
        Reply::List(Ok(list("20", vec![cm("a", "5"), cm("c", "15")], None))),
        watch_reply2,
    ]);
    let informer = informer(script.clone());
    let plain = Recorder::new();
    let resyncing = Recorder::new();
    let plain_registration = informer.add_event_handler(plain.clone()).unwrap();
    let resync_registration =
        informer.add_event_handler_with_resync(resyncing.clone(), Some(Duration::from_secs(3600))).unwrap();
    assert!(!plain_registration.has_synced());
    informer.start();
    assert!(informer.wait_for_sync(WAIT).await);
    assert!(plain_registration.wait_synced(WAIT).await);
    assert!(resync_registration.wait_synced(WAIT).await);
    assert_eq!(sorted(plain.wait_for(2).await), ["add a@5 initial", "add b@6 initial"]);

    feed.send(Ok(WatchEvent::Modified(cm("b", "7")))).unwrap();
    // A MODIFIED that repeats the cached resourceVersion is a sync, not a change.
    feed.send(Ok(WatchEvent::Modified(cm("b", "7")))).unwrap();
    feed.send(Ok(WatchEvent::Added(cm("d", "8")))).unwrap();
    feed.send(Ok(WatchEvent::Deleted(cm("d", "9")))).unwrap();
    feed.send(Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old"))))).unwrap();
    let store = informer.store();
    assert!(store.wait_until(WAIT, |s| s.resource_version() == "20").await);
    assert_eq!(store.len(), 2);

    let records = plain.wait_for(7).await;
    assert_eq!(
        records[2..],
        ["update b 6->7 Watch", "add d@8", "delete d@9 known", "delete b@7 tombstone", "add c@15"],
        "deletions of a relist come first, then additions; unchanged objects are not repeated"
    );
    let resynced = resyncing.wait_for(9).await;
    assert_eq!(
        resynced[2..],
        [
            "update b 6->7 Watch",
            "update b 7->7 Watch",
            "add d@8",
            "delete d@9 known",
            "delete b@7 tombstone",
            "add c@15",
            "update a 5->5 Relist",
        ]
    );
    assert_eq!(script.calls()[2], crate::reflector::tests::l("9", None));
    drop(feed2);
    informer.stop();
}

#[tokio::test]
async fn a_late_handler_gets_the_cache_first_and_syncs_on_its_own() {
    let (feed, watch_reply) = live();
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![cm("a", "5"), cm("b", "6")], None))), watch_reply]);
    let informer = informer(script);
    informer.start();
    assert!(informer.wait_for_sync(WAIT).await);
    feed.send(Ok(WatchEvent::Added(cm("c", "11")))).unwrap();
    assert!(informer.store().wait_until(WAIT, |s| s.len() == 3).await);

    let late = Recorder::new();
    let registration = informer.add_event_handler(late.clone()).unwrap();
    assert!(registration.wait_synced(WAIT).await);
    assert_eq!(sorted(late.wait_for(3).await), ["add a@5 initial", "add b@6 initial", "add c@11 initial"]);
    feed.send(Ok(WatchEvent::Modified(cm("c", "12")))).unwrap();
    assert_eq!(late.wait_for(4).await[3], "update c 11->12 Watch");

    registration.remove();
    feed.send(Ok(WatchEvent::Modified(cm("c", "13")))).unwrap();
    assert!(informer.store().wait_until(WAIT, |s| s.resource_version() == "13").await);
    assert_eq!(late.records().len(), 4, "a removed handler hears nothing more");
    informer.stop();
    assert!(informer.add_event_handler(Recorder::new()).is_err(), "a stopped informer takes no handlers");
}

#[tokio::test]
async fn resync_replays_the_cache_only_to_handlers_that_asked() {
    let (_feed, watch_reply) = live();
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![cm("a", "5")], None))), watch_reply]);
    let informer = informer(script);
    let resyncing = Recorder::new();
    let plain = Recorder::new();
    let started = std::time::Instant::now();
    // Below the 1 s minimum: raised to it.
    informer.add_event_handler_with_resync(resyncing.clone(), Some(Duration::from_millis(10))).unwrap();
    informer.add_event_handler(plain.clone()).unwrap();
    informer.start();
    let records = resyncing.wait_for(3).await;
    assert_eq!(records, ["add a@5 initial", "update a 5->5 Resync", "update a 5->5 Resync"]);
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(plain.records(), ["add a@5 initial"]);
    informer.stop();
}

#[tokio::test]
async fn a_slow_handler_does_not_hold_up_the_others() {
    let (feed, watch_reply) = live();
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![], None))), watch_reply]);
    let informer = informer(script);
    let slow = Recorder::gated();
    let fast = Recorder::new();
    let slow_registration = informer.add_event_handler(slow.clone()).unwrap();
    informer.add_event_handler(fast.clone()).unwrap();
    informer.start();
    assert!(informer.wait_for_sync(WAIT).await);
    for i in 0..40 {
        feed.send(Ok(WatchEvent::Added(cm(&format!("o{i}"), &(11 + i).to_string())))).unwrap();
    }
    // The slow handler is stuck in its first callback; the fast one and the cache go on.
    fast.wait_for(40).await;
    assert!(informer.store().wait_until(WAIT, |s| s.len() == 40).await);
    assert!(slow.records().is_empty());
    assert_eq!(slow_registration.pending(), 40, "its notifications wait in its own queue");
    slow.open_gate();
    slow.wait_for(40).await;
    assert_eq!(slow_registration.pending(), 0);
    informer.stop();
}

#[tokio::test]
async fn transform_runs_before_caching_and_a_panicking_handler_is_skipped() {
    let (feed, watch_reply) = live();
    let mut big = cm("a", "5");
    big.0["metadata"]["managedFields"] = serde_json::json!([{"manager": "kubectl"}]);
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![big], None))), watch_reply]);
    let informer = informer(script);
    informer
        .set_transform(|mut object: DynamicObject| {
            if let Some(meta) = object.0.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                meta.remove("managedFields");
            }
            object
        })
        .unwrap();
    let survivor = Recorder::new();
    let panicky = survivor.clone();
    informer
        .add_event_handler(HandlerFns::new().on_add(move |object: &Arc<DynamicObject>, initial| {
            if object.name() == "boom" {
                panic!("handler bug");
            }
            panicky.record(format!("add {}{}", object.name(), if initial { " initial" } else { "" }));
        }))
        .unwrap();
    informer.start();
    assert!(informer.wait_for_sync(WAIT).await);
    assert!(informer.store().get("ns/a").unwrap().pointer("/metadata/managedFields").is_none());
    assert!(informer.set_transform(|o| o).is_err(), "only before start");
    feed.send(Ok(WatchEvent::Added(cm("boom", "11")))).unwrap();
    feed.send(Ok(WatchEvent::Added(cm("after", "12")))).unwrap();
    assert_eq!(survivor.wait_for(2).await, ["add a initial", "add after"]);
    informer.stop();
}

async fn next(subscription: &mut Subscription<DynamicObject>) -> Notification<DynamicObject> {
    tokio::time::timeout(WAIT, subscription.next()).await.expect("a notification").expect("open")
}

#[tokio::test]
async fn subscriptions_stream_notifications_with_a_synced_marker() {
    let (feed, watch_reply) = live();
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![cm("a", "5")], None))), watch_reply]);
    let informer = informer(script);
    let mut subscription = informer.subscribe().unwrap();
    informer.start();
    assert!(matches!(next(&mut subscription).await, Notification::Add { in_initial_list: true, .. }));
    assert!(!subscription.registration().has_synced());
    assert!(matches!(next(&mut subscription).await, Notification::Synced));
    assert!(subscription.registration().has_synced());
    feed.send(Ok(WatchEvent::Deleted(cm("a", "11")))).unwrap();
    match next(&mut subscription).await {
        Notification::Delete(DeletedObject::Known(object)) => assert_eq!(object.resource_version(), Some("11")),
        other => panic!("{other:?}"),
    }
    informer.stop();
}
