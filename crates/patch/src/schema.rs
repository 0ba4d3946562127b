//! Patch metadata: how each list of an object merges.
//!
//! kube reads this from the Go struct tags of the built-in types
//! (`patchStrategy:"merge" patchMergeKey:"name"`), exposed in OpenAPI as
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`. listwatch
//! stores objects as JSON, so the same facts come from a table: a
//! [`PatchSchema`] answers, for the path of field names leading to a list
//! (list positions left out), how that list merges.
//!
//! [`builtin_schema`] holds the tags of the kinds kubectl commonly patches,
//! transcribed from `k8s.io/api` `core/v1/types.go`, `apps/v1/types.go`,
//! `batch/v1/types.go` and `meta/v1/types.go`. Lists not in a table are
//! atomic (replaced wholesale), which is also kube's default for lists
//! without a tag; notably atomic are `tolerations`, `readinessGates`,
//! `envFrom`, `command`, `args`, a node's `taints`, endpoints' `subsets`,
//! a service account's `imagePullSecrets` and label selectors'
//! `matchExpressions`.
//!
//! The tables also carry what server-side apply reads from the OpenAPI
//! schema where it differs from the patch tags (see
//! [`crate::apply::ApplySchema`]): `x-kubernetes-list-map-keys` with more
//! than the merge key (container ports by `containerPort` and `protocol`,
//! service ports by `port` and `protocol`, topology spread constraints by
//! `topologyKey` and `whenUnsatisfiable`), `listType=atomic` lists the patch
//! merges (a pod's `status.hostIPs`, a job's `status.conditions`), key
//! defaults (`protocol: TCP`) and atomic structs and maps (label selectors,
//! `nodeSelector`, owner references, object references).

use serde_json::Value;

/// How a list merges and is owned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListType {
    /// Replaced and owned as one value (the default).
    Atomic,
    /// Scalars, each item owned separately (`v:` elements).
    Set,
    /// Objects identified by the values of their key fields (`k:` elements).
    Map {
        /// The key fields, e.g. `["containerPort", "protocol"]`.
        keys: Vec<String>,
    },
}

impl ListType {
    /// A list-map keyed by `keys`.
    pub fn map<I: Into<String>>(keys: impl IntoIterator<Item = I>) -> ListType {
        ListType::Map { keys: keys.into_iter().map(Into::into).collect() }
    }
}

/// How a list merges in a strategic merge patch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListStrategy {
    /// Atomic: the patch's list replaces the whole list (no tag).
    Replace,
    /// `patchStrategy:"merge"` with `patchMergeKey`: items are objects
    /// identified by `key`; patch items merge into the item with the same key
    /// and new items are added.
    Merge {
        /// The field identifying an item, e.g. `name` or `containerPort`.
        key: String,
    },
    /// `patchStrategy:"merge"` on a list of scalars (e.g.
    /// `metadata.finalizers`): the union of both lists, without duplicates.
    MergePrimitives,
}

impl ListStrategy {
    /// `ListStrategy::Merge { key }`.
    pub fn merge(key: impl Into<String>) -> ListStrategy {
        ListStrategy::Merge { key: key.into() }
    }

    /// Whether the list merges rather than being replaced.
    pub fn is_merge(&self) -> bool {
        !matches!(self, ListStrategy::Replace)
    }

    /// The merge key; empty unless [`ListStrategy::Merge`].
    pub fn merge_key(&self) -> &str {
        match self {
            ListStrategy::Merge { key } => key,
            _ => "",
        }
    }
}

/// Patch metadata for one kind of object.
pub trait PatchSchema {
    /// How the list at `path` merges. `path` lists field names from the
    /// object root; list positions are left out, so the containers of a
    /// deployment are at `["spec", "template", "spec", "containers"]` and the
    /// env of each of them at `[..., "containers", "env"]`.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// Whether the map at `path` (or each item of the list at `path`) has
    /// kube's `retainKeys` strategy. Applying a patch does not depend on it:
    /// the server honours a `$retainKeys` directive wherever the client sent
    /// one; clients consult it to decide where to send the directive.
    fn retain_keys(&self, _path: &[&str]) -> bool {
        false
    }
}

/// No patch metadata: every list is atomic. Patching then behaves like a JSON
/// merge patch for lists, as for custom resources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoSchema;

impl PatchSchema for NoSchema {
    fn list_strategy(&self, _path: &[&str]) -> ListStrategy {
        ListStrategy::Replace
    }
}

/// A path pattern: field names, where `*` stands for any one field name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Pattern(Vec<String>);

impl Pattern {
    /// Dot-separated field names; the empty string is the root.
    fn parse(pattern: &str) -> Pattern {
        if pattern.is_empty() {
            return Pattern(Vec::new());
        }
        Pattern(pattern.split('.').map(str::to_owned).collect())
    }

    fn under(&self, prefix: &Pattern) -> Pattern {
        Pattern(prefix.0.iter().chain(&self.0).cloned().collect())
    }

    fn matches(&self, path: &[&str]) -> bool {
        self.0.len() == path.len() && self.0.iter().zip(path).all(|(pattern, field)| pattern == "*" || pattern == field)
    }
}

/// A [`PatchSchema`] built from data: list strategies and `retainKeys`
/// fields keyed by dotted path patterns such as `spec.containers` or
/// `spec.containers.env`, where `*` matches any one field name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableSchema {
    lists: Vec<(Pattern, ListStrategy)>,
    retain_keys: Vec<Pattern>,
    /// Server-side apply list types where they differ from what the list
    /// strategy implies (`x-kubernetes-list-type` wins over the patch tags).
    ssa_lists: Vec<(Pattern, ListType)>,
    /// Objects (or list items) that server-side apply treats as one value.
    atomic_maps: Vec<Pattern>,
    /// Defaults of list-map key fields: (list pattern, key, default).
    key_defaults: Vec<(Pattern, String, Value)>,
}

impl TableSchema {
    /// An empty table: every list atomic.
    pub fn new() -> TableSchema {
        TableSchema::default()
    }

    /// Adds the strategy of the list at `pattern`; a later entry for the same
    /// path wins.
    pub fn with_list(mut self, pattern: &str, strategy: ListStrategy) -> TableSchema {
        self.lists.push((Pattern::parse(pattern), strategy));
        self
    }

    /// Marks the map (or list items) at `pattern` as `retainKeys`.
    pub fn with_retain_keys(mut self, pattern: &str) -> TableSchema {
        self.retain_keys.push(Pattern::parse(pattern));
        self
    }

    /// Sets the server-side apply type of the list at `pattern` where the
    /// schema's `x-kubernetes-list-type` differs from what its patch tags
    /// imply (e.g. container ports keyed by `containerPort` and `protocol`).
    pub fn with_list_type(mut self, pattern: &str, list_type: ListType) -> TableSchema {
        self.ssa_lists.push((Pattern::parse(pattern), list_type));
        self
    }

    /// Marks the object at `pattern` (or the items of the list there) as
    /// atomic for server-side apply (`+structType=atomic`, `+mapType=atomic`).
    pub fn with_atomic_map(mut self, pattern: &str) -> TableSchema {
        self.atomic_maps.push(Pattern::parse(pattern));
        self
    }

    /// Gives the key field `key` of the list-map at `pattern` a default, used
    /// for items that leave it out.
    pub fn with_key_default(mut self, pattern: &str, key: &str, default: Value) -> TableSchema {
        self.key_defaults.push((Pattern::parse(pattern), key.to_owned(), default));
        self
    }

    /// Adds every entry of `table` below `prefix`, e.g. a pod spec table
    /// under `spec.template.spec`.
    pub fn with_table_under(mut self, prefix: &str, table: &TableSchema) -> TableSchema {
        let prefix = Pattern::parse(prefix);
        for (pattern, strategy) in &table.lists {
            self.lists.push((pattern.under(&prefix), strategy.clone()));
        }
        for pattern in &table.retain_keys {
            self.retain_keys.push(pattern.under(&prefix));
        }
        for (pattern, list_type) in &table.ssa_lists {
            self.ssa_lists.push((pattern.under(&prefix), list_type.clone()));
        }
        for pattern in &table.atomic_maps {
            self.atomic_maps.push(pattern.under(&prefix));
        }
        for (pattern, key, default) in &table.key_defaults {
            self.key_defaults.push((pattern.under(&prefix), key.clone(), default.clone()));
        }
        self
    }

    /// The server-side apply list type set for `path`, if any.
    pub(crate) fn ssa_list_type(&self, path: &[&str]) -> Option<ListType> {
        self.ssa_lists.iter().rev().find(|(pattern, _)| pattern.matches(path)).map(|(_, t)| t.clone())
    }

    /// Whether the object at `path` is atomic for server-side apply.
    pub(crate) fn is_atomic_map(&self, path: &[&str]) -> bool {
        self.atomic_maps.iter().any(|pattern| pattern.matches(path))
    }

    /// The default of key `key` of the list-map at `path`.
    pub(crate) fn ssa_key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        self.key_defaults
            .iter()
            .rev()
            .find(|(pattern, k, _)| k == key && pattern.matches(path))
            .map(|(_, _, default)| default.clone())
    }

    /// The entries, as `(dotted pattern, strategy)`.
    pub fn lists(&self) -> impl Iterator<Item = (String, &ListStrategy)> {
        self.lists.iter().map(|(pattern, strategy)| (pattern.0.join("."), strategy))
    }
}

impl PatchSchema for TableSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self.lists
            .iter()
            .rev()
            .find(|(pattern, _)| pattern.matches(path))
            .map(|(_, strategy)| strategy.clone())
            .unwrap_or(ListStrategy::Replace)
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        self.retain_keys.iter().any(|pattern| pattern.matches(path))
    }
}

/// `ObjectMeta` (`meta/v1`): finalizers merge as a set, owner references by
/// uid (each one atomic for server-side apply).
fn object_meta_table() -> TableSchema {
    TableSchema::new()
        .with_list("finalizers", ListStrategy::MergePrimitives)
        .with_list("ownerReferences", ListStrategy::merge("uid"))
        .with_atomic_map("ownerReferences")
}

/// `Container` / `EphemeralContainer` (`core/v1`). Server-side apply keys
/// ports by `containerPort` and `protocol` (`+listMapKey`, protocol
/// defaulting to TCP) where the strategic merge patch uses `containerPort`.
fn container_table() -> TableSchema {
    TableSchema::new()
        .with_list("ports", ListStrategy::merge("containerPort"))
        .with_list_type("ports", ListType::map(["containerPort", "protocol"]))
        .with_key_default("ports", "protocol", Value::from("TCP"))
        .with_list("env", ListStrategy::merge("name"))
        .with_atomic_map("env.valueFrom.configMapKeyRef")
        .with_atomic_map("env.valueFrom.secretKeyRef")
        .with_atomic_map("env.valueFrom.fieldRef")
        .with_atomic_map("env.valueFrom.resourceFieldRef")
        .with_list("volumeMounts", ListStrategy::merge("mountPath"))
        .with_list("volumeDevices", ListStrategy::merge("devicePath"))
        .with_list_type("resources.claims", ListType::map(["name"]))
}

/// A `LabelSelector`, atomic for server-side apply (`+structType=atomic`).
fn label_selector_at(pattern: &str) -> TableSchema {
    TableSchema::new().with_atomic_map(pattern)
}

/// `PodSpec` (`core/v1`).
fn pod_spec_table() -> TableSchema {
    let containers = container_table();
    TableSchema::new()
        .with_list("containers", ListStrategy::merge("name"))
        .with_table_under("containers", &containers)
        .with_list("initContainers", ListStrategy::merge("name"))
        .with_table_under("initContainers", &containers)
        .with_list("ephemeralContainers", ListStrategy::merge("name"))
        .with_table_under("ephemeralContainers", &containers)
        .with_list("volumes", ListStrategy::merge("name"))
        .with_retain_keys("volumes")
        .with_list("imagePullSecrets", ListStrategy::merge("name"))
        .with_list("hostAliases", ListStrategy::merge("ip"))
        .with_list("topologySpreadConstraints", ListStrategy::merge("topologyKey"))
        .with_list_type("topologySpreadConstraints", ListType::map(["topologyKey", "whenUnsatisfiable"]))
        .with_atomic_map("topologySpreadConstraints.labelSelector")
        .with_atomic_map("nodeSelector")
        .with_atomic_map("imagePullSecrets")
        .with_atomic_map("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
        .with_list("schedulingGates", ListStrategy::merge("name"))
        .with_list("resourceClaims", ListStrategy::merge("name"))
        .with_retain_keys("resourceClaims")
}

/// `PodTemplateSpec` (`core/v1`): metadata and pod spec.
fn pod_template_table() -> TableSchema {
    TableSchema::new().with_table_under("metadata", &object_meta_table()).with_table_under("spec", &pod_spec_table())
}

/// `status.conditions` merged by `type`, as most status structs declare it.
fn conditions_by_type() -> TableSchema {
    TableSchema::new().with_list("status.conditions", ListStrategy::merge("type"))
}

/// A workload whose pod template is at `spec.template` (and whose
/// `spec.selector` is a label selector).
fn workload_table() -> TableSchema {
    TableSchema::new()
        .with_table_under("spec.template", &pod_template_table())
        .with_table_under("", &conditions_by_type())
        .with_table_under("", &label_selector_at("spec.selector"))
}

/// The patch metadata kube-apiserver uses for a built-in `kind`, or `None`
/// for kinds not covered (custom resources among them, for which
/// kube-apiserver refuses strategic merge patches with 415
/// `UnsupportedMediaType`).
///
/// Covered: Pod, PodTemplate, ReplicationController, Deployment, ReplicaSet,
/// StatefulSet, DaemonSet, Job, CronJob, Service, Namespace, Node,
/// ServiceAccount, PersistentVolumeClaim, the webhook configurations and admission
/// policies, and (metadata only) ConfigMap, Secret, Endpoints, Event, Lease.
pub fn builtin_schema(kind: &str) -> Option<TableSchema> {
    let body = match kind {
        "Pod" => TableSchema::new()
            .with_table_under("spec", &pod_spec_table())
            .with_table_under("", &conditions_by_type())
            .with_list("status.podIPs", ListStrategy::merge("ip"))
            .with_list("status.hostIPs", ListStrategy::merge("ip"))
            .with_list_type("status.hostIPs", ListType::Atomic)
            .with_list("status.resourceClaimStatuses", ListStrategy::merge("name"))
            .with_retain_keys("status.resourceClaimStatuses"),
        "PodTemplate" => TableSchema::new().with_table_under("template", &pod_template_table()),
        "Deployment" => workload_table().with_retain_keys("spec.strategy"),
        "ReplicaSet" | "StatefulSet" | "DaemonSet" => workload_table(),
        // Job conditions are `listType=atomic` although the patch merges them by type.
        "Job" => workload_table().with_list_type("status.conditions", ListType::Atomic),
        // A replication controller's selector is a plain map, atomic (`+mapType=atomic`).
        "ReplicationController" => TableSchema::new()
            .with_table_under("spec.template", &pod_template_table())
            .with_table_under("", &conditions_by_type())
            .with_atomic_map("spec.selector"),
        "CronJob" => TableSchema::new()
            .with_table_under("spec.jobTemplate.spec.template", &pod_template_table())
            .with_table_under("", &label_selector_at("spec.jobTemplate.spec.selector")),
        "Service" => TableSchema::new()
            .with_list("spec.ports", ListStrategy::merge("port"))
            .with_list_type("spec.ports", ListType::map(["port", "protocol"]))
            .with_key_default("spec.ports", "protocol", Value::from("TCP"))
            .with_atomic_map("spec.selector")
            .with_table_under("", &conditions_by_type()),
        "Namespace" => conditions_by_type(),
        "PersistentVolumeClaim" => conditions_by_type()
            .with_table_under("", &label_selector_at("spec.selector"))
            .with_atomic_map("spec.dataSource"),
        "Node" => TableSchema::new()
            .with_list("spec.podCIDRs", ListStrategy::MergePrimitives)
            .with_table_under("", &conditions_by_type())
            .with_list("status.addresses", ListStrategy::merge("type")),
        "ServiceAccount" => {
            TableSchema::new().with_list("secrets", ListStrategy::merge("name")).with_atomic_map("secrets")
        }
        // `admissionregistration/v1`: webhooks and their match conditions merge by name; the
        // selectors are label selectors (atomic for server-side apply).
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => TableSchema::new()
            .with_list("webhooks", ListStrategy::merge("name"))
            .with_list("webhooks.matchConditions", ListStrategy::merge("name"))
            .with_atomic_map("webhooks.namespaceSelector")
            .with_atomic_map("webhooks.objectSelector"),
        "ValidatingAdmissionPolicy" => TableSchema::new()
            .with_list("spec.matchConditions", ListStrategy::merge("name"))
            .with_atomic_map("spec.matchConstraints.namespaceSelector")
            .with_atomic_map("spec.matchConstraints.objectSelector"),
        "ValidatingAdmissionPolicyBinding" => TableSchema::new()
            .with_atomic_map("spec.matchResources.namespaceSelector")
            .with_atomic_map("spec.matchResources.objectSelector")
            .with_atomic_map("spec.paramRef.selector"),
        "ConfigMap" | "Secret" | "Endpoints" | "Event" | "Lease" => TableSchema::new(),
        _ => return None,
    };
    Some(TableSchema::new().with_table_under("metadata", &object_meta_table()).with_table_under("", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(schema: &TableSchema, path: &str) -> ListStrategy {
        let path: Vec<&str> = path.split('.').collect();
        schema.list_strategy(&path)
    }

    #[test]
    fn patterns_match_whole_paths() {
        let table = TableSchema::new()
            .with_list("spec.containers", ListStrategy::merge("name"))
            .with_list("spec.*.env", ListStrategy::merge("name"))
            .with_list("spec.containers", ListStrategy::merge("image"));
        assert_eq!(strategy(&table, "spec.containers"), ListStrategy::merge("image"));
        assert_eq!(strategy(&table, "spec.foo.env"), ListStrategy::merge("name"));
        assert_eq!(strategy(&table, "spec"), ListStrategy::Replace);
        assert_eq!(strategy(&table, "spec.containers.x"), ListStrategy::Replace);
        assert_eq!(NoSchema.list_strategy(&["spec", "containers"]), ListStrategy::Replace);
        assert_eq!(ListStrategy::merge("k").merge_key(), "k");
        assert_eq!(ListStrategy::MergePrimitives.merge_key(), "");
        assert!(ListStrategy::MergePrimitives.is_merge());
        assert!(!ListStrategy::Replace.is_merge());
    }

    #[test]
    fn pod_tags() {
        let pod = builtin_schema("Pod").unwrap();
        assert_eq!(strategy(&pod, "metadata.finalizers"), ListStrategy::MergePrimitives);
        assert_eq!(strategy(&pod, "metadata.ownerReferences"), ListStrategy::merge("uid"));
        assert_eq!(strategy(&pod, "spec.containers"), ListStrategy::merge("name"));
        assert_eq!(strategy(&pod, "spec.initContainers.env"), ListStrategy::merge("name"));
        assert_eq!(strategy(&pod, "spec.containers.ports"), ListStrategy::merge("containerPort"));
        assert_eq!(strategy(&pod, "spec.containers.volumeMounts"), ListStrategy::merge("mountPath"));
        assert_eq!(strategy(&pod, "spec.ephemeralContainers.volumeDevices"), ListStrategy::merge("devicePath"));
        assert_eq!(strategy(&pod, "spec.containers.envFrom"), ListStrategy::Replace);
        assert_eq!(strategy(&pod, "spec.containers.args"), ListStrategy::Replace);
        assert_eq!(strategy(&pod, "spec.volumes"), ListStrategy::merge("name"));
        assert!(pod.retain_keys(&["spec", "volumes"]));
        assert_eq!(strategy(&pod, "spec.tolerations"), ListStrategy::Replace);
        assert_eq!(strategy(&pod, "spec.imagePullSecrets"), ListStrategy::merge("name"));
        assert_eq!(strategy(&pod, "spec.hostAliases"), ListStrategy::merge("ip"));
        assert_eq!(strategy(&pod, "spec.topologySpreadConstraints"), ListStrategy::merge("topologyKey"));
        assert_eq!(strategy(&pod, "status.conditions"), ListStrategy::merge("type"));
        assert_eq!(strategy(&pod, "status.podIPs"), ListStrategy::merge("ip"));
        assert_eq!(strategy(&pod, "status.containerStatuses"), ListStrategy::Replace);
    }

    #[test]
    fn workload_tags() {
        let deployment = builtin_schema("Deployment").unwrap();
        assert_eq!(strategy(&deployment, "spec.template.spec.containers"), ListStrategy::merge("name"));
        assert_eq!(strategy(&deployment, "spec.template.spec.containers.env"), ListStrategy::merge("name"));
        assert_eq!(strategy(&deployment, "spec.template.metadata.finalizers"), ListStrategy::MergePrimitives);
        assert_eq!(strategy(&deployment, "spec.selector.matchExpressions"), ListStrategy::Replace);
        assert_eq!(strategy(&deployment, "status.conditions"), ListStrategy::merge("type"));
        assert_eq!(strategy(&deployment, "metadata.ownerReferences"), ListStrategy::merge("uid"));
        assert!(deployment.retain_keys(&["spec", "strategy"]));
        assert!(deployment.retain_keys(&["spec", "template", "spec", "volumes"]));
        let cronjob = builtin_schema("CronJob").unwrap();
        assert_eq!(strategy(&cronjob, "spec.jobTemplate.spec.template.spec.containers"), ListStrategy::merge("name"));
        let service = builtin_schema("Service").unwrap();
        assert_eq!(strategy(&service, "spec.ports"), ListStrategy::merge("port"));
        let node = builtin_schema("Node").unwrap();
        assert_eq!(strategy(&node, "spec.podCIDRs"), ListStrategy::MergePrimitives);
        assert_eq!(strategy(&node, "spec.taints"), ListStrategy::Replace);
        assert_eq!(strategy(&node, "status.addresses"), ListStrategy::merge("type"));
        let account = builtin_schema("ServiceAccount").unwrap();
        assert_eq!(strategy(&account, "secrets"), ListStrategy::merge("name"));
        assert_eq!(strategy(&account, "imagePullSecrets"), ListStrategy::Replace);
        let endpoints = builtin_schema("Endpoints").unwrap();
        assert_eq!(strategy(&endpoints, "subsets"), ListStrategy::Replace);
        assert_eq!(strategy(&endpoints, "metadata.finalizers"), ListStrategy::MergePrimitives);
        assert!(builtin_schema("Widget").is_none());
        assert!(builtin_schema("ConfigMap").unwrap().lists().any(|(p, _)| p == "metadata.finalizers"));
    }
}
