//! The kubelet's part of a pod's life, which listwatch has no kubelets for, played by
//! [`crate::stages`]: on every pod event the heaviest stage that selects the pod is
//! planned after its delay; when the delay is over and the stage still selects the pod, its
//! `next` is applied through the REST API (the status subresource, a delete, finalizers, an
//! Event). The default stages make a pod ContainerCreating, then Running and Ready with what
//! `kubectl get pods -o wide` and `kubectl describe pod` show of a real one.
//!
//! One plan per pod: an event that selects the stage already planned keeps its timer (a pod
//! changed by others still starts on time), one that selects another stage replaces it. Pod
//! IPs are given out from 10.244.0.0/16.
//!
//! Once any node exists, stages apply only to pods bound to a node whose kubelet would be
//! running: one that exists and whose heartbeats are not stopped
//! ([`crate::nodes::STOPPED_ANNOTATION`]); with no nodes at all (`--nodes 0`) every pod moves,
//! unbound. Deleting a pod bound to a node is finished by the `pod-delete` stage, or, where no
//! kubelet plays (this controller off, the node gone), by the server when the grace period
//! ends (crates/apiserver/src/controllers/graceful.rs).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures::FutureExt as _;
use listwatch_client::{
    Api, ApiResource, Client, DeleteParams, DynamicObject, HandlerFns, Lister, Object as _, Patch, Preconditions,
    SharedInformerFactory, Store,
};
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::common::{self, Queue, Workers};
use crate::stages::{self, Stage, StageSet, template};

/// The stand-in kubelet.
pub struct PodLifecycle {
    client: Client,
    pods: Lister<DynamicObject>,
    nodes: Store<DynamicObject>,
    stages: Arc<StageSet>,
    queue: Queue,
    plans: Mutex<HashMap<String, Plan>>,
    rng: Mutex<StdRng>,
    /// The last pod IP given out, as an offset into 10.244.0.0/16.
    next_ip: AtomicU32,
    next_plan: AtomicU64,
}

/// A stage to apply to one pod.
#[derive(Clone)]
struct Plan {
    /// Which plan this is, so a finished one is not mistaken for its successor.
    id: u64,
    /// The index of the stage in the set.
    stage: usize,
    due: Instant,
    /// Being applied: an event now plans afresh rather than keep this plan.
    firing: bool,
    /// The pod as this controller's last write left it (`immediateNextStage`), newer than the
    /// informer's until its event arrives.
    written: Option<Arc<DynamicObject>>,
}

impl PodLifecycle {
    /// Registers the stand-in's handlers on `factory`'s pod informer; pods move through
    /// `stages`, with jitter drawn from `seed` (from the clock when `None`).
    pub(crate) fn register(
        client: Client,
        factory: &SharedInformerFactory,
        stages: Arc<StageSet>,
        seed: Option<u64>,
    ) -> anyhow::Result<Workers> {
        let pods = factory.dynamic(&ApiResource::pods());
        let queue = common::queue("pod-lifecycle");
        let seed = seed.unwrap_or_else(|| {
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        });
        let lifecycle = Arc::new(PodLifecycle {
            client,
            pods: pods.lister(),
            nodes: factory.dynamic(&ApiResource::nodes()).store(),
            stages,
            queue: queue.clone(),
            plans: Mutex::new(HashMap::new()),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            next_ip: AtomicU32::new(0),
            next_plan: AtomicU64::new(0),
        });
        let (on_add, on_update, on_delete) = (lifecycle.clone(), lifecycle.clone(), lifecycle.clone());
        pods.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |pod, _| on_add.plan(pod, None))
                .on_update(move |_, pod, _| on_update.plan(pod, None))
                .on_delete(move |pod| {
                    on_delete.plans.lock().remove(&pod.object().key());
                }),
        )?;
        let sync = Arc::new(move |key: String| {
            let lifecycle = lifecycle.clone();
            async move { lifecycle.sync(&key).await }.boxed()
        });
        Ok(Workers { name: "pod-lifecycle", queue, sync })
    }

    /// Whether a kubelet would run `pod`: with no nodes, any pod; else one bound to a node
    /// that exists and whose heartbeats are not stopped. A binding or a node's change brings
    /// the pod's next event.
    fn admits(&self, pod: &DynamicObject) -> bool {
        if self.nodes.is_empty() {
            return true;
        }
        let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            return false;
        };
        self.nodes.get(node).is_some_and(|node| {
            node.pointer(&format!("/metadata/annotations/{}", crate::nodes::STOPPED_ANNOTATION.replace('/', "~1")))
                .and_then(Value::as_str)
                != Some("stopped")
        })
    }

    /// Plans the stage that selects `pod` now, unless it is already planned.
    fn plan(&self, pod: &DynamicObject, written: Option<Arc<DynamicObject>>) {
        let key = pod.key();
        let chosen = if self.admits(pod) { self.stages.choose(&pod.0, &mut *self.rng.lock()) } else { None };
        let mut plans = self.plans.lock();
        let Some(stage) = chosen else {
            if plans.get(&key).is_some_and(|p| !p.firing) {
                plans.remove(&key);
            }
            return;
        };
        if let Some(plan) = plans.get_mut(&key)
            && plan.stage == stage
            && !plan.firing
        {
            if written.is_some() {
                plan.written = written;
            }
            // Queued again (the queue keeps the earlier deadline): a plan whose applying failed
            // past the retries gets another go on the pod's next event.
            let remaining = plan.due.saturating_duration_since(Instant::now());
            drop(plans);
            self.queue.add_after(key, remaining);
            return;
        }
        let delay = stages::delay_of(&self.stages.stages()[stage], &pod.0, SystemTime::now(), &mut *self.rng.lock());
        let id = self.next_plan.fetch_add(1, Ordering::Relaxed);
        plans.insert(key.clone(), Plan { id, stage, due: Instant::now() + delay, firing: false, written });
        drop(plans);
        self.queue.add_after(key, delay);
    }

    /// Applies the pod's planned stage if it is due and still selects the pod.
    async fn sync(&self, key: &str) -> anyhow::Result<Option<Duration>> {
        let plan = {
            let mut plans = self.plans.lock();
            let Some(plan) = plans.get_mut(key) else { return Ok(None) };
            let now = Instant::now();
            if plan.due > now {
                return Ok(Some(plan.due - now));
            }
            plan.firing = true;
            plan.clone()
        };
        let pod = freshest(self.pods.get(key), plan.written.clone());
        let stage = &self.stages.stages()[plan.stage];
        let Some(pod) = pod.filter(|pod| self.admits(pod) && stages::matches(stage, &pod.0)) else {
            // It changed meanwhile: whatever selects it now comes next.
            self.finish(key, plan.id);
            if let Some(pod) = self.pods.get(key) {
                self.plan(&pod, None);
            }
            return Ok(None);
        };
        match self.apply(stage, &pod).await {
            Ok(written) => {
                self.finish(key, plan.id);
                if let Some(written) = written.filter(|_| stage.spec.immediate_next_stage) {
                    let written = Arc::new(written);
                    self.plan(&written, Some(written.clone()));
                }
                Ok(None)
            }
            Err(error) => {
                if let Some(current) = self.plans.lock().get_mut(key).filter(|p| p.id == plan.id) {
                    current.firing = false;
                }
                Err(error)
            }
        }
    }

    /// Forgets plan `id` of `key`, if it is still the pod's plan.
    fn finish(&self, key: &str, id: u64) {
        let mut plans = self.plans.lock();
        if plans.get(key).is_some_and(|p| p.id == id) {
            plans.remove(key);
        }
    }

    /// Does what `stage.next` says to `pod`; the pod as written, if a status was.
    async fn apply(&self, stage: &Stage, pod: &DynamicObject) -> anyhow::Result<Option<DynamicObject>> {
        let next = &stage.spec.next;
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::pods(), pod.namespace());
        let gone = |e: &listwatch_client::Error| e.code() == Some(404);
        if let Some(finalizers) = &next.finalizers {
            let current: Vec<String> = pod
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(String::from))
                .collect();
            let mut wanted: Vec<String> = if finalizers.empty { Vec::new() } else { current.clone() };
            wanted.retain(|f| !finalizers.remove.iter().any(|r| &r.value == f));
            for add in &finalizers.add {
                if !wanted.contains(&add.value) {
                    wanted.push(add.value.clone());
                }
            }
            if wanted != current {
                let patch = json!({"metadata": {"finalizers": wanted, "resourceVersion": pod.resource_version()}});
                match api.patch(pod.name(), &Patch::Merge(patch)).await {
                    Err(e) if gone(&e) => return Ok(None),
                    other => other?,
                };
            }
        }
        let mut written = None;
        if next.delete {
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions { uid: pod.uid().map(String::from), resource_version: None }),
                ..Default::default()
            };
            match api.delete_with(pod.name(), &params).await {
                Err(e) if gone(&e) => return Ok(None),
                other => other?,
            }
        } else if let Some(template) = &next.status_template {
            let pod_ip = template.uses_pod_ip().then(|| self.pod_ip(pod));
            let now = common::now_rfc3339();
            let qos_class = qos_class(pod);
            let cx = template::Context { object: &pod.0, now: &now, pod_ip: pod_ip.as_deref(), qos_class };
            let status = template.render(&cx);
            match api.patch_status(pod.name(), &Patch::Strategic(json!({ "status": status }))).await {
                Ok(pod) => written = Some(pod),
                Err(e) if gone(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(event) = &next.event {
            // An Event is for people: one that cannot be written does not undo the stage.
            if let Err(error) = self.record_event(pod, &stage.metadata.name, event).await {
                tracing::debug!(stage = stage.metadata.name, error = %error, "could not record an event");
            }
        }
        Ok(written)
    }

    /// The pod's IP: the one it has, or the next free one.
    fn pod_ip(&self, pod: &DynamicObject) -> String {
        if let Some(ip) = pod.pointer("/status/podIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()) {
            return ip.to_string();
        }
        let n = self.next_ip.fetch_add(1, Ordering::Relaxed);
        format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 2)
    }

    /// A core/v1 Event about `pod`, as the kubelet writes them (`kubectl describe pod` lists
    /// them).
    async fn record_event(
        &self,
        pod: &DynamicObject,
        stage: &str,
        event: &stages::model::EventSpec,
    ) -> Result<(), listwatch_client::Error> {
        let now = common::now_rfc3339();
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let events: Api<DynamicObject> =
            Api::new(self.client.clone(), ApiResource::new("", "v1", "Event", "events", true), pod.namespace());
        let body = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{}.{nanos:x}", pod.name()), "namespace": pod.namespace()},
            "involvedObject": {
                "apiVersion": "v1", "kind": "Pod", "name": pod.name(), "namespace": pod.namespace(),
                "uid": pod.uid(), "resourceVersion": pod.resource_version(),
            },
            "type": event.type_.as_str(),
            "reason": event.reason,
            "message": event.message,
            "source": {"component": "kubelet", "host": pod.pointer("/spec/nodeName")},
            "reportingComponent": "kubelet",
            "reportingInstance": format!("listwatch-stage/{stage}"),
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        events.create(&body).await.map(drop)
    }
}

/// Whichever copy of the pod is newer: the informer's or the one this controller last wrote.
fn freshest(informed: Option<Arc<DynamicObject>>, written: Option<Arc<DynamicObject>>) -> Option<Arc<DynamicObject>> {
    let version = |pod: &DynamicObject| pod.resource_version().and_then(|rv| rv.parse::<u64>().ok()).unwrap_or(0);
    match (informed, written) {
        (Some(informed), Some(written)) if version(&written) > version(&informed) => Some(written),
        (informed, _) => informed,
    }
}

/// kube's QoS class: Guaranteed when every container's limits equal its requests for CPU and
/// memory, BestEffort when none asks for anything, Burstable otherwise.
fn qos_class(pod: &DynamicObject) -> &'static str {
    let containers: Vec<&Value> =
        pod.pointer("/spec/containers").and_then(Value::as_array).into_iter().flatten().collect();
    let resources = |c: &Value, kind: &str, name: &str| c.pointer(&format!("/resources/{kind}/{name}")).cloned();
    let none = containers
        .iter()
        .all(|c| ["requests", "limits"].iter().all(|k| ["cpu", "memory"].iter().all(|n| resources(c, k, n).is_none())));
    if none {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"].iter().all(|n| {
            let limit = resources(c, "limits", n);
            limit.is_some() && resources(c, "requests", n).is_none_or(|r| Some(r) == limit)
        })
    });
    if guaranteed { "Guaranteed" } else { "Burstable" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        let pod = |resources: Value| {
            DynamicObject::new(json!({"spec": {"containers": [{"name": "c", "resources": resources}]}}))
        };
        assert_eq!(qos_class(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))), "Guaranteed");
        assert_eq!(qos_class(&pod(json!({"requests": {"cpu": "1"}}))), "Burstable");
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
    }

    #[test]
    fn the_newer_copy_of_a_pod_wins() {
        let at = |rv: &str| Arc::new(DynamicObject::new(json!({"metadata": {"name": "p", "resourceVersion": rv}})));
        let pick =
            |a: Option<Arc<DynamicObject>>, b| freshest(a, b).and_then(|p| p.resource_version().map(String::from));
        assert_eq!(pick(Some(at("9")), Some(at("10"))).as_deref(), Some("10"));
        assert_eq!(pick(Some(at("11")), Some(at("10"))).as_deref(), Some("11"));
        assert_eq!(pick(None, Some(at("10"))), None, "deleted: nothing to apply to");
    }
}
