//! Pods that move through stages: the default ones make a Deployment's pods ContainerCreating,
//! then Running with what kubectl shows of a real pod; the example failure stages make a
//! labelled pod crash (Error, OOMKilled, CrashLoopBackOff, RESTARTS); a malformed stage file
//! stops `serve` before it listens, naming the line.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::controllers::eventually;
use crate::support::{Backend, Kubectl, Server};

/// How long kubectl's watch may take to show a failure chain.
const SETTLE: Duration = Duration::from_secs(40);

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/stages").join(name).display().to_string()
}

/// `kubectl get pods --no-headers` rows as columns, by pod name.
async fn table(k: &Kubectl, args: &[&str]) -> Vec<Vec<String>> {
    let mut all = vec!["get", "pods", "--no-headers"];
    all.extend_from_slice(args);
    let out = k.run(&all).await.ok();
    out.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_stages_take_a_pod_through_container_creating_to_running() {
    // Long enough a start that ContainerCreating is there to be seen.
    let server = Server::start(
        "stages-default",
        Backend::Memory,
        &["--controllers=all", "--nodes=0", "--pod-start-delay=3s", "--stage-seed=1"],
    )
    .await;
    let k = server.kubectl();
    k.run(&["create", "deployment", "web", "--image=nginx:1.27"]).await.ok();
    let creating = eventually("a ContainerCreating pod", || async {
        let rows = table(&k, &["-l", "app=web"]).await;
        rows.into_iter().find(|r| r.get(2).is_some_and(|s| s == "ContainerCreating"))
    })
    .await;
    assert_eq!((creating[1].as_str(), creating[3].as_str()), ("0/1", "0"), "{creating:?}");
    let pod = k.get_json(&["pod", &creating[0]]).await;
    let container = &pod["status"]["containerStatuses"][0];
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(container["state"]["waiting"]["reason"], "ContainerCreating", "{container}");
    assert_eq!((&container["ready"], &container["name"]), (&Value::Bool(false), &Value::from("nginx")));
    assert!(pod["status"]["startTime"].is_string() && pod["status"]["podIP"].is_null(), "{}", pod["status"]);

    let running = eventually("the pod Running", || async {
        let rows = table(&k, &["-o", "wide", "-l", "app=web"]).await;
        rows.into_iter().find(|r| r[0] == creating[0] && r[2] == "Running")
    })
    .await;
    // NAME READY STATUS RESTARTS AGE IP NODE ...
    assert_eq!(&running[1], "1/1", "{running:?}");
    assert!(running[5].starts_with("10.244."), "{running:?}");
    let pod = k.get_json(&["pod", &creating[0]]).await;
    let status = &pod["status"];
    let container = &status["containerStatuses"][0];
    assert!(container["state"]["running"]["startedAt"].is_string(), "{container}");
    assert_eq!((&container["ready"], &container["started"]), (&Value::Bool(true), &Value::Bool(true)));
    assert_eq!(container["restartCount"], 0);
    assert_eq!(container["image"], "nginx:1.27");
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    assert_eq!(container["containerID"], format!("listwatch://{uid}/nginx"));
    assert_eq!(status["podIPs"][0]["ip"], status["podIP"]);
    assert_eq!(status["qosClass"], "BestEffort");
    let conditions: Vec<(String, String)> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap().to_string(), c["status"].as_str().unwrap().to_string()))
        .collect();
    for type_ in ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"] {
        assert!(conditions.contains(&(type_.to_string(), "True".to_string())), "{type_}: {conditions:?}");
    }
    let out = k.run(&["rollout", "status", "deployment/web", "--timeout=30s"]).await.ok();
    assert!(out.contains("successfully rolled out"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_stages_show_error_oomkilled_and_crashloopbackoff() {
    let stages = format!("default,{},{}", example("crashloop.yaml"), example("oomkilled.yaml"));
    let server = Server::start(
        "stages-crashloop",
        Backend::Memory,
        &["--controllers=all", "--nodes=0", "--pod-start-delay=100ms", "--stages", &stages],
    )
    .await;
    let k = server.kubectl();
    // kubectl's own watch prints a row whenever the STATUS changes: collect them.
    let mut watch = k.command(&["get", "pods", "--watch", "--no-headers"]);
    watch.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut watch = watch.spawn().expect("kubectl get --watch runs");
    let mut rows = BufReader::new(watch.stdout.take().unwrap()).lines();
    // A pod that stays well first: once the watch prints it, the watch is there for the others.
    k.run(&["run", "fine", "--image=busybox"]).await.ok();
    let first = tokio::time::timeout(SETTLE, rows.next_line()).await;
    assert!(matches!(&first, Ok(Ok(Some(row))) if row.starts_with("fine ")), "{first:?}");
    k.run(&["run", "crasher", "--image=busybox", "--labels=listwatch.dev/fail=crashloop"]).await.ok();
    k.run(&["run", "hog", "--image=busybox", "--labels=listwatch.dev/fail=oomkilled"]).await.ok();

    let mut statuses: Vec<(String, String, String)> = Vec::new();
    let seen = |statuses: &[(String, String, String)], pod: &str, status: &str| {
        statuses.iter().any(|(p, s, _)| p == pod && s == status)
    };
    let done = tokio::time::timeout(SETTLE, async {
        while let Ok(Some(line)) = rows.next_line().await {
            let columns: Vec<&str> = line.split_whitespace().collect();
            statuses.push((columns[0].into(), columns[2].into(), columns[3].into()));
            if seen(&statuses, "crasher", "CrashLoopBackOff") && seen(&statuses, "hog", "CrashLoopBackOff") {
                return;
            }
        }
    })
    .await;
    let _ = watch.kill().await;
    assert!(done.is_ok(), "no CrashLoopBackOff for both within {SETTLE:?}: {statuses:?}");
    let order = |pod: &str| -> Vec<&str> {
        let mut order: Vec<&str> = statuses.iter().filter(|(p, _, _)| p == pod).map(|(_, s, _)| s.as_str()).collect();
        order.dedup();
        order
    };
    let expected = |failed| ["Pending", "ContainerCreating", "Running", failed, "Running", failed, "CrashLoopBackOff"];
    assert_eq!(order("crasher"), expected("Error"), "{statuses:?}");
    assert_eq!(order("hog"), expected("OOMKilled"), "{statuses:?}");
    // RESTARTS: "1 (Ns ago)" by the back-off.
    let crashing = statuses.iter().find(|(p, s, _)| p == "crasher" && s == "CrashLoopBackOff").unwrap();
    assert_eq!(crashing.2, "1", "{statuses:?}");

    let hog = k.get_json(&["pod", "hog"]).await;
    let container = &hog["status"]["containerStatuses"][0];
    assert_eq!(container["state"]["waiting"]["reason"], "CrashLoopBackOff", "{container}");
    assert_eq!(container["lastState"]["terminated"]["reason"], "OOMKilled", "{container}");
    assert_eq!(container["lastState"]["terminated"]["exitCode"], 137, "{container}");
    assert_eq!(container["restartCount"], 1);
    let described = k.run(&["describe", "pod", "crasher"]).await.ok();
    assert!(described.contains("Back-off restarting failed container"), "{described}");
    // The pod without the label runs on.
    let rows = table(&k, &["fine"]).await;
    assert_eq!((rows[0][2].as_str(), rows[0][3].as_str()), ("Running", "0"), "{rows:?}");
}

#[tokio::test]
async fn a_malformed_stages_file_stops_serve_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: x\nspec:\n  resourceRef: {apiGroup: v1, kind: Pod}\n  delay:\n    durationMs: 100\n  next: {delete: true}\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(crate::support::binary())
        .args(["serve", "--ephemeral", "--addr", "127.0.0.1:0", "--kubeconfig"])
        .arg(dir.path().join("kubeconfig"))
        .arg("--stages")
        .arg(&bad)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "--stages: {}:8:5: spec.delay: unknown field `durationMs`, expected one of `durationMilliseconds`",
        bad.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!stderr.contains("listwatch is serving"), "it stopped before listening: {stderr}");
    assert!(!dir.path().join("kubeconfig").exists(), "nothing written: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_on_a_node_stops_before_its_grace_period_ends() {
    // No nodes: the pod names node-1, which then need not exist for a kubelet to run it.
    let server =
        Server::start("stages-delete", Backend::Memory, &["--controllers=all", "--nodes=0", "--pod-start-delay=100ms"])
            .await;
    let k = server.kubectl();
    let pod = serde_json::json!({"metadata": {"name": "bound"}, "spec": {"nodeName": "node-1",
        "terminationGracePeriodSeconds": 60, "containers": [{"name": "c", "image": "nginx"}]}});
    let (code, body) = server.post_json("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201, "{body}");
    eventually("the pod Running", || async {
        let rows = table(&k, &["bound"]).await;
        (rows[0][2] == "Running").then_some(())
    })
    .await;
    let started = tokio::time::Instant::now();
    // Bound to a node, the delete only marks it (grace period 60 s); the pod-delete stage
    // removes it, as a kubelet does once its containers stopped.
    let out = k.run(&["delete", "pod", "bound", "--wait=false"]).await.ok();
    assert!(out.contains("pod \"bound\" deleted"), "{out}");
    eventually("the pod gone", || async {
        let out = k.run(&["get", "pods", "bound", "--ignore-not-found", "--no-headers"]).await.ok();
        out.trim().is_empty().then_some(())
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}: the grace period ran out instead", started.elapsed());
    let events = k.get_json(&["events", "--field-selector", "involvedObject.name=bound"]).await;
    let reasons: Vec<&str> = events["items"].as_array().unwrap().iter().filter_map(|e| e["reason"].as_str()).collect();
    assert_eq!(reasons, ["Killing"], "{events}");
}
