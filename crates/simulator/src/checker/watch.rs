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

use std::collections::HashSet;

use crate::record::{Delivery, WatchRecord};

use super::gone::GoneJudge;
use super::judge::{Step, WatchCheck};
use super::live::LiveStart;
use super::verdict::{Findings, Guarantee};
use crate::view::ScopedHistory;

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
            check.live_events(&deliveries[end.next..], LiveStart::AfterInitialEvents(end));
        }
    } else {
        match start {
            Start::After(revision) => check.live_events(deliveries, LiveStart::Resumed(revision)),
            Start::Now => check.current_state_then_events(deliveries),
        }
    }
}

impl WatchCheck<'_> {
    /// A watch from `""` or `"0"` (see the module doc): every event written as history says, and
    /// none twice.
    fn current_state_then_events(&mut self, deliveries: &[Delivery]) {
        let mut seen = HashSet::new();
        let mut position = None;
        for delivery in deliveries {
            match Step::of(delivery) {
                Step::Event(event) => {
                    if !seen.insert(event.id()) {
                        self.flag(Guarantee::Unique, || format!("{event} delivered twice"));
                        continue;
                    }
                    self.content(&event, false);
                    position = position.max(Some(event.revision));
                }
                Step::Bookmark { revision, .. } => position = position.max(Some(revision)),
                Step::Error(error) => self.error(error, position),
            }
        }
    }
}
