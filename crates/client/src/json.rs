//! Decoding objects from JSON text without spare room in one-element `Vec`s.
//!
//! serde_json gives no size hint for arrays, so serde's `Vec` starts empty and grows to 4
//! elements on the first push. Kubernetes objects are full of one-element arrays (a pod's one
//! container, its one port, the one owner reference, the one finalizer), and each then holds
//! room for three more: about 0.9 KB per pod of the bench's pods, a fifth of what a cache holds
//! per object, kept for as long as the object sits in the cache. [`from_str`] decodes through a
//! thin layer over serde_json's deserializer that gives each array a size hint of 1 (0 for
//! `[]`): a one-element `Vec` is allocated at exactly one, an empty one not at all, and a longer
//! one grows as serde grows it (1, then 4, 8, ...: the same capacities as without the hint, for
//! one more reallocation).
//!
//! Why not count the elements for an exact hint: counting means scanning the array's bytes
//! before serde_json parses them, and for a pod's containers that cost 0.2 µs per pod, about
//! 5 % of a reflector's whole per-event cost (`cargo bench -p listwatch-client --bench decode`),
//! for memory that only arrays of 2 or 3 elements would save.
//!
//! How the layer finds the array without parsing twice: decoding from a `&str`, serde_json
//! hands map keys without escapes to the visitor as slices of the input
//! (`visit_borrowed_str`), so the layer learns where each key ends in the text; the value after
//! that key starts after the `:`. When that value is decoded as a sequence (directly, or
//! through `Option` or a newtype), the layer looks at the first byte after the `[`. Arrays it
//! cannot place (an element of an array, a value after an escaped key) get no hint, as before.
//! A hint is only a capacity: it never changes what is decoded.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// `serde_json::from_str`, with exact capacities for the `Vec`s of the decoded value.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Hinted::new(&mut deserializer, text))?;
    deserializer.end()?;
    Ok(value)
}

/// Decodes with `seed` through the layer; `deserializer` must read `text` (from its start).
pub(crate) fn deserialize_seed<'de, S, D>(seed: S, deserializer: D, text: &str) -> Result<S::Value, D::Error>
where
    S: DeserializeSeed<'de>,
    D: Deserializer<'de>,
{
    seed.deserialize(Hinted::new(deserializer, text))
}

/// Where in `text` the value being decoded starts, when known (an offset just past its key).
#[derive(Clone, Copy)]
struct Place<'t> {
    text: &'t str,
    /// The offset just after the key of the value being decoded (its closing quote is there).
    after_key: Option<usize>,
}

impl<'t> Place<'t> {
    fn unknown(text: &'t str) -> Place<'t> {
        Place { text, after_key: None }
    }

    /// The capacity to start this value's `Vec` with, if it is an array that can be found:
    /// 0 for `[]`, 1 for any other.
    fn first_capacity(self) -> Option<usize> {
        let bytes = self.text.as_bytes();
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
        Some(usize::from(bytes.get(skip_whitespace(bytes, at + 1)) != Some(&b']')))
    }

    /// The offset where `key` ends, if `key` is a slice of the text.
    fn end_of(&self, key: &str) -> Option<usize> {
        let text = self.text;
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

/// The layer: forwards every call to serde_json's deserializer, with visitors that learn
/// where keys end and tell arrays their length.
struct Hinted<'t, D> {
    inner: D,
    place: Place<'t>,
}

impl<'t, D> Hinted<'t, D> {
    fn new(inner: D, text: &'t str) -> Hinted<'t, D> {
        Hinted { inner, place: Place::unknown(text) }
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
        let len = self.place.first_capacity();
        self.inner.visit_seq(HintedSeq { inner: seq, text: self.place.text, len })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(HintedMap { inner: map, place: Place::unknown(self.place.text) })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(HintedEnum { inner: data, text: self.place.text })
    }
}

struct HintedSeq<'t, A> {
    inner: A,
    text: &'t str,
    len: Option<usize>,
}

impl<'de, 't, A: SeqAccess<'de>> SeqAccess<'de> for HintedSeq<'t, A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, A::Error> {
        self.inner.next_element_seed(HintedSeed { inner: seed, place: Place::unknown(self.text) })
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
    text: &'t str,
}

impl<'de, 't, A: EnumAccess<'de>> EnumAccess<'de> for HintedEnum<'t, A> {
    type Error = A::Error;
    type Variant = HintedVariant<'t, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(seed)?;
        Ok((value, HintedVariant { inner: variant, text: self.text }))
    }
}

struct HintedVariant<'t, A> {
    inner: A,
    text: &'t str,
}

impl<'de, 't, A: VariantAccess<'de>> VariantAccess<'de> for HintedVariant<'t, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(HintedSeed { inner: seed, place: Place::unknown(self.text) })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner.tuple_variant(len, HintedVisitor { inner: visitor, place: Place::unknown(self.text) })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.struct_variant(fields, HintedVisitor { inner: visitor, place: Place::unknown(self.text) })
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

    const POD: &str = r#"{"metadata":{"name":"p","finalizers":["b\"]"],"labels":{"x":"["}},
        "spec":{"containers":[{"name":"c1","args":["-v", "[1,2]", "{\"a\":[1,2]}"],"ports":[[80,"tcp"]]},
                              {"name":"c2","args":[],"ports":[ ]},{"name":"c3"}],
                "matrix" : [ [1,2,3] , [ ] , [4] ],
                "shape":{"polygon":{"sides": [ 3 ]}}},
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
    fn one_element_and_empty_arrays_after_keys_get_vecs_without_spare_room() {
        let pod: Pod = from_str(POD).unwrap();
        let plain: Pod = serde_json::from_str(POD).unwrap();
        let capacity = |v: &Vec<Port>| (v.len(), v.capacity());
        // One element: exactly one (serde alone: room for 4), in a struct, in an Option, in an
        // enum's struct variant, after whitespace.
        assert_eq!(capacity(&pod.spec.containers[0].ports), (1, 1));
        assert_eq!(capacity(&plain.spec.containers[0].ports), (1, 4));
        let finalizers = pod.metadata.finalizers.as_ref().unwrap();
        assert_eq!((finalizers.len(), finalizers.capacity()), (1, 1));
        let Some(Shape::Polygon { sides }) = &pod.spec.shape else { panic!("{:?}", pod.spec.shape) };
        assert_eq!((sides.len(), sides.capacity()), (1, 1));
        // Empty: no allocation.
        assert_eq!((pod.spec.containers[1].args.capacity(), pod.spec.containers[1].ports.capacity()), (0, 0));
        // Longer: the capacities serde reaches on its own.
        let containers = &pod.spec.containers;
        assert_eq!((containers.len(), containers.capacity()), (3, plain.spec.containers.capacity()));
        assert_eq!(containers[0].args.capacity(), plain.spec.containers[0].args.capacity());
        // Elements of an array have no key to place them: as serde does.
        assert_eq!(pod.spec.matrix[2].capacity(), plain.spec.matrix[2].capacity());
    }
}
