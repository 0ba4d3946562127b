//! YAML responses and request bodies (`application/yaml`), as kube-apiserver makes them: the
//! JSON encoding converted, so keys come out sorted (Go's YAML marshaller sorts map keys), one
//! document without `---`. There is no YAML watch stream (a watch that accepts only YAML is a
//! 406 at negotiation), and PATCH bodies are never YAML except apply patches.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The JSON `json` as YAML; `json` itself if it is not JSON (it always is when it comes from
/// an encoder).
pub fn from_json(json: &[u8]) -> Bytes {
    let Ok(value) = serde_json::from_slice::<Value>(json) else { return Bytes::copy_from_slice(json) };
    match serde_yaml_ng::to_string(&sorted(value)) {
        Ok(text) => Bytes::from(text),
        Err(_) => Bytes::copy_from_slice(json),
    }
}

/// A YAML request body as JSON bytes, or the YAML parser's error text.
pub fn to_json(yaml: &[u8]) -> Result<Vec<u8>, String> {
    let value: Value = serde_yaml_ng::from_slice(yaml).map_err(|e| format!("yaml: {e}"))?;
    serde_json::to_vec(&value).map_err(|e| e.to_string())
}

/// The strict YAML decoder's complaint about a key that appears twice in one mapping of
/// `yaml` (a YAML or JSON document), in Go's words: `yaml: unmarshal errors:\n  line 4: key
/// "a" already set in map`. Only the first duplicate is reported (Go lists every one); `None`
/// when there is none or the document does not parse (its parse error is reported elsewhere).
pub fn duplicate_key_error(yaml: &[u8]) -> Option<String> {
    let found = RefCell::new(None);
    let deserializer = serde_yaml_ng::Deserializer::from_slice(yaml);
    let error = Walk { found: &found }.deserialize(deserializer).err()?;
    let key = found.into_inner()?;
    let line = error.location().map_or(0, |l| l.line());
    Some(format!("yaml: unmarshal errors:\n  line {line}: key {key} already set in map"))
}

/// Visits a whole document, failing at the first key already seen in its mapping (the error,
/// raised while reading the key, carries the key's position).
struct Walk<'a> {
    found: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while map.next_key_seed(Key { seen: &mut seen, found: self.found })?.is_some() {
            map.next_value_seed(Walk { found: self.found })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Walk { found: self.found })?.is_some() {}
        Ok(())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag x`): its content.
        let (_, variant) = data.variant::<de::IgnoredAny>()?;
        de::VariantAccess::newtype_variant_seed(variant, Walk { found: self.found })
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// One mapping key: an error if its mapping had it already.
struct Key<'a> {
    seen: &'a mut HashSet<String>,
    found: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        // Go's `%#v` of the key: a string quoted.
        self.check(serde_json::to_string(key).unwrap_or_default())
    }
    fn visit_i64<E: de::Error>(self, key: i64) -> Result<(), E> {
        self.check(key.to_string())
    }
    fn visit_u64<E: de::Error>(self, key: u64) -> Result<(), E> {
        self.check(key.to_string())
    }
    fn visit_f64<E: de::Error>(self, key: f64) -> Result<(), E> {
        self.check(key.to_string())
    }
    fn visit_bool<E: de::Error>(self, key: bool) -> Result<(), E> {
        self.check(key.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.check("<nil>".to_owned())
    }
    // A key that is itself a mapping or sequence is read through and never a duplicate here.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        Walk { found: self.found }.visit_map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Walk { found: self.found }.visit_seq(seq)
    }
}

impl Key<'_> {
    fn check<E: de::Error>(self, key: String) -> Result<(), E> {
        if self.seen.insert(key.clone()) {
            return Ok(());
        }
        *self.found.borrow_mut() = Some(key);
        Err(E::custom("duplicate key"))
    }
}

/// `value` with every object's keys in sorted order (serde_json here keeps insertion order).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_yaml_with_sorted_keys() {
        let yaml =
            from_json(br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"b":"1","a":"2"}}"#);
        assert_eq!(
            std::str::from_utf8(&yaml).unwrap(),
            "apiVersion: v1\ndata:\n  a: '2'\n  b: '1'\nkind: ConfigMap\nmetadata:\n  name: a\n"
        );
    }

    #[test]
    fn request_bodies_become_json() {
        let json = to_json(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: \"1\"\n").unwrap();
        let value: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["metadata"]["name"], "a");
        assert_eq!(value["data"]["n"], "1");
        assert!(to_json(b"a: [").unwrap_err().starts_with("yaml: "));
    }

    #[test]
    fn duplicate_keys_are_reported_on_their_line() {
        let yaml = b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: x\n  a: y\n";
        assert_eq!(
            duplicate_key_error(yaml).as_deref(),
            Some("yaml: unmarshal errors:\n  line 5: key \"a\" already set in map")
        );
        let json = b"{\"kind\":\"ConfigMap\",\n\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}";
        assert_eq!(
            duplicate_key_error(json).as_deref(),
            Some("yaml: unmarshal errors:\n  line 2: key \"name\" already set in map")
        );
        assert_eq!(duplicate_key_error(b"a: 1\nb: {a: 1}\nc: [{a: 1}, {a: 2}]\n"), None);
        assert_eq!(duplicate_key_error(b"a: ["), None);
        // Non-strict reading keeps the last value.
        let value: Value = serde_json::from_slice(&to_json(b"a: 1\na: 2\n").unwrap()).unwrap();
        assert_eq!(value["a"], 2);
    }
}
