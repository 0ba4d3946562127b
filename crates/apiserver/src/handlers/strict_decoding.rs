//! What every decoder of written objects shares (the built-in kinds' in [`super::schema`],
//! CRDs' and custom resources' in [`super::custom_schema`]): where the object came from (a
//! body or a patch's result, which kube words differently), kube's 422 on `patch`, and the
//! duplicate keys of a JSON body that strict decoding reports.

use std::cell::RefCell;
use std::fmt;

use listwatch_meta::ApiError;
use listwatch_meta::validation::FieldError;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// How a write's body is checked: a create or update (400 on strict errors) or a patch (422
/// on the `patch` field, showing what `shown` renders: see `PatchKind::shown`). A strategic
/// merge patch's result goes through kube's unstructured converter, not the JSON decoder, and
/// is worded as the converter words it.
pub enum Source<'a> {
    Body(&'a [u8]),
    Patch { shown: &'a dyn Fn() -> String, strategic: bool },
}

/// kube's 422 for a patch whose result does not decode: `NewInvalid(GroupKind{}, "", ...)` on
/// the field `patch`, hence the message ` "" is invalid: patch: Invalid value: ...`.
pub fn patch_invalid(shown: &str, detail: &str) -> ApiError {
    listwatch_meta::validation::invalid_error("", "", "", &[FieldError::invalid("patch", shown, detail)])
}

/// Paths of keys that appear twice in one JSON object of `body` (`metadata.name`,
/// `spec.containers[0].image`), in document order.
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = DuplicateCheck { path: String::new(), found: &found }.deserialize(&mut de);
    found.into_inner()
}

struct DuplicateCheck<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for DuplicateCheck<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateCheck<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(DuplicateCheck { path, found: self.found })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(DuplicateCheck { path: format!("{}[{i}]", self.path), found: self.found })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_with_paths() {
        let body = br#"{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"image":"x","image":"y"}]}}"#;
        assert_eq!(duplicate_fields(body), ["metadata.name", "spec.containers[0].image"]);
        assert!(duplicate_fields(br#"{"a":1,"b":{"a":2}}"#).is_empty());
    }
}
