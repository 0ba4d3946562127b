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
//! preemption: ...") and is parked, as kube-scheduler parks it (`scheduler/parked.rs`): it is
//! tried again when a node comes or changes in a way that matters (every parked pod), when a
//! bound pod leaves a node (the parked pods that fit that node, as many as it has room for),
//! when its own spec changes, and after five minutes. A failure that overlapped such a change
//! (one that could make the pod fit) backs off (1 s, doubled per attempt, at most 10 s)
//! instead of parking. With no nodes at all the scheduler waits (the stand-in kubelet then
//! runs pods unbound, as before nodes existed).
//!
//! Decisions are serialized (kube schedules one pod at a time) and each binding is "assumed"
//! until the informer shows it, so pods bound in a burst spread as the counts say.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use listwatch_client::http::Method;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, Object as _, Patch, SharedInformerFactory, Store,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use self::parked::{Failed, Parked};
use crate::common::{self, NODE_INDEX, Queue, Workers};
use crate::taints;

mod parked;

/// The scheduler name pods get by default.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";
/// How long a parked pod waits for a move before it is tried again anyway (kube-scheduler's
/// `podMaxInUnschedulablePodsDuration`).
const RETRY_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);

/// The scheduler's caches and its bookkeeping.
pub struct Scheduler {
    client: Client,
    queue: Queue,
    pods: Store<DynamicObject>,
    nodes: Store<DynamicObject>,
    /// Pods bound by this scheduler that the cache does not show bound yet, and their nodes.
    assumed: Mutex<HashMap<String, String>>,
    /// Pods that fit nowhere at their last try.
    parked: Mutex<Parked>,
    /// What the filters read of every node, taken from their JSON when a node comes, goes or
    /// changes how pods fit it (kube-scheduler's cache snapshot of `NodeInfo`s): ranking and
    /// filtering a pod against every node then reads no JSON but the pod's.
    node_infos: Mutex<Option<Arc<[NodeInfo]>>>,
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
    /// A scheduler of the pods in `pods` (indexed by [`NODE_INDEX`]) onto `nodes`.
    fn new(client: Client, queue: Queue, pods: Store<DynamicObject>, nodes: Store<DynamicObject>) -> Scheduler {
        Scheduler {
            client,
            queue,
            pods,
            nodes,
            assumed: Mutex::default(),
            parked: Mutex::default(),
            node_infos: Mutex::default(),
            next_start: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Registers the scheduler's handlers on `factory`'s pod and node informers.
    pub(crate) fn register(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Workers> {
        let pods = common::informer(factory, &ApiResource::pods());
        common::index_pods_by_node(&pods);
        let nodes = common::informer(factory, &ApiResource::nodes());
        let queue = common::queue("scheduler");
        let scheduler = Arc::new(Scheduler::new(client, queue.clone(), pods.store(), nodes.store()));
        let (on_add, on_update, on_delete) = (scheduler.clone(), scheduler.clone(), scheduler.clone());
        pods.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |pod, _| {
                    if needs_scheduling(pod) {
                        on_add.queue.add(pod.key());
                    }
                })
                .on_update(move |old, pod, _| on_update.pod_updated(old, pod))
                .on_delete(move |deleted| {
                    let key = deleted.key();
                    on_delete.assumed.lock().remove(&key);
                    on_delete.parked.lock().forget(&key);
                    if let Some(node) = node_name(deleted.object())
                        && !is_finished(deleted.object())
                    {
                        on_delete.node_freed(node);
                    }
                }),
        )?;
        let (on_add, on_update, on_delete) = (scheduler.clone(), scheduler.clone(), scheduler.clone());
        nodes.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |_, _| {
                    on_add.node_infos.lock().take();
                    on_add.retry_all();
                })
                .on_update(move |old, new, _| {
                    if schedulable_view(old) != schedulable_view(new) {
                        on_update.node_infos.lock().take();
                        on_update.retry_all();
                    }
                })
                .on_delete(move |_| {
                    on_delete.node_infos.lock().take();
                }),
        )?;
        let decide = Arc::new(tokio::sync::Mutex::new(()));
        let sync = Arc::new(move |key: String| {
            let (scheduler, decide) = (scheduler.clone(), decide.clone());
            async move { scheduler.schedule(&key, &decide).await }.boxed()
        });
        Ok(Workers { name: "scheduler", queue, sync })
    }

    /// A pod changed. An unbound one is queued unless it is parked and the change is one
    /// kube's queue ignores (its status, its resourceVersion: the scheduler's own Unschedulable
    /// report among them), so a parked pod waits for a move. A bound one that finished leaves
    /// its node, as a deleted one does (kube-scheduler does not see finished pods).
    fn pod_updated(&self, old: &DynamicObject, pod: &DynamicObject) {
        if let Some(node) = node_name(pod) {
            self.assumed.lock().remove(&pod.key());
            if node_name(old) == Some(node) && !is_finished(old) && is_finished(pod) {
                self.node_freed(node);
            }
            return;
        }
        if !needs_scheduling(pod) {
            self.parked.lock().forget(&pod.key());
            return;
        }
        let key = pod.key();
        if self.parked.lock().holds(&key) && scheduling_view(old) == scheduling_view(pod) {
            return;
        }
        self.queue.add(key);
    }

    /// A bound pod left `node` (deleted, or finished): the parked pods that fit there now,
    /// oldest first, as many as it has room for, are tried again. kube-scheduler's
    /// NodeResourcesFit hint queues every pod it rejected on any such event and lets backoff
    /// pace them; here only the one node that changed is read, so a rollout that deletes pods
    /// one by one does not filter thousands of parked pods against every node per deletion
    /// (a pod that fits no other node still fits none: only this node's count went down).
    fn node_freed(&self, node_name: &str) {
        // A node gone meanwhile fits nothing.
        let Some(node) = self.nodes.get(node_name).map(|node| NodeInfo::of(&node)) else { return };
        let mut load = self.load(node_name);
        let moved = self.parked.lock().take_in_order(node_name, |key| {
            let Some(pod) = self.pods.get(key).filter(|pod| needs_scheduling(pod)) else {
                return parked::Take::Forget;
            };
            match fit(&pod, &node, load) {
                Ok(()) => {
                    load += 1;
                    parked::Take::Move
                }
                Err(TOO_MANY_PODS) => parked::Take::Stop,
                Err(_) => parked::Take::Keep,
            }
        });
        for key in moved {
            self.queue.add(key);
        }
    }

    /// A node came or changed how pods fit it: every parked pod is tried again.
    fn retry_all(&self) {
        for key in self.parked.lock().take_all() {
            self.queue.add(key);
        }
    }

    /// The pods on `node` and those assumed onto it.
    fn load(&self, node: &str) -> usize {
        self.load_with(&self.assumed_per_node(), node)
    }

    /// [`Scheduler::load`] with the assumed pods per node counted once for many nodes.
    fn load_with(&self, assumed: &HashMap<String, usize>, node: &str) -> usize {
        self.pods.index_len(NODE_INDEX, node).unwrap_or(0) + assumed.get(node).copied().unwrap_or(0)
    }

    /// Binds the pod to a node, or records why it fits nowhere.
    async fn schedule(&self, key: &str, decide: &tokio::sync::Mutex<()>) -> anyhow::Result<Option<Duration>> {
        let Some(pod) = self.pods.get(key).filter(|pod| needs_scheduling(pod)) else {
            self.parked.lock().forget(key);
            return Ok(None);
        };
        let nodes = self.node_infos();
        let choice = {
            let _one_at_a_time = decide.lock().await;
            let cycle = self.parked.lock().cycle();
            let choice = if nodes.is_empty() {
                // Waits for the first node.
                Err(None)
            } else {
                self.choose(&pod, &nodes).map_err(Some)
            };
            match choice {
                Ok(node) => {
                    self.parked.lock().forget(key);
                    self.assumed.lock().insert(key.to_owned(), node.clone());
                    Ok(node)
                }
                Err(message) => {
                    let fits_now = |node: &str| {
                        self.nodes
                            .get(node)
                            .is_some_and(|node| fit(&pod, &NodeInfo::of(&node), self.load(node.name())).is_ok())
                    };
                    Err((message, self.parked.lock().failed(key, cycle, fits_now)))
                }
            }
        };
        match choice {
            Ok(node) => {
                let bound = self.bind(&pod, &node).await;
                if bound.is_err() {
                    self.assumed.lock().remove(key);
                }
                bound.map(|()| None)
            }
            Err((message, failed)) => {
                if let Some(message) = message {
                    self.report_unschedulable(&pod, &message).await?;
                }
                Ok(Some(match failed {
                    Failed::Parked => RETRY_UNSCHEDULABLE,
                    Failed::Backoff(backoff) => backoff,
                }))
            }
        }
    }

    /// The node for `pod`, or kube's message of why none fits.
    ///
    /// Nodes are tried fewest pods first (ties by name), so the first that fits is the answer
    /// and the filters run on one node in the common case rather than on every node for every
    /// pod (at 1,000 nodes and 100,000 pods that scan was most of the server's CPU). The least
    /// loaded of the nodes kube would look at ([`nodes_to_look_at`]) is found in one pass over
    /// them and the pod index, and tried alone; only when it does not fit are all the nodes
    /// sorted (at 5,000 nodes, sorting them for each pod held the one-at-a-time scheduler to
    /// 80 pods a second), and only when nothing fits are all of them filtered, for the message.
    fn choose(&self, pod: &DynamicObject, nodes: &[NodeInfo]) -> Result<String, String> {
        use std::sync::atomic::Ordering;
        let assumed = self.assumed_per_node();
        let load = |name: &str| self.load_with(&assumed, name);
        let look_at = nodes_to_look_at(nodes.len());
        let start = self.next_start.load(Ordering::Relaxed) % nodes.len().max(1);
        self.next_start.store((start + look_at) % nodes.len().max(1), Ordering::Relaxed);
        let window = nodes.iter().cycle().skip(start).take(look_at);
        let least = window.map(|node| (load(&node.name), node)).min_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
        if let Some((count, node)) = least
            && fit(pod, node, count).is_ok()
        {
            return Ok(node.name.clone());
        }
        let mut ranked: Vec<(usize, &NodeInfo)> = nodes.iter().map(|node| (load(&node.name), node)).collect();
        ranked.sort_unstable_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
        let mut reasons: HashMap<&'static str, usize> = HashMap::new();
        for (count, node) in ranked {
            match fit(pod, node, count) {
                Ok(()) => return Ok(node.name.clone()),
                Err(reason) => *reasons.entry(reason).or_default() += 1,
            }
        }
        Err(unschedulable_message(nodes.len(), &reasons))
    }

    /// Every node's [`NodeInfo`] (see `node_infos`), read from the cache after a change.
    fn node_infos(&self) -> Arc<[NodeInfo]> {
        let mut infos = self.node_infos.lock();
        infos.get_or_insert_with(|| self.nodes.list().iter().map(|node| NodeInfo::of(node)).collect()).clone()
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

/// Whether the pod waits for this scheduler.
fn needs_scheduling(pod: &DynamicObject) -> bool {
    let scheduler = pod.pointer("/spec/schedulerName").and_then(Value::as_str).unwrap_or("");
    node_name(pod).is_none()
        && (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER)
        && !common::is_deleting(pod)
        && !is_finished(pod)
}

fn node_name(pod: &DynamicObject) -> Option<&str> {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
}

/// Whether the pod has finished: it holds no place on its node any more.
fn is_finished(pod: &DynamicObject) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// What of a pod kube's queue compares to decide that an update to a parked pod is worth a
/// try (its `isPodUpdated`: all but the status, resourceVersion, generation, managedFields and
/// finalizers; here, what this scheduler reads).
fn scheduling_view(pod: &DynamicObject) -> (Option<&Value>, Option<&Value>, Option<&Value>) {
    (pod.pointer("/spec"), pod.pointer("/metadata/labels"), pod.pointer("/metadata/deletionTimestamp"))
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

/// The capacity filter's reason, the one a freed slot can change.
const TOO_MANY_PODS: &str = "Too many pods";

/// What the filters read of a node.
#[derive(Debug)]
struct NodeInfo {
    name: String,
    unschedulable: bool,
    /// Its NoSchedule and NoExecute taints, with `node.kubernetes.io/not-ready` added when
    /// the node is not reported Ready and carries neither that taint nor the unreachable one.
    taints: Vec<Value>,
    labels: serde_json::Map<String, Value>,
    /// Its allocatable `pods` (110 when it says nothing).
    capacity: u64,
}

impl NodeInfo {
    fn of(node: &DynamicObject) -> NodeInfo {
        let mut taints: Vec<Value> = taints::of_node(node)
            .into_iter()
            .filter(|t| matches!(taints::effect(t), "NoSchedule" | "NoExecute"))
            .cloned()
            .collect();
        if common::condition_status(node, "Ready") != Some("True")
            && !taints.iter().any(|t| matches!(taints::key(t), taints::NOT_READY | taints::UNREACHABLE))
        {
            taints.push(json!({"key": taints::NOT_READY, "effect": "NoSchedule"}));
        }
        NodeInfo {
            name: node.name().to_owned(),
            unschedulable: node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true),
            taints,
            labels: node.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default(),
            capacity: node
                .pointer("/status/allocatable/pods")
                .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64()))
                .unwrap_or(110),
        }
    }
}

/// Whether `pod` fits on `node`, which holds `pods` already; else the filter's reason, in
/// kube's words.
fn fit(pod: &DynamicObject, node: &NodeInfo, pods: usize) -> Result<(), &'static str> {
    if node.unschedulable {
        return Err("node(s) were unschedulable");
    }
    let node_taints: Vec<&Value> = node.taints.iter().collect();
    if let Some(taint) = taints::untolerated(pod, &node_taints) {
        // kube names the taint; the reasons here are static, so the two kube taints are.
        return Err(match taints::key(taint) {
            taints::UNREACHABLE => "node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
            taints::NOT_READY => "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
            _ => "node(s) had untolerated taint(s)",
        });
    }
    let selector = pod.pointer("/spec/nodeSelector").and_then(Value::as_object);
    if selector.into_iter().flatten().any(|(k, v)| node.labels.get(k).and_then(Value::as_str) != v.as_str()) {
        return Err("node(s) didn't match Pod's node affinity/selector");
    }
    if pods as u64 >= node.capacity {
        return Err(TOO_MANY_PODS);
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

    fn info(name: &str, labels: Value, ready: &str) -> NodeInfo {
        NodeInfo::of(&node(name, labels, ready))
    }

    #[test]
    fn a_pod_fits_a_ready_node_with_room_and_matching_labels() {
        let pod = DynamicObject::new(json!({"spec": {"nodeSelector": {"disk": "ssd"}}}));
        assert_eq!(fit(&pod, &info("a", json!({"disk": "ssd"}), "True"), 1), Ok(()));
        assert_eq!(fit(&pod, &info("a", json!({"disk": "ssd"}), "True"), 2), Err("Too many pods"));
        assert_eq!(
            fit(&pod, &info("a", json!({}), "True"), 0),
            Err("node(s) didn't match Pod's node affinity/selector")
        );
        assert!(fit(&pod, &info("a", json!({"disk": "ssd"}), "Unknown"), 0).unwrap_err().contains("not-ready"));
    }

    fn pod(name: &str, node: Option<&str>, phase: &str, selector: Value) -> Arc<DynamicObject> {
        Arc::new(DynamicObject::new(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "nodeSelector": selector}, "status": {"phase": phase}})))
    }

    /// A scheduler over node "a" (room for 2, holding p1 and p2) with q1 (a selector "a" does
    /// not match), q2, q3 and q4 parked in that order.
    fn full_node() -> Scheduler {
        let pods = Store::new();
        pods.add_indexer(NODE_INDEX, common::pods_by_node()).unwrap();
        let nodes = Store::new();
        nodes.insert(Arc::new(node("a", json!({}), "True")));
        let client = Client::new(listwatch_client::Config::new("http://127.0.0.1:1")).unwrap();
        let scheduler = Scheduler::new(client, common::queue("test"), pods, nodes);
        for bound in ["p1", "p2"] {
            scheduler.pods.insert(pod(bound, Some("a"), "Running", json!({})));
        }
        scheduler.pods.insert(pod("q1", None, "Pending", json!({"disk": "ssd"})));
        for waiting in ["q2", "q3", "q4"] {
            scheduler.pods.insert(pod(waiting, None, "Pending", json!({})));
        }
        let mut parked = scheduler.parked.lock();
        for key in ["default/q1", "default/q2", "default/q3", "default/q4"] {
            let cycle = parked.cycle();
            assert_eq!(parked.failed(key, cycle, |_| true), Failed::Parked);
        }
        drop(parked);
        scheduler
    }

    #[tokio::test]
    async fn a_bound_pod_leaving_moves_the_oldest_parked_pods_that_fit_its_place() {
        let scheduler = full_node();
        let p1 = scheduler.pods.remove("default/p1").unwrap();
        // What the pod informer's delete handler does.
        scheduler.node_freed(node_name(&p1).unwrap());
        assert_eq!(scheduler.queue.len(), 1);
        let parked = scheduler.parked.lock();
        assert!(parked.contains("default/q1"), "q1 does not fit node a");
        assert!(!parked.contains("default/q2"), "q2 fits the freed place");
        assert!(parked.contains("default/q3") && parked.contains("default/q4"), "one place, one pod");
    }

    #[tokio::test]
    async fn a_bound_pod_that_finishes_frees_its_place_and_a_status_report_queues_nothing() {
        let scheduler = full_node();
        let q3 = scheduler.pods.get("default/q3").unwrap();
        let mut reported = (*q3).clone();
        *reported.0.pointer_mut("/status").unwrap() = json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]});
        scheduler.pod_updated(&q3, &reported);
        assert_eq!(scheduler.queue.len(), 0, "a parked pod's own status changed nothing the scheduler reads");
        let running = scheduler.pods.get("default/p2").unwrap();
        let done = pod("p2", Some("a"), "Succeeded", json!({}));
        scheduler.pods.insert(done.clone());
        scheduler.pod_updated(&running, &done);
        assert_eq!(scheduler.queue.len(), 1);
        assert!(!scheduler.parked.lock().contains("default/q2"));
        let mut respecified = (*q3).clone();
        *respecified.0.pointer_mut("/spec/nodeSelector").unwrap() = json!({"disk": "hdd"});
        scheduler.pod_updated(&q3, &respecified);
        assert_eq!(scheduler.queue.len(), 2, "a parked pod whose spec changed is tried again");
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
