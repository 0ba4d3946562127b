//! `listwatch bench fanout`: N watchers of ConfigMaps (or, with `--kind widgets`, of a custom
//! resource) and one writer; how many events per second the server delivers, how long after a
//! write each watcher sees it, and whether every watcher saw every write.
//!
//! 1. Setup: a probe ConfigMap calibrates the padding to `--object-size`; a `limit=1` LIST
//!    gives the common starting resourceVersion.
//! 2. N watcher tasks each open `GET .../configmaps?watch=1&resourceVersion=<start>` on their
//!    own connection (at most 64 connecting at once) and report when the response arrived.
//! 3. Writers (`--write-connections`, each its own connection, one request in flight) create,
//!    then update, `--objects-per-connection` ConfigMaps each, paced to `--writes-per-sec` (or
//!    as fast as they are answered with `max`), for `--duration`. Each write's send instant is
//!    logged under the resourceVersion its response names ([`super::rv_log`]).
//! 4. Watchers cut events out of the stream ([`super::decode`]), check that resourceVersions
//!    only go up, and record `receive instant − send instant` of every event in their own
//!    histogram. A stream that ends early (the server closes watchers that do not keep up) is
//!    re-opened from the last resourceVersion seen, as clients do, and counted.
//! 5. After the writes, the run waits (up to `--drain-timeout`) until every watcher has the
//!    last write, then stops the watchers and merges their figures.
//!
//! Delivered events/s is all events received / (first write → last event received); the rate
//! during the write phase alone is reported too. The server's CPU seconds and peak RSS, and the
//! bench's own CPU seconds, cover the same span.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use serde::Serialize;
use tokio::sync::{Semaphore, oneshot, watch};

use super::ServerArgs;
use super::decode::{Decoded, EventDecoder, resource_version_of};
use super::http::HttpConnection;
use super::objects::{self, BenchKind};
use super::report::{self, LatencySummary};
use super::rv_log::WriteLog;
use super::server::{
    ProcessUsage, ServerUnderTest, cpu_between, machine_busy_seconds, other_cpu_seconds, system_between,
};
use super::transport::{Connector, Opened, Transport, WireEncoding};

#[derive(Args, Debug, Clone)]
pub struct FanoutArgs {
    /// Number of watch clients (one connection each).
    #[arg(long, default_value_t = 100)]
    pub(super) watchers: usize,
    /// Writes per second, or `max` (also `0`) for as fast as the write connections go.
    #[arg(long, default_value = "max", value_parser = parse_rate)]
    pub(super) writes_per_sec: WriteRate,
    /// How long to write, e.g. `20s`.
    #[arg(long, default_value = "20s", value_parser = super::parse_duration)]
    pub(super) duration: Duration,
    /// What is written and watched: ConfigMaps, or widgets (a custom resource whose CRD the
    /// bench creates) to compare the custom-resource path with the built-in one.
    #[arg(long, value_enum, default_value = "configmaps")]
    pub(super) kind: objects::KindArg,
    /// Approximate size of each stored object, in bytes (padding in `data.payload`).
    #[arg(long, default_value_t = 1024)]
    pub(super) object_size: usize,
    /// Fully decode every event with serde_json instead of only finding its resourceVersion.
    #[arg(long)]
    pub(super) decode: bool,
    /// Wire encoding of the watch streams.
    #[arg(long, value_enum, default_value = "json")]
    pub(super) encoding: WireEncoding,
    /// Transport of the watch streams.
    #[arg(long, value_enum, default_value = "http1")]
    pub(super) transport: Transport,
    /// With `--transport http2`: watches per connection.
    #[arg(long, default_value_t = 100)]
    pub(super) streams_per_connection: usize,
    /// Connections that write (one request in flight on each).
    #[arg(long, default_value_t = 8)]
    pub(super) write_connections: usize,
    /// ConfigMaps each write connection cycles through.
    #[arg(long, default_value_t = 16)]
    pub(super) objects_per_connection: usize,
    /// Namespace of the ConfigMaps and the watches.
    #[arg(long, default_value = "default")]
    pub(super) namespace: String,
    /// After the writes, wait at most this long for every watcher to receive the last one.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub(super) drain_timeout: Duration,
    /// Write the result as JSON here.
    #[arg(long)]
    pub(super) output: Option<PathBuf>,
    /// Run the same watchers and writes against listwatch, listwatch uncached, etcd watched
    /// directly and a raw broadcaster, one row each (see `compare.rs`).
    #[arg(long)]
    pub(super) compare: bool,
    /// Repeat the run over values, e.g. `--sweep watchers=10,100,1000` (also `object-size`,
    /// `transport`, `encoding`; repeat the flag to sweep a grid). Writes every point to
    /// `--output` and SVG plots to `--plots`.
    #[arg(long)]
    pub(super) sweep: Vec<String>,
    /// Where a sweep writes its plots (events/s and p99 latency against watchers).
    #[arg(long, default_value = "crates/bench/results")]
    pub(super) plots: PathBuf,
    /// Spread the watchers over this many namespaces (`<namespace>`, `<namespace>-1`, ...);
    /// writes go to the first only, so the rest see no events: what dispatch costs when an
    /// event concerns a fraction of the watchers.
    #[arg(long, default_value_t = 1)]
    pub(super) watcher_namespaces: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// `--writes-per-sec`.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteRate {
    Max,
    PerSecond(f64),
}

pub(super) fn parse_rate(text: &str) -> Result<WriteRate, String> {
    if text.eq_ignore_ascii_case("max") {
        return Ok(WriteRate::Max);
    }
    match text.parse::<f64>() {
        Ok(0.0) => Ok(WriteRate::Max),
        Ok(r) if r.is_finite() && r > 0.0 => Ok(WriteRate::PerSecond(r)),
        _ => Err(format!("{text:?} is neither a positive number nor `max`")),
    }
}

/// One watcher's running totals, read by the progress display and the drain wait. Aligned so
/// that watchers on different cores never share a cache line.
#[repr(align(128))]
#[derive(Default)]
struct WatcherCounters {
    events: AtomicU64,
    bytes: AtomicU64,
    last_rv: AtomicU64,
    /// When the last event arrived (the write log's clock).
    last_event_at: AtomicU64,
    early_ends: AtomicU64,
    /// Set when the watcher stopped for good (failed or expired).
    done: AtomicU64,
}

/// What every watcher shares.
struct WatchPlan {
    connector: Connector,
    encoding: WireEncoding,
    full_decode: bool,
    /// Watched collections (one per namespace the watchers are spread over; writes go to the
    /// first).
    collections: Vec<String>,
    log: Arc<WriteLog>,
    connecting: Semaphore,
}

/// One watcher's result.
struct WatcherOutcome {
    latency: Histogram<u32>,
    events: u64,
    duplicates: u64,
    malformed: u64,
    /// Events whose write is not in the log (even at the end).
    unmatched: u64,
    early_ends: u64,
    /// Got 410 Gone on a re-watch: the rest of the run is lost to this watcher.
    expired: bool,
    failure: Option<String>,
    bytes: u64,
}

/// Watches until `stop`, re-watching from the last resourceVersion when the server ends the
/// stream. `ready` hears about the first watch's answer.
async fn watcher(
    plan: Arc<WatchPlan>,
    collection: usize,
    start_rv: u64,
    counters: Arc<WatcherCounters>,
    mut stop: watch::Receiver<bool>,
    ready: oneshot::Sender<Result<(), String>>,
) -> WatcherOutcome {
    let log = &plan.log;
    let mut outcome = WatcherOutcome {
        latency: report::latency_histogram(),
        events: 0,
        duplicates: 0,
        malformed: 0,
        unmatched: 0,
        early_ends: 0,
        expired: false,
        failure: None,
        bytes: 0,
    };
    let mut ready = Some(ready);
    let mut decoder = EventDecoder::new(plan.encoding, plan.full_decode);
    // Events that arrived before their write's response did: (resourceVersion, received at).
    let mut unresolved: Vec<(u64, u64)> = Vec::new();
    let mut last_rv = start_rv;
    'watches: loop {
        let path = format!("{}?watch=1&resourceVersion={last_rv}", plan.collections[collection]);
        let opened = {
            let _permit = plan.connecting.acquire().await;
            plan.connector.open(&path).await
        };
        let mut stream = match opened {
            Ok(Opened::Streaming(stream)) => stream,
            Ok(Opened::Refused(status, body)) => {
                outcome.failure = Some(format!("watch answered {status}: {}", String::from_utf8_lossy(&body)));
                break;
            }
            Err(e) => {
                outcome.failure = Some(format!("opening a watch: {e:#}"));
                break;
            }
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
        decoder.reset();
        loop {
            let next = tokio::select! {
                biased;
                _ = stop.wait_for(|stopped| *stopped) => break 'watches,
                next = stream.next_bytes() => next,
            };
            // The server ended the stream (or the connection broke): re-watch.
            let Some(Ok(bytes)) = next else {
                outcome.early_ends += 1;
                counters.early_ends.fetch_add(1, Ordering::Relaxed);
                continue 'watches;
            };
            let received = log.now();
            let events_before = outcome.events;
            let mut error = None;
            decoder.feed(&bytes, &mut |event| match event {
                Decoded::Object { resource_version } => {
                    if resource_version <= last_rv {
                        outcome.duplicates += 1;
                        return;
                    }
                    last_rv = resource_version;
                    outcome.events += 1;
                    match log.sent_at(resource_version) {
                        Some(sent) => {
                            report::record(&mut outcome.latency, Duration::from_nanos(received.saturating_sub(sent)));
                        }
                        None => unresolved.push((resource_version, received)),
                    }
                }
                Decoded::Bookmark { .. } => {}
                Decoded::Error { code } => error = Some(code),
                Decoded::Malformed => outcome.malformed += 1,
            });
            outcome.bytes += bytes.len() as u64;
            counters.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            if outcome.events > events_before {
                counters.events.fetch_add(outcome.events - events_before, Ordering::Relaxed);
                counters.last_rv.store(last_rv, Ordering::Release);
                counters.last_event_at.store(received, Ordering::Release);
            }
            if !unresolved.is_empty() {
                resolve(log, &mut unresolved, &mut outcome.latency);
            }
            match error {
                None => {}
                Some(Some(410)) => {
                    outcome.expired = true;
                    break 'watches;
                }
                Some(code) => {
                    outcome.failure = Some(format!("ERROR event (code {code:?})"));
                    break 'watches;
                }
            }
        }
    }
    if let Some(ready) = ready.take() {
        let _ = ready.send(Err(outcome.failure.clone().unwrap_or_else(|| "stopped before connecting".into())));
    }
    counters.done.store(1, Ordering::Release);
    resolve(log, &mut unresolved, &mut outcome.latency);
    outcome.unmatched = unresolved.len() as u64;
    outcome
}

/// Records the latency of events whose write has been logged since they arrived.
fn resolve(log: &WriteLog, unresolved: &mut Vec<(u64, u64)>, latency: &mut Histogram<u32>) {
    unresolved.retain(|&(rv, received)| match log.sent_at(rv) {
        Some(sent) => {
            report::record(latency, Duration::from_nanos(received.saturating_sub(sent)));
            false
        }
        None => true,
    });
}

/// What every writer shares.
struct WritePlan {
    addr: SocketAddr,
    kind: BenchKind,
    namespace: String,
    tag: String,
    padding: String,
    rate: WriteRate,
    objects_per_connection: usize,
    start: Instant,
    end: Instant,
    log: Arc<WriteLog>,
    /// The next write's number (paces the writers together).
    tickets: AtomicU64,
    written: AtomicU64,
}

struct WriterOutcome {
    latency: Histogram<u32>,
    written: u64,
    failed: u64,
    /// Successful writes whose response had no readable resourceVersion.
    unlogged: u64,
    first_error: Option<String>,
}

/// Creates, then keeps updating, this writer's ConfigMaps until the end of the write phase.
async fn writer(plan: Arc<WritePlan>, index: usize) -> anyhow::Result<WriterOutcome> {
    let mut connection = HttpConnection::connect(plan.addr).await?;
    let kind = &plan.kind;
    let collection = kind.collection(&plan.namespace);
    let names: Vec<String> =
        (0..plan.objects_per_connection.max(1)).map(|j| format!("fanout-{}-{index}-{j}", plan.tag)).collect();
    let paths: Vec<String> = names.iter().map(|n| kind.object_path(&plan.namespace, n)).collect();
    // Per object: None until created, then the resourceVersion of the writer's last answer.
    let mut versions: Vec<Option<u64>> = vec![None; names.len()];
    let mut outcome =
        WriterOutcome { latency: report::latency_histogram(), written: 0, failed: 0, unlogged: 0, first_error: None };
    let mut slot = 0;
    loop {
        let ticket = plan.tickets.fetch_add(1, Ordering::Relaxed);
        match plan.rate {
            WriteRate::PerSecond(rate) => {
                let due = plan.start + Duration::from_secs_f64(ticket as f64 / rate);
                if due >= plan.end {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
            }
            WriteRate::Max => {
                if Instant::now() >= plan.end {
                    break;
                }
            }
        }
        let (method, path, body) = match versions[slot] {
            Some(replaces) => (
                Method::PUT,
                &paths[slot],
                kind.update_json(&plan.namespace, &names[slot], ticket, &plan.padding, replaces),
            ),
            None => (Method::POST, &collection, kind.json(&plan.namespace, &names[slot], ticket, &plan.padding)),
        };
        let sent = plan.log.now();
        let sent_instant = Instant::now();
        match connection.request(method, path, Some(body)).await {
            Ok((status, answer)) if status.is_success() => {
                report::record(&mut outcome.latency, sent_instant.elapsed());
                let written = resource_version_of(&answer);
                match written {
                    Some(rv) if plan.log.record(rv, sent) => {}
                    _ => outcome.unlogged += 1,
                }
                versions[slot] = Some(written.unwrap_or(0));
                outcome.written += 1;
                plan.written.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, answer)) => {
                outcome.failed += 1;
                if status == StatusCode::CONFLICT && versions[slot].is_none() {
                    // Created by an earlier run with this tag: replace whatever version it has.
                    versions[slot] = Some(0);
                }
                outcome.first_error.get_or_insert_with(|| format!("{status}: {}", String::from_utf8_lossy(&answer)));
            }
            Err(e) => {
                outcome.failed += 1;
                outcome.first_error.get_or_insert_with(|| format!("{e:#}"));
                connection = HttpConnection::connect(plan.addr).await?;
            }
        }
        slot = (slot + 1) % names.len();
    }
    Ok(outcome)
}

#[derive(Serialize)]
pub(super) struct Parameters {
    pub(super) kind: objects::KindArg,
    pub(super) watchers: usize,
    /// Namespaces the watchers are spread over (writes go to the first).
    pub(super) watcher_namespaces: usize,
    pub(super) writes_per_sec: WriteRate,
    pub(super) duration_seconds: f64,
    pub(super) object_size: usize,
    pub(super) padding_bytes: usize,
    pub(super) full_decode: bool,
    pub(super) encoding: WireEncoding,
    pub(super) transport: Transport,
    pub(super) write_connections: usize,
    pub(super) objects_per_connection: usize,
    pub(super) namespace: String,
}

#[derive(Serialize)]
pub(super) struct WriteFigures {
    pub(super) succeeded: u64,
    pub(super) failed: u64,
    /// Successful writes whose resourceVersion could not be read (not matched to events).
    pub(super) unlogged: u64,
    pub(super) per_second: f64,
    /// Round trip of each write request.
    pub(super) latency: LatencySummary,
    pub(super) first_error: Option<String>,
}

#[derive(Serialize)]
pub(super) struct DeliveryFigures {
    pub(super) events: u64,
    /// events / (first write → last event received).
    pub(super) events_per_second: f64,
    /// Events received while writing / write phase.
    pub(super) events_per_second_during_writes: f64,
    pub(super) bytes: u64,
    pub(super) mib_per_second: f64,
    /// Events per CPU second of the server, and of server + bench: capacity figures that hold
    /// up when other processes share the machine (2 cores × this = the 2-core ceiling).
    pub(super) events_per_server_cpu_second: Option<f64>,
    pub(super) events_per_server_and_bench_cpu_second: Option<f64>,
    /// Receive instant − the write's send instant, over every delivered event.
    pub(super) latency: LatencySummary,
    pub(super) delivery_window_seconds: f64,
    pub(super) drain_seconds: f64,
    pub(super) drained: bool,
}

#[derive(Serialize)]
pub(super) struct Completeness {
    /// Every watcher of the written namespace should get every logged write.
    pub(super) expected_per_watcher: u64,
    pub(super) missing: u64,
    pub(super) duplicates: u64,
    pub(super) unmatched: u64,
    pub(super) malformed: u64,
    /// Streams the server ended early (slow watchers closed), each re-watched from its last RV.
    pub(super) early_ends: u64,
    pub(super) watchers_with_early_ends: u64,
    /// Re-watches answered 410 Gone (the watcher stopped).
    pub(super) expired: u64,
    pub(super) failed: u64,
    pub(super) first_failure: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Usage {
    pub(super) server_cpu_seconds: Option<f64>,
    pub(super) server_cpu_cores: Option<f64>,
    /// The kernel's part of the server's CPU seconds (socket writes, epoll).
    pub(super) server_system_cpu_seconds: Option<f64>,
    pub(super) server_peak_rss_mib: Option<f64>,
    /// etcd's CPU, when the run knows its pid (`bench fanout --compare`).
    pub(super) etcd_cpu_seconds: Option<f64>,
    pub(super) etcd_cpu_cores: Option<f64>,
    pub(super) bench_cpu_seconds: Option<f64>,
    pub(super) bench_cpu_cores: Option<f64>,
    /// Everything else the machine ran meanwhile (other processes): should be near 0.
    pub(super) other_cpu_cores: Option<f64>,
}

#[derive(Serialize)]
pub(super) struct FanoutResult {
    pub(super) command: String,
    pub(super) server: String,
    pub(super) backend: String,
    pub(super) parameters: Parameters,
    pub(super) writes: WriteFigures,
    pub(super) delivery: DeliveryFigures,
    pub(super) completeness: Completeness,
    pub(super) usage: Usage,
}

fn sum(counters: &[Arc<WatcherCounters>], field: impl Fn(&WatcherCounters) -> &AtomicU64) -> u64 {
    counters.iter().map(|c| field(c).load(Ordering::Relaxed)).sum()
}

pub async fn run(args: FanoutArgs) -> anyhow::Result<()> {
    let server = ServerUnderTest::start(&args.server).await?;
    let result = measure(&args, &server, None).await.map_err(|e| server.annotate(e))?;
    print_summary(&result);
    if let Some(path) = &args.output {
        report::write_json(path, &result)?;
    }
    server.stop().await;
    Ok(())
}

/// One fan-out run against `server`; with `etcd_pid`, etcd's CPU over the same span too.
///
/// The steps, in the order the module doc gives them: [`set_up`], [`open_watchers`], then the
/// CPU figures before, [`write`], [`drain`], the figures after, and [`collect`] and
/// [`summarize`]. The span the CPU figures cover starts just before the first write and ends
/// once the watchers have drained, so it holds the writes and every delivery they cause, and
/// neither connecting the watchers nor tearing them down.
pub(super) async fn measure(
    args: &FanoutArgs,
    server: &ServerUnderTest,
    etcd_pid: Option<u32>,
) -> anyhow::Result<FanoutResult> {
    let setup = set_up(args, server).await?;
    let watchers = open_watchers(args, server, &setup).await?;
    let before = UsageSnapshot::take(server, etcd_pid);
    let writes = write(args, server, &setup, &watchers.counters).await?;
    let drain = drain(args, &watchers, &setup.log, &writes.bar).await;
    let after = UsageSnapshot::take(server, etcd_pid);
    let span = writes.start.elapsed().as_secs_f64();
    writes.bar.finish_and_clear();
    let delivered = collect(watchers, &setup.log, writes.start, writes.seconds).await?;
    let usage = usage_between(&before, &after, span);
    Ok(summarize(args, server, &setup, writes, drain, delivered, usage))
}

/// What the run writes and watches, settled before any watcher starts.
struct Setup {
    /// This run's tag in object names (runs against one server do not collide).
    tag: String,
    kind: BenchKind,
    /// Padding per object that makes it `--object-size` bytes as stored.
    padding_bytes: usize,
    /// The resourceVersion every watcher starts from.
    start_rv: u64,
    /// Watched collections, one per namespace the watchers are spread over; writes go to the
    /// first.
    collections: Vec<String>,
    /// Every write's send instant by resourceVersion, which the watchers' latencies read.
    log: Arc<WriteLog>,
}

/// Prepares the kind (a custom resource's CRD), calibrates the padding with a probe
/// object, and takes the starting resourceVersion from a `limit=1` LIST, so that every watcher
/// starts at one revision and must see every write after it.
async fn set_up(args: &FanoutArgs, server: &ServerUnderTest) -> anyhow::Result<Setup> {
    let tag = objects::run_tag();
    let mut control = HttpConnection::connect(server.addr).await?;
    let kind = objects::prepare(&mut control, args.kind, &args.namespace).await?;
    let collection = kind.collection(&args.namespace);
    let probe = format!("fanout-{tag}-probe");
    let padding_bytes =
        objects::calibrate_padding(&mut control, &kind, &args.namespace, &probe, args.object_size).await?;
    let (status, listed) = control.request(Method::GET, &format!("{collection}?limit=1"), None).await?;
    if !status.is_success() {
        bail!("LIST {collection} answered {status}: {}", String::from_utf8_lossy(&listed));
    }
    let start_rv = resource_version_of(&listed).context("the LIST has no resourceVersion")?;
    // Watching a namespace does not need it to exist (as in kube), so the others are not created.
    let collections: Vec<String> = std::iter::once(collection)
        .chain((1..args.watcher_namespaces.max(1)).map(|k| kind.collection(&format!("{}-{k}", args.namespace))))
        .collect();
    let log = Arc::new(WriteLog::new(start_rv + 1));
    Ok(Setup { tag, kind, padding_bytes, start_rv, collections, log })
}

/// The running watchers.
struct Watchers {
    /// Each watcher's running totals, in watcher order (watcher `i` watches collection
    /// `i % spread`).
    counters: Vec<Arc<WatcherCounters>>,
    handles: Vec<tokio::task::JoinHandle<WatcherOutcome>>,
    /// Flipped to stop every watcher.
    stop: watch::Sender<bool>,
    /// How many collections the watchers are spread over.
    spread: usize,
}

/// Starts `--watchers` watcher tasks (at most 64 connecting at once), spread round the
/// collections, and waits until every one has its watch's answer, so that no write happens
/// before every watcher is in place.
async fn open_watchers(args: &FanoutArgs, server: &ServerUnderTest, setup: &Setup) -> anyhow::Result<Watchers> {
    let spread = setup.collections.len();
    let plan = Arc::new(WatchPlan {
        connector: Connector::new(args.transport, args.encoding, server.addr, args.streams_per_connection),
        encoding: args.encoding,
        full_decode: args.decode,
        collections: setup.collections.clone(),
        log: setup.log.clone(),
        connecting: Semaphore::new(64),
    });
    let (stop, stop_rx) = watch::channel(false);
    let connect_started = Instant::now();
    let mut counters = Vec::with_capacity(args.watchers);
    let mut handles = Vec::with_capacity(args.watchers);
    let mut readies = Vec::with_capacity(args.watchers);
    for i in 0..args.watchers {
        let c = Arc::new(WatcherCounters::default());
        let (ready_tx, ready_rx) = oneshot::channel();
        let collection = i % spread;
        handles.push(tokio::spawn(watcher(
            plan.clone(),
            collection,
            setup.start_rv,
            c.clone(),
            stop_rx.clone(),
            ready_tx,
        )));
        counters.push(c);
        readies.push(ready_rx);
    }
    for ready in readies {
        match ready.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("a watcher could not start: {e}"),
            Err(_) => bail!("a watcher ended before it started"),
        }
    }
    eprintln!(
        "bench: {} watchers from resourceVersion {} connected in {:.2} s; writing for {:?}",
        args.watchers,
        setup.start_rv,
        connect_started.elapsed().as_secs_f64(),
        args.duration
    );
    Ok(Watchers { counters, handles, stop, spread })
}

/// CPU figures at one instant: the server's, the bench's own, the machine's and etcd's. Taken
/// before the writes and after the drain; the differences are the run's usage.
struct UsageSnapshot {
    server: Option<ProcessUsage>,
    bench: Option<ProcessUsage>,
    machine: Option<f64>,
    etcd: Option<ProcessUsage>,
}

impl UsageSnapshot {
    fn take(server: &ServerUnderTest, etcd_pid: Option<u32>) -> UsageSnapshot {
        let (server, bench, machine) = (server.usage(), ProcessUsage::of_self(), machine_busy_seconds());
        UsageSnapshot { server, bench, machine, etcd: etcd_pid.and_then(ProcessUsage::of) }
    }
}

/// The write phase's figures.
struct WritePhase {
    /// When the first write was due: the start of the delivery window and of the usage span.
    start: Instant,
    /// How long the writers ran.
    seconds: f64,
    /// Events the watchers had received when the writers finished.
    events_during_writes: u64,
    latency: Histogram<u64>,
    succeeded: u64,
    failed: u64,
    unlogged: u64,
    first_error: Option<String>,
    /// The progress display, which the drain goes on using.
    bar: indicatif::ProgressBar,
}

/// Runs `--write-connections` writers, paced together, for `--duration`, showing the
/// write and event rates as they go, then merges what the writers report. Each write's send
/// instant goes into the log, which is what the watchers' latencies are measured against.
async fn write(
    args: &FanoutArgs,
    server: &ServerUnderTest,
    setup: &Setup,
    counters: &[Arc<WatcherCounters>],
) -> anyhow::Result<WritePhase> {
    let start = Instant::now();
    let write_plan = Arc::new(WritePlan {
        addr: server.addr,
        kind: setup.kind.clone(),
        namespace: args.namespace.clone(),
        tag: setup.tag.clone(),
        padding: objects::padding(setup.padding_bytes),
        rate: args.writes_per_sec,
        objects_per_connection: args.objects_per_connection,
        start,
        end: start + args.duration,
        log: setup.log.clone(),
        tickets: AtomicU64::new(0),
        written: AtomicU64::new(0),
    });
    let writers: Vec<_> =
        (0..args.write_connections.max(1)).map(|i| tokio::spawn(writer(write_plan.clone(), i))).collect();
    let bar = report::progress_bar(args.duration.as_secs().max(1), "s");
    let (mut last_events, mut last_writes, mut last_tick) = (0, 0, Instant::now());
    while !writers.iter().all(tokio::task::JoinHandle::is_finished) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (events, writes) = (sum(counters, |c| &c.events), write_plan.written.load(Ordering::Relaxed));
        let dt = last_tick.elapsed().as_secs_f64();
        bar.set_position(start.elapsed().as_secs().min(args.duration.as_secs()));
        bar.set_message(format!(
            "{writes} writes ({:.0}/s), {events} events ({:.0}/s), {} re-watches",
            (writes - last_writes) as f64 / dt,
            (events - last_events) as f64 / dt,
            sum(counters, |c| &c.early_ends)
        ));
        (last_events, last_writes, last_tick) = (events, writes, Instant::now());
    }
    let seconds = start.elapsed().as_secs_f64();
    let events_during_writes = sum(counters, |c| &c.events);
    let mut latency = report::merged_histogram();
    let (mut succeeded, mut failed, mut unlogged, mut first_error) = (0, 0, 0, None);
    for w in writers {
        let outcome = w.await?.map_err(|e| server.annotate(e))?;
        report::merge(&mut latency, &outcome.latency);
        succeeded += outcome.written;
        failed += outcome.failed;
        unlogged += outcome.unlogged;
        first_error = first_error.or(outcome.first_error);
    }
    Ok(WritePhase { start, seconds, events_during_writes, latency, succeeded, failed, unlogged, first_error, bar })
}

/// How the drain went.
struct Drain {
    /// Every live watcher of the written namespace got the last write in time.
    drained: bool,
    seconds: f64,
}

/// Waits (up to `--drain-timeout`) until every live watcher of the written namespace
/// has the last write, so that the figures count every event the writes caused. Watchers
/// that stopped for good (failed, expired) are not waited for.
async fn drain(args: &FanoutArgs, watchers: &Watchers, log: &WriteLog, bar: &indicatif::ProgressBar) -> Drain {
    bar.set_message("waiting for every watcher to get the last write");
    let final_rv = log.max_rv();
    let started = Instant::now();
    let drained = loop {
        // Only the watchers of the written namespace (every `spread`-th) get the writes.
        let behind = watchers
            .counters
            .iter()
            .step_by(watchers.spread)
            .filter(|c| c.done.load(Ordering::Acquire) == 0 && c.last_rv.load(Ordering::Acquire) < final_rv)
            .count();
        if behind == 0 {
            break true;
        }
        if started.elapsed() > args.drain_timeout {
            eprintln!("bench: {behind} watchers did not get the last write within {:?}", args.drain_timeout);
            break false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    Drain { drained, seconds: started.elapsed().as_secs_f64() }
}

/// What the watchers received, merged.
struct Delivered {
    latency: Histogram<u64>,
    events: u64,
    bytes: u64,
    completeness: Completeness,
    /// First write → last event received (at least the write phase): what events/s divides by.
    window: f64,
}

/// Stops the watchers, then merges their latencies and counts, and checks that each
/// watcher of the written namespace got every logged write (the others should get none).
async fn collect(watchers: Watchers, log: &WriteLog, start: Instant, write_seconds: f64) -> anyhow::Result<Delivered> {
    let Watchers { counters, handles, stop, spread } = watchers;
    stop.send_replace(true);
    let last_event_at = counters.iter().map(|c| c.last_event_at.load(Ordering::Acquire)).max().unwrap_or(0);
    let window = Duration::from_nanos(last_event_at.saturating_sub(log.at(start))).as_secs_f64().max(write_seconds);
    let expected = log.recorded();
    let mut latency = report::merged_histogram();
    let mut completeness = Completeness {
        expected_per_watcher: expected,
        missing: 0,
        duplicates: 0,
        unmatched: 0,
        malformed: 0,
        early_ends: 0,
        watchers_with_early_ends: 0,
        expired: 0,
        failed: 0,
        first_failure: None,
    };
    let (mut events, mut bytes) = (0, 0);
    for (i, handle) in handles.into_iter().enumerate() {
        let w = handle.await?;
        report::merge(&mut latency, &w.latency);
        events += w.events;
        bytes += w.bytes;
        let expected = if i % spread == 0 { expected } else { 0 };
        completeness.missing += expected.saturating_sub(w.events - w.unmatched);
        completeness.duplicates += w.duplicates;
        completeness.unmatched += w.unmatched;
        completeness.malformed += w.malformed;
        completeness.early_ends += w.early_ends;
        completeness.watchers_with_early_ends += u64::from(w.early_ends > 0);
        completeness.expired += u64::from(w.expired);
        if w.failure.is_some() {
            completeness.failed += 1;
            completeness.first_failure = completeness.first_failure.or(w.failure);
        }
    }
    Ok(Delivered { latency, events, bytes, completeness, window })
}

/// The CPU and memory the run used between the two snapshots, over `span` seconds: the
/// server's, the bench's, etcd's, and what other processes took meanwhile (which should be
/// near 0 for the figures to stand).
fn usage_between(before: &UsageSnapshot, after: &UsageSnapshot, span: f64) -> Usage {
    let server_cpu = cpu_between(before.server, after.server);
    let bench_cpu = cpu_between(before.bench, after.bench);
    let other_cpu = other_cpu_seconds(before.machine, after.machine, server_cpu, bench_cpu);
    Usage {
        server_cpu_seconds: server_cpu,
        server_cpu_cores: server_cpu.map(|c| c / span),
        server_system_cpu_seconds: system_between(before.server, after.server),
        server_peak_rss_mib: after.server.map(|u| report::mib(u.peak_rss_bytes)),
        etcd_cpu_seconds: cpu_between(before.etcd, after.etcd),
        etcd_cpu_cores: cpu_between(before.etcd, after.etcd).map(|c| c / span),
        bench_cpu_seconds: bench_cpu,
        bench_cpu_cores: bench_cpu.map(|c| c / span),
        other_cpu_cores: other_cpu.map(|c| c / span),
    }
}

/// The result as reported and written to `--output`: the parameters, then the write,
/// delivery, completeness and usage figures.
fn summarize(
    args: &FanoutArgs,
    server: &ServerUnderTest,
    setup: &Setup,
    writes: WritePhase,
    drain: Drain,
    delivered: Delivered,
    usage: Usage,
) -> FanoutResult {
    let Delivered { latency, events, bytes, completeness, window } = delivered;
    let (server_cpu, bench_cpu) = (usage.server_cpu_seconds, usage.bench_cpu_seconds);
    FanoutResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        server: server.url.clone(),
        backend: server.backend.clone(),
        parameters: Parameters {
            kind: args.kind,
            watchers: args.watchers,
            watcher_namespaces: setup.collections.len(),
            writes_per_sec: args.writes_per_sec,
            duration_seconds: args.duration.as_secs_f64(),
            object_size: args.object_size,
            padding_bytes: setup.padding_bytes,
            full_decode: args.decode,
            encoding: args.encoding,
            transport: args.transport,
            write_connections: args.write_connections,
            objects_per_connection: args.objects_per_connection,
            namespace: args.namespace.clone(),
        },
        writes: WriteFigures {
            succeeded: writes.succeeded,
            failed: writes.failed,
            unlogged: writes.unlogged,
            per_second: writes.succeeded as f64 / writes.seconds,
            latency: LatencySummary::of(&writes.latency),
            first_error: writes.first_error,
        },
        delivery: DeliveryFigures {
            events,
            events_per_second: events as f64 / window,
            events_per_second_during_writes: writes.events_during_writes as f64 / writes.seconds,
            bytes,
            mib_per_second: report::mib(bytes) / window,
            events_per_server_cpu_second: server_cpu.map(|c| events as f64 / c),
            events_per_server_and_bench_cpu_second: server_cpu.zip(bench_cpu).map(|(s, b)| events as f64 / (s + b)),
            latency: LatencySummary::of(&latency),
            delivery_window_seconds: window,
            drain_seconds: drain.seconds,
            drained: drain.drained,
        },
        completeness,
        usage,
    }
}

pub(super) fn print_summary(r: &FanoutResult) {
    let (p, w, d, c, u) = (&r.parameters, &r.writes, &r.delivery, &r.completeness, &r.usage);
    println!(
        "fanout: {} watchers, {} B objects, {} ({})",
        p.watchers,
        p.object_size,
        match p.writes_per_sec {
            WriteRate::Max => "writes as fast as possible".to_string(),
            WriteRate::PerSecond(r) => format!("{r} writes/s asked"),
        },
        r.backend
    );
    println!(
        "writes:    {} in {:.1} s = {:.0}/s ({} failed), write round trip {}",
        w.succeeded,
        p.duration_seconds,
        w.per_second,
        w.failed,
        w.latency.brief()
    );
    println!(
        "delivered: {} events in {:.2} s = {:.0} events/s ({:.0}/s while writing), {:.1} MiB/s",
        d.events, d.delivery_window_seconds, d.events_per_second, d.events_per_second_during_writes, d.mib_per_second
    );
    println!(
        "latency:   write sent -> event received: {}, p90 {:.2} ms, p99.9 {:.2} ms",
        d.latency.brief(),
        d.latency.p90_ms,
        d.latency.p999_ms
    );
    println!(
        "complete:  {} expected per watcher; missing {}, duplicates {}, unmatched {}, malformed {}; {} early ends ({} watchers) re-watched, {} expired (410), {} failed{}",
        c.expected_per_watcher,
        c.missing,
        c.duplicates,
        c.unmatched,
        c.malformed,
        c.early_ends,
        c.watchers_with_early_ends,
        c.expired,
        c.failed,
        if d.drained { String::new() } else { "; NOT DRAINED".into() }
    );
    let secs = |s: Option<f64>, cores: Option<f64>| match (s, cores) {
        (Some(s), Some(c)) => format!("{s:.2} s ({c:.2} cores)"),
        _ => "?".into(),
    };
    println!(
        "usage:     server CPU {} ({} in the kernel), server peak RSS {}; bench CPU {}; other processes {}",
        secs(u.server_cpu_seconds, u.server_cpu_cores),
        u.server_system_cpu_seconds.map_or("?".into(), |s| format!("{s:.2} s")),
        u.server_peak_rss_mib.map_or("?".into(), |m| format!("{m:.1} MiB")),
        secs(u.bench_cpu_seconds, u.bench_cpu_cores),
        u.other_cpu_cores.map_or("?".into(), |c| format!("{c:.2} cores"))
    );
}
