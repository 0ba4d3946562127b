//! The kubelet's part of a pod's life, which listwatch has no kubelets for: a pod that is not
//! running yet (and not being deleted) is reported Running and Ready after a short delay, with
//! what `kubectl get pods -o wide` and `kubectl describe pod` show of a real one — phase, pod
//! IP, start time, per-container running states, the five pod conditions, the QoS class.
//!
//! Once any node exists, only a pod bound to one (the scheduler's work) is started; with no
//! nodes at all (`--nodes 0`) pods start unbound and their NODE stays `<none>`. Deleting a
//! pod is the server's graceful
//! deletion's business (crates/apiserver/src/controllers/graceful.rs); an unscheduled pod is
//! removed at once, as kube-apiserver does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::FutureExt as _;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, Lister, Object as _, Patch, SharedInformerFactory, Store,
};
use serde_json::{Value, json};

use crate::common::{self, Workers};

/// The stand-in kubelet.
pub struct PodLifecycle {
    client: Client,
    pods: Lister<DynamicObject>,
    nodes: Store<DynamicObject>,
    /// The last pod IP given out, as an offset into 10.244.0.0/16.
    next_ip: AtomicU32,
}

impl PodLifecycle {
    /// Registers the stand-in's handlers on `factory`'s pod informer; new pods start after
    /// `delay`.
    pub(crate) fn register(
        client: Client,
        factory: &SharedInformerFactory,
        delay: Duration,
    ) -> anyhow::Result<Workers> {
        let pods = factory.dynamic(&ApiResource::pods());
        let queue = common::queue("pod-lifecycle");
        let (on_add, on_update) = (queue.clone(), queue.clone());
        pods.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |pod, _| {
                    if needs_start(pod) {
                        on_add.add_after(pod.key(), delay);
                    }
                })
                .on_update(move |_, pod, _| {
                    if needs_start(pod) {
                        on_update.add_after(pod.key(), delay);
                    }
                }),
        )?;
        let nodes = factory.dynamic(&ApiResource::nodes()).store();
        let lifecycle = Arc::new(PodLifecycle { client, pods: pods.lister(), nodes, next_ip: AtomicU32::new(0) });
        let sync = Arc::new(move |key: String| {
            let lifecycle = lifecycle.clone();
            async move { lifecycle.start(&key).await.map(|()| None) }.boxed()
        });
        Ok(Workers { name: "pod-lifecycle", queue, sync })
    }

    /// Reports the pod Running and Ready, if it still needs that.
    async fn start(&self, key: &str) -> anyhow::Result<()> {
        let Some(pod) = self.pods.get(key) else { return Ok(()) };
        if !needs_start(&pod) {
            return Ok(());
        }
        // A kubelet runs only the pods bound to its node; the binding's update queues it again.
        let unbound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty);
        if unbound && !self.nodes.is_empty() {
            return Ok(());
        }
        let n = self.next_ip.fetch_add(1, Ordering::Relaxed);
        let ip = format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 2);
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::pods(), pod.namespace());
        let status = running_status(&pod, &ip, &common::now_rfc3339());
        match api.patch_status(pod.name(), &Patch::Merge(json!({ "status": status }))).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Neither running nor finished, and not being deleted.
fn needs_start(pod: &DynamicObject) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
    phase == "Pending" && !common::is_deleting(pod)
}

/// The status of a pod whose containers all run and are ready.
fn running_status(pod: &DynamicObject, ip: &str, now: &str) -> Value {
    let statuses = |field: &str, init: bool| -> Vec<Value> {
        let containers = pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array);
        containers
            .into_iter()
            .flatten()
            .map(|c| {
                let (name, image) = (c["name"].as_str().unwrap_or(""), c["image"].as_str().unwrap_or(""));
                let state = if init {
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now,
                        "containerID": format!("listwatch://{}/{name}", pod.uid().unwrap_or_default())}})
                } else {
                    json!({"running": {"startedAt": now}})
                };
                json!({
                    "name": name, "image": image, "imageID": image,
                    "containerID": format!("listwatch://{}/{name}", pod.uid().unwrap_or_default()),
                    "ready": !init, "started": !init, "restartCount": 0, "state": state, "lastState": {},
                })
            })
            .collect()
    };
    let conditions: Vec<Value> =
        ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
            .iter()
            .map(|type_| json!({"type": type_, "status": "True", "lastProbeTime": null, "lastTransitionTime": now}))
            .collect();
    let mut status = json!({
        "phase": "Running",
        "conditions": conditions,
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": statuses("containers", false),
        "qosClass": qos_class(pod),
    });
    let init = statuses("initContainers", true);
    if !init.is_empty() {
        status["initContainerStatuses"] = json!(init);
    }
    status
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
    fn a_started_pod_is_running_ready_with_its_containers() {
        let pod = DynamicObject::new(json!({"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}));
        let status = running_status(&pod, "10.244.0.2", "2026-01-01T00:00:00Z");
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["containerStatuses"][0]["ready"], true);
        assert_eq!(status["qosClass"], "Guaranteed");
        assert!(status["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
        assert!(!needs_start(&DynamicObject::new(json!({"status": {"phase": "Running"}}))));
    }
}
