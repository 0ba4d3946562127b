//! The node lifecycle controller of kube-controller-manager (`pkg/controller/nodelifecycle`)
//! with its NoExecute taint eviction:
//!
//! * every node is checked each `--node-monitor-period` (5 s, kube's); a node whose Lease has
//!   not been renewed for `--node-monitor-grace-period` (40 s in kube), as this controller
//!   observed it (kube's probe timestamps: a renewal counts when it is seen, not by the
//!   writer's clock), gets its kubelet-owned conditions set `Unknown` (reason
//!   `NodeStatusUnknown`, "Kubelet stopped posting node status.");
//! * a node's Ready condition decides its taints, as kube's: `Unknown` →
//!   `node.kubernetes.io/unreachable` NoSchedule and NoExecute, `False` →
//!   `node.kubernetes.io/not-ready` both; `True` → neither (a node that came back is
//!   untainted);
//! * pods on a node with a NoExecute taint are deleted: at once if they do not tolerate it,
//!   after their toleration's `tolerationSeconds` from the taint's `timeAdded` if they do,
//!   never if it tolerates forever. A pod with no toleration of the unreachable or not-ready
//!   taint gets `--default-unreachable-toleration-seconds` (300 s), the toleration kube's
//!   DefaultTolerationSeconds admission adds to every pod (listwatch does not add it to the
//!   pod itself). The ReplicaSet controller replaces the deleted pods and the scheduler puts
//!   the replacements on nodes without the taint.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::FutureExt as _;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, Object as _, Patch, SharedInformerFactory, Store,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::NODE_INDEX;
use crate::common::{self, Workers};
use crate::nodes::{LEASE_NAMESPACE, leases};
use crate::taints;

/// The conditions a kubelet reports, which go Unknown when it stops.
const KUBELET_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The controller's tunables.
#[derive(Clone, Debug)]
pub struct LifecycleOptions {
    /// How often each node is checked (kube's `--node-monitor-period`, 5 s).
    pub monitor_period: Duration,
    /// How long a node's Lease may go unrenewed before the node is unreachable (kube's
    /// `--node-monitor-grace-period`, 40 s).
    pub grace_period: Duration,
    /// The `tolerationSeconds` of the toleration of the unreachable and not-ready taints a pod
    /// without one gets (kube's `--default-unreachable-toleration-seconds`, 300).
    pub default_toleration: Duration,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        LifecycleOptions {
            monitor_period: Duration::from_secs(5),
            grace_period: Duration::from_secs(40),
            default_toleration: Duration::from_secs(300),
        }
    }
}

/// The controller's caches and what it observed of the Leases.
pub struct NodeLifecycle {
    client: Client,
    nodes: Store<DynamicObject>,
    pods: Store<DynamicObject>,
    /// Per node: the Lease's last renewTime seen, and when it was seen to change.
    renewals: Arc<Mutex<HashMap<String, (String, Instant)>>>,
    options: LifecycleOptions,
}

impl NodeLifecycle {
    /// Registers the controller's handlers on `factory`'s node, Lease and pod informers.
    pub(crate) fn register(
        client: Client,
        factory: &SharedInformerFactory,
        options: LifecycleOptions,
    ) -> anyhow::Result<Workers> {
        let nodes = common::informer(factory, &ApiResource::nodes());
        let pods = common::informer(factory, &ApiResource::pods());
        common::index_pods_by_node(&pods);
        let lease_informer = common::informer(factory, &leases());
        let queue = common::queue("node-lifecycle");
        let (q_add, q_update) = (queue.clone(), queue.clone());
        nodes.add_event_handler(
            HandlerFns::<DynamicObject>::new().on_add(move |node, _| q_add.add(node.key())).on_update(
                move |old, node, _| {
                    if old.pointer("/spec") != node.pointer("/spec")
                        || common::condition_status(old, "Ready") != common::condition_status(node, "Ready")
                    {
                        q_update.add(node.key());
                    }
                },
            ),
        )?;
        let renewals: Arc<Mutex<HashMap<String, (String, Instant)>>> = Arc::default();
        let (r_add, r_update) = (renewals.clone(), renewals.clone());
        lease_informer.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |lease, _| observe(&r_add, lease))
                .on_update(move |_, lease, _| observe(&r_update, lease)),
        )?;
        let controller =
            Arc::new(NodeLifecycle { client, nodes: nodes.store(), pods: pods.store(), renewals, options });
        let sync = Arc::new(move |key: String| {
            let controller = controller.clone();
            async move { controller.sync(&key).await }.boxed()
        });
        Ok(Workers { name: "node-lifecycle", queue, sync })
    }

    /// Checks one node's health, taints and pods; asks to be checked again a period later.
    async fn sync(&self, name: &str) -> anyhow::Result<Option<Duration>> {
        let Some(node) = self.nodes.get(name) else {
            self.renewals.lock().remove(name);
            return Ok(None);
        };
        let last_seen =
            self.renewals.lock().entry(name.to_owned()).or_insert_with(|| (String::new(), Instant::now())).1;
        let mut ready = common::condition_status(&node, "Ready").unwrap_or("Unknown").to_owned();
        if last_seen.elapsed() > self.options.grace_period && ready != "Unknown" {
            self.mark_unknown(&node).await?;
            ready = "Unknown".to_owned();
        }
        let taints = self.reconcile_taints(&node, &ready).await?;
        let next = self.evict(name, &taints).await?;
        Ok(Some(next.map_or(self.options.monitor_period, |n| n.min(self.options.monitor_period))))
    }

    /// Sets the kubelet's conditions Unknown, as kube's `tryUpdateNodeHealth`.
    async fn mark_unknown(&self, node: &DynamicObject) -> anyhow::Result<()> {
        let now = common::now_rfc3339();
        let mut conditions: Vec<Value> =
            node.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        for type_ in KUBELET_CONDITIONS {
            let unknown = |heartbeat: Value| {
                json!({"type": type_, "status": "Unknown", "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": now})
            };
            match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)) {
                Some(c) if c.get("status").and_then(Value::as_str) == Some("Unknown") => {}
                Some(c) => *c = unknown(c.get("lastHeartbeatTime").cloned().unwrap_or(Value::Null)),
                // kube: "NodeStatusNeverUpdated", "Kubelet never posted node status."
                None => {
                    let mut c = unknown(Value::Null);
                    c["reason"] = json!("NodeStatusNeverUpdated");
                    c["message"] = json!("Kubelet never posted node status.");
                    conditions.push(c);
                }
            }
        }
        tracing::info!(node = node.name(), "node stopped renewing its lease; marking it unreachable");
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::nodes(), None);
        ignore_gone(api.patch_status(node.name(), &Patch::Merge(json!({"status": {"conditions": conditions}}))).await)
    }

    /// Puts the taints the Ready condition calls for and removes the others of ours; returns
    /// the node's taints after.
    async fn reconcile_taints(&self, node: &DynamicObject, ready: &str) -> anyhow::Result<Vec<Value>> {
        let current: Vec<Value> = taints::of_node(node).into_iter().cloned().collect();
        let wanted_key = match ready {
            "True" => None,
            "False" => Some(taints::NOT_READY),
            _ => Some(taints::UNREACHABLE),
        };
        let ours = |t: &Value| matches!(taints::key(t), taints::NOT_READY | taints::UNREACHABLE);
        let mut next: Vec<Value> =
            current.iter().filter(|t| !ours(t) || Some(taints::key(t)) == wanted_key).cloned().collect();
        if let Some(key) = wanted_key {
            for effect in ["NoSchedule", "NoExecute"] {
                if !next.iter().any(|t| taints::key(t) == key && taints::effect(t) == effect) {
                    let mut taint = json!({"key": key, "effect": effect});
                    if effect == "NoExecute" {
                        taint["timeAdded"] = json!(common::now_rfc3339());
                    }
                    next.push(taint);
                }
            }
        }
        if next != current {
            let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::nodes(), None);
            let taints = if next.is_empty() { Value::Null } else { json!(next) };
            ignore_gone(api.patch(node.name(), &Patch::Merge(json!({"spec": {"taints": taints}}))).await)?;
        }
        Ok(next)
    }

    /// Deletes the pods on the node that its NoExecute taints evict now; returns how long until
    /// the next one is due, if one is.
    async fn evict(&self, node: &str, node_taints: &[Value]) -> anyhow::Result<Option<Duration>> {
        let no_execute: Vec<&Value> = node_taints.iter().filter(|t| taints::effect(t) == "NoExecute").collect();
        if no_execute.is_empty() {
            return Ok(None);
        }
        let mut next: Option<Duration> = None;
        for pod in self.pods.by_index(NODE_INDEX, node).unwrap_or_default() {
            if common::is_deleting(&pod) {
                continue;
            }
            let default = self.options.default_toleration;
            let due = no_execute.iter().map(|t| eviction_due(&pod, t, default)).max().flatten();
            let Some(due) = due else { continue };
            match due.duration_since(SystemTime::now()) {
                Ok(wait) if !wait.is_zero() => next = Some(next.map_or(wait, |n| n.min(wait))),
                _ => {
                    tracing::info!(node, pod = pod.key(), "evicting a pod from a NoExecute-tainted node");
                    let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::pods(), pod.namespace());
                    ignore_gone(api.delete(pod.name()).await)?;
                }
            }
        }
        Ok(next)
    }
}

/// When `taint` evicts `pod`: `None` for never (tolerated forever), else the time; `default`
/// is the toleration of a pod that has none for the unreachable and not-ready taints.
fn eviction_due(pod: &DynamicObject, taint: &Value, default: Duration) -> Option<SystemTime> {
    let added = taint
        .get("timeAdded")
        .and_then(Value::as_str)
        .and_then(listwatch_client::rfc3339::parse)
        .unwrap_or_else(SystemTime::now);
    let seconds = match taints::toleration_for(pod, taint) {
        Some(toleration) => match toleration.get("tolerationSeconds").and_then(Value::as_i64) {
            Some(s) => Duration::from_secs(s.max(0) as u64),
            None => return None,
        },
        None if matches!(taints::key(taint), taints::UNREACHABLE | taints::NOT_READY) => default,
        None => Duration::ZERO,
    };
    Some(added + seconds)
}

/// Records a node Lease's renewTime, and when it was seen to change.
fn observe(renewals: &Mutex<HashMap<String, (String, Instant)>>, lease: &DynamicObject) {
    if lease.namespace() != Some(LEASE_NAMESPACE) {
        return;
    }
    let renew = lease.pointer("/spec/renewTime").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut renewals = renewals.lock();
    match renewals.get_mut(lease.name()) {
        Some((seen, _)) if *seen == renew => {}
        _ => {
            renewals.insert(lease.name().to_owned(), (renew, Instant::now()));
        }
    }
}

fn ignore_gone<T>(result: Result<T, listwatch_client::Error>) -> anyhow::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some(404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toleration_sets_when_a_pod_is_evicted_and_the_default_applies_without_one() {
        let taint = json!({"key": taints::UNREACHABLE, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"});
        let added = listwatch_client::rfc3339::parse("2026-01-01T00:00:00Z").unwrap();
        let default = Duration::from_secs(300);
        let due = |pod: Value| eviction_due(&DynamicObject::new(pod), &taint, default);
        assert_eq!(due(json!({})), Some(added + default));
        let tolerating = |extra: Value| {
            let mut toleration = json!({"key": taints::UNREACHABLE, "operator": "Exists", "effect": "NoExecute"});
            toleration.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            json!({"spec": {"tolerations": [toleration]}})
        };
        assert_eq!(due(tolerating(json!({"tolerationSeconds": 5}))), Some(added + Duration::from_secs(5)));
        assert_eq!(due(tolerating(json!({}))), None);
        let other = json!({"key": "other", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"});
        assert_eq!(eviction_due(&DynamicObject::new(json!({})), &other, default), Some(added));
    }
}
