//! One version of an API object, as the server holds it between storage and the wire.
//!
//! Storage keeps an object as canonical JSON without `metadata.resourceVersion` (the storage
//! revision is the resourceVersion; kube-apiserver clears it before writing too). Reading it
//! back builds an [`Object`]: the JSON with the resourceVersion stamped in, plus the facts the
//! server filters on (namespace, name, labels, selectable fields), extracted once.
//!
//! The JSON is canonical: `kind`, `apiVersion`, `metadata` first (metadata fields in
//! `ObjectMeta`'s order), the rest as the client sent it. Because the encoding starts with a
//! known `{"kind":..,"apiVersion":..,` prefix, the list-item form (typed lists omit `kind` and
//! `apiVersion` in items) is a zero-copy slice of it.
//!
//! Each object also carries a small memo of its other encodings (protobuf, table rows,
//! metadata-only...), filled on first use by the encoding layer and shared by every watcher
//! and list that needs the same bytes: an event is serialized once per format, not once per
//! watcher.

use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::registry::Resource;

/// Number of encodings an object can memoize (the encoding layer assigns the slots).
pub const MEMO_SLOTS: usize = 15;

/// `ObjectMeta`'s field order.
const METADATA_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Why stored or sent bytes are not an object: not JSON, not an object, or a bad metadata field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot decode object: {0}")]
pub struct DecodeError(pub String);

/// An immutable object version. Share it as `Arc<Object>`.
pub struct Object {
    namespace: String,
    name: String,
    uid: String,
    resource_version: i64,
    labels: Option<Map<String, Value>>,
    /// Values of the kind's selectable fields, in the registry's order.
    fields: Vec<String>,
    json: Bytes,
    /// Length of the leading `{"kind":"..","apiVersion":"..",` of `json`.
    type_prefix_len: usize,
    memo: OnceLock<Box<[OnceLock<Bytes>; MEMO_SLOTS]>>,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Object")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("resource_version", &self.resource_version)
            .finish_non_exhaustive()
    }
}

impl Object {
    /// Decodes a stored value and stamps `resource_version` into it (a custom resource is
    /// also pruned and defaulted, as kube reads them: see [`crate::registry::DynamicKind`]).
    pub fn from_storage(resource: &Resource, stored: &[u8], resource_version: i64) -> Result<Object, DecodeError> {
        let mut value: Value = serde_json::from_slice(stored).map_err(|e| DecodeError(e.to_string()))?;
        if let (Some(dynamic), Value::Object(map)) = (resource.dynamic, &mut value) {
            dynamic.on_read(map);
        }
        Object::from_value(resource, value, resource_version)
    }

    /// Builds an object from a JSON value (the kind and apiVersion are set from `resource`).
    pub fn from_value(resource: &Resource, value: Value, resource_version: i64) -> Result<Object, DecodeError> {
        let Value::Object(map) = value else {
            return Err(DecodeError("not a JSON object".into()));
        };
        let canonical = canonicalize(resource, map, Some(resource_version));
        let metadata = canonical.get("metadata").and_then(Value::as_object);
        let text = |k: &str| metadata.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("").to_string();
        let (namespace, name, uid) = (text("namespace"), text("name"), text("uid"));
        if name.is_empty() {
            return Err(DecodeError("metadata.name is missing".into()));
        }
        let labels = metadata.and_then(|m| m.get("labels")).and_then(Value::as_object).cloned();
        let object = Value::Object(canonical);
        let fields = resource.selectable_fields.iter().map(|f| field_value(&object, f)).collect();
        let json = Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"));
        let type_prefix_len = type_prefix(resource).len();
        debug_assert!(json.starts_with(type_prefix(resource).as_bytes()));
        Ok(Object {
            namespace,
            name,
            uid,
            resource_version,
            labels,
            fields,
            json,
            type_prefix_len,
            memo: OnceLock::new(),
        })
    }

    /// The same object with another resourceVersion (a DELETED event carries the last state
    /// with the deletion's revision).
    pub fn with_resource_version(&self, resource: &Resource, resource_version: i64) -> Object {
        Object::from_value(resource, self.value(), resource_version).expect("re-stamping a decoded object")
    }

    /// `metadata.namespace`; empty for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `metadata.uid`; empty when not set.
    pub fn uid(&self) -> &str {
        &self.uid
    }
    /// The revision of this version (its storage `mod_revision`).
    pub fn resource_version(&self) -> i64 {
        self.resource_version
    }
    /// `metadata.labels`, for label selectors.
    pub fn labels(&self) -> Option<&Map<String, Value>> {
        self.labels.as_ref()
    }

    /// The value of a field for field selectors (`metadata.name`, `metadata.namespace`, or one
    /// of the kind's selectable fields); `None` for a field the kind does not support.
    pub fn field(&self, resource: &Resource, field: &str) -> Option<&str> {
        match field {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => resource.selectable_fields.iter().position(|f| *f == field).map(|i| self.fields[i].as_str()),
        }
    }

    /// The canonical JSON, with `kind` and `apiVersion`.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// The JSON without `kind` and `apiVersion`, as items of typed lists carry it: `{` and a
    /// zero-copy slice of [`Object::json`]. Returned as two pieces to write one after the other.
    pub fn list_item_json(&self) -> [Bytes; 2] {
        if self.json.len() <= self.type_prefix_len + 1 {
            return [self.json.clone(), Bytes::new()];
        }
        [Bytes::from_static(b"{"), self.json.slice(self.type_prefix_len..)]
    }

    /// Parses the object back into a JSON value (for handlers that edit it).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).expect("an object's own JSON parses")
    }

    /// The encoding in memo `slot`, computing it with `encode` the first time. Concurrent
    /// callers wait for the first one instead of encoding again.
    pub fn encoded(&self, slot: usize, encode: impl FnOnce(&Object) -> Bytes) -> Bytes {
        let memo = self.memo.get_or_init(Default::default);
        memo[slot].get_or_init(|| encode(self)).clone()
    }

    /// Approximate bytes this object holds (for metrics and cache accounting).
    pub fn size(&self) -> usize {
        self.json.len() + self.fields.iter().map(String::len).sum::<usize>() + self.name.len() + self.namespace.len()
    }
}

/// `{"kind":"<Kind>","apiVersion":"<group/version>",`: how every canonical encoding starts.
fn type_prefix(resource: &Resource) -> String {
    format!("{{\"kind\":\"{}\",\"apiVersion\":\"{}\",", resource.kind, resource.api_version())
}

/// Puts `kind`, `apiVersion` and `metadata` first, metadata in `ObjectMeta`'s order, and sets
/// (or, with `None`, removes) `metadata.resourceVersion`.
pub fn canonicalize(
    resource: &Resource,
    mut map: Map<String, Value>,
    resource_version: Option<i64>,
) -> Map<String, Value> {
    let mut out = Map::with_capacity(map.len() + 2);
    map.shift_remove("kind");
    map.shift_remove("apiVersion");
    out.insert("kind".into(), Value::String(resource.kind.into()));
    out.insert("apiVersion".into(), Value::String(resource.api_version()));
    let mut metadata = match map.shift_remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    metadata.shift_remove("selfLink");
    match resource_version {
        Some(rv) => metadata.insert("resourceVersion".into(), Value::String(rv.to_string())),
        None => metadata.shift_remove("resourceVersion"),
    };
    let mut ordered = Map::with_capacity(metadata.len());
    for key in METADATA_ORDER {
        if let Some(v) = metadata.shift_remove(*key) {
            ordered.insert((*key).to_string(), v);
        }
    }
    ordered.extend(metadata);
    out.insert("metadata".into(), Value::Object(ordered));
    out.extend(map);
    out
}

/// The canonical bytes to store for `value`: no resourceVersion inside (it is the revision),
/// and the storage version's `apiVersion` (a custom resource written through another of its
/// versions is stored in its storage version; with conversion `None` only `apiVersion` differs;
/// with a conversion webhook the object keeps its own, and the storage below converts it).
pub fn to_storage_bytes(resource: &Resource, value: Value) -> Bytes {
    let map = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut canonical = canonicalize(resource, map, None);
    if !resource.storage_version.is_empty() && !resource.converted_by_webhook {
        canonical.insert("apiVersion".into(), Value::String(resource.storage_api_version()));
    }
    Bytes::from(serde_json::to_vec(&Value::Object(canonical)).expect("JSON values serialize"))
}

/// A field's value as kube's field-selector conversion renders it: strings as they are,
/// booleans and numbers in their text form, a missing field as `""` (`false` for the boolean
/// fields kube always sets).
pub fn field_value(object: &Value, field: &str) -> String {
    // Events select on `source` meaning `source.component`.
    let path = if field == "source" { "source.component" } else { field };
    match lookup(object, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ if matches!(field, "spec.hostNetwork" | "spec.unschedulable") => "false".into(),
        _ => String::new(),
    }
}

/// The value at a dotted path (`status.phase`).
pub fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(object, |v, key| v.get(key))
}

/// Joins byte pieces into one buffer (for responses built from memoized parts).
pub fn concat(pieces: &[Bytes]) -> Bytes {
    let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
    for p in pieces {
        out.extend_from_slice(p);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn canonical_form_and_list_item_slice() {
        let pods = Registry.find("", "v1", "pods").unwrap();
        let value = json!({"spec": {"nodeName": "n1"}, "metadata": {"labels": {"a": "b"}, "name": "p", "namespace": "ns"}, "apiVersion": "v1", "kind": "Pod"});
        let obj = Object::from_value(pods, value, 42).unwrap();
        assert_eq!(
            std::str::from_utf8(obj.json()).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"42","labels":{"a":"b"}},"spec":{"nodeName":"n1"}}"#
        );
        let item = concat(&obj.list_item_json());
        assert_eq!(
            std::str::from_utf8(&item).unwrap(),
            r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"42","labels":{"a":"b"}},"spec":{"nodeName":"n1"}}"#
        );
        assert_eq!(obj.field(pods, "spec.nodeName"), Some("n1"));
        assert_eq!(obj.field(pods, "status.phase"), Some(""));
        assert_eq!(obj.field(pods, "spec.hostNetwork"), Some("false"));
        assert_eq!(obj.field(pods, "nope"), None);
    }

    #[test]
    fn storage_bytes_have_no_resource_version() {
        let cms = Registry.find("", "v1", "configmaps").unwrap();
        let stored =
            to_storage_bytes(cms, json!({"metadata": {"name": "c", "resourceVersion": "9"}, "data": {"k": "v"}}));
        assert_eq!(
            std::str::from_utf8(&stored).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"k":"v"}}"#
        );
        let obj = Object::from_storage(cms, &stored, 10).unwrap();
        assert_eq!(obj.resource_version(), 10);
        let deleted = obj.with_resource_version(cms, 11);
        assert!(std::str::from_utf8(deleted.json()).unwrap().contains(r#""resourceVersion":"11""#));
    }

    #[test]
    fn memo_encodes_once() {
        let cms = Registry.find("", "v1", "configmaps").unwrap();
        let obj = Object::from_value(cms, json!({"metadata": {"name": "c"}}), 1).unwrap();
        let mut calls = 0;
        for _ in 0..3 {
            obj.encoded(2, |_| {
                calls += 1;
                Bytes::from_static(b"x")
            });
        }
        assert_eq!(calls, 1);
    }
}
