//! The initial events of a streaming list (`sendInitialEvents=true`): ADDED events in any order,
//! then one bookmark annotated `k8s.io/initial-events-end` at revision B. Together they are a LIST
//! at B, so they are judged as a set against the scope's state at B: a missing object is a lost
//! event (`reliable`), an extra or stale one is a state never written there (`atomic`).
//!
//! Anything else before the end bookmark (a MODIFIED or DELETED event, a plain bookmark) means the
//! server went on without ending the initial events: `initialEventsEnd`. A stream that stops
//! before the end bookmark is not a violation; it was cut while listing.

use std::collections::{BTreeMap, HashSet};

use crate::record::{Delivery, EventKind};

use super::judge::{Delivered, Step, WatchCheck};
use super::verdict::Guarantee;
use crate::view::ObjectKey;

/// Where the initial events ended.
pub(super) struct InitialEnd {
    /// The index of the first delivery after the end bookmark.
    pub(super) next: usize,
    /// The end bookmark's revision.
    pub(super) revision: i64,
    /// The initial events, by the identity uniqueness is judged by.
    pub(super) seen: HashSet<(i64, ObjectKey)>,
}

impl WatchCheck<'_> {
    /// Judges the initial events; `None` if they never ended.
    pub(super) fn initial_events(&mut self, deliveries: &[Delivery], asked: Option<i64>) -> Option<InitialEnd> {
        let mut initial: BTreeMap<ObjectKey, Delivered<'_>> = BTreeMap::new();
        for (i, delivery) in deliveries.iter().enumerate() {
            match Step::of(delivery) {
                Step::Event(event) => {
                    if event.kind != EventKind::Added {
                        self.flag(Guarantee::InitialEventsEnd, || {
                            format!("{event} before the initial-events-end bookmark")
                        });
                        return None;
                    }
                    if initial.contains_key(&event.key) {
                        self.flag(Guarantee::Unique, || {
                            format!("{event}: {} twice among the initial events", event.key)
                        });
                    } else {
                        initial.insert(event.key.clone(), event);
                    }
                }
                Step::Bookmark { revision, initial_events_end: true } => {
                    if let Some(asked) = asked.filter(|&asked| revision < asked) {
                        self.flag(Guarantee::InitialEventsEnd, || {
                            format!("initial-events-end bookmark at {revision}, below the {asked} asked for")
                        });
                    }
                    self.compare_initial(&initial, revision);
                    let seen = initial.values().map(Delivered::id).collect();
                    return Some(InitialEnd { next: i + 1, revision, seen });
                }
                Step::Bookmark { revision, .. } => {
                    self.flag(Guarantee::InitialEventsEnd, || {
                        format!("a bookmark at {revision} before the initial-events-end bookmark")
                    });
                    return None;
                }
                Step::Error(error) => self.error(error, asked),
            }
        }
        None
    }

    /// Judges the initial events as a LIST at `revision`.
    fn compare_initial(&mut self, initial: &BTreeMap<ObjectKey, Delivered<'_>>, revision: i64) {
        let state = self.view.state_at(revision);
        for (key, event) in initial {
            let problem = match state.get(key) {
                None => Some(format!("not in the scope at {revision}")),
                Some(held)
                    if (held.revision, held.fingerprint, held.uid.as_str())
                        != (event.revision, event.fingerprint, event.uid) =>
                {
                    Some(format!(
                        "the state at {revision} is rv {}, fingerprint {:#x}, uid {}",
                        held.revision, held.fingerprint, held.uid
                    ))
                }
                Some(_) => None,
            };
            if let Some(problem) = problem {
                self.flag(Guarantee::Atomic, || {
                    format!("initial {event} (fingerprint {:#x}): {problem}", event.fingerprint)
                });
            }
        }
        for (key, held) in &state {
            if !initial.contains_key(key) {
                self.flag(Guarantee::Reliable, || {
                    format!("{key} (rv {}) missing from the initial events ending at {revision}", held.revision)
                });
            }
        }
    }
}
