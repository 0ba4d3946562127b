//! A small garbage collector: what kube-controller-manager's does for `propagationPolicy`.
//!
//! * **Background** (the default): once an owner is gone, objects whose `ownerReferences`
//!   name its uid are deleted (their own dependents follow the same way).
//! * **Foreground**: the owner is kept with the `foregroundDeletion` finalizer while its
//!   dependents are deleted; then the finalizer is removed, which deletes the owner.
//! * **Orphan**: the owner is kept with the `orphan` finalizer while the references to it are
//!   removed from its dependents; then the finalizer goes and the owner with it.
//!
//! Like kube's collector, it learns of owners through watches (one per resource): a DELETED
//! event queues the owner's dependents for deletion, a MODIFIED that carries `orphan` or
//! `foregroundDeletion` with a deletionTimestamp queues that work. Whatever path deleted the
//! owner (a DELETE, its last finalizer removed, a pod's grace period, a namespace going) is
//! covered. When it starts, and whenever a watch had to restart, it reconciles: objects whose
//! owners all no longer exist are deleted.
//!
//! Work is batched: one pass over the objects serves every owner queued since the last pass,
//! so deleting a namespace with thousands of objects costs a few passes, not one per object.
//! A pass only decodes objects whose JSON mentions `ownerReferences`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use listwatch_meta::Object;
use listwatch_storage::{KeyRange, RangeRequest};
use serde_json::Value;
use tokio::sync::mpsc;

use listwatch_watchcache::direct::{self, DirectOptions, DirectStart};
use listwatch_watchcache::{WatchEvent, WatchStart, WatcherOptions};

use crate::resource::ResourceStore;
use crate::server::ApiState;
use crate::watch::Source;
use crate::write::{self, DeleteOptions, Step};

/// Work for the collector.
#[derive(Debug)]
pub enum Job {
    /// The owner with this uid is gone: delete its dependents.
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
}

/// What the watches report to the collector.
enum Signal {
    Job(Job),
    /// A watch restarted: events may have been missed.
    Reconcile,
}

/// Starts the collector; its watches begin at storage's revision now, so nothing deleted
/// after this call is missed.
pub async fn start(state: &Arc<ApiState>) -> Result<(), listwatch_meta::ApiError> {
    let from = state.storage.current_revision().await.map_err(crate::resource::storage_error)?;
    let (tx, rx) = mpsc::unbounded_channel();
    for store in state.stores() {
        tokio::spawn(watch_owners(Arc::downgrade(state), store.clone(), from, tx.clone()));
    }
    tokio::spawn(run(Arc::downgrade(state), rx));
    Ok(())
}

/// Follows one resource's changes from `from` and turns them into jobs.
async fn watch_owners(
    state: Weak<ApiState>,
    store: Arc<ResourceStore>,
    mut from: i64,
    signals: mpsc::UnboundedSender<Signal>,
) {
    loop {
        let Some(strong) = state.upgrade() else { return };
        if *strong.shutdown.borrow() {
            return;
        }
        let mut shutdown = strong.shutdown.clone();
        let opened = open(&strong, &store, from).await;
        drop(strong);
        let mut source = match opened {
            Ok(source) => source,
            Err(e) if e.code() == 410 => {
                // Our place is gone: start from now and reconcile what may have been missed.
                if let Some(strong) = state.upgrade()
                    && let Ok(now) = strong.storage.current_revision().await
                {
                    from = now;
                }
                let _ = signals.send(Signal::Reconcile);
                continue;
            }
            Err(_) => {
                // Not ready yet (or storage away): try again from the same place.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut events = Vec::new();
        loop {
            events.clear();
            let more = tokio::select! {
                more = source.next_batch(&mut events) => more,
                _ = shutdown.wait_for(|down| *down) => return,
            };
            for event in &events {
                match event {
                    WatchEvent::Deleted(o) => {
                        from = o.resource_version();
                        let _ = signals.send(Signal::Job(Job::OwnerDeleted { uid: o.uid().to_string() }));
                    }
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        from = o.resource_version();
                        for finalizer in pending_gc_finalizers(o) {
                            let _ = signals.send(Signal::Job(Job::OwnerFinalizing {
                                group: store.resource.group,
                                plural: store.resource.plural,
                                namespace: namespace_of(o).map(String::from),
                                name: o.name().to_string(),
                                uid: o.uid().to_string(),
                                finalizer,
                            }));
                        }
                    }
                    WatchEvent::Bookmark { resource_version, .. } => from = *resource_version,
                    WatchEvent::Error(_) => {
                        // A 410 from the uncached path: as above.
                        let _ = signals.send(Signal::Reconcile);
                    }
                }
            }
            if !more {
                break;
            }
        }
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

/// A watch of every object of `store` after `from`.
async fn open(state: &ApiState, store: &ResourceStore, from: i64) -> Result<Source, listwatch_meta::ApiError> {
    match &store.cache {
        Some(cache) => {
            let options = WatcherOptions {
                start: WatchStart::Exact(from),
                namespace: None,
                predicate: None,
                bookmarks: true,
                initial_events_end_bookmark: false,
                deadline: std::time::Instant::now() + Duration::from_secs(3600 * 24 * 365),
            };
            Ok(Source::Cache(cache.watch(options).await.map_err(|e| e.to_api_error())?))
        }
        None => {
            let options =
                DirectOptions { start: DirectStart::After(from), predicate: None, initial_events_end_bookmark: false };
            let w = direct::watch(
                &store.storage,
                store.resource,
                store.prefix(None),
                options,
                state.config.cache.list_page_size,
            )
            .await?;
            Ok(Source::Direct(w))
        }
    }
}

async fn run(state: Weak<ApiState>, mut signals: mpsc::UnboundedReceiver<Signal>) {
    let mut pending: Vec<Job> = Vec::new();
    // Owners may have gone while the server was down.
    let mut reconcile = true;
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
        if std::mem::take(&mut reconcile)
            && let Err(e) = delete_orphaned(&state).await
        {
            tracing::warn!(error = %e, "garbage collector could not reconcile");
        }
        let batch = std::mem::take(&mut pending);
        match pass(&state, batch).await {
            Ok(retry) => pending.extend(retry),
            Err(e) => tracing::warn!(error = %e, "garbage collection pass failed"),
        }
        if !pending.is_empty() {
            // Foreground owners wait for their dependents to go.
            drop(state);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Deletes objects all of whose owners are gone (missed events, or a restart).
async fn delete_orphaned(state: &ApiState) -> Result<(), listwatch_meta::ApiError> {
    let mut live = HashSet::new();
    let mut owned = Vec::new();
    for store in state.stores() {
        for object in all_objects(store).await? {
            live.insert(object.uid().to_string());
            let owners = owner_uids(&object);
            if !owners.is_empty() {
                owned.push((store.clone(), object, owners));
            }
        }
    }
    for (store, object, owners) in owned {
        if owners.iter().all(|uid| !live.contains(uid)) {
            delete_dependent(state, &store, &object).await;
        }
    }
    Ok(())
}

async fn all_objects(store: &ResourceStore) -> Result<Vec<Arc<Object>>, listwatch_meta::ApiError> {
    match &store.cache {
        Some(cache) if cache.is_ready() => Ok(cache.list(None, None, None).await.map_err(|e| e.to_api_error())?.items),
        _ => {
            let resp = store
                .storage
                .range(RangeRequest::new(KeyRange::prefix(store.prefix(None))))
                .await
                .map_err(crate::resource::storage_error)?;
            Ok(resp
                .kvs
                .iter()
                .filter_map(|kv| Object::from_storage(store.resource, &kv.value, kv.mod_revision).ok().map(Arc::new))
                .collect())
        }
    }
}

/// The owner uids an object references.
fn owner_uids(object: &Object) -> Vec<String> {
    if memchr_contains(object.json(), b"\"ownerReferences\"") {
        let value = object.value();
        if let Some(refs) = value.pointer("/metadata/ownerReferences").and_then(Value::as_array) {
            return refs.iter().filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from)).collect();
        }
    }
    Vec::new()
}

fn memchr_contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every object that references an owner, by owner uid.
/// Owner uid → the objects that reference it.
type Dependents = HashMap<String, Vec<(Arc<ResourceStore>, Arc<Object>)>>;

async fn dependents(state: &ApiState, owners: &HashSet<String>) -> Result<Dependents, listwatch_meta::ApiError> {
    let mut found = Dependents::new();
    for store in state.stores() {
        for object in all_objects(store).await? {
            for uid in owner_uids(&object) {
                if owners.contains(&uid) {
                    found.entry(uid).or_default().push((store.clone(), object.clone()));
                }
            }
        }
    }
    Ok(found)
}

/// One pass over the queued jobs; returns those that must wait (foreground owners whose
/// dependents are still there).
async fn pass(state: &ApiState, jobs: Vec<Job>) -> Result<Vec<Job>, listwatch_meta::ApiError> {
    let owners: HashSet<String> = jobs
        .iter()
        .map(|j| match j {
            Job::OwnerDeleted { uid } | Job::OwnerFinalizing { uid, .. } => uid.clone(),
        })
        .collect();
    let found = dependents(state, &owners).await?;
    let mut retry = Vec::new();
    for job in jobs {
        match job {
            Job::OwnerDeleted { uid } => {
                for (store, dependent) in found.get(&uid).into_iter().flatten() {
                    delete_dependent(state, store, dependent).await;
                }
            }
            Job::OwnerFinalizing { group, plural, namespace, name, uid, finalizer } => {
                let deps = found.get(&uid).map(Vec::as_slice).unwrap_or_default();
                if finalizer == "orphan" {
                    for (store, dependent) in deps {
                        remove_owner_reference(store, dependent, &uid).await;
                    }
                } else if !deps.is_empty() {
                    for (store, dependent) in deps {
                        delete_dependent(state, store, dependent).await;
                    }
                    retry.push(Job::OwnerFinalizing { group, plural, namespace, name, uid, finalizer });
                    continue;
                }
                let Some(store) = state.stores().find(|s| s.resource.group == group && s.resource.plural == plural)
                else {
                    continue;
                };
                remove_finalizer(store, namespace.as_deref(), &name, &uid, &finalizer).await;
            }
        }
    }
    Ok(retry)
}

fn namespace_of(object: &Object) -> Option<&str> {
    (!object.namespace().is_empty()).then_some(object.namespace())
}

async fn delete_dependent(state: &ApiState, store: &ResourceStore, dependent: &Object) {
    let options = DeleteOptions { precondition_uid: Some(dependent.uid().to_string()), ..Default::default() };
    match write::delete_one(state, store, namespace_of(dependent), dependent.name(), &options).await {
        Ok(_) => {}
        Err(e) if e.code() == 404 || e.code() == 409 => {}
        Err(e) => tracing::warn!(name = dependent.name(), error = %e, "garbage collector could not delete a dependent"),
    }
}

async fn remove_owner_reference(store: &ResourceStore, dependent: &Object, owner_uid: &str) {
    let result = write::guaranteed_update(store, namespace_of(dependent), dependent.name(), None, false, |existing| {
        let Value::Object(mut object) = existing.value() else { unreachable!("objects are JSON objects") };
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("resourceVersion");
            if let Some(refs) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
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
        tracing::warn!(name = dependent.name(), error = %e, "garbage collector could not orphan a dependent");
    }
}

async fn remove_finalizer(store: &ResourceStore, namespace: Option<&str>, name: &str, uid: &str, finalizer: &str) {
    let result = write::guaranteed_update(store, namespace, name, None, false, |existing| {
        if existing.uid() != uid {
            return Err(listwatch_meta::ApiError::not_found(&store.resource.group_resource(), name));
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
        if crate::strategy::should_delete_during_update(&object) { Ok(Step::Delete) } else { Ok(Step::Write(object)) }
    })
    .await;
    if let Err(e) = result
        && e.code() != 404
    {
        tracing::warn!(name, error = %e, "garbage collector could not remove its finalizer");
    }
}
