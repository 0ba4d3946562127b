//! `x-kubernetes-list-type: set | map` uniqueness (kube's `pkg/apiserver/schema/listtype/
//! validation.go`): a `set` holds no value twice, a `map` no two items with the same values of
//! `x-kubernetes-list-map-keys`. Each repeated item after the first is reported once, as
//! `spec.ports[1]: Duplicate value: map[string]interface {}{"name":"http"}`. Items of a `map`
//! list must be objects.

use listwatch_meta::validation::FieldError;
use serde_json::{Map, Value};

use super::Schema;
use super::validate::json_equal;
use crate::errors;
use crate::path::FieldPath;

/// Checks every list below `value` whose schema has a list type.
pub fn validate(schema: &Schema, path: &FieldPath, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            if let Some(additional) = schema.additional_properties_schema() {
                for (key, v) in map {
                    validate(additional, &path.key(key), v, errs);
                }
            }
            for (key, v) in map {
                if let Some(prop) = schema.properties.get(key) {
                    validate(prop, &path.child(key), v, errs);
                }
            }
        }
        Value::Array(items) => {
            match schema.list_type.as_deref() {
                Some("set") => {
                    for i in repeated(items) {
                        errs.push(errors::duplicate(&path.index(i), &items[i]));
                    }
                }
                Some("map") => list_map(schema, path, items, errs),
                _ => {}
            }
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    validate(item_schema, &path.index(i), item, errs);
                }
            }
        }
        _ => {}
    }
}

/// Indexes of values seen exactly once before (the second occurrence of each repeated value).
fn repeated(values: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if values[..i].iter().filter(|w| json_equal(v, w)).count() == 1 {
            out.push(i);
        }
    }
    out
}

fn list_map(schema: &Schema, path: &FieldPath, items: &[Value], errs: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errs.push(errors::invalid(&path.index(i), item, "must be an object for an array of list-type map"));
            return;
        }
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            if let Some(obj) = item.as_object() {
                for k in &schema.list_map_keys {
                    if let Some(v) = obj.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeated(&keys) {
        errs.push(errors::duplicate(&path.index(i), &keys[i]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_in_sets_and_maps() {
        let s = Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}}}))
        .unwrap();
        let mut errs = Vec::new();
        let cr = json!({"spec": {"tags": ["a", "b", "a", "a"], "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}});
        validate(&s, &FieldPath::root(), &cr, &mut errs);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "spec.tags[2]: Duplicate value: \"a\"",
                "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}",
            ]
        );
    }
}
