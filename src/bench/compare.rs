//! `listwatch bench fanout --compare`: the same watchers and the same write stream against
//! listwatch with its watch cache, listwatch uncached, etcd watched directly, and a raw
//! broadcaster that shows what the machine can do; one row each.

use serde::Serialize;

use super::report::LatencySummary;

/// One row of the comparison: what one system delivered to the same watchers for the same
/// writes.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `listwatch`, `listwatch-etcd`, `listwatch-uncached`, `etcd-direct` or `raw-ceiling`.
    pub name: String,
    /// Delivered events / (first write → last event received), over all watchers.
    pub events_per_sec: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// Write sent → event received, over every delivered event.
    pub latency: LatencySummary,
    /// CPU of the process that serves the watchers (listwatch, etcd, the raw broadcaster),
    /// in cores over the measured span.
    pub server_cpu_cores: Option<f64>,
    pub server_peak_rss_bytes: Option<u64>,
    /// etcd's own CPU when etcd is behind the server (the uncached and etcd rows).
    pub etcd_cpu_cores: Option<f64>,
    pub writes: u64,
    pub writes_per_sec: f64,
    /// Events every watcher should have had but did not (0 when the row is complete).
    pub missing_events: u64,
    /// How this row was set up (connections, what serves the watches).
    pub note: String,
}
