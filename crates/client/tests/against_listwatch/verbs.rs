//! The verbs and their typed errors, list paging, and every watch transport and encoding, each
//! checked against what the server stores.

use std::time::Duration;

use futures::StreamExt;
use listwatch_client::{
    Api, ApiResource, Client, DeleteParams, DynamicObject, Encoding, HttpVersion, ListParams, Object, Patch,
    Preconditions, PropagationPolicy, WatchEvent, WatchParams, WatchTransport,
};
use serde_json::json;

use crate::support::{Backend, Server, WAIT, configmap, configmaps, while_throttled};
use crate::{ConfigMap, typed};

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
    let names_and_images: Vec<_> = containers.as_array().unwrap().iter().map(|c| (&c["name"], &c["image"])).collect();
    assert_eq!(names_and_images, [(&json!("web"), &json!("nginx")), (&json!("log"), &json!("alpine"))]);
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
    let Err(refused) = while_throttled(|| bad.watch(&params)).await else {
        panic!("a bad field selector is refused");
    };
    assert_eq!(refused.code(), Some(400), "{refused}");
}
