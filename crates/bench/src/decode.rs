//! Cutting watch events out of the bytes a transport delivers, and reading each event's
//! resourceVersion.
//!
//! JSON watch streams are newline-delimited events (`{"type":..,"object":..}\n`); one chunk may
//! hold many events and one event may span chunks (the JSON inside never has a raw newline:
//! strings escape it). [`JsonLinesDecoder`] finds boundaries with `memchr`, reads complete
//! events straight from the chunk, and copies only an event cut by a chunk boundary into a
//! carry buffer that is reused, so decoding allocates nothing per event.
//!
//! Two ways to read an event:
//! * cheap (default): the resourceVersion is the first `"resourceVersion":"` after the object's
//!   `"metadata":{` (the server writes metadata first, resourceVersion early in it), so only the
//!   first ~200 bytes of each event are looked at;
//! * `--decode`: a full `serde_json` decode of every event into a `Value`, as a client that
//!   uses the object would pay.
//!
//! Protobuf watch streams are 4-byte big-endian length-prefixed `metav1.WatchEvent` frames
//! ([`ProtobufFramesDecoder`]). Cheaply, only the fields on the way to the resourceVersion are
//! walked (event type → object.raw → the `k8s\0` envelope's raw → the object's metadata →
//! resourceVersion, field 6); `--decode` decodes the whole object against its schema.

use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::transport::WireEncoding;

static METADATA: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"metadata\":{"));
static RESOURCE_VERSION: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"resourceVersion\":\""));
static CODE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"code\":"));

/// What one event is, as far as the bench cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// ADDED, MODIFIED or DELETED of an object at this resourceVersion.
    Object {
        resource_version: u64,
    },
    Bookmark {
        resource_version: u64,
    },
    /// An ERROR event with the Status code (410 for "too old resource version").
    Error {
        code: Option<u32>,
    },
    /// Something the decoder could not read.
    Malformed,
}

/// Turns a watch's bytes into events.
pub enum EventDecoder {
    JsonLines(JsonLinesDecoder),
    ProtobufFrames(ProtobufFramesDecoder),
}

impl EventDecoder {
    pub fn new(encoding: WireEncoding, full_decode: bool) -> EventDecoder {
        match encoding {
            WireEncoding::Json => EventDecoder::JsonLines(JsonLinesDecoder::new(full_decode)),
            WireEncoding::Protobuf => EventDecoder::ProtobufFrames(ProtobufFramesDecoder::new(full_decode)),
        }
    }

    /// Feeds the next bytes of the stream; calls `on_event` for every event they complete.
    pub fn feed(&mut self, bytes: &[u8], on_event: &mut impl FnMut(Decoded)) {
        match self {
            EventDecoder::JsonLines(d) => d.feed(bytes, on_event),
            EventDecoder::ProtobufFrames(d) => d.feed(bytes, on_event),
        }
    }

    /// Forgets a partial event (the stream ended; a new one starts clean).
    pub fn reset(&mut self) {
        match self {
            EventDecoder::JsonLines(d) => d.carry.clear(),
            EventDecoder::ProtobufFrames(d) => d.carry.clear(),
        }
    }
}

/// Newline-delimited JSON events.
pub struct JsonLinesDecoder {
    /// The start of an event whose end has not arrived yet.
    carry: Vec<u8>,
    full_decode: bool,
}

impl JsonLinesDecoder {
    pub fn new(full_decode: bool) -> JsonLinesDecoder {
        JsonLinesDecoder { carry: Vec::new(), full_decode }
    }

    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut impl FnMut(Decoded)) {
        if !self.carry.is_empty() {
            match memchr::memchr(b'\n', bytes) {
                Some(end) => {
                    self.carry.extend_from_slice(&bytes[..end]);
                    let event = decode_line(&self.carry, self.full_decode);
                    on_event(event);
                    self.carry.clear();
                    bytes = &bytes[end + 1..];
                }
                None => {
                    self.carry.extend_from_slice(bytes);
                    return;
                }
            }
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', bytes) {
            let line = &bytes[start..end];
            if !line.is_empty() {
                on_event(decode_line(line, self.full_decode));
            }
            start = end + 1;
        }
        self.carry.extend_from_slice(&bytes[start..]);
    }
}

fn decode_line(line: &[u8], full_decode: bool) -> Decoded {
    if full_decode { decode_full(line) } else { decode_cheap(line) }
}

/// Reads the type from the envelope's start and the resourceVersion from the object's
/// metadata, without parsing the rest.
fn decode_cheap(line: &[u8]) -> Decoded {
    if line.starts_with(b"{\"type\":\"ERROR\"") {
        let code = CODE.find(line).and_then(|at| parse_digits(&line[at + CODE.needle().len()..]));
        return Decoded::Error { code: code.map(|c| c as u32) };
    }
    match resource_version_of(line) {
        Some(resource_version) if line.starts_with(b"{\"type\":\"BOOKMARK\"") => Decoded::Bookmark { resource_version },
        Some(resource_version) => Decoded::Object { resource_version },
        None => Decoded::Malformed,
    }
}

#[derive(serde::Deserialize)]
struct FullEvent {
    #[serde(rename = "type")]
    kind: String,
    object: serde_json::Value,
}

/// Decodes the whole event, as a client that uses the object would.
fn decode_full(line: &[u8]) -> Decoded {
    let Ok(event) = serde_json::from_slice::<FullEvent>(line) else {
        return Decoded::Malformed;
    };
    if event.kind == "ERROR" {
        return Decoded::Error { code: event.object.get("code").and_then(serde_json::Value::as_u64).map(|c| c as u32) };
    }
    let rv = event
        .object
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .and_then(|s| s.parse::<u64>().ok());
    match (rv, event.kind.as_str()) {
        (Some(resource_version), "BOOKMARK") => Decoded::Bookmark { resource_version },
        (Some(resource_version), _) => Decoded::Object { resource_version },
        (None, _) => Decoded::Malformed,
    }
}

/// The `metadata.resourceVersion` of a JSON object (an event, an object, or a list's
/// `ListMeta`): the first `"resourceVersion":"` after the first `"metadata":{`.
pub fn resource_version_of(json: &[u8]) -> Option<u64> {
    let metadata = METADATA.find(json)? + METADATA.needle().len();
    let rest = &json[metadata..];
    let at = RESOURCE_VERSION.find(rest)? + RESOURCE_VERSION.needle().len();
    parse_digits(&rest[at..])
}

/// A JSON string field of a list's `ListMeta` near the start of the body (`continue`).
pub fn list_meta_string(json: &[u8], field: &str) -> Option<String> {
    let key = format!("\"{field}\":\"");
    let metadata = METADATA.find(json)?;
    let rest = &json[metadata..];
    let at = memchr::memmem::find(rest, key.as_bytes())? + key.len();
    let end = memchr::memchr(b'"', &rest[at..])?;
    Some(String::from_utf8_lossy(&rest[at..at + end]).into_owned())
}

fn parse_digits(bytes: &[u8]) -> Option<u64> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    bytes[..digits].iter().try_fold(0u64, |n, b| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
}

/// Length-prefixed protobuf `WatchEvent` frames.
pub struct ProtobufFramesDecoder {
    /// Bytes of a frame whose end has not arrived yet.
    carry: Vec<u8>,
    full_decode: bool,
}

impl ProtobufFramesDecoder {
    pub fn new(full_decode: bool) -> ProtobufFramesDecoder {
        ProtobufFramesDecoder { carry: Vec::new(), full_decode }
    }

    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut impl FnMut(Decoded)) {
        if !self.carry.is_empty() {
            self.carry.extend_from_slice(bytes);
            let carried = std::mem::take(&mut self.carry);
            let used = self.frames(&carried, on_event);
            self.carry = carried[used..].to_vec();
            return;
        }
        let used = self.frames(bytes, on_event);
        bytes = &bytes[used..];
        self.carry.extend_from_slice(bytes);
    }

    /// Decodes every complete frame at the start of `bytes`; returns the bytes consumed.
    fn frames(&self, bytes: &[u8], on_event: &mut impl FnMut(Decoded)) -> usize {
        let mut at = 0;
        while bytes.len() - at >= 4 {
            let len = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes")) as usize;
            let Some(frame) = bytes.get(at + 4..at + 4 + len) else { break };
            on_event(decode_frame(frame, self.full_decode).unwrap_or(Decoded::Malformed));
            at += 4 + len;
        }
        at
    }
}

/// Protobuf wire reading, only as deep as the bench needs.
mod wire {
    pub fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *bytes.get(*at)?;
            *at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The first length-delimited field `number` of a message, or a varint field as its value.
    pub enum Field<'a> {
        Bytes(&'a [u8]),
        Varint(u64),
    }

    pub fn field(message: &[u8], number: u64) -> Option<Field<'_>> {
        let mut at = 0;
        while at < message.len() {
            let key = varint(message, &mut at)?;
            let (field, wire_type) = (key >> 3, key & 7);
            match wire_type {
                0 => {
                    let v = varint(message, &mut at)?;
                    if field == number {
                        return Some(Field::Varint(v));
                    }
                }
                2 => {
                    let len = varint(message, &mut at)? as usize;
                    let value = message.get(at..at + len)?;
                    at += len;
                    if field == number {
                        return Some(Field::Bytes(value));
                    }
                }
                1 => at += 8,
                5 => at += 4,
                _ => return None,
            }
        }
        None
    }

    pub fn bytes(message: &[u8], number: u64) -> Option<&[u8]> {
        match field(message, number)? {
            Field::Bytes(b) => Some(b),
            Field::Varint(_) => None,
        }
    }
}

fn decode_frame(frame: &[u8], full_decode: bool) -> Option<Decoded> {
    // WatchEvent { type = 1; object = 2 (RawExtension { raw = 1 }) }
    let event_type = wire::bytes(frame, 1)?;
    let enveloped = wire::bytes(wire::bytes(frame, 2)?, 1)?;
    if full_decode {
        let envelope = listwatch_proto::unwrap_unknown(enveloped).ok()?;
        let (group, version) = envelope.api_version.split_once('/').unwrap_or(("", envelope.api_version));
        let object = listwatch_proto::decode_object(group, version, envelope.kind, envelope.raw).ok()?.object;
        if event_type == b"ERROR" {
            return Some(Decoded::Error {
                code: object.get("code").and_then(serde_json::Value::as_u64).map(|c| c as u32),
            });
        }
        let rv = object.pointer("/metadata/resourceVersion")?.as_str()?.parse().ok()?;
        return Some(object_or_bookmark(event_type, rv));
    }
    // `k8s\0` + Unknown { typeMeta = 1; raw = 2 }.
    let unknown = enveloped.strip_prefix(b"k8s\0")?;
    let raw = wire::bytes(unknown, 2)?;
    if event_type == b"ERROR" {
        // Status { code = 6 }.
        let code = match wire::field(raw, 6) {
            Some(wire::Field::Varint(c)) => Some(c as u32),
            _ => None,
        };
        return Some(Decoded::Error { code });
    }
    // Every kind's metadata is field 1; ObjectMeta's resourceVersion is field 6.
    let rv = wire::bytes(wire::bytes(raw, 1)?, 6)?;
    Some(object_or_bookmark(event_type, parse_digits(rv)?))
}

fn object_or_bookmark(event_type: &[u8], resource_version: u64) -> Decoded {
    if event_type == b"BOOKMARK" {
        Decoded::Bookmark { resource_version }
    } else {
        Decoded::Object { resource_version }
    }
}

/// Counts the occurrences of a pattern in a stream of chunks, including those split across
/// a chunk boundary (list items: `{"metadata":{`).
pub struct StreamCounter {
    finder: Finder<'static>,
    /// The last `pattern.len() - 1` bytes seen.
    tail: Vec<u8>,
    pub count: u64,
}

impl StreamCounter {
    pub fn new(pattern: &'static [u8]) -> StreamCounter {
        StreamCounter { finder: Finder::new(pattern), tail: Vec::new(), count: 0 }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        let keep = self.finder.needle().len() - 1;
        if !self.tail.is_empty() {
            // Matches that start in the tail and end in `bytes`.
            let mut joined = self.tail.clone();
            joined.extend_from_slice(&bytes[..bytes.len().min(keep)]);
            self.count += self.finder.find_iter(&joined).count() as u64;
        }
        self.count += self.finder.find_iter(bytes).count() as u64;
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.extend_from_slice(bytes);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] = br#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","uid":"u","resourceVersion":"1234","creationTimestamp":"x"},"data":{"resourceVersion":"9"}}}"#;

    fn events(decoder: &mut EventDecoder, chunks: &[&[u8]]) -> Vec<Decoded> {
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut |e| out.push(e));
        }
        out
    }

    #[test]
    fn events_across_and_within_chunks() {
        let mut stream = Vec::new();
        for _ in 0..3 {
            stream.extend_from_slice(EVENT);
            stream.push(b'\n');
        }
        for full in [false, true] {
            for split in [1, 7, 50, EVENT.len(), EVENT.len() + 1, stream.len()] {
                let mut decoder = EventDecoder::new(WireEncoding::Json, full);
                let chunks: Vec<&[u8]> = stream.chunks(split).collect();
                let got = events(&mut decoder, &chunks);
                assert_eq!(got, vec![Decoded::Object { resource_version: 1234 }; 3], "split {split} full {full}");
            }
        }
    }

    #[test]
    fn errors_and_bookmarks() {
        let mut decoder = EventDecoder::new(WireEncoding::Json, false);
        let got = events(
            &mut decoder,
            &[
                b"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n",
                b"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"77\"}}}\n",
            ],
        );
        assert_eq!(got, vec![Decoded::Error { code: Some(410) }, Decoded::Bookmark { resource_version: 77 }]);
    }

    #[test]
    fn counts_split_patterns() {
        let text = b"[{\"metadata\":{1},{\"metadata\":{2},{\"metadata\":{3}]";
        for split in 1..text.len() {
            let mut counter = StreamCounter::new(b"{\"metadata\":{");
            for chunk in text.chunks(split) {
                counter.feed(chunk);
            }
            assert_eq!(counter.count, 3, "split {split}");
        }
    }

    #[test]
    fn protobuf_frames_across_chunks() {
        let object = listwatch_proto::encode_object(
            "",
            "v1",
            "ConfigMap",
            &serde_json::json!({"metadata": {"name": "a", "resourceVersion": "1234"}, "data": {"k": "v"}}),
        )
        .unwrap();
        let enveloped = listwatch_proto::wrap_unknown("v1", "ConfigMap", &object);
        let mut frame = listwatch_proto::watch_event_prefix("MODIFIED", enveloped.len());
        frame.extend_from_slice(&enveloped);
        let stream: Vec<u8> = frame.iter().chain(frame.iter()).copied().collect();
        for full in [false, true] {
            for split in [1, 3, 4, 5, 20, frame.len(), stream.len()] {
                let mut decoder = EventDecoder::new(WireEncoding::Protobuf, full);
                let chunks: Vec<&[u8]> = stream.chunks(split).collect();
                assert_eq!(
                    events(&mut decoder, &chunks),
                    vec![Decoded::Object { resource_version: 1234 }; 2],
                    "split {split}"
                );
            }
        }
    }

    #[test]
    fn list_meta() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc=="},"items":[]}"#;
        assert_eq!(resource_version_of(body), Some(42));
        assert_eq!(list_meta_string(body, "continue").as_deref(), Some("abc=="));
    }
}
