//! The schema of one CRD version (`openAPIV3Schema`, kube's `JSONSchemaProps`), parsed into a
//! tree, and what kube does with it to custom resources:
//!
//! * [`prune`]: drop fields the schema does not declare ([`Schema::prune`]).
//! * [`default`]: drop non-nullable nulls, then apply `default`s ([`Schema::apply_defaults`]).
//! * [`validate`]: the kube-openapi validation plus list-type and embedded-resource checks
//!   ([`Schema::validate`]), with kube's field paths and messages.
//! * [`structural`]: whether a schema is *structural* (checked at CRD create), and
//!   [`default_checks`] whether its defaults are valid and pruned.
//!
//! One type serves as kube's `Structural` and as the value validations nested in
//! `allOf`/`anyOf`/`oneOf`/`not`; in a structural schema the nested ones carry no type.
//! Go keeps `properties` in maps, which iterate at random; here they are sorted, so errors
//! come out in a stable order.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::crd::DecodeError;

pub mod cel;
pub mod default;
pub mod default_checks;
pub mod format;
pub mod list_type;
pub mod prune;
pub mod structural;
pub mod validate;

/// `additionalProperties`: a boolean or a schema.
#[derive(Clone, Debug, PartialEq)]
pub enum AdditionalProperties {
    /// `true` (any value) or `false` (none).
    Allows(bool),
    /// Every other key's value follows this schema.
    Schema(Box<Schema>),
}

/// One `x-kubernetes-validations` rule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidationRule {
    /// The CEL expression.
    pub rule: String,
    /// The message when it fails.
    pub message: String,
    /// A CEL expression computing the message.
    pub message_expression: String,
    /// `FieldValueInvalid` (default), `FieldValueForbidden`, `FieldValueRequired`, `FieldValueDuplicate`.
    pub reason: Option<String>,
    /// Where to report a failure, relative to the node.
    pub field_path: String,
    /// Whether the rule also runs on create, with `oldSelf` unset.
    pub optional_old_self: Option<bool>,
}

/// A schema node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    /// `object`, `array`, `string`, `integer`, `number`, `boolean`, or empty.
    pub type_: String,
    /// `date-time`, `int32`, ...
    pub format: String,
    /// Shown by `kubectl explain`.
    pub description: String,
    /// A title.
    pub title: String,
    /// The default value (`default: null` counts as none, as in kube).
    pub default: Option<Value>,
    /// Whether an explicit `null` is kept.
    pub nullable: bool,
    /// Declared fields of an object.
    pub properties: BTreeMap<String, Schema>,
    /// The schema of undeclared keys (a map).
    pub additional_properties: Option<AdditionalProperties>,
    /// The schema of list items.
    pub items: Option<Box<Schema>>,
    /// `items` was given as a list of schemas (never allowed).
    pub items_is_array: bool,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `maxLength` (characters).
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: String,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems` (rejected at CRD create).
    pub unique_items: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `enum`.
    pub enum_: Option<Vec<Value>>,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `required`.
    pub required: Vec<String>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-preserve-unknown-fields` (only `true` is valid; `Some(false)` is an error).
    pub preserve_unknown_fields: Option<bool>,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-map-type`.
    pub map_type: Option<String>,
    /// `x-kubernetes-validations`.
    pub validations: Vec<ValidationRule>,
    /// Keywords present that CRDs never allow (`id`, `$ref`, `definitions`, ...), in kube's
    /// order of checking.
    pub unsupported: Vec<&'static str>,
}

/// Keywords kube's `JSONSchemaProps` has but CRDs reject, with kube's order of checking.
const UNSUPPORTED: [&str; 6] = ["id", "additionalItems", "patternProperties", "definitions", "dependencies", "$ref"];

impl Schema {
    /// Parses a `JSONSchemaProps` document. A keyword of the wrong JSON type is a decode error
    /// (kube's decoder answers 400 for it).
    pub fn parse(value: &Value) -> Result<Schema, DecodeError> {
        let obj = value.as_object().ok_or_else(|| DecodeError(format!("schema must be an object, got {value}")))?;
        let mut s = Schema {
            type_: string(obj, "type")?,
            format: string(obj, "format")?,
            description: string(obj, "description")?,
            title: string(obj, "title")?,
            default: obj.get("default").filter(|v| !v.is_null()).cloned(),
            nullable: boolean(obj, "nullable")?,
            maximum: number(obj, "maximum")?,
            exclusive_maximum: boolean(obj, "exclusiveMaximum")?,
            minimum: number(obj, "minimum")?,
            exclusive_minimum: boolean(obj, "exclusiveMinimum")?,
            max_length: integer(obj, "maxLength")?,
            min_length: integer(obj, "minLength")?,
            pattern: string(obj, "pattern")?,
            max_items: integer(obj, "maxItems")?,
            min_items: integer(obj, "minItems")?,
            unique_items: boolean(obj, "uniqueItems")?,
            multiple_of: number(obj, "multipleOf")?,
            max_properties: integer(obj, "maxProperties")?,
            min_properties: integer(obj, "minProperties")?,
            required: strings(obj, "required")?,
            embedded_resource: boolean(obj, "x-kubernetes-embedded-resource")?,
            int_or_string: boolean(obj, "x-kubernetes-int-or-string")?,
            list_map_keys: strings(obj, "x-kubernetes-list-map-keys")?,
            ..Schema::default()
        };
        if let Some(v) = obj.get("enum").filter(|v| !v.is_null()) {
            s.enum_ = Some(v.as_array().ok_or_else(|| wrong("enum", "an array"))?.clone());
        }
        if let Some(props) = obj.get("properties").filter(|v| !v.is_null()) {
            for (k, v) in props.as_object().ok_or_else(|| wrong("properties", "an object"))? {
                s.properties.insert(k.clone(), Schema::parse(v)?);
            }
        }
        s.additional_properties = match obj.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(AdditionalProperties::Allows(*b)),
            Some(v) => Some(AdditionalProperties::Schema(Box::new(Schema::parse(v)?))),
        };
        match obj.get("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                s.items_is_array = true;
                if let Some(first) = list.first() {
                    s.items = Some(Box::new(Schema::parse(first)?));
                }
            }
            Some(v) => s.items = Some(Box::new(Schema::parse(v)?)),
        }
        s.all_of = schemas(obj, "allOf")?;
        s.one_of = schemas(obj, "oneOf")?;
        s.any_of = schemas(obj, "anyOf")?;
        if let Some(v) = obj.get("not").filter(|v| !v.is_null()) {
            s.not = Some(Box::new(Schema::parse(v)?));
        }
        s.preserve_unknown_fields = match obj.get("x-kubernetes-preserve-unknown-fields") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(wrong("x-kubernetes-preserve-unknown-fields", "a boolean")),
        };
        s.list_type = optional_string(obj, "x-kubernetes-list-type")?;
        s.map_type = optional_string(obj, "x-kubernetes-map-type")?;
        if let Some(rules) = obj.get("x-kubernetes-validations").filter(|v| !v.is_null()) {
            for rule in rules.as_array().ok_or_else(|| wrong("x-kubernetes-validations", "an array"))? {
                let r = rule.as_object().ok_or_else(|| wrong("x-kubernetes-validations", "a list of objects"))?;
                s.validations.push(ValidationRule {
                    rule: string(r, "rule")?,
                    message: string(r, "message")?,
                    message_expression: string(r, "messageExpression")?,
                    reason: optional_string(r, "reason")?,
                    field_path: string(r, "fieldPath")?,
                    optional_old_self: match r.get("optionalOldSelf") {
                        Some(Value::Bool(b)) => Some(*b),
                        _ => None,
                    },
                });
            }
        }
        s.unsupported = UNSUPPORTED.into_iter().filter(|k| obj.get(*k).is_some_and(|v| !is_zero(v))).collect();
        Ok(s)
    }

    /// Whether unknown fields below this node are kept.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }

    /// The schema of the value under `key` of an object of this schema: the declared property,
    /// else `additionalProperties`' schema.
    pub fn field(&self, key: &str) -> Option<&Schema> {
        self.properties.get(key).or(match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        })
    }

    /// The schema of `additionalProperties`, when it is one.
    pub fn additional_properties_schema(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Calls `f` on this node and every node below it (properties, items,
    /// additionalProperties, allOf/anyOf/oneOf/not).
    pub fn walk(&self, f: &mut dyn FnMut(&Schema)) {
        f(self);
        for p in self.properties.values() {
            p.walk(f);
        }
        if let Some(i) = &self.items {
            i.walk(f);
        }
        if let Some(a) = self.additional_properties_schema() {
            a.walk(f);
        }
        for s in self.all_of.iter().chain(&self.any_of).chain(&self.one_of) {
            s.walk(f);
        }
        if let Some(n) = &self.not {
            n.walk(f);
        }
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

fn wrong(key: &str, what: &str) -> DecodeError {
    DecodeError(format!("{key} must be {what}"))
}

fn string(obj: &Map<String, Value>, key: &str) -> Result<String, DecodeError> {
    Ok(optional_string(obj, key)?.unwrap_or_default())
}

fn optional_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(wrong(key, "a string")),
    }
}

fn boolean(obj: &Map<String, Value>, key: &str) -> Result<bool, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(wrong(key, "a boolean")),
    }
}

fn number(obj: &Map<String, Value>, key: &str) -> Result<Option<f64>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(wrong(key, "a number")),
    }
}

fn integer(obj: &Map<String, Value>, key: &str) -> Result<Option<i64>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| wrong(key, "an integer")),
        Some(_) => Err(wrong(key, "an integer")),
    }
}

fn strings(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => {
            list.iter().map(|v| v.as_str().map(str::to_owned).ok_or_else(|| wrong(key, "a list of strings"))).collect()
        }
        Some(_) => Err(wrong(key, "a list of strings")),
    }
}

fn schemas(obj: &Map<String, Value>, key: &str) -> Result<Vec<Schema>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list.iter().map(Schema::parse).collect(),
        Some(_) => Err(wrong(key, "a list of schemas")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_keywords_and_extensions() {
        let s = Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}},
            "x-kubernetes-validations": [{"rule": "self.replicas > 0"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object"}}}, "$ref": "#/x"}))
        .unwrap();
        let replicas = &s.properties["spec"].properties["replicas"];
        assert_eq!(
            (replicas.minimum, replicas.maximum, replicas.default.clone()),
            (Some(1.0), Some(10.0), Some(json!(1)))
        );
        assert_eq!(s.properties["spec"].validations[0].rule, "self.replicas > 0");
        assert_eq!(s.properties["ports"].list_type.as_deref(), Some("map"));
        assert_eq!(s.unsupported, vec!["$ref"]);
        assert!(Schema::parse(&json!({"type": 5})).is_err());
        assert_eq!(Schema::parse(&json!({"default": null})).unwrap().default, None);
    }
}
