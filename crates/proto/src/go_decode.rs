//! What kube-apiserver's JSON decoder says when a body's values do not fit the kind's Go types.
//!
//! kube decodes an object with sigs.k8s.io/json, a copy of Go's `encoding/json`: it walks the
//! document in order and, for a value of the wrong JSON type, keeps the first
//! `UnmarshalTypeError` and goes on (`json: cannot unmarshal string into Go struct field
//! ObjectMeta.metadata.labels of type map[string]string`: the innermost struct, the dotted JSON
//! field names that lead there, without indexes or map keys, and the Go type wanted). A bad
//! base64 `[]byte` is kept the same way (`illegal base64 data at input byte 0`). Types with
//! their own `UnmarshalJSON` (`metav1.Time`, `MicroTime`, `resource.Quantity`,
//! `intstr.IntOrString`) stop the decoding with their error instead, which wins over a kept
//! one; they decode with the standard library's `encoding/json`, whose type errors name no
//! field (`json: cannot unmarshal number into Go value of type string`).
//!
//! The Go types are read off the schema: `string`, `int32`, `[]uint8` for bytes, `v1.PodSpec`
//! for a message (its package's last element and its name), `[]T` and `map[string]T`. Go's
//! named types the schema cannot show (`v1.RestartPolicy`, `v1.ResourceList`, `types.UID`)
//! come from a table generated from the Go sources ([`crate::go_types`]).

use listwatch_gocompat::json::json_kind;
use listwatch_gocompat::{base64, quantity, time};
use serde_json::{Map, Value};

use crate::go_types::NAMED_GO_TYPES;
use crate::schema::{Cardinality, FieldPlan, Scalar, Schema, Special, ValueType};

pub(crate) fn scalar_go_type(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::String => "string",
        Scalar::Bytes => "[]uint8",
        Scalar::Bool => "bool",
        Scalar::Int32 | Scalar::SInt32 | Scalar::SFixed32 | Scalar::Enum => "int32",
        Scalar::Int64 | Scalar::SInt64 | Scalar::SFixed64 => "int64",
        Scalar::UInt32 | Scalar::Fixed32 => "uint32",
        Scalar::UInt64 | Scalar::Fixed64 => "uint64",
        Scalar::Float => "float32",
        Scalar::Double => "float64",
    }
}

/// `reflect.Type.String()` of a value of `value_type`.
fn value_go_type(schema: &Schema, value_type: ValueType) -> String {
    match value_type {
        ValueType::Scalar(scalar) => scalar_go_type(scalar).to_owned(),
        ValueType::Message(message) => {
            let descriptor = &schema.messages[message].descriptor;
            let package = descriptor.package_name().rsplit('.').next().unwrap_or_default();
            format!("{package}.{}", descriptor.name())
        }
    }
}

fn field_go_type(schema: &Schema, field: &FieldPlan) -> String {
    let value = value_go_type(schema, field.value);
    match field.cardinality {
        Cardinality::Single => value,
        Cardinality::Repeated => format!("[]{value}"),
        Cardinality::Map { key } => format!("map[{}]{value}", scalar_go_type(key)),
    }
}

/// The Go types of field `field` of message `message` (the field's, one element's) when they
/// are named types the schema does not show.
fn named_go_types(schema: &Schema, message: usize, field: &str) -> Option<(&'static str, &'static str)> {
    let name = schema.messages[message].descriptor.full_name();
    NAMED_GO_TYPES
        .binary_search_by(|(m, f, _, _)| (*m, *f).cmp(&(name, field)))
        .ok()
        .map(|i| (NAMED_GO_TYPES[i].2, NAMED_GO_TYPES[i].3))
}

/// The decoder's state: where it is (Go's `errorContext`) and the first error it kept.
struct Decoder<'s> {
    schema: &'s Schema,
    /// JSON names of the struct fields from the root (`FieldStack`).
    fields: Vec<String>,
    /// The struct whose field is being decoded (`errorContext.Struct`).
    go_struct: Option<usize>,
    saved: Option<String>,
}

/// An error that ends the decoding (an `UnmarshalJSON` failed).
struct Stop(String);

impl Decoder<'_> {
    fn save(&mut self, error: impl FnOnce() -> String) {
        if self.saved.is_none() {
            self.saved = Some(error());
        }
    }

    /// Keeps an `UnmarshalTypeError` for `found` (`string`, `number 1.5`) into `go_type`.
    fn save_type_error(&mut self, found: &str, go_type: &str) {
        let go_struct = self.go_struct.map(|m| self.schema.messages[m].descriptor.name().to_owned());
        let fields = self.fields.join(".");
        self.save(|| match go_struct {
            None if fields.is_empty() => format!("json: cannot unmarshal {found} into Go value of type {go_type}"),
            go_struct => format!(
                "json: cannot unmarshal {found} into Go struct field {}.{fields} of type {go_type}",
                go_struct.unwrap_or_default()
            ),
        });
    }

    fn object(&mut self, message: usize, object: &Map<String, Value>) -> Result<(), Stop> {
        for (key, value) in object {
            // Unknown fields are skipped (strict decoding reports them separately).
            let Some(found) = self.schema.json_key(message, key) else { continue };
            let field = &self.schema.messages[found.message].fields[found.field];
            let outer = self.go_struct;
            self.fields.push(key.clone());
            // A field of an embedded (inline) struct belongs to the outer struct for Go.
            self.go_struct = Some(message);
            let named = named_go_types(self.schema, found.message, key);
            self.field(field, named, value)?;
            self.fields.pop();
            self.go_struct = outer;
        }
        Ok(())
    }

    /// A field's value; `named`: the Go types of the field and of one element, where the
    /// schema does not show them.
    fn field(&mut self, field: &FieldPlan, named: Option<(&str, &str)>, value: &Value) -> Result<(), Stop> {
        let element = named.map(|(_, element)| element);
        match (field.cardinality, value) {
            (_, Value::Null) => Ok(()),
            (Cardinality::Single, value) => self.value(field.value, element, value),
            (Cardinality::Repeated, Value::Array(items)) => {
                items.iter().try_for_each(|item| self.value(field.value, element, item))
            }
            // Map keys are strings in every Kubernetes map; the key does not join the path.
            (Cardinality::Map { .. }, Value::Object(entries)) => {
                entries.values().try_for_each(|entry| self.value(field.value, element, entry))
            }
            (_, value) => {
                let go_type =
                    named.map_or_else(|| field_go_type(self.schema, field), |(go_type, _)| go_type.to_owned());
                self.save_type_error(json_kind(value), &go_type);
                Ok(())
            }
        }
    }

    /// One value of `value_type` (Go type `named` when the schema does not show it).
    fn value(&mut self, value_type: ValueType, named: Option<&str>, value: &Value) -> Result<(), Stop> {
        if value.is_null() {
            return Ok(());
        }
        match value_type {
            ValueType::Scalar(scalar) => {
                self.scalar(scalar, named.unwrap_or(scalar_go_type(scalar)), value);
                Ok(())
            }
            ValueType::Message(message) => match (self.schema.messages[message].special, value) {
                // ExtraValue is a plain `[]string` to Go: no UnmarshalJSON, errors are kept.
                (Some(Special::StringList), Value::Array(items)) => {
                    items.iter().try_for_each(|item| self.value(ValueType::Scalar(Scalar::String), None, item))
                }
                (Some(Special::StringList), value) => {
                    let go_type = named.map_or_else(|| value_go_type(self.schema, value_type), str::to_owned);
                    self.save_type_error(json_kind(value), &go_type);
                    Ok(())
                }
                (Some(special), value) => special_error(special, value).map_or(Ok(()), |e| Err(Stop(e))),
                (None, Value::Object(object)) => self.object(message, object),
                (None, value) => {
                    let go_type = named.map_or_else(|| value_go_type(self.schema, value_type), str::to_owned);
                    self.save_type_error(json_kind(value), &go_type);
                    Ok(())
                }
            },
        }
    }

    fn scalar(&mut self, scalar: Scalar, go_type: &str, value: &Value) {
        match (scalar, value) {
            (Scalar::String, Value::String(_)) | (Scalar::Bool, Value::Bool(_)) => {}
            (Scalar::Bytes, Value::String(text)) => {
                if let Some(error) = base64::std_error(text) {
                    self.save(|| error);
                }
            }
            (Scalar::Float | Scalar::Double, Value::Number(_)) => {}
            // Go fills a `[]byte` from an array of numbers too.
            (Scalar::Bytes, Value::Array(items)) => {
                for item in items {
                    match item {
                        Value::Null => {}
                        Value::Number(n) if n.as_u64().is_some_and(|n| n <= 255) => {}
                        Value::Number(n) => self.save_type_error(&format!("number {n}"), "uint8"),
                        other => self.save_type_error(json_kind(other), "uint8"),
                    }
                }
            }
            (Scalar::String | Scalar::Bytes | Scalar::Bool, value) => self.save_type_error(json_kind(value), go_type),
            (integer, Value::Number(number)) => {
                if !fits(integer, number) {
                    self.save_type_error(&format!("number {number}"), go_type);
                }
            }
            (_, value) => self.save_type_error(json_kind(value), go_type),
        }
    }
}

/// Whether `number` is an integer literal that fits the Go integer type (Go's `ParseInt` and
/// `OverflowInt`: `1.0` and `1e3` do not).
fn fits(scalar: Scalar, number: &serde_json::Number) -> bool {
    match scalar {
        Scalar::Int32 | Scalar::SInt32 | Scalar::SFixed32 | Scalar::Enum => {
            number.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
        }
        Scalar::Int64 | Scalar::SInt64 | Scalar::SFixed64 => number.as_i64().is_some(),
        Scalar::UInt32 | Scalar::Fixed32 => number.as_u64().is_some_and(|n| u32::try_from(n).is_ok()),
        Scalar::UInt64 | Scalar::Fixed64 => number.as_u64().is_some(),
        _ => true,
    }
}

/// The error of a special type's `UnmarshalJSON` for `value` (not null), if it fails.
pub(crate) fn special_error(special: Special, value: &Value) -> Option<String> {
    let std_type_error =
        |go_type: &str, found: &str| format!("json: cannot unmarshal {found} into Go value of type {go_type}");
    match (special, value) {
        (Special::Time | Special::MicroTime, Value::String(text)) => {
            time::parse_error(text, special == Special::MicroTime)
        }
        (Special::Time | Special::MicroTime, value) => Some(std_type_error("string", json_kind(value))),
        (Special::Quantity, Value::String(text)) => quantity::parse_error(text.trim()).map(str::to_owned),
        (Special::Quantity, value) => quantity::parse_error(&value.to_string()).map(str::to_owned),
        (Special::IntOrString, Value::String(_)) => None,
        (Special::IntOrString, Value::Number(number)) => {
            (!fits(Scalar::Int32, number)).then(|| std_type_error("int32", &format!("number {number}")))
        }
        (Special::IntOrString, value) => Some(std_type_error("int32", json_kind(value))),
        (Special::RawExtension | Special::FieldsV1, _) => None,
        // Decoded as a plain `[]string` (see `Decoder::value`, `go_unstructured::element`).
        (Special::StringList, _) => None,
    }
}

/// The error kube's decoder reports for `object` decoded as message `message`, if any.
pub(crate) fn decode_error(schema: &Schema, message: usize, object: &Map<String, Value>) -> Option<String> {
    let mut decoder = Decoder { schema, fields: Vec::new(), go_struct: None, saved: None };
    match decoder.object(message, object) {
        Err(Stop(error)) => Some(error),
        Ok(()) => decoder.saved,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::go_decode_error;

    fn error(group: &str, kind: &str, object: serde_json::Value) -> Option<String> {
        go_decode_error(group, "v1", kind, &object).unwrap()
    }

    #[test]
    fn type_errors_name_the_go_field_as_kube_does() {
        let cases = [
            (
                "",
                "ConfigMap",
                json!({"metadata": {"name": "x", "labels": "app"}}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string",
            ),
            (
                "",
                "ConfigMap",
                json!({"data": {"k": 5}}),
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
            ),
            (
                "",
                "ConfigMap",
                json!({"data": "flat"}),
                "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string",
            ),
            (
                "apps",
                "Deployment",
                json!({"spec": {"replicas": "3"}}),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                "apps",
                "Deployment",
                json!({"spec": {"replicas": 3_000_000_000_i64}}),
                "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "c", "image": 5}]}}),
                "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string",
            ),
            (
                "",
                "Pod",
                json!({"spec": {"containers": {"name": "c"}}}),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
            ),
            (
                "",
                "ConfigMap",
                json!({"metadata": "x"}),
                "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta",
            ),
            ("", "Secret", json!({"data": {"k": "!!!!"}}), "illegal base64 data at input byte 0"),
            (
                "",
                "Secret",
                json!({"data": {"k": 1}}),
                "json: cannot unmarshal number into Go struct field Secret.data of type []uint8",
            ),
            // Named types from the Go sources.
            (
                "",
                "Pod",
                json!({"spec": {"restartPolicy": 1}}),
                "json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy",
            ),
            (
                "",
                "Pod",
                json!({"spec": {"containers": [{"resources": {"limits": []}}]}}),
                "json: cannot unmarshal array into Go struct field ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList",
            ),
            (
                "",
                "ConfigMap",
                json!({"metadata": {"uid": 7}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID",
            ),
            (
                "",
                "Namespace",
                json!({"spec": {"finalizers": [true]}}),
                "json: cannot unmarshal bool into Go struct field NamespaceSpec.spec.finalizers of type v1.FinalizerName",
            ),
            // ExtraValue is a `[]string` to Go (a message on the wire); `uid` is the proto's `uID`.
            (
                "authorization.k8s.io",
                "SubjectAccessReview",
                json!({"spec": {"extra": {"k": "a"}}}),
                "json: cannot unmarshal string into Go struct field SubjectAccessReviewSpec.spec.extra of type v1.ExtraValue",
            ),
            (
                "authentication.k8s.io",
                "TokenReview",
                json!({"status": {"user": {"extra": {"k": ["a", 1]}}}}),
                "json: cannot unmarshal number into Go struct field UserInfo.status.user.extra of type string",
            ),
            (
                "authentication.k8s.io",
                "TokenRequest",
                json!({"spec": {"boundObjectRef": {"uid": 1}}}),
                "json: cannot unmarshal number into Go struct field BoundObjectReference.spec.boundObjectRef.uid of type types.UID",
            ),
            // An UnmarshalJSON error ends the decoding and wins over a kept type error.
            (
                "",
                "ConfigMap",
                json!({"data": 1, "metadata": {"creationTimestamp": 5}}),
                "json: cannot unmarshal number into Go value of type string",
            ),
        ];
        for (group, kind, object, message) in cases {
            assert_eq!(error(group, kind, object.clone()).as_deref(), Some(message), "{object}");
        }
    }

    #[test]
    fn fitting_values_and_unknown_fields_pass() {
        let pod = json!({
            "metadata": {"name": "p", "labels": {"a": "b"}, "creationTimestamp": null, "bogus": 1},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "100m", "memory": 1}}}]},
        });
        assert_eq!(error("", "Pod", pod), None);
        assert_eq!(error("", "Secret", json!({"data": {"k": "dg=="}, "type": "Opaque"})), None);
        let review = json!({"spec": {"extra": {"a": ["x", null], "b": null, "c": []}, "groups": null}});
        assert_eq!(error("authorization.k8s.io", "SubjectAccessReview", review), None);
    }
}
