//! The byte layouts around an object's own message: the `k8s\0` + runtime.Unknown envelope,
//! list messages, watch events and their length-prefixed frames.
//!
//! These are written by hand rather than through the descriptors because they splice bytes
//! the caller already has (memoized per-object encodings) and must not copy or re-encode them
//! more than once. Each layout is the one Go's generated marshallers produce, byte for byte.

use crate::ProtoError;
use crate::wire::{FieldValue, Reader, delimited_len, put_bytes, put_key, put_varint, varint_len};

/// The four bytes every protobuf-encoded Kubernetes object starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// What an enveloped object says about itself. Borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `v1`, `apps/v1`, ...
    pub api_version: &'a str,
    /// The object's kind (`Pod`): which message `raw` is.
    pub kind: &'a str,
    /// The kind's own message bytes (when `content_type` is empty).
    pub raw: &'a [u8],
    /// Empty for protobuf objects.
    pub content_encoding: &'a str,
    /// Empty for protobuf objects; otherwise the media type `raw` is in.
    pub content_type: &'a str,
}

/// `k8s\0` followed by runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding: "",
/// contentType: ""}: what kube-apiserver writes as a protobuf response body, and what a watch
/// event's `object.raw` holds. The empty strings are written, as Go does.
pub fn wrap_unknown(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta_len = delimited_len(1, api_version.len()) + delimited_len(2, kind.len());
    let unknown_len = delimited_len(1, type_meta_len) + delimited_len(2, raw.len()) + 4;
    let mut out = Vec::with_capacity(MAGIC.len() + unknown_len);
    out.extend_from_slice(&MAGIC);
    put_key(&mut out, 1, crate::wire::LENGTH_DELIMITED);
    put_varint(&mut out, type_meta_len as u64);
    put_bytes(&mut out, 1, api_version.as_bytes());
    put_bytes(&mut out, 2, kind.as_bytes());
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    debug_assert_eq!(out.len(), MAGIC.len() + unknown_len);
    out
}

/// Reads an enveloped object. Data without the `k8s\0` prefix is rejected, as Kubernetes
/// clients must reject it.
pub fn unwrap_unknown(bytes: &[u8]) -> Result<Envelope<'_>, ProtoError> {
    let body = bytes.strip_prefix(&MAGIC[..]).ok_or(ProtoError::MissingMagic)?;
    let mut envelope = Envelope { api_version: "", kind: "", raw: &[], content_encoding: "", content_type: "" };
    let mut reader = Reader::new(body);
    while let Some((number, value)) = reader.next_field().map_err(malformed)? {
        let FieldValue::Bytes(payload) = value else { continue };
        match number {
            1 => {
                let mut type_meta = Reader::new(payload);
                while let Some((number, value)) = type_meta.next_field().map_err(malformed)? {
                    match (number, value) {
                        (1, FieldValue::Bytes(text)) => envelope.api_version = utf8(text)?,
                        (2, FieldValue::Bytes(text)) => envelope.kind = utf8(text)?,
                        _ => {}
                    }
                }
            }
            2 => envelope.raw = payload,
            3 => envelope.content_encoding = utf8(payload)?,
            4 => envelope.content_type = utf8(payload)?,
            _ => {}
        }
    }
    Ok(envelope)
}

/// List metadata for [`encode_list`](crate::encode_list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListMeta<'a> {
    /// The revision the list was read at.
    pub resource_version: &'a str,
    /// The `continue` token; empty when the list is complete.
    pub continue_token: &'a str,
    /// About how many items the pages after this one hold, when known.
    pub remaining_item_count: Option<i64>,
}

/// The `<Kind>List` message body: {metadata: ListMeta = 1, items = 2}, every item being one
/// object's own message bytes (not enveloped), so per-object encodings can be reused.
/// ListMeta is written as Go writes it: selfLink, resourceVersion and continue always (empty
/// or not), remainingItemCount when set.
pub(crate) fn list_body<B: AsRef<[u8]>>(meta: &ListMeta<'_>, items: &[B]) -> Vec<u8> {
    let mut list_meta = Vec::with_capacity(8 + meta.resource_version.len() + meta.continue_token.len());
    put_bytes(&mut list_meta, 1, b"");
    put_bytes(&mut list_meta, 2, meta.resource_version.as_bytes());
    put_bytes(&mut list_meta, 3, meta.continue_token.as_bytes());
    if let Some(count) = meta.remaining_item_count {
        put_key(&mut list_meta, 4, crate::wire::VARINT);
        put_varint(&mut list_meta, count as u64);
    }
    let items_len: usize = items.iter().map(|item| delimited_len(2, item.as_ref().len())).sum();
    let mut out = Vec::with_capacity(delimited_len(1, list_meta.len()) + items_len);
    put_bytes(&mut out, 1, &list_meta);
    for item in items {
        put_bytes(&mut out, 2, item.as_ref());
    }
    out
}

/// A metav1.WatchEvent message: {type = 1, object = RawExtension{raw = 1}}, with `object` the
/// enveloped object (see [`wrap_unknown`]). A protobuf watch stream carries these unenveloped,
/// each in a [`frame`].
pub fn encode_watch_event(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut out = watch_event_header(event_type, object.len(), false);
    out.extend_from_slice(object);
    out
}

/// Reads a metav1.WatchEvent message (a frame's body, or a WebSocket binary message): its type
/// and its object's bytes (the enveloped object), both borrowed.
pub fn decode_watch_event(message: &[u8]) -> Result<(&str, &[u8]), ProtoError> {
    let malformed = |why: &str| ProtoError::Malformed(format!("watch event: {why}"));
    let mut event_type = None;
    let mut object: &[u8] = &[];
    let mut fields = Reader::new(message);
    while let Some((number, value)) = fields.next_field().map_err(&malformed)? {
        match (number, value) {
            (1, FieldValue::Bytes(text)) => {
                event_type = Some(std::str::from_utf8(text).map_err(|_| malformed("the type is not UTF-8"))?);
            }
            (2, FieldValue::Bytes(extension)) => {
                let mut inner = Reader::new(extension);
                while let Some((number, value)) = inner.next_field().map_err(&malformed)? {
                    if let (1, FieldValue::Bytes(raw)) = (number, value) {
                        object = raw;
                    }
                }
            }
            _ => {}
        }
    }
    Ok((event_type.ok_or_else(|| malformed("no type"))?, object))
}

/// Everything of a framed watch event that comes before the object bytes: the 4-byte
/// big-endian frame length, then the WatchEvent fields up to where `object.raw`'s payload
/// starts. `watch_event_prefix(t, object.len())` followed by `object` is exactly
/// `frame(&encode_watch_event(t, object))`, so a server can write the small prefix and then
/// the shared, already-encoded object without copying it.
pub fn watch_event_prefix(event_type: &str, object_len: usize) -> Vec<u8> {
    watch_event_header(event_type, object_len, true)
}

fn watch_event_header(event_type: &str, object_len: usize, framed: bool) -> Vec<u8> {
    let raw_extension_len = delimited_len(1, object_len);
    let event_len = delimited_len(1, event_type.len()) + delimited_len(2, raw_extension_len);
    let header_len = event_len - object_len + if framed { 4 } else { 0 };
    let mut out = Vec::with_capacity(header_len + if framed { 0 } else { object_len });
    if framed {
        let frame_len = u32::try_from(event_len).expect("a watch event is smaller than 4 GiB");
        out.extend_from_slice(&frame_len.to_be_bytes());
    }
    put_bytes(&mut out, 1, event_type.as_bytes());
    put_key(&mut out, 2, crate::wire::LENGTH_DELIMITED);
    put_varint(&mut out, raw_extension_len as u64);
    put_key(&mut out, 1, crate::wire::LENGTH_DELIMITED);
    put_varint(&mut out, object_len as u64);
    debug_assert_eq!(out.len(), header_len);
    debug_assert_eq!(varint_len(object_len as u64) + 1 + object_len, raw_extension_len);
    out
}

/// One frame of a protobuf stream: the 4-byte big-endian length, then the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).expect("a frame is smaller than 4 GiB");
    let mut out = Vec::with_capacity(4 + message.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn utf8(bytes: &[u8]) -> Result<&str, ProtoError> {
    std::str::from_utf8(bytes).map_err(|_| ProtoError::Malformed("envelope string is not UTF-8".to_owned()))
}

fn malformed(reason: &str) -> ProtoError {
    ProtoError::Malformed(format!("envelope: {reason}"))
}
