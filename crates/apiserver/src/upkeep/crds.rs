//! The controllers of kube's apiextensions-apiserver, as one loop over the CRDs' watch
//! (upstream `pkg/controller/status/naming_controller.go`, `establish/`, `finalizer/` and the
//! handler's storage map in `pkg/apiserver/customresource_handler.go`):
//!
//! * **naming and establishing**: a CRD's requested names are accepted unless another CRD of
//!   its group uses them, then it is Established; both conditions are written in one status
//!   update, milliseconds after the create (kube writes them in two; clients wait for
//!   `Established`, which both give);
//! * **serving**: once its names are accepted, each served version gets a store with its own
//!   watch cache in the run-time registry ([`crate::customresources`]), installed *before*
//!   the status write that says so, so a client that sees `NamesAccepted` or `Established`
//!   finds the URLs answering and discovery listing them. A change of the spec or the names
//!   replaces the stores (watches on the old ones end, as kube ends them when it rebuilds a
//!   CRD's storage); a CRD that is gone stops being served;
//! * **finalizing**: a deleted CRD carries `customresourcecleanup.apiextensions.k8s.io`: its
//!   instances are deleted (each with its own finalizers honoured), then the condition
//!   `Terminating` turns False / `InstanceDeletionCompleted` and the finalizer goes, which
//!   deletes the CRD. A CRD never Established skips the instances (`NeverEstablished`).
//!
//! When the server starts, every stored CRD is served again before the server takes requests.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use listwatch_apiextensions::CustomResourceDefinition;
use listwatch_apiextensions::crd::CustomResourceDefinitionCondition;
use listwatch_apiextensions::names;
use listwatch_meta::{ApiError, Object, WatchEvent};
use serde_json::Value;

use super::follow::{Follower, follow};
use crate::customresources::conversion::{Converter, ConvertingStorage};
use crate::customresources::{ServedCrd, resource};
use crate::options::DeleteOptions;
use crate::registry::custom_strategy::CLEANUP_FINALIZER;
use crate::registry::update::{Step, Updated};
use crate::registry::{ResourceStore, editable, strategy};
use crate::state::ApiState;

/// How long a new store's watch cache may take to list before its CRD is served anyway (its
/// requests then get the cache's 429s until it is ready).
const CACHE_READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves every stored CRD, then follows the CRDs' changes.
pub async fn start(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let from = state.storage.current_revision().await.map_err(crate::registry::storage_error)?;
    let mut controller =
        Controller { state: Arc::downgrade(state), known: BTreeMap::new(), finalizing: Default::default() };
    controller.relist(state).await?;
    let (store, shutdown) = (state.crds().clone(), state.shutdown.clone());
    tokio::spawn(async move { follow(&store, from, shutdown, &mut controller).await });
    Ok(())
}

struct Controller {
    state: Weak<ApiState>,
    /// Every CRD as last seen, by name.
    known: BTreeMap<String, Arc<Object>>,
    /// CRDs whose finalizer runs now (shared with the finalizer tasks).
    finalizing: Arc<parking_lot::Mutex<HashSet<String>>>,
}

fn typed(object: &Object) -> Option<CustomResourceDefinition> {
    CustomResourceDefinition::from_value(&object.value()).ok()
}

impl Controller {
    /// Reads every CRD and reconciles each (those gone stop being served).
    async fn relist(&mut self, state: &Arc<ApiState>) -> Result<(), ApiError> {
        let listed = state.crds().list_all_now().await?;
        let before: Vec<String> = self.known.keys().cloned().collect();
        self.known = listed.into_iter().map(|o| (o.name().to_owned(), o)).collect();
        let mut names: Vec<String> = self.known.keys().cloned().collect();
        names.extend(before.into_iter().filter(|n| !self.known.contains_key(n)));
        for name in names {
            self.reconcile(state, &name).await;
        }
        Ok(())
    }

    /// Brings the served state of CRD `name`, and its status, in line with what is stored.
    async fn reconcile(&mut self, state: &Arc<ApiState>, name: &str) {
        let Some(object) = self.known.get(name).cloned() else {
            stop_serving(state, name);
            return;
        };
        let Some(crd) = typed(&object) else { return };
        let others: Vec<CustomResourceDefinition> =
            self.known.iter().filter(|(n, _)| n.as_str() != name).filter_map(|(_, o)| typed(o)).collect();
        let mut desired = crd.clone();
        let now = strategy::now_rfc3339();
        let renamed = names::accept_names(&mut desired, &others.iter().collect::<Vec<_>>(), &now);
        let established = names::establish(&mut desired, &now);
        serve(state, &desired).await;
        if renamed || established {
            match write_status(state, name, &others).await {
                Ok(Updated::Written(written)) => {
                    self.known.insert(name.to_owned(), written);
                }
                Ok(_) => {}
                // The next event (a change in between, or the deletion) reconciles again.
                Err(e) => tracing::debug!(crd = name, error = %e, "CRD status not written"),
            }
        }
        if is_finalizable(&crd) && self.finalizing.lock().insert(name.to_owned()) {
            tokio::spawn(finalize(self.state.clone(), name.to_owned(), self.finalizing.clone()));
        }
    }
}

/// The CRDs' changes, as [`follow`] reports them.
impl Follower for Controller {
    /// As long as the server is there (its shutdown ends the follow first).
    fn wanted(&self) -> bool {
        self.state.strong_count() > 0
    }

    async fn change(&mut self, event: &WatchEvent) {
        let Some(state) = self.state.upgrade() else { return };
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                self.known.insert(o.name().to_owned(), o.clone());
                self.reconcile(&state, o.name()).await;
            }
            WatchEvent::Deleted(o) => {
                self.known.remove(o.name());
                self.reconcile(&state, o.name()).await;
            }
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {}
        }
    }

    /// After a 410: everything again, and the revision to watch from.
    async fn expired(&mut self) -> Option<i64> {
        let state = self.state.upgrade()?;
        let now = state.storage.current_revision().await.ok()?;
        self.relist(&state).await.ok()?;
        Some(now)
    }
}

/// Installs, updates or stops the serving of `crd` as its state says: served (one store per
/// served version) once its names are accepted.
async fn serve(state: &ApiState, crd: &CustomResourceDefinition) {
    let name = crd.name().to_owned();
    if !names::is_served(crd) {
        let dropped = state.custom.set(&name, Some(ServedCrd { crd: Arc::new(crd.clone()), stores: Vec::new() }));
        end_watches(&dropped);
        return;
    }
    let current = state.custom.snapshot();
    let current = current.crds.get(&name);
    // The storage version's store first (when served), then the others in spec order.
    let mut versions: Vec<&str> = crd.spec.versions.iter().filter(|v| v.served).map(|v| v.name.as_str()).collect();
    versions.sort_by_key(|v| crd.storage_version().is_none_or(|s| s.name != *v));
    let mut stores = Vec::new();
    let mut fresh = Vec::new();
    for version in versions {
        let Some(resource) = resource::of(crd, version) else { continue };
        let existing = current.and_then(|c| c.stores.iter().find(|s| std::ptr::eq(s.resource, resource)));
        let store = match existing {
            Some(store) => store.clone(),
            None => {
                let store = match conversion_storage(state, crd, resource) {
                    Some(storage) => state.make_store_on(resource, storage),
                    None => state.make_store(resource),
                };
                fresh.push(store.clone());
                store
            }
        };
        stores.push(store);
    }
    for store in &fresh {
        if let Some(cache) = &store.cache
            && !cache.wait_ready(CACHE_READY_TIMEOUT).await
        {
            tracing::warn!(crd = name, "a custom resource's watch cache is not ready; serving it anyway");
        }
    }
    let dropped = state.custom.set(&name, Some(ServedCrd { crd: Arc::new(crd.clone()), stores }));
    end_watches(&dropped);
}

/// The storage of a version of a CRD converted by webhook: the server's, behind the
/// converter (the storage version's too: objects stored under an earlier storage version are
/// converted when read, as kube converts whatever version it decodes).
fn conversion_storage(
    state: &ApiState,
    crd: &CustomResourceDefinition,
    resource: &'static listwatch_meta::Resource,
) -> Option<Arc<dyn listwatch_storage::Storage>> {
    if crd.spec.conversion.as_ref().is_none_or(|c| c.strategy != "Webhook") {
        return None;
    }
    let services = state.config.webhook_services.clone();
    let stored = resource.storage_api_version();
    match Converter::new(crd, resource.api_version(), stored, resource.kind.to_owned(), services) {
        Ok(converter) => Some(Arc::new(ConvertingStorage::new(state.storage.clone(), converter))),
        Err(why) => {
            // Validation keeps such CRDs out; one stored before is served as with `None`.
            tracing::warn!(crd = crd.name(), why, "a conversion webhook cannot be used");
            None
        }
    }
}

fn stop_serving(state: &ApiState, name: &str) {
    end_watches(&state.custom.set(name, None));
}

/// Ends the watches of stores no longer served (their clients re-watch and find the new
/// store, or a 404).
fn end_watches(stores: &[Arc<ResourceStore>]) {
    for store in stores {
        if let Some(cache) = &store.cache {
            cache.drop_watchers();
        }
    }
}

/// Writes the naming and establishing controllers' status, recomputed on the stored CRD.
async fn write_status(state: &ApiState, name: &str, others: &[CustomResourceDefinition]) -> Result<Updated, ApiError> {
    let others: Vec<&CustomResourceDefinition> = others.iter().collect();
    let now = strategy::now_rfc3339();
    state
        .crds()
        .guaranteed_update(None, name, None, false, |existing| {
            let mut crd = CustomResourceDefinition::from_value(&existing.value()).map_err(ApiError::internal)?;
            names::accept_names(&mut crd, &others, &now);
            names::establish(&mut crd, &now);
            let mut object = editable(existing);
            object.insert("status".into(), serde_json::to_value(&crd.status).map_err(ApiError::internal)?);
            Ok(Step::Write(object))
        })
        .await
}

/// Whether the CRD is being deleted and waits for its cleanup.
fn is_finalizable(crd: &CustomResourceDefinition) -> bool {
    let deleting = crd.metadata.get("deletionTimestamp").is_some_and(|v| !v.is_null());
    let finalizers = crd.metadata.get("finalizers").and_then(Value::as_array);
    deleting && finalizers.is_some_and(|f| f.iter().any(|v| v == CLEANUP_FINALIZER))
}

fn condition(status: &str, reason: &str, message: &str) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: "Terminating".into(),
        status: status.into(),
        last_transition_time: None,
        reason: reason.into(),
        message: message.into(),
    }
}

/// kube's CRD finalizer: deletes the instances, then the finalizer (and so the CRD).
async fn finalize(state: Weak<ApiState>, name: String, finalizing: Arc<parking_lot::Mutex<HashSet<String>>>) {
    let mut wait = Duration::from_millis(50);
    loop {
        let Some(strong) = state.upgrade() else { break };
        if *strong.shutdown.borrow() {
            break;
        }
        match finalize_once(&strong, &name).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => tracing::warn!(crd = name, error = %e, "CRD cleanup failed; retrying"),
        }
        drop(strong);
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
    finalizing.lock().remove(&name);
}

/// One pass: true once the finalizer is gone (or the CRD is).
async fn finalize_once(state: &ApiState, name: &str) -> Result<bool, ApiError> {
    let Some(object) = state.crds().read(None, name).await? else { return Ok(true) };
    let Some(crd) = typed(&object) else { return Ok(true) };
    if !is_finalizable(&crd) {
        return Ok(true);
    }
    let done = if crd.is_condition_true("Established") {
        set_terminating(
            state,
            name,
            condition("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"),
            false,
        )
        .await?;
        if !delete_instances(state, name).await? {
            return Ok(false);
        }
        condition("False", "InstanceDeletionCompleted", "removed all instances")
    } else {
        condition("False", "NeverEstablished", "resource was never established")
    };
    set_terminating(state, name, done, true).await?;
    Ok(true)
}

/// Deletes what is left of the CRD's instances; true once there are none.
async fn delete_instances(state: &ApiState, name: &str) -> Result<bool, ApiError> {
    let snapshot = state.custom.snapshot();
    let Some(store) = snapshot.crds.get(name).and_then(|c| c.stores.first()).cloned() else { return Ok(true) };
    let objects = store.list_all_now().await?;
    if objects.is_empty() {
        return Ok(true);
    }
    for object in objects {
        let namespace = (!object.namespace().is_empty()).then_some(object.namespace());
        match store.delete(namespace, object.name(), &DeleteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(store.list_all_now().await?.is_empty())
}

/// Sets the Terminating condition through a status write; with `release`, also removes the
/// cleanup finalizer, which deletes the CRD when no other finalizer holds it.
async fn set_terminating(
    state: &ApiState,
    name: &str,
    terminating: CustomResourceDefinitionCondition,
    release: bool,
) -> Result<(), ApiError> {
    let now = strategy::now_rfc3339();
    let result = state
        .crds()
        .guaranteed_update(None, name, None, false, |existing| {
            let mut crd = CustomResourceDefinition::from_value(&existing.value()).map_err(ApiError::internal)?;
            names::set_condition(&mut crd, terminating.clone(), &now);
            let mut object = editable(existing);
            object.insert("status".into(), serde_json::to_value(&crd.status).map_err(ApiError::internal)?);
            if release
                && let Some(finalizers) =
                    object.get_mut("metadata").and_then(|m| m.get_mut("finalizers")).and_then(Value::as_array_mut)
            {
                finalizers.retain(|f| f != CLEANUP_FINALIZER);
                if finalizers.is_empty()
                    && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.shift_remove("finalizers");
                }
            }
            if strategy::should_delete_during_update(&object) {
                return Ok(Step::Delete);
            }
            Ok(Step::Write(object))
        })
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
