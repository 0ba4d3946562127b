//! Kubernetes protobuf, as kube-apiserver speaks it (`application/vnd.kubernetes.protobuf`).
//!
//! listwatch keeps objects as Kubernetes JSON (`serde_json::Value`). This crate converts them
//! to and from the protobuf encodings Go clients send and ask for:
//!
//! * **Objects.** [`encode_object`] turns a JSON object into its kind's protobuf message bytes
//!   and [`decode_object`] turns message bytes back into the JSON kube-apiserver would serve,
//!   with `kind`/`apiVersion` set and the fields the message does not define reported. Both
//!   are driven by descriptors compiled at build time from the workspace's `proto/` tree
//!   (upstream packages, names and field numbers; see `proto/listwatch/go_json.proto` for the
//!   Go-declaration facts the JSON form needs). [`message_for`] says whether a kind has a
//!   schema.
//! * **Envelope.** A protobuf body or watch-event object is `k8s\0` followed by a
//!   runtime.Unknown holding the apiVersion, kind and message bytes: [`wrap_unknown`],
//!   [`unwrap_unknown`].
//! * **Lists.** [`encode_list`] builds a `<Kind>List` body from per-object message bytes, so a
//!   server can reuse memoized encodings.
//! * **Watch.** A protobuf watch stream is a sequence of frames (4-byte big-endian length +
//!   metav1.WatchEvent, not enveloped) whose `object.raw` is an enveloped object:
//!   [`encode_watch_event`], [`frame`], and [`watch_event_prefix`] for writing the event header
//!   in front of shared object bytes without copying them.
//! * **Status.** [`encode_status`] enveloped metav1.Status, for error responses and ERROR events.
//! * **Go's decode errors.** [`go_decode_error`] is what kube-apiserver's JSON decoder says
//!   about a value of the wrong type for its Go field, word for word; [`go_unstructured_error`]
//!   what its unstructured converter says (strategic merge patches).
//! * **Strict field validation.** [`check_json_fields`] lists a JSON body's unknown field
//!   paths; [`unknown_field_error`], [`duplicate_field_error`] and [`strict_decoding_message`]
//!   produce kube-apiserver's wording. Under `fieldValidation=Strict` a POST/PUT answers 400
//!   BadRequest `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding
//!   error: unknown field "spec.foo", unknown field "data2"`; under `Warn` each
//!   `unknown field "spec.foo"` (or `duplicate field "..."`) is one `Warning: 299 - "..."`
//!   header; under `Ignore` nothing. kube-apiserver never strict-checks protobuf bodies.
//!   Sources: apiserver `handlers/rest.go` `transformDecodeError`, apimachinery
//!   `runtime/error.go` `strictDecodingError`, sigs.k8s.io/json, apimachinery
//!   `serializer/codec_factory.go`.
//!
//! Time formats: `metav1.Time` is `2006-01-02T15:04:05Z` and carries whole seconds (on the wire
//! too: nanos are written as 0 and ignored when read, as kube-apiserver does); `MicroTime` is
//! `2006-01-02T15:04:05.000000Z`. Input accepts any RFC 3339 offset.

mod decode;
mod encode;
mod envelope;
mod go_decode;
mod go_types;
mod go_unstructured;
pub mod json_depth;
mod path;
mod schema;
mod strict;
mod time;
mod wire;

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use serde_json::{Map, Value};

pub use envelope::{
    Envelope, ListMeta, MAGIC, decode_watch_event, encode_watch_event, frame, unwrap_unknown, watch_event_prefix,
    wrap_unknown,
};
/// The prost-reflect this crate's descriptors belong to, for callers that want to inspect
/// messages themselves.
pub use prost_reflect;
pub use strict::{duplicate_field_error, strict_decoding_message, unknown_field_error};

use path::Path;
use schema::{SCHEMA, api_version};

/// Why a conversion between JSON and protobuf failed.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// No protobuf message is compiled in for this group, version and kind.
    #[error("no protobuf schema for {0}")]
    UnknownKind(String),
    /// The data does not start with `k8s\0`.
    #[error("not a Kubernetes protobuf object: missing the k8s\\0 prefix")]
    MissingMagic,
    /// The bytes are not a valid encoding of the message.
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    /// A JSON value does not fit the schema's type for its field.
    #[error("{path}: {message}")]
    InvalidJson {
        /// The field's JSON path (`spec.replicas`).
        path: String,
        /// What is wrong with the value, as kube words it.
        message: String,
    },
}

/// The JSON of a decoded object and the fields on the wire that its message does not define.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedObject {
    /// The object as JSON, as the JSON encoding of its kind would have it.
    pub object: Value,
    /// Paths like `spec.template.#17`: the containing field's JSON path, then `#` and the field
    /// number, since an unknown field has no name. kube-apiserver ignores these (it does not
    /// strict-check protobuf).
    pub unknown_fields: Vec<String>,
}

/// The message a kind is encoded as, if one is compiled in. Core group is `""`.
pub fn message_for(group: &str, version: &str, kind: &str) -> Option<MessageDescriptor> {
    let schema = &*SCHEMA;
    schema.kind_index(group, version, kind).map(|index| schema.messages[index].descriptor.clone())
}

/// All compiled descriptors (Kubernetes messages plus their imports).
pub fn descriptor_pool() -> &'static DescriptorPool {
    &SCHEMA.pool
}

/// A JSON object → its kind's protobuf message bytes (no envelope). Keys the schema does not
/// know are skipped (see [`check_json_fields`]); a value of the wrong JSON type is an error.
pub fn encode_object(group: &str, version: &str, kind: &str, object: &Value) -> Result<Vec<u8>, ProtoError> {
    let schema = &*SCHEMA;
    let message = kind_index(group, version, kind)?;
    let fields = object.as_object().ok_or_else(|| ProtoError::InvalidJson {
        path: "<root>".to_owned(),
        message: "expected a JSON object".to_owned(),
    })?;
    let mut out = Vec::new();
    encode::encode_fields(schema, message, fields, &Path::ROOT, &mut out)?;
    Ok(out)
}

/// A kind's protobuf message bytes (no envelope) → the JSON kube-apiserver would serve,
/// starting with `kind` and `apiVersion` from the arguments.
pub fn decode_object(group: &str, version: &str, kind: &str, bytes: &[u8]) -> Result<DecodedObject, ProtoError> {
    let schema = &*SCHEMA;
    let message = kind_index(group, version, kind)?;
    let dynamic = DynamicMessage::decode(schema.messages[message].descriptor.clone(), bytes)
        .map_err(|err| ProtoError::Malformed(err.to_string()))?;
    let mut object = Map::new();
    object.insert("kind".to_owned(), Value::String(kind.to_owned()));
    object.insert("apiVersion".to_owned(), Value::String(api_version(group, version)));
    let mut unknown_fields = Vec::new();
    decode::decode_fields(schema, message, &dynamic, &Path::ROOT, &mut unknown_fields, &mut object)?;
    Ok(DecodedObject { object: Value::Object(object), unknown_fields })
}

/// The error kube-apiserver's JSON decoder (sigs.k8s.io/json, Go's `encoding/json`) reports
/// for `object` decoded into the kind's Go type, if any: the first value of the wrong JSON
/// type (`json: cannot unmarshal number into Go struct field ConfigMap.data of type string`),
/// bad base64, or the error of a time, quantity or int-or-string. Unknown fields are not
/// errors here (see [`check_json_fields`]).
pub fn go_decode_error(group: &str, version: &str, kind: &str, object: &Value) -> Result<Option<String>, ProtoError> {
    let message = kind_index(group, version, kind)?;
    Ok(object.as_object().and_then(|fields| go_decode::decode_error(&SCHEMA, message, fields)))
}

/// The error kube-apiserver's unstructured converter (`FromUnstructuredWithValidation`, what a
/// strategic merge patch's result goes through) reports for `object` turned into the kind's
/// Go type, if any (`cannot restore map from string`). Unknown fields are not errors here.
pub fn go_unstructured_error(
    group: &str,
    version: &str,
    kind: &str,
    object: &Value,
) -> Result<Option<String>, ProtoError> {
    let message = kind_index(group, version, kind)?;
    Ok(object.as_object().and_then(|fields| go_unstructured::unstructured_error(&SCHEMA, message, fields)))
}

/// The paths of fields in a JSON body that the kind's schema does not define, in document
/// order, as kube-apiserver's strict decoder names them (`spec.template.spec.containers[0].foo`).
/// Top-level `apiVersion` and `kind` are known. Embedded JSON (`RawExtension`, `FieldsV1`) is
/// not looked into.
pub fn check_json_fields(group: &str, version: &str, kind: &str, object: &Value) -> Result<Vec<String>, ProtoError> {
    let schema = &*SCHEMA;
    let message = kind_index(group, version, kind)?;
    let mut unknown = Vec::new();
    if let Some(fields) = object.as_object() {
        strict::check_object(schema, message, fields, &["apiVersion", "kind"], &Path::ROOT, &mut unknown);
    }
    Ok(unknown)
}

/// The `<kind>List` message body (no envelope) for items that are each one object's message
/// bytes, for example memoized [`encode_object`] results. `kind` is the item kind
/// (`ConfigMap`); wrap the result with [`wrap_unknown`] as `<kind>List`.
pub fn encode_list<B: AsRef<[u8]>>(
    group: &str,
    version: &str,
    kind: &str,
    meta: &ListMeta<'_>,
    items: &[B],
) -> Result<Vec<u8>, ProtoError> {
    kind_index(group, version, &format!("{kind}List"))?;
    Ok(envelope::list_body(meta, items))
}

/// An enveloped metav1.Status (`apiVersion: v1`, `kind: Status`) from its JSON, as
/// kube-apiserver writes protobuf error responses and watch ERROR events. A Status whose
/// fields have the wrong JSON types is reduced to its `status`, `message`, `reason` and `code`.
pub fn encode_status(status: &Value) -> Vec<u8> {
    let body = encode_object("", "v1", "Status", status).unwrap_or_else(|_| {
        let mut sane = Map::new();
        for key in ["status", "message", "reason"] {
            if let Some(text) = status.get(key).filter(|v| v.is_string()) {
                sane.insert(key.to_owned(), text.clone());
            }
        }
        if let Some(code) = status.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok()) {
            sane.insert("code".to_owned(), Value::from(code));
        }
        encode_object("", "v1", "Status", &Value::Object(sane)).expect("well-typed Status fields encode")
    });
    wrap_unknown("v1", "Status", &body)
}

fn kind_index(group: &str, version: &str, kind: &str) -> Result<usize, ProtoError> {
    SCHEMA.kind_index(group, version, kind).ok_or_else(|| {
        ProtoError::UnknownKind(if group.is_empty() {
            format!("{version}, Kind={kind}")
        } else {
            format!("{group}/{version}, Kind={kind}")
        })
    })
}
