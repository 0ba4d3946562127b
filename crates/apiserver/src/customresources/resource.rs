//! A CRD's served version as a registry [`Resource`], the description every layer below the
//! apiserver reads (routing, storage keys, the watch cache, encoding, field selectors).
//!
//! Why leaked: the layers take `&'static Resource` (the built-in table is static data, and a
//! watch cache, an encoder or a watch event holds its resource for as long as it lives). A
//! resource made at run time is therefore leaked, once per distinct definition: the same CRD
//! spec and accepted names give back the same `&'static Resource` (interned), so a CRD that
//! is re-created, or a server that reinstalls its CRDs, costs nothing new. Only a change of a
//! CRD's spec or names makes a new one (a few kilobytes: the names, the compiled schema, the
//! columns), which is bounded by how often CRDs change in a server's life.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use listwatch_apiextensions::CustomResourceDefinition;
use listwatch_apiextensions::serving::ServedVersion;
use listwatch_meta::Resource;
use listwatch_meta::registry::Subresource;
use listwatch_meta::validation::NameRule;

/// Verbs of a custom resource in kube's discovery order (what `has_verb` checks).
const VERBS: &[&str] = &listwatch_apiextensions::names::VERBS;

/// Definitions already leaked, by what they were made from.
static INTERNED: LazyLock<Mutex<HashMap<String, &'static Resource>>> = LazyLock::new(Default::default);

fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn leak_strs(items: impl IntoIterator<Item = String>) -> &'static [&'static str] {
    let v: Vec<&'static str> = items.into_iter().map(|s| leak_str(&s)).collect();
    Box::leak(v.into_boxed_slice())
}

/// The resource of `version` of `crd` (its accepted names), or `None` when the CRD does not
/// serve that version.
pub fn of(crd: &CustomResourceDefinition, version: &str) -> Option<&'static Resource> {
    let served = crd.version(version).filter(|v| v.served)?;
    let storage = crd.storage_version().map(|v| v.name.clone()).unwrap_or_else(|| version.to_owned());
    let key = serde_json::json!([crd.name(), crd.spec, crd.status.accepted_names, version, storage]).to_string();
    let mut interned = INTERNED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(resource) = interned.get(&key) {
        return Some(resource);
    }
    let dynamic: &'static ServedVersion = Box::leak(Box::new(ServedVersion::new(crd, version)?));
    let names = &crd.status.accepted_names;
    let mut subresources = Vec::new();
    if served.has_status_subresource() {
        subresources.push(Subresource::Status);
    }
    if served.scale().is_some() {
        subresources.push(Subresource::Scale);
    }
    let resource = Resource {
        group: leak_str(&crd.spec.group),
        version: leak_str(version),
        plural: leak_str(&names.plural),
        singular: leak_str(&names.singular),
        kind: leak_str(&names.kind),
        short_names: leak_strs(names.short_names.iter().cloned()),
        categories: leak_strs(names.categories.iter().cloned()),
        namespaced: crd.is_namespaced(),
        verbs: VERBS,
        subresources: Box::leak(subresources.into_boxed_slice()),
        // kube's key: /registry/<group>/<plural>/[<namespace>/]<name>.
        storage_prefix: leak_str(&format!("{}/{}", crd.spec.group, names.plural)),
        selectable_fields: leak_strs(
            served.selectable_fields.iter().map(|f| f.json_path.trim_start_matches('.').to_owned()),
        ),
        // The columns are the CRD's (`dynamic`); names are DNS subdomains; no protobuf.
        name_rule: NameRule::Subdomain,
        custom_list_kind: leak_str(&names.list_kind),
        storage_version: if storage == version { "" } else { leak_str(&storage) },
        converted_by_webhook: storage != version
            && crd.spec.conversion.as_ref().is_some_and(|c| c.strategy == "Webhook"),
        dynamic: Some(dynamic),
        ..Resource::EMPTY
    };
    let resource: &'static Resource = Box::leak(Box::new(resource));
    interned.insert(key, resource);
    Some(resource)
}

/// The compiled version behind a custom resource (`None` for built-ins).
pub fn served(resource: &Resource) -> Option<&ServedVersion> {
    resource.dynamic.and_then(|d| d.as_any().downcast_ref::<ServedVersion>())
}

#[cfg(test)]
mod tests {
    use listwatch_apiextensions::CustomResourceDefinition;
    use serde_json::json;

    use super::*;

    fn crd(plural: &str, versions: &[(&str, bool)]) -> CustomResourceDefinition {
        let versions: Vec<_> = versions
            .iter()
            .map(|(name, storage)| {
                json!({"name": name, "served": true, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object"}}, "subresources": {"status": {}},
                "selectableFields": [{"jsonPath": ".spec.color"}]})
            })
            .collect();
        let mut crd = CustomResourceDefinition::from_value(&json!({
            "metadata": {"name": format!("{plural}.example.org")},
            "spec": {"group": "example.org", "scope": "Namespaced", "versions": versions,
                "names": {"plural": plural, "kind": "Thing", "listKind": "Things", "shortNames": ["th"]}},
        }))
        .unwrap();
        listwatch_apiextensions::defaults::set_defaults(&mut crd);
        crd.status.accepted_names = crd.spec.names.clone();
        crd
    }

    #[test]
    fn a_version_becomes_a_resource_with_kubes_key_layout() {
        let crd = crd("things", &[("v1", true), ("v2", false)]);
        let v2 = of(&crd, "v2").unwrap();
        assert_eq!(
            (v2.group, v2.version, v2.plural, v2.kind, v2.singular),
            ("example.org", "v2", "things", "Thing", "thing")
        );
        assert_eq!(v2.object_key("/registry", Some("ns"), "a"), "/registry/example.org/things/ns/a");
        assert_eq!(v2.list_kind(), "Things");
        assert_eq!(v2.storage_api_version(), "example.org/v1");
        assert_eq!(of(&crd, "v1").unwrap().storage_api_version(), "example.org/v1");
        assert!(v2.is_selectable("spec.color") && v2.has_subresource(Subresource::Status));
        assert_eq!(served(v2).map(|s| s.version.as_str()), Some("v2"));
        assert!(of(&crd, "v3").is_none());
    }

    #[test]
    fn the_same_definition_is_leaked_once() {
        let a = of(&crd("gadgets", &[("v1", true)]), "v1").unwrap();
        let b = of(&crd("gadgets", &[("v1", true)]), "v1").unwrap();
        assert!(std::ptr::eq(a, b));
        let mut changed = crd("gadgets", &[("v1", true)]);
        changed.spec.names.short_names.push("gd".into());
        changed.status.accepted_names = changed.spec.names.clone();
        assert!(!std::ptr::eq(a, of(&changed, "v1").unwrap()));
    }
}
