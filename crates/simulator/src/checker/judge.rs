//! One watch under judgment: its deliveries read as steps, where its violations go, and the
//! judgments every part of a watch shares (a 410's justification, an event's content). `watch.rs`
//! decides which parts a watch has; `initial.rs` and `live.rs` judge them.

use std::fmt;

use crate::record::{Delivery, EventKind};

use super::gone::GoneJudge;
use super::verdict::{Findings, Guarantee};
use crate::view::{ObjectKey, ScopedHistory};

/// A delivery, read for judging.
pub(super) enum Step<'a> {
    Event(Delivered<'a>),
    Bookmark {
        revision: i64,
        initial_events_end: bool,
    },
    /// Judged by [`WatchCheck::error`], which reads the Status itself.
    Error(&'a Delivery),
}

impl<'a> Step<'a> {
    pub(super) fn of(delivery: &'a Delivery) -> Step<'a> {
        match delivery {
            Delivery::Event { kind, namespace, name, uid, resource_version, fingerprint, .. } => {
                Step::Event(Delivered {
                    kind: *kind,
                    key: ObjectKey::new(namespace, name),
                    uid,
                    revision: *resource_version,
                    fingerprint: *fingerprint,
                })
            }
            Delivery::Bookmark { resource_version, initial_events_end, .. } => {
                Step::Bookmark { revision: *resource_version, initial_events_end: *initial_events_end }
            }
            Delivery::Error { .. } => Step::Error(delivery),
        }
    }
}

/// An event as delivered, with its key.
pub(super) struct Delivered<'a> {
    pub(super) kind: EventKind,
    pub(super) key: ObjectKey,
    pub(super) uid: &'a str,
    pub(super) revision: i64,
    pub(super) fingerprint: u64,
}

impl Delivered<'_> {
    /// The identity uniqueness is judged by.
    pub(super) fn id(&self) -> (i64, ObjectKey) {
        (self.revision, self.key.clone())
    }
}

impl fmt::Display for Delivered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} at {}", self.kind, self.key, self.revision)
    }
}

/// One watch under judgment: where its violations go, and the history it is judged against.
pub(super) struct WatchCheck<'a> {
    pub(super) seq: u32,
    pub(super) view: &'a ScopedHistory,
    pub(super) gone: &'a GoneJudge<'a>,
    pub(super) findings: &'a mut Findings,
}

impl WatchCheck<'_> {
    /// Counts a violation on this watch.
    pub(super) fn flag(&mut self, guarantee: Guarantee, detail: impl FnOnce() -> String) {
        self.findings.violation(guarantee, Some(self.seq), detail);
    }

    /// Judges an ERROR delivery: only a 410 can be undeserved.
    pub(super) fn error(&mut self, delivery: &Delivery, position: Option<i64>) {
        let Delivery::Error { at_ms, code: 410, message, .. } = delivery else { return };
        if let Err(why) = self.gone.judge(*at_ms, position) {
            self.flag(Guarantee::Unjustified410, || format!("410 {message:?} at {at_ms} ms, but the watch was {why}"));
        }
    }

    /// Judges whether `event` carries the state written at its revision; `with_kind` also judges
    /// its type, which synthetic ADDED events do not follow.
    pub(super) fn content(&mut self, event: &Delivered<'_>, with_kind: bool) {
        let problem = match self.view.at(event.revision, &event.key) {
            None => Some(format!("{event}: no write of {} at {} that this watch sees", event.key, event.revision)),
            Some(expected) => {
                let mut what = Vec::new();
                if with_kind && expected.kind != event.kind {
                    what.push(format!("history makes it {}", expected.kind));
                }
                if expected.fingerprint != event.fingerprint {
                    what.push(format!("fingerprint {:#x}, history has {:#x}", event.fingerprint, expected.fingerprint));
                }
                if expected.uid != event.uid {
                    what.push(format!("uid {}, history has {}", event.uid, expected.uid));
                }
                (!what.is_empty()).then(|| format!("{event}: {}", what.join("; ")))
            }
        };
        if let Some(problem) = problem {
            self.flag(Guarantee::Atomic, || problem);
        }
    }
}
