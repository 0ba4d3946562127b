//! One observation run, shared by every guarantee check of a conformance run: a namespace of its
//! own, seeded objects, the observing clients started, the seeded writes, a last write every
//! client must see, then the records judged by the simulator's checker.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use listwatch_simulator::checker::{Verdict, check};
use listwatch_simulator::record::{ClientRecord, Delivery, Known};
use reqwest::Method;
use serde_json::json;
use tokio::sync::watch;

use super::client::{ClientPlan, Followed, RunState, Start};
use super::history::rebuild;
use super::workload::{NAME_PREFIX, Writer};
use crate::watch::EVENT_TIMEOUT;
use crate::{CheckFailure, Target};

/// Objects created before the clients start, so lists and streaming lists have something to
/// show.
const SEEDED: usize = 10;

/// Random writes while the clients watch.
const WRITES: usize = 300;

/// The clients: a plain list+watch, the same with bookmarks and short watches that end and
/// resume, a selector, and streaming lists (unfiltered and selected).
const CLIENTS: [ClientPlan; 5] = [
    ClientPlan { id: "list-watch", selected_only: false, start: Start::List, bookmarks: false, timeout_seconds: None },
    ClientPlan {
        id: "list-watch-bookmarks",
        selected_only: false,
        start: Start::List,
        bookmarks: true,
        timeout_seconds: Some(3),
    },
    ClientPlan { id: "selector", selected_only: true, start: Start::List, bookmarks: true, timeout_seconds: Some(3) },
    ClientPlan {
        id: "streaming-list",
        selected_only: false,
        start: Start::StreamingList,
        bookmarks: true,
        timeout_seconds: Some(4),
    },
    ClientPlan {
        id: "streaming-list-selector",
        selected_only: true,
        start: Start::StreamingList,
        bookmarks: true,
        timeout_seconds: None,
    },
];

/// What one run observed, judged.
#[derive(Debug)]
pub struct Observation {
    pub verdict: Verdict,
    /// Why the server served no streaming list, if it did not.
    pub streaming_unsupported: Option<String>,
    /// Bookmarks delivered on all watches (initial-events-end ones included).
    pub bookmarks: usize,
    /// What was written and watched, for a person reading a failure.
    pub summary: String,
}

/// Runs the observation in a namespace of its own (the run's, suffixed), deleted afterwards.
pub async fn observe(target: &Target) -> Result<Observation, CheckFailure> {
    let namespace = format!("{}-guarantees", target.namespace);
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    let response = target.send(Method::POST, "/api/v1/namespaces", Some(&body)).await?;
    if !matches!(response.status, 200 | 201) {
        return Err(CheckFailure::failed_with(format!("creating the namespace {namespace}"), response.describe()));
    }
    let observed = observe_in(target, &namespace).await;
    // Best effort: the run's own cleanup reports problems with the run's namespace; a leftover
    // here holds only this run's objects.
    let _ = target.send(Method::DELETE, &target.resource.collection(&namespace), None).await;
    let _ = target.send(Method::DELETE, &format!("/api/v1/namespaces/{namespace}"), None).await;
    observed
}

async fn observe_in(target: &Target, namespace: &str) -> Result<Observation, CheckFailure> {
    let seed = seed_from(namespace);
    let mut writer = Writer::new(target, namespace, seed);
    for i in 0..SEEDED {
        writer.create(&format!("{NAME_PREFIX}{i:02}"), i % 2 == 0).await?;
    }
    let started = Instant::now();
    let mut clients = Vec::new();
    let mut streaming_unsupported = None;
    for plan in CLIENTS {
        match plan.start(target, namespace, started).await? {
            Ok(client) => clients.push(client),
            Err(why) => streaming_unsupported = Some(why),
        }
    }

    let (run_tx, run_rx) = watch::channel(RunState::Writing);
    let write = async {
        let written = async {
            for _ in 0..WRITES {
                writer.random_write().await?;
            }
            // Selected, so every client's scope sees it: the point every client must reach.
            writer.create(&format!("{NAME_PREFIX}last"), true).await
        };
        match written.await {
            Ok(last) => {
                let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
                run_tx.send_replace(RunState::Written { revision: crate::fixture::rv(&last), deadline });
                Ok(())
            }
            Err(failure) => {
                run_tx.send_replace(RunState::Aborted);
                Err(failure)
            }
        }
    };
    let follow = futures::future::join_all(clients.into_iter().map(|c| c.follow(run_rx.clone())));
    let (written, followed) = tokio::join!(write, follow);
    written.map_err(|failure| match failure {
        CheckFailure::Failed { why, evidence } => {
            CheckFailure::Failed { why: format!("the workload could not be written: {why}"), evidence }
        }
        skipped => skipped,
    })?;

    let mut records = Vec::new();
    let mut ignored = 0;
    for followed in followed {
        match followed {
            Followed::Recorded { record, ignored: n } => {
                records.push(record);
                ignored += n;
            }
            Followed::Unsupported(why) => streaming_unsupported = Some(why),
        }
    }
    let rebuilt = rebuild(writer.acks(), target.resource, namespace, &records);
    // No compaction or cache reset is known to this tool: every 410 is reported.
    let verdict = check(&rebuilt.history, &records, &Known::default());

    let counts = writer.counts();
    let (first, last) = (
        rebuilt.history.iter().map(|e| e.revision).min().unwrap_or(0),
        rebuilt.history.iter().map(|e| e.revision).max().unwrap_or(0),
    );
    let mut summary = format!(
        "namespace {namespace}, seed {seed}: {} acknowledged writes at revisions {first}..{last} \
         ({} creates, {} data updates, {} label flips, {} deletes)",
        rebuilt.history.len(),
        counts.creates,
        counts.data_updates,
        counts.label_flips,
        counts.deletes
    );
    for record in &records {
        let _ = write!(summary, "\nclient {}: {}", record.id, describe_client(record));
    }
    if let Some(why) = &streaming_unsupported {
        let _ = write!(summary, "\nno streaming-list clients: {why}");
    }
    if rebuilt.unseen_deletes + rebuilt.disputed_deletes > 0 {
        let _ = write!(
            summary,
            "\ndeletes seen on no watch: {} (placed right after the write before them); seen at different revisions: {}",
            rebuilt.unseen_deletes, rebuilt.disputed_deletes
        );
    }
    if ignored > 0 {
        let _ = write!(summary, "\nevents of objects this tool did not write (left out): {ignored}");
    }
    let bookmarks = records
        .iter()
        .flat_map(|r| &r.watches)
        .flat_map(|w| &w.deliveries)
        .filter(|d| matches!(d, Delivery::Bookmark { .. }))
        .count();
    Ok(Observation { verdict, streaming_unsupported, bookmarks, summary })
}

/// `N watches (how each ended), E events, B bookmarks, R errors, S objects at the end`.
fn describe_client(record: &ClientRecord) -> String {
    let deliveries = record.watches.iter().flat_map(|w| &w.deliveries);
    let (mut events, mut bookmarks, mut errors) = (0, 0, 0);
    for delivery in deliveries {
        match delivery {
            Delivery::Event { .. } => events += 1,
            Delivery::Bookmark { .. } => bookmarks += 1,
            Delivery::Error { .. } => errors += 1,
        }
    }
    let ends: Vec<String> = record
        .watches
        .iter()
        .map(|w| match &w.end {
            listwatch_simulator::record::StreamEnd::Closed => "closed".to_string(),
            listwatch_simulator::record::StreamEnd::Open => "open".to_string(),
            listwatch_simulator::record::StreamEnd::Broken { error } => format!("broken: {error}"),
        })
        .collect();
    format!(
        "{} watches ({}), {events} events, {bookmarks} bookmarks, {errors} errors, {} objects at the end",
        record.watches.len(),
        ends.join(", "),
        record.final_store.len()
    )
}

/// A seed that differs per run (the namespace is unique) and is shown in the summary.
fn seed_from(namespace: &str) -> u64 {
    namespace
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x1000_0000_01b3))
}

/// How long the observation may take before its checks give up on it (within the checks'
/// overall deadline).
pub const OBSERVATION_LIMIT: Duration = Duration::from_secs(80);
