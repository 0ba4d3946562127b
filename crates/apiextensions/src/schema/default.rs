//! Defaulting of custom resources (kube's `pkg/apiserver/schema/defaulting/algorithm.go` and
//! `prunenulls.go`), run when a body is decoded, when an object is read from storage and on
//! the result of an apply:
//!
//! 1. A `null` whose schema is not `nullable` and has no `default` is removed (not an error).
//! 2. Top-down, a declared property that is absent, or `null` without `nullable`, gets a copy of
//!    its `default`. So do `additionalProperties` values and list items that are such nulls.
//!    Defaults never create a missing parent: only objects that exist are filled in.

use serde_json::Value;

use super::Schema;

fn is_non_nullable_null(value: &Value, schema: Option<&Schema>) -> bool {
    value.is_null() && schema.is_some_and(|s| !s.nullable)
}

impl Schema {
    /// Drops non-nullable nulls without defaults, then applies defaults, in place.
    pub fn apply_defaults(&self, object: &mut Value) {
        prune_nulls(object, Some(self));
        default(object, self);
    }
}

fn prune_nulls(value: &mut Value, schema: Option<&Schema>) {
    match value {
        Value::Object(map) => {
            map.retain(|key, v| {
                let field = schema.and_then(|s| s.field(key));
                !(is_non_nullable_null(v, field) && field.is_some_and(|f| f.default.is_none()))
            });
            for (key, v) in map.iter_mut() {
                prune_nulls(v, schema.and_then(|s| s.field(key)));
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            for item in items {
                prune_nulls(item, item_schema);
            }
        }
        _ => {}
    }
}

fn default(value: &mut Value, schema: &Schema) {
    match value {
        Value::Object(map) => {
            for (key, prop) in &schema.properties {
                let Some(default) = &prop.default else { continue };
                match map.get(key) {
                    Some(v) if !is_non_nullable_null(v, Some(prop)) => {}
                    _ => {
                        map.insert(key.clone(), default.clone());
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(prop) = schema.properties.get(key) {
                    default(v, prop);
                } else if let Some(additional) = schema.additional_properties_schema() {
                    if is_non_nullable_null(v, Some(additional))
                        && let Some(d) = &additional.default
                    {
                        *v = d.clone();
                    }
                    default(v, additional);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items.as_deref() else { return };
            for item in items {
                if is_non_nullable_null(item, Some(item_schema))
                    && let Some(d) = &item_schema.default
                {
                    *item = d.clone();
                }
                default(item, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "a"},
            "note": {"type": "string", "nullable": true, "default": "n"},
            "gone": {"type": "string"},
            "kept": {"type": "string", "nullable": true},
            "ports": {"type": "array", "items": {"type": "object", "default": {"p": 0},
                "properties": {"protocol": {"type": "string", "default": "TCP"}}}},
            "env": {"type": "object", "additionalProperties": {"type": "object",
                "properties": {"value": {"type": "string", "default": "v"}}}},
            "nested": {"type": "object", "properties": {"deep": {"type": "integer", "default": 5}}}
        }}}}))
        .unwrap()
    }

    #[test]
    fn defaults_absent_and_non_nullable_null_fields() {
        let mut cr = json!({"spec": {"mode": null, "note": null, "gone": null, "kept": null,
            "ports": [{"containerPort": 80}, null], "env": {"A": {}}}});
        schema().apply_defaults(&mut cr);
        assert_eq!(
            cr,
            json!({"spec": {"mode": "a", "note": null, "kept": null,
            "ports": [{"containerPort": 80, "protocol": "TCP"}, {"p": 0, "protocol": "TCP"}],
            "env": {"A": {"value": "v"}}, "replicas": 1}})
        );
    }

    #[test]
    fn defaults_do_not_create_parents() {
        let mut cr = json!({"metadata": {"name": "x"}});
        schema().apply_defaults(&mut cr);
        assert_eq!(cr, json!({"metadata": {"name": "x"}}));
    }
}
