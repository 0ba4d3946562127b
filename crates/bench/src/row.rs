//! One row of `bench fanout --compare`: what one system delivered to the same watchers for the
//! same writes. The comparison, the etcd-direct row and the plots all speak it.

use serde::Serialize;

use super::fanout::{FanoutArgs, FanoutResult};
use super::report::LatencySummary;
use super::transport::{Transport, WireEncoding};

/// One row of the comparison: what one system delivered to the same watchers for the same
/// writes, at one point of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `listwatch`, `listwatch-etcd`, `listwatch-uncached`, `etcd-direct` or `raw-ceiling`.
    pub name: String,
    pub watchers: usize,
    pub object_size: usize,
    pub transport: Transport,
    pub encoding: WireEncoding,
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
    /// etcd's own CPU when etcd is behind the server (the listwatch-on-etcd rows).
    pub etcd_cpu_cores: Option<f64>,
    pub writes: u64,
    pub writes_per_sec: f64,
    /// Events delivered, over all watchers.
    pub delivered_events: u64,
    /// CPU seconds of the processes that serve the writes and the watchers (listwatch, and
    /// etcd behind it; etcd alone; the broadcaster) per million events delivered: what the
    /// system pays for fan-out, whatever the write rate, and what the comparison's ratios are
    /// taken from.
    pub cpu_seconds_per_million: Option<f64>,
    /// Events every watcher should have had but did not (0 when the row is complete).
    pub missing_events: u64,
    /// How this row was set up (connections, what serves the watches).
    pub note: String,
}

impl Row {
    /// A row from a `bench fanout` run.
    pub(crate) fn of_fanout(name: &str, args: &FanoutArgs, result: &FanoutResult, note: String) -> Row {
        let (d, u) = (&result.delivery, &result.usage);
        Row {
            name: name.to_string(),
            watchers: args.watchers,
            object_size: args.object_size,
            transport: args.transport,
            encoding: args.encoding,
            events_per_sec: d.events_per_second,
            latency_p50_ms: d.latency.p50_ms,
            latency_p99_ms: d.latency.p99_ms,
            latency: d.latency.clone(),
            server_cpu_cores: u.server_cpu_cores,
            server_peak_rss_bytes: u.server_peak_rss_mib.map(|m| (m * 1024.0 * 1024.0) as u64),
            etcd_cpu_cores: u.etcd_cpu_cores,
            writes: result.writes.succeeded,
            writes_per_sec: result.writes.per_second,
            delivered_events: d.events,
            cpu_seconds_per_million: per_million(
                u.server_cpu_seconds.map(|s| s + u.etcd_cpu_seconds.unwrap_or(0.0)),
                d.events,
            ),
            missing_events: result.completeness.missing,
            note,
        }
    }
}

/// `cpu_seconds` per million of `events`; `None` without a CPU figure or an event.
pub(crate) fn per_million(cpu_seconds: Option<f64>, events: u64) -> Option<f64> {
    cpu_seconds.filter(|_| events > 0).map(|s| s * 1e6 / events as f64)
}

#[cfg(test)]
mod tests {
    use super::per_million;

    #[test]
    fn cpu_per_million_deliveries_needs_both_figures() {
        assert_eq!(per_million(Some(2.5), 500_000), Some(5.0));
        assert_eq!(per_million(None, 500_000), None);
        assert_eq!(per_million(Some(2.5), 0), None, "no delivery, no cost per delivery");
    }
}
