//! The handle's own promises: bad CRDs fail `start` with the file and kube's message, a fault
//! on a resource that is not served is an error, servers run side by side isolated, the audit
//! read from the handle catches a client that skips events, and listwatch's own reflector runs
//! against it as any client does.

use std::time::Duration;

use futures::StreamExt;

use listwatch_client::{Api, ApiResource, DynamicObject, ListParams, WatchParams};
use listwatch_testserver::{Error, Rule, TestServer};

#[tokio::test]
async fn a_crd_file_that_does_not_parse_fails_start_with_the_file() {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("broken.yaml");
    std::fs::write(&path, "kind: CustomResourceDefinition\nspec: [unclosed\n").expect("write");
    let error = TestServer::builder().crd_file(&path).start().await.err().expect("start must fail");
    assert!(matches!(error, Error::CrdFile { .. }), "{error}");
    assert!(error.to_string().contains("broken.yaml"), "{error}");
}

#[tokio::test]
async fn a_crd_the_server_refuses_fails_start_with_kubes_message() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: wrong.example.com}\n\
               spec: {group: example.com, scope: Namespaced, names: {plural: gadgets, kind: Gadget}, versions: []}\n";
    let error = TestServer::builder().crd_yaml(crd).start().await.err().expect("start must fail");
    let Error::CrdRefused { name, message, .. } = &error else { panic!("{error}") };
    assert_eq!(name, "wrong.example.com");
    assert!(message.contains("metadata.name"), "kube's validation message, got {message}");
}

#[tokio::test]
async fn a_fault_on_a_resource_not_served_is_an_error() {
    let server = TestServer::start().await.expect("start");
    let error = server.faults().drop_watches("gadgets.example.com").expect_err("not served");
    assert!(error.to_string().contains("gadgets.example.com"), "{error}");
    assert!(server.faults().reset_cache("nosuchthings").await.is_err());
    server.faults().drop_watches("pods").expect("pods are served");
}

#[tokio::test]
async fn servers_side_by_side_are_isolated() {
    let (a, b) = tokio::join!(TestServer::start(), TestServer::start());
    let (a, b) = (a.expect("a"), b.expect("b"));
    assert_ne!(a.url(), b.url());
    let configmaps = |server: &TestServer| {
        Api::<DynamicObject>::new(server.listwatch_client(), ApiResource::configmaps(), Some("default"))
    };
    configmaps(&a)
        .create(&serde_json::json!({"metadata": {"name": "only-in-a"}, "data": {}}))
        .await
        .expect("create in a");
    assert_eq!(configmaps(&b).list(&ListParams::default()).await.expect("list b").items.len(), 0);
    assert_eq!(configmaps(&a).list(&ListParams::default()).await.expect("list a").items.len(), 1);
    let kubeconfig = a.kubeconfig().to_path_buf();
    assert!(kubeconfig.exists());
    drop(a);
    assert!(!kubeconfig.exists(), "the kubeconfig is removed with the server");
}

/// A client that resumes a watch from a later resourceVersion than it was sent skips the
/// changes between: the audit, read from the handle, names it.
#[tokio::test]
async fn the_audit_catches_a_client_that_skips_events() {
    let server = TestServer::start().await.expect("start");
    let api = Api::<DynamicObject>::new(server.listwatch_client(), ApiResource::configmaps(), Some("default"));
    let listed = api.list(&ListParams::default()).await.expect("list");
    let from = listed.metadata.resource_version.clone();
    let mut stream = api.watch(&WatchParams { resource_version: from, ..Default::default() }).await.expect("watch");
    api.create(&serde_json::json!({"metadata": {"name": "seen"}})).await.expect("create");
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("an event");
    drop(stream);
    for i in 0..3 {
        api.create(&serde_json::json!({"metadata": {"name": format!("skipped-{i}")}})).await.expect("create");
    }
    // The bug: resume from "now", read off a write elsewhere (not a LIST of the watch's scope).
    let elsewhere =
        Api::<DynamicObject>::new(server.listwatch_client(), ApiResource::configmaps(), Some("kube-system"));
    let written = elsewhere.create(&serde_json::json!({"metadata": {"name": "elsewhere"}})).await.expect("create");
    let skipping = written.0["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
    let _skipping_watch =
        api.watch(&WatchParams { resource_version: skipping, ..Default::default() }).await.expect("watch");
    let report = server.audit();
    assert!(report.findings.iter().any(|f| f.rule == Rule::MissedEvents), "{:#?}", report.findings);
}
