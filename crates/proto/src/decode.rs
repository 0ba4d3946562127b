//! Protobuf message bytes → the JSON kube-apiserver would serve for them.
//!
//! The bytes are parsed by prost-reflect into a `DynamicMessage` (which keeps proto2 presence
//! and the fields the schema does not define), then walked in declaration order, which is the
//! Go struct order and so the JSON key order. Whether a field appears in the JSON follows the
//! Go declaration recorded by `(listwatch.go_json)`:
//!
//! * scalar, `omitempty` value (default): present only when not the zero value. Go clients
//!   write every value field, so `generateName: ""` arrives on the wire and must not appear;
//! * scalar pointer (`POINTER`): present whenever it is on the wire, zero included;
//! * scalar without `omitempty` (`ALWAYS`): always present, the zero value when absent;
//! * message: present whenever it is on the wire (Go writes value structs always and pointer
//!   structs when set, and encoding/json never omits a struct), `Time`/`MicroTime` that are
//!   on the wire but empty (Go's zero time) as `null`;
//! * repeated and map: present when not empty (lists' `items`, marked `ALWAYS`, always, as
//!   `[]` when empty);
//! * nil-able field without `omitempty` (`ALWAYS_OR_NULL`: a slice, map or pointer): always
//!   present, `null` when not on the wire (Go leaves it nil), else as above (a scalar pointer's
//!   zero value included);
//! * `INLINE`: the embedded message's fields merged into this object.
//!
//! Fields on the wire that the message does not define are collected as paths
//! (`spec.template.#17`, the number standing for the unknown field's name).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use listwatch_gocompat::time::{format_rfc3339, format_rfc3339_micro};
use prost_reflect::{DynamicMessage, MapKey, Value as ProtoValue};
use serde_json::{Map, Number, Value};

use crate::ProtoError;
use crate::path::Path;
use crate::schema::{Cardinality, GoJson, Scalar, Schema, Special, ValueType};

/// Writes the JSON fields of `message` into `out`, and unknown-field paths into `unknown`.
pub(crate) fn decode_fields(
    schema: &Schema,
    message: usize,
    dynamic: &DynamicMessage,
    path: &Path<'_>,
    unknown: &mut Vec<String>,
    out: &mut Map<String, Value>,
) -> Result<(), ProtoError> {
    let plan = &schema.messages[message];
    for field in &plan.fields {
        let present = dynamic.has_field(&field.descriptor);
        if field.go == GoJson::Inline {
            if let (true, ValueType::Message(inner)) = (present, field.value) {
                if let ProtoValue::Message(embedded) = &*dynamic.get_field(&field.descriptor) {
                    decode_fields(schema, inner, embedded, path, unknown, out)?;
                }
            }
            continue;
        }
        let path = path.field(&field.name);
        let json = match field.cardinality {
            Cardinality::Single => match field.value {
                ValueType::Scalar(scalar) if present => {
                    let json = scalar_json(scalar, &dynamic.get_field(&field.descriptor), &path)?;
                    match field.go {
                        GoJson::Pointer | GoJson::Always | GoJson::AlwaysOrNull => Some(json),
                        _ => (!is_zero(&json)).then_some(json),
                    }
                }
                ValueType::Scalar(scalar) => match field.go {
                    GoJson::Always => Some(zero_json(scalar)),
                    GoJson::AlwaysOrNull => Some(Value::Null),
                    _ => None,
                },
                ValueType::Message(inner) if present => Some(value_json(
                    schema,
                    ValueType::Message(inner),
                    &dynamic.get_field(&field.descriptor),
                    &path,
                    unknown,
                )?),
                ValueType::Message(_) => (field.go == GoJson::AlwaysOrNull).then_some(Value::Null),
            },
            Cardinality::Repeated => {
                let value = dynamic.get_field(&field.descriptor);
                let items = value.as_list().unwrap_or_default();
                if items.is_empty() {
                    match field.go {
                        GoJson::Always => Some(Value::Array(Vec::new())),
                        GoJson::AlwaysOrNull => Some(Value::Null),
                        _ => None,
                    }
                } else {
                    let mut array = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        array.push(value_json(schema, field.value, item, &path.index(i), unknown)?);
                    }
                    Some(Value::Array(array))
                }
            }
            Cardinality::Map { .. } => {
                let value = dynamic.get_field(&field.descriptor);
                match value.as_map() {
                    Some(entries) if !entries.is_empty() => {
                        // encoding/json writes map keys sorted.
                        let mut sorted: Vec<(String, &ProtoValue)> =
                            entries.iter().map(|(key, value)| (map_key_text(key), value)).collect();
                        sorted.sort_by(|a, b| a.0.cmp(&b.0));
                        let mut object = Map::with_capacity(sorted.len());
                        for (key, value) in sorted {
                            let json = value_json(schema, field.value, value, &path.key(&key), unknown)?;
                            object.insert(key, json);
                        }
                        Some(Value::Object(object))
                    }
                    _ => (field.go == GoJson::AlwaysOrNull).then_some(Value::Null),
                }
            }
        };
        if let Some(json) = json {
            out.insert(field.name.clone(), json);
        }
    }
    for field in dynamic.unknown_fields() {
        unknown.push(path.field(&format!("#{}", field.number())).render());
    }
    Ok(())
}

fn value_json(
    schema: &Schema,
    value_type: ValueType,
    value: &ProtoValue,
    path: &Path<'_>,
    unknown: &mut Vec<String>,
) -> Result<Value, ProtoError> {
    match value_type {
        ValueType::Scalar(scalar) => scalar_json(scalar, value, path),
        ValueType::Message(message) => {
            let ProtoValue::Message(dynamic) = value else {
                return Err(ProtoError::Malformed(format!("{}: expected a message", path.describe())));
            };
            match schema.messages[message].special {
                Some(special) => special_json(special, dynamic, path),
                None => {
                    let mut object = Map::new();
                    decode_fields(schema, message, dynamic, path, unknown, &mut object)?;
                    Ok(Value::Object(object))
                }
            }
        }
    }
}

fn special_json(special: Special, dynamic: &DynamicMessage, path: &Path<'_>) -> Result<Value, ProtoError> {
    let number = |n: u32| dynamic.get_field_by_number(n);
    let present = |n: u32| dynamic.has_field_by_number(n);
    Ok(match special {
        // Go reads an empty Time as the zero time, which encoding/json writes as null.
        Special::Time | Special::MicroTime if !present(1) && !present(2) => Value::Null,
        Special::Time => Value::String(format_rfc3339(number(1).and_then(|v| v.as_i64()).unwrap_or_default())),
        Special::MicroTime => {
            let seconds = number(1).and_then(|v| v.as_i64()).unwrap_or_default();
            let nanos = number(2).and_then(|v| v.as_i32()).unwrap_or_default();
            Value::String(format_rfc3339_micro(seconds, nanos))
        }
        Special::Quantity => {
            let text = number(1).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            Value::String(if text.is_empty() { "0".to_owned() } else { text })
        }
        Special::IntOrString => {
            if number(1).and_then(|v| v.as_i64()) == Some(1) {
                Value::String(number(3).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default())
            } else {
                Value::from(number(2).and_then(|v| v.as_i32()).unwrap_or_default())
            }
        }
        Special::RawExtension | Special::FieldsV1 => match number(1) {
            Some(raw) if raw.as_bytes().is_some_and(|b| !b.is_empty()) => {
                let bytes = raw.as_bytes().expect("checked above");
                serde_json::from_slice(bytes).map_err(|err| {
                    ProtoError::Malformed(format!("{}: embedded bytes are not JSON: {err}", path.describe()))
                })?
            }
            _ => Value::Null,
        },
        // Go fills a map's ExtraValue from `&ExtraValue{}`, so an entry without items is `[]`.
        Special::StringList => {
            let items = number(1);
            let items = items.as_deref().and_then(ProtoValue::as_list).unwrap_or_default();
            let mut array = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                array.push(scalar_json(Scalar::String, item, &path.index(i))?);
            }
            Value::Array(array)
        }
    })
}

fn scalar_json(scalar: Scalar, value: &ProtoValue, path: &Path<'_>) -> Result<Value, ProtoError> {
    let json = match value {
        ProtoValue::String(text) => Value::String(text.clone()),
        ProtoValue::Bytes(bytes) => Value::String(BASE64.encode(bytes)),
        ProtoValue::Bool(flag) => Value::Bool(*flag),
        ProtoValue::I32(n) => Value::from(*n),
        ProtoValue::I64(n) => Value::from(*n),
        ProtoValue::U32(n) => Value::from(*n),
        ProtoValue::U64(n) => Value::from(*n),
        ProtoValue::EnumNumber(n) => Value::from(*n),
        ProtoValue::F32(n) => float(f64::from(*n), path)?,
        ProtoValue::F64(n) => float(*n, path)?,
        ProtoValue::Message(_) | ProtoValue::List(_) | ProtoValue::Map(_) => {
            return Err(ProtoError::Malformed(format!("{}: expected a {scalar:?}", path.describe())));
        }
    };
    Ok(json)
}

fn float(n: f64, path: &Path<'_>) -> Result<Value, ProtoError> {
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| ProtoError::Malformed(format!("{}: {n} has no JSON form", path.describe())))
}

fn zero_json(scalar: Scalar) -> Value {
    match scalar {
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        _ => Value::from(0),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(text) => text.is_empty(),
        Value::Bool(flag) => !flag,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn map_key_text(key: &MapKey) -> String {
    match key {
        MapKey::String(text) => text.clone(),
        MapKey::Bool(flag) => flag.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}
