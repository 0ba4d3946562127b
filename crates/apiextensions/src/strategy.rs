//! What a create or an update does to a CRD besides storing it (kube's
//! `pkg/registry/customresourcedefinition/strategy.go`):
//!
//! * create: the status is cleared, `metadata.generation` is 1, and `status.storedVersions`
//!   holds the storage version. A fresh CRD therefore reads back with
//!   `"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":["v1"]}`.
//! * update of the main resource: the status is kept as stored, the generation goes up by one
//!   when the spec changed, and a new storage version is added to `storedVersions`.
//! * update of `/status`: the spec is kept as stored. kube means to reset metadata too, but
//!   calls `ResetObjectMetaForStatus(new, new)`, so metadata changes of a status write stay;
//!   so do they here.
//!
//! The caller runs [`crate::defaults::set_defaults`] first (the decoder's defaulting) and
//! [`crate::validation`] after.

use crate::crd::{CustomResourceDefinition, CustomResourceDefinitionStatus};

/// kube's `PrepareForCreate`.
pub fn prepare_for_create(crd: &mut CustomResourceDefinition) {
    crd.status = CustomResourceDefinitionStatus::default();
    crd.set_generation(1);
    add_storage_version(crd);
}

/// kube's `PrepareForUpdate` of the main resource.
pub fn prepare_for_update(crd: &mut CustomResourceDefinition, old: &CustomResourceDefinition) {
    crd.status = old.status.clone();
    let generation = if crd.spec != old.spec { old.generation() + 1 } else { old.generation() };
    crd.set_generation(generation);
    add_storage_version(crd);
}

/// kube's `PrepareForUpdate` of `/status`.
pub fn prepare_for_status_update(crd: &mut CustomResourceDefinition, old: &CustomResourceDefinition) {
    crd.spec = old.spec.clone();
}

fn add_storage_version(crd: &mut CustomResourceDefinition) {
    let Some(storage) = crd.storage_version().map(|v| v.name.clone()) else { return };
    let stored = crd.status.stored_versions.get_or_insert_with(Vec::new);
    if !stored.contains(&storage) {
        stored.push(storage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(storage: &str) -> CustomResourceDefinition {
        CustomResourceDefinition::from_value(&json!({"metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "names": {"plural": "crontabs", "kind": "CronTab"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": storage == "v1"}, {"name": "v2", "served": true, "storage": storage == "v2"}]},
            "status": {"storedVersions": ["v0"], "conditions": [{"type": "Established", "status": "True"}]}}))
        .unwrap()
    }

    #[test]
    fn create_clears_status_and_starts_generation() {
        let mut c = crd("v1");
        prepare_for_create(&mut c);
        assert_eq!(c.generation(), 1);
        assert_eq!(
            c.to_value()["status"],
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
        );
    }

    #[test]
    fn update_keeps_status_and_bumps_generation_on_spec_change() {
        let mut old = crd("v1");
        prepare_for_create(&mut old);
        let mut same = old.clone();
        same.metadata.insert("labels".into(), json!({"a": "b"}));
        same.status.stored_versions = None;
        prepare_for_update(&mut same, &old);
        assert_eq!(same.generation(), 1);
        assert_eq!(same.status, old.status);

        let mut moved = crd("v2");
        prepare_for_update(&mut moved, &old);
        assert_eq!(moved.generation(), 2);
        assert_eq!(moved.status.stored_versions, Some(vec!["v1".into(), "v2".into()]));
    }

    #[test]
    fn status_update_keeps_spec() {
        let old = crd("v1");
        let mut new = crd("v2");
        new.status.stored_versions = Some(vec!["v1".into()]);
        prepare_for_status_update(&mut new, &old);
        assert_eq!(new.spec, old.spec);
        assert_eq!(new.status.stored_versions, Some(vec!["v1".into()]));
    }
}
