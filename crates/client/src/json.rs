//! Decoding objects from JSON text with exact `Vec` capacities.
//!
//! serde_json gives no size hint for arrays, so serde's `Vec` starts empty and grows to 4
//! elements on the first push: a pod's one container, one port and one owner reference each
//! hold room for three more (about 0.9 KB per pod of the bench's pods, a fifth of what a cache
//! holds per object, and kept for as long as the object sits in the cache). [`from_str`] decodes
//! through a thin layer over serde_json's deserializer that tells each array its length, so a
//! `Vec` is allocated once at its final size.
//!
//! How the layer knows the length without parsing twice: decoding from a `&str`, serde_json
//! hands map keys without escapes to the visitor as slices of the input
//! (`visit_borrowed_str`), so the layer learns where each key ends in the text; the value after
//! that key starts after the `:`. When that value is decoded as a sequence (directly, or
//! through `Option` or a newtype), the layer counts the array's elements from that position
//! (strings skipped with `memchr`, only commas at the array's own depth counted) and returns
//! the count as the sequence's `size_hint`. Arrays it cannot place (an element of an array, a
//! value after an escaped key) get no hint, as before. A hint is only a capacity: it never
//! changes what is decoded, and serde caps it (`size_hint::cautious`) like any other hint.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// `serde_json::from_str`, with exact capacities for the `Vec`s of the decoded value.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let doc = Doc::new(text);
    let value = T::deserialize(Hinted::new(&mut deserializer, &doc))?;
    deserializer.end()?;
    Ok(value)
}

/// Decodes with `seed` through the layer; `deserializer` must read `text` (from its start).
pub(crate) fn deserialize_seed<'de, S, D>(seed: S, deserializer: D, text: &str) -> Result<S::Value, D::Error>
where
    S: DeserializeSeed<'de>,
    D: Deserializer<'de>,
{
    seed.deserialize(Hinted::new(deserializer, &Doc::new(text)))
}

/// The text being decoded, and how many more of its bytes counting may scan: an array after a
/// key inside an array after a key is counted at every level, and 128 levels (serde_json's
/// depth limit) would make a hostile document cost 128 passes. The budget, twice the text,
/// is far more than real objects use (a pod's arrays are counted in under half of it).
struct Doc<'t> {
    text: &'t str,
    scan_budget: Cell<usize>,
}

impl<'t> Doc<'t> {
    fn new(text: &'t str) -> Doc<'t> {
        Doc { text, scan_budget: Cell::new(text.len().saturating_mul(2)) }
    }
}

/// Where in `text` the value being decoded starts, when known (an offset just past its key).
#[derive(Clone, Copy)]
struct Place<'t> {
    doc: &'t Doc<'t>,
    /// The offset just after the key of the value being decoded (its closing quote is there).
    after_key: Option<usize>,
}

impl<'t> Place<'t> {
    fn unknown(doc: &'t Doc<'t>) -> Place<'t> {
        Place { doc, after_key: None }
    }

    /// The number of elements of the array that is this value, if it is one and can be found.
    fn array_len(self) -> Option<usize> {
        let budget = self.doc.scan_budget.get();
        if budget == 0 {
            return None;
        }
        let bytes = self.doc.text.as_bytes();
        let mut at = self.after_key?;
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        at = skip_whitespace(bytes, at + 1);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_whitespace(bytes, at + 1);
        if bytes.get(at) != Some(&b'[') {
            return None;
        }
        let (count, end) = count_elements(bytes, at + 1)?;
        self.doc.scan_budget.set(budget.saturating_sub(end - at));
        Some(count)
    }

    /// The offset where `key` ends, if `key` is a slice of the text.
    fn end_of(&self, key: &str) -> Option<usize> {
        let text = self.doc.text;
        let start = (key.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        let end = start.checked_add(key.len())?;
        (end <= text.len()).then_some(end)
    }
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        at += 1;
    }
    at
}

/// Counts the elements of the array whose `[` is just before `at`: one more than the commas at
/// its own depth, or 0 for `[]`; with the offset of its `]`. `None` if the text ends first
/// (serde_json will reject it).
fn count_elements(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut at = skip_whitespace(bytes, at);
    if *bytes.get(at)? == b']' {
        return Some((0, at));
    }
    let (mut depth, mut commas) = (0usize, 0usize);
    loop {
        match *bytes.get(at)? {
            b'"' => {
                // To the closing quote: the next `"` not escaped. Byte by byte: the strings of
                // an object's arrays are short (names, images, ports), and a `memchr` call costs
                // more than it saves below a few dozen bytes.
                at += 1;
                loop {
                    match *bytes.get(at)? {
                        b'"' => break,
                        b'\\' => at += 2,
                        _ => at += 1,
                    }
                }
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return Some((commas + 1, at)),
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => commas += 1,
            _ => {}
        }
        at += 1;
    }
}

/// The layer: forwards every call to serde_json's deserializer, with visitors that learn
/// where keys end and tell arrays their length.
struct Hinted<'t, D> {
    inner: D,
    place: Place<'t>,
}

impl<'t, D> Hinted<'t, D> {
    fn new(inner: D, doc: &'t Doc<'t>) -> Hinted<'t, D> {
        Hinted { inner, place: Place::unknown(doc) }
    }
}

/// serde_json's own private protocols (`RawValue`, arbitrary-precision numbers) talk to their
/// visitors through special names; those pass through untouched.
fn is_serde_json_private(name: &str) -> bool {
    name.starts_with("$serde_json::private::")
}

/// The `Deserializer` methods both wrappers forward alike, handed to `$forward!`.
macro_rules! deserialize_methods {
    ($forward:ident) => {
        $forward! {
            deserialize_any();
            deserialize_bool();
            deserialize_i8();
            deserialize_i16();
            deserialize_i32();
            deserialize_i64();
            deserialize_i128();
            deserialize_u8();
            deserialize_u16();
            deserialize_u32();
            deserialize_u64();
            deserialize_u128();
            deserialize_f32();
            deserialize_f64();
            deserialize_char();
            deserialize_str();
            deserialize_string();
            deserialize_bytes();
            deserialize_byte_buf();
            deserialize_option();
            deserialize_unit();
            deserialize_unit_struct(name: &'static str);
            deserialize_seq();
            deserialize_tuple(len: usize);
            deserialize_tuple_struct(name: &'static str, len: usize);
            deserialize_map();
            deserialize_struct(name: &'static str, fields: &'static [&'static str]);
            deserialize_enum(name: &'static str, variants: &'static [&'static str]);
            deserialize_identifier();
        }
    };
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* HintedVisitor { inner: visitor, place: self.place })
        }
    )*};
}

impl<'de, 't, D: Deserializer<'de>> Deserializer<'de> for Hinted<'t, D> {
    type Error = D::Error;

    deserialize_methods!(forward);

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        if is_serde_json_private(name) {
            return self.inner.deserialize_newtype_struct(name, visitor);
        }
        self.inner.deserialize_newtype_struct(name, HintedVisitor { inner: visitor, place: self.place })
    }

    /// Skipped values need no hints.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// Wraps the visitor of a value: sequences get their length, maps and nested values keep
/// learning where keys end.
struct HintedVisitor<'t, V> {
    inner: V,
    place: Place<'t>,
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

/// The `Visitor` methods that carry a plain value, forwarded to `self.inner` (both visitors
/// forward them alike).
macro_rules! visit_methods {
    () => {
        forward_visit! {
            visit_bool(bool);
            visit_i8(i8);
            visit_i16(i16);
            visit_i32(i32);
            visit_i64(i64);
            visit_i128(i128);
            visit_u8(u8);
            visit_u16(u16);
            visit_u32(u32);
            visit_u64(u64);
            visit_u128(u128);
            visit_f32(f32);
            visit_f64(f64);
            visit_char(char);
            visit_str(&str);
            visit_string(String);
            visit_bytes(&[u8]);
            visit_borrowed_bytes(&'de [u8]);
            visit_byte_buf(Vec<u8>);
        }
    };
}

impl<'de, 't, V: Visitor<'de>> Visitor<'de> for HintedVisitor<'t, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit_methods!();
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.inner.visit_borrowed_str(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Hinted { inner: deserializer, place: self.place })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Hinted { inner: deserializer, place: self.place })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let len = self.place.array_len();
        self.inner.visit_seq(HintedSeq { inner: seq, doc: self.place.doc, len })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(HintedMap { inner: map, place: Place::unknown(self.place.doc) })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(HintedEnum { inner: data, doc: self.place.doc })
    }
}

struct HintedSeq<'t, A> {
    inner: A,
    doc: &'t Doc<'t>,
    len: Option<usize>,
}

impl<'de, 't, A: SeqAccess<'de>> SeqAccess<'de> for HintedSeq<'t, A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, A::Error> {
        self.inner.next_element_seed(HintedSeed { inner: seed, place: Place::unknown(self.doc) })
    }

    fn size_hint(&self) -> Option<usize> {
        self.len.or_else(|| self.inner.size_hint())
    }
}

/// A map's entries: each key's end is noted, and the value after it is decoded knowing it.
struct HintedMap<'t, A> {
    inner: A,
    /// `after_key`: where the last key read ends.
    place: Place<'t>,
}

impl<'de, 't, A: MapAccess<'de>> MapAccess<'de> for HintedMap<'t, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.place.after_key = None;
        self.inner.next_key_seed(KeySeed { inner: seed, place: &mut self.place })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let place = self.place;
        self.place.after_key = None;
        self.inner.next_value_seed(HintedSeed { inner: seed, place })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct HintedSeed<'t, S> {
    inner: S,
    place: Place<'t>,
}

impl<'de, 't, S: DeserializeSeed<'de>> DeserializeSeed<'de> for HintedSeed<'t, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Hinted { inner: deserializer, place: self.place })
    }
}

/// Decodes a key, noting where it ends when serde_json hands it as a slice of the text.
struct KeySeed<'p, 't, S> {
    inner: S,
    place: &'p mut Place<'t>,
}

impl<'de, 'p, 't, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'p, 't, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(KeyDeserializer { inner: deserializer, place: self.place })
    }
}

struct KeyDeserializer<'p, 't, D> {
    inner: D,
    place: &'p mut Place<'t>,
}

macro_rules! forward_key {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* KeyVisitor { inner: visitor, place: self.place })
        }
    )*};
}

impl<'de, 'p, 't, D: Deserializer<'de>> Deserializer<'de> for KeyDeserializer<'p, 't, D> {
    type Error = D::Error;

    deserialize_methods!(forward_key);
    forward_key! {
        deserialize_newtype_struct(name: &'static str);
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A key's visitor: a borrowed string is a slice of the text, and where it ends is noted.
struct KeyVisitor<'p, 't, V> {
    inner: V,
    place: &'p mut Place<'t>,
}

impl<'de, 'p, 't, V: Visitor<'de>> Visitor<'de> for KeyVisitor<'p, 't, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.place.after_key = self.place.end_of(v);
        self.inner.visit_borrowed_str(v)
    }

    visit_methods!();

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }
}

/// Enums: the variant's content goes on through the layer (its own keys place its arrays).
struct HintedEnum<'t, A> {
    inner: A,
    doc: &'t Doc<'t>,
}

impl<'de, 't, A: EnumAccess<'de>> EnumAccess<'de> for HintedEnum<'t, A> {
    type Error = A::Error;
    type Variant = HintedVariant<'t, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(seed)?;
        Ok((value, HintedVariant { inner: variant, doc: self.doc }))
    }
}

struct HintedVariant<'t, A> {
    inner: A,
    doc: &'t Doc<'t>,
}

impl<'de, 't, A: VariantAccess<'de>> VariantAccess<'de> for HintedVariant<'t, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(HintedSeed { inner: seed, place: Place::unknown(self.doc) })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner.tuple_variant(len, HintedVisitor { inner: visitor, place: Place::unknown(self.doc) })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.struct_variant(fields, HintedVisitor { inner: visitor, place: Place::unknown(self.doc) })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::Value;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Pod {
        #[serde(default)]
        metadata: Meta,
        #[serde(default)]
        spec: Spec,
        #[serde(default)]
        extra: Option<Value>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: String,
        #[serde(default)]
        finalizers: Option<Vec<String>>,
        #[serde(default)]
        labels: BTreeMap<String, String>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        #[serde(default)]
        containers: Vec<Container>,
        #[serde(default)]
        matrix: Vec<Vec<u32>>,
        #[serde(default)]
        shape: Option<Shape>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Container {
        name: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        ports: Vec<Port>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Port(u16, String);

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Shape {
        Square(Vec<u8>),
        Polygon { sides: Vec<u8> },
    }

    const POD: &str = r#"{"metadata":{"name":"p","finalizers":["a","b\"]"],"labels":{"x":"["}},
        "spec":{"containers":[{"name":"c1","args":["-v", "[1,2]", "{\"a\":[1,2]}"],"ports":[[80,"tcp"]]},
                              {"name":"c2","args":[],"ports":[]},{"name":"c3"}],
                "matrix" : [ [1,2,3] , [ ] , [4] ],
                "shape":{"polygon":{"sides":[3,4,5,6]}}},
        "extra":{"list":[1,[2,3],{"k":[4]}],"s\u0074r":["x"]}}"#;

    #[test]
    fn decodes_as_serde_json_does() {
        let hinted: Pod = from_str(POD).unwrap();
        let plain: Pod = serde_json::from_str(POD).unwrap();
        assert_eq!(hinted, plain);
        let hinted: Value = from_str(POD).unwrap();
        assert_eq!(hinted, serde_json::from_str::<Value>(POD).unwrap());
        for bad in [
            r#"{"metadata":{"name":1}}"#,
            r#"{"spec":{"containers":[{"name":"a"},]}}"#,
            "{} x",
            r#"{"spec":{"containers":[{"#,
        ] {
            assert_eq!(
                from_str::<Pod>(bad).unwrap_err().to_string(),
                serde_json::from_str::<Pod>(bad).unwrap_err().to_string(),
                "{bad}"
            );
        }
    }

    #[test]
    fn vecs_after_keys_are_allocated_at_their_length() {
        let pod: Pod = from_str(POD).unwrap();
        let finalizers = pod.metadata.finalizers.as_ref().unwrap();
        assert_eq!((finalizers.len(), finalizers.capacity()), (2, 2));
        let containers = &pod.spec.containers;
        assert_eq!((containers.len(), containers.capacity()), (3, 3));
        assert_eq!((containers[0].args.len(), containers[0].args.capacity()), (3, 3));
        assert_eq!((containers[0].ports.len(), containers[0].ports.capacity()), (1, 1));
        assert_eq!(containers[1].args.capacity(), 0);
        assert_eq!((pod.spec.matrix.len(), pod.spec.matrix.capacity()), (3, 3));
        let Some(Shape::Polygon { sides }) = &pod.spec.shape else { panic!("{:?}", pod.spec.shape) };
        assert_eq!((sides.len(), sides.capacity()), (4, 4));
        // Serde's own growth, for comparison: room for 4.
        let plain: Pod = serde_json::from_str(POD).unwrap();
        assert_eq!(plain.spec.containers[0].ports.capacity(), 4);
    }

    #[test]
    fn counting_stops_when_nested_arrays_would_rescan_the_document() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Node {
            a: Vec<Node>,
        }
        // {"a":[{"a":[ ... {"a":[]} ... ]}]}: every array after a key spans the rest of the text.
        let depth = 60; // 120 levels of nesting: under serde_json's limit of 128
        let text = format!("{}{{\"a\":[]}}{}", r#"{"a":["#.repeat(depth), "]}".repeat(depth));
        let hinted: Node = from_str(&text).unwrap();
        assert_eq!(hinted, serde_json::from_str::<Node>(&text).unwrap());
        let mut capacities = Vec::new();
        let mut node = &hinted;
        while let Some(child) = node.a.first() {
            capacities.push(node.a.capacity());
            node = child;
        }
        assert_eq!(capacities.len(), depth);
        // The outer arrays are counted; once twice the text has been scanned, serde's growth.
        assert_eq!(capacities[0], 1);
        assert_eq!(capacities[depth - 1], 4);
    }

    #[test]
    fn element_counting() {
        let count = |s: &str| count_elements(s.as_bytes(), 1).map(|(n, _)| n);
        assert_eq!(count("[]"), Some(0));
        assert_eq!(count("[ \n ]"), Some(0));
        assert_eq!(count(r#"["a,b", {"c":[1,2]}, [3,4], "\\", "\"]"]"#), Some(5));
        assert_eq!(count("[1,2"), None);
        assert_eq!(count(r#"["abc"#), None);
        assert_eq!(count(r#"["ab\"#), None);
    }
}
