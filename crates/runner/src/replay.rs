//! `listwatch serve --replay FILE`: serves a history recorded by `listwatch simulate --record`
//! to new clients, so a failure seen once can be run again against a fixed client.
//!
//! The server starts on an empty in-memory store without its startup namespaces, and a task
//! writes the recorded changes into storage in order, at the recorded pace divided by
//! `--replay-speed`. Revisions are kept: where the record skips revisions (writes to keys of
//! no served resource), a filler key outside every resource takes them, so each object has the
//! resourceVersion it had when recorded, and a client's resourceVersions mean the same thing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use listwatch_apiserver::ApiState;
use listwatch_simulator::record::{Change, HistoryEvent};
use listwatch_storage::{KeyRange, RangeRequest, Storage, StorageError};
use serde::Deserialize;

/// One line of a record that holds storage's history.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryLine {
    history: HistoryEvent,
    /// When the change was read during the recorded run, in ms from its start.
    #[serde(default)]
    at_ms: u64,
}

/// Reads the record's history (other lines, such as clients' observations, are skipped).
pub fn read(path: &Path) -> anyhow::Result<Vec<(u64, HistoryEvent)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut changes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with("{\"history\"") {
            continue;
        }
        let parsed: HistoryLine =
            serde_json::from_str(line).with_context(|| format!("{}:{}: not a history line", path.display(), i + 1))?;
        if parsed.history.kind == Change::Put && parsed.history.object.is_none() {
            anyhow::bail!(
                "{}:{}: the record holds no objects (record with `listwatch simulate --record`, which asks for them)",
                path.display(),
                i + 1
            );
        }
        changes.push((parsed.at_ms, parsed.history));
    }
    anyhow::ensure!(!changes.is_empty(), "{} holds no history", path.display());
    Ok(changes)
}

/// Writes `changes` into the server's storage at the recorded pace divided by `speed`.
pub async fn run(state: Arc<ApiState>, changes: Vec<(u64, HistoryEvent)>, speed: f64) {
    let storage = state.storage.clone();
    let root = state.config.storage_root.trim_end_matches('/').to_string();
    let filler = format!("{root}/listwatch.dev/replay-filler");
    let started = Instant::now();
    let total = changes.len();
    for (n, (at_ms, change)) in changes.into_iter().enumerate() {
        let due = Duration::from_secs_f64(at_ms as f64 / 1000.0 / speed.max(0.001));
        tokio::time::sleep(due.saturating_sub(started.elapsed())).await;
        if let Err(e) = apply(storage.as_ref(), &root, &filler, &change).await {
            tracing::error!(revision = change.revision, error = %e, "replay stopped");
            return;
        }
        if (n + 1) % 500 == 0 || n + 1 == total {
            tracing::info!(replayed = n + 1, of = total, revision = change.revision, "replaying");
        }
    }
}

/// Writes one change at its recorded revision.
async fn apply(storage: &dyn Storage, root: &str, filler: &str, change: &HistoryEvent) -> anyhow::Result<()> {
    // Fill the revisions the record skips, so this change lands on its own.
    loop {
        let current = storage.current_revision().await?;
        if current + 1 >= change.revision {
            anyhow::ensure!(
                current + 1 == change.revision,
                "storage is at revision {current}, past the record's {}",
                change.revision
            );
            break;
        }
        let value = Bytes::from(format!("{{\"filler\":{current}}}"));
        match storage.create(filler.as_bytes(), value.clone()).await {
            Ok(_) => {}
            Err(StorageError::AlreadyExists) => {
                storage.delete(filler.as_bytes(), None).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let resource = listwatch_meta::Registry
        .resources()
        .iter()
        .find(|r| r.group == change.group && r.plural == change.resource)
        .with_context(|| format!("no served resource {}.{}", change.resource, change.group))?;
    let namespace = (!change.namespace.is_empty()).then_some(change.namespace.as_str());
    let key = resource.object_key(root, namespace, &change.name);
    match change.kind {
        Change::Put => {
            let value = Bytes::from(serde_json::to_vec(change.object.as_ref().context("a Put without its object")?)?);
            let existing = storage.range(RangeRequest::new(KeyRange::key(key.clone()))).await?;
            match existing.kvs.first() {
                Some(kv) => storage.update(key.as_bytes(), value, kv.mod_revision).await.map(|_| ())?,
                None => storage.create(key.as_bytes(), value).await.map(|_| ())?,
            }
        }
        Change::Delete => storage.delete(key.as_bytes(), None).await.map(|_| ())?,
    }
    Ok(())
}
