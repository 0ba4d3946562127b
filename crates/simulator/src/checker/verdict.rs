//! The checker's answer: a count per guarantee, in total and per client, with a human-readable
//! line for each of the first violations, so a report says both how bad and where to look.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How many violations of one guarantee a client keeps details of; the rest are only counted, so a
/// run that breaks a guarantee on every event still makes a report a person can read.
pub const DETAILS_PER_GUARANTEE: usize = 20;

/// A property every watch, or every client, must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Guarantee {
    /// Event revisions strictly increase on a watch (after its initial events).
    Ordered,
    /// No event is delivered twice on a watch, and no revision carries two events.
    Unique,
    /// Each event carries exactly the state written at its revision, with the type the watch's
    /// filter makes of that write.
    Atomic,
    /// No event the watch should see is missing between its start and the last revision it
    /// delivered.
    Reliable,
    /// A watch resumed at a revision first delivers the first event after it.
    Resumable,
    /// Bookmarks never go back, never fall behind a delivered event, and never pass an event not yet
    /// delivered.
    Bookmarkable,
    /// A streaming list ends its initial events with exactly one `k8s.io/initial-events-end`
    /// bookmark, at or after the revision asked for.
    InitialEventsEnd,
    /// A 410 came only when the revision asked for was compacted, below a cache reset or restart, or
    /// outside the watch cache's window.
    #[serde(rename = "unjustified410")]
    Unjustified410,
    /// A client's final store equals a consistent LIST of its scope at the end of history.
    Converged,
}

impl Guarantee {
    /// Every guarantee, in report order.
    pub const ALL: [Guarantee; 9] = [
        Guarantee::Ordered,
        Guarantee::Unique,
        Guarantee::Atomic,
        Guarantee::Reliable,
        Guarantee::Resumable,
        Guarantee::Bookmarkable,
        Guarantee::InitialEventsEnd,
        Guarantee::Unjustified410,
        Guarantee::Converged,
    ];

    /// The name reports use (the same as its JSON name).
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::Ordered => "ordered",
            Guarantee::Unique => "unique",
            Guarantee::Atomic => "atomic",
            Guarantee::Reliable => "reliable",
            Guarantee::Resumable => "resumable",
            Guarantee::Bookmarkable => "bookmarkable",
            Guarantee::InitialEventsEnd => "initialEventsEnd",
            Guarantee::Unjustified410 => "unjustified410",
            Guarantee::Converged => "converged",
        }
    }

    /// A count of zero for every guarantee, so a report lists the ones that held too.
    pub fn zero_counts() -> BTreeMap<Guarantee, usize> {
        Guarantee::ALL.into_iter().map(|guarantee| (guarantee, 0)).collect()
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken guarantee, said so a person can find it in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// The guarantee broken.
    pub guarantee: Guarantee,
    /// The watch it happened on (its `seq`); `None` for a client-wide check.
    pub watch_seq: Option<u32>,
    /// Which key, which revisions, what was expected.
    pub detail: String,
}

/// The verdict on one client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientVerdict {
    /// The client's id.
    pub id: String,
    /// Violations per guarantee, every guarantee present.
    pub violation_counts: BTreeMap<Guarantee, usize>,
    /// The first [`DETAILS_PER_GUARANTEE`] violations of each guarantee, in the order found.
    pub violations: Vec<Violation>,
    /// Watches the checker could not judge, and why (e.g. a selector that does not parse).
    pub unchecked: Vec<String>,
    /// LISTs after the first.
    pub relists: usize,
    /// Watches opened.
    pub watches: usize,
    /// Events delivered over all its watches (bookmarks not counted).
    #[serde(default)]
    pub events: usize,
    /// Objects in its store at the end.
    #[serde(default)]
    pub final_objects: usize,
    /// Whether the final store equals the end of history seen through the client's scope.
    pub converged: bool,
    /// The first key (in namespace/name order) where they differ.
    pub first_difference: Option<String>,
}

/// The verdict on a whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Whether every guarantee held for every client.
    pub passed: bool,
    /// Violations per guarantee over all clients, every guarantee present.
    pub violations: BTreeMap<Guarantee, usize>,
    /// One verdict per client, in the order given.
    pub clients: Vec<ClientVerdict>,
}

/// What the checks found on one client, collected as they run.
#[derive(Debug)]
pub(crate) struct Findings {
    pub(crate) counts: BTreeMap<Guarantee, usize>,
    pub(crate) violations: Vec<Violation>,
    pub(crate) unchecked: Vec<String>,
}

impl Findings {
    pub(crate) fn new() -> Findings {
        Findings { counts: Guarantee::zero_counts(), violations: Vec::new(), unchecked: Vec::new() }
    }

    /// Counts a violation; `detail` is only written for the first few of each guarantee, because
    /// a broken server may break a guarantee on every event of a long run.
    pub(crate) fn violation(&mut self, guarantee: Guarantee, watch_seq: Option<u32>, detail: impl FnOnce() -> String) {
        let count = self.counts.entry(guarantee).or_default();
        *count += 1;
        if *count <= DETAILS_PER_GUARANTEE {
            self.violations.push(Violation { guarantee, watch_seq, detail: detail() });
        }
    }
}
