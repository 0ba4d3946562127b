//! Object semantics controllers rely on (issue: strategic merge patch, subresources,
//! generation, finalizers, graceful deletion, propagation, namespace lifecycle), each
//! transition checked through a watch on the raw API where it shows up in events.

use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, event_rv};

on_both_backends!(
    scale_patch_and_edit,
    status_subresource_and_generation,
    finalizers_hold_deletion,
    namespace_deletion_through_a_watch,
    pods_get_a_grace_period,
    propagation_policies,
);

const SECONDS: Duration = Duration::from_secs(10);
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx, labels: {app: nginx}}
spec:
  replicas: 1
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        env: [{name: A, value: '1'}]
";

fn rv(v: &Value) -> i64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

async fn scale_patch_and_edit(backend: Backend) {
    let server = Server::start("semantics-scale", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT).await.ok();
    // kubectl scale goes through the scale subresource.
    assert_eq!(k.run(&["scale", "deployment/nginx", "--replicas=3"]).await.ok().trim(), "deployment.apps/nginx scaled");
    let (_, scale) = server.get(&format!("{DEPLOYS}/nginx/scale")).await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=nginx");
    let d = k.get_json(&["deployment", "nginx"]).await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);

    // The three patch types.
    k.run(&[
        "patch",
        "deployment",
        "nginx",
        "--type=strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B","value":"2"}]}]}}}}"#,
    ])
    .await
    .ok();
    let d = k.get_json(&["deployment", "nginx"]).await;
    let env = &d["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(*env, json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]), "env merged by name");
    k.run(&["patch", "deployment", "nginx", "--type=merge", "-p", r#"{"metadata":{"labels":{"tier":"web"}}}"#])
        .await
        .ok();
    k.run(&[
        "patch",
        "deployment",
        "nginx",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]"#,
    ])
    .await
    .ok();
    let d = k.get_json(&["deployment", "nginx"]).await;
    assert_eq!(d["metadata"]["labels"]["tier"], "web");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    // A JSON patch that cannot apply is 422.
    let bad = k
        .run(&[
            "patch",
            "deployment",
            "nginx",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/replicas","value":99}]"#,
        ])
        .await;
    assert!(!bad.success && bad.stderr.contains("The request is invalid"), "{}", bad.stderr);

    // kubectl edit with an editor that changes the image.
    let editor = server.dir.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/nginx:1.27/nginx:1.28/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = k.command(&["edit", "deployment", "nginx"]);
    cmd.env("KUBE_EDITOR", &editor);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = k.get_json(&["deployment", "nginx"]).await;
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28");
}

async fn status_subresource_and_generation(backend: Backend) {
    let server = Server::start("semantics-status", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT).await.ok();
    let (_, d) = server.get(&format!("{DEPLOYS}/nginx")).await;
    assert_eq!(d["metadata"]["generation"], 1);
    // /status changes only the status, and not the generation.
    let mut update = d.clone();
    update["status"] = json!({"replicas": 1, "readyReplicas": 1});
    update["spec"]["replicas"] = json!(5);
    let (code, after) =
        server.send("PUT", &format!("{DEPLOYS}/nginx/status"), "application/json", update.to_string()).await;
    assert_eq!(code, 200, "{after}");
    assert_eq!(after["status"]["readyReplicas"], 1);
    assert_eq!(after["spec"]["replicas"], 1, "the spec is not touched through /status");
    assert_eq!(after["metadata"]["generation"], 1);
    // The main resource ignores .status.
    let (code, after) = server
        .send("PATCH", &format!("{DEPLOYS}/nginx"), "application/merge-patch+json", r#"{"status":{"readyReplicas":9}}"#)
        .await;
    assert_eq!(code, 200);
    assert_eq!(after["status"]["readyReplicas"], 1);
    assert_eq!(after["metadata"]["generation"], 1);
    // A spec change bumps the generation.
    let (_, after) = server
        .send("PATCH", &format!("{DEPLOYS}/nginx"), "application/merge-patch+json", r#"{"spec":{"paused":true}}"#)
        .await;
    assert_eq!(after["metadata"]["generation"], 2);
    let (_, resources) = server.get("/apis/apps/v1").await;
    let names: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"deployments/status") && names.contains(&"deployments/scale"), "{names:?}");
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn finalizers_hold_deletion(backend: Backend) {
    let server = Server::start("semantics-finalizers", backend, &[]).await;
    let k = server.kubectl();
    let (_, created) =
        server.post_json(CMS, &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})).await;
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={}", rv(&created))).await;
    // kubectl delete returns once the server accepted it (--wait=false: it would wait forever).
    k.run(&["delete", "configmap", "held", "--wait=false"]).await.ok();
    let modified = w.next(SECONDS).await.unwrap();
    assert_eq!(modified["type"], "MODIFIED");
    assert!(modified["object"]["metadata"]["deletionTimestamp"].is_string());
    // No new finalizers once deletion started.
    let more = k
        .run(&[
            "patch",
            "configmap",
            "held",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}"#,
        ])
        .await;
    assert!(!more.success && more.stderr.contains("no new finalizers"), "{}", more.stderr);
    // Removing the last finalizer deletes it.
    k.run(&["patch", "configmap", "held", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#])
        .await
        .ok();
    let deleted = w.next(SECONDS).await.unwrap();
    assert_eq!(deleted["type"], "DELETED");
    assert!(event_rv(&deleted) > event_rv(&modified), "the deletion's own revision");
    assert_eq!(server.get(&format!("{CMS}/held")).await.0, 404);
}

async fn namespace_deletion_through_a_watch(backend: Backend) {
    let server = Server::start("semantics-namespace", backend, &[]).await;
    let k = server.kubectl();
    let (code, ns) = server.post_json("/api/v1/namespaces", &json!({"metadata": {"name": "doomed"}})).await;
    assert_eq!(code, 201);
    let mut start = rv(&ns);
    for name in ["a", "b"] {
        let (_, cm) =
            server.post_json("/api/v1/namespaces/doomed/configmaps", &json!({"metadata": {"name": name}})).await;
        start = rv(&cm);
    }
    let mut namespaces = Watch::open(&server, &format!("/api/v1/namespaces?watch=1&resourceVersion={start}")).await;
    let mut content =
        Watch::open(&server, &format!("/api/v1/namespaces/doomed/configmaps?watch=1&resourceVersion={start}")).await;
    k.run(&["delete", "namespace", "doomed", "--wait=false"]).await.ok();
    let terminating = namespaces.next(SECONDS).await.unwrap();
    assert_eq!(terminating["type"], "MODIFIED");
    assert_eq!(terminating["object"]["status"]["phase"], "Terminating");
    assert!(terminating["object"]["metadata"]["deletionTimestamp"].is_string());
    // New content is refused while it terminates (unless it is already gone).
    let (code, body) =
        server.post_json("/api/v1/namespaces/doomed/configmaps", &json!({"metadata": {"name": "late"}})).await;
    if code != 404 {
        assert_eq!(code, 403, "{body}");
        assert!(body["message"].as_str().unwrap().contains("because it is being terminated"));
    }
    let mut deleted = Vec::new();
    for _ in 0..2 {
        let e = content.next(SECONDS).await.unwrap();
        assert_eq!(e["type"], "DELETED");
        deleted.push(event_rv(&e));
    }
    assert_ne!(deleted[0], deleted[1], "one revision each");
    let gone = namespaces.next(SECONDS).await.unwrap();
    assert_eq!(gone["type"], "DELETED");
    assert!(event_rv(&gone) > deleted[0].max(deleted[1]));
}

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn pods_get_a_grace_period(backend: Backend) {
    let server = Server::start("semantics-pods", backend, &[]).await;
    let pod = |name: &str, node: Option<&str>| {
        let mut p = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        p
    };
    let (code, created) = server.post_json(PODS, &pod("bound", Some("node-1"))).await;
    assert_eq!(code, 201);
    assert_eq!(created["status"]["phase"], "Pending");
    let (_, unbound) = server.post_json(PODS, &pod("unbound", None)).await;
    let mut w = Watch::open(&server, &format!("{PODS}?watch=1&resourceVersion={}", rv(&unbound))).await;
    // An unscheduled pod goes at once.
    let (code, body) = server.send("DELETE", &format!("{PODS}/unbound"), "application/json", "").await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Pod", "pods answer DELETE with the object");
    assert_eq!(w.next(SECONDS).await.unwrap()["type"], "DELETED");
    // A bound one is marked with its grace period (default 30 s)...
    let (code, body) = server.send("DELETE", &format!("{PODS}/bound"), "application/json", "").await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 30);
    let marked = w.next(SECONDS).await.unwrap();
    assert_eq!(marked["type"], "MODIFIED");
    assert_eq!(marked["object"]["metadata"]["deletionGracePeriodSeconds"], 30);
    // ...and gracePeriodSeconds=0 removes it now.
    let (code, _) = server.send("DELETE", &format!("{PODS}/bound?gracePeriodSeconds=0"), "application/json", "").await;
    assert_eq!(code, 200);
    assert_eq!(w.next(SECONDS).await.unwrap()["type"], "DELETED");
    // A short grace period runs out by itself (the server stands in for the kubelet).
    server.post_json(PODS, &pod("quick", Some("node-1"))).await;
    server.send("DELETE", &format!("{PODS}/quick"), "application/json", r#"{"gracePeriodSeconds":1}"#).await;
    let events: Vec<String> =
        [w.next(SECONDS).await.unwrap(), w.next(SECONDS).await.unwrap(), w.next(SECONDS).await.unwrap()]
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect();
    assert_eq!(events, ["ADDED", "MODIFIED", "DELETED"]);
}

const RSS: &str = "/apis/apps/v1/namespaces/default/replicasets";

async fn propagation_policies(backend: Backend) {
    let server = Server::start("semantics-gc", backend, &[]).await;
    let owned_by = |owner: &Value| json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
    for (policy, name) in [("Background", "bg"), ("Foreground", "fg"), ("Orphan", "orphan")] {
        let spec = json!({"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}});
        let (code, owner) = server.post_json(DEPLOYS, &json!({"metadata": {"name": name}, "spec": spec})).await;
        assert_eq!(code, 201, "{owner}");
        let (code, rs) = server
            .post_json(
                RSS,
                &json!({"metadata": {"name": format!("{name}-rs"), "ownerReferences": owned_by(&owner)}, "spec": spec}),
            )
            .await;
        assert_eq!(code, 201, "{rs}");
        let mut w = Watch::open(
            &server,
            &format!("{RSS}?watch=1&fieldSelector=metadata.name%3D{name}-rs&resourceVersion={}", rv(&owner)),
        )
        .await;
        assert_eq!(w.next(SECONDS).await.unwrap()["type"], "ADDED");
        let (code, body) = server
            .send(
                "DELETE",
                &format!("{DEPLOYS}/{name}"),
                "application/json",
                json!({"propagationPolicy": policy}).to_string(),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let dependent = w.next(SECONDS).await.unwrap();
        match policy {
            "Orphan" => {
                assert_eq!(dependent["type"], "MODIFIED");
                assert!(dependent["object"]["metadata"].get("ownerReferences").is_none(), "{dependent}");
            }
            _ => assert_eq!(dependent["type"], "DELETED", "{policy}"),
        }
        // The owner is gone in the end.
        let deadline = tokio::time::Instant::now() + SECONDS;
        while server.get(&format!("{DEPLOYS}/{name}")).await.0 != 404 {
            assert!(tokio::time::Instant::now() < deadline, "{policy}: the owner stayed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
