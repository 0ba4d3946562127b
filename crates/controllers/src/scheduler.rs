//! A small kube-scheduler: every pending pod with no `spec.nodeName` whose `schedulerName` is
//! `default-scheduler` (or unset) is bound, through the `pods/{name}/binding` subresource, to
//! the node with the fewest pods (ties by name) among those it fits on; in a cluster of more
//! than 100 nodes, among the share of them kube-scheduler looks at for one pod
//! (`percentageOfNodesToScore`'s adaptive default: 50 % less 1 % per 125 nodes, at least 5 %
//! and 100 nodes), taken from where the last pod's search stopped. A node fits as kube's
//! default filters decide, in their order: not `spec.unschedulable`; no NoSchedule or
//! NoExecute taint the pod does not tolerate (a node not reported Ready counts as tainted
//! `node.kubernetes.io/not-ready`); the pod's `spec.nodeSelector`; room under the node's
//! allocatable `pods`. Resource requests, affinity and spreading are not considered.
//!
//! A pod that fits nowhere gets `PodScheduled=False`, reason `Unschedulable`, with kube's
//! message ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.
//! preemption: ..."), and is tried again when a node changes in a way that matters, when a
//! bound pod goes away, and every minute. With no nodes at all the scheduler waits (the
//! stand-in kubelet then runs pods unbound, as before nodes existed).
//!
//! Decisions are serialized (kube schedules one pod at a time) and each binding is "assumed"
//! until the informer shows it, so pods bound in a burst spread as the counts say.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use listwatch_client::http::Method;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, Object as _, Patch, SharedInformerFactory, Store,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::{self, NODE_INDEX, Queue, Workers};
use crate::taints;

/// The scheduler name pods get by default.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";
/// How often an unschedulable pod is tried again without any change.
const RETRY_UNSCHEDULABLE: Duration = Duration::from_secs(60);

/// The scheduler's caches and its bookkeeping.
pub struct Scheduler {
    client: Client,
    pods: Store<DynamicObject>,
    nodes: Store<DynamicObject>,
    /// Pods bound by this scheduler that the cache does not show bound yet, and their nodes.
    assumed: Arc<Mutex<HashMap<String, String>>>,
    /// Pods that fit nowhere at their last try.
    unschedulable: Arc<Mutex<HashSet<String>>>,
    /// The nodes' names, read once from their JSON and kept until a node is added or deleted
    /// (a name never changes): ranking the nodes for each pod reads only the pod index.
    node_names: Arc<Mutex<Option<Arc<[String]>>>>,
    /// Where the next pod's look at the nodes starts (kube's `nextStartNodeIndex`).
    next_start: std::sync::atomic::AtomicUsize,
}

/// How many of `nodes` kube-scheduler looks at for one pod: all of up to 100, else its
/// adaptive `percentageOfNodesToScore` (50 % less 1 % per 125 nodes, at least 5 %), at least 100
/// (`numFeasibleNodesToFind`).
fn nodes_to_look_at(nodes: usize) -> usize {
    const MIN_NODES: usize = 100;
    if nodes < MIN_NODES {
        return nodes;
    }
    let percent = 50usize.saturating_sub(nodes / 125).max(5);
    (nodes * percent / 100).max(MIN_NODES)
}

impl Scheduler {
    /// Registers the scheduler's handlers on `factory`'s pod and node informers.
    pub(crate) fn register(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Workers> {
        let pods = common::informer(factory, &ApiResource::pods());
        common::index_pods_by_node(&pods);
        let nodes = common::informer(factory, &ApiResource::nodes());
        let queue = common::queue("scheduler");
        let assumed: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let unschedulable: Arc<Mutex<HashSet<String>>> = Arc::default();
        let retry_all = {
            let (queue, unschedulable) = (queue.clone(), unschedulable.clone());
            move || retry(&queue, &unschedulable)
        };
        let (q_add, q_update, a_update, a_delete, u_delete) =
            (queue.clone(), queue.clone(), assumed.clone(), assumed.clone(), unschedulable.clone());
        let retry_on_delete = retry_all.clone();
        pods.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |pod, _| {
                    if needs_scheduling(pod) {
                        q_add.add(pod.key());
                    }
                })
                .on_update(move |_, pod, _| {
                    if node_name(pod).is_some() {
                        a_update.lock().remove(&pod.key());
                    }
                    if needs_scheduling(pod) {
                        q_update.add(pod.key());
                    }
                })
                .on_delete(move |deleted| {
                    a_delete.lock().remove(&deleted.key());
                    u_delete.lock().remove(&deleted.key());
                    if node_name(deleted.object()).is_some() {
                        retry_on_delete();
                    }
                }),
        )?;
        let retry_on_add = retry_all.clone();
        let node_names: Arc<Mutex<Option<Arc<[String]>>>> = Arc::default();
        let (names_added, names_deleted) = (node_names.clone(), node_names.clone());
        nodes.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |_, _| {
                    names_added.lock().take();
                    retry_on_add();
                })
                .on_update(move |old, new, _| {
                    if schedulable_view(old) != schedulable_view(new) {
                        retry_all();
                    }
                })
                .on_delete(move |_| {
                    names_deleted.lock().take();
                }),
        )?;
        let scheduler = Arc::new(Scheduler {
            client,
            pods: pods.store(),
            nodes: nodes.store(),
            assumed,
            unschedulable,
            node_names,
            next_start: std::sync::atomic::AtomicUsize::new(0),
        });
        let decide = Arc::new(tokio::sync::Mutex::new(()));
        let sync = Arc::new(move |key: String| {
            let (scheduler, decide) = (scheduler.clone(), decide.clone());
            async move { scheduler.schedule(&key, &decide).await }.boxed()
        });
        Ok(Workers { name: "scheduler", queue, sync })
    }

    /// Binds the pod to a node, or records why it fits nowhere.
    async fn schedule(&self, key: &str, decide: &tokio::sync::Mutex<()>) -> anyhow::Result<Option<Duration>> {
        let Some(pod) = self.pods.get(key) else {
            self.unschedulable.lock().remove(key);
            return Ok(None);
        };
        if !needs_scheduling(&pod) {
            self.unschedulable.lock().remove(key);
            return Ok(None);
        }
        let names = self.node_names();
        if names.is_empty() {
            // Waits for the first node.
            self.unschedulable.lock().insert(key.to_owned());
            return Ok(None);
        }
        let choice = {
            let _one_at_a_time = decide.lock().await;
            let choice = self.choose(&pod, &names);
            if let Ok(node) = &choice {
                self.assumed.lock().insert(key.to_owned(), node.clone());
            }
            choice
        };
        match choice {
            Ok(node) => {
                self.unschedulable.lock().remove(key);
                let bound = self.bind(&pod, &node).await;
                if bound.is_err() {
                    self.assumed.lock().remove(key);
                }
                bound.map(|()| None)
            }
            Err(message) => {
                self.unschedulable.lock().insert(key.to_owned());
                self.report_unschedulable(&pod, &message).await?;
                Ok(Some(RETRY_UNSCHEDULABLE))
            }
        }
    }

    /// The node for `pod`, or kube's message of why none fits.
    ///
    /// Nodes are tried fewest pods first (ties by name), so the first that fits is the answer
    /// and the filters, which read each node's JSON, run on one node in the common case rather
    /// than on every node for every pod (at 1,000 nodes and 100,000 pods that scan was most of
    /// the server's CPU). The least loaded of the nodes kube would look at
    /// ([`nodes_to_look_at`]) is found in one pass over their names and the pod index, and tried
    /// alone; only when it does not fit are all the nodes read and sorted (at 5,000 nodes,
    /// reading every node's name from its JSON and sorting them for each pod was a third of
    /// the server's CPU and held the one-at-a-time scheduler to 80 pods a second), and only
    /// when nothing fits are all of them filtered, for the message.
    fn choose(&self, pod: &DynamicObject, names: &[String]) -> Result<String, String> {
        use std::sync::atomic::Ordering;
        let pending = self.assumed_per_node();
        let load =
            |name: &str| self.pods.index_len(NODE_INDEX, name).unwrap_or(0) + pending.get(name).copied().unwrap_or(0);
        let look_at = nodes_to_look_at(names.len());
        let start = self.next_start.load(Ordering::Relaxed) % names.len().max(1);
        self.next_start.store((start + look_at) % names.len().max(1), Ordering::Relaxed);
        let window = names.iter().cycle().skip(start).take(look_at);
        let least = window.map(|name| (load(name), name)).min();
        if let Some((count, name)) = least
            && let Some(node) = self.nodes.get(name)
            && fit(pod, &node, count).is_ok()
        {
            return Ok(name.clone());
        }
        let nodes = self.nodes.list();
        let mut ranked: Vec<(usize, &str, &DynamicObject)> =
            nodes.iter().map(|node| (load(node.name()), node.name(), node.as_ref())).collect();
        ranked.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut reasons: HashMap<&'static str, usize> = HashMap::new();
        for (count, name, node) in ranked {
            match fit(pod, node, count) {
                Ok(()) => return Ok(name.to_owned()),
                Err(reason) => *reasons.entry(reason).or_default() += 1,
            }
        }
        Err(unschedulable_message(nodes.len(), &reasons))
    }

    /// The nodes' names (see `node_names`), read from the cache when a node came or went.
    fn node_names(&self) -> Arc<[String]> {
        let mut names = self.node_names.lock();
        names.get_or_insert_with(|| self.nodes.list().iter().map(|n| n.name().to_owned()).collect()).clone()
    }

    /// Per node, the pods assumed onto it that the cache does not show bound yet.
    fn assumed_per_node(&self) -> HashMap<String, usize> {
        let mut per_node: HashMap<String, usize> = HashMap::new();
        for (key, node) in self.assumed.lock().iter() {
            if self.pods.get(key).is_some_and(|p| node_name(&p).is_none()) {
                *per_node.entry(node.clone()).or_default() += 1;
            }
        }
        per_node
    }

    /// POSTs the Binding; a pod bound or gone meanwhile is no error.
    async fn bind(&self, pod: &DynamicObject, node: &str) -> anyhow::Result<()> {
        let namespace = pod.namespace().unwrap_or("default");
        let path = format!("{}/binding", ApiResource::pods().object_path(Some(namespace), pod.name()));
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name(), "namespace": namespace, "uid": pod.uid()},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let body = Some(("application/json", bytes::Bytes::from(binding.to_string())));
        match self.client.request(Method::POST, &path, "application/json", body).await {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.code(), Some(404 | 409)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets `PodScheduled=False, Unschedulable` with `message`, unless the pod says so already.
    async fn report_unschedulable(&self, pod: &DynamicObject, message: &str) -> anyhow::Result<()> {
        let current = common::condition(pod, "PodScheduled");
        let text = |field: &str| current.and_then(|c| c.get(field)).and_then(Value::as_str);
        if text("status") == Some("False")
            && text("reason") == Some("Unschedulable")
            && text("message") == Some(message)
        {
            return Ok(());
        }
        let condition = json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": null, "lastTransitionTime": common::now_rfc3339()});
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::pods(), pod.namespace());
        let patch = Patch::Strategic(json!({"status": {"conditions": [condition]}}));
        match api.patch_status(pod.name(), &patch).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Queues every pod that fit nowhere at its last try.
fn retry(queue: &Queue, unschedulable: &Mutex<HashSet<String>>) {
    for key in unschedulable.lock().iter() {
        queue.add(key.clone());
    }
}

/// Whether the pod waits for this scheduler.
fn needs_scheduling(pod: &DynamicObject) -> bool {
    let scheduler = pod.pointer("/spec/schedulerName").and_then(Value::as_str).unwrap_or("");
    node_name(pod).is_none()
        && (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER)
        && !common::is_deleting(pod)
        && !matches!(phase(pod), "Succeeded" | "Failed")
}

fn node_name(pod: &DynamicObject) -> Option<&str> {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
}

fn phase(pod: &DynamicObject) -> &str {
    pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending")
}

/// What of a node decides where pods fit: a change elsewhere (a heartbeat) retries nothing.
fn schedulable_view(node: &DynamicObject) -> (Option<&Value>, Option<&Value>, Option<&str>, Option<&Value>) {
    (
        node.pointer("/spec"),
        node.pointer("/metadata/labels"),
        common::condition_status(node, "Ready"),
        node.pointer("/status/allocatable/pods"),
    )
}

/// Whether `pod` fits on `node`, which holds `pods` already; else the filter's reason, in
/// kube's words.
fn fit(pod: &DynamicObject, node: &DynamicObject, pods: usize) -> Result<(), &'static str> {
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        return Err("node(s) were unschedulable");
    }
    let mut node_taints = taints::of_node(node);
    let not_ready = json!({"key": taints::NOT_READY, "effect": "NoSchedule"});
    if common::condition_status(node, "Ready") != Some("True")
        && !node_taints.iter().any(|t| matches!(taints::key(t), taints::NOT_READY | taints::UNREACHABLE))
    {
        node_taints.push(&not_ready);
    }
    if let Some(taint) = taints::untolerated(pod, &node_taints) {
        // kube names the taint; the reasons here are static, so the two kube taints are.
        return Err(match taints::key(taint) {
            taints::UNREACHABLE => "node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
            taints::NOT_READY => "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
            _ => "node(s) had untolerated taint(s)",
        });
    }
    let selector = pod.pointer("/spec/nodeSelector").and_then(Value::as_object);
    if selector.into_iter().flatten().any(|(k, v)| node.label(k) != v.as_str()) {
        return Err("node(s) didn't match Pod's node affinity/selector");
    }
    let capacity = node
        .pointer("/status/allocatable/pods")
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64()))
        .unwrap_or(110);
    if pods as u64 >= capacity {
        return Err("Too many pods");
    }
    Ok(())
}

/// kube's `FitError` message, with the preemption part its default post-filter adds.
fn unschedulable_message(nodes: usize, reasons: &HashMap<&'static str, usize>) -> String {
    let mut parts: Vec<String> = reasons.iter().map(|(reason, n)| format!("{n} {reason}")).collect();
    parts.sort();
    format!(
        "0/{nodes} nodes are available: {}. preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.",
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: Value, ready: &str) -> DynamicObject {
        DynamicObject::new(json!({"metadata": {"name": name, "labels": labels}, "spec": {},
            "status": {"allocatable": {"pods": "2"}, "conditions": [{"type": "Ready", "status": ready}]}}))
    }

    #[test]
    fn a_pod_fits_a_ready_node_with_room_and_matching_labels() {
        let pod = DynamicObject::new(json!({"spec": {"nodeSelector": {"disk": "ssd"}}}));
        assert_eq!(fit(&pod, &node("a", json!({"disk": "ssd"}), "True"), 1), Ok(()));
        assert_eq!(fit(&pod, &node("a", json!({"disk": "ssd"}), "True"), 2), Err("Too many pods"));
        assert_eq!(
            fit(&pod, &node("a", json!({}), "True"), 0),
            Err("node(s) didn't match Pod's node affinity/selector")
        );
        assert!(fit(&pod, &node("a", json!({"disk": "ssd"}), "Unknown"), 0).unwrap_err().contains("not-ready"));
    }

    #[test]
    fn looks_at_the_share_of_nodes_kube_scheduler_does() {
        // kube's numFeasibleNodesToFind with percentageOfNodesToScore unset.
        assert_eq!(nodes_to_look_at(3), 3);
        assert_eq!(nodes_to_look_at(99), 99);
        assert_eq!(nodes_to_look_at(150), 100);
        assert_eq!(nodes_to_look_at(1000), 420);
        assert_eq!(nodes_to_look_at(5000), 500);
        assert_eq!(nodes_to_look_at(100_000), 5000);
    }

    #[test]
    fn the_message_counts_reasons_as_kube_does() {
        let reasons = HashMap::from([("node(s) didn't match Pod's node affinity/selector", 2), ("Too many pods", 1)]);
        assert_eq!(
            unschedulable_message(3, &reasons),
            "0/3 nodes are available: 1 Too many pods, 2 node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
    }
}
