//! Decoding a JSON LIST response while it arrives.
//!
//! A list of 100,000 pods is a body of over 100 MB. Reading it whole before decoding would hold
//! the body and the decoded objects at once; instead [`ListDecoder`] decodes each element of the
//! top-level `items` array as soon as its last byte arrives (framed by the same [`JsonFramer`]
//! as watch events, in its array mode) and drops its bytes. Everything else in the list (`kind`,
//! `apiVersion`, `metadata` with the resourceVersion and the continue token) is kept as a small
//! *skeleton* document with `"items":[]` and decoded at the end.
//!
//! The skeleton's scanner goes byte by byte (it sees a few hundred bytes); it only needs to
//! know where strings are, how deep it is, and whether the `[` it meets at depth 1 is the value
//! of the key `items`.

use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::event::{DEFAULT_MAX_EVENT_BYTES, JsonFramer};
use crate::json;
use crate::resource::ObjectList;

/// Decodes a JSON list body pushed in arbitrary pieces; each item `K` is stored as `wrap(item)`
/// the moment it is decoded (the reflector's lists store `Arc<K>`, so a list of 100,000 objects
/// is never held as a `Vec<K>` next to the same objects in `Arc`s).
pub(crate) struct ListDecoder<K, T = K> {
    skeleton: Vec<u8>,
    items: Vec<T>,
    wrap: fn(K) -> T,
    /// The first item that failed to decode.
    error: Option<Error>,
    /// `Some` while inside the `items` array.
    elements: Option<JsonFramer>,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Where the string being scanned starts in `skeleton` (after its quote).
    string_start: usize,
    /// The last string closed at depth 1 was `"items"`.
    last_string_is_items: bool,
    /// The value being scanned at depth 1 belongs to the key `items`.
    in_items_value: bool,
}

impl<K: DeserializeOwned, T> ListDecoder<K, T> {
    pub(crate) fn new(wrap: fn(K) -> T) -> ListDecoder<K, T> {
        ListDecoder {
            skeleton: Vec::new(),
            items: Vec::new(),
            wrap,
            error: None,
            elements: None,
            depth: 0,
            in_string: false,
            escaped: false,
            string_start: 0,
            last_string_is_items: false,
            in_items_value: false,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let mut at = 0;
        while at < bytes.len() {
            if let Some(framer) = &mut self.elements {
                let (items, error, wrap) = (&mut self.items, &mut self.error, self.wrap);
                let closed = framer.push_array_elements(&bytes[at..], |element| {
                    if error.is_some() {
                        return;
                    }
                    match decode_json(element, "a list item") {
                        Ok(item) => items.push(wrap(item)),
                        Err(e) => *error = Some(e),
                    }
                })?;
                match closed {
                    Some(offset) => {
                        self.elements = None;
                        self.skeleton.push(b']');
                        at += offset + 1;
                    }
                    None => return Ok(()),
                }
            } else {
                at += self.scan_skeleton(&bytes[at..]);
            }
        }
        Ok(())
    }

    /// Copies skeleton bytes until the `items` array opens (returns how many were consumed).
    fn scan_skeleton(&mut self, bytes: &[u8]) -> usize {
        for (i, &byte) in bytes.iter().enumerate() {
            self.skeleton.push(byte);
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                    if self.depth == 1 {
                        let end = self.skeleton.len() - 1;
                        self.last_string_is_items = &self.skeleton[self.string_start..end] == b"items";
                    }
                }
                continue;
            }
            match byte {
                b'"' => {
                    self.in_string = true;
                    self.string_start = self.skeleton.len();
                }
                b':' if self.depth == 1 => self.in_items_value = self.last_string_is_items,
                b',' if self.depth == 1 => self.in_items_value = false,
                b'[' if self.depth == 1 && self.in_items_value => {
                    self.elements = Some(JsonFramer::new(DEFAULT_MAX_EVENT_BYTES));
                    self.in_items_value = false;
                    return i + 1;
                }
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        bytes.len()
    }

    /// The list, once the body has ended.
    pub(crate) fn finish(self) -> Result<ObjectList<T>, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.elements.is_some() || self.in_string || self.depth > 0 {
            let source = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the list ended early");
            return Err(Error::Io { what: "reading a list", source });
        }
        // The skeleton's `items` is `[]`.
        let skeleton: ObjectList<K> = decode_json(&self.skeleton, "a list")?;
        Ok(ObjectList { metadata: skeleton.metadata, items: self.items })
    }
}

/// One JSON document: checked as UTF-8 once, then parsed from the `str` (which then need not
/// check each string on its own, what `from_slice` does: a tenth of the decoding), without
/// spare room in one-element `Vec`s ([`json::from_str`]).
pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::decode(what, e))?;
    json::from_str(text).map_err(|e| Error::decode(what, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{DynamicObject, Object};

    const LIST: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc"},"items":[{"metadata":{"name":"a","namespace":"ns","annotations":{"items":"[{\"}\\"}},"data":{"items":"]"}},
 {"metadata":{"name":"b","namespace":"ns"},"data":{"x":["{","}"]}}]}"#;

    fn decode_in_pieces(bytes: &[u8], step: usize) -> Result<ObjectList<DynamicObject>, Error> {
        let mut decoder = ListDecoder::new(std::convert::identity);
        for piece in bytes.chunks(step) {
            decoder.push(piece)?;
        }
        decoder.finish()
    }

    #[test]
    fn items_and_metadata_in_any_chunking() {
        for step in [1, 2, 3, 7, 64, LIST.len()] {
            let list = decode_in_pieces(LIST.as_bytes(), step).unwrap();
            assert_eq!(list.metadata.resource_version, "42", "step {step}");
            assert_eq!(list.metadata.continue_token(), Some("abc"));
            let keys: Vec<String> = list.items.iter().map(Object::key).collect();
            assert_eq!(keys, ["ns/a", "ns/b"], "step {step}");
            assert_eq!(list.items[0].annotation("items"), Some("[{\"}\\"));
        }
    }

    #[test]
    fn items_before_metadata_empty_and_null_items() {
        let first = r#"{"items":[{"metadata":{"name":"x"}}],"metadata":{"resourceVersion":"7"}}"#;
        let list = decode_in_pieces(first.as_bytes(), 5).unwrap();
        assert_eq!((list.items.len(), list.metadata.resource_version.as_str()), (1, "7"));
        for body in [r#"{"metadata":{"resourceVersion":"3"},"items":[]}"#, r#"{"metadata":{},"items":null}"#] {
            assert!(decode_in_pieces(body.as_bytes(), 4).unwrap().items.is_empty());
        }
    }

    #[test]
    fn truncated_and_invalid_lists_are_errors() {
        let cut = &LIST.as_bytes()[..LIST.len() - 10];
        assert!(matches!(decode_in_pieces(cut, 16), Err(Error::Io { .. })));
        #[derive(Debug, serde::Deserialize)]
        struct Named {
            #[allow(dead_code)]
            name: String,
        }
        let mut decoder = ListDecoder::<Named>::new(std::convert::identity);
        decoder.push(br#"{"metadata":{},"items":[{"name":"a"},{"name":1},{"name":"c"}]}"#).unwrap();
        assert!(matches!(decoder.finish(), Err(Error::Decode { .. })));
        let typed = |body: &str| {
            let mut decoder = ListDecoder::<Named>::new(std::convert::identity);
            decoder.push(body.as_bytes()).and_then(|_| decoder.finish().map(|_| ()))
        };
        assert!(typed(r#"{"metadata":{},"items":[{"name":"a"}]}"#).is_ok());
        let bad_item = r#"{"metadata":{},"items":[5]}"#;
        assert!(typed(bad_item).is_err());
    }
}
