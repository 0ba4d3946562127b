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
//! An object the watch cache decodes for an event is written inside that event's JSON watch
//! line, so the line every plain JSON watcher is sent is the object's own buffer. Each object
//! also carries a small memo of its other encodings (protobuf, protobuf watch frames,
//! metadata-only), filled on first use by the encoding layer and shared by every watcher and
//! list that needs the same bytes: an event is serialized once per format, not once per
//! watcher. The memo is for fan-out, not a second copy of the cache: once a version is
//! superseded and its event has gone out, [`Object::retire`] drops it (kube-apiserver's
//! `cachingObject` likewise lives with the event, not with the object).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;

use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::registry::Resource;
use crate::watch_event::{EventType, JSON_LINE_TAIL};

/// Number of encodings an object can memoize (the encoding layer assigns the slots).
pub const MEMO_SLOTS: usize = 6;

type Memo = [OnceLock<Bytes>; MEMO_SLOTS];

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
    /// The JSON watch-event line of the event this version was decoded for, `json` being a
    /// slice of it (see [`Object::from_storage_for_event`]).
    json_line: Option<(EventType, Bytes)>,
    /// Length of the leading `{"kind":"..","apiVersion":"..",` of `json`.
    type_prefix_len: usize,
    /// Encodings made so far; swapped out (not locked) so that [`Object::retire`] can drop
    /// them while watchers read, and a read costs no write to a shared cache line.
    memo: ArcSwapOption<Memo>,
    /// Set by [`Object::retire`]: encodings are then made per call and not kept.
    retired: AtomicBool,
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
        Object::decode(resource, stored, resource_version, None)
    }

    /// [`Object::from_storage`] for the watch cache, which knows the event this version is
    /// about to go out in: the JSON is written inside that event's JSON watch line
    /// (`{"type":..,"object":<JSON>}\n`, see [`Object::json_line`]), so the plain JSON
    /// watchers of that event are sent one shared buffer, and the object holds its wire form
    /// at the cost of 30 bytes instead of a second copy of itself.
    pub fn from_storage_for_event(
        resource: &Resource,
        stored: &[u8],
        resource_version: i64,
        event: EventType,
    ) -> Result<Object, DecodeError> {
        Object::decode(resource, stored, resource_version, Some(event))
    }

    fn decode(
        resource: &Resource,
        stored: &[u8],
        resource_version: i64,
        event: Option<EventType>,
    ) -> Result<Object, DecodeError> {
        let mut value: Value = serde_json::from_slice(stored).map_err(|e| DecodeError(e.to_string()))?;
        if let (Some(dynamic), Value::Object(map)) = (resource.dynamic, &mut value) {
            dynamic.on_read(map);
        }
        Object::build(resource, value, resource_version, event)
    }

    /// Builds an object from a JSON value (the kind and apiVersion are set from `resource`).
    pub fn from_value(resource: &Resource, value: Value, resource_version: i64) -> Result<Object, DecodeError> {
        Object::build(resource, value, resource_version, None)
    }

    fn build(
        resource: &Resource,
        value: Value,
        resource_version: i64,
        event: Option<EventType>,
    ) -> Result<Object, DecodeError> {
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
        let (json, json_line) = match event {
            None => (json_bytes(&object), None),
            Some(event) => {
                let line = json_line_bytes(event, &object);
                (line.slice(event.json_line_head().len()..line.len() - JSON_LINE_TAIL.len()), Some((event, line)))
            }
        };
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
            json_line,
            type_prefix_len,
            memo: ArcSwapOption::empty(),
            retired: AtomicBool::new(false),
        })
    }

    /// The same object with another resourceVersion, written inside the JSON watch line of
    /// `event` (as [`Object::from_storage_for_event`]): a DELETED event carries the last state
    /// with the deletion's revision.
    pub fn with_resource_version_for_event(
        &self,
        resource: &Resource,
        resource_version: i64,
        event: EventType,
    ) -> Object {
        Object::build(resource, self.value(), resource_version, Some(event)).expect("re-stamping a decoded object")
    }

    /// The whole JSON watch line `{"type":..,"object":<JSON>}\n` for an `event` of this
    /// version, when the object was built inside that line; `None` for another event type.
    pub fn json_line(&self, event: EventType) -> Option<&Bytes> {
        self.json_line.as_ref().filter(|(built_for, _)| *built_for == event).map(|(_, line)| line)
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
    /// callers wait for the first one instead of encoding again. A retired object encodes
    /// afresh for each call and keeps nothing.
    pub fn encoded(&self, slot: usize, encode: impl FnOnce(&Object) -> Bytes) -> Bytes {
        if let Some(memo) = self.memo.load().as_deref() {
            return memo[slot].get_or_init(|| encode(self)).clone();
        }
        if self.retired.load(Ordering::Acquire) {
            return encode(self);
        }
        let fresh = Arc::new(Memo::default());
        let before = self.memo.compare_and_swap(&None::<Arc<Memo>>, Some(fresh.clone()));
        let memo = before.as_ref().map_or(fresh, Arc::clone);
        let bytes = memo[slot].get_or_init(|| encode(self)).clone();
        if self.retired.load(Ordering::Acquire) {
            // Retired while this call installed a memo: drop it again.
            self.memo.store(None);
        }
        bytes
    }

    /// Marks this version as no longer anyone's current state (the cache has a newer one, or
    /// the object is gone) and drops its memoized encodings: those served the fan-out of its
    /// own event, which is over by now, and a watcher that still replays it encodes its own
    /// copy. Without this every version in the watch cache's window would hold its wire forms
    /// besides itself, several times the object's size.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
        self.memo.store(None);
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
    json_bytes(&Value::Object(canonical))
}

/// The JSON watch line of `event` for `value`, in an allocation of its size.
fn json_line_bytes(event: EventType, value: &Value) -> Bytes {
    let head = event.json_line_head();
    let mut line = Vec::with_capacity(head.len() + 1024);
    line.extend_from_slice(head);
    serde_json::to_writer(&mut line, value).expect("JSON values serialize");
    line.extend_from_slice(JSON_LINE_TAIL);
    Bytes::from(line.into_boxed_slice())
}

/// `value` as JSON bytes in an allocation of their size. serde_json's buffer doubles as it
/// grows and `Bytes` keeps the whole allocation, so without the trim a stored object held on
/// average a third more than its length, for as long as storage or a cache kept it.
fn json_bytes(value: &Value) -> Bytes {
    let json = serde_json::to_vec(value).expect("JSON values serialize");
    Bytes::from(json.into_boxed_slice())
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
        let deleted = obj.with_resource_version_for_event(cms, 11, EventType::Deleted);
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

    #[test]
    fn an_object_built_for_an_event_is_its_json_line() {
        let cms = Registry.find("", "v1", "configmaps").unwrap();
        let stored = to_storage_bytes(cms, json!({"metadata": {"name": "c"}, "data": {"k": "v"}}));
        let plain = Object::from_storage(cms, &stored, 7).unwrap();
        let framed = Object::from_storage_for_event(cms, &stored, 7, EventType::Modified).unwrap();
        assert_eq!(framed.json(), plain.json());
        let line = framed.json_line(EventType::Modified).expect("built for MODIFIED");
        assert_eq!(*line, [&b"{\"type\":\"MODIFIED\",\"object\":"[..], plain.json(), b"}\n"].concat());
        assert!(framed.json_line(EventType::Added).is_none());
        assert!(plain.json_line(EventType::Modified).is_none());
        let [_, item] = framed.list_item_json();
        assert_eq!(item, plain.list_item_json()[1]);
        let deleted = framed.with_resource_version_for_event(cms, 8, EventType::Deleted);
        let line: serde_json::Value = serde_json::from_slice(deleted.json_line(EventType::Deleted).unwrap()).unwrap();
        assert_eq!(line["type"], "DELETED");
        assert_eq!(line["object"]["metadata"]["resourceVersion"], "8");
    }

    #[test]
    fn a_retired_object_keeps_no_encoding() {
        let cms = Registry.find("", "v1", "configmaps").unwrap();
        let obj = Object::from_value(cms, json!({"metadata": {"name": "c"}}), 1).unwrap();
        let mut calls = 0;
        let mut encode = |_: &Object| {
            calls += 1;
            Bytes::from_static(b"x")
        };
        obj.encoded(2, &mut encode);
        obj.encoded(2, &mut encode);
        obj.retire();
        assert!(obj.memo.load().is_none(), "retiring drops what was memoized");
        obj.encoded(2, &mut encode);
        obj.encoded(2, &mut encode);
        assert!(obj.memo.load().is_none(), "nor is anything memoized after");
        assert_eq!(calls, 3, "once before retiring, then once per call");
    }
}
