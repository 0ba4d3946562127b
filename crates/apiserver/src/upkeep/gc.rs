//! A small garbage collector: what kube-controller-manager's does for `propagationPolicy`, and
//! for owner references that name no existing owner.
//!
//! * **Background** (the default): once an owner is gone, objects whose `ownerReferences`
//!   name its uid are deleted (their own dependents follow the same way), unless another of
//!   their owners exists: then only the reference to the one gone is removed (below).
//! * **Foreground**: the owner is kept with the `foregroundDeletion` finalizer while its
//!   dependents are deleted; then the finalizer is removed, which deletes the owner.
//! * **Orphan**: the owner is kept with the `orphan` finalizer while the references to it are
//!   removed from its dependents; then the finalizer goes and the owner with it.
//! * **Dangling references**: an object added or changed with `ownerReferences` has its owners
//!   looked up, as kube's collector does for an owner it has not observed (upstream
//!   `pkg/controller/garbagecollector/garbagecollector.go`: `attemptToDeleteItem`,
//!   `classifyReferences`, `isDangling`). apiVersion and kind give the resource; the owner is
//!   read by name in the dependent's namespace (cluster-wide for a cluster-scoped kind, so a
//!   reference to an owner in another namespace dangles, as kubernetes.io's "Owners and
//!   Dependents" says); it is absent if storage has no such object or one with another uid.
//!   When every owner is absent the dependent is deleted (Background, or the policy its own
//!   `orphan` / `foregroundDeletion` finalizer asks for, with uid and resourceVersion
//!   preconditions, upstream `operations.go` `deleteObject`); when some exist, the dangling
//!   references are removed from it instead. An owner whose apiVersion/kind this server does
//!   not serve, or a namespaced owner of a cluster-scoped dependent, is not absent: nothing is
//!   done (kube logs and retries; here the reconcile that follows a CRD's new resources checks
//!   such dependents again). Objects already being deleted are left alone.
//!
//! Like kube's collector, it learns of owners through watches (one per resource, custom
//! resources included from the moment their CRD serves them): a DELETED
//! event queues the owner's dependents for the check above, a MODIFIED that carries `orphan` or
//! `foregroundDeletion` with a deletionTimestamp queues that work, and an ADDED or MODIFIED
//! object whose JSON mentions `ownerReferences` is queued for the check itself. Whatever path
//! deleted the owner (a DELETE, its last finalizer removed, a pod's grace period, a namespace
//! going) is covered. When it starts, and whenever a watch had to restart, it reconciles: every
//! object with owner references is checked.
//!
//! Owners are looked up in storage (a consistent read), never in the collector's own view of
//! the objects: a dependent created a moment after its owner may reach the collector before the
//! owner's ADDED event does, and must not be taken for an orphan.
//!
//! The deletion of an object that no dependent names as its owner (most deletions: pods,
//! events) is dropped before a pass ([`KnownOwners`]): the collector remembers the owner uids
//! its dependents name, from their events and from each reconcile.
//!
//! Work is batched: one pass serves every job queued since the last pass. It lists the objects
//! only if an owner went (once for all of them) or to reconcile, so deleting a namespace with
//! thousands of objects costs a few passes, not one per object; it reads each owner at most
//! once, so thousands of pods of one ReplicaSet created together cost one read. A pass only
//! decodes objects whose JSON mentions `ownerReferences`, and of those only the references,
//! finalizers and deletionTimestamp.
//!
//! Sources (the project's spec does not cover the collector): kubernetes/kubernetes
//! `pkg/controller/garbagecollector/` (`garbagecollector.go`, `operations.go`,
//! `graph_builder.go`), and <https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use listwatch_meta::{ApiError, Object};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use listwatch_meta::WatchEvent;

use super::follow::{Follower, follow};
use crate::options::DeleteOptions;
use crate::registry::ResourceStore;
use crate::registry::update::Step;
use crate::state::ApiState;

/// Work for the collector.
pub enum Job {
    /// The owner with this uid is gone: check its dependents.
    OwnerDeleted { uid: String },
    /// The owner is being deleted in the foreground or orphaning: finish that.
    OwnerFinalizing {
        group: &'static str,
        plural: &'static str,
        namespace: Option<String>,
        name: String,
        uid: String,
        finalizer: String,
    },
    /// An object with owner references was added or changed (this version): check that its
    /// owners exist.
    Dependent { store: Arc<ResourceStore>, object: Arc<Object> },
}

/// What the watches report to the collector.
enum Signal {
    Job(Job),
    /// A watch restarted: events may have been missed.
    Reconcile,
}

/// Starts the collector; its watches begin at storage's revision now, so nothing deleted
/// after this call is missed.
pub async fn start(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let from = state.storage.current_revision().await.map_err(crate::registry::storage_error)?;
    let (tx, rx) = mpsc::unbounded_channel();
    let stores = state.stores();
    for store in &stores {
        tokio::spawn(watch_owners(Arc::downgrade(state), store.clone(), from, tx.clone()));
    }
    tokio::spawn(follow_custom_resources(Arc::downgrade(state), stores, tx));
    tokio::spawn(run(Arc::downgrade(state), rx));
    Ok(())
}

/// Watches the stores CRDs add while the server runs, as those it started with. A new store
/// is watched from storage's revision then, and a reconcile finds what happened before.
async fn follow_custom_resources(
    state: Weak<ApiState>,
    mut watched: Vec<Arc<ResourceStore>>,
    signals: mpsc::UnboundedSender<Signal>,
) {
    let Some(mut changes) = state.upgrade().map(|s| s.custom.subscribe()) else { return };
    while changes.changed().await.is_ok() {
        let Some(strong) = state.upgrade() else { return };
        let current = strong.stores();
        watched.retain(|w| current.iter().any(|s| Arc::ptr_eq(s, w)));
        let added: Vec<Arc<ResourceStore>> =
            current.into_iter().filter(|s| !watched.iter().any(|w| Arc::ptr_eq(s, w))).collect();
        if added.is_empty() {
            continue;
        }
        let Ok(from) = strong.storage.current_revision().await else { continue };
        for store in added {
            tokio::spawn(watch_owners(state.clone(), store.clone(), from, signals.clone()));
            watched.push(store);
        }
        let _ = signals.send(Signal::Reconcile);
    }
}

/// Follows one resource's changes from `from` and turns them into jobs.
async fn watch_owners(
    state: Weak<ApiState>,
    store: Arc<ResourceStore>,
    from: i64,
    signals: mpsc::UnboundedSender<Signal>,
) {
    let Some(shutdown) = state.upgrade().map(|s| s.shutdown.clone()) else { return };
    let mut owners = OwnerWatch { state, store: store.clone(), signals };
    follow(&store, from, shutdown, &mut owners).await;
}

/// One resource's watch, as the collector reads it.
struct OwnerWatch {
    state: Weak<ApiState>,
    store: Arc<ResourceStore>,
    signals: mpsc::UnboundedSender<Signal>,
}

impl Follower for OwnerWatch {
    /// While the server serves the resource (a custom resource's store goes when its CRD
    /// changes or goes).
    fn wanted(&self) -> bool {
        self.state.upgrade().is_some_and(|s| s.stores().iter().any(|s| Arc::ptr_eq(s, &self.store)))
    }

    async fn change(&mut self, event: &WatchEvent) {
        match event {
            WatchEvent::Deleted(o) => {
                let _ = self.signals.send(Signal::Job(Job::OwnerDeleted { uid: o.uid().to_string() }));
            }
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                for finalizer in pending_gc_finalizers(o) {
                    let _ = self.signals.send(Signal::Job(Job::OwnerFinalizing {
                        group: self.store.resource.group,
                        plural: self.store.resource.plural,
                        namespace: namespace_of(o).map(String::from),
                        name: o.name().to_string(),
                        uid: o.uid().to_string(),
                        finalizer,
                    }));
                }
                if mentions_owner_references(o) {
                    // Checked in the next pass (kube's graph builder queues a dependent of an
                    // owner it has not observed the same way).
                    let _ =
                        self.signals.send(Signal::Job(Job::Dependent { store: self.store.clone(), object: o.clone() }));
                }
            }
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {}
        }
    }

    /// After a 410: the next watch starts from storage's revision now, and a reconcile finds
    /// what may have been missed in between.
    async fn expired(&mut self) -> Option<i64> {
        // The revision first: the reconcile's listing comes after it, so nothing in between
        // is missed.
        let now = match self.state.upgrade() {
            Some(state) => state.storage.current_revision().await.ok(),
            None => None,
        };
        let _ = self.signals.send(Signal::Reconcile);
        now
    }
}

/// The GC finalizers of an object being deleted.
fn pending_gc_finalizers(object: &Object) -> Vec<String> {
    if !memchr_contains(object.json(), b"\"deletionTimestamp\"") {
        return Vec::new();
    }
    let value = object.value();
    value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .filter(|f| *f == "orphan" || *f == "foregroundDeletion")
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The shortest and longest wait before a pass that has work left over (foreground owners
/// waiting for their dependents; failures double the wait up to the longest).
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The uids that some object names as an owner, so that the deletion of anything else (most
/// deletions: pods, events) costs no pass. Filled from every dependent the collector sees and
/// from each reconcile's listing; an owner leaves it once its deletion was handled. Until the
/// first reconcile has listed every dependent, nothing is filtered.
#[derive(Default)]
struct KnownOwners {
    uids: HashSet<String>,
    complete: bool,
}

impl KnownOwners {
    /// Learns the owners the batch's dependents name, then drops the deletions of objects
    /// nothing names (a dependent that names one later is checked on its own: its owner is
    /// absent from storage).
    fn filter(&mut self, batch: Vec<Job>) -> Vec<Job> {
        for job in &batch {
            if let Job::Dependent { object, .. } = job {
                self.learn(object);
            }
        }
        batch
            .into_iter()
            .filter(|job| match job {
                Job::OwnerDeleted { uid } => !self.complete || self.uids.contains(uid),
                _ => true,
            })
            .collect()
    }

    fn learn(&mut self, object: &Object) {
        if let Some(meta) = dependent_meta(object) {
            self.uids.extend(meta.owner_references.into_iter().map(|r| r.uid));
        }
    }

    /// After a pass: the owners whose deletion it handled are forgotten.
    fn forget(&mut self, handled: &[String]) {
        for uid in handled {
            self.uids.remove(uid);
        }
    }
}

async fn run(state: Weak<ApiState>, mut signals: mpsc::UnboundedReceiver<Signal>) {
    let mut pending: Vec<Job> = Vec::new();
    let mut owners = KnownOwners::default();
    // Owners may have gone while the server was down.
    let mut reconcile = true;
    let mut wait = RETRY_MIN;
    loop {
        if pending.is_empty() && !reconcile {
            match signals.recv().await {
                Some(Signal::Job(job)) => pending.push(job),
                Some(Signal::Reconcile) => reconcile = true,
                None => return,
            }
        }
        while let Ok(signal) = signals.try_recv() {
            match signal {
                Signal::Job(job) => pending.push(job),
                Signal::Reconcile => reconcile = true,
            }
        }
        let Some(state) = state.upgrade() else { return };
        if *state.shutdown.borrow() {
            return;
        }
        let batch = owners.filter(std::mem::take(&mut pending));
        let reconciling = std::mem::take(&mut reconcile);
        let handled: Vec<String> = batch
            .iter()
            .filter_map(|job| match job {
                Job::OwnerDeleted { uid } => Some(uid.clone()),
                _ => None,
            })
            .collect();
        let outcome = pass(&state, batch, reconciling).await;
        for object in &outcome.listed {
            owners.learn(object);
        }
        owners.complete |= reconciling && !outcome.reconcile_again;
        let retried: HashSet<&str> = outcome
            .retry
            .iter()
            .filter_map(|job| match job {
                Job::OwnerDeleted { uid } => Some(uid.as_str()),
                _ => None,
            })
            .collect();
        let done: Vec<String> = handled.into_iter().filter(|uid| !retried.contains(uid.as_str())).collect();
        owners.forget(&done);
        pending.extend(outcome.retry);
        reconcile |= outcome.reconcile_again;
        wait = if outcome.failed { (wait * 2).min(RETRY_MAX) } else { RETRY_MIN };
        if !pending.is_empty() || reconcile {
            // Foreground owners wait for their dependents to go; failures wait for storage.
            drop(state);
            tokio::time::sleep(wait).await;
        }
    }
}

/// What a pass leaves for the next one.
#[derive(Default)]
struct Outcome {
    /// Jobs to run again (foreground owners whose dependents are still there, failures).
    retry: Vec<Job>,
    /// The reconcile could not list the objects.
    reconcile_again: bool,
    /// Something failed (the next pass waits longer).
    failed: bool,
    /// The objects a reconcile listed (every object with owner references).
    listed: Vec<Arc<Object>>,
}

/// Where an object lives: (group, plural, namespace, name).
type ObjectKey = (&'static str, &'static str, Option<String>, String);

/// Objects to check, one version per object (the newest seen).
#[derive(Default)]
struct Candidates {
    by_key: HashMap<ObjectKey, (Arc<ResourceStore>, Arc<Object>)>,
}

impl Candidates {
    fn add(&mut self, store: Arc<ResourceStore>, object: Arc<Object>) {
        let key = (
            store.resource.group,
            store.resource.plural,
            namespace_of(&object).map(String::from),
            object.name().to_string(),
        );
        match self.by_key.get_mut(&key) {
            Some(seen) if seen.1.resource_version() >= object.resource_version() => {}
            Some(seen) => *seen = (store, object),
            None => {
                self.by_key.insert(key, (store, object));
            }
        }
    }
}

/// One pass over the queued jobs (and, with `reconcile`, over every object with owners).
///
/// Order matters: every object to check is listed or received before the first owner is read,
/// so an owner read as absent was absent after the dependent was written (a dependent created
/// after its owner always finds it), and the absence may be cached for the whole pass.
async fn pass(state: &ApiState, jobs: Vec<Job>, reconcile: bool) -> Outcome {
    let mut outcome = Outcome::default();
    let mut gone = Vec::new();
    let mut finalizing = Vec::new();
    let mut candidates = Candidates::default();
    for job in jobs {
        match job {
            Job::OwnerDeleted { uid } => gone.push(uid),
            Job::OwnerFinalizing { .. } => finalizing.push(job),
            Job::Dependent { store, object } => candidates.add(store, object),
        }
    }
    if reconcile {
        match owned_objects(state).await {
            Ok(owned) => {
                for (store, object) in owned {
                    outcome.listed.push(object.clone());
                    candidates.add(store, object);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "garbage collector could not reconcile");
                outcome.reconcile_again = true;
                outcome.failed = true;
            }
        }
    }
    // One listing serves every owner that went or is finalizing.
    let owners: HashSet<String> = gone
        .iter()
        .cloned()
        .chain(finalizing.iter().filter_map(|j| match j {
            Job::OwnerFinalizing { uid, .. } => Some(uid.clone()),
            _ => None,
        }))
        .collect();
    let found = if owners.is_empty() {
        Dependents::new()
    } else {
        match dependents(state, &owners).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "garbage collection pass failed");
                outcome.failed = true;
                outcome.retry.extend(gone.into_iter().map(|uid| Job::OwnerDeleted { uid }));
                outcome.retry.extend(finalizing);
                gone = Vec::new();
                finalizing = Vec::new();
                Dependents::new()
            }
        }
    };
    // The dependents of an owner that went are checked like any other (kube queues them for
    // `attemptToDeleteItem`): deleted if no other owner of theirs exists.
    for uid in &gone {
        for (store, dependent) in found.get(uid).into_iter().flatten() {
            candidates.add(store.clone(), dependent.clone());
        }
    }
    for job in finalizing {
        let Job::OwnerFinalizing { group, plural, namespace, name, uid, finalizer } = job else { continue };
        let deps = found.get(&uid).map(Vec::as_slice).unwrap_or_default();
        if finalizer == "orphan" {
            for (store, dependent) in deps {
                remove_owner_references(store, dependent, &[uid.as_str()]).await;
            }
        } else if !deps.is_empty() {
            for (store, dependent) in deps {
                delete_dependent(store, dependent).await;
            }
            outcome.retry.push(Job::OwnerFinalizing { group, plural, namespace, name, uid, finalizer });
            continue;
        }
        let Some(store) = state.stores().into_iter().find(|s| s.resource.group == group && s.resource.plural == plural)
        else {
            continue;
        };
        remove_finalizer(&store, namespace.as_deref(), &name, &uid, &finalizer).await;
    }
    let mut lookups = OwnerLookups::default();
    for (store, object) in candidates.by_key.into_values() {
        if let Err(e) = check_dependent(state, &mut lookups, &store, &object).await {
            tracing::warn!(name = object.name(), error = %e, "garbage collector could not check a dependent's owners");
            outcome.failed = true;
            outcome.retry.push(Job::Dependent { store, object });
        }
    }
    outcome
}

/// Every object that mentions owner references (the reconcile's candidates).
async fn owned_objects(state: &ApiState) -> Result<Vec<(Arc<ResourceStore>, Arc<Object>)>, ApiError> {
    let mut owned = Vec::new();
    for store in state.stores() {
        for object in store.list_all_now().await? {
            if mentions_owner_references(&object) {
                owned.push((store.clone(), object));
            }
        }
    }
    Ok(owned)
}

/// One entry of `metadata.ownerReferences`, as far as the collector needs it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct OwnerReference {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
}

/// The part of an object's metadata the collector reads (serde skips the rest unparsed).
#[derive(Debug, Default, Deserialize)]
struct DependentMeta {
    #[serde(rename = "ownerReferences", default)]
    owner_references: Vec<OwnerReference>,
    #[serde(rename = "deletionTimestamp", default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    finalizers: Vec<String>,
}

#[derive(Deserialize)]
struct DependentView {
    #[serde(default)]
    metadata: DependentMeta,
}

fn mentions_owner_references(object: &Object) -> bool {
    memchr_contains(object.json(), b"\"ownerReferences\"")
}

/// The metadata the collector needs, if the object has owner references.
fn dependent_meta(object: &Object) -> Option<DependentMeta> {
    if !mentions_owner_references(object) {
        return None;
    }
    let view: DependentView = serde_json::from_slice(object.json()).ok()?;
    (!view.metadata.owner_references.is_empty()).then_some(view.metadata)
}

/// Whether `needle` occurs in `haystack` (runs on every event the collector's watches see).
fn memchr_contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// Owner uid → the objects that reference it.
type Dependents = HashMap<String, Vec<(Arc<ResourceStore>, Arc<Object>)>>;

async fn dependents(state: &ApiState, owners: &HashSet<String>) -> Result<Dependents, ApiError> {
    let mut found = Dependents::new();
    for store in state.stores() {
        for object in store.list_all_now().await? {
            let Some(meta) = dependent_meta(&object) else { continue };
            for reference in meta.owner_references {
                if owners.contains(&reference.uid) {
                    found.entry(reference.uid).or_default().push((store.clone(), object.clone()));
                }
            }
        }
    }
    Ok(found)
}

/// An owner reference checked against storage (upstream `isDangling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// An object of that kind and name with that uid exists.
    Present,
    /// None exists, or one with another uid (a new object under the old name).
    Absent,
    /// Cannot be decided: a kind this server does not serve, or a namespaced owner of a
    /// cluster-scoped dependent (upstream: a REST mapping error, retried;
    /// `namespacedOwnerOfClusterScopedObjectErr`, given up). Never collected.
    Unresolvable,
}

/// Owners read during one pass: (group, plural, namespace, name) → the uid stored there.
#[derive(Default)]
struct OwnerLookups {
    read: HashMap<ObjectKey, Option<String>>,
}

impl OwnerLookups {
    /// Whether `reference`, held by an object in `namespace` ("" for cluster-scoped), names
    /// an existing owner. Reads storage at most once per owner per pass.
    async fn state(
        &mut self,
        state: &ApiState,
        namespace: &str,
        reference: &OwnerReference,
    ) -> Result<OwnerState, ApiError> {
        let (group, version) = reference.api_version.split_once('/').unwrap_or(("", reference.api_version.as_str()));
        let Some(store) = state.store_of_kind(group, version, &reference.kind) else {
            tracing::debug!(
                api_version = reference.api_version,
                kind = reference.kind,
                "owner reference to a kind not served; not collected"
            );
            return Ok(OwnerState::Unresolvable);
        };
        let scope = if store.resource.namespaced {
            if namespace.is_empty() {
                return Ok(OwnerState::Unresolvable);
            }
            Some(namespace.to_string())
        } else {
            None
        };
        let key = (store.resource.group, store.resource.plural, scope, reference.name.clone());
        let uid = match self.read.get(&key) {
            Some(uid) => uid.clone(),
            None => {
                let uid = store.read(key.2.as_deref(), &reference.name).await?.map(|o| o.uid().to_string());
                self.read.insert(key, uid.clone());
                uid
            }
        };
        Ok(if uid.as_deref() == Some(reference.uid.as_str()) { OwnerState::Present } else { OwnerState::Absent })
    }
}

/// Checks one version of an object with owner references (upstream `attemptToDeleteItem` and
/// `classifyReferences`): deletes it if all its owners are absent, removes the absent ones'
/// references if some owner exists. Errors are storage failures (the caller retries).
async fn check_dependent(
    state: &ApiState,
    lookups: &mut OwnerLookups,
    store: &ResourceStore,
    object: &Object,
) -> Result<(), ApiError> {
    let Some(meta) = dependent_meta(object) else { return Ok(()) };
    if meta.deletion_timestamp.is_some() {
        // Being deleted is a one-way trip (foreground deletion is the finalizing job's work).
        return Ok(());
    }
    let mut present = false;
    let mut absent = Vec::new();
    for reference in &meta.owner_references {
        match lookups.state(state, object.namespace(), reference).await? {
            OwnerState::Present => present = true,
            OwnerState::Absent => absent.push(reference.uid.as_str()),
            // Upstream gives up on the whole item at the first reference it cannot classify.
            OwnerState::Unresolvable => return Ok(()),
        }
    }
    if absent.is_empty() {
        return Ok(());
    }
    if present {
        tracing::debug!(name = object.name(), dangling = ?absent, "garbage collector removes dangling owner references");
        remove_owner_references(store, object, &absent).await;
        return Ok(());
    }
    // Every owner is gone: delete it, honouring a propagation its own finalizers ask for.
    let policy = if meta.finalizers.iter().any(|f| f == "orphan") {
        "Orphan"
    } else if meta.finalizers.iter().any(|f| f == "foregroundDeletion") {
        "Foreground"
    } else {
        "Background"
    };
    tracing::debug!(name = object.name(), policy, "garbage collector deletes a dependent whose owners are all gone");
    let mut options = DeleteOptions {
        precondition_uid: Some(object.uid().to_string()),
        precondition_rv: Some(object.resource_version()),
        propagation_policy: Some(policy.to_string()),
        ..Default::default()
    };
    match store.delete(namespace_of(object), object.name(), &options).await {
        Ok(_) => return Ok(()),
        Err(e) if e.code() == 404 => return Ok(()),
        Err(e) if e.code() == 409 => {}
        Err(e) => return Err(e),
    }
    // It changed since this version: if its owners did not, delete it anyway (upstream
    // `deleteObject` retries without the resourceVersion precondition); if they did, its
    // MODIFIED event brings the new version to a later pass.
    let Some(latest) = store.read(namespace_of(object), object.name()).await? else { return Ok(()) };
    if latest.uid() != object.uid()
        || dependent_meta(&latest).map(|m| m.owner_references) != Some(meta.owner_references)
    {
        return Ok(());
    }
    options.precondition_rv = None;
    match store.delete(namespace_of(object), object.name(), &options).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 404 || e.code() == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

fn namespace_of(object: &Object) -> Option<&str> {
    (!object.namespace().is_empty()).then_some(object.namespace())
}

/// Deletes a dependent of a foreground owner.
async fn delete_dependent(store: &ResourceStore, dependent: &Object) {
    let options = DeleteOptions { precondition_uid: Some(dependent.uid().to_string()), ..Default::default() };
    match store.delete(namespace_of(dependent), dependent.name(), &options).await {
        Ok(_) => {}
        Err(e) if e.code() == 404 || e.code() == 409 => {}
        Err(e) => tracing::warn!(name = dependent.name(), error = %e, "garbage collector could not delete a dependent"),
    }
}

/// Removes the references to `owner_uids` from this object (if it is still the same object).
async fn remove_owner_references(store: &ResourceStore, dependent: &Object, owner_uids: &[&str]) {
    let result = store
        .guaranteed_update(namespace_of(dependent), dependent.name(), None, false, |existing| {
            if existing.uid() != dependent.uid() {
                return Err(ApiError::not_found(&store.resource.group_resource(), dependent.name()));
            }
            let Value::Object(mut object) = existing.value() else { unreachable!("objects are JSON objects") };
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("resourceVersion");
                if let Some(refs) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str).is_none_or(|uid| !owner_uids.contains(&uid)));
                    if refs.is_empty() {
                        meta.shift_remove("ownerReferences");
                    }
                }
            }
            Ok(Step::Write(object))
        })
        .await;
    if let Err(e) = result
        && e.code() != 404
    {
        tracing::warn!(name = dependent.name(), error = %e, "garbage collector could not remove owner references");
    }
}

async fn remove_finalizer(store: &ResourceStore, namespace: Option<&str>, name: &str, uid: &str, finalizer: &str) {
    let result = store
        .guaranteed_update(namespace, name, None, false, |existing| {
            if existing.uid() != uid {
                return Err(ApiError::not_found(&store.resource.group_resource(), name));
            }
            let Value::Object(mut object) = existing.value() else { unreachable!("objects are JSON objects") };
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("resourceVersion");
                if let Some(list) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
                    list.retain(|f| f.as_str() != Some(finalizer));
                    if list.is_empty() {
                        meta.shift_remove("finalizers");
                    }
                }
            }
            if crate::registry::strategy::should_delete_during_update(&object) {
                Ok(Step::Delete)
            } else {
                Ok(Step::Write(object))
            }
        })
        .await;
    if let Err(e) = result
        && e.code() != 404
    {
        tracing::warn!(name, error = %e, "garbage collector could not remove its finalizer");
    }
}
