//! What a client watch delivers, and the events the cache keeps.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use listwatch_meta::{EventType, Object, Resource, WatchEvent};

/// Which objects a watch or list wants (label and field selectors, compiled by the caller).
pub type Predicate = Arc<dyn Fn(&Object) -> bool + Send + Sync>;

/// A change the cache has applied, shared by every watcher it is dispatched to.
#[derive(Debug)]
pub(crate) struct CacheEvent {
    pub kind: EventType,
    /// The new state; for a deletion, the last state stamped with the deletion's revision.
    pub object: Arc<Object>,
    /// The state before (for updates and deletions), with its own resourceVersion.
    pub prev: Option<Arc<Object>>,
    pub resource_version: i64,
    pub recorded_at: Instant,
    /// `prev` stamped with this event's revision: the DELETED a selector watch sees when an
    /// update makes the object stop matching. Made once, on first need.
    prev_at_this_revision: OnceLock<Arc<Object>>,
}

impl CacheEvent {
    pub fn new(kind: EventType, object: Arc<Object>, prev: Option<Arc<Object>>) -> CacheEvent {
        CacheEvent {
            kind,
            resource_version: object.resource_version(),
            object,
            prev,
            recorded_at: Instant::now(),
            prev_at_this_revision: OnceLock::new(),
        }
    }

    /// The event as a watcher with `matches` sees it (kube's `convertToWatchEvent`): updates
    /// that make an object start matching are ADDED, stop matching are DELETED (carrying the
    /// previous state at this revision), neither are dropped.
    pub fn for_watcher(&self, resource: &Resource, matches: Option<&Predicate>) -> Option<WatchEvent> {
        let Some(matches) = matches else {
            return Some(WatchEvent::of(self.kind, self.object.clone()));
        };
        match self.kind {
            EventType::Added => matches(&self.object).then(|| WatchEvent::Added(self.object.clone())),
            // The deleted object is the last state: it decides.
            EventType::Deleted => {
                let last = self.prev.as_ref().unwrap_or(&self.object);
                matches(last).then(|| WatchEvent::Deleted(self.object.clone()))
            }
            EventType::Modified => {
                let now = matches(&self.object);
                let before = self.prev.as_ref().is_some_and(|p| matches(p));
                match (before, now) {
                    (true, true) => Some(WatchEvent::Modified(self.object.clone())),
                    (false, true) => Some(WatchEvent::Added(self.object.clone())),
                    (true, false) => {
                        let prev = self.prev.as_ref().expect("matched before");
                        let stamped = self.prev_at_this_revision.get_or_init(|| {
                            Arc::new(prev.with_resource_version_for_event(
                                resource,
                                self.resource_version,
                                EventType::Deleted,
                            ))
                        });
                        Some(WatchEvent::Deleted(stamped.clone()))
                    }
                    (false, false) => None,
                }
            }
        }
    }
}
