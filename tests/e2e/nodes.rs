//! Workloads on nodes: `listwatch serve --nodes N` registers fake nodes that renew their
//! Leases, the scheduler binds pods to them through `pods/binding` (spreading them, honouring
//! node selectors, reporting kube's Unschedulable message), and a node that stops renewing
//! becomes NotReady, is tainted unreachable, and loses its pods to the other nodes once their
//! toleration runs out. The binding subresource answers as kube-apiserver's.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::controllers::{eventually, items};
use crate::on_both_backends;
use crate::support::{Backend, Kubectl, Server, Watch, assert_status};

on_both_backends!(
    binding_puts_a_pod_on_a_node_once,
    nodes_are_ready_and_renew_their_leases,
    deployment_pods_spread_over_the_nodes,
    a_pod_that_fits_nowhere_is_unschedulable_until_a_node_fits,
    a_pod_waiting_for_room_takes_the_place_a_bound_pod_leaves,
    a_failed_node_loses_its_pods_to_the_others,
);

const PODS: &str = "/api/v1/namespaces/default/pods";
/// A server with three fake nodes and every controller; `extra` adds flags.
async fn with_nodes(name: &str, backend: Backend, extra: &[&str]) -> Server {
    let mut args = vec!["--controllers=all", "--pod-start-delay=100ms", "--nodes=3"];
    args.extend_from_slice(extra);
    Server::start(name, backend, &args).await
}

/// `kubectl get nodes`: name → STATUS, once there are `count` rows.
async fn node_statuses(k: &Kubectl, count: usize) -> BTreeMap<String, String> {
    eventually(&format!("{count} nodes listed"), || async {
        let table = k.run(&["get", "nodes", "--no-headers"]).await.ok();
        let rows: BTreeMap<String, String> = table
            .lines()
            .filter_map(|l| {
                let mut cells = l.split_whitespace();
                Some((cells.next()?.to_owned(), cells.next()?.to_owned()))
            })
            .collect();
        (rows.len() == count).then_some(rows)
    })
    .await
}

/// The pods with label `app`, once exactly `count` run on a node (none being deleted) and
/// `accept` likes them.
async fn running_pods(k: &Kubectl, app: &str, count: usize, accept: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    eventually(&format!("{count} running {app} pods on nodes"), || async {
        let pods = items(&k.get_json(&["pods", "-l", &format!("app={app}")]).await);
        let live: Vec<Value> = pods.into_iter().filter(|p| p["metadata"]["deletionTimestamp"].is_null()).collect();
        let running = live.iter().all(|p| p["status"]["phase"] == "Running" && p["spec"]["nodeName"].is_string());
        (live.len() == count && running && accept(&live)).then_some(live)
    })
    .await
}

fn per_node(pods: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for pod in pods {
        *counts.entry(pod["spec"]["nodeName"].as_str().unwrap_or("").to_owned()).or_default() += 1;
    }
    counts
}

fn binding(pod: &str, kind: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"apiVersion": "v1", "kind": kind, "name": node}})
}

/// `serve` registers one node by default, as a kwok or kind cluster has one: the first
/// `kubectl get nodes` shows node-0 Ready. (The harness runs servers bare, with
/// `--controllers=none`: `all` is `serve`'s own default; `--nodes` is left to its default.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_server_has_one_ready_node() {
    let server = Server::start("nodes-default", Backend::Memory, &["--controllers=all"]).await;
    // Awaited on a watch (its initial events, then the changes) until node-0 reports Ready.
    let mut watch = Watch::open(&server, "/api/v1/nodes?watch=1").await;
    assert_eq!(watch.status, 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1));
        let event = watch.next(left).await.expect("the nodes watch runs on");
        let node = &event["object"];
        let ready = node["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
        if event["type"] != "DELETED" && node["metadata"]["name"] == "node-0" && ready {
            break;
        }
    }
    // The fake nodes are registered together: node-0 there, every node is.
    let (code, list) = server.get("/api/v1/nodes").await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<Value> = items(&list).iter().map(|n| n["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("node-0")], "{list}");
    let statuses = node_statuses(&server.kubectl(), 1).await;
    assert_eq!(statuses, BTreeMap::from([("node-0".to_owned(), "Ready".to_owned())]));
}

async fn binding_puts_a_pod_on_a_node_once(backend: Backend) {
    // No scheduler: the test binds.
    let server = Server::start("nodes-binding", backend, &["--controllers=none"]).await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(server.post_json(PODS, &pod).await.0, 201);
    let k = server.kubectl();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("binding.json");
    std::fs::write(&file, binding("p", "Node", "node-1").to_string()).expect("write the binding");
    let file = file.to_str().expect("a UTF-8 path");
    let out = k.run(&["create", "--raw", &format!("{PODS}/p/binding"), "-f", file]).await.ok();
    let status: Value = serde_json::from_str(&out).expect("a Status");
    assert_eq!(status, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}));
    let bound = k.get_json(&["pod", "p"]).await;
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    let scheduled = bound["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "PodScheduled");
    assert_eq!(scheduled.map(|c| &c["status"]), Some(&json!("True")), "{bound}");
    // kubectl get -o wide shows the node.
    let wide = k.run(&["get", "pod", "p", "-o", "wide", "--no-headers"]).await.ok();
    assert!(wide.split_whitespace().any(|cell| cell == "node-1"), "{wide}");

    // Bound once: a second binding is kube's 409, through kubectl and raw.
    let again = k.run(&["create", "--raw", &format!("{PODS}/p/binding"), "-f", file]).await;
    assert!(!again.success);
    assert!(
        again.stderr.contains(
            "Error from server (Conflict): Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\""
        ),
        "{}",
        again.stderr
    );
    let raw = server.post_json(&format!("{PODS}/p/binding"), &binding("p", "Node", "node-2")).await;
    assert_status(
        &raw,
        409,
        "Conflict",
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\"",
    );
    assert_eq!(raw.1["details"], json!({"name": "p", "kind": "pods/binding"}));
    // A gone pod, a name that is not the URL's, a target that is no Node, a GET.
    let gone = server.post_json(&format!("{PODS}/q/binding"), &binding("q", "Node", "node-1")).await;
    assert_status(&gone, 404, "NotFound", "pods \"q\" not found");
    let other = server.post_json(&format!("{PODS}/p/binding"), &binding("q", "Node", "node-1")).await;
    assert_status(&other, 400, "BadRequest", "name in URL does not match name in Binding object");
    let not_node = server.post_json(&format!("{PODS}/p/binding"), &binding("p", "Pod", "node-1")).await;
    assert_status(
        &not_node,
        422,
        "Invalid",
        "Binding \"p\" is invalid: target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
    );
    assert_eq!(server.get(&format!("{PODS}/p/binding")).await.0, 405);
    // Discovery lists the subresource as kube's does.
    let (_, resources) = server.get("/api/v1").await;
    let entry = resources["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods/binding").cloned();
    assert_eq!(
        entry,
        Some(
            json!({"name": "pods/binding", "singularName": "", "namespaced": true, "kind": "Binding", "verbs": ["create"]})
        )
    );
}

async fn nodes_are_ready_and_renew_their_leases(backend: Backend) {
    // A short grace period makes the Leases renew every 2 s.
    let server = with_nodes("nodes-ready", backend, &["--node-monitor-grace-period=8s"]).await;
    let k = server.kubectl();
    let statuses = eventually("3 Ready nodes", || async {
        let statuses = node_statuses(&k, 3).await;
        statuses.values().all(|s| s == "Ready").then_some(statuses)
    })
    .await;
    assert_eq!(statuses.keys().collect::<Vec<_>>(), ["node-0", "node-1", "node-2"]);
    let node = k.get_json(&["node", "node-1"]).await;
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/hostname"], "node-1");
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/os"], "linux");
    assert_eq!(node["metadata"]["labels"]["type"], "listwatch");
    assert_eq!(
        node["status"]["allocatable"],
        json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"})
    );
    assert_eq!(node["status"]["addresses"][0], json!({"type": "InternalIP", "address": "10.0.0.2"}));

    let lease = k.get_json(&["lease", "node-1", "-n", "kube-node-lease"]).await;
    assert_eq!(lease["spec"]["holderIdentity"], "node-1");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["uid"], node["metadata"]["uid"]);
    let first = lease["spec"]["renewTime"].as_str().expect("a renewTime").to_owned();
    // A MicroTime: 2026-01-01T00:00:00.123456Z.
    assert_eq!(first.len(), "2026-01-01T00:00:00.123456Z".len(), "{first}");
    eventually("the lease renewed", || async {
        let lease = k.get_json(&["lease", "node-1", "-n", "kube-node-lease"]).await;
        (lease["spec"]["renewTime"].as_str() != Some(&first)).then_some(())
    })
    .await;
}

async fn deployment_pods_spread_over_the_nodes(backend: Backend) {
    let server = with_nodes("nodes-spread", backend, &[]).await;
    let k = server.kubectl();
    node_statuses(&k, 3).await;
    k.run(&["create", "deployment", "web", "--image=nginx", "--replicas=6"]).await.ok();
    let pods = running_pods(&k, "web", 6, |_| true).await;
    let spread = per_node(&pods);
    assert_eq!(spread, BTreeMap::from([("node-0".into(), 2), ("node-1".into(), 2), ("node-2".into(), 2)]));
    for pod in &pods {
        let scheduled = pod["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "PodScheduled");
        assert_eq!(scheduled.map(|c| &c["status"]), Some(&json!("True")), "{pod}");
    }
    let wide = k.run(&["get", "pods", "-l", "app=web", "-o", "wide", "--no-headers"]).await.ok();
    assert!(wide.lines().all(|l| l.contains(" node-")), "{wide}");
}

async fn a_pod_that_fits_nowhere_is_unschedulable_until_a_node_fits(backend: Backend) {
    let server = with_nodes("nodes-unschedulable", backend, &[]).await;
    let k = server.kubectl();
    node_statuses(&k, 3).await;
    let pod = json!({"metadata": {"name": "ssd"}, "spec": {"nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(server.post_json(PODS, &pod).await.0, 201);
    let condition = eventually("the pod reported Unschedulable", || async {
        let pod = k.get_json(&["pod", "ssd"]).await;
        let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.into_iter().find(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
    })
    .await;
    assert_eq!(condition["status"], "False");
    assert_eq!(
        condition["message"],
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    assert_eq!(k.get_json(&["pod", "ssd"]).await["status"]["phase"], "Pending");
    // A node that fits: the pod goes there and runs.
    k.run(&["label", "node", "node-2", "disk=ssd"]).await.ok();
    eventually("the pod running on node-2", || async {
        let pod = k.get_json(&["pod", "ssd"]).await;
        (pod["spec"]["nodeName"] == "node-2" && pod["status"]["phase"] == "Running").then_some(())
    })
    .await;
}

/// One node holds 110 pods: the 111th is parked Unschedulable ("Too many pods") and goes to
/// the node as soon as a bound pod leaves it, not at the five-minute retry (the wait here is 30 s).
async fn a_pod_waiting_for_room_takes_the_place_a_bound_pod_leaves(backend: Backend) {
    let server =
        Server::start("nodes-room", backend, &["--controllers=all", "--pod-start-delay=100ms", "--nodes=1"]).await;
    let k = server.kubectl();
    node_statuses(&k, 1).await;
    let pods: Vec<Value> = (0..111)
        .map(|i| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("room-{i}"), "labels": {"app": "room"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    k.run_with_input(&["create", "-f", "-"], &list.to_string()).await.ok();
    let waiting = eventually("110 pods running on node-0 and one Unschedulable", || async {
        let pods = items(&k.get_json(&["pods", "-l", "app=room"]).await);
        let running = pods.iter().filter(|p| p["status"]["phase"] == "Running" && p["spec"]["nodeName"] == "node-0");
        let unschedulable: Vec<&Value> = pods
            .iter()
            .filter(|p| {
                p["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
                    c["reason"] == "Unschedulable"
                        && c["message"]
                            == "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
                })
            })
            .collect();
        (running.count() == 110 && unschedulable.len() == 1)
            .then(|| unschedulable[0]["metadata"]["name"].as_str().unwrap().to_owned())
    })
    .await;
    let leaving = if waiting == "room-0" { "room-1" } else { "room-0" };
    k.run(&["delete", "pod", leaving, "--wait=false"]).await.ok();
    eventually("the waiting pod running on node-0", || async {
        let pod = k.get_json(&["pod", &waiting]).await;
        (pod["spec"]["nodeName"] == "node-0" && pod["status"]["phase"] == "Running").then_some(())
    })
    .await;
}

async fn a_failed_node_loses_its_pods_to_the_others(backend: Backend) {
    let server =
        with_nodes("nodes-failure", backend, &["--node-monitor-grace-period=4s", "--node-monitor-period=1s"]).await;
    let k = server.kubectl();
    node_statuses(&k, 3).await;
    // Pods that tolerate an unreachable node for 2 s only.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": [
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}]}}}
    });
    k.run_with_input(&["apply", "-f", "-"], &deployment.to_string()).await.ok();
    let before = running_pods(&k, "web", 6, |_| true).await;
    assert_eq!(per_node(&before).len(), 3, "{:?}", per_node(&before));

    k.run(&["annotate", "node", "node-1", "listwatch.dev/heartbeats=stopped"]).await.ok();
    eventually("node-1 NotReady", || async {
        let statuses = node_statuses(&k, 3).await;
        (statuses["node-1"] == "NotReady" && statuses["node-0"] == "Ready" && statuses["node-2"] == "Ready")
            .then_some(())
    })
    .await;
    let node = k.get_json(&["node", "node-1"]).await;
    let taints: Vec<(&str, &str)> = node["spec"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["effect"].as_str().unwrap()))
        .collect();
    assert_eq!(
        taints,
        [("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")]
    );
    let ready =
        node["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").cloned().unwrap();
    assert_eq!((&ready["status"], &ready["reason"]), (&json!("Unknown"), &json!("NodeStatusUnknown")));

    // Its pods are evicted, and replaced on the others.
    let after = running_pods(&k, "web", 6, |pods| !per_node(pods).contains_key("node-1")).await;
    let evicted: Vec<&Value> = before.iter().filter(|p| p["spec"]["nodeName"] == "node-1").collect();
    assert!(!evicted.is_empty());
    for pod in evicted {
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert!(after.iter().all(|p| p["metadata"]["name"] != name), "{name} still runs");
    }
    assert_eq!(per_node(&after).values().sum::<usize>(), 6);
}
