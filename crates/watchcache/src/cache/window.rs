//! What the cache holds: the current objects by storage key and the window of recent events,
//! with the resourceVersion they stand at (kube-apiserver's `watch_cache.go`).
//!
//! The cache's task writes it (a relist replaces it, a batch of storage events is applied to
//! it, a progress notification moves its resourceVersion) and requests read it (LISTs and GETs
//! from cache, the snapshot a new watch starts from), all under the one state lock. A request
//! that needs a newer resourceVersion waits here for the task to reach it, with storage asked
//! for progress meanwhile (kube's `waitUntilFreshAndBlock`).
//!
//! It knows storage events and objects, never watchers: sending the applied events on is
//! `dispatch.rs`'s job.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use listwatch_meta::{EventType, Object};
use listwatch_storage::{EventKind, KeyRange, RangeRequest, Revision, StorageError, prefix_end};

use super::{CacheError, Inner};
use crate::event::CacheEvent;

pub(super) struct State {
    /// Storage key → current object.
    pub(super) objects: BTreeMap<Bytes, Arc<Object>>,
    pub(super) window: VecDeque<Arc<CacheEvent>>,
    pub(super) resource_version: i64,
    pub(super) list_resource_version: i64,
    pub(super) evicted_since_list: bool,
    /// Versions no longer current (a newer one came, or the key was deleted), with when: each
    /// is retired ([`Object::retire`]) once its own event has had the config's
    /// `retire_encodings_after` to go out, so the window keeps objects, not their wire forms
    /// too.
    pub(super) superseded: VecDeque<(Instant, Arc<Object>)>,
}

impl Inner {
    /// The storage key of one object: the collection prefix, the namespace, the name.
    pub(super) fn key_of(&self, namespace: Option<&str>, name: &str) -> String {
        let prefix = String::from_utf8_lossy(&self.prefix);
        match namespace.filter(|_| self.resource.namespaced) {
            Some(ns) => format!("{prefix}{ns}/{name}"),
            None => format!("{prefix}{name}"),
        }
    }

    pub(super) fn objects_in<'a>(
        &'a self,
        state: &'a State,
        namespace: Option<&str>,
    ) -> Box<dyn Iterator<Item = &'a Arc<Object>> + 'a> {
        match namespace.filter(|_| self.resource.namespaced) {
            None => Box::new(state.objects.values()),
            Some(ns) => {
                let mut start = self.prefix.to_vec();
                start.extend_from_slice(ns.as_bytes());
                start.push(b'/');
                let end = prefix_end(&start).to_vec();
                Box::new(
                    state
                        .objects
                        .range::<[u8], _>((Bound::Included(&start[..]), Bound::Excluded(&end[..])))
                        .map(|(_, o)| o),
                )
            }
        }
    }

    /// The oldest resourceVersion a watch may start from: the list's revision if nothing was
    /// evicted since, else one below the oldest event kept.
    pub(super) fn oldest_resource_version(&self, state: &State) -> i64 {
        if !state.evicted_since_list {
            return state.list_resource_version;
        }
        state.window.front().map_or(state.resource_version, |e| e.resource_version - 1)
    }

    pub(super) async fn wait_until_fresh(&self, resource_version: i64) -> Result<(), CacheError> {
        let mut rx = self.rv_tx.subscribe();
        if *rx.borrow_and_update() >= resource_version {
            return Ok(());
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(&self.waiting);
        self.progress_wanted.notify_one();
        let reached =
            tokio::time::timeout(self.config.freshness_timeout, rx.wait_for(|rv| *rv >= resource_version)).await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            _ => {
                Err(CacheError::TooLargeResourceVersion { requested: resource_version, current: *self.rv_tx.borrow() })
            }
        }
    }

    /// Lists the collection at one revision, in pages, and replaces the cache with it.
    pub(super) async fn relist(&self) -> Result<Revision, StorageError> {
        let end = prefix_end(&self.prefix);
        let mut start = self.prefix.clone();
        let mut revision = 0;
        let mut objects = BTreeMap::new();
        loop {
            let page = self
                .storage
                .range(
                    RangeRequest::new(KeyRange::between(start.clone(), end.clone()))
                        .limit(self.config.list_page_size)
                        .at_revision(revision),
                )
                .await?;
            revision = page.revision;
            for kv in &page.kvs {
                // A relisted object goes out as ADDED, in the initial events of new watches.
                match Object::from_storage_for_event(self.resource, &kv.value, kv.mod_revision, EventType::Added) {
                    Ok(o) => {
                        objects.insert(kv.key.clone(), Arc::new(o));
                    }
                    Err(e) => self.undecodable(&kv.key, &e),
                }
            }
            match (page.more, page.kvs.last()) {
                (true, Some(last)) => {
                    let mut next = last.key.to_vec();
                    next.push(0);
                    start = Bytes::from(next);
                }
                _ => break,
            }
        }
        let mut state = self.state.write();
        state.objects = objects;
        state.window.clear();
        state.superseded.clear();
        state.resource_version = revision;
        state.list_resource_version = revision;
        state.evicted_since_list = false;
        drop(state);
        self.rv_tx.send_replace(revision);
        self.relists.fetch_add(1, Ordering::Relaxed);
        Ok(revision)
    }

    fn undecodable(&self, key: &[u8], error: &listwatch_meta::object::DecodeError) {
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(key = %String::from_utf8_lossy(key), %error, "skipping a stored value that cannot be decoded");
    }

    /// Applies a batch of storage events; returns the cache events to dispatch, in order.
    pub(super) fn apply(&self, events: &[Arc<listwatch_storage::Event>]) -> Vec<Arc<CacheEvent>> {
        let mut out = Vec::with_capacity(events.len());
        let now = Instant::now();
        let mut state = self.state.write();
        for event in events {
            let key = &event.kv.key;
            let prev = state.objects.get(key).cloned();
            let change = match event.kind {
                EventKind::Put => {
                    let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
                    let stored = &event.kv.value;
                    match Object::from_storage_for_event(self.resource, stored, event.kv.mod_revision, kind) {
                        Ok(object) => {
                            let object = Arc::new(object);
                            state.objects.insert(key.clone(), object.clone());
                            if let Some(prev) = &prev {
                                state.superseded.push_back((now, prev.clone()));
                            }
                            Some(CacheEvent::new(kind, object, prev))
                        }
                        Err(e) => {
                            self.undecodable(key, &e);
                            None
                        }
                    }
                }
                // A deletion of something the cache never held (it could not be decoded) is
                // invisible to clients.
                EventKind::Delete => prev.map(|prev| {
                    state.objects.remove(key);
                    let revision = event.kv.mod_revision;
                    let last =
                        Arc::new(prev.with_resource_version_for_event(self.resource, revision, EventType::Deleted));
                    state.superseded.push_back((now, prev.clone()));
                    state.superseded.push_back((now, last.clone()));
                    CacheEvent::new(EventType::Deleted, last, Some(prev))
                }),
            };
            state.resource_version = event.kv.mod_revision;
            if let Some(change) = change {
                let change = Arc::new(change);
                state.window.push_back(change.clone());
                out.push(change);
            }
        }
        self.evict(&mut state, now);
        self.retire_superseded(&mut state, now);
        let rv = state.resource_version;
        drop(state);
        self.rv_tx.send_replace(rv);
        out
    }

    fn evict(&self, state: &mut State, now: Instant) {
        while let Some(oldest) = state.window.front() {
            let too_many = state.window.len() > self.config.max_events;
            let too_old = state.window.len() > self.config.min_events && now - oldest.recorded_at > self.config.window;
            if !too_many && !too_old {
                break;
            }
            state.window.pop_front();
            state.evicted_since_list = true;
        }
    }

    fn retire_superseded(&self, state: &mut State, now: Instant) {
        while let Some((at, _)) = state.superseded.front() {
            if now.duration_since(*at) < self.config.retire_encodings_after {
                break;
            }
            let (_, object) = state.superseded.pop_front().expect("front exists");
            object.retire();
        }
    }

    pub(super) fn advance_to(&self, revision: Revision) {
        let mut state = self.state.write();
        // Progress comes every few seconds on an idle cache: the last writes' versions are
        // retired here when no later write comes to do it.
        self.retire_superseded(&mut state, Instant::now());
        if revision > state.resource_version {
            state.resource_version = revision;
            drop(state);
            self.rv_tx.send_replace(revision);
        }
    }
}
