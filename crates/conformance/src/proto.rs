//! Kubernetes protobuf as a client reads it (spec §2.4), decoded with prost-reflect against
//! the upstream message descriptors (`listwatch-proto`'s pool, compiled from the upstream
//! `generated.proto` files: package, message names and field numbers as kube's): the `k8s\0` +
//! `runtime.Unknown` envelope, `metav1.WatchEvent`, and the ConfigMap fields the checks
//! compare. Nothing here string-matches bytes; everything is decoded field by field, and the
//! JSON mapping of the server under test (listwatch's own converter) is not used, so a check
//! does not agree with the server merely because both share code.

use std::collections::BTreeMap;

use base64::Engine;
use listwatch_proto::prost_reflect::prost::Message;
use listwatch_proto::prost_reflect::{DynamicMessage, MapKey, MessageDescriptor, Value as ProtoValue};
use serde_json::{Map, Value, json};

/// The protobuf media type, as `Accept` and `Content-Type`.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The `Content-Type` of a protobuf watch stream.
pub const PROTOBUF_STREAM: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The four bytes an enveloped object starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";
const WATCH_EVENT: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub const CONFIG_MAP: &str = "k8s.io.api.core.v1.ConfigMap";
pub const CONFIG_MAP_LIST: &str = "k8s.io.api.core.v1.ConfigMapList";

fn descriptor(name: &str) -> Result<MessageDescriptor, String> {
    listwatch_proto::descriptor_pool()
        .get_message_by_name(name)
        .ok_or_else(|| format!("the conformance tool has no descriptor for {name}"))
}

/// Decodes `bytes` as the message `name`.
pub fn decode(name: &str, bytes: &[u8]) -> Result<DynamicMessage, String> {
    DynamicMessage::decode(descriptor(name)?, bytes).map_err(|e| format!("not a valid {name}: {e}"))
}

/// An enveloped object: what its `runtime.Unknown` says.
#[derive(Clone, Debug)]
pub struct Enveloped {
    pub api_version: String,
    pub kind: String,
    /// The object's own message bytes.
    pub raw: Vec<u8>,
    pub content_encoding: String,
    pub content_type: String,
}

impl Enveloped {
    /// Fails unless this is `api_version`/`kind` with empty contentEncoding and contentType
    /// (the object's own protobuf, as kube-apiserver writes it).
    pub fn expect(&self, api_version: &str, kind: &str) -> Result<(), String> {
        if self.api_version != api_version || self.kind != kind {
            return Err(format!(
                "the envelope's typeMeta is apiVersion {:?} kind {:?}, expected {api_version:?} {kind:?}",
                self.api_version, self.kind
            ));
        }
        if !self.content_encoding.is_empty() || !self.content_type.is_empty() {
            return Err(format!(
                "the envelope's contentEncoding and contentType must be empty (the raw bytes are protobuf), got {:?} and {:?}",
                self.content_encoding, self.content_type
            ));
        }
        Ok(())
    }
}

/// `k8s\0` + `runtime.Unknown` → its fields. Bytes without the prefix are refused, as clients
/// must refuse them (§2.4).
pub fn unwrap(bytes: &[u8]) -> Result<Enveloped, String> {
    let Some(body) = bytes.strip_prefix(&MAGIC[..]) else {
        return Err(format!(
            "does not start with the k8s\\0 magic (6b 38 73 00); starts with {}",
            hex(&bytes[..bytes.len().min(8)])
        ));
    };
    let unknown = decode(UNKNOWN, body)?;
    let type_meta = message_field(&unknown, "typeMeta");
    Ok(Enveloped {
        api_version: type_meta.as_ref().map(|m| string_field(m, "apiVersion")).unwrap_or_default(),
        kind: type_meta.as_ref().map(|m| string_field(m, "kind")).unwrap_or_default(),
        raw: bytes_field(&unknown, "raw"),
        content_encoding: string_field(&unknown, "contentEncoding"),
        content_type: string_field(&unknown, "contentType"),
    })
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`: a protobuf request body.
pub fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut type_meta = DynamicMessage::new(descriptor("k8s.io.apimachinery.pkg.runtime.TypeMeta")?);
    type_meta.set_field_by_name("apiVersion", ProtoValue::String(api_version.into()));
    type_meta.set_field_by_name("kind", ProtoValue::String(kind.into()));
    let mut unknown = DynamicMessage::new(descriptor(UNKNOWN)?);
    unknown.set_field_by_name("typeMeta", ProtoValue::Message(type_meta));
    unknown.set_field_by_name("raw", ProtoValue::Bytes(raw.to_vec().into()));
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&unknown.encode_to_vec());
    Ok(out)
}

/// One decoded `metav1.WatchEvent`.
#[derive(Clone, Debug)]
pub struct ProtoWatchEvent {
    pub kind: String,
    /// `object.raw`: an enveloped object.
    pub raw: Vec<u8>,
}

/// A `metav1.WatchEvent` message (not enveloped: a watch frame's or WebSocket message's body).
pub fn decode_watch_event(bytes: &[u8]) -> Result<ProtoWatchEvent, String> {
    if bytes.starts_with(MAGIC) {
        return Err("a WatchEvent must not be enveloped (it starts with k8s\\0; only object.raw is)".into());
    }
    let event = decode(WATCH_EVENT, bytes)?;
    let kind = string_field(&event, "type");
    let raw = message_field(&event, "object").map(|o| bytes_field(&o, "raw")).unwrap_or_default();
    if kind.is_empty() || raw.is_empty() {
        return Err(format!("a WatchEvent needs a type and object.raw; got type {kind:?}, {} raw bytes", raw.len()));
    }
    Ok(ProtoWatchEvent { kind, raw })
}

/// The fields of a decoded ConfigMap the checks compare, in the shape of its JSON:
/// `metadata.{name, namespace, resourceVersion, labels, annotations}`, `data`, and
/// `binaryData` (base64, as JSON carries bytes). Empty maps are left out, as JSON omits them.
pub fn config_map_view(message: &DynamicMessage) -> Value {
    let mut metadata = Map::new();
    if let Some(meta) = message_field(message, "metadata") {
        for key in ["name", "namespace", "resourceVersion"] {
            let value = string_field(&meta, key);
            if !value.is_empty() {
                metadata.insert(key.into(), Value::from(value));
            }
        }
        for key in ["labels", "annotations"] {
            let map = string_map(&meta, key);
            if !map.is_empty() {
                metadata.insert(key.into(), json!(map));
            }
        }
    }
    let mut view = Map::new();
    view.insert("metadata".into(), Value::Object(metadata));
    let data = string_map(message, "data");
    if !data.is_empty() {
        view.insert("data".into(), json!(data));
    }
    let binary: BTreeMap<String, String> = bytes_map(message, "binaryData")
        .into_iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    if !binary.is_empty() {
        view.insert("binaryData".into(), json!(binary));
    }
    Value::Object(view)
}

/// The same fields of a ConfigMap's JSON (what [`config_map_view`] gives for its protobuf).
pub fn config_map_json_view(object: &Value) -> Value {
    let mut metadata = Map::new();
    for key in ["name", "namespace", "resourceVersion", "labels", "annotations"] {
        match &object["metadata"][key] {
            Value::Null => {}
            Value::Object(map) if map.is_empty() => {}
            value => {
                metadata.insert(key.into(), value.clone());
            }
        }
    }
    let mut view = Map::new();
    view.insert("metadata".into(), Value::Object(metadata));
    for key in ["data", "binaryData"] {
        match &object[key] {
            Value::Null => {}
            Value::Object(map) if map.is_empty() => {}
            value => {
                view.insert(key.into(), value.clone());
            }
        }
    }
    sorted(Value::Object(view))
}

/// `value` with every object's keys in order, so views compare and print the same however
/// they were built.
pub fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> = map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A ConfigMap message built from a JSON view (name, namespace, labels, annotations, data,
/// binaryData in base64), for protobuf request bodies.
pub fn config_map_message(view: &Value) -> Result<DynamicMessage, String> {
    let config_map = descriptor(CONFIG_MAP)?;
    let meta_descriptor = config_map
        .get_field_by_name("metadata")
        .and_then(|f| f.kind().as_message().cloned())
        .ok_or("ConfigMap.metadata is not a message")?;
    let mut meta = DynamicMessage::new(meta_descriptor);
    for key in ["name", "namespace"] {
        if let Some(text) = view["metadata"][key].as_str() {
            meta.set_field_by_name(key, ProtoValue::String(text.into()));
        }
    }
    for key in ["labels", "annotations"] {
        if let Some(map) = view["metadata"][key].as_object() {
            meta.set_field_by_name(key, string_map_value(map));
        }
    }
    let mut message = DynamicMessage::new(config_map);
    message.set_field_by_name("metadata", ProtoValue::Message(meta));
    if let Some(map) = view["data"].as_object() {
        message.set_field_by_name("data", string_map_value(map));
    }
    if let Some(map) = view["binaryData"].as_object() {
        let mut entries = std::collections::HashMap::new();
        for (k, v) in map {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or_default())
                .map_err(|e| format!("binaryData.{k} is not base64: {e}"))?;
            entries.insert(MapKey::String(k.clone()), ProtoValue::Bytes(bytes.into()));
        }
        message.set_field_by_name("binaryData", ProtoValue::Map(entries));
    }
    Ok(message)
}

fn string_map_value(map: &Map<String, Value>) -> ProtoValue {
    ProtoValue::Map(
        map.iter()
            .map(|(k, v)| (MapKey::String(k.clone()), ProtoValue::String(v.as_str().unwrap_or_default().into())))
            .collect(),
    )
}

/// A string field ("" when unset).
pub fn string_field(message: &DynamicMessage, name: &str) -> String {
    message.get_field_by_name(name).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// A bytes field (empty when unset).
pub fn bytes_field(message: &DynamicMessage, name: &str) -> Vec<u8> {
    message.get_field_by_name(name).and_then(|v| v.as_bytes().map(|b| b.to_vec())).unwrap_or_default()
}

/// A message field, when set.
pub fn message_field(message: &DynamicMessage, name: &str) -> Option<DynamicMessage> {
    if !message.has_field_by_name(name) {
        return None;
    }
    message.get_field_by_name(name).and_then(|v| v.as_message().cloned())
}

/// A repeated message field.
pub fn repeated_messages(message: &DynamicMessage, name: &str) -> Vec<DynamicMessage> {
    message
        .get_field_by_name(name)
        .and_then(|v| v.as_list().map(|items| items.iter().filter_map(|i| i.as_message().cloned()).collect()))
        .unwrap_or_default()
}

fn string_map(message: &DynamicMessage, name: &str) -> BTreeMap<String, String> {
    map_entries(message, name).into_iter().filter_map(|(k, v)| Some((k, v.as_str()?.to_string()))).collect()
}

fn bytes_map(message: &DynamicMessage, name: &str) -> BTreeMap<String, Vec<u8>> {
    map_entries(message, name).into_iter().filter_map(|(k, v)| Some((k, v.as_bytes()?.to_vec()))).collect()
}

fn map_entries(message: &DynamicMessage, name: &str) -> Vec<(String, ProtoValue)> {
    let Some(value) = message.get_field_by_name(name) else { return Vec::new() };
    let Some(map) = value.as_map() else { return Vec::new() };
    map.iter()
        .filter_map(|(k, v)| match k {
            MapKey::String(k) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// `metadata.resourceVersion` of a message with an ObjectMeta or ListMeta `metadata`.
pub fn resource_version(message: &DynamicMessage) -> String {
    message_field(message, "metadata").map(|m| string_field(&m, "resourceVersion")).unwrap_or_default()
}

/// Bytes as space-separated hex, for reports (cut at 512 bytes).
pub fn hex(bytes: &[u8]) -> String {
    const MAX: usize = 512;
    let shown: Vec<String> = bytes.iter().take(MAX).map(|b| format!("{b:02x}")).collect();
    let mut text = shown.join(" ");
    if bytes.len() > MAX {
        text.push_str(&format!(" … ({} bytes in all)", bytes.len()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips_and_needs_the_magic() {
        let view =
            json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}, "binaryData": {"b": "AAEC"}});
        let raw = config_map_message(&view).unwrap().encode_to_vec();
        let bytes = wrap("v1", "ConfigMap", &raw).unwrap();
        assert!(bytes.starts_with(MAGIC));
        let envelope = unwrap(&bytes).unwrap();
        envelope.expect("v1", "ConfigMap").unwrap();
        assert!(envelope.expect("v1", "Secret").is_err());
        let decoded = config_map_view(&decode(CONFIG_MAP, &envelope.raw).unwrap());
        assert_eq!(sorted(decoded), config_map_json_view(&view));
        assert!(unwrap(&raw).is_err());
    }

    #[test]
    fn watch_events_are_not_enveloped() {
        let raw = wrap("v1", "ConfigMap", b"").unwrap();
        let mut object = DynamicMessage::new(descriptor("k8s.io.apimachinery.pkg.runtime.RawExtension").unwrap());
        object.set_field_by_name("raw", ProtoValue::Bytes(raw.clone().into()));
        let mut event = DynamicMessage::new(descriptor(WATCH_EVENT).unwrap());
        event.set_field_by_name("type", ProtoValue::String("ADDED".into()));
        event.set_field_by_name("object", ProtoValue::Message(object));
        let bytes = event.encode_to_vec();
        let decoded = decode_watch_event(&bytes).unwrap();
        assert_eq!((decoded.kind.as_str(), decoded.raw), ("ADDED", raw));
        let mut enveloped = MAGIC.to_vec();
        enveloped.extend_from_slice(&bytes);
        assert!(decode_watch_event(&enveloped).is_err());
    }
}
