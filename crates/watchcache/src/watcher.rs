//! One client watch served by the cache (kube-apiserver's `cacheWatcher`).
//!
//! A watcher first yields its initial events (a snapshot of the window after its start
//! resourceVersion, or the current objects for a "0"/unset/streaming-list start), then the
//! optional initial-events-end bookmark, then what the dispatcher queues for it. It drops
//! queued events at or below its start (they are in the snapshot), applies its selectors and
//! turns selector transitions into ADDED / DELETED. All of that runs in the consumer's task,
//! so the dispatcher's per-watcher work is one non-blocking send.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use listwatch_meta::{Object, Resource, WatchEvent};
use tokio::sync::mpsc;

use crate::event::{CacheEvent, Predicate};

/// Where a watch starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStart {
    /// `resourceVersion=N`: exactly the changes after N (410 if N is older than the window;
    /// a future N waits).
    Exact(i64),
    /// `resourceVersion=0`: the cache's current state (when `initial_events`), then changes.
    Any {
        /// Whether the current state comes first, as ADDED events.
        initial_events: bool,
    },
    /// `resourceVersion` unset: the state at storage's current revision, then changes.
    Consistent {
        /// Whether that state comes first, as ADDED events.
        initial_events: bool,
    },
    /// A streaming list with `resourceVersion=N`: the state once the cache has reached N.
    NotOlderThan {
        /// N: the oldest revision the state may be at.
        resource_version: i64,
        /// Whether that state comes first, as ADDED events.
        initial_events: bool,
    },
}

/// What a client watch asks for.
#[derive(Clone)]
pub struct WatcherOptions {
    /// Where the watch starts.
    pub start: WatchStart,
    /// Only this namespace (`None`: all).
    pub namespace: Option<String>,
    /// Only the object of this name (`None`: all): set it when the predicate requires
    /// `metadata.name=X` (a watch of one object), so that dispatch finds the watcher by the
    /// object's name instead of offering it every event of its namespace.
    pub name: Option<String>,
    /// Label and field selectors; `None` matches everything.
    pub predicate: Option<Predicate>,
    /// `allowWatchBookmarks=true`.
    pub bookmarks: bool,
    /// End the initial events with the `k8s.io/initial-events-end` bookmark.
    pub initial_events_end_bookmark: bool,
    /// When the server ends the watch (used to time the last bookmark).
    pub deadline: Instant,
}

pub(crate) enum Queued {
    Event(Arc<CacheEvent>),
    Bookmark(i64),
}

pub(crate) enum Initial {
    Events(Vec<Arc<CacheEvent>>),
    Objects(Vec<Arc<Object>>),
}

/// What a watcher calls once when it is dropped: the cache's "forget this watcher" (as kube's
/// cacheWatcher gets a `forget` function, not the cache), so a watcher knows nothing of the
/// cache that feeds it.
pub(crate) type Forget = Box<dyn FnOnce() + Send + Sync>;

/// A running client watch on the cache. Dropping it unregisters it at once.
pub struct CacheWatcher {
    resource: &'static Resource,
    forget: Option<Forget>,
    /// Only this namespace's objects, and only the object of `name` if set (the live dispatch
    /// filters too; replayed history and the initial state are filtered here).
    namespace: Option<String>,
    name: Option<String>,
    predicate: Option<Predicate>,
    bookmarks: bool,
    start_rv: i64,
    /// Queued events at or below this are already in the initial events (or before the
    /// start): the later of the start and the cache's revision when the watcher registered.
    snapshot_rv: i64,
    initial_events: VecDeque<Arc<CacheEvent>>,
    initial_objects: VecDeque<Arc<Object>>,
    end_bookmark: Option<i64>,
    /// Highest resourceVersion handed out, so bookmarks never go back.
    last_rv: i64,
    rx: mpsc::Receiver<Queued>,
}

impl CacheWatcher {
    pub(crate) fn new(
        resource: &'static Resource,
        forget: Forget,
        options: WatcherOptions,
        start_rv: i64,
        snapshot_rv: i64,
        initial: Initial,
        rx: mpsc::Receiver<Queued>,
    ) -> CacheWatcher {
        let (initial_events, initial_objects) = match initial {
            Initial::Events(e) => (e.into(), VecDeque::new()),
            Initial::Objects(o) => (VecDeque::new(), o.into()),
        };
        CacheWatcher {
            resource,
            forget: Some(forget),
            namespace: options.namespace,
            name: options.name,
            predicate: options.predicate,
            bookmarks: options.bookmarks,
            start_rv,
            snapshot_rv,
            initial_events,
            initial_objects,
            end_bookmark: options.initial_events_end_bookmark.then_some(start_rv),
            last_rv: start_rv,
            rx,
        }
    }

    /// The resourceVersion the watch started from.
    pub fn start_resource_version(&self) -> i64 {
        self.start_rv
    }

    /// Appends up to `max` events to `out`, waiting only if none are ready. Returns `false`
    /// once the watch has ended (closed by the cache) and nothing was added.
    pub async fn next_batch(&mut self, out: &mut Vec<WatchEvent>, max: usize) -> bool {
        let before = out.len();
        self.take_initial(out, max);
        if out.len() > before {
            return true;
        }
        loop {
            // Wait for one, then take whatever else is already queued.
            let Some(first) = self.rx.recv().await else {
                return false;
            };
            self.convert(first, out);
            while out.len() - before < max {
                match self.rx.try_recv() {
                    Ok(queued) => self.convert(queued, out),
                    Err(_) => break,
                }
            }
            if out.len() > before {
                return true;
            }
        }
    }

    fn take_initial(&mut self, out: &mut Vec<WatchEvent>, max: usize) {
        let resource = self.resource;
        let limit = out.len() + max;
        while out.len() < limit {
            if let Some(event) = self.initial_events.pop_front() {
                if !self.in_scope(&event.object) {
                    continue;
                }
                if let Some(e) = event.for_watcher(resource, self.predicate.as_ref()) {
                    self.last_rv = self.last_rv.max(event.resource_version);
                    out.push(e);
                }
            } else if let Some(object) = self.initial_objects.pop_front() {
                if self.in_scope(&object) && self.predicate.as_ref().is_none_or(|p| p(&object)) {
                    out.push(WatchEvent::Added(object));
                }
            } else if let Some(rv) = self.end_bookmark.take() {
                out.push(WatchEvent::Bookmark { resource_version: rv, initial_events_end: true });
            } else {
                return;
            }
        }
    }

    /// Whether `object` is in the namespace and has the name this watch is limited to.
    fn in_scope(&self, object: &Object) -> bool {
        self.namespace.as_deref().is_none_or(|ns| ns == object.namespace())
            && self.name.as_deref().is_none_or(|name| name == object.name())
    }

    fn convert(&mut self, queued: Queued, out: &mut Vec<WatchEvent>) {
        match queued {
            Queued::Event(event) => {
                if event.resource_version <= self.snapshot_rv {
                    return;
                }
                self.last_rv = self.last_rv.max(event.resource_version);
                if let Some(e) = event.for_watcher(self.resource, self.predicate.as_ref()) {
                    out.push(e);
                }
            }
            Queued::Bookmark(rv) => {
                // kube forwards bookmarks past the watch's start; never one below an event
                // already sent.
                if self.bookmarks && rv > self.start_rv && rv >= self.last_rv {
                    self.last_rv = rv;
                    out.push(WatchEvent::Bookmark { resource_version: rv, initial_events_end: false });
                }
            }
        }
    }
}

impl Drop for CacheWatcher {
    fn drop(&mut self) {
        if let Some(forget) = self.forget.take() {
            forget();
        }
    }
}
