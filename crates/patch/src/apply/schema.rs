//! What server-side apply needs to know of an object's schema.
//!
//! SSA merges and tracks ownership by the schema's list and map types
//! (kube-openapi's `schemaconv`): `x-kubernetes-list-type` (`atomic`, `set`,
//! `map` with `x-kubernetes-list-map-keys`), `x-kubernetes-map-type`
//! (`atomic` or `granular`), and for built-in kinds without a list type the
//! strategic-merge tags (`patchStrategy: merge` + `patchMergeKey` is a map
//! keyed by that field, without a key a set). [`ApplySchema`] answers those
//! questions by path; it is implemented for the built-in tables
//! ([`crate::TableSchema`]), for custom resources' OpenAPI v3 schemas
//! ([`OpenApiSchema`]) and, with no schema at all, by [`DeducedSchema`].
//!
//! Paths are field names from the object root with list positions left out,
//! as in [`crate::PatchSchema`]: the items of a list share its path, so the
//! map type asked at a list's path is that of its items.

use serde_json::{Map, Value};

use crate::schema::{ListStrategy, ListType, PatchSchema, TableSchema};

/// How an object (struct or map) merges and is owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    /// Each field merged and owned separately (the default).
    Granular,
    /// Replaced and owned as one value (`x-kubernetes-map-type: atomic`,
    /// `+structType=atomic`, `+mapType=atomic`).
    Atomic,
}

/// The schema facts server-side apply uses, by path.
pub trait ApplySchema {
    /// The type of the list at `path`.
    fn list_type(&self, path: &[&str]) -> ListType;

    /// The type of the object at `path` (or of the items of the list there).
    fn map_type(&self, _path: &[&str]) -> MapType {
        MapType::Granular
    }

    /// Whether `name` is a declared field of the object at `path` (a struct
    /// property) rather than a key of a map with arbitrary keys. A map key
    /// whose value is a non-empty object is owned itself as well as its
    /// contents; a declared field is not.
    fn is_named_field(&self, _path: &[&str], _name: &str) -> bool {
        true
    }

    /// Whether the object at `path` may hold `name` at all; an apply body
    /// with an undeclared field fails (`field not declared in schema`).
    fn field_declared(&self, _path: &[&str], _name: &str) -> bool {
        true
    }

    /// The default of the key field `key` of the items of the list-map at
    /// `path`, used when an item leaves it out (container ports'
    /// `protocol: TCP`).
    fn key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}

/// No schema (kube's "deduced" type, used below
/// `x-kubernetes-preserve-unknown-fields`): objects are granular maps whose
/// keys are not declared fields, lists are atomic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeducedSchema;

impl ApplySchema for DeducedSchema {
    fn list_type(&self, _path: &[&str]) -> ListType {
        ListType::Atomic
    }

    fn is_named_field(&self, _path: &[&str], _name: &str) -> bool {
        false
    }
}

/// The SSA list type a strategic-merge list strategy implies for a built-in
/// list without `listType`.
pub fn list_type_of_strategy(strategy: &ListStrategy) -> ListType {
    match strategy {
        ListStrategy::Replace => ListType::Atomic,
        ListStrategy::MergePrimitives => ListType::Set,
        ListStrategy::Merge { key } => ListType::map([key.clone()]),
    }
}

impl ApplySchema for TableSchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        self.ssa_list_type(path).unwrap_or_else(|| list_type_of_strategy(&self.list_strategy(path)))
    }

    fn map_type(&self, path: &[&str]) -> MapType {
        if self.is_atomic_map(path) { MapType::Atomic } else { MapType::Granular }
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        self.ssa_key_default(path, key)
    }
}

/// The ObjectMeta of every object, for custom resources whose schema leaves
/// `metadata` to the server.
fn object_meta_schema() -> TableSchema {
    crate::builtin_schema("ConfigMap").unwrap_or_default()
}

/// An [`ApplySchema`] read from a custom resource version's OpenAPI v3
/// schema (`spec.versions[].schema.openAPIV3Schema`).
///
/// `metadata` is ObjectMeta's (finalizers a set, owner references keyed by
/// uid), whatever the schema says, as kube does for custom resources.
/// Lists without `x-kubernetes-list-type` are atomic; below
/// `x-kubernetes-preserve-unknown-fields` undeclared fields are deduced
/// ([`DeducedSchema`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenApiSchema {
    root: Value,
    meta: TableSchema,
}

/// Where a path leads in an OpenAPI schema.
enum Node<'a> {
    /// A schema node.
    Schema(&'a Map<String, Value>),
    /// Below `x-kubernetes-preserve-unknown-fields` or
    /// `additionalProperties: true`, outside any declared property.
    Deduced,
    /// Not declared.
    Missing,
}

impl OpenApiSchema {
    /// The schema of one custom resource version.
    pub fn new(open_api_v3_schema: Value) -> OpenApiSchema {
        OpenApiSchema { root: open_api_v3_schema, meta: object_meta_schema() }
    }

    fn resolve(&self, path: &[&str]) -> Node<'_> {
        let Value::Object(root) = &self.root else {
            return Node::Deduced;
        };
        let mut node = root;
        for name in path {
            node = items_of(node);
            match property(node, name) {
                Some(Value::Object(child)) => node = child,
                Some(_) => return Node::Deduced,
                None => return if preserves_unknown(node) { Node::Deduced } else { Node::Missing },
            }
        }
        Node::Schema(items_of(node))
    }
}

/// The item schema of an array node (a list's path is its items' path).
fn items_of(node: &Map<String, Value>) -> &Map<String, Value> {
    match node.get("items") {
        Some(Value::Object(items)) if node.get("type").is_none_or(|t| t == "array") => items,
        _ => node,
    }
}

fn has_property(node: &Map<String, Value>, name: &str) -> bool {
    node.get("properties").and_then(Value::as_object).is_some_and(|p| p.contains_key(name))
}

/// The schema of field `name`: a declared property, else
/// `additionalProperties` when it is a schema.
fn property<'a>(node: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(declared) = node.get("properties").and_then(|p| p.get(name)) {
        return Some(declared);
    }
    match node.get("additionalProperties") {
        Some(schema @ Value::Object(_)) => Some(schema),
        _ => None,
    }
}

fn preserves_unknown(node: &Map<String, Value>) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        || node.get("additionalProperties") == Some(&Value::Bool(true))
}

impl ApplySchema for OpenApiSchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        if path.first() == Some(&"metadata") {
            return self.meta.list_type(path);
        }
        let list = match &self.root {
            Value::Object(root) => list_node(root, path),
            _ => None,
        };
        let Some(list) = list else {
            return ListType::Atomic;
        };
        match list.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::map(
                list.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        }
    }

    fn map_type(&self, path: &[&str]) -> MapType {
        if path.first() == Some(&"metadata") {
            return self.meta.map_type(path);
        }
        match self.resolve(path) {
            Node::Schema(node) if node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") => {
                MapType::Atomic
            }
            _ => MapType::Granular,
        }
    }

    fn is_named_field(&self, path: &[&str], name: &str) -> bool {
        if is_object_meta(path, name) {
            return true;
        }
        match self.resolve(path) {
            Node::Schema(node) => has_property(node, name),
            _ => false,
        }
    }

    fn field_declared(&self, path: &[&str], name: &str) -> bool {
        if is_object_meta(path, name) {
            return true;
        }
        match self.resolve(path) {
            Node::Schema(node) => property(node, name).is_some() || preserves_unknown(node),
            Node::Deduced => true,
            Node::Missing => false,
        }
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        match self.resolve(path) {
            Node::Schema(items) => items.get("properties")?.get(key)?.get("default").cloned(),
            _ => None,
        }
    }
}

/// Whether `name` at `path` is the root's `apiVersion`, `kind` or
/// `metadata`, or inside `metadata`: declared for every custom resource.
fn is_object_meta(path: &[&str], name: &str) -> bool {
    (path.is_empty() && matches!(name, "apiVersion" | "kind" | "metadata")) || path.first() == Some(&"metadata")
}

/// The array node at `path` itself (not its items), where the list type is declared.
fn list_node<'a>(root: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Map<String, Value>> {
    let mut node = root;
    for name in path {
        node = items_of(node);
        node = property(node, name)?.as_object()?;
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab_schema() -> OpenApiSchema {
        OpenApiSchema::new(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["port", "protocol"],
                              "items": {"type": "object", "properties": {
                                  "port": {"type": "integer"},
                                  "protocol": {"type": "string", "default": "TCP"},
                                  "target": {"type": "object", "x-kubernetes-map-type": "atomic",
                                             "properties": {"name": {"type": "string"}}}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}
            }
        }))
    }

    #[test]
    fn reads_list_and_map_types_from_openapi() {
        let schema = crontab_schema();
        assert_eq!(schema.list_type(&["spec", "tags"]), ListType::Set);
        assert_eq!(schema.list_type(&["spec", "args"]), ListType::Atomic);
        assert_eq!(schema.list_type(&["spec", "ports"]), ListType::map(["port", "protocol"]));
        assert_eq!(schema.key_default(&["spec", "ports"], "protocol"), Some(json!("TCP")));
        assert_eq!(schema.map_type(&["spec", "ports", "target"]), MapType::Atomic);
        assert_eq!(schema.map_type(&["spec"]), MapType::Granular);
        assert!(schema.is_named_field(&["spec"], "cronSpec"));
        assert!(!schema.is_named_field(&["spec", "labels"], "a"));
        assert!(schema.field_declared(&["spec", "labels"], "a"));
        assert!(!schema.field_declared(&["spec"], "foo"));
        assert!(schema.field_declared(&["spec", "free", "x"], "y"));
        assert!(schema.field_declared(&[], "metadata"));
        assert_eq!(schema.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(schema.map_type(&["metadata", "ownerReferences"]), MapType::Atomic);
    }

    #[test]
    fn built_in_tables_use_list_map_keys() {
        let deployment = crate::builtin_schema("Deployment").unwrap();
        let containers = ["spec", "template", "spec", "containers"];
        assert_eq!(deployment.list_type(&containers), ListType::map(["name"]));
        let ports = ["spec", "template", "spec", "containers", "ports"];
        assert_eq!(deployment.list_type(&ports), ListType::map(["containerPort", "protocol"]));
        assert_eq!(deployment.key_default(&ports, "protocol"), Some(json!("TCP")));
        assert_eq!(deployment.map_type(&["spec", "selector"]), MapType::Atomic);
        assert_eq!(deployment.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(deployment.list_type(&["spec", "template", "spec", "tolerations"]), ListType::Atomic);
        let service = crate::builtin_schema("Service").unwrap();
        assert_eq!(service.list_type(&["spec", "ports"]), ListType::map(["port", "protocol"]));
        assert_eq!(service.map_type(&["spec", "selector"]), MapType::Atomic);
        // The strategic merge patch still merges service ports by port alone.
        assert_eq!(service.list_strategy(&["spec", "ports"]), ListStrategy::merge("port"));
        let pod = crate::builtin_schema("Pod").unwrap();
        assert_eq!(pod.list_type(&["status", "hostIPs"]), ListType::Atomic);
        assert_eq!(
            pod.list_type(&["spec", "topologySpreadConstraints"]),
            ListType::map(["topologyKey", "whenUnsatisfiable"])
        );
        let job = crate::builtin_schema("Job").unwrap();
        assert_eq!(job.list_type(&["status", "conditions"]), ListType::Atomic);
        assert_eq!(DeducedSchema.list_type(&["a"]), ListType::Atomic);
    }
}
