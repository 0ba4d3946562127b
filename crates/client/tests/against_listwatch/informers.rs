//! Informers that must end up equal to the server after storms of writes, forced 410s, dropped
//! watchers, 429s, server restarts and etcd restarts, without ever telling a handler twice about
//! the same resourceVersion of an object; and the factory that shares them.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use listwatch_client::{
    Api, ApiResource, Client, DeletedObject, DynamicObject, EventHandler, InformerConfig, LabelSelector, Object, Phase,
    Recovery, ReflectorConfig, ReflectorError, SharedInformer, SharedInformerFactory, UpdateCause,
};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::watch;

use crate::ConfigMap;
use crate::support::{
    Backend, Server, WAIT, configmap, configmaps, fast_reflector, server_state, storm, write_retrying,
};

/// A handler that keeps its own view of the objects and records any broken promise: two
/// non-resync notifications for one resourceVersion of an object, or a sync notification it did
/// not ask for.
#[derive(Default)]
struct Checker {
    view: Mutex<BTreeMap<String, String>>,
    seen: Mutex<HashSet<(String, String)>>,
    tombstones: Mutex<Vec<String>>,
    violations: Mutex<Vec<String>>,
    changes: Mutex<Option<watch::Sender<u64>>>,
}

impl Checker {
    fn new() -> Arc<Checker> {
        let checker = Checker::default();
        *checker.changes.lock() = Some(watch::channel(0).0);
        Arc::new(checker)
    }

    fn note(&self, key: &str, rv: &str, what: &str) {
        if !self.seen.lock().insert((key.to_owned(), rv.to_owned())) {
            self.violations.lock().push(format!("{what} repeats {key}@{rv}"));
        }
    }

    fn changed(&self) {
        if let Some(changes) = &*self.changes.lock() {
            changes.send_modify(|c| *c += 1);
        }
    }

    async fn wait_for_view(&self, expected: &BTreeMap<String, String>) {
        let mut changes = self.changes.lock().as_ref().unwrap().subscribe();
        let reached = tokio::time::timeout(WAIT, async {
            loop {
                if &*self.view.lock() == expected {
                    return;
                }
                let _ = changes.changed().await;
            }
        })
        .await;
        if reached.is_err() {
            let view = self.view.lock().clone();
            panic!("the handler's view never matched the server:\n{}", diff(expected, &view));
        }
    }

    fn assert_no_violations(&self) {
        let violations = self.violations.lock();
        assert!(
            violations.is_empty(),
            "{} broken promises, first: {:?}",
            violations.len(),
            &violations[..violations.len().min(5)]
        );
    }
}

fn rv_of(object: &DynamicObject) -> String {
    object.resource_version().unwrap_or("").to_owned()
}

/// The trait is implemented for a local newtype, since `Arc<Checker>` is foreign.
struct CheckerHandler(Arc<Checker>);

impl EventHandler<DynamicObject> for CheckerHandler {
    fn on_add(&self, object: &Arc<DynamicObject>, _in_initial_list: bool) {
        self.0.note(&object.key(), &rv_of(object), "add");
        self.0.view.lock().insert(object.key(), rv_of(object));
        self.0.changed();
    }
    fn on_update(&self, old: &Arc<DynamicObject>, new: &Arc<DynamicObject>, cause: UpdateCause) {
        if cause == UpdateCause::Resync || rv_of(old) == rv_of(new) {
            self.0.violations.lock().push(format!("unrequested sync notification for {} ({cause:?})", new.key()));
            return;
        }
        self.0.note(&new.key(), &rv_of(new), "update");
        self.0.view.lock().insert(new.key(), rv_of(new));
        self.0.changed();
    }
    fn on_delete(&self, object: &DeletedObject<DynamicObject>) {
        match object {
            DeletedObject::Known(o) => self.0.note(&o.key(), &rv_of(o), "delete"),
            DeletedObject::FinalStateUnknown { key, .. } => self.0.tombstones.lock().push(key.clone()),
        }
        self.0.view.lock().remove(&object.key());
        self.0.changed();
    }
}

fn diff(expected: &BTreeMap<String, String>, actual: &BTreeMap<String, String>) -> String {
    let mut lines = Vec::new();
    for (key, rv) in expected {
        match actual.get(key) {
            None => lines.push(format!("missing {key}@{rv}")),
            Some(other) if other != rv => lines.push(format!("{key}: server {rv}, cache {other}")),
            _ => {}
        }
    }
    for (key, rv) in actual {
        if !expected.contains_key(key) {
            lines.push(format!("extra {key}@{rv}"));
        }
    }
    lines.truncate(20);
    lines.join("\n")
}

fn store_state(informer: &SharedInformer<DynamicObject>) -> BTreeMap<String, String> {
    informer.store().list().iter().map(|o| (o.key(), rv_of(o))).collect()
}

/// What the reflector reported, with a signal per report so tests can wait for one.
#[derive(Clone)]
struct Reports {
    list: Arc<Mutex<Vec<(Phase, Recovery, String)>>>,
    count: Arc<watch::Sender<usize>>,
}

impl Reports {
    fn new() -> Reports {
        Reports { list: Arc::default(), count: Arc::new(watch::channel(0).0) }
    }

    fn push(&self, report: &ReflectorError) {
        let mut list = self.list.lock();
        list.push((report.phase, report.recovery, report.error.to_string()));
        self.count.send_replace(list.len());
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Vec<(Phase, Recovery, String)>> {
        self.list.lock()
    }

    /// Waits until a report satisfies `matches`.
    async fn wait_for(&self, what: &str, matches: impl Fn(&(Phase, Recovery, String)) -> bool) {
        let mut count = self.count.subscribe();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                if self.list.lock().iter().any(&matches) {
                    return;
                }
                let _ = count.changed().await;
            }
        })
        .await;
        assert!(found.is_ok(), "never saw {what}; reports: {:?}", self.list.lock());
    }
}

struct Harness {
    informer: SharedInformer<DynamicObject>,
    checker: Arc<Checker>,
    reports: Reports,
    api: Api<DynamicObject>,
}

impl Harness {
    async fn start(client: &Client, name: &str, reflector: ReflectorConfig) -> Harness {
        let api = configmaps(client, "default");
        let reports = Reports::new();
        let sink = reports.clone();
        let reflector =
            ReflectorConfig { error_handler: Some(Arc::new(move |r: &ReflectorError| sink.push(r))), ..reflector };
        let informer = SharedInformer::new(api.clone(), InformerConfig { reflector, ..InformerConfig::default() });
        let checker = Checker::new();
        let registration = informer.add_event_handler(CheckerHandler(checker.clone())).unwrap();
        informer.start();
        assert!(informer.wait_for_sync(WAIT).await, "{name}: the informer never synced");
        assert!(registration.wait_synced(WAIT).await, "{name}: the handler never synced");
        Harness { informer, checker, reports, api }
    }

    /// Waits until the cache and the handler's view equal the server's state.
    async fn converge(&self, what: &str) {
        let expected = server_state(&self.api).await;
        let store = self.informer.store();
        let matched = store.wait_until(WAIT, |_| store_state(&self.informer) == expected).await;
        assert!(
            matched,
            "{what}: the cache never matched the server:\n{}\nreflector reports: {:?}",
            diff(&expected, &store_state(&self.informer)),
            self.reports.lock()
        );
        self.checker.wait_for_view(&expected).await;
        self.checker.assert_no_violations();
    }

    fn recoveries(&self) -> Vec<(Phase, Recovery)> {
        self.reports.lock().iter().map(|(p, r, _)| (*p, *r)).collect()
    }
}

async fn storms_converge(backend: Backend) {
    let server = Server::start("storms", backend, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    // Some state before the informer starts, so the first list has content.
    storm(&api, "before", 2, 10, 1).await;
    let harness = Harness::start(&client, "storms", fast_reflector("storms")).await;
    harness.converge("after the first list").await;
    storm(&api, "storm", 4, 25, 3).await;
    harness.converge("after the storm").await;
    assert!(harness.informer.store().len() > 30);
    harness.informer.stop();
}

#[tokio::test]
async fn informer_equals_the_server_after_storms_embedded() {
    storms_converge(Backend::Memory).await;
}

#[tokio::test]
async fn informer_equals_the_server_after_storms_etcd() {
    storms_converge(Backend::Etcd).await;
}

async fn forced_410(backend: Backend, streaming_list: bool) {
    let server = Server::start("forced-410", backend, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    let elsewhere = configmaps(&client, "kube-system");
    storm(&api, "before", 2, 10, 1).await;
    // A fixed 5 s backoff: the window in which the informer is not watching, below.
    let reflector = ReflectorConfig {
        streaming_list,
        // The reset ends the informer's watch, maybe less than a second after it opened with
        // no event yet; this test wants the re-watch (and its 410), not a very-short relist.
        very_short_watch: Duration::ZERO,
        backoff: listwatch_client::BackoffConfig {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(5),
            jitter: 0.0,
            ..Default::default()
        },
        ..fast_reflector("forced-410")
    };
    let harness = Harness::start(&client, "forced-410", reflector).await;
    harness.converge("after the first sync").await;

    // A write this informer does not watch (another namespace) moves the server past the
    // informer's resourceVersion, so after the watch cache is thrown away the informer's
    // re-watch is older than the new cache: 410, then a relist.
    elsewhere.create(&configmap("bump", "0")).await.unwrap();
    server.debug("cache/reset?resource=configmaps").await;
    harness
        .reports
        .wait_for("an in-stream 410", |(phase, recovery, error)| {
            *phase == Phase::Watching && *recovery == Recovery::Relist && error.contains("410")
        })
        .await;
    // The informer now waits 5 s before relisting and watches nothing: these deletes and
    // updates are only learnt from the relist, the deletes as final-state-unknown tombstones.
    for name in ["before-0-1", "before-1-1"] {
        write_retrying(&[404], || async { api.delete(name).await.map(|_| DynamicObject(json!({}))) }).await;
    }
    let patch = json!({"data": {"v": "changed"}});
    write_retrying(&[], || api.patch_merge("before-0-2", &patch)).await;
    harness.converge("after the relist").await;
    let mut tombstones = harness.checker.tombstones.lock().clone();
    tombstones.sort();
    assert_eq!(tombstones, ["default/before-0-1", "default/before-1-1"]);
    let relisted_by_stream = harness.recoveries().iter().any(|(_, r)| *r == Recovery::FallBackToList);
    assert!(!(streaming_list && relisted_by_stream), "streaming lists worked: {:?}", harness.reports.lock());

    // And again while writes go on.
    let writer = {
        let api = api.clone();
        tokio::spawn(async move { storm(&api, "during", 3, 10, 2).await })
    };
    elsewhere.create(&configmap("bump2", "0")).await.unwrap();
    server.debug("cache/reset?resource=configmaps").await;
    writer.await.unwrap();
    harness.converge("after a reset during writes").await;
    harness.informer.stop();
}

#[tokio::test]
async fn informer_recovers_from_forced_410_embedded() {
    forced_410(Backend::Memory, false).await;
}

#[tokio::test]
async fn informer_recovers_from_forced_410_etcd() {
    forced_410(Backend::Etcd, false).await;
}

#[tokio::test]
async fn streaming_list_informer_recovers_from_forced_410_embedded() {
    forced_410(Backend::Memory, true).await;
}

#[tokio::test]
async fn streaming_list_informer_recovers_from_forced_410_etcd() {
    forced_410(Backend::Etcd, true).await;
}

async fn streaming_list_sync(backend: Backend) {
    let server = Server::start("streaming", backend, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    storm(&api, "before", 2, 10, 1).await;
    let reflector = ReflectorConfig { streaming_list: true, ..fast_reflector("streaming") };
    let harness = Harness::start(&client, "streaming", reflector).await;
    harness.converge("after the streaming list").await;
    assert!(harness.reports.lock().is_empty(), "no fallback, no error: {:?}", harness.reports.lock());
    storm(&api, "after", 2, 10, 2).await;
    harness.converge("after more writes").await;
    harness.informer.stop();
}

#[tokio::test]
async fn streaming_list_sync_embedded() {
    streaming_list_sync(Backend::Memory).await;
}

#[tokio::test]
async fn streaming_list_sync_etcd() {
    streaming_list_sync(Backend::Etcd).await;
}

#[tokio::test]
async fn informer_survives_dropped_watchers_and_throttling() {
    let server = Server::start("drops", Backend::Memory, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    let harness = Harness::start(&client, "drops", fast_reflector("drops")).await;
    let writer = {
        let api = api.clone();
        tokio::spawn(async move { storm(&api, "dropped", 3, 20, 2).await })
    };
    for _ in 0..5 {
        server.debug("watchers/drop?resource=configmaps").await;
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    harness.converge("after dropped watchers").await;

    // The next requests are answered 429: writers retry, the informer backs off and re-watches.
    server.debug("throttle?count=6&retryAfterSeconds=1").await;
    server.debug("watchers/drop?resource=configmaps").await;
    storm(&api, "throttled", 1, 5, 1).await;
    harness.converge("after throttling").await;
    harness.informer.stop();
}

#[tokio::test]
async fn informer_survives_a_server_restart() {
    let mut server = Server::start("restart", Backend::Memory, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    storm(&api, "before", 2, 10, 1).await;
    let harness = Harness::start(&client, "restart", fast_reflector("restart")).await;
    harness.converge("before the restart").await;

    server.restart().await;
    storm(&api, "after", 2, 10, 2).await;
    harness.converge("after the restart").await;

    // Down while writes happen elsewhere is not possible with one server; restart again and
    // delete while the informer reconnects.
    server.restart().await;
    for name in ["after-0-1", "after-1-1"] {
        write_retrying(&[404], || async { api.delete(name).await.map(|_| DynamicObject(json!({}))) }).await;
    }
    harness.converge("after the second restart").await;
    harness.informer.stop();
}

#[tokio::test]
async fn informer_survives_an_etcd_restart() {
    let mut server = Server::start("etcd-restart", Backend::PrivateEtcd, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    storm(&api, "before", 2, 10, 1).await;
    let harness = Harness::start(&client, "etcd-restart", fast_reflector("etcd-restart")).await;
    harness.converge("before the etcd restart").await;

    let etcd = server.etcd.as_mut().expect("a private etcd");
    etcd.kill().await;
    etcd.restart().await;
    storm(&api, "after", 2, 10, 2).await;
    harness.converge("after the etcd restart").await;
    harness.informer.stop();
}

#[tokio::test]
async fn factory_shares_informers_and_late_handlers_get_the_cache() {
    let server = Server::start("factory", Backend::Memory, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        api.create(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}}),
        )
        .await
        .unwrap();
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace("default")
        .reflector_config(fast_reflector("factory"))
        .build();
    let dynamic = factory.dynamic(&ApiResource::configmaps());
    let again = factory.dynamic(&ApiResource::configmaps());
    let typed = factory.informer::<ConfigMap>();
    factory.start();
    assert!(factory.wait_for_cache_sync(WAIT).await);
    // The first LIST is at resourceVersion "0" (client-go's), which the watch cache may answer
    // from just before the creates: synced is not yet "has every object", so wait for them.
    let deadline = std::time::Instant::now() + WAIT;
    while dynamic.store().list().len() < 3 || typed.store().list().len() < 3 {
        assert!(std::time::Instant::now() < deadline, "the informers never held the three objects");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(Arc::ptr_eq(&dynamic.store().list()[0], &again.store().get(&dynamic.store().list()[0].key()).unwrap()));
    let web = LabelSelector::parse("app=web").unwrap();
    assert_eq!(dynamic.lister().namespace("default").list(&web).len(), 2);
    assert_eq!(typed.lister().namespace("default").get("c").unwrap().label("app"), Some("db"));

    let late = Checker::new();
    let registration = again.add_event_handler(CheckerHandler(late.clone())).unwrap();
    assert!(registration.wait_synced(WAIT).await);
    late.wait_for_view(&server_state(&api).await).await;
    api.delete("a").await.unwrap();
    late.wait_for_view(&server_state(&api).await).await;
    late.assert_no_violations();
    factory.shutdown();
}
