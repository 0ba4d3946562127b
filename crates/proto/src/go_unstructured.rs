//! What kube-apiserver says when a strategic merge patch's result does not fit the kind's Go
//! types.
//!
//! kube applies a strategic merge patch to the object as a map and turns the result into the
//! Go struct with `runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation`, not
//! with the JSON decoder, so the words differ from [`crate::go_decode`]'s: it walks the struct
//! fields in declaration order and stops at the first value it cannot set (`cannot restore
//! map from string`, `cannot restore struct from: slice`, `cannot convert int64 to string`,
//! `unrecognized type: int32`). Numbers in the map are Go's `int64` when integral, else
//! `float64`; Go converts freely between them and integer fields (no range check). Types with
//! their own `UnmarshalJSON` get the JSON of the value, as with the decoder.

use listwatch_gocompat::base64;
use serde_json::{Map, Value};

use crate::go_decode::{scalar_go_type, special_error};
use crate::go_types::NAMED_GO_TYPES;
use crate::schema::{Cardinality, GoJson, Scalar, Schema, Special, ValueType};

/// `reflect.Kind` of a value in the unstructured map.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

/// `reflect.Kind` of a Go scalar field.
fn scalar_kind(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::String => "string",
        Scalar::Bytes => "slice",
        Scalar::Bool => "bool",
        Scalar::Int32 | Scalar::SInt32 | Scalar::SFixed32 | Scalar::Enum => "int32",
        Scalar::Int64 | Scalar::SInt64 | Scalar::SFixed64 => "int64",
        Scalar::UInt32 | Scalar::Fixed32 => "uint32",
        Scalar::UInt64 | Scalar::Fixed64 => "uint64",
        Scalar::Float => "float32",
        Scalar::Double => "float64",
    }
}

/// The Go type a field's element has when the schema does not show it (see `go_types`).
fn named_element(schema: &Schema, message: usize, field: &str) -> Option<&'static str> {
    let name = schema.messages[message].descriptor.full_name();
    NAMED_GO_TYPES.binary_search_by(|(m, f, _, _)| (*m, *f).cmp(&(name, field))).ok().map(|i| NAMED_GO_TYPES[i].3)
}

/// `fromUnstructured` into a scalar of Go type `go_type` (its `String()`).
fn scalar(scalar: Scalar, go_type: &str, value: &Value) -> Result<(), String> {
    let target = scalar_kind(scalar);
    let integer = matches!(target, "int32" | "int64" | "uint32" | "uint64");
    let float = matches!(target, "float32" | "float64");
    let unrecognized = || Err(format!("unrecognized type: {target}"));
    match (scalar, value) {
        (Scalar::Bytes, Value::String(text)) => base64::std_error(text).map_or(Ok(()), Err),
        (Scalar::Bytes, Value::Array(items)) => {
            items.iter().try_for_each(|item| self::scalar(Scalar::UInt32, "uint8", item))
        }
        (Scalar::Bytes, other) => Err(format!("cannot restore slice from {}", kind(other))),
        (_, Value::String(_)) if target == "string" => Ok(()),
        (_, Value::Bool(_)) if target == "bool" => Ok(()),
        (_, Value::Number(n)) if n.as_i64().is_some() => {
            if integer || float {
                Ok(())
            } else if target == "string" {
                // Go converts an integer to a string (a rune), which the converter refuses.
                Err(format!("cannot convert int64 to {go_type}"))
            } else {
                unrecognized()
            }
        }
        (_, Value::Number(n)) => {
            let whole = n.as_f64().is_some_and(|f| f == f.trunc());
            if float || (integer && whole) {
                Ok(())
            } else if integer {
                Err(format!("cannot convert float64 to {go_type}"))
            } else {
                unrecognized()
            }
        }
        _ => unrecognized(),
    }
}

/// One value of `value_type`; `named` its Go type where the schema does not show it.
fn element(schema: &Schema, value_type: ValueType, named: Option<&str>, value: &Value) -> Result<(), String> {
    if value.is_null() {
        return Ok(());
    }
    match value_type {
        ValueType::Scalar(s) => scalar(s, named.unwrap_or(scalar_go_type(s)), value),
        ValueType::Message(message) => match (schema.messages[message].special, value) {
            // ExtraValue is a plain `[]string` to Go.
            (Some(Special::StringList), Value::Array(items)) => {
                items.iter().try_for_each(|item| element(schema, ValueType::Scalar(Scalar::String), None, item))
            }
            (Some(Special::StringList), other) => Err(format!("cannot restore slice from {}", kind(other))),
            (Some(special), value) => special_error(special, value).map_or(Ok(()), Err),
            (None, Value::Object(object)) => fields(schema, message, object),
            (None, other) => Err(format!("cannot restore struct from: {}", kind(other))),
        },
    }
}

/// `structFromUnstructured`: the struct's fields in declaration order, embedded structs read
/// from the same map.
fn fields(schema: &Schema, message: usize, object: &Map<String, Value>) -> Result<(), String> {
    for field in &schema.messages[message].fields {
        if field.go == GoJson::Inline {
            if let ValueType::Message(inner) = field.value {
                fields(schema, inner, object)?;
            }
            continue;
        }
        let Some(value) = object.get(&field.name).filter(|v| !v.is_null()) else { continue };
        let named = named_element(schema, message, &field.name);
        match (field.cardinality, value) {
            (Cardinality::Single, value) => element(schema, field.value, named, value)?,
            (Cardinality::Repeated, Value::Array(items)) => {
                items.iter().try_for_each(|item| element(schema, field.value, named, item))?;
            }
            (Cardinality::Repeated, other) => return Err(format!("cannot restore slice from {}", kind(other))),
            (Cardinality::Map { .. }, Value::Object(entries)) => {
                entries.values().try_for_each(|entry| element(schema, field.value, named, entry))?;
            }
            (Cardinality::Map { .. }, other) => return Err(format!("cannot restore map from {}", kind(other))),
        }
    }
    Ok(())
}

/// The converter's error for `object` turned into message `message`'s Go struct, if any. The
/// embedded TypeMeta (`apiVersion`, `kind`: strings) comes first.
pub(crate) fn unstructured_error(schema: &Schema, message: usize, object: &Map<String, Value>) -> Option<String> {
    let type_meta = ["apiVersion", "kind"].iter().find_map(|key| {
        let value = object.get(*key).filter(|v| !v.is_null())?;
        scalar(Scalar::String, "string", value).err()
    });
    type_meta.or_else(|| fields(schema, message, object).err())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::go_unstructured_error;

    fn error(group: &str, kind: &str, object: serde_json::Value) -> Option<String> {
        go_unstructured_error(group, "v1", kind, &object).unwrap()
    }

    #[test]
    fn converter_words() {
        let cases = [
            ("", "ConfigMap", json!({"data": "flat"}), "cannot restore map from string"),
            ("", "ConfigMap", json!({"data": {"k": 5}}), "cannot convert int64 to string"),
            ("", "ConfigMap", json!({"data": {"k": 1.5}}), "unrecognized type: string"),
            ("", "ConfigMap", json!({"metadata": []}), "cannot restore struct from: slice"),
            ("", "ConfigMap", json!({"kind": 1}), "cannot convert int64 to string"),
            ("apps", "Deployment", json!({"spec": {"replicas": "3"}}), "unrecognized type: int32"),
            ("apps", "Deployment", json!({"spec": {"replicas": 1.5}}), "cannot convert float64 to int32"),
            ("", "Pod", json!({"spec": {"containers": {}}}), "cannot restore slice from map"),
            ("", "Pod", json!({"spec": {"restartPolicy": 1}}), "cannot convert int64 to v1.RestartPolicy"),
            ("", "Secret", json!({"data": {"k": "!!"}}), "illegal base64 data at input byte 0"),
            (
                "authorization.k8s.io",
                "SubjectAccessReview",
                json!({"spec": {"extra": {"k": "a"}}}),
                "cannot restore slice from string",
            ),
            (
                "authorization.k8s.io",
                "SubjectAccessReview",
                json!({"spec": {"extra": {"k": [1]}}}),
                "cannot convert int64 to string",
            ),
        ];
        for (group, kind, object, message) in cases {
            assert_eq!(error(group, kind, object.clone()).as_deref(), Some(message), "{object}");
        }
        // The converter does not check ranges or types the JSON decoder would refuse.
        assert_eq!(error("apps", "Deployment", json!({"spec": {"replicas": 3_000_000_000_i64}})), None);
        assert_eq!(error("apps", "Deployment", json!({"spec": {"replicas": 2.0}})), None);
        assert_eq!(
            error("authorization.k8s.io", "SubjectAccessReview", json!({"spec": {"extra": {"k": ["a", null]}}})),
            None
        );
    }
}
