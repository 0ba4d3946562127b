//! The client against a real listwatch server (the built binary), on the embedded store and on
//! etcd: the verbs and their typed errors, every watch transport and encoding, and informers
//! that must end up equal to the server after storms of writes, forced 410s, dropped watchers,
//! 429s, server restarts and etcd restarts — without ever telling a handler twice about the same
//! resourceVersion of an object.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use listwatch_client::{
    Api, ApiResource, Client, DeleteParams, DeletedObject, DynamicObject, Encoding, EventHandler, HttpVersion,
    InformerConfig, LabelSelector, ListParams, Object, ObjectMeta, Patch, Phase, Preconditions, PropagationPolicy,
    Recovery, ReflectorConfig, ReflectorError, RetryWatcher, RetryWatcherConfig, SharedInformer, SharedInformerFactory,
    UpdateCause, WatchEvent, WatchParams, WatchTransport, impl_resource,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::{
    Backend, Server, WAIT, configmap, configmaps, fast_reflector, server_state, storm, while_throttled, write_retrying,
};
use tokio::sync::watch;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct ConfigMap {
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    metadata: ObjectMeta,
    #[serde(default)]
    data: BTreeMap<String, String>,
}

impl_resource!(ConfigMap, group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true);

fn typed(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
        data: [("v".to_owned(), value.to_owned())].into(),
    }
}

// ---- verbs, errors, encodings, transports --------------------------------------------------

#[tokio::test]
async fn verbs_return_objects_and_typed_errors() {
    let server = Server::start("verbs", Backend::Memory, &[]).await;
    let client = server.client();
    assert_eq!(client.default_namespace(), "default");
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());

    let created = api.create(&typed("a", "1")).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    let fetched = api.get("a").await.unwrap();
    assert_eq!(fetched.data["v"], "1");
    assert_eq!(fetched.resource_version(), created.resource_version());

    let duplicate = api.create(&typed("a", "2")).await.unwrap_err();
    assert_eq!(duplicate.code(), Some(409));
    assert_eq!(duplicate.status().unwrap().reason, "AlreadyExists");

    let mut stale = fetched.clone();
    stale.data.insert("v".into(), "2".into());
    api.replace("a", &stale).await.unwrap();
    let conflict = api.replace("a", &stale).await.unwrap_err();
    assert_eq!((conflict.code(), conflict.status().unwrap().reason.as_str()), (Some(409), "Conflict"));

    let patched = api.patch_merge("a", &json!({"metadata": {"labels": {"app": "web"}}})).await.unwrap();
    assert_eq!(patched.label("app"), Some("web"));

    let missing = api.get("nope").await.unwrap_err();
    assert_eq!((missing.code(), missing.status().unwrap().reason.as_str()), (Some(404), "NotFound"));
    assert!(api.get_opt("nope").await.unwrap().is_none());

    let bad = api.list(&ListParams::default().at("abc")).await.unwrap_err();
    assert_eq!(bad.code(), Some(400), "{bad}");
    let invalid = api
        .list(&ListParams {
            resource_version_match: Some(listwatch_client::VersionMatch::Exact),
            ..ListParams::default()
        })
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), Some(422), "{invalid}");

    api.delete("a").await.unwrap();
    assert_eq!(api.delete("a").await.unwrap_err().code(), Some(404));

    let all: Api<ConfigMap> = Api::all(client);
    assert!(all.get("x").await.is_err(), "a namespaced object needs a namespace");
}

#[tokio::test]
async fn patch_types_subresources_and_delete_options() {
    let server = Server::start("subresources", Backend::Memory, &[]).await;
    let client = server.client();
    let deployments: Api<DynamicObject> = Api::new(client.clone(), ApiResource::deployments(), Some("default"));
    let labels = json!({"app": "web"});
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}]}}},
    });
    deployments.create(&deployment).await.unwrap();

    // Strategic merge patch merges containers by name; a JSON patch addresses by index.
    let patch =
        Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "log", "image": "alpine"}]}}}}));
    let patched = deployments.patch("web", &patch).await.unwrap();
    let containers = patched.pointer("/spec/template/spec/containers").unwrap();
    assert_eq!(containers, &json!([{"name": "web", "image": "nginx"}, {"name": "log", "image": "alpine"}]));
    let patch =
        Patch::Json(json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}]));
    let patched = deployments.patch("web", &patch).await.unwrap();
    assert_eq!(patched.pointer("/spec/template/spec/containers/0/image"), Some(&json!("nginx:2")));
    let generation = patched.pointer("/metadata/generation").cloned();

    // The status subresource changes only .status, and not the generation.
    let status = deployments.patch_status("web", &Patch::Merge(json!({"status": {"readyReplicas": 1}}))).await.unwrap();
    assert_eq!(status.pointer("/status/readyReplicas"), Some(&json!(1)));
    assert_eq!(status.pointer("/metadata/generation").cloned(), generation);
    let mut ignored = deployments.get_status("web").await.unwrap();
    ignored.0["status"]["readyReplicas"] = json!(1);
    ignored.0["spec"]["replicas"] = json!(5);
    let replaced = deployments.replace_status("web", &ignored).await.unwrap();
    assert_eq!(replaced.pointer("/spec/replicas"), Some(&json!(1)), "a status write leaves the spec");

    // The scale subresource reads and writes .spec.replicas.
    assert_eq!(deployments.get_scale("web").await.unwrap().spec.replicas, Some(1));
    let scaled = deployments.scale("web", 3).await.unwrap();
    assert_eq!(scaled.spec.replicas, Some(3));
    assert_eq!(deployments.get("web").await.unwrap().pointer("/spec/replicas"), Some(&json!(3)));
    let configmaps: Api<DynamicObject> = Api::new(client.clone(), ApiResource::configmaps(), Some("default"));
    configmaps.create(&configmap("plain", "1")).await.unwrap();
    assert_eq!(configmaps.get_scale("plain").await.unwrap_err().code(), Some(404), "configmaps have no scale");

    // Preconditions guard a delete; a pod deleted with grace 0 is gone at once.
    let wrong = DeleteParams {
        preconditions: Some(Preconditions { uid: Some("not-its-uid".into()), resource_version: None }),
        ..DeleteParams::default()
    };
    let conflict = configmaps.delete_with("plain", &wrong).await.unwrap_err();
    assert_eq!(conflict.code(), Some(409), "{conflict}");
    let uid = configmaps.get("plain").await.unwrap().uid().unwrap().to_owned();
    let right = DeleteParams { preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }), ..wrong };
    configmaps.delete_with("plain", &right).await.unwrap();
    assert!(configmaps.get_opt("plain").await.unwrap().is_none());

    let pods: Api<DynamicObject> = Api::new(client, ApiResource::pods(), Some("default"));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}});
    pods.create(&pod).await.unwrap();
    pods.delete("p").await.unwrap();
    let terminating = pods.get("p").await.unwrap();
    assert!(
        terminating.pointer("/metadata/deletionTimestamp").is_some(),
        "a plain delete of a scheduled pod is graceful"
    );
    pods.delete_with("p", &DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() }).await.unwrap();
    assert!(pods.get_opt("p").await.unwrap().is_none(), "grace 0 removes it at once");

    // Orphan: the dependent stays and loses its owner reference.
    deployments
        .create(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "owner"},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
        .await
        .unwrap();
    let owner_uid = deployments.get("owner").await.unwrap().uid().unwrap().to_owned();
    let mut dependent = configmap("dependent", "1");
    dependent["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "owner", "uid": owner_uid}]);
    configmaps.create(&dependent).await.unwrap();
    let orphan = DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..DeleteParams::default() };
    deployments.delete_with("owner", &orphan).await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let gone = deployments.get_opt("owner").await.unwrap().is_none();
        let dependent = configmaps.get("dependent").await.unwrap();
        if gone && dependent.pointer("/metadata/ownerReferences").is_none() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "orphaning did not finish: {dependent:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn lists_page_and_decode_the_same_as_json_and_protobuf() {
    let server = Server::start("paging", Backend::Memory, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    for i in 0..7 {
        api.create(&configmap(&format!("p{i}"), &i.to_string())).await.unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    let mut pages = 0;
    loop {
        let page = api.list(&params).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|o| o.name().to_owned()));
        match page.metadata.continue_token() {
            Some(token) => params.continue_token = Some(token.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>());

    let json_list = api.list(&ListParams::default()).await.unwrap();
    let proto_api = api.clone().with_encoding(Encoding::Protobuf);
    let proto_list = proto_api.list(&ListParams::default()).await.unwrap();
    assert_eq!(proto_list.metadata.resource_version, json_list.metadata.resource_version);
    assert_eq!(proto_list.items.len(), 7);
    for (j, p) in json_list.items.iter().zip(&proto_list.items) {
        assert_eq!(
            (j.key(), j.resource_version(), j.pointer("/data/v")),
            (p.key(), p.resource_version(), p.pointer("/data/v"))
        );
    }
    let one = proto_api.get("p3").await.unwrap();
    assert_eq!(one.pointer("/data/v").and_then(|v| v.as_str()), Some("3"));
    let missing = proto_api.get("nope").await.unwrap_err();
    assert_eq!(missing.status().unwrap().reason, "NotFound");

    let typed_proto: Api<ConfigMap> = Api::namespaced(client, "default").with_encoding(Encoding::Protobuf);
    assert_eq!(typed_proto.get("p5").await.unwrap().data["v"], "5");
}

/// What a watch delivered, comparably: (type, name, resourceVersion).
async fn collect_watch(api: &Api<DynamicObject>, from: &str, until: usize) -> Vec<(String, String, String)> {
    let params = WatchParams { timeout: Some(Duration::from_secs(30)), ..WatchParams::default().at(from) };
    let mut stream = api.watch(&params).await.unwrap_or_else(|e| panic!("watch via {api:?}: {e}"));
    let mut seen = Vec::new();
    while seen.len() < until {
        let event = tokio::time::timeout(WAIT, stream.next()).await.expect("an event in time").expect("open").unwrap();
        let (kind, object) = match event {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(status) => panic!("watch error: {status}"),
        };
        seen.push((kind.to_owned(), object.name().to_owned(), object.resource_version().unwrap_or("").to_owned()));
    }
    seen
}

#[tokio::test]
async fn every_watch_transport_and_encoding_sees_the_same_events() {
    let server = Server::start("transports", Backend::Memory, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    let start = api.list(&ListParams::default()).await.unwrap().metadata.resource_version;
    api.create(&configmap("w", "0")).await.unwrap();
    for v in 1..=3 {
        api.patch_merge("w", &json!({"data": {"v": v.to_string()}})).await.unwrap();
    }
    api.delete("w").await.unwrap();

    let reference = collect_watch(&api, &start, 5).await;
    let kinds: Vec<&str> = reference.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]);

    let h2c =
        Client::new(listwatch_client::Config { http_version: HttpVersion::Http2Only, ..server.config() }).unwrap();
    let h1 = Client::new(listwatch_client::Config { http_version: HttpVersion::Http1Only, ..server.config() }).unwrap();
    let variants = [
        ("protobuf", api.clone().with_encoding(Encoding::Protobuf)),
        ("h2c", configmaps(&h2c, "default")),
        ("h2c protobuf", configmaps(&h2c, "default").with_encoding(Encoding::Protobuf)),
        ("http/1.1", configmaps(&h1, "default")),
        ("websocket", api.clone().with_watch_transport(WatchTransport::WebSocket)),
        (
            "websocket protobuf",
            api.clone().with_watch_transport(WatchTransport::WebSocket).with_encoding(Encoding::Protobuf),
        ),
    ];
    for (name, variant) in variants {
        assert_eq!(collect_watch(&variant, &start, 5).await, reference, "{name}");
    }
}

#[tokio::test]
async fn watch_errors_arrive_as_statuses() {
    let server = Server::start("watch-errors", Backend::Memory, &[]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    api.create(&configmap("x", "0")).await.unwrap();
    let rv = api.list(&ListParams::default()).await.unwrap().metadata.resource_version;
    server.debug("cache/reset?resource=configmaps").await;
    for transport in [WatchTransport::Http, WatchTransport::WebSocket] {
        for encoding in [Encoding::Json, Encoding::Protobuf] {
            let variant = api.clone().with_watch_transport(transport).with_encoding(encoding);
            // The history before the reset is gone: a watch from an older RV gets a 410 ERROR.
            let old = (rv.parse::<u64>().unwrap() - 1).to_string();
            // Right after the reset the cache is rebuilding and answers 429 for a moment.
            let params = WatchParams::default().at(&old);
            let mut stream = while_throttled(|| variant.watch(&params)).await.unwrap();
            let event = tokio::time::timeout(WAIT, stream.next()).await.unwrap().unwrap().unwrap();
            let WatchEvent::Error(status) = event else { panic!("{transport:?} {encoding:?}: {event:?}") };
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"), "{transport:?} {encoding:?}");
            assert!(tokio::time::timeout(WAIT, stream.next()).await.unwrap().is_none(), "the stream ends after ERROR");
        }
    }
    // A WebSocket refused before the upgrade keeps the server's Status.
    let bad = api.clone().with_watch_transport(WatchTransport::WebSocket);
    let params = WatchParams { field_selector: Some("nope=1".into()), ..WatchParams::default() };
    let refused = match while_throttled(|| bad.watch(&params)).await {
        Err(e) => e,
        Ok(_) => panic!("a bad field selector is refused"),
    };
    assert_eq!(refused.code(), Some(400), "{refused}");
}

// ---- informers -------------------------------------------------------------------------------

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

// ---- RetryWatcher ---------------------------------------------------------------------------

#[tokio::test]
async fn retry_watcher_follows_across_stream_ends_and_stops_at_410() {
    let server = Server::start("retry-watcher", Backend::Memory, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    assert!(RetryWatcher::new(api.clone(), "0", RetryWatcherConfig::default()).is_err());
    assert!(RetryWatcher::new(api.clone(), "", RetryWatcherConfig::default()).is_err());
    let start = api.list(&ListParams::default()).await.unwrap().metadata.resource_version;
    let config = RetryWatcherConfig {
        min_restart_delay: Duration::from_millis(100),
        timeout: Some(Duration::from_secs(2)),
        ..RetryWatcherConfig::default()
    };
    let mut watcher = RetryWatcher::new(api.clone(), &start, config).unwrap();

    let writes = 12;
    for i in 0..writes {
        api.create(&configmap(&format!("r{i}"), "0")).await.unwrap();
        if i % 4 == 3 {
            server.debug("watchers/drop?resource=configmaps").await;
        }
    }
    let mut names = Vec::new();
    let mut last_rv = start.parse::<u64>().unwrap();
    while names.len() < writes {
        let event = tokio::time::timeout(WAIT, watcher.next()).await.expect("an event in time").expect("open");
        let WatchEvent::Added(object) = event else { panic!("unexpected {event:?}") };
        let rv: u64 = object.resource_version().unwrap().parse().unwrap();
        assert!(rv > last_rv, "resourceVersions only grow: {rv} after {last_rv}");
        last_rv = rv;
        names.push(object.name().to_owned());
    }
    assert_eq!(names, (0..writes).map(|i| format!("r{i}")).collect::<Vec<_>>());

    // Idle through a few server timeouts: bookmarks advance the RV and are not passed on.
    let quiet = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await;
    assert!(quiet.is_err(), "nothing to deliver: {quiet:?}");
    assert!(watcher.resource_version().parse::<u64>().unwrap() >= last_rv);

    // A RetryWatcher from before a reset of the history gets a 410, passes it on and stops.
    server.debug("cache/reset?resource=configmaps").await;
    let config = RetryWatcherConfig { min_restart_delay: Duration::from_millis(100), ..RetryWatcherConfig::default() };
    let mut stale = RetryWatcher::new(api.clone(), &start, config).unwrap();
    let mut got_410 = false;
    while let Some(event) = tokio::time::timeout(WAIT, stale.next()).await.expect("the watcher ends in time") {
        match event {
            WatchEvent::Error(status) => {
                assert_eq!(status.code, 410);
                got_410 = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(got_410, "the watcher stopped after a 410");
}
