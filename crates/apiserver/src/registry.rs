//! The registry: one resource's objects as every caller above storage sees them (kube's
//! generic registry `Store` with its cacher delegator), with no knowledge of HTTP.
//!
//! * this file: [`ResourceStore`], where a resource's objects live (keys, prefixes, its watch
//!   cache if cached) and reads straight from storage;
//! * [`delegator`]: GET, LIST and WATCH with kube-apiserver's resourceVersion semantics, each
//!   deciding once whether the watch cache or storage serves it (kube's
//!   `cacher/delegator.go`); [`storage_list`] is the paged list from storage it falls back to;
//! * [`update`]: the guaranteed update (read, change, write guarded by the revision read);
//! * [`delete`]: deletion with preconditions, finalizers and grace periods, announcing
//!   objects it marks for deletion to the controllers;
//! * [`strategy`]: what the server owns in an object and how each kind treats writes, with
//!   [`custom_strategy`] for CRDs and custom resources.
//!
//! The HTTP handlers, the controllers (garbage collector, namespace cleanup) and the debug API
//! all go through these; none of them picks between cache and storage itself.

use std::sync::Arc;

use listwatch_meta::{ApiError, Object, Resource};
use listwatch_storage::{KeyRange, RangeRequest, Revision, Storage, StorageError};
use listwatch_watchcache::{Predicate, WatchCache};
use serde_json::{Map, Value, json};

use crate::options::ListOptions;

pub mod custom_strategy;
pub mod delegator;
pub mod delete;
pub mod storage_list;
pub mod strategy;
pub mod update;

pub use delegator::{ListResult, WatchSource};
pub use delete::{DeletionNotices, MarkedForDeletion};
pub use storage_list::expired_continue;

/// One resource's objects: its storage, its watch cache, and how its keys are made.
pub struct ResourceStore {
    pub resource: &'static Resource,
    pub storage: Arc<dyn Storage>,
    /// `None` when this resource is served uncached.
    pub cache: Option<WatchCache>,
    /// The storage root (`--etcd-prefix`, `/registry` by default).
    pub root: String,
    /// Consistent reads may be served from the cache (storage answers progress requests).
    pub consistent_reads_from_cache: bool,
    /// Page size of the lists an uncached watch starts from (`--watch-cache` off).
    pub list_page_size: i64,
    /// Where objects this store marks for deletion are announced (see [`delete`]).
    pub deletions: DeletionNotices,
}

impl ResourceStore {
    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        self.resource.object_key(&self.root, namespace, name)
    }

    /// Storage prefix of a namespace's objects (or all of them).
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        self.resource.namespace_prefix(&self.root, namespace)
    }

    /// The collection's prefix below the storage root (`/pods`, `/group/plural`): kube's
    /// `resource_prefix` label of the cache's metrics.
    pub fn cache_prefix(&self) -> String {
        let prefix = self.prefix(None);
        prefix.strip_prefix(self.root.as_str()).unwrap_or(&prefix).trim_end_matches('/').to_owned()
    }

    /// The object's namespace as the storage key wants it (`None` for cluster-scoped kinds).
    pub fn scope<'a>(&self, namespace: Option<&'a str>) -> Option<&'a str> {
        if self.resource.namespaced { namespace } else { None }
    }

    /// Reads one object from storage at the latest revision (a consistent GET).
    pub async fn read(&self, namespace: Option<&str>, name: &str) -> Result<Option<Arc<Object>>, ApiError> {
        let key = self.key(self.scope(namespace), name);
        let resp = self.storage.range(RangeRequest::new(KeyRange::key(key))).await.map_err(storage_error)?;
        match resp.kvs.first() {
            None => Ok(None),
            Some(kv) => Object::from_storage(self.resource, &kv.value, kv.mod_revision)
                .map(|o| Some(Arc::new(o)))
                .map_err(|e| ApiError::internal(format!("stored object cannot be decoded: {e}"))),
        }
    }

    /// Reads one object or answers 404.
    pub async fn read_existing(&self, namespace: Option<&str>, name: &str) -> Result<Arc<Object>, ApiError> {
        self.read(namespace, name).await?.ok_or_else(|| ApiError::not_found(&self.resource.group_resource(), name))
    }

    /// The predicate of a list or watch's selectors (`None` when it has none).
    pub fn predicate(&self, options: &ListOptions) -> Option<Predicate> {
        if !options.has_selectors() {
            return None;
        }
        let labels = options.label_selector.clone();
        let fields = options.field_selector.clone();
        let resource = self.resource;
        Some(Arc::new(move |o: &Object| {
            labels.matches(o.labels()) && fields.matches(|f| o.field(resource, f).map(str::to_string))
        }))
    }

    /// Storage's current revision.
    pub async fn current_revision(&self) -> Result<Revision, ApiError> {
        self.storage.current_revision().await.map_err(storage_error)
    }
}

/// A storage failure as the client sees it (the cases a caller does not handle itself).
pub fn storage_error(e: StorageError) -> ApiError {
    match e {
        StorageError::ValueTooLarge { limit, .. } => ApiError::request_entity_too_large(format!("limit is {limit}")),
        StorageError::Compacted { .. } => ApiError::expired("The resourceVersion for the provided list is too old."),
        StorageError::FutureRevision { current_revision } => {
            ApiError::too_large_resource_version(current_revision + 1, current_revision, 0)
        }
        StorageError::Unavailable(msg) => ApiError::service_unavailable(msg),
        other => ApiError::internal(other),
    }
}

/// The `metadata` of an object being edited, made an object if it is missing or not one.
pub(crate) fn metadata_mut(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = object.entry("metadata").or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut().expect("an object")
}

/// The object without its resourceVersion, as a map to edit.
pub(crate) fn editable(object: &Object) -> Map<String, Value> {
    let Value::Object(mut map) = object.value() else { unreachable!("objects are JSON objects") };
    metadata_mut(&mut map).shift_remove("resourceVersion");
    map
}
