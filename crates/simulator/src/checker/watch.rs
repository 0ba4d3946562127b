//! The guarantees of one watch: what it delivered against what its scope's history says it had to.
//!
//! A watch is judged in up to two parts. A streaming list (`sendInitialEvents=true`) first
//! delivers its initial events, judged as a set against the scope's state at the revision of its
//! `initial-events-end` bookmark (`initial.rs`). After that, or from the start for a watch resumed
//! at a revision, every event must follow history one by one (`live.rs`).
//!
//! A watch from `""` or `"0"` without initial events first gets unmarked synthetic ADDED events of
//! some state, in no order, and nothing says where they end; so only what holds for every event is
//! checked there: each carries the state written at its revision (not the event type) and none
//! repeats. The reflectors the simulator runs never open such watches.

use std::fmt;

use crate::record::{Delivery, EventKind, WatchRecord};

use super::Guarantee;
use super::gone::GoneJudge;
use super::verdict::Findings;
use super::view::{ObjectKey, ScopedHistory};

/// What a watch asked for with its `resourceVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// `""` or `"0"`: the current state (or any), then what follows.
    Now,
    /// A number: what follows that revision.
    After(i64),
}

impl Start {
    fn parse(resource_version: &str) -> Option<Start> {
        match resource_version {
            "" | "0" => Some(Start::Now),
            number => number.parse().ok().map(Start::After),
        }
    }

    fn revision(self) -> Option<i64> {
        match self {
            Start::Now => None,
            Start::After(revision) => Some(revision),
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

impl<'a> Delivered<'a> {
    pub(super) fn of(delivery: &'a Delivery) -> Option<Delivered<'a>> {
        match delivery {
            Delivery::Event { kind, namespace, name, uid, resource_version, fingerprint, .. } => Some(Delivered {
                kind: *kind,
                key: ObjectKey::new(namespace, name),
                uid,
                revision: *resource_version,
                fingerprint: *fingerprint,
            }),
            _ => None,
        }
    }

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

/// Judges one watch; its scope's history is `view`.
pub(crate) fn check_watch(watch: &WatchRecord, view: &ScopedHistory, gone: &GoneJudge<'_>, findings: &mut Findings) {
    let Some(start) = Start::parse(&watch.request.resource_version) else {
        let why = format!("resourceVersion {:?} is not a revision", watch.request.resource_version);
        findings.unchecked.push(format!("watch {}: {why}", watch.seq));
        return;
    };
    let mut check = WatchCheck { seq: watch.seq, view, gone, findings };
    let deliveries = watch.deliveries.as_slice();
    if watch.request.send_initial_events == Some(true) {
        if let Some(end) = check.initial_events(deliveries, start.revision()) {
            check.live_events(&deliveries[end.next..], end.revision, false, Some(end));
        }
    } else {
        match start {
            Start::After(revision) => check.live_events(deliveries, revision, true, None),
            Start::Now => check.current_state_then_events(deliveries),
        }
    }
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

    /// A watch from `""` or `"0"` (see the module doc): every event written as history says, and
    /// none twice.
    fn current_state_then_events(&mut self, deliveries: &[Delivery]) {
        let mut seen = std::collections::HashSet::new();
        let mut position = None;
        for delivery in deliveries {
            match delivery {
                Delivery::Event { .. } => {
                    let Some(event) = Delivered::of(delivery) else { continue };
                    if !seen.insert(event.id()) {
                        self.flag(Guarantee::Unique, || format!("{event} delivered twice"));
                        continue;
                    }
                    self.content(&event, false);
                    position = position.max(Some(event.revision));
                }
                Delivery::Bookmark { resource_version, .. } => position = position.max(Some(*resource_version)),
                Delivery::Error { .. } => self.error(delivery, position),
            }
        }
    }
}
