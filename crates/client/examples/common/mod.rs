//! What the examples share: the `--kubeconfig` flag, logging, and typed Kubernetes objects.
//!
//! listwatch-client has no generated API types (client-go has `k8s.io/api`, kube-rs has
//! k8s-openapi): a typed object is any serde struct that implements [`Resource`]. The structs
//! below declare only the fields the examples read; every field is optional or defaulted, so an
//! object with more fields, or fewer, still decodes. Writes in the examples send JSON built with
//! `serde_json::json!`, so nothing the structs leave out is lost on the way back.

#![allow(dead_code)] // Each example uses only some of this.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use listwatch_client::{Client, Config, LabelSelector, ObjectMeta, impl_resource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where to find the cluster: client-go's `-kubeconfig` flag.
#[derive(clap::Args, Debug)]
pub struct Connection {
    /// A kubeconfig file. Without it: `KUBECONFIG`, then `~/.kube/config`, then the pod's
    /// service account (what `Client::try_default` does).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
}

impl Connection {
    pub fn client(&self) -> anyhow::Result<Client> {
        let config = match &self.kubeconfig {
            Some(path) => Config::from_kubeconfig(path).with_context(|| format!("loading {}", path.display()))?,
            None => Config::infer().context("finding a kubeconfig (or pass --kubeconfig PATH)")?,
        };
        Ok(Client::new(config)?)
    }
}

/// Logs to stderr; `RUST_LOG=debug` shows what the reflectors do.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

// ---- core/v1 -------------------------------------------------------------------------------

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Namespace {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: NamespaceStatus,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NamespaceStatus {
    pub phase: Option<String>,
}

impl_resource!(Namespace, group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false);

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Pod {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

/// The containers, typed; everything else of the spec kept as JSON.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Container {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PodStatus {
    pub phase: Option<String>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
}

impl Pod {
    /// Whether the pod's `Ready` condition is `True`.
    pub fn is_ready(&self) -> bool {
        self.status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
    }

    pub fn phase(&self) -> &str {
        self.status.phase.as_deref().unwrap_or("Unknown")
    }
}

impl_resource!(Pod, group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true);

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Service {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ServiceSpec,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    #[serde(rename = "clusterIP")]
    pub cluster_ip: Option<String>,
}

impl_resource!(Service, group: "", version: "v1", kind: "Service", plural: "services", namespaced: true);

// ---- apps/v1 -------------------------------------------------------------------------------

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Deployment {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeploymentSpec,
    #[serde(default)]
    pub status: DeploymentStatus,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeploymentSpec {
    /// The server defaults it to 1.
    pub replicas: Option<i32>,
    #[serde(default)]
    pub selector: LabelSelectorSpec,
    #[serde(default)]
    pub template: PodTemplateSpec,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PodTemplateSpec {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
}

/// Absent counts are zero, as kube-apiserver omits them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub replicas: i32,
    #[serde(default)]
    pub updated_replicas: i32,
    #[serde(default)]
    pub ready_replicas: i32,
    #[serde(default)]
    pub available_replicas: i32,
}

impl Deployment {
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
}

impl_resource!(Deployment, group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true);

/// `metav1.LabelSelector`, as deployments carry it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorSpec {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelectorSpec {
    /// The selector the lister evaluates (client-go `metav1.LabelSelectorAsSelector`): the
    /// requirements written in the `labelSelector` query syntax, then parsed.
    pub fn to_selector(&self) -> anyhow::Result<LabelSelector> {
        let mut requirements: Vec<String> = self.match_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for expression in &self.match_expressions {
            let (key, values) = (&expression.key, expression.values.join(","));
            requirements.push(match expression.operator.as_str() {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.clone(),
                "DoesNotExist" => format!("!{key}"),
                other => anyhow::bail!("unknown label selector operator {other:?}"),
            });
        }
        Ok(LabelSelector::parse(&requirements.join(","))?)
    }
}
