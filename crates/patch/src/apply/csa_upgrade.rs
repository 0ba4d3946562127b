//! What `kubectl apply --server-side` does on the client to move an object
//! from client-side apply to server-side apply (client-go's
//! `util/csaupgrade`): the fields of the client-side apply `Update` entry are
//! merged into the server-side applier's `Apply` entry, and the client-side
//! entry removed, sent as a JSON patch guarded by the resource version.
//! After that, fields dropped from the configuration are pruned on the next
//! apply as if they had always been applied server-side.
//!
//! The server needs none of this (it honours client-written managedFields);
//! it is here so tests can act as kubectl does.

use serde_json::{Value, json};

use super::fields_v1;

fn text<'v>(entry: &'v Value, key: &str) -> &'v str {
    entry.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn is_entry(entry: &Value, manager: &str, operation: &str, subresource: &str) -> bool {
    text(entry, "manager") == manager
        && text(entry, "operation") == operation
        && text(entry, "subresource") == subresource
}

/// The managedFields `entries` with each of `csa_managers`' `Update`
/// entries (for `subresource`, empty for the main resource) merged into
/// `ssa_manager`'s `Apply` entry, which takes the first client-side entry's
/// place if it does not exist yet (client-go's `UpgradeManagedFields`).
pub fn upgrade_managed_fields(
    entries: &[Value],
    csa_managers: &[&str],
    ssa_manager: &str,
    subresource: &str,
) -> Result<Vec<Value>, String> {
    let mut entries = entries.to_vec();
    for csa in csa_managers {
        let target = match entries.iter().position(|e| is_entry(e, ssa_manager, "Apply", subresource)) {
            Some(target) => target,
            None => {
                let Some(target) = entries.iter().position(|e| is_entry(e, csa, "Update", subresource)) else {
                    continue;
                };
                entries[target]["operation"] = json!("Apply");
                entries[target]["manager"] = json!(ssa_manager);
                target
            }
        };
        let decode = |entry: &Value| {
            fields_v1::decode(entry.get("fieldsV1").unwrap_or(&Value::Null))
                .map_err(|e| format!("failed to convert fields to set: {e}"))
        };
        let mut combined = decode(&entries[target])?;
        let api_version = text(&entries[target], "apiVersion").to_owned();
        if let Some(csa_entry) =
            entries.iter().find(|e| is_entry(e, csa, "Update", subresource) && text(e, "apiVersion") == api_version)
        {
            combined = combined.union(&decode(csa_entry)?);
        }
        entries[target]["fieldsV1"] = fields_v1::encode(&combined);
        entries.retain(|e| !is_entry(e, csa, "Update", subresource));
    }
    Ok(entries)
}

/// The JSON patch kubectl sends for [`upgrade_managed_fields`] on `object`:
/// replace `/metadata/managedFields`, and `/metadata/resourceVersion` with
/// the object's own as a lock. `None` when nothing would change.
pub fn upgrade_managed_fields_patch(
    object: &Value,
    csa_managers: &[&str],
    ssa_manager: &str,
    subresource: &str,
) -> Result<Option<Value>, String> {
    let entries = object.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default();
    let upgraded = upgrade_managed_fields(&entries, csa_managers, ssa_manager, subresource)?;
    if upgraded == entries {
        return Ok(None);
    }
    let managed_fields = if upgraded.is_empty() { Value::Null } else { Value::Array(upgraded) };
    let resource_version = object.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""));
    Ok(Some(json!([
        {"op": "replace", "path": "/metadata/managedFields", "value": managed_fields},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": resource_version}
    ])))
}
