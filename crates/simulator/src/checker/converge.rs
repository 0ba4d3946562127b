//! Whether a client ended where storage did: its final store against a consistent LIST of its
//! scope at the end of history. The LIST is computed from the change log rather than asked of the
//! server, so a server that lists wrongly cannot make a wrong client look right.

use std::collections::BTreeMap;

use crate::record::ObjectState;

use crate::view::{Held, ObjectKey};

/// Every key where `store` differs from `expected`, in namespace/name order, said for a person.
pub(crate) fn differences(expected: &BTreeMap<ObjectKey, Held>, store: &[ObjectState]) -> Vec<String> {
    let mut differences = Vec::new();
    let mut stored: BTreeMap<ObjectKey, &ObjectState> = BTreeMap::new();
    for object in store {
        let key = ObjectKey::new(&object.namespace, &object.name);
        if stored.insert(key.clone(), object).is_some() {
            differences.push((key.clone(), format!("{key} is in the store twice")));
        }
    }
    for (key, held) in expected {
        match stored.get(key) {
            None => differences.push((key.clone(), format!("{key} (rv {}) is missing from the store", held.revision))),
            Some(object) => {
                if let Some(what) = mismatch(held, object) {
                    differences.push((key.clone(), format!("{key} differs: {what}")));
                }
            }
        }
    }
    for (key, object) in &stored {
        if !expected.contains_key(key) {
            differences.push((
                key.clone(),
                format!("{key} (rv {}) is in the store but not in the LIST", object.resource_version),
            ));
        }
    }
    differences.sort_by(|a, b| a.0.cmp(&b.0));
    differences.into_iter().map(|(_, difference)| difference).collect()
}

/// How a stored object differs from the state it should hold, if it does.
fn mismatch(held: &Held, object: &ObjectState) -> Option<String> {
    let mut what = Vec::new();
    if object.uid != held.uid {
        what.push(format!("uid {} (LIST: {})", object.uid, held.uid));
    }
    if object.resource_version != held.revision {
        what.push(format!("rv {} (LIST: {})", object.resource_version, held.revision));
    }
    if object.fingerprint != held.fingerprint {
        what.push(format!("fingerprint {:#x} (LIST: {:#x})", object.fingerprint, held.fingerprint));
    }
    (!what.is_empty()).then(|| what.join(", "))
}
