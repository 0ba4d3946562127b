//! The writer: one task that creates, updates and deletes ConfigMaps at a steady rate, with a
//! seeded random choice of what to do next. Updates carry the resourceVersion last seen (a
//! guarded update, as a controller writes) and sometimes flip the `app` label between `a` and
//! `b`, which moves the object in and out of label-selector watches. Writes that fail (a
//! throttle, a storage outage, a restarting server) are counted and skipped; what storage
//! applied is read from its history, so an unknown outcome does not matter to the checker.
//! Every write the server acknowledged is kept, to check that none of them was lost.

use std::collections::BTreeMap;
use std::time::Duration;

use listwatch_client::{Api, ApiResource, Client, DynamicObject, Object};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::sync::watch;

use listwatch_simulator::record::Acknowledged;

use super::scenario::{DeploymentChurn, Workload};

/// What the writer did.
#[derive(Debug, Default)]
pub struct WriterReport {
    /// Writes acknowledged.
    pub acknowledged: Vec<Acknowledged>,
    /// Writes that failed (or whose outcome is unknown).
    pub failed: usize,
}

/// The namespaces the objects are spread over.
pub fn namespaces(workload: &Workload) -> Vec<String> {
    (0..workload.namespaces.max(1)).map(|i| format!("sim-{i}")).collect()
}

/// Creates the workload's namespaces.
pub async fn prepare(client: &Client, workload: &Workload) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::new(client.clone(), ApiResource::namespaces(), None);
    for name in namespaces(workload) {
        match api.create(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})).await {
            Ok(_) => {}
            Err(listwatch_client::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// An object the writer believes is there.
#[derive(Clone)]
struct Live {
    namespace: String,
    name: String,
    resource_version: String,
    app: &'static str,
}

/// Writes until `stop` turns true.
pub async fn run(client: Client, workload: Workload, seed: u64, mut stop: watch::Receiver<bool>) -> WriterReport {
    let mut rng = StdRng::seed_from_u64(seed);
    let namespaces = namespaces(&workload);
    let apis: BTreeMap<&str, Api<DynamicObject>> = namespaces
        .iter()
        .map(|ns| (ns.as_str(), Api::new(client.clone(), ApiResource::configmaps(), Some(ns))))
        .collect();
    let mut live: BTreeMap<String, Live> = BTreeMap::new();
    let mut report = WriterReport::default();
    let mut next_name = 0u64;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / workload.rate));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let payload = "x".repeat(workload.size);
    let target = (workload.objects as usize).max(1);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|s| *s) => return report,
        }
        let roll: f64 = rng.random();
        let create = live.len() < target / 2 || (live.len() < target && roll < 0.3);
        let delete = !create && (live.len() > target * 3 / 2 || roll > 0.9);
        if create {
            let ns = namespaces[rng.random_range(0..namespaces.len())].clone();
            let name = format!("obj-{next_name}");
            next_name += 1;
            let app = if rng.random_bool(0.5) { "a" } else { "b" };
            let object = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"app": app}},
                "data": {"seq": "0", "payload": payload},
            });
            match apis[ns.as_str()].create(&object).await {
                Ok(created) => {
                    let rv = acknowledge(&mut report, &created, false);
                    live.insert(created.key(), Live { namespace: ns, name, resource_version: rv, app });
                }
                Err(_) => report.failed += 1,
            }
            continue;
        }
        let index = rng.random_range(0..live.len());
        let (key, object) = live.iter().nth(index).map(|(k, v)| (k.clone(), v.clone())).expect("an index in range");
        let api = &apis[object.namespace.as_str()];
        if delete {
            match api.delete(&object.name).await {
                Ok(()) => {
                    live.remove(&key);
                    let revision = object.resource_version.parse().unwrap_or(-1);
                    report.acknowledged.push(Acknowledged { key, revision, delete: true });
                }
                Err(e) => {
                    report.failed += 1;
                    refresh(api, &mut live, &key, &e).await;
                }
            }
            continue;
        }
        let app = if rng.random_range(0..100u8) < workload.label_flips {
            if object.app == "a" { "b" } else { "a" }
        } else {
            object.app
        };
        let seq: u64 = rng.random();
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": object.name, "namespace": object.namespace,
                "resourceVersion": object.resource_version, "labels": {"app": app},
            },
            "data": {"seq": seq.to_string(), "payload": payload},
        });
        match api.replace(&object.name, &body).await {
            Ok(updated) => {
                let rv = acknowledge(&mut report, &updated, false);
                live.insert(key, Live { resource_version: rv, app, ..object });
            }
            Err(e) => {
                report.failed += 1;
                refresh(api, &mut live, &key, &e).await;
            }
        }
    }
}

/// Records an acknowledged write; returns its resourceVersion.
fn acknowledge(report: &mut WriterReport, object: &DynamicObject, delete: bool) -> String {
    let rv = object.resource_version().unwrap_or_default().to_string();
    report.acknowledged.push(Acknowledged { key: object.key(), revision: rv.parse().unwrap_or(-1), delete });
    rv
}

/// After a failed write whose outcome may be unknown (a 409 means an earlier write did land):
/// reads the object again, or forgets it if it is gone.
async fn refresh(
    api: &Api<DynamicObject>,
    live: &mut BTreeMap<String, Live>,
    key: &str,
    error: &listwatch_client::Error,
) {
    let conflict = matches!(error, listwatch_client::Error::Api(s) if s.code == 409 || s.code == 404);
    if !conflict {
        return;
    }
    let Some(object) = live.get(key).cloned() else { return };
    match api.get_opt(&object.name).await {
        Ok(Some(current)) => {
            let app = if current.label("app") == Some("a") { "a" } else { "b" };
            let resource_version = current.resource_version().unwrap_or_default().to_string();
            live.insert(key.to_string(), Live { resource_version, app, ..object });
        }
        Ok(None) => {
            live.remove(key);
        }
        Err(_) => {}
    }
}

/// Creates the churn's deployments in the first namespace, then scales one of them (chosen by
/// the seed) to a random size every period until `stop`: the controllers turn that into pods
/// created, started and deleted, the churn a cluster's pod watchers see.
pub async fn churn(
    client: Client,
    churn: DeploymentChurn,
    seed: u64,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<u64> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6465_706c_6f79);
    let namespace = "sim-0";
    let api: Api<DynamicObject> = Api::new(client, ApiResource::deployments(), Some(namespace));
    let count = churn.count.max(1);
    for i in 0..count {
        let name = format!("churn-{i}");
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"churn": name}},
                "template": {"metadata": {"labels": {"churn": name}},
                             "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}
            }
        });
        match api.create(&deployment).await {
            Ok(_) => {}
            Err(listwatch_client::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(anyhow::Error::from(e).context(format!("creating deployment {name}"))),
        }
    }
    let mut scales = 0;
    let mut ticker = tokio::time::interval(churn.every.0.max(Duration::from_millis(10)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|s| *s) => return Ok(scales),
        }
        let name = format!("churn-{}", rng.random_range(0..count));
        let replicas = rng.random_range(0..=churn.max_replicas);
        let patch = listwatch_client::Patch::Merge(json!({"spec": {"replicas": replicas}}));
        // A failure (a fault the scenario causes) is the scenario's business, not the churn's.
        if api.patch(&name, &patch).await.is_ok() {
            scales += 1;
        }
    }
}
