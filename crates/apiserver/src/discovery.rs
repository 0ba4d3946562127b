//! Discovery documents (spec §10): `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{g}`,
//! `/apis/{g}/{v}`, built from the registry: the built-ins, then the groups CRDs add
//! ([`custom`]). Aggregated discovery is not offered: clients that ask for it get plain
//! `application/json` and fall back to these, as client-go does.

mod builtin_schemas;
mod custom;
pub mod openapi;

use listwatch_meta::Registry;
use listwatch_meta::registry::Subresource;
use serde_json::{Value, json};

use crate::state::ApiState;

/// The Kubernetes version listwatch speaks (kubectl's dispatcher picks its client by it).
pub const KUBERNETES_MINOR: &str = "32";

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0+listwatch-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", a => a }),
    })
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_versions(group: &str, versions: &[impl AsRef<str>]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{}", v.as_ref()), "version": v.as_ref()}))
        .collect();
    json!({
        "name": group,
        "versions": list,
        "preferredVersion": list.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn api_group_list(state: &ApiState) -> Value {
    let mut groups: Vec<Value> =
        Registry.groups().into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| group_versions(g, &v)).collect();
    groups.extend(custom::groups(&state.custom.snapshot()).iter().map(|(g, v)| group_versions(g, v)));
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group(state: &ApiState, group: &str) -> Option<Value> {
    let versions: Vec<String> = match Registry.groups().into_iter().find(|(g, _)| *g == group && !g.is_empty()) {
        Some((_, versions)) => versions.iter().map(ToString::to_string).collect(),
        None => custom::groups(&state.custom.snapshot()).into_iter().find(|(g, _)| g == group)?.1,
    };
    let mut doc = group_versions(group, &versions);
    let map = doc.as_object_mut()?;
    map.insert("kind".into(), json!("APIGroup"));
    map.insert("apiVersion".into(), json!("v1"));
    Some(doc)
}

/// `APIResourceList` of one group-version, subresources included (`pods/status`).
pub fn api_resource_list(state: &ApiState, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<_> = Registry.resources().iter().filter(|r| r.group == group && r.version == version).collect();
    if resources.is_empty() {
        let list = custom::resources(&state.custom.snapshot(), group, version)?;
        return Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"), "resources": list}),
        );
    }
    let mut list = Vec::new();
    for r in resources {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        list.push(entry);
        for sub in r.subresources {
            let mut entry = json!({
                "name": format!("{}/{}", r.plural, sub.name()),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            });
            if *sub == Subresource::Scale {
                entry["group"] = json!("autoscaling");
                entry["version"] = json!("v1");
                entry["kind"] = json!("Scale");
            }
            if *sub == Subresource::Binding {
                entry["kind"] = json!("Binding");
                entry["verbs"] = json!(["create"]);
            }
            if *sub == Subresource::Token {
                entry["group"] = json!("authentication.k8s.io");
                entry["version"] = json!("v1");
                entry["kind"] = json!("TokenRequest");
                entry["verbs"] = json!(["create"]);
            }
            list.push(entry);
        }
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let mut doc = json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": list});
    if !group.is_empty() {
        doc["apiVersion"] = json!("v1");
    }
    Some(doc)
}
