//! Discovery of the groups CRDs add (spec §1.5): a group is listed once one of its CRDs is
//! Established with a served version. kube-aggregator orders `/apis` by group priority, and
//! every CRD group-version has the same (1000, below every built-in group), so CRD groups come
//! after the built-ins, in the order of their APIService names (`<version>.<group>`); a
//! group's versions come in kube's version order, the first preferred. A group-version's
//! `APIResourceList` has each CRD's entries (with `/status` and `/scale`), sorted by name.

use std::collections::BTreeMap;

use base64::Engine;
use listwatch_apiextensions::version_order;
use serde_json::{Value, json};

use crate::customresources::Snapshot;

/// CRD groups in `/apis` order, each with its versions in discovery order.
pub fn groups(snapshot: &Snapshot) -> Vec<(String, Vec<String>)> {
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for served in snapshot.established() {
        let crd = &served.crd;
        let versions = by_group.entry(crd.spec.group.clone()).or_default();
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            if !versions.contains(&v.name) {
                versions.push(v.name.clone());
            }
        }
    }
    order(by_group)
}

/// kube-aggregator's order of groups of equal priority (their APIService names), each with
/// its versions in kube's order.
fn order(mut by_group: BTreeMap<String, Vec<String>>) -> Vec<(String, Vec<String>)> {
    let mut api_services: Vec<(String, String)> =
        by_group.iter().flat_map(|(g, vs)| vs.iter().map(move |v| (format!("{v}.{g}"), g.clone()))).collect();
    api_services.sort();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (_, group) in api_services {
        if out.iter().any(|(g, _)| *g == group) {
            continue;
        }
        let mut versions = by_group.remove(&group).unwrap_or_default();
        version_order::sort(&mut versions);
        out.push((group, versions));
    }
    out
}

/// The `resources` of `/apis/<group>/<version>`, or `None` when no Established CRD serves it.
pub fn resources(snapshot: &Snapshot, group: &str, version: &str) -> Option<Vec<Value>> {
    let mut entries = Vec::new();
    for served in snapshot.established().filter(|c| c.crd.spec.group == group) {
        let crd = &served.crd;
        let mut listed = listwatch_apiextensions::names::discovery(crd, version);
        if let (Some(first), Some(storage)) = (listed.first_mut(), crd.storage_version()) {
            first["storageVersionHash"] =
                json!(storage_version_hash(group, &storage.name, &crd.status.accepted_names.kind));
        }
        entries.extend(listed);
    }
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Some(entries)
}

/// kube's `StorageVersionHash`: base64 of the first 8 bytes of sha256(`<group>/<version>/<kind>`).
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_come_in_apiservice_order_with_kube_sorted_versions() {
        let by_group: BTreeMap<String, Vec<String>> = [
            ("b.example.org", vec!["v1beta1", "v1"]),
            ("a.example.org", vec!["v2"]),
            ("c.example.org", vec!["v1alpha1"]),
        ]
        .into_iter()
        .map(|(g, vs)| (g.to_owned(), vs.into_iter().map(String::from).collect()))
        .collect();
        let ordered = order(by_group);
        // APIService names: v1.b..., v1alpha1.c..., v1beta1.b..., v2.a...
        let groups: Vec<&str> = ordered.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(groups, ["b.example.org", "c.example.org", "a.example.org"]);
        assert_eq!(ordered[0].1, ["v1", "v1beta1"]);
    }
}
