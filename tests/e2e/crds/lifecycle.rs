//! A CRD's life as clients see it: names that conflict are not accepted and not served; a
//! deleted CRD terminates (creates refused, instances deleted, their finalizers honoured)
//! before it goes; several versions with conversion `None`; a default added to the schema
//! shows on objects already stored; cluster-scoped custom resources.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    CRD_NAME, CRDS, CRONTABS, condition, crd_json, crontab, install, install_crd, post_for_headers, wait_until,
};
use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, assert_status};

on_both_backends!(
    conflicting_names_are_not_served,
    a_deleted_crd_terminates_then_goes,
    versions_convert_with_none,
    defaults_apply_on_read,
    cluster_scoped_custom_resources,
    custom_resources_own_objects,
    namespace_deletion_deletes_custom_resources,
);

async fn conflicting_names_are_not_served(backend: Backend) {
    let server = Server::start("crd-names", backend, &[]).await;
    install(&server).await;
    // Another CRD of the group wants the short name `ct`.
    let mut rival = crd_json();
    rival["metadata"]["name"] = json!("crontables.stable.example.com");
    rival["spec"]["names"] = json!({"plural": "crontables", "kind": "CronTable", "shortNames": ["ct"]});
    let (code, _) = server.post_json(CRDS, &rival).await;
    assert_eq!(code, 201);
    let crd = wait_until(Duration::from_secs(5), || async {
        let (_, crd) = server.get(&format!("{CRDS}/crontables.stable.example.com")).await;
        condition(&crd, "NamesAccepted").is_some().then_some(crd)
    })
    .await;
    let accepted = condition(&crd, "NamesAccepted").unwrap();
    assert_eq!(
        (&accepted["status"], &accepted["reason"], &accepted["message"]),
        (&json!("False"), &json!("ShortNamesConflict"), &json!("\"ct\" is already in use"))
    );
    let established = condition(&crd, "Established").unwrap();
    assert_eq!((&established["status"], &established["reason"]), (&json!("False"), &json!("NotAccepted")));
    // Neither NamesAccepted nor Established: its URLs do not answer (spec §1.4).
    let (code, _) = server.get("/apis/stable.example.com/v1/namespaces/default/crontables").await;
    assert_eq!(code, 404);
    let (_, list) = server.get("/apis/stable.example.com/v1").await;
    assert!(!list.to_string().contains("crontables"), "{list}");
}

async fn a_deleted_crd_terminates_then_goes(backend: Backend) {
    let server = Server::start("crd-terminate", backend, &[]).await;
    let installed = install(&server).await;
    server.post_json(CRONTABS, &crontab("plain")).await;
    let mut held = crontab("held");
    held["metadata"]["finalizers"] = json!(["test/hold"]);
    server.post_json(CRONTABS, &held).await;
    let rv = installed["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut crd_watch = Watch::open(&server, &format!("{CRDS}?watch=1&resourceVersion={rv}")).await;
    let (_, listed) = server.get(CRONTABS).await;
    let crs_rv = listed["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut cr_watch = Watch::open(&server, &format!("{CRONTABS}?watch=1&resourceVersion={crs_rv}")).await;

    // §7 #15: the delete only marks the CRD.
    let (code, marked) = server.send("DELETE", &format!("{CRDS}/{CRD_NAME}"), "application/json", "").await;
    assert_eq!(code, 200, "{marked}");
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{marked}");
    assert_eq!(marked["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]));
    let terminating = condition(&marked, "Terminating").unwrap();
    assert_eq!((&terminating["status"], &terminating["reason"]), (&json!("True"), &json!("InstanceDeletionPending")));
    // Creates are refused; reads go on.
    let got = server.post_json(CRONTABS, &crontab("late")).await;
    assert_status(&got, 405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating");
    let deleted = wait_until(Duration::from_secs(10), || async {
        let (_, list) = server.get(CRONTABS).await;
        let names: Vec<String> =
            list["items"].as_array()?.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()).collect();
        (names == ["held"]).then_some(list)
    })
    .await;
    assert!(deleted["items"][0]["metadata"]["deletionTimestamp"].is_string(), "{deleted}");
    let (_, discovery) = server.get("/apis/stable.example.com/v1").await;
    assert_eq!(discovery["resources"][0]["verbs"], json!(["delete", "deletecollection", "get", "list", "watch"]));
    // The held instance keeps the CRD until its finalizer goes.
    let (code, _) = server
        .send(
            "PATCH",
            &format!("{CRONTABS}/held"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(code, 200);
    let mut cr_events = Vec::new();
    while cr_events.iter().filter(|(t, _): &&(String, String)| t == "DELETED").count() < 2 {
        let Some(event) = cr_watch.next(Duration::from_secs(10)).await else { break };
        cr_events.push((
            event["type"].as_str().unwrap().to_owned(),
            event["object"]["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        ));
    }
    let deletions: Vec<&str> = cr_events.iter().filter(|(t, _)| t == "DELETED").map(|(_, n)| n.as_str()).collect();
    assert_eq!(deletions, ["plain", "held"], "{cr_events:?}");
    // The finalizer controller says it is deleting the instances; the write that removes
    // its finalizer deletes the CRD, so the DELETED event carries the state before it.
    let mut reasons = Vec::new();
    loop {
        let event = crd_watch.next(Duration::from_secs(10)).await.expect("the CRD's watch goes on");
        let reason = condition(&event["object"], "Terminating").map(|c| c["reason"].as_str().unwrap().to_owned());
        reasons.push((event["type"].as_str().unwrap().to_owned(), reason.unwrap_or_default()));
        if event["type"] == "DELETED" {
            break;
        }
    }
    let (last_type, last_reason) = reasons.last().unwrap();
    assert_eq!((last_type.as_str(), last_reason.as_str()), ("DELETED", "InstanceDeletionInProgress"), "{reasons:?}");
    assert!(reasons.iter().any(|(t, r)| t == "MODIFIED" && r == "InstanceDeletionPending"), "{reasons:?}");
    // The server stops serving the resource when its controller sees the CRD's deletion,
    // which may come a moment after this watch saw it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.get(CRONTABS).await.0 != 404 {
        assert!(tokio::time::Instant::now() < deadline, "the custom resource is still served after its CRD went");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, groups) = server.get("/apis").await;
    assert!(!groups.to_string().contains("stable.example.com"), "{groups}");
}

/// The fixture in two versions: v1beta1 (deprecated) and v1 (storage).
fn two_versions() -> Value {
    let mut crd = crd_json();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    beta["deprecated"] = json!(true);
    crd["spec"]["versions"].as_array_mut().unwrap().insert(0, beta);
    crd
}

async fn versions_convert_with_none(backend: Backend) {
    let server = Server::start("crd-versions", backend, &[]).await;
    install_crd(&server, &two_versions()).await;
    let (_, group) = server.get("/apis/stable.example.com").await;
    let versions: Vec<&str> =
        group["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    let beta = "/apis/stable.example.com/v1beta1/namespaces/default/crontabs";
    let mut body = crontab("old");
    body["apiVersion"] = json!("stable.example.com/v1beta1");
    let response = post_for_headers(&server, beta, &body).await;
    assert_eq!(response.status(), 201);
    assert_eq!(
        response.headers().get("warning").and_then(|v| v.to_str().ok()),
        Some(r#"299 - "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab""#)
    );
    // One object, read in either version: conversion None rewrites only apiVersion.
    let (_, as_v1) = server.get(&format!("{CRONTABS}/old")).await;
    let (_, as_beta) = server.get(&format!("{beta}/old")).await;
    assert_eq!(
        (&as_v1["apiVersion"], &as_beta["apiVersion"]),
        (&json!("stable.example.com/v1"), &json!("stable.example.com/v1beta1"))
    );
    assert_eq!(as_v1["spec"], as_beta["spec"]);
    assert_eq!(as_v1["metadata"]["resourceVersion"], as_beta["metadata"]["resourceVersion"]);
    let (_, crd) = server.get(&format!("{CRDS}/{CRD_NAME}")).await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

async fn defaults_apply_on_read(backend: Backend) {
    let server = Server::start("crd-default-read", backend, &[]).await;
    let installed = install(&server).await;
    server.post_json(CRONTABS, &crontab("d")).await;
    let (_, before) = server.get(&format!("{CRONTABS}/d")).await;
    assert!(before["spec"].get("timezone").is_none());
    // A new defaulted field: objects already stored show it, without being written.
    let mut crd = installed.clone();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["timezone"] =
        json!({"type": "string", "default": "UTC"});
    let (code, updated) = server.send("PUT", &format!("{CRDS}/{CRD_NAME}"), "application/json", crd.to_string()).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["metadata"]["generation"], 2);
    let after = wait_until(Duration::from_secs(5), || async {
        let (_, after) = server.get(&format!("{CRONTABS}/d")).await;
        (after["spec"]["timezone"] == "UTC").then_some(after)
    })
    .await;
    assert_eq!(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
    let (_, list) = server.get(CRONTABS).await;
    assert_eq!(list["items"][0]["spec"]["timezone"], "UTC", "lists are defaulted too: {list}");
}

async fn cluster_scoped_custom_resources(backend: Backend) {
    let server = Server::start("crd-cluster", backend, &[]).await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {"group": "example.org", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    install_crd(&server, &crd).await;
    let widgets = "/apis/example.org/v1alpha1/widgets";
    let body = json!({"apiVersion": "example.org/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}, "anything": {"goes": 1}});
    let (code, created) = server.post_json(widgets, &body).await;
    assert_eq!(code, 201, "{created}");
    assert!(created["metadata"].get("namespace").is_none());
    assert_eq!(created["anything"], json!({"goes": 1}), "preserved unknown fields are kept");
    let (code, _) = server.get("/apis/example.org/v1alpha1/namespaces/default/widgets/w").await;
    assert_eq!(code, 404, "no namespaced route for a cluster-scoped resource");
    let (_, list) = server.get("/apis/example.org/v1alpha1").await;
    assert_eq!(list["resources"][0]["namespaced"], false);
}

/// The garbage collector follows custom resources as owners: deleting one deletes what it owns.
async fn custom_resources_own_objects(backend: Backend) {
    let server = Server::start("crd-gc", backend, &[]).await;
    install(&server).await;
    let (_, owner) = server.post_json(CRONTABS, &crontab("owner")).await;
    let reference = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": "owner",
        "uid": owner["metadata"]["uid"], "controller": true});
    let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "child", "ownerReferences": [reference]}, "data": {"a": "b"}});
    let (code, _) = server.post_json("/api/v1/namespaces/default/configmaps", &child).await;
    assert_eq!(code, 201);
    let (code, _) = server.send("DELETE", &format!("{CRONTABS}/owner"), "application/json", "").await;
    assert_eq!(code, 200);
    wait_until(Duration::from_secs(10), || async {
        let (code, _) = server.get("/api/v1/namespaces/default/configmaps/child").await;
        (code == 404).then_some(())
    })
    .await;
}

/// A namespace being deleted takes its custom resources with it, then goes.
async fn namespace_deletion_deletes_custom_resources(backend: Backend) {
    let server = Server::start("crd-namespace", backend, &[]).await;
    install(&server).await;
    let (code, _) = server.post_json("/api/v1/namespaces", &json!({"metadata": {"name": "team"}})).await;
    assert_eq!(code, 201);
    let team = "/apis/stable.example.com/v1/namespaces/team/crontabs";
    let (code, _) = server.post_json(team, &crontab("inside")).await;
    assert_eq!(code, 201);
    let (code, _) = server.send("DELETE", "/api/v1/namespaces/team", "application/json", "").await;
    assert_eq!(code, 200);
    wait_until(Duration::from_secs(10), || async {
        let (code, _) = server.get("/api/v1/namespaces/team").await;
        (code == 404).then_some(())
    })
    .await;
    let (_, list) = server.get("/apis/stable.example.com/v1/crontabs").await;
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");
}
