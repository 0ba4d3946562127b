//! Pruning: fields a schema does not declare are deleted from custom resources, on every
//! write and on every read from storage (kube's `pkg/apiserver/schema/pruning/algorithm.go`).
//!
//! * Below `x-kubernetes-preserve-unknown-fields: true` nothing is pruned, except inside the
//!   properties that node declares (pruning starts again there).
//! * At the root and in `x-kubernetes-embedded-resource` nodes, `apiVersion`, `kind` and
//!   `metadata` are kept whatever the schema says. An embedded resource's `metadata` is cut
//!   down to ObjectMeta's fields (kube's `objectmeta.Coerce`); the root's is the apiserver's.
//! * The paths of removed fields come back sorted, as `spec.foo` and `spec.items[0].bar`:
//!   what `fieldValidation=Strict|Warn` reports as `unknown field "spec.foo"`.

use serde_json::{Map, Value};

use super::Schema;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `metav1.ObjectMeta` in JSON.
pub const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

impl Schema {
    /// Prunes a whole custom resource against its version's root schema; returns the removed
    /// paths, sorted.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        self.prune_value(object, true)
    }

    /// Prunes any value against this node; `resource_root` keeps `apiVersion`/`kind`/
    /// `metadata` as at the root of an object (kube's `isResourceRoot`).
    pub fn prune_value(&self, value: &mut Value, resource_root: bool) -> Vec<String> {
        let mut pruner = Pruner::default();
        if resource_root && !self.embedded_resource {
            let mut root = self.clone();
            root.embedded_resource = true;
            pruner.prune(value, Some(&root));
        } else {
            pruner.prune(value, Some(self));
        }
        pruner.unknown.sort();
        pruner.unknown
    }
}

#[derive(Default)]
struct Pruner {
    path: Vec<String>,
    unknown: Vec<String>,
}

impl Pruner {
    fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push(".".into());
        }
        self.path.push(key.to_owned());
    }

    fn push_index(&mut self, index: usize) {
        self.path.push(format!("[{index}]"));
    }

    fn record(&mut self, key: &str) {
        let depth = self.path.len();
        self.push_key(key);
        self.unknown.push(self.path.concat());
        self.path.truncate(depth);
    }

    fn prune(&mut self, value: &mut Value, schema: Option<&Schema>) {
        if let Some(s) = schema
            && s.preserves_unknown_fields()
        {
            self.skip(value, s);
            return;
        }
        let depth = self.path.len();
        match value {
            Value::Object(map) => {
                let Some(s) = schema else {
                    for key in map.keys() {
                        self.record(key);
                    }
                    map.clear();
                    return;
                };
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    if s.embedded_resource && META_FIELDS.contains(&key.as_str()) {
                        if key == "metadata" && depth > 0 {
                            self.coerce_metadata(map, &key);
                        }
                        continue;
                    }
                    if let Some(field) = s.field(&key) {
                        self.push_key(&key);
                        self.prune(map.get_mut(&key).expect("key listed above"), Some(field));
                        self.path.truncate(depth);
                    } else if s.additional_properties.is_some() {
                        // `additionalProperties: true`: any value, pruned as schemaless.
                        self.push_key(&key);
                        self.prune(map.get_mut(&key).expect("key listed above"), None);
                        self.path.truncate(depth);
                    } else {
                        if !META_FIELDS.contains(&key.as_str()) || depth > 0 {
                            self.record(&key);
                        }
                        map.remove(&key);
                    }
                }
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                for (i, item) in items.iter_mut().enumerate() {
                    self.push_index(i);
                    self.prune(item, item_schema);
                    self.path.truncate(depth);
                }
            }
            _ => {}
        }
    }

    /// Below `x-kubernetes-preserve-unknown-fields`: only declared properties are pruned.
    fn skip(&mut self, value: &mut Value, schema: &Schema) {
        let depth = self.path.len();
        match value {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    if schema.embedded_resource && META_FIELDS.contains(&key.as_str()) {
                        if key == "metadata" && depth > 0 {
                            self.coerce_metadata(map, &key);
                        }
                        continue;
                    }
                    if let Some(field) = schema.field(&key) {
                        self.push_key(&key);
                        self.prune(map.get_mut(&key).expect("key listed above"), Some(field));
                        self.path.truncate(depth);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref() {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.push_index(i);
                        self.skip(item, item_schema);
                        self.path.truncate(depth);
                    }
                }
            }
            _ => {}
        }
    }

    /// An embedded resource's metadata keeps only ObjectMeta's fields.
    fn coerce_metadata(&mut self, parent: &mut Map<String, Value>, key: &str) {
        let depth = self.path.len();
        self.push_key(key);
        if let Some(Value::Object(meta)) = parent.get_mut(key) {
            let unknown: Vec<String> =
                meta.keys().filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str())).cloned().collect();
            for k in unknown {
                self.record(&k);
                meta.remove(&k);
            }
        }
        self.path.truncate(depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"strict": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
            }}}}))
        .unwrap()
    }

    #[test]
    fn prunes_undeclared_fields_and_reports_paths() {
        let mut cr = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"},
            "spec": {"replicas": 1, "foo": 1, "items": [{"name": "a", "bar": 2}],
                "labels": {"x": {"v": "1", "w": "2"}},
                "free": {"anything": {"deep": 1}, "strict": {"a": "1", "b": 2}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}, "extra": 1}},
            "status": {"x": 1}});
        let removed = schema().prune(&mut cr);
        assert_eq!(
            removed,
            vec![
                "spec.foo",
                "spec.free.strict.b",
                "spec.items[0].bar",
                "spec.labels.x.w",
                "spec.template.extra",
                "spec.template.metadata.bogus",
                "spec.template.spec.x",
                "status"
            ]
        );
        assert_eq!(
            cr,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"},
            "spec": {"replicas": 1, "items": [{"name": "a"}], "labels": {"x": {"v": "1"}},
                "free": {"anything": {"deep": 1}, "strict": {"a": "1"}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}})
        );
    }

    #[test]
    fn root_meta_fields_are_kept_even_when_undeclared() {
        let s = Schema::parse(&json!({"type": "object"})).unwrap();
        let mut cr = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "odd": 1}, "spec": {}});
        assert_eq!(s.prune(&mut cr), vec!["spec"]);
        assert_eq!(cr, json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "odd": 1}}));
    }
}
