//! The objects the benches write, padded to a target size.
//!
//! * ConfigMaps (`bench fanout`): a name, the write's sequence number and a `data.payload`
//!   string of padding;
//! * Pods (`bench create`, `bench list`): a Deployment's pod, kept small so that 1 KiB is
//!   reachable (labels, an owner reference, one container with an image, a port and resource
//!   requests, the scheduling defaults; the server adds uid, timestamps and status: ~950 B),
//!   padded with an annotation.
//!
//! "Size" is the object as the server stores and serves it (with the uid, timestamps and
//! status it adds). [`calibrate_padding`] creates one probe object, sees how much the server
//! added, deletes the probe, and returns the padding that makes objects about the target size.

use anyhow::{Context, bail};
use bytes::Bytes;
use http::Method;

use super::http::HttpConnection;

/// Which kind of object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchKind {
    ConfigMap,
    Pod,
}

impl BenchKind {
    pub fn plural(self) -> &'static str {
        match self {
            BenchKind::ConfigMap => "configmaps",
            BenchKind::Pod => "pods",
        }
    }

    /// The collection path in a namespace.
    pub fn collection(self, namespace: &str) -> String {
        format!("/api/v1/namespaces/{namespace}/{}", self.plural())
    }

    /// One object's path.
    pub fn object_path(self, namespace: &str, name: &str) -> String {
        format!("/api/v1/namespaces/{namespace}/{}/{name}", self.plural())
    }

    /// The JSON of an object named `name` (`sequence` makes each version differ).
    pub fn json(self, namespace: &str, name: &str, sequence: u64, padding: &str) -> Bytes {
        match self {
            BenchKind::ConfigMap => configmap_json(namespace, name, sequence, padding),
            BenchKind::Pod => pod_json(namespace, name, padding),
        }
    }
}

pub fn configmap_json(namespace: &str, name: &str, sequence: u64, padding: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{namespace}","labels":{{"app":"listwatch-bench"}}}},"data":{{"sequence":"{sequence}","payload":"{padding}"}}}}"#
    ))
}

pub fn pod_json(namespace: &str, name: &str, padding: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{namespace}","labels":{{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"}},"annotations":{{"bench.listwatch.dev/padding":"{padding}"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"bench-web-6b7f9c8d5d","uid":"5a1e1d8e-0c4b-4c39-9d3e-6f1c8a2b7e10","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"containers":[{{"name":"web","image":"registry.k8s.io/nginx-slim:0.27","imagePullPolicy":"IfNotPresent","ports":[{{"containerPort":8080,"protocol":"TCP"}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}}}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","schedulerName":"default-scheduler","priority":0}}}}"#
    ))
}

/// `len` bytes of padding text.
pub fn padding(len: usize) -> String {
    "x".repeat(len)
}

/// The padding that makes a stored `kind` about `target` bytes: creates a probe object with
/// `target` bytes of padding, measures what the server returns, deletes the probe.
pub async fn calibrate_padding(
    connection: &mut HttpConnection,
    kind: BenchKind,
    namespace: &str,
    probe_name: &str,
    target: usize,
) -> anyhow::Result<usize> {
    let body = kind.json(namespace, probe_name, 0, &padding(target));
    let (status, created) = connection
        .request(Method::POST, &kind.collection(namespace), Some(body))
        .await
        .context("creating a probe object")?;
    if !status.is_success() {
        bail!("creating a probe {} answered {status}: {}", kind.plural(), String::from_utf8_lossy(&created));
    }
    let overhead = created.len().saturating_sub(target);
    if overhead > target {
        eprintln!("bench: a {} is at least {overhead} B; --object-size {target} is below that", kind.plural());
    }
    let path = format!("{}?gracePeriodSeconds=0", kind.object_path(namespace, probe_name));
    let (status, answer) = connection.request(Method::DELETE, &path, None).await?;
    if !status.is_success() {
        bail!("deleting the probe {} answered {status}: {}", kind.plural(), String::from_utf8_lossy(&answer));
    }
    Ok(target.saturating_sub(overhead))
}

/// A short random-enough tag that keeps names of different runs apart.
pub fn run_tag() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}", (nanos as u64 ^ u64::from(std::process::id()).rotate_left(32)) & 0xff_ffff)
}
