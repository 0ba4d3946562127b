//! The uncached watch path (kube-apiserver's etcd3 `watcher.go`): each client watch is its own
//! storage watch, proxied straight through.
//!
//! * resourceVersion N: the storage watch starts at N+1, with previous values;
//! * "0", unset, or a streaming list: list storage (in pages, at one revision), send each
//!   object as ADDED, then watch from the list's revision + 1; a streaming list with bookmarks
//!   ends its initial events with the `k8s.io/initial-events-end` bookmark at that revision;
//! * create → ADDED, update → MODIFIED, delete → DELETED carrying the previous state at the
//!   deletion's revision; with selectors, the transitions of kube's `transform`;
//! * compaction past the watch → one ERROR (410 Expired, "The resourceVersion for the provided
//!   watch is too old."), then the end; no periodic bookmarks (the REST API cannot ask for
//!   storage progress here).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use listwatch_meta::{ApiError, Object, Resource};
use listwatch_storage::{
    Event, EventKind, KeyRange, RangeRequest, Storage, StorageError, Watch, WatchRequest, WatchResponse, prefix_end,
};

use listwatch_meta::WatchEvent;

use crate::event::Predicate;

/// How an uncached watch starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectStart {
    /// Changes after this resourceVersion.
    After(i64),
    /// List now (synthetic ADDED events), then changes.
    ListThenWatch {
        /// The "not older than" bound of a streaming list (0: none).
        min_resource_version: i64,
    },
}

/// What an uncached watch delivers.
pub struct DirectOptions {
    /// Where it starts.
    pub start: DirectStart,
    /// Which objects' events it delivers (selectors); `None` for all.
    pub predicate: Option<Predicate>,
    /// Whether the initial list ends with the `k8s.io/initial-events-end` bookmark (a
    /// streaming list asked for it).
    pub initial_events_end_bookmark: bool,
}

/// An uncached client watch.
pub struct DirectWatcher {
    resource: &'static Resource,
    predicate: Option<Predicate>,
    initial: VecDeque<WatchEvent>,
    watch: Option<Watch>,
    ended: bool,
}

/// Starts an uncached watch of the keys under `prefix` (a namespace's or the collection's).
pub async fn watch(
    storage: &Arc<dyn Storage>,
    resource: &'static Resource,
    prefix: String,
    options: DirectOptions,
    list_page_size: i64,
) -> Result<DirectWatcher, ApiError> {
    let range = KeyRange::prefix(prefix.clone());
    let mut initial = VecDeque::new();
    let start = match options.start {
        // Saturated: a resourceVersion of i64::MAX waits for a revision that never comes.
        DirectStart::After(rv) => rv.saturating_add(1),
        DirectStart::ListThenWatch { min_resource_version } => {
            let current = storage.current_revision().await.map_err(storage_error)?;
            if min_resource_version > current {
                // kube's etcd watcher answers a streaming list from the future with a
                // retriable 504 (Retry-After 1 to 3 s).
                let retry = rand::random_range(1..=3);
                initial.push_back(WatchEvent::Error(ApiError::too_large_resource_version(
                    min_resource_version,
                    current,
                    retry,
                )));
                return Ok(DirectWatcher { resource, predicate: None, initial, watch: None, ended: false });
            }
            let revision =
                list_into(storage, resource, &prefix, options.predicate.as_ref(), list_page_size, &mut initial).await?;
            if options.initial_events_end_bookmark {
                initial.push_back(WatchEvent::Bookmark { resource_version: revision, initial_events_end: true });
            }
            revision + 1
        }
    };
    let watch = storage.watch(WatchRequest::new(range, start)).await.map_err(storage_error)?;
    Ok(DirectWatcher { resource, predicate: options.predicate, initial, watch: Some(watch), ended: false })
}

/// Lists `prefix` at one revision into synthetic ADDED events; returns that revision.
async fn list_into(
    storage: &Arc<dyn Storage>,
    resource: &'static Resource,
    prefix: &str,
    predicate: Option<&Predicate>,
    page_size: i64,
    out: &mut VecDeque<WatchEvent>,
) -> Result<i64, ApiError> {
    let end = prefix_end(prefix.as_bytes());
    let mut start = Bytes::copy_from_slice(prefix.as_bytes());
    let mut revision = 0;
    loop {
        let page = storage
            .range(
                RangeRequest::new(KeyRange::between(start.clone(), end.clone())).limit(page_size).at_revision(revision),
            )
            .await
            .map_err(storage_error)?;
        revision = page.revision;
        for kv in &page.kvs {
            match Object::from_storage(resource, &kv.value, kv.mod_revision) {
                Ok(o) if predicate.is_none_or(|p| p(&o)) => out.push_back(WatchEvent::Added(Arc::new(o))),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&kv.key), error = %e, "skipping a stored value that cannot be decoded");
                }
            }
        }
        match (page.more, page.kvs.last()) {
            (true, Some(last)) => {
                let mut next = last.key.to_vec();
                next.push(0);
                start = Bytes::from(next);
            }
            _ => return Ok(revision),
        }
    }
}

fn storage_error(e: StorageError) -> ApiError {
    match e {
        StorageError::Compacted { .. } => ApiError::expired("The resourceVersion for the provided watch is too old."),
        other => ApiError::service_unavailable(other.to_string()),
    }
}

impl DirectWatcher {
    /// Appends up to `max` events to `out`, waiting only if none are ready; `false` once the
    /// watch has ended.
    pub async fn next_batch(&mut self, out: &mut Vec<WatchEvent>, max: usize) -> bool {
        let before = out.len();
        while out.len() - before < max {
            match self.initial.pop_front() {
                Some(e) => {
                    let is_error = matches!(e, WatchEvent::Error(_));
                    out.push(e);
                    if is_error {
                        self.watch = None;
                        self.ended = true;
                        return true;
                    }
                }
                None => break,
            }
        }
        if out.len() > before {
            return true;
        }
        loop {
            if self.ended {
                return false;
            }
            let Some(watch) = self.watch.as_mut() else {
                return false;
            };
            match watch.next().await {
                Some(Ok(WatchResponse::Events(events))) => {
                    for event in &events {
                        if let Err(e) = self.convert(event, out) {
                            out.push(WatchEvent::Error(e));
                            self.ended = true;
                            break;
                        }
                    }
                    if out.len() > before {
                        return true;
                    }
                }
                Some(Ok(WatchResponse::Progress(_))) => {}
                Some(Ok(WatchResponse::Compacted(_))) => {
                    self.ended = true;
                    out.push(WatchEvent::Error(ApiError::expired(
                        "The resourceVersion for the provided watch is too old.",
                    )));
                    return true;
                }
                Some(Err(e)) => {
                    self.ended = true;
                    out.push(WatchEvent::Error(ApiError::internal(e)));
                    return true;
                }
                None => return false,
            }
        }
    }

    fn convert(&self, event: &Event, out: &mut Vec<WatchEvent>) -> Result<(), ApiError> {
        let decode = |value: &[u8], rv: i64| Object::from_storage(self.resource, value, rv).map(Arc::new);
        let rv = event.kv.mod_revision;
        let new = match event.kind {
            EventKind::Put => match decode(&event.kv.value, rv) {
                Ok(o) => Some(o),
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&event.kv.key), error = %e, "skipping a stored value that cannot be decoded");
                    return Ok(());
                }
            },
            EventKind::Delete => None,
        };
        // kube's parseEvent: a change to an existing key must carry its previous value.
        let prev = match &event.prev {
            Some(p) => decode(&p.value, rv).ok(),
            None if event.is_create() => None,
            None => return Err(ApiError::internal("etcd event received with PrevKv=nil")),
        };
        let matches = |o: &Arc<Object>| self.predicate.as_ref().is_none_or(|p| p(o));
        let converted = match (new, prev) {
            (Some(new), None) => matches(&new).then(|| WatchEvent::Added(new)),
            (Some(new), Some(prev)) => match (matches(&prev), matches(&new)) {
                (true, true) => Some(WatchEvent::Modified(new)),
                (false, true) => Some(WatchEvent::Added(new)),
                (true, false) => Some(WatchEvent::Deleted(prev)),
                (false, false) => None,
            },
            (None, Some(prev)) => matches(&prev).then(|| WatchEvent::Deleted(prev)),
            (None, None) => None,
        };
        out.extend(converted);
        Ok(())
    }
}
