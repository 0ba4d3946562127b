//! CRD conversion webhooks: a CRD stored in `v1` (`spec.size`, a string) and served in `v2`
//! (`spec.replicas`, an integer) through a webhook in the test. GET, LIST and WATCH in `v2`
//! see converted objects, writes in `v2` are stored in `v1`; a webhook that fails or answers
//! objects of another kind gives kube's 500 on reads and nothing is written.

use std::time::Duration;

use serde_json::{Value, json};

use crate::admission::webhook_server::WebhookServer;
use crate::support::{Backend, Server, Watch, answer_until, assert_failure};

const V1: &str = "/apis/conv.example.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/conv.example.com/v2/namespaces/default/widgets";

fn crd(hooks: &WebhookServer, path: &str) -> Value {
    let version = |name: &str, storage: bool, spec: Value| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {
            "group": "conv.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                version("v1", true, json!({"size": {"type": "string"}})),
                version("v2", false, json!({"replicas": {"type": "integer"}})),
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
                "conversionReviewVersions": ["v1"],
            }},
        },
    })
}

/// GETs `path` until `ready` holds for the answer (a CRD's stores start after it is written).
async fn until(server: &Server, path: &str, ready: impl Fn(&(u16, Value)) -> bool) -> (u16, Value) {
    answer_until(|| server.get(path), ready).await
}

#[tokio::test]
async fn conversion_webhooks_serve_every_version_from_the_storage_version() {
    let hooks = WebhookServer::start().await;
    let server = Server::start("crd-conversion", Backend::Memory, &[]).await;
    let (code, _) =
        server.post_json("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd(&hooks, "/convert")).await;
    assert_eq!(code, 201);
    until(&server, V2, |got| got.0 == 200).await;

    // Written in v1, read in v2: converted by the webhook.
    let widget = json!({"apiVersion": "conv.example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": "3"}});
    assert_eq!(server.post_json(V1, &widget).await.0, 201);
    let (_, got) = until(&server, &format!("{V2}/a"), |got| got.0 == 200).await;
    assert_eq!(got["apiVersion"], "conv.example.com/v2");
    assert_eq!(got["spec"], json!({"replicas": 3}));
    assert_eq!(got["metadata"]["labels"]["converted-to"], "v2", "labels the webhook sets are kept");
    let sent = hooks.reviews_to("/convert");
    assert!(
        sent.iter().any(|r| r["desiredAPIVersion"] == "conv.example.com/v2" && r["objects"][0]["spec"]["size"] == "3")
    );

    // LIST and WATCH in v2.
    let (_, list) = server.get(V2).await;
    assert_eq!(list["apiVersion"], "conv.example.com/v2");
    assert_eq!(list["items"][0]["spec"], json!({"replicas": 3}));
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = Watch::open(&server, &format!("{V2}?watch=1&resourceVersion={rv}")).await;
    let mut updated = server.get(&format!("{V1}/a")).await.1;
    updated["spec"]["size"] = json!("5");
    let (code, _) = server.send("PUT", &format!("{V1}/a"), "application/json", updated.to_string()).await;
    assert_eq!(code, 200);
    let event = watch.next(Duration::from_secs(30)).await.expect("an event");
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["apiVersion"], "conv.example.com/v2");
    assert_eq!(event["object"]["spec"], json!({"replicas": 5}));

    // Written in v2, stored in v1.
    let widget = json!({"apiVersion": "conv.example.com/v2", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"replicas": 7}});
    let (code, created) = server.post_json(V2, &widget).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"], json!({"replicas": 7}));
    let (_, stored) = until(&server, &format!("{V1}/b"), |got| got.0 == 200).await;
    assert_eq!((&stored["apiVersion"], &stored["spec"]), (&json!("conv.example.com/v1"), &json!({"size": "7"})));

    // A webhook that fails: reads in v2 are kube's 500, and a write in v2 stores nothing.
    let mut failing = crd(&hooks, "/convert-fail");
    let (_, current) =
        server.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.conv.example.com").await;
    failing["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.conv.example.com";
    assert_eq!(server.send("PUT", path, "application/json", failing.to_string()).await.0, 200);
    let refused = until(&server, &format!("{V2}/a"), |got| got.0 == 500).await;
    assert_failure(&refused, 500, "InternalError");
    assert_eq!(
        refused.1["message"],
        "Internal error occurred: conversion webhook for conv.example.com/v1, Kind=Widget failed: cannot convert today"
    );
    let widget = json!({"apiVersion": "conv.example.com/v2", "kind": "Widget", "metadata": {"name": "c"}, "spec": {"replicas": 1}});
    let (code, _) = server.post_json(V2, &widget).await;
    assert_eq!(code, 500);
    assert_eq!(server.get(&format!("{V1}/c")).await.0, 404, "nothing written");
    // v1, the storage version, needs no webhook.
    assert_eq!(server.get(&format!("{V1}/a")).await.0, 200);

    // A webhook answering objects of another kind.
    let mut wrong = crd(&hooks, "/convert-kind");
    let (_, current) = server.get(path).await;
    wrong["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    assert_eq!(server.send("PUT", path, "application/json", wrong.to_string()).await.0, 200);
    let refused = until(&server, &format!("{V2}/a"), |got| {
        got.0 == 500 && got.1["message"].as_str().is_some_and(|m| m.contains("invalid kind"))
    })
    .await;
    assert_eq!(
        refused.1["message"],
        "Internal error occurred: conversion webhook for conv.example.com/v1, Kind=Widget returned invalid converted object at index 0: invalid kind (expected Widget, received Other)"
    );
}
