//! Workloads that move: with `listwatch serve`'s controllers on, what kubectl does to a
//! Deployment happens as on a real cluster — ReplicaSets and pods appear and become Running,
//! `kubectl rollout status` completes, `scale`, `set image`, `rollout undo` and deletes (both
//! cascades) take effect; a ReplicaSet adopts and releases pods by its selector.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Kubectl, Server};

on_both_backends!(
    create_deployment_runs_pods,
    scale_set_image_and_undo,
    recreate_replaces_every_pod,
    deleting_a_deployment_deletes_its_replicasets_and_pods,
    replicasets_adopt_and_release_pods_by_selector,
);

/// How long anything a controller does may take here (pods start after 100 ms).
const SETTLE: Duration = Duration::from_secs(30);

/// Every controller, no nodes (pods run unbound; nodes.rs has them on nodes).
async fn start(name: &str, backend: Backend) -> Server {
    Server::start(name, backend, &["--controllers=all", "--pod-start-delay=100ms", "--nodes=0"]).await
}

/// Waits until `check` returns `Some`, asking again every 100 ms; panics with `what` after
/// [`SETTLE`].
pub(crate) async fn eventually<T, F: Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "not within {SETTLE:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// `kubectl rollout status` until it says the rollout is done.
async fn rollout_status(k: &Kubectl, deployment: &str) {
    let out = k.run(&["rollout", "status", &format!("deployment/{deployment}"), "--timeout=45s"]).await.ok();
    assert!(out.contains(&format!("deployment \"{deployment}\" successfully rolled out")), "{out}");
}

/// The pods with label `app`, once exactly `count` are Running and ready and none is being
/// deleted.
async fn running_pods(k: &Kubectl, app: &str, count: usize) -> Vec<Value> {
    eventually(&format!("{count} running {app} pods"), || async {
        let pods = items(&k.get_json(&["pods", "-l", &format!("app={app}")]).await);
        let running = pods.iter().all(|p| {
            p["status"]["phase"] == "Running"
                && p["metadata"]["deletionTimestamp"].is_null()
                && p["status"]["containerStatuses"][0]["ready"] == true
        });
        (pods.len() == count && running).then_some(pods)
    })
    .await
}

fn images(pods: &[Value]) -> Vec<&str> {
    pods.iter().map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or("")).collect()
}

async fn create_deployment_runs_pods(backend: Backend) {
    let server = start("controllers-create", backend).await;
    let k = server.kubectl();
    k.run(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3"]).await.ok();
    rollout_status(&k, "web").await;

    let pods = running_pods(&k, "web", 3).await;
    let replicasets = items(&k.get_json(&["replicasets", "-l", "app=web"]).await);
    assert_eq!(replicasets.len(), 1, "{replicasets:?}");
    let rs = &replicasets[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"].as_str().expect("a pod-template-hash label");
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(rs["spec"]["selector"]["matchLabels"], json!({"app": "web", "pod-template-hash": hash}));
    assert_eq!(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        (&rs["status"]["replicas"], &rs["status"]["readyReplicas"], &rs["status"]["availableReplicas"]),
        (&json!(3), &json!(3), &json!(3))
    );
    for pod in &pods {
        assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"]);
        assert_eq!(pod["metadata"]["labels"]["pod-template-hash"], hash);
        assert!(pod["metadata"]["name"].as_str().unwrap().starts_with(&format!("web-{hash}-")));
        assert!(pod["status"]["podIP"].as_str().is_some_and(|ip| ip.starts_with("10.244.")), "{pod}");
        assert!(pod["status"]["startTime"].is_string(), "{pod}");
    }

    let d = k.get_json(&["deployment", "web"]).await;
    assert_eq!(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
    assert_eq!(d["status"]["observedGeneration"], d["metadata"]["generation"]);
    for field in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
        assert_eq!(d["status"][field], 3, "{field}: {}", d["status"]);
    }
    let condition = |type_: &str| {
        d["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == type_).cloned().unwrap()
    };
    assert_eq!(
        (&condition("Available")["status"], &condition("Available")["reason"]),
        (&json!("True"), &json!("MinimumReplicasAvailable"))
    );
    assert_eq!(condition("Progressing")["reason"], "NewReplicaSetAvailable");
    assert_eq!(condition("Progressing")["message"], format!("ReplicaSet \"web-{hash}\" has successfully progressed."));
    // kubectl's table reads the same status.
    let table = k.run(&["get", "deployment", "web", "--no-headers"]).await.ok();
    assert_eq!(table.split_whitespace().take(4).collect::<Vec<_>>(), ["web", "3/3", "3", "3"], "{table}");
}

async fn scale_set_image_and_undo(backend: Backend) {
    let server = start("controllers-rollout", backend).await;
    let k = server.kubectl();
    k.run(&["create", "deployment", "app", "--image=nginx:1.26", "--replicas=2"]).await.ok();
    rollout_status(&k, "app").await;

    k.run(&["scale", "deployment/app", "--replicas=4"]).await.ok();
    rollout_status(&k, "app").await;
    running_pods(&k, "app", 4).await;
    k.run(&["scale", "deployment/app", "--replicas=3"]).await.ok();
    running_pods(&k, "app", 3).await;

    k.run(&["set", "image", "deployment/app", "nginx=nginx:1.27"]).await.ok();
    rollout_status(&k, "app").await;
    let pods = running_pods(&k, "app", 3).await;
    assert_eq!(images(&pods), ["nginx:1.27"; 3]);
    let replicasets = items(&k.get_json(&["replicasets", "-l", "app=app"]).await);
    let sizes: Vec<(String, i64)> = replicasets
        .iter()
        .map(|rs| {
            (
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"].as_str().unwrap().to_string(),
                rs["spec"]["replicas"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut sorted = sizes.clone();
    sorted.sort();
    assert_eq!(sorted, [("1".to_string(), 0), ("2".to_string(), 3)], "{sizes:?}");

    let history = k.run(&["rollout", "history", "deployment/app"]).await.ok();
    assert!(history.contains("1 ") && history.contains("2 "), "{history}");
    let undone = k.run(&["rollout", "undo", "deployment/app"]).await.ok();
    assert_eq!(undone.trim(), "deployment.apps/app rolled back");
    rollout_status(&k, "app").await;
    let pods = running_pods(&k, "app", 3).await;
    assert_eq!(images(&pods), ["nginx:1.26"; 3]);
    // The first ReplicaSet is the current one again, with the next revision.
    let d = k.get_json(&["deployment", "app"]).await;
    assert_eq!(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3");
    assert_eq!(items(&k.get_json(&["replicasets", "-l", "app=app"]).await).len(), 2);
}

async fn recreate_replaces_every_pod(backend: Backend) {
    let server = start("controllers-recreate", backend).await;
    let k = server.kubectl();
    k.run(&["create", "deployment", "r", "--image=busybox:1", "--replicas=2"]).await.ok();
    k.run(&["patch", "deployment", "r", "-p", r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}"#])
        .await
        .ok();
    rollout_status(&k, "r").await;
    k.run(&["set", "image", "deployment/r", "busybox=busybox:2"]).await.ok();
    rollout_status(&k, "r").await;
    let pods = running_pods(&k, "r", 2).await;
    assert_eq!(images(&pods), ["busybox:2"; 2]);
    let replicasets = items(&k.get_json(&["replicasets", "-l", "app=r"]).await);
    let mut sizes: Vec<i64> = replicasets.iter().map(|rs| rs["spec"]["replicas"].as_i64().unwrap()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [0, 2]);
}

async fn deleting_a_deployment_deletes_its_replicasets_and_pods(backend: Backend) {
    let server = start("controllers-delete", backend).await;
    let k = server.kubectl();
    for app in ["fg", "bg"] {
        k.run(&["create", "deployment", app, "--image=nginx", "--replicas=2"]).await.ok();
        rollout_status(&k, app).await;
    }
    // Foreground: kubectl waits until the Deployment is gone, which is after its dependents.
    k.run(&["delete", "deployment", "fg", "--cascade=foreground"]).await.ok();
    assert!(items(&k.get_json(&["replicasets", "-l", "app=fg"]).await).is_empty());
    assert!(items(&k.get_json(&["pods", "-l", "app=fg"]).await).is_empty());
    // Background: the garbage collector follows.
    k.run(&["delete", "deployment", "bg"]).await.ok();
    eventually("bg's replica sets and pods gone", || async {
        let rs = items(&k.get_json(&["replicasets", "-l", "app=bg"]).await);
        let pods = items(&k.get_json(&["pods", "-l", "app=bg"]).await);
        (rs.is_empty() && pods.is_empty()).then_some(())
    })
    .await;
}

async fn replicasets_adopt_and_release_pods_by_selector(backend: Backend) {
    let server = start("controllers-adopt", backend).await;
    let k = server.kubectl();
    let orphan = json!({"metadata": {"name": "orphan", "labels": {"app": "rs"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (code, body) = server.post_json("/api/v1/namespaces/default/pods", &orphan).await;
    assert_eq!(code, 201, "{body}");
    // Running means the controllers' shared pod cache has it (the stand-in kubelet started it
    // from there); otherwise the ReplicaSet could be synced before the cache shows the orphan.
    running_pods(&k, "rs", 1).await;
    let rs = json!({"metadata": {"name": "rs"}, "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "rs"}},
        "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, body) = server.post_json("/apis/apps/v1/namespaces/default/replicasets", &rs).await;
    assert_eq!(code, 201, "{body}");
    // The orphan is adopted: one pod is created, not two.
    let pods = running_pods(&k, "rs", 2).await;
    let orphan = pods.iter().find(|p| p["metadata"]["name"] == "orphan").expect("the orphan is kept");
    assert_eq!(orphan["metadata"]["ownerReferences"][0]["uid"], body["metadata"]["uid"]);
    // Relabelled out of the selector, it is released and replaced.
    k.run(&["label", "pod", "orphan", "app=gone", "--overwrite"]).await.ok();
    running_pods(&k, "rs", 2).await;
    let released = eventually("the orphan released", || async {
        let pod = k.get_json(&["pod", "orphan"]).await;
        pod["metadata"]["ownerReferences"].as_array().is_none_or(Vec::is_empty).then_some(pod)
    })
    .await;
    assert_eq!(released["metadata"]["labels"]["app"], "gone");
    let status = eventually("status counts 2", || async {
        let rs = k.get_json(&["replicaset", "rs"]).await;
        (rs["status"]["availableReplicas"] == 2).then_some(rs["status"].clone())
    })
    .await;
    assert_eq!(
        (&status["replicas"], &status["fullyLabeledReplicas"], &status["readyReplicas"]),
        (&json!(2), &json!(2), &json!(2))
    );
    assert_eq!(status["observedGeneration"], 1);
}

#[tokio::test]
async fn an_unknown_controller_is_refused() {
    let out = tokio::process::Command::new(crate::support::binary())
        .args(["serve", "--ephemeral", "--addr", "127.0.0.1:0", "--controllers=deployment,kubelet"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "unknown controller \"kubelet\": want all, none or some of deployment, replicaset, pod-lifecycle"
        ),
        "{stderr}"
    );
}
