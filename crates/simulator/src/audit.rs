//! The client audit: judging a list-watch client from what the server saw of it, whatever the
//! client's language (not kube's audit log, which records requests; this judges them).
//!
//! The server records every request of every client ([`record::Request`]: what was asked, what
//! was answered, what a LIST or a WATCH served); [`judge`] walks each client's requests in time
//! order, scope by scope, and reports [`Finding`]s by [`Rule`]. Each rule models a class of bug
//! real clients have shipped (spec client-audit.md) and is tuned so that correct clients give
//! none ([`Thresholds`]). Storage's change log, when given, names the changes a client missed.
//!
//! * [`record`]: what the server records;
//! * `finding.rs`: the rules, findings and the report;
//! * `client.rs`: one client's walk, scope by scope, and what it keeps; `resume.rs`,
//!   `retries.rs`, `stalls.rs`: the rules, as steps of the walk;
//! * [`thresholds`]: each rule's sensitivity.
#![allow(rustdoc::private_intra_doc_links)]

mod client;
mod finding;
pub mod record;
mod resume;
mod retries;
mod stalls;
pub mod thresholds;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use crate::record::HistoryEvent;
pub use finding::{Context, Finding, Report, Rule};
pub use record::Request;
pub use thresholds::Thresholds;

/// Judges every client's requests. `history` is storage's change log (in any order; it may
/// start late: changes before its first revision are taken as unknown, and gaps that reach
/// there are reported as unchecked rather than judged).
pub fn judge(requests: &[Request], history: &[HistoryEvent], context: &Context, thresholds: &Thresholds) -> Report {
    let mut by_client: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
    for request in requests {
        by_client.entry(&request.client).or_default().push(request);
    }
    let mut log: Vec<&HistoryEvent> = history.iter().collect();
    log.sort_by_key(|event| event.revision);
    let changes = client::Changes::new(&log);
    let mut report = Report::default();
    let clients: BTreeSet<&str> = by_client.keys().copied().collect();
    for name in clients {
        let mut requests = by_client.remove(name).unwrap_or_default();
        requests.sort_by_key(|r| r.at_ms);
        let walked = client::walk(name, &requests, &changes, context, thresholds);
        let mut counts: BTreeMap<Rule, usize> = Rule::ALL.iter().map(|rule| (*rule, 0)).collect();
        for finding in &walked.findings {
            *counts.entry(finding.rule).or_default() += 1;
        }
        report.clients.insert(name.to_string(), counts);
        report.findings.extend(walked.findings);
        report.unchecked.extend(walked.unchecked);
    }
    report
}
