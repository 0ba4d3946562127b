//! How objects, lists and watch events become bytes.
//!
//! * [`negotiate`]: which representation a request's `Accept` asks for (JSON or protobuf;
//!   the object itself, a `Table`, or `PartialObjectMetadata`), or 406;
//! * [`Encoder`]: encodes objects and lists in that representation. Every per-object encoding
//!   is memoized on the object (`Object::encoded`), keyed by representation, so N watchers and
//!   every list of an unchanged object share one `Bytes`;
//! * [`EventEncoder`]: wraps encoded objects in watch-event envelopes; only the envelope is
//!   built per delivery, the object bytes are shared.
//!
//! Table cells that depend on the clock (AGE) are spliced in at encoding time around a
//! memoized row, so a cached row never shows a stale age.

mod media;
mod protobuf;
mod table;
pub mod yaml;

pub use media::{IncludeObject, MediaType, Negotiated, Output, Wire, has_schema, negotiate, negotiate_stream};

use bytes::{Bytes, BytesMut};
use listwatch_meta::WatchEvent;
use listwatch_meta::watch_event::JSON_LINE_TAIL;
use listwatch_meta::{Object, Resource, Status};
use serde_json::Value;

/// Memo slots of `Object::encoded` (one per representation that is not the object's own JSON).
pub(crate) mod slot {
    pub const PROTOBUF: usize = 0;
    /// `PartialObjectMetadata` for watches (lists and GETs make theirs per request).
    pub const METADATA_V1: usize = 1;
    pub const METADATA_V1BETA1: usize = 2;
    /// Whole protobuf watch frames (length prefix included): 3 + the `EventType` (ADDED,
    /// MODIFIED, DELETED).
    pub const PROTOBUF_FRAME_BASE: usize = 3;
}

/// Encodes objects and lists for one request.
#[derive(Clone)]
pub struct Encoder {
    /// The resource whose objects are encoded (its kind, list kind and printer columns).
    pub resource: &'static Resource,
    /// The format the request negotiated: wire format and representation.
    pub media: MediaType,
}

impl Encoder {
    /// An encoder for objects of `resource` in `media`.
    pub fn new(resource: &'static Resource, media: MediaType) -> Encoder {
        Encoder { resource, media }
    }

    /// One object, as a GET answers it.
    pub fn object(&self, object: &Object) -> Bytes {
        match self.media.wire {
            Wire::Protobuf => return protobuf::object(self.resource, object),
            Wire::Yaml => return yaml::from_json(&self.as_json().object(object)),
            Wire::Json => {}
        }
        match &self.media.output {
            Output::Object => object.json().clone(),
            Output::PartialObjectMetadata { v1beta1 } | Output::PartialObjectMetadataList { v1beta1 } => {
                metadata_json(object, *v1beta1, false)
            }
            Output::Table { v1beta1, include } => {
                table::table(self.resource, std::slice::from_ref(&object), *v1beta1, *include, true, None)
            }
        }
    }

    /// A list. `continue_token` and `remaining` fill `ListMeta`.
    pub fn list(
        &self,
        items: &[std::sync::Arc<Object>],
        resource_version: i64,
        continue_token: Option<&str>,
        remaining: Option<i64>,
    ) -> EncodedList {
        match self.media.wire {
            Wire::Protobuf => {
                return EncodedList::One(protobuf::list(
                    self.resource,
                    items,
                    resource_version,
                    continue_token,
                    remaining,
                ));
            }
            Wire::Yaml => {
                let json = self.as_json().list(items, resource_version, continue_token, remaining).concat();
                return EncodedList::One(yaml::from_json(&json));
            }
            Wire::Json => {}
        }
        let meta = list_meta(resource_version, continue_token, remaining);
        match &self.media.output {
            Output::Table { v1beta1, include } => {
                let objects: Vec<&Object> = items.iter().map(|o| &**o).collect();
                EncodedList::One(table::table(self.resource, &objects, *v1beta1, *include, true, Some(&meta)))
            }
            Output::PartialObjectMetadata { v1beta1 } | Output::PartialObjectMetadataList { v1beta1 } => {
                let version = if *v1beta1 { "v1beta1" } else { "v1" };
                let mut pieces = vec![Bytes::from(format!(
                    "{{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/{version}\",\"metadata\":{meta},\"items\":["
                ))];
                for (i, o) in items.iter().enumerate() {
                    if i > 0 {
                        pieces.push(Bytes::from_static(b","));
                    }
                    pieces.push(metadata_json(o, *v1beta1, false));
                }
                pieces.push(Bytes::from_static(b"]}"));
                EncodedList::Pieces(pieces)
            }
            Output::Object => {
                let mut pieces = Vec::with_capacity(items.len() * 3 + 2);
                pieces.push(Bytes::from(format!(
                    "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                    self.resource.list_kind(),
                    self.resource.api_version(),
                    meta
                )));
                // Items of typed lists carry no kind and apiVersion; a custom resource's list is
                // an UnstructuredList, whose items are the objects whole (kube's
                // unstructuredJSONScheme writes each item's own map).
                let whole_items = self.resource.dynamic.is_some();
                for (i, o) in items.iter().enumerate() {
                    if i > 0 {
                        pieces.push(Bytes::from_static(b","));
                    }
                    if whole_items {
                        pieces.push(o.json().clone());
                    } else {
                        pieces.extend(o.list_item_json());
                    }
                }
                pieces.push(Bytes::from_static(b"]}"));
                EncodedList::Pieces(pieces)
            }
        }
    }

    /// `Content-Type` of responses in this representation.
    pub fn content_type(&self) -> &'static str {
        self.media.content_type()
    }

    /// The same representation in JSON (what YAML is converted from).
    fn as_json(&self) -> Encoder {
        Encoder::new(self.resource, MediaType { wire: Wire::Json, ..self.media })
    }
}

/// An encoded list: pieces to write one after another (zero-copy), or one buffer.
pub enum EncodedList {
    /// Pieces that concatenate to the list (shared item encodings, not copied).
    Pieces(Vec<Bytes>),
    /// The whole list in one buffer.
    One(Bytes),
}

impl EncodedList {
    /// The list as pieces to write in order.
    pub fn into_pieces(self) -> Vec<Bytes> {
        match self {
            EncodedList::Pieces(p) => p,
            EncodedList::One(b) => vec![b],
        }
    }

    /// One contiguous buffer.
    pub fn concat(self) -> Bytes {
        match self {
            EncodedList::One(b) => b,
            EncodedList::Pieces(p) => listwatch_meta::object::concat(&p),
        }
    }

    /// The encoded size in bytes.
    pub fn len(&self) -> usize {
        match self {
            EncodedList::One(b) => b.len(),
            EncodedList::Pieces(p) => p.iter().map(Bytes::len).sum(),
        }
    }

    /// Whether the encoding is zero bytes long.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn list_meta(resource_version: i64, continue_token: Option<&str>, remaining: Option<i64>) -> String {
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), Value::String(resource_version.to_string()));
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        meta.insert("continue".into(), Value::String(token.into()));
    }
    if let Some(n) = remaining {
        meta.insert("remainingItemCount".into(), Value::from(n));
    }
    Value::Object(meta).to_string()
}

/// `PartialObjectMetadata`: the object's metadata only, as metadata-only informers read it.
/// `memoize` for a watch event, which every metadata watcher of the resource shares; a list or
/// a GET makes its own (a memo kept on every listed object would outlive the request).
pub(crate) fn metadata_json(object: &Object, v1beta1: bool, memoize: bool) -> Bytes {
    let encode = |o: &Object| {
        let value: Value = serde_json::from_slice(o.json()).expect("an object's JSON parses");
        let version = if v1beta1 { "v1beta1" } else { "v1" };
        let out = serde_json::json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": value.get("metadata").cloned().unwrap_or(Value::Object(Default::default())),
        });
        Bytes::from(serde_json::to_vec(&out).expect("JSON"))
    };
    if !memoize {
        return encode(object);
    }
    object.encoded(if v1beta1 { slot::METADATA_V1BETA1 } else { slot::METADATA_V1 }, encode)
}

/// Wraps objects in watch-event envelopes for one watch.
pub struct EventEncoder {
    encoder: Encoder,
    /// Table watches send column definitions only in their first event.
    table_header_sent: bool,
}

impl EventEncoder {
    /// Event encoding for one watch, in `encoder`'s format.
    pub fn new(encoder: Encoder) -> EventEncoder {
        EventEncoder { encoder, table_header_sent: false }
    }

    /// The object encoder the events wrap.
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// Appends the wire form of `event` to `out` as pieces.
    pub fn event(&mut self, event: &WatchEvent, out: &mut Vec<Bytes>) {
        match self.encoder.media.wire {
            // Watches never negotiate YAML.
            Wire::Json | Wire::Yaml => self.json_event(event, out),
            Wire::Protobuf => protobuf::watch_event(self.encoder.resource, event, out),
        }
    }

    /// Appends the JSON line of `event` (`{"type":..,"object":..}\n`) to `out`. For the plain
    /// representation, an object the watch cache built for this very event is its line already
    /// (one buffer shared by every watcher: a delivery is one piece and a reference count);
    /// otherwise the line is the envelope around the object's shared bytes, in three pieces.
    /// Other representations share the object's bytes and build only the envelope.
    pub fn json_event(&mut self, event: &WatchEvent, out: &mut Vec<Bytes>) {
        if self.encoder.media.output == Output::Object {
            if let Some((object, event_type)) = event.object_event() {
                match object.json_line(event_type) {
                    Some(line) => out.push(line.clone()),
                    None => out.extend([
                        Bytes::from_static(event_type.json_line_head()),
                        object.json().clone(),
                        Bytes::from_static(JSON_LINE_TAIL),
                    ]),
                }
                return;
            }
        }
        let (prefix, object): (&'static [u8], Bytes) = match event {
            WatchEvent::Added(o) => (b"{\"type\":\"ADDED\",\"object\":", self.event_object(o)),
            WatchEvent::Modified(o) => (b"{\"type\":\"MODIFIED\",\"object\":", self.event_object(o)),
            WatchEvent::Deleted(o) => (b"{\"type\":\"DELETED\",\"object\":", self.event_object(o)),
            WatchEvent::Bookmark { resource_version, initial_events_end } => {
                (b"{\"type\":\"BOOKMARK\",\"object\":", self.bookmark(*resource_version, *initial_events_end))
            }
            WatchEvent::Error(e) => (b"{\"type\":\"ERROR\",\"object\":", Bytes::from(e.status().to_json())),
        };
        out.push(Bytes::from_static(prefix));
        out.push(object);
        out.push(Bytes::from_static(b"}\n"));
    }

    /// The JSON of the object an event carries, in the watch's representation.
    pub fn event_object(&mut self, object: &Object) -> Bytes {
        match &self.encoder.media.output {
            Output::Table { v1beta1, include } => {
                let with_header = !std::mem::replace(&mut self.table_header_sent, true);
                table::table(self.encoder.resource, &[object], *v1beta1, *include, with_header, None)
            }
            Output::PartialObjectMetadata { v1beta1 } | Output::PartialObjectMetadataList { v1beta1 } => {
                metadata_json(object, *v1beta1, true)
            }
            Output::Object => object.json().clone(),
        }
    }

    /// A bookmark's object: an empty object of the watched kind (or representation) with only
    /// the resourceVersion (and the initial-events-end annotation) set.
    pub fn bookmark(&mut self, resource_version: i64, initial_events_end: bool) -> Bytes {
        let mut metadata = serde_json::json!({"resourceVersion": resource_version.to_string()});
        if initial_events_end {
            metadata["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
        }
        let (kind, api_version) = match &self.encoder.media.output {
            Output::Object => (self.encoder.resource.kind.to_string(), self.encoder.resource.api_version()),
            Output::Table { v1beta1, .. } => {
                // A Table watch's bookmark is a Table with the resourceVersion in its ListMeta.
                let version = if *v1beta1 { "v1beta1" } else { "v1" };
                let mut table = serde_json::json!({
                    "kind": "Table", "apiVersion": format!("meta.k8s.io/{version}"),
                    "metadata": {"resourceVersion": resource_version.to_string()},
                    "columnDefinitions": null, "rows": null,
                });
                if initial_events_end {
                    // Tables have no annotations; clients read the marker from the object.
                    table["rows"] = serde_json::json!([{"cells": [], "object": {"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": metadata}}]);
                }
                return Bytes::from(table.to_string());
            }
            Output::PartialObjectMetadata { v1beta1 } | Output::PartialObjectMetadataList { v1beta1 } => (
                "PartialObjectMetadata".to_string(),
                format!("meta.k8s.io/{}", if *v1beta1 { "v1beta1" } else { "v1" }),
            ),
        };
        Bytes::from(serde_json::json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}).to_string())
    }
}

/// A Status as JSON bytes.
pub fn status_json(status: &Status) -> Bytes {
    Bytes::from(status.to_json())
}

/// A Status as an enveloped protobuf message.
pub fn status_protobuf(status: &Status) -> Bytes {
    protobuf::status(status)
}

/// Joins pieces into one buffer (for transports that need one message per event); a single
/// piece is shared, not copied.
pub fn join(pieces: &[Bytes]) -> Bytes {
    if let [one] = pieces {
        return one.clone();
    }
    let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
    for p in pieces {
        out.extend_from_slice(p);
    }
    out.freeze()
}
