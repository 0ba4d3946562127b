//! The watch guarantees of etcd's robustness tests, read for the Kubernetes API
//! (`shared/spec/simulation-and-faults.md` §1.2 and §7), checked against any apiserver without
//! fault injection: the observation half of listwatch's simulator checker.
//!
//! One observation run serves every check here. In a namespace of its own it creates a few
//! objects of the target's resource, starts several observing clients (a LIST then a watch from its resourceVersion; the
//! same with bookmarks and short watches that the server ends and the client resumes from the last
//! resourceVersion it saw; a label selector; streaming lists, unfiltered and selected, when the
//! server serves them), makes a few hundred seeded writes (creates, data updates, label flips in
//! and out of the selector, deletes), one at a time, and a last write every client must see. Each
//! client's requests, deliveries and final store become the simulator's records, and
//! `listwatch_simulator::checker::check` judges them; each guarantee is one check result here,
//! with the checker's violation details.
//!
//! # The history is rebuilt from the tool's own writes
//!
//! The checker judges deliveries against storage's change log. Against an arbitrary server there
//! is no revision log to read, so the log is rebuilt from the writes this tool made and the server
//! acknowledged. That is sound because nobody else writes the resource in the namespace: it is
//! created for the run and named uniquely, so every change of the tool's objects there is one of
//! its own writes, and each acknowledged create or update answers the stored object, whose
//! resourceVersion is storage's revision for that write and whose content is the state written.
//! Deletes answer a Status without a revision; writes going one at a time bound it between the
//! acknowledged writes around it, and the revision comes from the watches within that bound (see
//! `history.rs`).
//!
//! What is therefore not checked:
//!
//! * objects the tool did not write (kube-controller-manager's `kube-root-ca.crt` in every
//!   namespace, for one): their events are left out of the records and counted in the summary;
//! * a delete's exact revision: a DELETED event inside its bounds that every watch agrees on is
//!   taken as right, even if storage gave the delete another revision in that interval;
//! * storage itself: a write storage lost after acknowledging it shows up as events every watch
//!   missed, not as a storage fault; writes of other namespaces and resources are not looked at;
//! * whether a 410 was deserved: the tool knows of no compaction or watch-cache reset on the
//!   server, so every 410 is reported (a server that compacted revisions of the last few seconds
//!   would have deserved none anyway);
//! * watches from `resourceVersion=0` without a streaming list (their unmarked synthetic events
//!   prove little) and clients that relist: a client stops at a 410 or a broken stream.

mod client;
mod history;
mod observation;
mod workload;

use std::fmt::Write as _;
use std::sync::Arc;

use listwatch_simulator::checker::{Guarantee, Verdict};

use crate::{Check, CheckFailure, Target};

pub use observation::Observation;

/// The shared observation of one conformance run, made by the first guarantee check that needs it.
pub type SharedObservation = Arc<tokio::sync::OnceCell<Result<Arc<Observation>, CheckFailure>>>;

/// The section the checks come from (SF: `simulation-and-faults.md`).
const SECTION: &str = "SF§1.2";

/// One check per guarantee, in the checker's report order.
pub fn checks() -> Vec<Check> {
    vec![
        check(
            "watch-guarantee-ordered",
            "under a few hundred writes, every watch's event revisions strictly increase (after its initial events)",
            |t| Box::pin(judge(t, Guarantee::Ordered)),
        ),
        check("watch-guarantee-unique", "no watch delivers an event twice, and no revision carries two events", |t| {
            Box::pin(judge(t, Guarantee::Unique))
        }),
        check(
            "watch-guarantee-atomic",
            "each event carries exactly the state written at its revision, with the type its watch's selector makes of that write",
            |t| Box::pin(judge(t, Guarantee::Atomic)),
        ),
        check(
            "watch-guarantee-reliable",
            "no event a watch should see is missing between its start and the last revision it delivered",
            |t| Box::pin(judge(t, Guarantee::Reliable)),
        ),
        check(
            "watch-guarantee-resumable",
            "a watch started (or resumed) at a resourceVersion first delivers the first change after it",
            |t| Box::pin(judge(t, Guarantee::Resumable)),
        ),
        check(
            "watch-guarantee-bookmarkable",
            "bookmarks never go back, never fall behind a delivered event, never pass an undelivered one",
            |t| Box::pin(judge(t, Guarantee::Bookmarkable)),
        ),
        check(
            "watch-guarantee-initial-events-end",
            "a streaming list's initial events are the state at its initial-events-end bookmark, which comes once",
            |t| Box::pin(judge(t, Guarantee::InitialEventsEnd)),
        ),
        check(
            "watch-guarantee-no-unjustified-410",
            "no watch of the run gets 410 Gone (nothing compacts or resets in a few seconds)",
            |t| Box::pin(judge(t, Guarantee::Unjustified410)),
        ),
        check(
            "watch-guarantee-converged",
            "every observing client's store ends equal to the tool's own writes seen through its selector",
            |t| Box::pin(judge(t, Guarantee::Converged)),
        ),
    ]
}

fn check(
    name: &'static str,
    summary: &'static str,
    run: fn(&Target) -> futures::future::BoxFuture<'_, Result<(), CheckFailure>>,
) -> Check {
    // Alone: a few hundred paced writes would slow the timed checks, and be slowed by them.
    Check { name, section: SECTION, summary, exclusive: true, run }
}

/// The run's observation, made once.
async fn observation(target: &Target) -> Result<Arc<Observation>, CheckFailure> {
    target
        .guarantee_observation
        .get_or_init(|| async {
            match tokio::time::timeout(observation::OBSERVATION_LIMIT, observation::observe(target)).await {
                Ok(observed) => observed.map(Arc::new),
                Err(_) => Err(CheckFailure::failed(format!(
                    "the observation run did not finish within {} s",
                    observation::OBSERVATION_LIMIT.as_secs()
                ))),
            }
        })
        .await
        .clone()
}

/// The verdict on one guarantee.
async fn judge(target: &Target, guarantee: Guarantee) -> Result<(), CheckFailure> {
    let observation = observation(target).await?;
    if guarantee == Guarantee::InitialEventsEnd
        && let Some(why) = &observation.streaming_unsupported
    {
        return Err(CheckFailure::skipped(format!("no streaming list to judge: {why}")));
    }
    if guarantee == Guarantee::Bookmarkable && observation.bookmarks == 0 {
        return Err(CheckFailure::skipped(
            "no watch got a bookmark, so there is none to judge (allowed: servers may send none)",
        ));
    }
    verdict_on(&observation.verdict, guarantee, &observation.summary)
}

/// Passes when the checker counted no violation of `guarantee`; else fails with its details.
fn verdict_on(verdict: &Verdict, guarantee: Guarantee, summary: &str) -> Result<(), CheckFailure> {
    let count = verdict.violations.get(&guarantee).copied().unwrap_or(0);
    if count == 0 {
        return Ok(());
    }
    let mut evidence = String::new();
    for client in &verdict.clients {
        let details = client.violations.iter().filter(|v| v.guarantee == guarantee);
        for violation in details {
            let watch = violation.watch_seq.map_or(String::new(), |seq| format!(", request {seq}"));
            let _ = writeln!(evidence, "client {}{watch}: {}", client.id, violation.detail);
        }
        let shown = client.violations.iter().filter(|v| v.guarantee == guarantee).count();
        let counted = client.violation_counts.get(&guarantee).copied().unwrap_or(0);
        if counted > shown {
            let _ = writeln!(evidence, "client {}: {} more not shown", client.id, counted - shown);
        }
    }
    evidence.push_str(summary);
    Err(CheckFailure::failed_with(
        format!("{count} violation{} of the {guarantee} guarantee", if count == 1 { "" } else { "s" }),
        evidence,
    ))
}

#[cfg(test)]
mod tests {
    use listwatch_simulator::checker::{ClientVerdict, Violation};

    use super::*;

    #[test]
    fn a_guarantee_fails_with_each_clients_details_and_the_run_summary() {
        let mut verdict = Verdict { passed: false, violations: Guarantee::zero_counts(), clients: Vec::new() };
        verdict.violations.insert(Guarantee::Reliable, 3);
        let mut counts = Guarantee::zero_counts();
        counts.insert(Guarantee::Reliable, 3);
        verdict.clients.push(ClientVerdict {
            id: "selector".into(),
            violation_counts: counts,
            violations: vec![
                Violation {
                    guarantee: Guarantee::Reliable,
                    watch_seq: Some(1),
                    detail: "MODIFIED ns/g-01 at 7 missing".into(),
                },
                Violation { guarantee: Guarantee::Ordered, watch_seq: Some(1), detail: "not this one".into() },
            ],
            unchecked: Vec::new(),
            relists: 0,
            watches: 1,
            events: 4,
            final_objects: 2,
            converged: true,
            first_difference: None,
        });
        assert_eq!(verdict_on(&verdict, Guarantee::Ordered, "summary"), Ok(()));
        let CheckFailure::Failed { why, evidence: Some(evidence) } =
            verdict_on(&verdict, Guarantee::Reliable, "the summary").unwrap_err()
        else {
            panic!("a failure with evidence")
        };
        assert_eq!(why, "3 violations of the reliable guarantee");
        assert_eq!(
            evidence,
            "client selector, request 1: MODIFIED ns/g-01 at 7 missing\nclient selector: 2 more not shown\nthe summary"
        );
    }

    #[test]
    fn check_names_follow_the_checkers_guarantees() {
        let names: Vec<&str> = checks().iter().map(|c| c.name).collect();
        assert_eq!(names.len(), Guarantee::ALL.len());
    }
}
