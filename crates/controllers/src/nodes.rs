//! Fake nodes, as kwok's: `--nodes N` makes nodes `node-0` .. `node-{N-1}` with what a kubelet
//! registers (labels, capacity and allocatable, addresses, nodeInfo, conditions) and keeps
//! them alive the way kubelets do, so the node lifecycle controller sees them healthy:
//!
//! * a `coordination.k8s.io/v1` Lease per node in `kube-node-lease` (holder the node,
//!   `leaseDurationSeconds` 40, owned by the Node), renewed every 10 s (the kubelet's
//!   `leaseDuration / 4`) with a MicroTime `renewTime` — or every quarter of the node lifecycle
//!   controller's grace period when that is shorter, so a short `--node-monitor-grace-period`
//!   (in tests) does not take healthy nodes for dead ones;
//! * the node's status (every condition's `lastHeartbeatTime`) every minute, and at once when
//!   the node is not reported Ready while its kubelet "runs" (a recovered node).
//!
//! A thousand nodes stay cheap: one task walks the nodes round the renewal cycle, each node at its
//! own offset in it, so renewals are spread evenly (100 writes/s for 1,000 nodes) instead of
//! all firing together; each write is a merge patch.
//!
//! A node's kubelet stops, as if the machine went away, while the node carries the annotation
//! [`STOPPED_ANNOTATION`]`=stopped` (`kubectl annotate node node-1
//! listwatch.dev/heartbeats=stopped`): neither its Lease nor its status is renewed, and the
//! node lifecycle controller takes it for unreachable after its grace period. Removing the
//! annotation starts it again.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use listwatch_client::{Api, ApiResource, Client, DynamicObject, Lister, Object as _, Patch, SharedInformerFactory};
use serde_json::{Value, json};

use crate::common;

/// The annotation that stops a fake node's kubelet (value `stopped`).
pub const STOPPED_ANNOTATION: &str = "listwatch.dev/heartbeats";
/// The label every node of ours carries (kwok's nodes carry `type: kwok`).
pub const TYPE_LABEL: (&str, &str) = ("type", "listwatch");
/// The namespace of node Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// `leaseDurationSeconds` of a node Lease (the kubelet's `--node-lease-duration-seconds`).
pub const LEASE_DURATION_SECONDS: u64 = 40;
/// How often a Lease is renewed: the kubelet's `leaseDuration / 4`.
const RENEW_PERIOD: Duration = Duration::from_secs(LEASE_DURATION_SECONDS / 4);
/// How often the node's status is posted when nothing changed.
const STATUS_PERIOD: Duration = Duration::from_secs(60);
/// Nodes created at once at start.
const CREATE_CONCURRENCY: usize = 16;

/// coordination.k8s.io/v1 Leases.
pub fn leases() -> ApiResource {
    ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true)
}

/// The fake nodes' kubelets.
pub struct FakeNodes {
    client: Client,
    nodes: Lister<DynamicObject>,
    names: Vec<String>,
    renew_period: Duration,
}

impl FakeNodes {
    /// The kubelets of `count` nodes, reading their nodes through `factory`'s node informer;
    /// `grace_period` is the node lifecycle controller's.
    pub(crate) fn register(
        client: Client,
        factory: &SharedInformerFactory,
        count: usize,
        grace_period: Duration,
    ) -> FakeNodes {
        let nodes = common::informer(factory, &ApiResource::nodes()).lister();
        let renew_period = RENEW_PERIOD.min(grace_period / 4).max(Duration::from_millis(100));
        FakeNodes { client, nodes, names: (0..count).map(|i| format!("node-{i}")).collect(), renew_period }
    }

    /// Registers the nodes, then renews their Leases and status until aborted.
    pub async fn run(self) {
        let this = Arc::new(self);
        let registered = futures::stream::iter(this.names.clone())
            .map(|name| {
                let this = this.clone();
                async move { this.register_node(&name).await }
            })
            .buffer_unordered(CREATE_CONCURRENCY)
            .collect::<Vec<()>>();
        registered.await;
        tracing::info!(nodes = this.names.len(), "fake nodes registered");
        this.heartbeat_forever().await;
    }

    /// Creates the node (if it is not there) and reports its status, as a kubelet registers.
    async fn register_node(&self, name: &str) {
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::nodes(), None);
        match api.create(&node(name)).await {
            Ok(_) => {}
            Err(e) if e.code() == Some(409) => {}
            Err(e) => tracing::warn!(node = name, error = %e, "could not register a fake node"),
        }
        self.post_status(name).await;
        self.renew_lease(name).await;
    }

    /// Walks the nodes round the renewal cycle, node `i` of `n` at `i/n` of it.
    async fn heartbeat_forever(self: Arc<Self>) {
        let count = self.names.len().max(1) as u32;
        let period = self.renew_period;
        let status_every = (STATUS_PERIOD.as_millis() / period.as_millis().max(1)).max(1) as u64;
        let start = tokio::time::Instant::now();
        for cycle in 1u64.. {
            let cycle_start = start + period * cycle as u32;
            for (i, name) in self.names.iter().enumerate() {
                tokio::time::sleep_until(cycle_start + period * i as u32 / count).await;
                if self.is_stopped(name) {
                    continue;
                }
                let (this, name) = (self.clone(), name.clone());
                let with_status = cycle % status_every == 0 || !this.reported_ready(&name);
                // Not awaited here: a slow write must not hold up the other nodes' slots.
                tokio::spawn(async move {
                    this.renew_lease(&name).await;
                    if with_status {
                        this.post_status(&name).await;
                    }
                });
            }
        }
    }

    fn is_stopped(&self, name: &str) -> bool {
        self.nodes.get(name).is_some_and(|n| n.annotation(STOPPED_ANNOTATION) == Some("stopped"))
    }

    fn reported_ready(&self, name: &str) -> bool {
        self.nodes.get(name).is_none_or(|n| common::condition_status(&n, "Ready") == Some("True"))
    }

    /// Renews the node's Lease, creating it if it is missing.
    async fn renew_lease(&self, name: &str) {
        let api: Api<DynamicObject> = Api::new(self.client.clone(), leases(), Some(LEASE_NAMESPACE));
        let spec = json!({
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": common::now_micro(),
        });
        let result = match api.patch(name, &Patch::Merge(json!({ "spec": spec }))).await {
            Err(e) if e.code() == Some(404) => {
                let uid = self.nodes.get(name).and_then(|n| n.uid().map(str::to_owned));
                api.create(&lease(name, spec, uid.as_deref())).await
            }
            other => other,
        };
        if let Err(e) = result {
            tracing::debug!(node = name, error = %e, "could not renew a node lease");
        }
    }

    /// Posts the node's status: Ready, no pressure, every heartbeat time now.
    async fn post_status(&self, name: &str) {
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::nodes(), None);
        let previous = self.nodes.get(name);
        let status = status(name, previous.as_deref(), &common::now_rfc3339());
        if let Err(e) = api.patch_status(name, &Patch::Merge(json!({ "status": status }))).await {
            tracing::debug!(node = name, error = %e, "could not post a node status");
        }
    }
}

/// A node as a kubelet registers it (kwok-like labels and annotations).
fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                TYPE_LABEL.0: TYPE_LABEL.1,
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "listwatch.dev/node": "fake"},
        },
        "spec": {},
    })
}

/// The node's Lease, owned by the node as the kubelet's is.
fn lease(name: &str, spec: Value, node_uid: Option<&str>) -> Value {
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": spec,
    });
    if let Some(uid) = node_uid {
        lease["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]);
    }
    lease
}

/// A healthy node's status. A condition keeps its transition time while its status holds.
fn status(name: &str, previous: Option<&DynamicObject>, now: &str) -> Value {
    let conditions: Vec<Value> = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    .into_iter()
    .map(|(type_, status, reason, message)| {
        let since = previous
            .filter(|p| common::condition_status(p, type_) == Some(status))
            .and_then(|p| common::condition(p, type_)?.get("lastTransitionTime")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| now.to_owned());
        json!({"type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": since})
    })
    .collect();
    let resources = json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"});
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": internal_ip(name)},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": "",
            "containerRuntimeVersion": "listwatch",
            "kernelVersion": "",
            "kubeProxyVersion": "",
            "kubeletVersion": "v1.32.0-listwatch",
            "machineID": "",
            "operatingSystem": "linux",
            "osImage": "",
            "systemUUID": "",
        },
        "phase": "Running",
    })
}

/// `node-<i>`'s address in 10.0.0.0/8; other names get 10.255.255.254.
fn internal_ip(name: &str) -> String {
    match name.strip_prefix("node-").and_then(|i| i.parse::<u32>().ok()) {
        Some(i) if i < 0xfe_ffff => {
            let n = i + 1;
            format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
        }
        _ => "10.255.255.254".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_node_reports_ready_with_kwok_like_capacity() {
        let status = status("node-3", None, "2026-01-01T00:00:00Z");
        assert_eq!(status["allocatable"]["pods"], "110");
        assert_eq!(status["addresses"][0]["address"], "10.0.0.4");
        let ready = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "True");
        assert_eq!(node("node-3")["metadata"]["labels"]["kubernetes.io/hostname"], "node-3");
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_it_holds() {
        let before = DynamicObject::new(json!({"status": status("node-0", None, "2026-01-01T00:00:00Z")}));
        let after = status("node-0", Some(&before), "2026-01-01T00:01:00Z");
        let ready = after["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap().clone();
        assert_eq!(ready["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(ready["lastHeartbeatTime"], "2026-01-01T00:01:00Z");
    }
}
