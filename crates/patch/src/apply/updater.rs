//! Ownership bookkeeping for one write: structured-merge-diff's
//! `merge/update.go` (`Updater.Update`, `Updater.Apply`, `prune`,
//! `addBackOwnedItems`, `addBackDanglingItems`).
//!
//! Simplification: every managed version is taken to name fields the same
//! way (no conversion between versions), which holds for the single-version
//! kinds listwatch serves; kube converts the objects to each manager's
//! version before comparing. Nor are managed sets reconciled with schema
//! changes (SMD's `reconcileManagedFieldsWithSchemaChanges`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::conflict::Conflict;
use super::fieldpath::{FieldSet, values_equal};
use super::managed::VersionedSet;
use super::schema::ApplySchema;
use super::typed::{Comparison, compare, ensure_named_fields_are_members, merge, remove_items, to_field_set};

/// Managers' sets by identifier.
pub(crate) type Managers = BTreeMap<String, VersionedSet>;

pub(crate) struct Updater<'s> {
    pub(crate) schema: &'s dyn ApplySchema,
    /// Fields no write owns here (the reset fields of the endpoint: `status`
    /// for a main resource, everything but `status` for `/status`).
    pub(crate) ignored: &'s FieldSet,
}

impl Updater<'_> {
    /// SMD's `update`: compares the objects, takes the fields `workflow`
    /// changed away from every other manager (or fails with the conflicts
    /// unless `force`), and drops removed fields from every other manager.
    fn update_managers(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut Managers,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, Vec<Conflict>> {
        let comparison = compare(old, new, self.schema).exclude(self.ignored);
        let changed = comparison.modified.union(&comparison.added);
        let mut conflicts: BTreeMap<String, FieldSet> = BTreeMap::new();
        for (manager, versioned) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let conflict = versioned.set.intersection(&changed);
            if !conflict.is_empty() {
                conflicts.insert(manager.clone(), conflict);
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(conflicts
                .iter()
                .flat_map(|(manager, set)| {
                    set.paths().into_iter().map(|path| Conflict { manager: manager.clone(), path })
                })
                .collect());
        }
        for (manager, conflict) in &conflicts {
            if let Some(versioned) = managers.get_mut(manager) {
                versioned.set = versioned.set.difference(conflict);
            }
        }
        if !comparison.removed.is_empty() {
            for (manager, versioned) in managers.iter_mut() {
                if manager != workflow {
                    versioned.set = versioned.set.difference(&comparison.removed);
                }
            }
        }
        managers.retain(|_, versioned| !versioned.set.is_empty());
        Ok(comparison)
    }

    /// SMD's `Updater.Update` for a create, update or non-apply patch by
    /// `manager`: it gains what changed, loses what was removed, and takes
    /// the changed fields from everyone else.
    pub(crate) fn update(&self, old: &Value, new: &Value, version: &str, managers: &mut Managers, manager: &str) {
        let Ok(comparison) = self.update_managers(old, new, managers, manager, true) else {
            return;
        };
        let previous = managers.get(manager).map(|v| v.set.clone()).unwrap_or_default();
        let set = previous
            .difference(&comparison.removed)
            .union(&comparison.modified)
            .union(&comparison.added)
            .recursive_difference(self.ignored);
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers.insert(manager.to_owned(), VersionedSet { set, api_version: version.to_owned(), applied: false });
        }
    }

    /// SMD's `Updater.Apply`: the live object merged with the configuration,
    /// fields the applier dropped since its last apply pruned, and
    /// ownership updated. `Ok(None)` when the object does not change.
    pub(crate) fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        managers: &mut Managers,
        manager: &str,
        force: bool,
    ) -> Result<Option<Value>, Vec<Conflict>> {
        let merged = merge(live, config, self.schema);
        let last_set = managers.get(manager).cloned();
        let set = to_field_set(config, self.schema).recursive_difference(self.ignored);
        managers.insert(manager.to_owned(), VersionedSet { set, api_version: version.to_owned(), applied: true });
        let new = self.prune(&merged, managers, last_set.as_ref());
        self.update_managers(live, &new, managers, manager, force)?;
        Ok((!values_equal(live, &new)).then_some(new))
    }

    /// Removes what the applier applied last time but not now, unless
    /// another manager (or the new configuration) owns it.
    fn prune(&self, merged: &Value, managers: &Managers, last_set: Option<&VersionedSet>) -> Value {
        let Some(last_set) = last_set.filter(|v| !v.set.is_empty()) else {
            return merged.clone();
        };
        let ensure = |set: &FieldSet| ensure_named_fields_are_members(set, self.schema);
        let pruned = remove_items(merged, &ensure(&last_set.set), self.schema);

        // addBackOwnedItems: what another manager (or the applier's new
        // configuration) owns comes back.
        let managed = managers.values().fold(FieldSet::new(), |all, v| all.union(&v.set));
        let merged_set = ensure(&to_field_set(merged, self.schema));
        let pruned_set = ensure(&to_field_set(&pruned, self.schema));
        let pruned = remove_items(merged, &merged_set.difference(&pruned_set.union(&ensure(&managed))), self.schema);

        // addBackDanglingItems: only what the applier owned last time goes.
        let pruned_set = ensure(&to_field_set(&pruned, self.schema));
        let removed = merged_set.difference(&pruned_set).intersection(&ensure(&last_set.set));
        remove_items(merged, &removed, self.schema)
    }
}
