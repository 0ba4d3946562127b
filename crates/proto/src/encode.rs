//! JSON object → the kind's protobuf message bytes, driven by the descriptors.
//!
//! The JSON is Kubernetes JSON, not proto3 JSON: keys are the proto field names (or their
//! `json_name`); `Time`, `MicroTime`, `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1` and
//! `ExtraValue` have their own JSON forms (see [`crate::schema::Special`]); `bytes` are
//! standard base64; maps are objects; `json:",inline"` fields take their keys from the
//! enclosing object. Absent and `null` values are not written, except a `null` time, which is
//! Go's zero time and is written as an empty message as Go writes it. Keys the schema does not
//! know (including top-level `apiVersion` and `kind`, which the envelope carries) are skipped
//! here; [`crate::check_json_fields`] reports them.
//!
//! Byte order follows Go's generated marshallers: fields by ascending number, map entries by
//! ascending key, every map entry with both key and value, `IntOrString` and `Time` with all
//! their fields. Unlike Go, a value field absent from the JSON is not written as its zero
//! value: the JSON does not say which fields are Go values, and decoders treat a missing
//! proto2 field as the zero value anyway.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

use crate::ProtoError;
use crate::path::Path;
use crate::schema::{Cardinality, GoJson, Scalar, Schema, Special, ValueType};
use crate::time::parse_rfc3339;
use crate::wire::{FIXED32, FIXED64, VARINT, put_bytes, put_key, put_varint};

/// Writes the fields of message `message` found in `object`.
pub(crate) fn encode_fields(
    schema: &Schema,
    message: usize,
    object: &Map<String, Value>,
    path: &Path<'_>,
    out: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    let plan = &schema.messages[message];
    for &index in &plan.wire_order {
        let field = &plan.fields[index];
        if field.go == GoJson::Inline {
            // Go writes embedded structs whether or not any of their fields are set.
            let ValueType::Message(inner) = field.value else { continue };
            let mut nested = Vec::new();
            encode_fields(schema, inner, object, path, &mut nested)?;
            put_bytes(out, field.number, &nested);
            continue;
        }
        let Some(value) = object.get(&field.name) else { continue };
        if value.is_null() {
            // `"creationTimestamp": null` is Go's zero time, which Go writes as an empty message
            // (and reads back as null); any other null is an unset pointer, which Go does not write.
            if is_time(schema, field.value) && matches!(field.cardinality, Cardinality::Single) {
                put_bytes(out, field.number, &[]);
            }
            continue;
        }
        let path = path.field(&field.name);
        match field.cardinality {
            Cardinality::Single => encode_value(schema, field.number, field.value, value, &path, out)?,
            Cardinality::Repeated => {
                let items = value.as_array().ok_or_else(|| invalid(&path, "expected an array"))?;
                for (i, item) in items.iter().enumerate() {
                    let path = path.index(i);
                    if item.is_null() {
                        return Err(invalid(&path, "null is not allowed in this array"));
                    }
                    encode_value(schema, field.number, field.value, item, &path, out)?;
                }
            }
            Cardinality::Map { key } => {
                let entries = value.as_object().ok_or_else(|| invalid(&path, "expected an object"))?;
                let mut keys: Vec<&String> = entries.keys().collect();
                keys.sort_unstable();
                for name in keys {
                    let path = path.key(name);
                    let mut entry = Vec::new();
                    encode_map_key(key, name, &path, &mut entry)?;
                    let entry_value = &entries[name.as_str()];
                    if !entry_value.is_null() {
                        encode_value(schema, 2, field.value, entry_value, &path, &mut entry)?;
                    }
                    put_bytes(out, field.number, &entry);
                }
            }
        }
    }
    Ok(())
}

fn encode_value(
    schema: &Schema,
    number: u32,
    value_type: ValueType,
    value: &Value,
    path: &Path<'_>,
    out: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    match value_type {
        ValueType::Scalar(scalar) => encode_scalar(number, scalar, value, path, out),
        ValueType::Message(message) => {
            let mut nested = Vec::new();
            match schema.messages[message].special {
                Some(special) => encode_special(special, value, path, &mut nested)?,
                None => {
                    let object = value.as_object().ok_or_else(|| invalid(path, "expected an object"))?;
                    encode_fields(schema, message, object, path, &mut nested)?;
                }
            }
            put_bytes(out, number, &nested);
            Ok(())
        }
    }
}

fn encode_special(special: Special, value: &Value, path: &Path<'_>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    match special {
        Special::Time | Special::MicroTime => {
            let text = value.as_str().ok_or_else(|| invalid(path, "expected an RFC 3339 time string"))?;
            let time = parse_rfc3339(text).ok_or_else(|| invalid(path, "expected an RFC 3339 time string"))?;
            // metav1.Time keeps whole seconds only, on the wire as in JSON.
            let nanos = if special == Special::Time { 0 } else { time.nanos };
            put_key(out, 1, VARINT);
            put_varint(out, time.seconds as u64);
            put_key(out, 2, VARINT);
            put_varint(out, i64::from(nanos) as u64);
        }
        Special::Quantity => {
            // kube-apiserver also accepts a bare JSON number for a quantity.
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                _ => return Err(invalid(path, "expected a quantity string")),
            };
            put_bytes(out, 1, text.as_bytes());
        }
        Special::IntOrString => {
            let (kind, int_value, str_value) = match value {
                Value::String(text) => (1_i64, 0_i32, text.as_str()),
                Value::Number(number) => {
                    let int = number
                        .as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| invalid(path, "expected a 32-bit integer or a string"))?;
                    (0, int, "")
                }
                _ => return Err(invalid(path, "expected an integer or a string")),
            };
            put_key(out, 1, VARINT);
            put_varint(out, kind as u64);
            put_key(out, 2, VARINT);
            put_varint(out, i64::from(int_value) as u64);
            put_bytes(out, 3, str_value.as_bytes());
        }
        Special::RawExtension | Special::FieldsV1 => {
            let raw = serde_json::to_vec(value).expect("a JSON value serializes");
            // Request bodies may nest 10,000 levels (as kube's); embedded JSON is the one part
            // of them a schema keeps, and a stored object must stay within the nesting its
            // readers (serde_json's default limit) accept, or it could never be read back.
            if crate::json_depth::opener_past(&raw, MAX_STORED_NESTING.saturating_sub(path.depth())).is_some() {
                return Err(invalid(
                    path,
                    &format!("embedded JSON nests deeper than the {MAX_STORED_NESTING} levels an object may have"),
                ));
            }
            put_bytes(out, 1, &raw);
        }
        Special::StringList => {
            let items = value.as_array().ok_or_else(|| invalid(path, "expected an array"))?;
            for (i, item) in items.iter().enumerate() {
                let path = path.index(i);
                if item.is_null() {
                    return Err(invalid(&path, "null is not allowed in this array"));
                }
                encode_scalar(1, Scalar::String, item, &path, out)?;
            }
        }
    }
    Ok(())
}

fn encode_scalar(
    number: u32,
    scalar: Scalar,
    value: &Value,
    path: &Path<'_>,
    out: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    match scalar {
        Scalar::String => {
            let text = value.as_str().ok_or_else(|| invalid(path, "expected a string"))?;
            put_bytes(out, number, text.as_bytes());
        }
        Scalar::Bytes => {
            let text = value.as_str().ok_or_else(|| invalid(path, "expected a base64 string"))?;
            let bytes = BASE64.decode(text).map_err(|err| invalid(path, &format!("invalid base64: {err}")))?;
            put_bytes(out, number, &bytes);
        }
        Scalar::Bool => {
            let flag = value.as_bool().ok_or_else(|| invalid(path, "expected a boolean"))?;
            put_key(out, number, VARINT);
            put_varint(out, u64::from(flag));
        }
        Scalar::Int32 | Scalar::Enum => {
            let n = integer(value, path, i64::from(i32::MIN), i64::from(i32::MAX))?;
            put_key(out, number, VARINT);
            put_varint(out, n as u64); // negative values are sign-extended to ten bytes, as protobuf requires
        }
        Scalar::Int64 => {
            let n = integer(value, path, i64::MIN, i64::MAX)?;
            put_key(out, number, VARINT);
            put_varint(out, n as u64);
        }
        Scalar::SInt32 | Scalar::SInt64 => {
            let (min, max) = if scalar == Scalar::SInt32 {
                (i64::from(i32::MIN), i64::from(i32::MAX))
            } else {
                (i64::MIN, i64::MAX)
            };
            let n = integer(value, path, min, max)?;
            put_key(out, number, VARINT);
            put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
        }
        Scalar::UInt32 | Scalar::UInt64 => {
            let n = value.as_u64().ok_or_else(|| invalid(path, "expected a non-negative integer"))?;
            if scalar == Scalar::UInt32 && n > u64::from(u32::MAX) {
                return Err(invalid(path, "integer out of range"));
            }
            put_key(out, number, VARINT);
            put_varint(out, n);
        }
        Scalar::Fixed32 | Scalar::SFixed32 | Scalar::Float => {
            let bits = match scalar {
                Scalar::Fixed32 => u32::try_from(value.as_u64().ok_or_else(|| invalid(path, "expected an integer"))?)
                    .map_err(|_| invalid(path, "integer out of range"))?,
                Scalar::SFixed32 => integer(value, path, i64::from(i32::MIN), i64::from(i32::MAX))? as i32 as u32,
                _ => (value.as_f64().ok_or_else(|| invalid(path, "expected a number"))? as f32).to_bits(),
            };
            put_key(out, number, FIXED32);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Scalar::Fixed64 | Scalar::SFixed64 | Scalar::Double => {
            let bits = match scalar {
                Scalar::Fixed64 => value.as_u64().ok_or_else(|| invalid(path, "expected an integer"))?,
                Scalar::SFixed64 => integer(value, path, i64::MIN, i64::MAX)? as u64,
                _ => value.as_f64().ok_or_else(|| invalid(path, "expected a number"))?.to_bits(),
            };
            put_key(out, number, FIXED64);
            out.extend_from_slice(&bits.to_le_bytes());
        }
    }
    Ok(())
}

/// Map keys are JSON object keys, so always strings; Kubernetes maps are all keyed by string.
fn encode_map_key(scalar: Scalar, key: &str, path: &Path<'_>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    match scalar {
        Scalar::String => put_bytes(out, 1, key.as_bytes()),
        Scalar::Bool => {
            let flag = key.parse::<bool>().map_err(|_| invalid(path, "expected a boolean map key"))?;
            put_key(out, 1, VARINT);
            put_varint(out, u64::from(flag));
        }
        _ => {
            let n = key.parse::<i64>().map_err(|_| invalid(path, "expected an integer map key"))?;
            encode_scalar(1, scalar, &Value::from(n), path, out)?;
        }
    }
    Ok(())
}

fn is_time(schema: &Schema, value_type: ValueType) -> bool {
    matches!(value_type, ValueType::Message(m) if matches!(schema.messages[m].special, Some(Special::Time | Special::MicroTime)))
}

fn integer(value: &Value, path: &Path<'_>, min: i64, max: i64) -> Result<i64, ProtoError> {
    let n = value.as_i64().ok_or_else(|| invalid(path, "expected an integer"))?;
    if n < min || n > max {
        return Err(invalid(path, "integer out of range"));
    }
    Ok(n)
}

/// The deepest nesting of objects and arrays a stored object may have: what serde_json reads
/// with its default recursion limit (128).
const MAX_STORED_NESTING: usize = 127;

fn invalid(path: &Path<'_>, message: &str) -> ProtoError {
    ProtoError::InvalidJson { path: path.describe(), message: message.to_owned() }
}
