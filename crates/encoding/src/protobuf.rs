//! The protobuf wire (spec §2.4): objects as `k8s\0` + runtime.Unknown, lists as `<Kind>List`
//! messages, watch events as length-prefixed `WatchEvent` frames.
//!
//! Each object's enveloped encoding is memoized on the object; a watch frame is a small
//! per-delivery header followed by those shared bytes, and a list item is a zero-copy slice of
//! them (the raw message inside the envelope).

use bytes::Bytes;
use listwatch_meta::WatchEvent;
use listwatch_meta::{Object, Resource, Status};
use serde_json::{Value, json};

use crate::slot;

/// The object as `k8s\0` + Unknown{typeMeta, raw}, memoized.
pub(crate) fn object(resource: &Resource, object: &Object) -> Bytes {
    object.encoded(slot::PROTOBUF, |o| {
        let value: Value = serde_json::from_slice(o.json()).expect("an object's JSON parses");
        Bytes::from(enveloped(resource, &value))
    })
}

fn enveloped(resource: &Resource, value: &Value) -> Vec<u8> {
    // Stored objects were decoded against the schema on write, so they always encode; a
    // value that does not (someone else's data) is sent with what does encode.
    let raw =
        listwatch_proto::encode_object(resource.group, resource.version, resource.kind, value).unwrap_or_else(|e| {
            tracing::warn!(kind = resource.kind, error = %e, "an object does not fit its protobuf schema");
            Vec::new()
        });
    listwatch_proto::wrap_unknown(&resource.api_version(), resource.kind, &raw)
}

/// The kind's own message inside an enveloped object: a slice of the same buffer.
fn raw_message(enveloped: &Bytes) -> Bytes {
    match listwatch_proto::unwrap_unknown(enveloped) {
        Ok(envelope) => {
            let start = envelope.raw.as_ptr() as usize - enveloped.as_ptr() as usize;
            enveloped.slice(start..start + envelope.raw.len())
        }
        Err(_) => Bytes::new(),
    }
}

/// A `<Kind>List`.
pub(crate) fn list(
    resource: &Resource,
    items: &[std::sync::Arc<Object>],
    resource_version: i64,
    continue_token: Option<&str>,
    remaining: Option<i64>,
) -> Bytes {
    let raw: Vec<Bytes> = items.iter().map(|o| raw_message(&object(resource, o))).collect();
    let rv = resource_version.to_string();
    let meta = listwatch_proto::ListMeta {
        resource_version: &rv,
        continue_token: continue_token.unwrap_or(""),
        remaining_item_count: remaining,
    };
    let body = listwatch_proto::encode_list(resource.group, resource.version, resource.kind, &meta, &raw)
        .expect("kinds with a schema have a list message");
    Bytes::from(listwatch_proto::wrap_unknown(&resource.api_version(), &resource.list_kind(), &body))
}

/// A Status, enveloped.
pub(crate) fn status(status: &Status) -> Bytes {
    let value = serde_json::to_value(status).expect("a Status serializes");
    Bytes::from(listwatch_proto::encode_status(&value))
}

/// A bookmark's object: an empty object of the kind with the resourceVersion.
pub(crate) fn bookmark(resource: &Resource, resource_version: i64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": resource_version.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    Bytes::from(enveloped(resource, &json!({"metadata": metadata})))
}

/// Appends one watch frame: `[len][WatchEvent{type, object: {raw}}]`. Frames of object
/// events are memoized per object version and type, so a delivery is one shared buffer.
pub(crate) fn watch_event(resource: &Resource, event: &WatchEvent, out: &mut Vec<Bytes>) {
    if let Some((o, event_type)) = event.object_event() {
        out.push(o.encoded(slot::PROTOBUF_FRAME_BASE + event_type as usize, |o| {
            let object = object(resource, o);
            let mut frame = listwatch_proto::watch_event_prefix(event_type.name(), object.len());
            frame.extend_from_slice(&object);
            Bytes::from(frame)
        }));
        return;
    }
    let (event_type, object) = match event {
        WatchEvent::Bookmark { resource_version, initial_events_end } => {
            ("BOOKMARK", bookmark(resource, *resource_version, *initial_events_end))
        }
        WatchEvent::Error(e) => ("ERROR", status(e.status())),
        WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
            unreachable!("object events are framed above")
        }
    };
    out.push(Bytes::from(listwatch_proto::watch_event_prefix(event_type, object.len())));
    out.push(object);
}
