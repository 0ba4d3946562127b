//! kube's guaranteed update: read the object, compute its new state, write it guarded by the
//! revision read, and on a conflict retry with the state storage returned (unless the client
//! asked for a specific resourceVersion: then the conflict is the client's 409). An update
//! that changes nothing writes nothing and keeps the resourceVersion.

use std::sync::Arc;

use listwatch_meta::object::to_storage_bytes;
use listwatch_meta::{ApiError, Object};
use listwatch_storage::{KeyRange, KeyValue, RangeRequest, StorageError};
use serde_json::{Map, Value};

use super::{ResourceStore, storage_error};

/// How many times a guaranteed update retries on conflicts before giving up (it only gives
/// up under extreme contention; kube retries without bound).
pub(crate) const MAX_UPDATE_ATTEMPTS: usize = 1000;

/// What a guaranteed-update step decided.
pub enum Step {
    /// Store this object (without resourceVersion).
    Write(Map<String, Value>),
    /// Delete the object instead (its finalizers are gone while it is being deleted).
    Delete,
}

/// The outcome of a guaranteed update.
pub enum Updated {
    Written(Arc<Object>),
    Unchanged(Arc<Object>),
    Deleted(Arc<Object>),
}

impl Updated {
    pub fn object(&self) -> &Arc<Object> {
        match self {
            Updated::Written(o) | Updated::Unchanged(o) | Updated::Deleted(o) => o,
        }
    }
}

/// kube's GuaranteedUpdate. `update` gets the current object (with its resourceVersion) and
/// returns what to store. `precondition_rv`: the client's resourceVersion; a mismatch is a 409
/// and never retried. A dry run computes the result and writes nothing.
impl ResourceStore {
    pub async fn guaranteed_update(
        &self,
        namespace: Option<&str>,
        name: &str,
        precondition_rv: Option<i64>,
        dry_run: bool,
        mut update: impl FnMut(&Object) -> Result<Step, ApiError>,
    ) -> Result<Updated, ApiError> {
        let store = self;
        let resource = store.resource;
        let gr = resource.group_resource();
        let key = store.key(store.scope(namespace), name);
        let mut current: Option<KeyValue> = read_kv(store, &key).await?;
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let Some(kv) = current.take() else {
                return Err(ApiError::not_found(&gr, name));
            };
            if precondition_rv.is_some_and(|rv| rv != kv.mod_revision) {
                return Err(ApiError::modified_conflict(&gr, name));
            }
            let existing = Object::from_storage(resource, &kv.value, kv.mod_revision).map_err(ApiError::internal)?;
            let step = update(&existing)?;
            if dry_run {
                return Ok(match step {
                    Step::Delete => Updated::Deleted(Arc::new(existing)),
                    Step::Write(new) => {
                        let object = Object::from_value(resource, Value::Object(new), existing.resource_version());
                        Updated::Unchanged(Arc::new(object.map_err(ApiError::internal)?))
                    }
                });
            }
            match step {
                Step::Delete => match store.storage.delete(key.as_bytes(), Some(kv.mod_revision)).await {
                    Ok(deleted) => {
                        let last = Object::from_storage(resource, &deleted.prev.value, deleted.revision)
                            .map_err(ApiError::internal)?;
                        return Ok(Updated::Deleted(Arc::new(last)));
                    }
                    Err(StorageError::Conflict { current: now }) => current = now,
                    Err(e) => return Err(storage_error(e)),
                },
                Step::Write(new) => {
                    let bytes = to_storage_bytes(resource, Value::Object(new.clone()));
                    // The same content is no change, in whatever order its fields come (a merge
                    // or the defaulting may place them differently than the stored copy; Go's
                    // structs have no order to differ in).
                    if bytes == kv.value || same_content(&kv.value, &bytes) {
                        return Ok(Updated::Unchanged(Arc::new(existing)));
                    }
                    match store.storage.update(key.as_bytes(), bytes, kv.mod_revision).await {
                        Ok(written) => {
                            let object = Object::from_value(resource, Value::Object(new), written.revision)
                                .map_err(ApiError::internal)?;
                            return Ok(Updated::Written(Arc::new(object)));
                        }
                        Err(StorageError::Conflict { current: now }) => {
                            if precondition_rv.is_some() {
                                return Err(ApiError::modified_conflict(&gr, name));
                            }
                            current = now;
                        }
                        Err(e) => return Err(storage_error(e)),
                    }
                }
            }
        }
        Err(ApiError::conflict(&gr, name, "too many concurrent updates; please try again"))
    }
}

pub(crate) async fn read_kv(store: &ResourceStore, key: &str) -> Result<Option<KeyValue>, ApiError> {
    let resp = store.storage.range(RangeRequest::new(KeyRange::key(key.to_string()))).await.map_err(storage_error)?;
    Ok(resp.kvs.into_iter().next())
}

/// Whether two stored JSON values hold the same content, field order aside (serde_json's maps
/// compare as maps).
fn same_content(stored: &[u8], new: &[u8]) -> bool {
    let parse = serde_json::from_slice::<Value>;
    matches!((parse(stored), parse(new)), (Ok(stored), Ok(new)) if stored == new)
}
