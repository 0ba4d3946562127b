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

/// One try of a guaranteed update: the object as storage held it when read.
pub struct Attempt {
    kv: KeyValue,
    /// The stored object, with its resourceVersion.
    pub existing: Object,
}

/// What writing one try's step came to.
pub enum Tried {
    /// Written, deleted, or nothing to write.
    Done(Updated),
    /// Someone wrote first: try again against what storage holds now (`None`: gone).
    Conflict(Option<KeyValue>),
}

/// kube's GuaranteedUpdate. `update` gets the current object (with its resourceVersion) and
/// returns what to store. `precondition_rv`: the client's resourceVersion; a mismatch is a 409
/// and never retried. A dry run computes the result and writes nothing.
///
/// A step that must wait (admission webhooks) runs the same loop itself with the pieces
/// below: [`ResourceStore::update_first_read`], then per try [`ResourceStore::update_attempt`]
/// and [`ResourceStore::update_write`].
impl ResourceStore {
    pub async fn guaranteed_update(
        &self,
        namespace: Option<&str>,
        name: &str,
        precondition_rv: Option<i64>,
        dry_run: bool,
        mut update: impl FnMut(&Object) -> Result<Step, ApiError>,
    ) -> Result<Updated, ApiError> {
        let mut current = self.update_first_read(namespace, name).await?;
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let attempt = self.update_attempt(current.take(), name, precondition_rv)?;
            let step = update(&attempt.existing)?;
            match self.update_write(namespace, name, attempt, step, precondition_rv, dry_run).await? {
                Tried::Done(updated) => return Ok(updated),
                Tried::Conflict(now) => current = now,
            }
        }
        Err(self.too_many_updates(name))
    }

    /// The first read of a guaranteed update.
    pub async fn update_first_read(&self, namespace: Option<&str>, name: &str) -> Result<Option<KeyValue>, ApiError> {
        read_kv(self, &self.key(self.scope(namespace), name)).await
    }

    /// One try against `current` (what storage holds): 404 when there is nothing, 409 when
    /// the client's resourceVersion is not the stored one.
    pub fn update_attempt(
        &self,
        current: Option<KeyValue>,
        name: &str,
        precondition_rv: Option<i64>,
    ) -> Result<Attempt, ApiError> {
        let gr = self.resource.group_resource();
        let Some(kv) = current else {
            return Err(ApiError::not_found(&gr, name));
        };
        if precondition_rv.is_some_and(|rv| rv != kv.mod_revision) {
            return Err(ApiError::modified_conflict(&gr, name));
        }
        let existing = Object::from_storage(self.resource, &kv.value, kv.mod_revision).map_err(ApiError::internal)?;
        Ok(Attempt { kv, existing })
    }

    /// Writes one try's `step`, guarded by the revision the try read.
    pub async fn update_write(
        &self,
        namespace: Option<&str>,
        name: &str,
        attempt: Attempt,
        step: Step,
        precondition_rv: Option<i64>,
        dry_run: bool,
    ) -> Result<Tried, ApiError> {
        let resource = self.resource;
        let gr = resource.group_resource();
        let key = self.key(self.scope(namespace), name);
        let Attempt { kv, existing } = attempt;
        if dry_run {
            return Ok(Tried::Done(match step {
                Step::Delete => Updated::Deleted(Arc::new(existing)),
                Step::Write(new) => {
                    let object = Object::from_value(resource, Value::Object(new), existing.resource_version());
                    Updated::Unchanged(Arc::new(object.map_err(ApiError::internal)?))
                }
            }));
        }
        match step {
            Step::Delete => match self.storage.delete(key.as_bytes(), Some(kv.mod_revision)).await {
                Ok(deleted) => {
                    let last = Object::from_storage(resource, &deleted.prev.value, deleted.revision)
                        .map_err(ApiError::internal)?;
                    Ok(Tried::Done(Updated::Deleted(Arc::new(last))))
                }
                Err(StorageError::Conflict { current: now }) => Ok(Tried::Conflict(now)),
                Err(e) => Err(storage_error(e)),
            },
            Step::Write(new) => {
                let bytes = to_storage_bytes(resource, Value::Object(new.clone()));
                // The same content is no change, in whatever order its fields come (a merge
                // or the defaulting may place them differently than the stored copy; Go's
                // structs have no order to differ in).
                if bytes == kv.value || same_content(&kv.value, &bytes) {
                    return Ok(Tried::Done(Updated::Unchanged(Arc::new(existing))));
                }
                match self.storage.update(key.as_bytes(), bytes, kv.mod_revision).await {
                    Ok(written) => {
                        let object = Object::from_value(resource, Value::Object(new), written.revision)
                            .map_err(ApiError::internal)?;
                        Ok(Tried::Done(Updated::Written(Arc::new(object))))
                    }
                    Err(StorageError::Conflict { current: now }) => {
                        if precondition_rv.is_some() {
                            return Err(ApiError::modified_conflict(&gr, name));
                        }
                        Ok(Tried::Conflict(now))
                    }
                    Err(e) => Err(storage_error(e)),
                }
            }
        }
    }

    /// The 409 of an update that lost [`MAX_UPDATE_ATTEMPTS`] races in a row.
    pub fn too_many_updates(&self, name: &str) -> ApiError {
        ApiError::conflict(&self.resource.group_resource(), name, "too many concurrent updates; please try again")
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
