//! The objects the benches write, padded to a target size.
//!
//! * ConfigMaps (`bench fanout`): a name, the write's sequence number and a `data.payload`
//!   string of padding;
//! * Widgets (`--kind widgets` of `bench fanout`, `create` and `list`): a custom resource of the
//!   bench's own CRD ([`WIDGET_CRD`], created by [`prepare`] when missing), with the ConfigMap's
//!   content in a structural schema (`spec.sequence`, `spec.payload`), so that custom and
//!   built-in resources can be compared on the same path;
//! * Pods (`bench create`, `bench list`): a Deployment's pod, kept small so that 1 KiB is
//!   reachable (labels, an owner reference, one container with an image, a port and resource
//!   requests, the scheduling defaults; the server adds uid, timestamps and status: ~950 B),
//!   padded with an annotation. Their owner is a real ReplicaSet, [`POD_OWNER`], which
//!   [`pod_owner`] creates (or finds) first: the server's garbage collector, like kube's,
//!   deletes pods whose owner reference names no existing owner.
//!
//! "Size" is the object as the server stores and serves it (with the uid, timestamps and
//! status it adds). [`calibrate_padding`] creates one probe object, sees how much the server
//! added, deletes the probe, and returns the padding that makes objects about the target size.

use std::sync::Arc;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::ValueEnum;
use http::{Method, StatusCode};

use super::http::HttpConnection;

/// `--kind`: what a bench writes and watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KindArg {
    Configmaps,
    Pods,
    /// The custom resource of [`WIDGET_CRD`].
    Widgets,
}

/// Which kind of object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchKind {
    ConfigMap,
    /// The custom resource `widgets.bench.listwatch.dev` (see [`WIDGET_CRD`]).
    Widget,
    /// Pods owned by the ReplicaSet [`POD_OWNER`], whose uid this is (see [`pod_owner`]).
    Pod {
        owner_uid: Arc<str>,
    },
}

impl BenchKind {
    pub fn plural(&self) -> &'static str {
        match self {
            BenchKind::ConfigMap => "configmaps",
            BenchKind::Widget => "widgets",
            BenchKind::Pod { .. } => "pods",
        }
    }

    /// `/api/v1` or `/apis/<group>/<version>`.
    fn group_version_path(&self) -> &'static str {
        match self {
            BenchKind::Widget => "/apis/bench.listwatch.dev/v1",
            BenchKind::ConfigMap | BenchKind::Pod { .. } => "/api/v1",
        }
    }

    /// The collection path in a namespace.
    pub fn collection(&self, namespace: &str) -> String {
        format!("{}/namespaces/{namespace}/{}", self.group_version_path(), self.plural())
    }

    /// The collection path across all namespaces.
    pub fn all_namespaces(&self) -> String {
        format!("{}/{}", self.group_version_path(), self.plural())
    }

    /// One object's path.
    pub fn object_path(&self, namespace: &str, name: &str) -> String {
        format!("{}/{name}", self.collection(namespace))
    }

    /// Where the server keeps these objects under its storage root (kube's layout: the
    /// resource for core kinds, `<group>/<plural>` for custom resources).
    pub fn storage_prefix(&self) -> String {
        match self {
            BenchKind::Widget => "bench.listwatch.dev/widgets/".into(),
            BenchKind::ConfigMap | BenchKind::Pod { .. } => format!("{}/", self.plural()),
        }
    }

    /// The body of a PUT replacing `name`'s version `replaces` (the resourceVersion of the
    /// writer's last answer). Custom resources forbid unconditional updates (kube's 422 "must
    /// be specified for an update"), so theirs names that version; the built-ins' do not.
    pub fn update_json(&self, namespace: &str, name: &str, sequence: u64, padding: &str, replaces: u64) -> Bytes {
        match self {
            BenchKind::Widget => widget_json(namespace, name, sequence, padding, Some(replaces)),
            BenchKind::ConfigMap | BenchKind::Pod { .. } => self.json(namespace, name, sequence, padding),
        }
    }

    /// The JSON of an object named `name` (`sequence` makes each version differ).
    pub fn json(&self, namespace: &str, name: &str, sequence: u64, padding: &str) -> Bytes {
        match self {
            BenchKind::ConfigMap => configmap_json(namespace, name, sequence, padding),
            BenchKind::Widget => widget_json(namespace, name, sequence, padding, None),
            BenchKind::Pod { owner_uid } => pod_json(namespace, name, owner_uid, padding),
        }
    }
}

pub fn configmap_json(namespace: &str, name: &str, sequence: u64, padding: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{namespace}","labels":{{"app":"listwatch-bench"}}}},"data":{{"sequence":"{sequence}","payload":"{padding}"}}}}"#
    ))
}

/// The bench's CustomResourceDefinition: a namespaced `Widget` whose schema holds what the
/// bench ConfigMaps hold, typed (so the custom-resource path prunes and validates, as a real
/// CRD's does), with a printer column.
pub const WIDGET_CRD: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.bench.listwatch.dev"},"spec":{"group":"bench.listwatch.dev","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"sequence":{"type":"string"},"payload":{"type":"string"}}}}}},"additionalPrinterColumns":[{"name":"Sequence","type":"string","jsonPath":".spec.sequence"}]}]}}"#;

/// A widget; with `resource_version`, the version an update replaces.
pub fn widget_json(namespace: &str, name: &str, sequence: u64, padding: &str, resource_version: Option<u64>) -> Bytes {
    let replaces = resource_version.map(|rv| format!(r#","resourceVersion":"{rv}""#)).unwrap_or_default();
    Bytes::from(format!(
        r#"{{"apiVersion":"bench.listwatch.dev/v1","kind":"Widget","metadata":{{"name":"{name}","namespace":"{namespace}"{replaces},"labels":{{"app":"listwatch-bench"}}}},"spec":{{"sequence":"{sequence}","payload":"{padding}"}}}}"#
    ))
}

/// What `--kind` names, ready to write in `namespace`: creates the pods' owner or the widgets'
/// CRD when missing (and waits until the CRD is served).
pub async fn prepare(connection: &mut HttpConnection, kind: KindArg, namespace: &str) -> anyhow::Result<BenchKind> {
    match kind {
        KindArg::Configmaps => Ok(BenchKind::ConfigMap),
        KindArg::Pods => pod_owner(connection, namespace).await,
        KindArg::Widgets => {
            widget_crd(connection).await?;
            Ok(BenchKind::Widget)
        }
    }
}

/// Creates [`WIDGET_CRD`] unless it exists, then waits (at most 30 s) until widgets are served.
async fn widget_crd(connection: &mut HttpConnection) -> anyhow::Result<()> {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (status, answer) = connection
        .request(Method::POST, crds, Some(Bytes::from_static(WIDGET_CRD.as_bytes())))
        .await
        .context("creating the widgets' CRD")?;
    if !status.is_success() && status != StatusCode::CONFLICT {
        bail!("creating the widgets' CRD answered {status}: {}", String::from_utf8_lossy(&answer));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let path = format!("{}?limit=1", BenchKind::Widget.all_namespaces());
    loop {
        let (status, answer) = connection.request(Method::GET, &path, None).await?;
        if status.is_success() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("widgets were not served 30 s after their CRD: {status}: {}", String::from_utf8_lossy(&answer));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The ReplicaSet that owns the bench pods (a Deployment's, by its name and labels).
pub const POD_OWNER: &str = "bench-web-6b7f9c8d5d";

/// The bench pods' ReplicaSet: a minimal valid one whose selector and template carry the
/// pods' labels. Nothing here runs a ReplicaSet controller; on a real cluster, kube's would
/// manage these pods (and scale them to its replica count).
pub fn replicaset_json(namespace: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{{"name":"{POD_OWNER}","namespace":"{namespace}","labels":{{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"}}}},"spec":{{"selector":{{"matchLabels":{{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"}}}},"template":{{"metadata":{{"labels":{{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"}}}},"spec":{{"containers":[{{"name":"web","image":"registry.k8s.io/nginx-slim:0.27"}}]}}}}}}}}"#
    ))
}

/// A pod of the ReplicaSet [`POD_OWNER`] with uid `owner_uid`.
pub fn pod_json(namespace: &str, name: &str, owner_uid: &str, padding: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{namespace}","labels":{{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"}},"annotations":{{"bench.listwatch.dev/padding":"{padding}"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"{POD_OWNER}","uid":"{owner_uid}","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"containers":[{{"name":"web","image":"registry.k8s.io/nginx-slim:0.27","imagePullPolicy":"IfNotPresent","ports":[{{"containerPort":8080,"protocol":"TCP"}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}}}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","schedulerName":"default-scheduler","priority":0}}}}"#
    ))
}

/// Creates the pods' ReplicaSet [`POD_OWNER`] in `namespace`, or reads it if it exists, and
/// returns the kind of object the bench pods are: pods with its uid in their owner reference.
pub async fn pod_owner(connection: &mut HttpConnection, namespace: &str) -> anyhow::Result<BenchKind> {
    let collection = format!("/apis/apps/v1/namespaces/{namespace}/replicasets");
    let (status, answer) = connection
        .request(Method::POST, &collection, Some(replicaset_json(namespace)))
        .await
        .context("creating the pods' ReplicaSet")?;
    let (status, answer) = if status == StatusCode::CONFLICT {
        connection
            .request(Method::GET, &format!("{collection}/{POD_OWNER}"), None)
            .await
            .context("reading the pods' ReplicaSet")?
    } else {
        (status, answer)
    };
    if !status.is_success() {
        bail!("ReplicaSet {namespace}/{POD_OWNER} answered {status}: {}", String::from_utf8_lossy(&answer));
    }
    let replicaset: serde_json::Value = serde_json::from_slice(&answer).context("decoding the ReplicaSet")?;
    let metadata = &replicaset["metadata"];
    if !metadata["deletionTimestamp"].is_null() {
        bail!("ReplicaSet {namespace}/{POD_OWNER} is being deleted; its pods would be too: try again when it is gone");
    }
    let uid = metadata["uid"].as_str().context("the ReplicaSet has no uid")?;
    Ok(BenchKind::Pod { owner_uid: uid.into() })
}

/// `len` bytes of padding text.
pub fn padding(len: usize) -> String {
    "x".repeat(len)
}

/// The padding that makes a stored `kind` about `target` bytes: creates a probe object with
/// `target` bytes of padding, measures what the server returns, deletes the probe.
pub async fn calibrate_padding(
    connection: &mut HttpConnection,
    kind: &BenchKind,
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
