//! Storage's change log seen through one scope: the events a watch with that scope must deliver,
//! derived with Kubernetes' selector semantics, and the scope's state at any revision.
//!
//! For each write, what matters is whether the object was in the scope before it and after it
//! (`cacheWatcher.convertToWatchEvent` and the etcd3 watcher decide the same way):
//!
//! | before | after | event |
//! |---|---|---|
//! | no | yes | `ADDED`, the new state |
//! | yes | yes | `MODIFIED`, the new state |
//! | yes | no | `DELETED`, the state before, at the write's revision |
//! | no | no | none |
//!
//! A delete is "after: no". Without selectors this gives ADDED for a create, MODIFIED for another
//! put and DELETED for a delete. The log is read from an empty store: a put not marked `created` of
//! a key never seen before is taken as an update that kept the object in or out of the scope.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::record::{Change, EventKind, HistoryEvent};

use crate::scope::Scope;

/// An object's identity within one resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ObjectKey {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl ObjectKey {
    pub(crate) fn new(namespace: &str, name: &str) -> ObjectKey {
        ObjectKey { namespace: namespace.to_owned(), name: name.to_owned() }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() { f.write_str(&self.name) } else { write!(f, "{}/{}", self.namespace, self.name) }
    }
}

/// An event a watch of the scope must deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    pub(crate) revision: i64,
    pub(crate) key: ObjectKey,
    pub(crate) kind: EventKind,
    pub(crate) uid: String,
    pub(crate) fingerprint: u64,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} at {}", self.kind, self.key, self.revision)
    }
}

/// An object as the scope holds it at some revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) uid: String,
    pub(crate) fingerprint: u64,
    /// The revision of the object's last write.
    pub(crate) revision: i64,
}

/// The change log through one scope.
#[derive(Debug)]
pub(crate) struct ScopedHistory {
    /// In revision order.
    events: Vec<Expected>,
    index: HashMap<(i64, ObjectKey), usize>,
}

impl ScopedHistory {
    /// Derives the scope's events from the change log (in revision order).
    pub(crate) fn new<'a>(history: impl IntoIterator<Item = &'a HistoryEvent>, scope: &Scope) -> ScopedHistory {
        // The last state of every key of the resource, in the scope or not: whether a write moves
        // an object into or out of the scope depends on the state before it.
        let mut last: HashMap<ObjectKey, &HistoryEvent> = HashMap::new();
        let mut events = Vec::new();
        for write in history.into_iter().filter(|write| scope.holds_resource_of(write)) {
            let key = ObjectKey::new(&write.namespace, &write.name);
            let previous = last.get(&key).copied();
            let in_after = write.kind == Change::Put && scope.matches(&write.namespace, &write.name, &write.labels);
            let in_before = match (write.kind, previous) {
                (_, Some(previous)) => scope.matches(&previous.namespace, &previous.name, &previous.labels),
                // A delete carries the state it deleted.
                (Change::Delete, None) => scope.matches(&write.namespace, &write.name, &write.labels),
                (Change::Put, None) => !write.created && in_after,
            };
            let shown = match (in_before, in_after) {
                (false, true) => Some((EventKind::Added, write)),
                (true, true) => Some((EventKind::Modified, write)),
                // Leaving the scope shows the state before the write; a delete carries it itself.
                (true, false) => {
                    Some((EventKind::Deleted, previous.filter(|_| write.kind == Change::Put).unwrap_or(write)))
                }
                (false, false) => None,
            };
            if let Some((kind, state)) = shown {
                events.push(Expected {
                    revision: write.revision,
                    key: key.clone(),
                    kind,
                    uid: state.uid.clone(),
                    fingerprint: state.fingerprint,
                });
            }
            match write.kind {
                Change::Put => last.insert(key, write),
                Change::Delete => last.remove(&key),
            };
        }
        let index = events.iter().enumerate().map(|(i, event)| ((event.revision, event.key.clone()), i)).collect();
        ScopedHistory { events, index }
    }

    /// The event the scope shows for `key`'s write at `revision`, if it shows one.
    pub(crate) fn at(&self, revision: i64, key: &ObjectKey) -> Option<&Expected> {
        self.index.get(&(revision, key.clone())).map(|&i| &self.events[i])
    }

    /// The scope's events with revisions in `(after, up_to]`, in order.
    pub(crate) fn between(&self, after: i64, up_to: i64) -> &[Expected] {
        let start = self.events.partition_point(|event| event.revision <= after);
        let end = self.events.partition_point(|event| event.revision <= up_to).max(start);
        &self.events[start..end]
    }

    /// The scope's first event after `revision`.
    pub(crate) fn first_after(&self, revision: i64) -> Option<&Expected> {
        self.between(revision, i64::MAX).first()
    }

    /// The objects in the scope at `revision` (`i64::MAX` for the end of history).
    pub(crate) fn state_at(&self, revision: i64) -> BTreeMap<ObjectKey, Held> {
        let mut state = BTreeMap::new();
        for event in self.between(i64::MIN, revision) {
            match event.kind {
                EventKind::Added | EventKind::Modified => {
                    let held =
                        Held { uid: event.uid.clone(), fingerprint: event.fingerprint, revision: event.revision };
                    state.insert(event.key.clone(), held);
                }
                EventKind::Deleted => {
                    state.remove(&event.key);
                }
            }
        }
        state
    }
}
