//! What the audit reports: the rules, a finding with its evidence, the report of every client,
//! and what surrounds the records (when the observation began and ended, who stopped).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the audit looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Rule {
    /// A watch resumed later than anything the client was sent (or from the current state
    /// without a LIST) while its scope changed in between: those changes never reached it.
    #[serde(rename = "missed-events", alias = "missedEvents")]
    MissedEvents,
    /// After a 410 for resourceVersion r, r (or older) asked again and again without a LIST.
    #[serde(rename = "410-loop", alias = "goneLoop")]
    GoneLoop,
    /// A request in the scope of a 429 before its Retry-After had passed.
    #[serde(rename = "retry-after-ignored", alias = "retryAfterIgnored")]
    RetryAfterIgnored,
    /// Requests after error answers far faster than any backoff.
    #[serde(rename = "hot-loop", alias = "hotLoop")]
    HotLoop,
    /// More LISTs than the errors and stream ends the client was given explain.
    #[serde(rename = "relist-storm", alias = "relistStorm")]
    RelistStorm,
    /// Sent a bookmark at b, resumed older than b, and got a 410 that b would have avoided.
    #[serde(rename = "bookmarks-ignored", alias = "bookmarksIgnored")]
    BookmarksIgnored,
    /// A stream ended or went silent and the running client did not watch again in time.
    #[serde(rename = "stalled")]
    Stalled,
    /// `sendInitialEvents=true` on a re-watch that could have resumed.
    #[serde(rename = "full-replay", alias = "fullReplay")]
    FullReplay,
    /// Served a state older than what the client had already been sent.
    #[serde(rename = "back-in-time", alias = "backInTime")]
    BackInTime,
}

impl Rule {
    /// Every rule, in report order.
    pub const ALL: [Rule; 9] = [
        Rule::MissedEvents,
        Rule::GoneLoop,
        Rule::RetryAfterIgnored,
        Rule::HotLoop,
        Rule::RelistStorm,
        Rule::BookmarksIgnored,
        Rule::Stalled,
        Rule::FullReplay,
        Rule::BackInTime,
    ];

    /// The rule's name in reports, metrics and scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Rule::MissedEvents => "missed-events",
            Rule::GoneLoop => "410-loop",
            Rule::RetryAfterIgnored => "retry-after-ignored",
            Rule::HotLoop => "hot-loop",
            Rule::RelistStorm => "relist-storm",
            Rule::BookmarksIgnored => "bookmarks-ignored",
            Rule::Stalled => "stalled",
            Rule::FullReplay => "full-replay",
            Rule::BackInTime => "back-in-time",
        }
    }

    /// The kind of real bug the rule catches, for a finding's reader.
    pub fn catches(self) -> &'static str {
        match self {
            Rule::MissedEvents => {
                "re-watching from \"now\" or past what was received (kube-rs #1524's skipped pages, clients that resume from the current resourceVersion)"
            }
            Rule::GoneLoop => "a 410 answered by asking the same resourceVersion again (client-go kubernetes#91073)",
            Rule::RetryAfterIgnored => "throttling not honoured (kopf #1229)",
            Rule::HotLoop => "retries without backoff (kube-rs #577, #717)",
            Rule::RelistStorm => "relisting without cause",
            Rule::BookmarksIgnored => {
                "bookmark resourceVersions not kept: quiet watches expire and relist (python#2223)"
            }
            Rule::Stalled => {
                "a silent or ended stream never replaced (half-open TCP: python#1148, client-node #2127, kubernetes#87615)"
            }
            Rule::FullReplay => "streaming lists replayed on every reconnect (kube-rs #1844)",
            Rule::BackInTime => "a relist served older state than already seen (client-go kubernetes#59848)",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One thing a client did wrong, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The client.
    pub client: String,
    /// The rule.
    pub rule: Rule,
    /// The scope, as [`super::record::scope_text`] names it.
    pub scope: String,
    /// When it happened (ms since the epoch): the request that shows it.
    pub at_ms: u64,
    /// What happened, in one sentence.
    pub summary: String,
    /// The requests, resourceVersions and changes involved, one per line.
    pub evidence: Vec<String>,
}

/// What surrounds the records: when the observation started and ended, and which clients were
/// still running when (for `stalled`).
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Times in evidence are given from here (ms since the epoch; the run's start).
    pub epoch_ms: u64,
    /// The end of the observation (ms since the epoch): a deadline after it cannot have passed.
    pub end_ms: u64,
    /// Clients known to have stopped, and when (ms since the epoch); every other client is
    /// taken to run until `end_ms`.
    pub stopped: BTreeMap<String, u64>,
    /// Spans (ms since the epoch) whose requests are not in the records: a server's records
    /// read before it was restarted or killed, and what it served between that read and its
    /// going away lost with it. A client that resumes after one of them may have been sent
    /// more than the records show, so its resume is not judged (it is listed as unchecked).
    pub blind: Vec<(u64, u64)>,
}

/// The findings of every client, with counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Every client seen, with its findings per rule (every rule present).
    pub clients: BTreeMap<String, BTreeMap<Rule, usize>>,
    /// The findings, by client then time.
    pub findings: Vec<Finding>,
    /// What could not be judged, and why (e.g. storage's history did not reach back far enough).
    pub unchecked: Vec<String>,
}

impl Report {
    /// The findings of `client`.
    pub fn of<'a>(&'a self, client: &'a str) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings.iter().filter(move |f| f.client == client)
    }

    /// Whether no client has a finding.
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }
}
