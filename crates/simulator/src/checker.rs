//! The checker: judges what every client observed against storage's own change log, for the watch
//! guarantees of etcd's robustness tests read for the Kubernetes API, deserved 410s, and
//! convergence.
//!
//! Each watch is judged against the change log seen through its own scope (resource, namespace,
//! label and field selector; [`Guarantee`] says what each guarantee means, `watch.rs` how a watch
//! is read). Each client's final store is judged against a LIST of the client's scope at the end of
//! the change log, computed from the log rather than asked of a server (`converge.rs`).
//!
//! The change log must start from an empty store and hold every write of the resources watched;
//! it is sorted by revision here, so it may come in any order.

mod converge;
mod gone;
mod initial;
mod judge;
mod live;
mod run;
mod verdict;
mod watch;

use std::collections::HashMap;

use crate::record::{ClientRecord, HistoryEvent, Known};

pub use run::{RunLimits, run_checks};
pub use verdict::{ClientVerdict, DETAILS_PER_GUARANTEE, Guarantee, Verdict, Violation};

use crate::scope::{Scope, ScopeText};
use crate::view::ScopedHistory;
use gone::GoneJudge;
use verdict::Findings;

/// Judges a run: `history` is storage's change log, `clients` what each client observed, `known`
/// what the run did on purpose that makes a 410 deserved.
pub fn check(history: &[HistoryEvent], clients: &[ClientRecord], known: &Known) -> Verdict {
    let mut log: Vec<&HistoryEvent> = history.iter().collect();
    log.sort_by_key(|write| write.revision);
    let mut revisions: HashMap<(&str, &str), Vec<i64>> = HashMap::new();
    for write in &log {
        revisions.entry((&write.group, &write.resource)).or_default().push(write.revision);
    }
    let mut views = Views { log: &log, derived: HashMap::new() };
    let mut verdicts = Vec::with_capacity(clients.len());
    for client in clients {
        let mut findings = Findings::new();
        for watch in &client.watches {
            let request = &watch.request;
            match views.of(ScopeText::of_watch(request)) {
                Err(why) => findings.unchecked.push(format!("watch {}: {why}", watch.seq)),
                Ok(view) => {
                    let resource_revisions = revisions.get(&(request.group.as_str(), request.resource.as_str()));
                    let gone = GoneJudge {
                        known,
                        resource: &request.resource,
                        revisions: resource_revisions.map_or(&[], Vec::as_slice),
                    };
                    watch::check_watch(watch, view, &gone, &mut findings);
                }
            }
        }
        let differences = match views.of(ScopeText::of_client(client)) {
            Err(why) => vec![format!("the client's scope cannot be judged: {why}")],
            Ok(view) => converge::differences(&view.state_at(i64::MAX), &client.final_store),
        };
        let first_difference = differences.first().map(|first| match differences.len() {
            1 => first.clone(),
            n => format!("{first} (and {} more differences)", n - 1),
        });
        if let Some(difference) = &first_difference {
            findings.violation(Guarantee::Converged, None, || difference.clone());
        }
        verdicts.push(ClientVerdict {
            id: client.id.clone(),
            violation_counts: findings.counts,
            violations: findings.violations,
            unchecked: findings.unchecked,
            relists: client.lists.len().saturating_sub(1),
            watches: client.watches.len(),
            events: client
                .watches
                .iter()
                .map(|w| w.deliveries.iter().filter(|d| matches!(d, crate::record::Delivery::Event { .. })).count())
                .sum(),
            final_objects: client.final_store.len(),
            converged: first_difference.is_none(),
            first_difference,
        });
    }

    let mut violations = Guarantee::zero_counts();
    for client in &verdicts {
        for (guarantee, count) in &client.violation_counts {
            *violations.entry(*guarantee).or_default() += count;
        }
    }
    Verdict { passed: violations.values().all(|&count| count == 0), violations, clients: verdicts }
}

/// The change log through each scope met so far. Watches and clients share scopes (a reflector
/// re-watches with the same selectors), so each scope's view is derived once.
struct Views<'a> {
    log: &'a [&'a HistoryEvent],
    derived: HashMap<ScopeText, Result<ScopedHistory, String>>,
}

impl Views<'_> {
    /// The view through `text`'s scope, or why the scope cannot be judged.
    fn of(&mut self, text: ScopeText) -> &Result<ScopedHistory, String> {
        let log = self.log;
        self.derived
            .entry(text)
            .or_insert_with_key(|text| Scope::parse(text).map(|scope| ScopedHistory::new(log.iter().copied(), &scope)))
    }
}
