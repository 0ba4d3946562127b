//! The objects the rows aim at, and the proof afterwards that no refused request wrote
//! anything: every object of every kind, with its uid and resourceVersion, before and after.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::Server;

pub const NS: &str = "bad-input";
pub const NODE: &str = "bad-input-node";

/// The fixtures as the server answered their creation.
pub struct Fixtures {
    pub namespace: Value,
    pub cm: Value,
    pub pod: Value,
    pub deployment: Value,
    /// ConfigMaps each DELETE row aims at alone, so one wrongly accepted delete does not
    /// change what the next row meets.
    pub victims: Vec<Value>,
}

/// How many `victim-NN` ConfigMaps there are.
pub const VICTIMS: usize = 16;

/// Collection paths of every kind the server serves (all namespaces).
const COLLECTIONS: &[&str] = &[
    "/api/v1/namespaces",
    "/api/v1/nodes",
    "/api/v1/pods",
    "/api/v1/configmaps",
    "/api/v1/secrets",
    "/api/v1/services",
    "/api/v1/endpoints",
    "/api/v1/events",
    "/api/v1/serviceaccounts",
    "/apis/apps/v1/deployments",
    "/apis/apps/v1/replicasets",
    "/apis/coordination.k8s.io/v1/leases",
];

pub fn uid(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap_or_default().to_string()
}

pub fn rv(object: &Value) -> String {
    object["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string()
}

async fn create(server: &Server, path: &str, body: Value) -> Value {
    let (code, object) = server.post_json(path, &body).await;
    assert_eq!(code, 201, "fixture {path}: {object}");
    object
}

impl Fixtures {
    pub async fn create(server: &Server) -> Fixtures {
        let namespace = create(server, "/api/v1/namespaces", json!({"metadata": {"name": NS}})).await;
        let cms = format!("/api/v1/namespaces/{NS}/configmaps");
        let cm = create(
            server,
            &cms,
            json!({"metadata": {"name": "cm1", "labels": {"app": "bad-input"}}, "data": {"k": "v"}}),
        )
        .await;
        create(server, &cms, json!({"metadata": {"name": "cm-imm"}, "immutable": true, "data": {"k": "v"}})).await;
        create(
            server,
            &format!("/api/v1/namespaces/{NS}/secrets"),
            json!({"metadata": {"name": "s1"}, "type": "Opaque", "data": {"k": "dg=="}}),
        )
        .await;
        create(server, "/api/v1/nodes", json!({"metadata": {"name": NODE}})).await;
        let pod = create(
            server,
            &format!("/api/v1/namespaces/{NS}/pods"),
            json!({"metadata": {"name": "p1"}, "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
        let deployment = create(
            server,
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            json!({
                "metadata": {"name": "d1"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "d1"}},
                    "template": {"metadata": {"labels": {"app": "d1"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
                }
            }),
        )
        .await;
        let mut victims = Vec::new();
        for i in 0..VICTIMS {
            victims.push(
                create(server, &cms, json!({"metadata": {"name": format!("victim-{i:02}")}, "data": {"k": "v"}})).await,
            );
        }
        Fixtures { namespace, cm, pod, deployment, victims }
    }
}

/// Every object the server holds: `collection namespace/name` → `uid@resourceVersion`.
pub async fn snapshot(server: &Server) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    for collection in COLLECTIONS {
        let (code, list) = server.get(collection).await;
        assert_eq!(code, 200, "listing {collection}: {list}");
        for item in list["items"].as_array().into_iter().flatten() {
            let meta = &item["metadata"];
            let key = format!(
                "{collection} {}/{}",
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or("")
            );
            all.insert(key, format!("{}@{}", uid(item), rv(item)));
        }
    }
    all
}

/// What changed between two snapshots, one line each.
pub fn differences(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, was) in before {
        match after.get(key) {
            None => out.push(format!("{key} was deleted")),
            Some(now) if now != was => out.push(format!("{key} changed ({was} -> {now})")),
            _ => {}
        }
    }
    for key in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("{key} was created"));
    }
    out
}
