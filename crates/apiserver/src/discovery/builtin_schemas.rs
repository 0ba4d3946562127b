//! kube-apiserver 1.32's schemas of the built-in kinds, for the OpenAPI v3 documents: what
//! `kubectl explain pod.spec.containers` reads, and what kubectl computes client-side apply
//! patches from (the merge keys and strategies are in them).
//!
//! They are vendored, not written here: `scripts/vendor-openapi.py` takes the definitions of
//! kube's published OpenAPI from PyPI's `kubernetes-validate` and turns them back into
//! `components.schemas` form (`openapi/kube-1.32-schemas.json.gz`, ~170 KB). Each
//! group-version's document carries the schemas of its kinds and every schema they refer to,
//! as kube's do.

use std::collections::BTreeSet;
use std::io::Read;
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// Every vendored schema by its name (`io.k8s.api.core.v1.Pod`).
static SCHEMAS: LazyLock<Map<String, Value>> = LazyLock::new(|| {
    let packed: &[u8] = include_bytes!("../../openapi/kube-1.32-schemas.json.gz");
    let mut text = Vec::new();
    let parsed = flate2::read::GzDecoder::new(packed)
        .read_to_end(&mut text)
        .ok()
        .and_then(|_| serde_json::from_slice::<Map<String, Value>>(&text).ok());
    parsed.unwrap_or_default()
});

/// The name of the vendored schema tagged with this group, version and kind, if any.
pub fn name_of(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    SCHEMAS.iter().find_map(|(name, schema)| {
        let tags = schema.get("x-kubernetes-group-version-kind")?.as_array()?;
        tags.iter()
            .any(|t| t["group"] == group && t["version"] == version && t["kind"] == kind)
            .then_some(name.as_str())
    })
}

/// The schemas named in `roots` and every schema they refer to, transitively.
pub fn closure<'a>(roots: impl IntoIterator<Item = &'a str>) -> Map<String, Value> {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<String> = roots.into_iter().map(str::to_owned).collect();
    let mut out = Map::new();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(schema) = SCHEMAS.get(&name) else { continue };
        collect_refs(schema, &mut pending);
        out.insert(name, schema.clone());
    }
    out
}

fn collect_refs(node: &Value, into: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref")
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                into.push(name.to_owned());
            }
            map.values().for_each(|v| collect_refs(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, into)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_tagged_and_their_containers_reachable() {
        let pod = name_of("", "v1", "Pod").expect("a Pod schema");
        assert_eq!(pod, "io.k8s.api.core.v1.Pod");
        let schemas = closure([pod]);
        assert!(schemas.contains_key("io.k8s.api.core.v1.Container"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["items"]["$ref"], "#/components/schemas/io.k8s.api.core.v1.Container");
        assert_eq!(schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["nodeName"]["type"], "string");
    }

    #[test]
    fn deployments_bring_the_pod_template() {
        let deployment = name_of("apps", "v1", "Deployment").expect("a Deployment schema");
        assert!(closure([deployment]).contains_key("io.k8s.api.core.v1.PodTemplateSpec"));
    }
}
