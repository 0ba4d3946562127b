//! The garbage collector and owner references that name no existing owner ("dangling"), as
//! kube-controller-manager's collector treats them: the owner is looked up by apiVersion/kind,
//! name and (for namespaced kinds) the dependent's namespace; if it is missing or has another
//! uid, the dependent is deleted when it appears, whatever else is going on. Owners that exist,
//! kinds the server does not serve and owners created a moment before their dependents are left
//! alone. Propagation policies are in `semantics.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch};

on_both_backends!(
    gc_dangling_owner_references,
    gc_owner_created_just_before_its_dependents,
    gc_dangling_references_survive_a_watch_restart,
);

const TIMEOUT: Duration = Duration::from_secs(20);
const PODS: &str = "/api/v1/namespaces/default/pods";
const RSS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const MISSING_UID: &str = "5a1e1d8e-0c4b-4c39-9d3e-6f1c8a2b7e10";

fn rv(v: &Value) -> i64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

fn replicaset(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        }
    })
}

/// A reference to a ReplicaSet by name and uid.
fn rs_ref(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true})
}

/// A reference to a ReplicaSet that owns without controlling (only one reference may be the
/// controller).
fn other_owner_ref(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid, "blockOwnerDeletion": true})
}

fn pod(name: &str, owners: &[Value]) -> Value {
    json!({
        "metadata": {"name": name, "ownerReferences": owners},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    })
}

/// POST that must create (retrying the 429s of a watch cache being rebuilt).
async fn create(server: &Server, path: &str, body: &Value) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (code, created) = server.post_json(path, body).await;
        if code == 429 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(code, 201, "POST {path}: {created}");
        return created;
    }
}

fn uid(object: &Value) -> &str {
    object["metadata"]["uid"].as_str().unwrap()
}

/// Reads pod events from `watch` until every pod in `expected` reached its outcome (`DELETED`,
/// or `MODIFIED` for references removed), failing on any deletion of a pod in `survivors`.
/// Returns the last object of each pod that reached its outcome.
async fn await_outcomes(
    watch: &mut Watch,
    expected: &BTreeMap<&str, &str>,
    survivors: &BTreeSet<&str>,
) -> BTreeMap<String, Value> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let mut reached = BTreeMap::new();
    while reached.len() < expected.len() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let event = watch.next(left.max(Duration::from_millis(1))).await.expect("the watch goes on");
        let kind = event["type"].as_str().unwrap_or("");
        let name = event["object"]["metadata"]["name"].as_str().unwrap_or("").to_string();
        assert!(
            !(kind == "DELETED" && survivors.contains(name.as_str())),
            "the collector deleted {name}, whose owners exist or cannot be resolved: {event}"
        );
        if expected.get(name.as_str()) == Some(&kind) {
            reached.insert(name, event["object"].clone());
        }
    }
    reached
}

async fn gc_dangling_owner_references(backend: Backend) {
    let server = Server::start("gc-dangling", backend, &[]).await;
    let web = create(&server, RSS, &replicaset("web")).await;
    let node = create(&server, "/api/v1/nodes", &json!({"metadata": {"name": "node-1"}})).await;
    create(&server, "/api/v1/namespaces", &json!({"metadata": {"name": "elsewhere"}})).await;
    let foreign = create(&server, "/apis/apps/v1/namespaces/elsewhere/replicasets", &replicaset("foreign")).await;
    let mut watch = Watch::open(&server, &format!("{PODS}?watch=1&resourceVersion={}", rv(&foreign))).await;

    let node_ref = json!({"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": uid(&node)});
    let pods = [
        // Collected: no such owner; the right name with another uid; an owner in another namespace.
        ("missing", vec![rs_ref("nope", MISSING_UID)]),
        ("wrong-uid", vec![rs_ref("web", MISSING_UID)]),
        ("cross-namespace", vec![rs_ref("foreign", uid(&foreign))]),
        // Kept: the owner exists (namespaced, and cluster-scoped).
        ("owned", vec![rs_ref("web", uid(&web))]),
        ("on-node", vec![node_ref]),
        // Kept: a kind the server does not serve is not taken for absent (kube retries).
        ("unserved", vec![json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": MISSING_UID})]),
        (
            "unserved-version",
            vec![json!({"apiVersion": "apps/v1beta1", "kind": "ReplicaSet", "name": "nope", "uid": MISSING_UID})],
        ),
        // Kept, without its dangling reference: one owner exists.
        ("mixed", vec![rs_ref("web", uid(&web)), other_owner_ref("nope", MISSING_UID)]),
    ];
    for (name, owners) in &pods {
        create(&server, PODS, &pod(name, owners)).await;
    }
    // Created last: once it is gone, every pod above has been looked at.
    create(&server, PODS, &pod("sentinel", &[rs_ref("nope", MISSING_UID)])).await;

    let expected = BTreeMap::from([
        ("missing", "DELETED"),
        ("wrong-uid", "DELETED"),
        ("cross-namespace", "DELETED"),
        ("mixed", "MODIFIED"),
        ("sentinel", "DELETED"),
    ]);
    let survivors = BTreeSet::from(["owned", "on-node", "unserved", "unserved-version", "mixed"]);
    let reached = await_outcomes(&mut watch, &expected, &survivors).await;
    assert_eq!(
        reached["mixed"]["metadata"]["ownerReferences"],
        json!([rs_ref("web", uid(&web))]),
        "only the dangling reference is removed"
    );
    for name in survivors {
        let (code, body) = server.get(&format!("{PODS}/{name}")).await;
        assert_eq!(code, 200, "{name} survives: {body}");
        assert!(body["metadata"]["deletionTimestamp"].is_null(), "{name} is not being deleted: {body}");
    }
    for name in ["missing", "wrong-uid", "cross-namespace"] {
        assert_eq!(server.get(&format!("{PODS}/{name}")).await.0, 404, "{name} was collected");
    }
    // The owners themselves are untouched.
    assert_eq!(server.get(&format!("{RSS}/web")).await.0, 200);
    assert_eq!(server.get("/apis/apps/v1/namespaces/elsewhere/replicasets/foreign").await.0, 200);

    // One of two owners deleted (Background): the dependent stays with the other one.
    let second = create(&server, RSS, &replicaset("second")).await;
    create(&server, PODS, &pod("two-owners", &[rs_ref("web", uid(&web)), other_owner_ref("second", uid(&second))]))
        .await;
    let (code, body) = server.send("DELETE", &format!("{RSS}/second"), "application/json", "").await;
    assert_eq!(code, 200, "{body}");
    let reached = await_outcomes(
        &mut watch,
        &BTreeMap::from([("two-owners", "MODIFIED")]),
        &BTreeSet::from(["two-owners", "owned", "on-node", "unserved", "unserved-version", "mixed"]),
    )
    .await;
    assert_eq!(reached["two-owners"]["metadata"]["ownerReferences"], json!([rs_ref("web", uid(&web))]));
}

/// A dependent written right after its owner may reach the collector before the owner's own
/// ADDED event (they come through different watches): the owner must be looked up in storage,
/// not in what the collector has seen, or such dependents would be deleted.
async fn gc_owner_created_just_before_its_dependents(backend: Backend) {
    let server = Server::start("gc-race", backend, &[]).await;
    let (_, list) = server.get(PODS).await;
    let start = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut watch = Watch::open(&server, &format!("{PODS}?watch=1&resourceVersion={start}")).await;
    const PAIRS: usize = 40;
    let names: Vec<String> = (0..PAIRS).map(|i| format!("racer-{i}")).collect();
    for name in &names {
        let owner = create(&server, RSS, &replicaset(name)).await;
        create(&server, PODS, &pod(name, &[rs_ref(name, uid(&owner))])).await;
    }
    create(&server, PODS, &pod("sentinel", &[rs_ref("nope", MISSING_UID)])).await;
    let survivors: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    await_outcomes(&mut watch, &BTreeMap::from([("sentinel", "DELETED")]), &survivors).await;
    let (_, list) = server.get(PODS).await;
    assert_eq!(list["items"].as_array().unwrap().len(), PAIRS, "every pod with an owner is there: {list}");
}

/// The collector's reconcile (at start, and when one of its watches restarts) used to be the
/// only place dangling references were collected, so which dependents went depended on when it
/// ran. Now every one goes, restart or not.
async fn gc_dangling_references_survive_a_watch_restart(backend: Backend) {
    let server = Server::start("gc-restart", backend, &[]).await;
    let web = create(&server, RSS, &replicaset("web")).await;
    const EACH: usize = 60;
    for i in 0..EACH {
        if i == EACH / 2 {
            // Ends every watch of the pods cache, the collector's too: it restarts and reconciles.
            server.debug("cache/reset?resource=pods").await;
        }
        create(&server, PODS, &pod(&format!("dangling-{i}"), &[rs_ref("bench-web", MISSING_UID)])).await;
        create(&server, PODS, &pod(&format!("owned-{i}"), &[rs_ref("web", uid(&web))])).await;
    }
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (code, list) = server.get(PODS).await;
        if tokio::time::Instant::now() >= deadline {
            let left: Vec<&str> = list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["metadata"]["name"].as_str())
                .filter(|n| n.starts_with("dangling-"))
                .collect();
            panic!("dangling pods were not all collected in {TIMEOUT:?}: {left:?}; log:\n{}", server.log());
        }
        if code == 429 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(code, 200, "{list}");
        let names: Vec<&str> =
            list["items"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
        assert!(
            (0..EACH).all(|i| names.contains(&format!("owned-{i}").as_str())),
            "a pod with an existing owner was deleted: {names:?}"
        );
        if names.len() == EACH {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
