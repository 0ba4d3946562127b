//! What the client knows about objects and where they live.
//!
//! * [`ApiResource`] locates a kind in the REST API (group, version, plural, scope) and builds its
//!   URL paths. It is a plain value, so dynamic clients can make one at run time.
//! * [`Object`] is what the cache needs from an object: its name, namespace, resourceVersion,
//!   labels and annotations. Two families implement it:
//!   * typed objects, any `serde` struct implementing [`Resource`] (its API coordinates as
//!     constants plus a [`ObjectMeta`] accessor), which get `Object` through a blanket impl;
//!   * [`DynamicObject`], a `serde_json::Value` with accessors, for kinds known only at run time.
//!
//! Objects are always decoded in full (no lazy or partial decoding): the cache holds what the
//! server sent, as kube-rs and client-go informers do.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a kind lives in the API: `/api/v1/namespaces/{ns}/pods`, `/apis/apps/v1/deployments`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiResource {
    /// `""` for the core group.
    pub group: String,
    /// The API version within the group (`v1`, `v1beta1`).
    pub version: String,
    /// The kind as objects name it in `kind` (`ConfigMap`).
    pub kind: String,
    /// The lowercase plural in URLs (`configmaps`).
    pub plural: String,
    /// Whether objects live in namespaces (`/namespaces/{ns}/...`) or at cluster scope.
    pub namespaced: bool,
}

impl ApiResource {
    /// The coordinates of a kind, given as the API spells them.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ApiResource {
        ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            namespaced,
        }
    }

    /// The coordinates of a typed [`Resource`].
    pub fn of<K: Resource>() -> ApiResource {
        ApiResource::new(K::GROUP, K::VERSION, K::KIND, K::PLURAL, K::NAMESPACED)
    }

    /// Core `v1` ConfigMaps.
    pub fn configmaps() -> ApiResource {
        ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
    }

    /// Core `v1` Pods.
    pub fn pods() -> ApiResource {
        ApiResource::new("", "v1", "Pod", "pods", true)
    }

    /// Core `v1` Secrets.
    pub fn secrets() -> ApiResource {
        ApiResource::new("", "v1", "Secret", "secrets", true)
    }

    /// Core `v1` Services.
    pub fn services() -> ApiResource {
        ApiResource::new("", "v1", "Service", "services", true)
    }

    /// Core `v1` Namespaces (cluster-scoped).
    pub fn namespaces() -> ApiResource {
        ApiResource::new("", "v1", "Namespace", "namespaces", false)
    }

    /// Core `v1` Nodes (cluster-scoped).
    pub fn nodes() -> ApiResource {
        ApiResource::new("", "v1", "Node", "nodes", false)
    }

    /// `apps/v1` Deployments.
    pub fn deployments() -> ApiResource {
        ApiResource::new("apps", "v1", "Deployment", "deployments", true)
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The collection path; `namespace` is ignored for cluster-scoped kinds, and `None` lists
    /// across all namespaces.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let root = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace.filter(|ns| self.namespaced && !ns.is_empty()) {
            Some(ns) => format!("{root}/namespaces/{ns}/{}", self.plural),
            None => format!("{root}/{}", self.plural),
        }
    }

    /// The path of one object.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{name}", self.collection_path(namespace))
    }
}

/// `metav1.ObjectMeta`, for typed objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Unique within the namespace (or cluster); the object's key in caches with the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A prefix the server completes with random characters when `name` is empty on create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// Empty or absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set by the server on create; tells apart objects that reuse a name after a delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The etcd revision of the object's last change: what watches and preconditions compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Bumped by the server on each change of the desired state (`spec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the server created the object (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// When a graceful delete was asked for; the object stays until its finalizers are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// The grace period of the pending delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Key-value pairs that selectors match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Key-value pairs for tools and people; not selectable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// The objects this one depends on; the garbage collector deletes it when they are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
    /// What must happen before the object is removed; a delete waits until the list is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
    /// Which manager owns which fields (server-side apply bookkeeping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_fields: Option<Vec<ManagedFieldsEntry>>,
}

impl ObjectMeta {
    /// The owner reference with `controller: true`, if any (client-go `metav1.GetControllerOf`).
    pub fn controller_of(&self) -> Option<&OwnerReference> {
        self.owner_references.as_ref()?.iter().find(|owner| owner.controller == Some(true))
    }
}

/// `metav1.OwnerReference`: an object this one depends on (the garbage collector deletes the
/// dependent once every owner is gone).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's `apiVersion` (`apps/v1`).
    pub api_version: String,
    /// The owner's kind (`ReplicaSet`).
    pub kind: String,
    /// The owner's name, in this object's namespace.
    pub name: String,
    /// The owner's uid: a new object of the same name is not the owner.
    pub uid: String,
    /// Whether the owner is this object's managing controller (at most one is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether a foreground delete of the owner waits for this object to go first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// `metav1.ManagedFieldsEntry`; the field set itself (`fieldsV1`) is kept as JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    /// Who made the change (the `fieldManager` of the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// `Apply` or `Update`: how the fields were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The version of the object the field set refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// When the entry last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The format of `fields_v1` (always `FieldsV1` so far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_type: Option<String>,
    /// The set of fields this manager owns.
    #[serde(default, rename = "fieldsV1", skip_serializing_if = "Option::is_none")]
    pub fields_v1: Option<Value>,
    /// The subresource the fields were written through (`status`, `scale`), or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// What caches, informers and watchers need to know about an object.
///
/// Implemented for every [`Resource`] and for [`DynamicObject`].
pub trait Object: DeserializeOwned + Send + Sync + 'static {
    /// `metadata.name` (empty if absent).
    fn name(&self) -> &str;
    /// `metadata.namespace`; `None` (or empty) for cluster-scoped objects.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// One label's value.
    fn label(&self, key: &str) -> Option<&str>;
    /// One annotation's value.
    fn annotation(&self, key: &str) -> Option<&str>;

    /// The cache key: `namespace/name`, or `name` for cluster-scoped objects
    /// (client-go `MetaNamespaceKeyFunc`).
    fn key(&self) -> String {
        object_key(self.namespace(), self.name())
    }
}

/// `namespace/name`, or `name` when there is no namespace.
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

/// A typed object: its API coordinates and its metadata.
///
/// ```
/// use listwatch_client::{ObjectMeta, Resource};
/// use serde::Deserialize;
/// use std::collections::BTreeMap;
///
/// #[derive(Debug, Deserialize, serde::Serialize)]
/// struct ConfigMap {
///     metadata: ObjectMeta,
///     #[serde(default)]
///     data: BTreeMap<String, String>,
/// }
///
/// impl Resource for ConfigMap {
///     const GROUP: &'static str = "";
///     const VERSION: &'static str = "v1";
///     const KIND: &'static str = "ConfigMap";
///     const PLURAL: &'static str = "configmaps";
///     const NAMESPACED: bool = true;
///     fn metadata(&self) -> &ObjectMeta {
///         &self.metadata
///     }
/// }
/// ```
pub trait Resource: DeserializeOwned + Send + Sync + 'static {
    /// The API group; `""` for the core group.
    const GROUP: &'static str;
    /// The API version within the group.
    const VERSION: &'static str;
    /// The kind as objects name it in `kind`.
    const KIND: &'static str;
    /// The lowercase plural in URLs.
    const PLURAL: &'static str;
    /// Whether objects live in namespaces.
    const NAMESPACED: bool;
    /// The object's metadata, which [`Object`] reads its name, namespace and more from.
    fn metadata(&self) -> &ObjectMeta;
}

/// Implements [`Resource`] for a struct with a `metadata: ObjectMeta` field:
///
/// ```
/// use listwatch_client::{ObjectMeta, impl_resource};
///
/// #[derive(serde::Deserialize)]
/// struct Deployment {
///     metadata: ObjectMeta,
///     // spec, status: the fields the program reads
/// }
/// impl_resource!(Deployment, group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true);
/// ```
#[macro_export]
macro_rules! impl_resource {
    ($type:ty, group: $group:literal, version: $version:literal, kind: $kind:literal, plural: $plural:literal, namespaced: $namespaced:literal) => {
        impl $crate::Resource for $type {
            const GROUP: &'static str = $group;
            const VERSION: &'static str = $version;
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = $namespaced;
            fn metadata(&self) -> &$crate::ObjectMeta {
                &self.metadata
            }
        }
    };
}

impl<T: Resource> Object for T {
    fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        self.metadata().namespace.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata().resource_version.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.metadata().uid.as_deref()
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.metadata().labels.as_ref()?.get(key).map(String::as_str)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata().annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// An object of any kind, as its JSON.
///
/// The metadata accessors read `metadata.*` out of the value on each call (a couple of map
/// lookups), so nothing is decoded twice or stored twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DynamicObject(pub Value);

impl DynamicObject {
    /// Wraps the JSON of an object (which should have `apiVersion`, `kind` and `metadata`).
    pub fn new(value: Value) -> DynamicObject {
        DynamicObject(value)
    }

    /// The value at a `/`-separated JSON pointer (`/data/key`).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        self.0.pointer(pointer)
    }

    fn meta_str(&self, field: &str) -> Option<&str> {
        self.0.get("metadata")?.get(field)?.as_str()
    }

    fn meta_map_str(&self, map: &str, key: &str) -> Option<&str> {
        self.0.get("metadata")?.get(map)?.get(key)?.as_str()
    }
}

impl Object for DynamicObject {
    fn name(&self) -> &str {
        self.meta_str("name").unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        self.meta_str("namespace")
    }
    fn resource_version(&self) -> Option<&str> {
        self.meta_str("resourceVersion")
    }
    fn uid(&self) -> Option<&str> {
        self.meta_str("uid")
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.meta_map_str("labels", key)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.meta_map_str("annotations", key)
    }
}

/// An autoscaling/v1 `Scale`: the `scale` subresource of deployments and replicasets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// The metadata of the scaled object (name, namespace, resourceVersion).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The replicas asked for.
    #[serde(default)]
    pub spec: ScaleSpec,
    /// The replicas there are.
    #[serde(default)]
    pub status: ScaleStatus,
}

/// The desired side of a [`Scale`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSpec {
    /// How many replicas are wanted; what a scale update writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// The observed side of a [`Scale`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleStatus {
    /// How many replicas the controller last saw.
    #[serde(default)]
    pub replicas: i32,
    /// The label selector of the pods, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// `metav1.ListMeta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The revision the list was read at: where a watch that follows it starts.
    #[serde(default)]
    pub resource_version: String,
    /// The continue token; empty (or absent) on the last page.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
    /// About how many items the pages after this one hold (approximate, and not always set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

impl ListMeta {
    /// The continue token when more pages follow.
    pub fn continue_token(&self) -> Option<&str> {
        self.continue_token.as_deref().filter(|t| !t.is_empty())
    }
}

/// A list response: `{"metadata": ListMeta, "items": [...]}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(bound = "K: DeserializeOwned")]
pub struct ObjectList<K> {
    /// The list's resourceVersion and continue token.
    #[serde(default)]
    pub metadata: ListMeta,
    /// `null` items (an empty list from some servers) decode as empty.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub items: Vec<K>,
}

impl<K> ObjectList<K> {
    /// The same list with each item mapped (`ObjectList::map_items(list, Arc::new)`).
    pub fn map_items<T>(self, f: impl FnMut(K) -> T) -> ObjectList<T> {
        ObjectList { metadata: self.metadata, items: self.items.into_iter().map(f).collect() }
    }
}

fn null_as_empty<'de, D, K>(deserializer: D) -> Result<Vec<K>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: DeserializeOwned,
{
    Ok(Option::<Vec<K>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_api_layout() {
        let pods = ApiResource::pods();
        assert_eq!(pods.collection_path(Some("default")), "/api/v1/namespaces/default/pods");
        assert_eq!(pods.collection_path(None), "/api/v1/pods");
        assert_eq!(pods.object_path(Some("ns"), "p"), "/api/v1/namespaces/ns/pods/p");
        let deployments = ApiResource::deployments();
        assert_eq!(deployments.collection_path(Some("a")), "/apis/apps/v1/namespaces/a/deployments");
        assert_eq!(deployments.api_version(), "apps/v1");
        // A namespace is meaningless for cluster-scoped kinds.
        assert_eq!(ApiResource::nodes().collection_path(Some("x")), "/api/v1/nodes");
    }

    #[test]
    fn dynamic_objects_expose_metadata() {
        let object = DynamicObject(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7", "labels": {"app": "x"}},
        }));
        assert_eq!(object.name(), "a");
        assert_eq!(object.key(), "ns/a");
        assert_eq!(object.resource_version(), Some("7"));
        assert_eq!(object.label("app"), Some("x"));
        assert_eq!(object.label("nope"), None);
        let cluster = DynamicObject(serde_json::json!({"metadata": {"name": "n1"}}));
        assert_eq!(cluster.key(), "n1");
    }

    #[test]
    fn lists_tolerate_null_items() {
        let list: ObjectList<DynamicObject> =
            serde_json::from_str(r#"{"metadata":{"resourceVersion":"5","continue":""},"items":null}"#).unwrap();
        assert!(list.items.is_empty());
        assert_eq!(list.metadata.continue_token(), None);
    }
}
