//! The etcd row of the comparison: the fan-out bench's watchers opened straight on etcd, fed by
//! the same writes done straight on etcd. It shows what etcd itself delivers, with nothing in
//! between: the figure a watch cache has to beat (or, for the uncached server, the figure it
//! sits on).
//!
//! * Keys: `write_connections × objects_per_connection` keys under a prefix of their own
//!   (`/listwatch-bench-direct-<pid>-<ms>/configmaps/default/`), the fan-out bench's key spread.
//!   Values are the bench's ConfigMap JSON ([`objects::configmap_json`]) padded to exactly
//!   `object_bytes`, the size of the ConfigMaps listwatch stores.
//! * Watchers: each watches the prefix from the start revision + 1. They share gRPC
//!   connections, `watchers_per_connection` each (100 by default): kube-apiserver shares one
//!   client connection between its many watches too. etcd-client opens one bidirectional Watch
//!   stream per `watch()` call, so every watcher is its own HTTP/2 stream on a shared
//!   connection (Go's clientv3 would put watches with the same context on one stream; etcd's
//!   cost per stream is small: 18 KB in its watch memory benchmark).
//! * Writes: `write_connections` clients (each its own connection, one put in flight),
//!   paced like the fan-out bench's writers: one shared ticket counter, write `n` due at
//!   `start + n / rate`. Each put's response header names its revision; the send instant is
//!   logged under it ([`WriteLog`]), and each event's `mod_revision` finds it again.
//! * Figures, as `bench fanout` computes them: delivered events / (first write → last event
//!   received), write sent → event received p50/p99, events missing (every watcher should get
//!   every write), etcd's CPU (cores over the span) and peak RSS (reset, where the kernel
//!   allows, before the watchers connect, so it covers watchers and writes).
//!
//! [`PrivateEtcd`] starts an etcd of the bench's own when the user gave none
//! (`listwatch_testkit`'s, fetched by `scripts/etcd.sh`: in memory, no fsync).
//! `listwatch bench etcd-direct` (hidden) runs this row alone and prints it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use etcd_client::{Client, GetOptions, WatchOptions};
use hdrhistogram::Histogram;
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};
use tokio::sync::{Semaphore, oneshot, watch};

use super::fanout::{WriteRate, parse_rate};
use super::objects;
use super::report::{self, LatencySummary};
use super::row::Row;
use super::rv_log::WriteLog;
use super::server::{ProcessUsage, cpu_between, reset_peak_rss_of};

/// Largest gRPC message read (a watch response batches up to 1,000 revisions).
const MAX_MESSAGE_BYTES: usize = i32::MAX as usize;
/// The namespace in the keys and in the ConfigMaps' JSON.
const NAMESPACE: &str = "default";

/// What [`run`] measures.
#[derive(Clone, Debug)]
pub struct DirectPlan {
    /// etcd's client URL (`http://127.0.0.1:2379`).
    pub endpoint: String,
    /// etcd's process id, for its CPU seconds and peak RSS (`None`: not reported).
    pub etcd_pid: Option<u32>,
    pub watchers: usize,
    /// Watchers sharing one gRPC connection (each its own Watch stream on it).
    pub watchers_per_connection: usize,
    pub writes_per_sec: WriteRate,
    /// How long to write.
    pub duration: Duration,
    /// Size of each value written, in bytes.
    pub object_bytes: usize,
    /// Connections that write (one put in flight on each).
    pub write_connections: usize,
    /// Keys each write connection cycles through.
    pub objects_per_connection: usize,
    /// After the writes, wait at most this long for every watcher to get the last one.
    pub drain_timeout: Duration,
}

impl DirectPlan {
    /// The fan-out bench's defaults, on etcd `endpoint`.
    pub fn new(endpoint: impl Into<String>, etcd_pid: Option<u32>) -> DirectPlan {
        DirectPlan {
            endpoint: endpoint.into(),
            etcd_pid,
            watchers: 100,
            watchers_per_connection: 100,
            writes_per_sec: WriteRate::Max,
            duration: Duration::from_secs(20),
            object_bytes: 1024,
            write_connections: 8,
            objects_per_connection: 16,
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// An etcd of the bench's own (killed, and its data removed, when dropped or when the bench
/// process exits).
pub struct PrivateEtcd {
    process: EtcdProcess,
}

impl PrivateEtcd {
    /// Starts etcd 3.5 on a free loopback port, its data in memory, without fsync.
    pub async fn start() -> anyhow::Result<PrivateEtcd> {
        // The kit panics with the script's output when etcd cannot start: make that an error.
        let process = tokio::spawn(EtcdProcess::start(EtcdProcessOptions::default())).await.map_err(|e| {
            let reason = match e.try_into_panic() {
                Ok(panic) => panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            anyhow::anyhow!("could not start a private etcd: {reason}")
        })?;
        eprintln!("bench: started etcd (pid {}) at {}", process.pid().unwrap_or_default(), process.endpoint());
        Ok(PrivateEtcd { process })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        self.process.endpoint()
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }
}

/// Connects one client (one gRPC connection).
async fn connect(endpoint: &str) -> anyhow::Result<Client> {
    Client::connect([endpoint], None).await.with_context(|| format!("connecting to etcd at {endpoint}"))
}

/// How many watchers each gRPC connection carries: `watchers` split into groups of at most
/// `per_connection`.
fn connection_groups(watchers: usize, per_connection: usize) -> Vec<usize> {
    let per_connection = per_connection.max(1);
    (0..watchers.div_ceil(per_connection)).map(|i| per_connection.min(watchers - i * per_connection)).collect()
}

/// The value written for `name`'s `sequence`-th version: the ConfigMap JSON, padded to exactly
/// `object_bytes` (`padding` is at least that long; a value that cannot be that small is
/// left at its minimum).
fn value(name: &str, sequence: u64, padding: &str, object_bytes: usize) -> Bytes {
    let bare = objects::configmap_json(NAMESPACE, name, sequence, "").len();
    let pad = object_bytes.saturating_sub(bare).min(padding.len());
    objects::configmap_json(NAMESPACE, name, sequence, &padding[..pad])
}

/// When each write is due: the fan-out writer's pacing, one ticket counter shared by every
/// write connection.
struct Pacer {
    start: Instant,
    end: Instant,
    rate: WriteRate,
    tickets: AtomicU64,
}

impl Pacer {
    /// The next write's ticket and due instant; `None` once the write phase is over.
    fn next(&self) -> Option<(u64, Instant)> {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        match self.rate {
            WriteRate::PerSecond(rate) => {
                let due = self.start + Duration::from_secs_f64(ticket as f64 / rate);
                (due < self.end).then_some((ticket, due))
            }
            WriteRate::Max => {
                let now = Instant::now();
                (now < self.end).then_some((ticket, now))
            }
        }
    }
}

/// One watcher's figures.
struct Tally {
    latency: Histogram<u32>,
    events: u64,
    duplicates: u64,
    /// Events whose write was not logged (yet): (revision, received at).
    unresolved: Vec<(u64, u64)>,
    last_revision: u64,
}

impl Tally {
    fn new(start_revision: u64) -> Tally {
        Tally {
            latency: report::latency_histogram(),
            events: 0,
            duplicates: 0,
            unresolved: Vec::new(),
            last_revision: start_revision,
        }
    }

    /// Counts one event received at `received` (the log's clock).
    fn event(&mut self, log: &WriteLog, revision: u64, received: u64) {
        if revision <= self.last_revision {
            self.duplicates += 1;
            return;
        }
        self.last_revision = revision;
        self.events += 1;
        match log.sent_at(revision) {
            Some(sent) => report::record(&mut self.latency, Duration::from_nanos(received.saturating_sub(sent))),
            None => self.unresolved.push((revision, received)),
        }
    }

    /// Records the latency of events whose write has been logged since they arrived; returns
    /// how many are still not.
    fn resolve(&mut self, log: &WriteLog) -> u64 {
        let latency = &mut self.latency;
        self.unresolved.retain(|&(revision, received)| match log.sent_at(revision) {
            Some(sent) => {
                report::record(latency, Duration::from_nanos(received.saturating_sub(sent)));
                false
            }
            None => true,
        });
        self.unresolved.len() as u64
    }
}

/// One watcher's running totals, read while draining.
#[derive(Default)]
struct Progress {
    events: AtomicU64,
    last_revision: AtomicU64,
    last_event_at: AtomicU64,
    done: AtomicU64,
}

struct WatcherOutcome {
    tally: Tally,
    unmatched: u64,
    failure: Option<String>,
}

/// What every watcher shares.
struct WatchPlan {
    prefix: String,
    start_revision: u64,
    log: Arc<WriteLog>,
    /// At most this many watches being opened at once.
    connecting: Semaphore,
}

/// Watches the prefix from the start revision + 1 on `client`'s connection until `stop`;
/// `ready` hears when the watch exists.
async fn watcher(
    client: Client,
    plan: Arc<WatchPlan>,
    progress: Arc<Progress>,
    mut stop: watch::Receiver<bool>,
    ready: oneshot::Sender<Result<(), String>>,
) -> WatcherOutcome {
    let mut tally = Tally::new(plan.start_revision);
    let failure = watch_until_stopped(&client, &plan, &progress, &mut stop, &mut tally, ready).await.err();
    progress.done.store(1, Ordering::Release);
    let unmatched = tally.resolve(&plan.log);
    WatcherOutcome { tally, unmatched, failure: failure.map(|e| format!("{e:#}")) }
}

async fn watch_until_stopped(
    client: &Client,
    plan: &WatchPlan,
    progress: &Progress,
    stop: &mut watch::Receiver<bool>,
    tally: &mut Tally,
    ready: oneshot::Sender<Result<(), String>>,
) -> anyhow::Result<()> {
    let log = &*plan.log;
    let options = WatchOptions::new().with_prefix().with_start_revision(tally.last_revision as i64 + 1);
    let opened = async {
        let _permit = plan.connecting.acquire().await;
        let mut stream = client
            .watch_client()
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .watch(plan.prefix.as_str(), Some(options))
            .await
            .context("opening the watch")?;
        // The first response says the watch exists: from here on it gets every write.
        match stream.message().await.context("waiting for the watch to be created")? {
            Some(response) if response.created() && !response.canceled() => Ok(stream),
            Some(response) => bail!("the watch was not created: {}", response.cancel_reason()),
            None => bail!("the watch stream ended before the watch was created"),
        }
    };
    let mut stream = match opened.await {
        Ok(stream) => {
            let _ = ready.send(Ok(()));
            stream
        }
        Err(e) => {
            let _ = ready.send(Err(format!("{e:#}")));
            return Err(e);
        }
    };
    loop {
        let response = tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => return Ok(()),
            response = stream.message() => response,
        };
        let Some(response) = response.context("reading the watch")? else {
            bail!("etcd ended the watch stream");
        };
        if response.canceled() {
            bail!("etcd cancelled the watch: {}", response.cancel_reason());
        }
        let received = log.now();
        let before = tally.events;
        for event in response.events() {
            if let Some(kv) = event.kv() {
                tally.event(log, kv.mod_revision() as u64, received);
            }
        }
        if tally.events > before {
            progress.events.fetch_add(tally.events - before, Ordering::Relaxed);
            progress.last_revision.store(tally.last_revision, Ordering::Release);
            progress.last_event_at.store(received, Ordering::Release);
        }
        if !tally.unresolved.is_empty() {
            tally.resolve(log);
        }
    }
}

/// What every writer shares.
struct Writes {
    prefix: String,
    padding: String,
    object_bytes: usize,
    objects_per_connection: usize,
    pacer: Pacer,
    log: Arc<WriteLog>,
    written: AtomicU64,
    failed: AtomicU64,
}

/// Puts this writer's keys, round and round, until the write phase is over.
async fn writer(client: Client, writes: Arc<Writes>, index: usize) -> Option<String> {
    let mut kv = client.kv_client();
    let names: Vec<String> = (0..writes.objects_per_connection.max(1)).map(|j| format!("direct-{index}-{j}")).collect();
    let mut first_error = None;
    let mut slot = 0;
    while let Some((ticket, due)) = writes.pacer.next() {
        tokio::time::sleep_until(due.into()).await;
        let name = &names[slot];
        let body = value(name, ticket, &writes.padding, writes.object_bytes);
        let sent = writes.log.now();
        match kv.put(format!("{}{name}", writes.prefix), body.to_vec(), None).await {
            Ok(response) => {
                if let Some(header) = response.header() {
                    writes.log.record(header.revision() as u64, sent);
                }
                writes.written.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                writes.failed.fetch_add(1, Ordering::Relaxed);
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
        slot = (slot + 1) % names.len();
    }
    first_error
}

/// Runs the etcd row: watchers and writes straight on etcd.
///
/// The steps: [`set_up`], [`open_watchers`], etcd's CPU before, [`write`], [`drain`], etcd's
/// CPU after, then [`collect`] and [`to_row`]. etcd's CPU span starts just before the write
/// connections open and ends once the watchers have drained, as `bench fanout` spans the
/// server's.
pub async fn run(plan: &DirectPlan) -> anyhow::Result<Row> {
    let setup = set_up(plan).await?;
    let watchers = open_watchers(plan, &setup).await?;
    let etcd_before = plan.etcd_pid.and_then(ProcessUsage::of);
    let writes = write(plan, &setup).await?;
    drain(plan, &watchers.progress, setup.log.max_rv()).await;
    let etcd_after = plan.etcd_pid.and_then(ProcessUsage::of);
    let span = writes.start.elapsed().as_secs_f64();
    let delivered = collect(watchers, &setup.log, writes.start, writes.seconds).await?;
    let etcd_cpu_seconds = cpu_between(etcd_before, etcd_after);
    Ok(to_row(plan, writes, delivered, etcd_cpu_seconds, span, etcd_after))
}

/// Where the run writes, and from which revision its watchers start.
struct Setup {
    /// The run's own key prefix (`/listwatch-bench-direct-<pid>-<ms>/configmaps/default/`).
    prefix: String,
    start_revision: u64,
    /// Every put's send instant by revision, which the watchers' latencies read.
    log: Arc<WriteLog>,
    /// The connection that read the start revision, open until the run ends (as it was when
    /// the published figures were measured).
    _control: Client,
}

/// Chooses a key prefix of the run's own, reads etcd's current revision (every watcher starts
/// after it, so each must see every put), and resets etcd's peak RSS where the kernel allows,
/// so that the peak covers the watchers and the writes only.
async fn set_up(plan: &DirectPlan) -> anyhow::Result<Setup> {
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis();
    let prefix = format!("/listwatch-bench-direct-{}-{millis}/configmaps/{NAMESPACE}/", std::process::id());
    let control = connect(&plan.endpoint).await?;
    let head = control
        .kv_client()
        .get(prefix.as_str(), Some(GetOptions::new().with_prefix().with_count_only()))
        .await
        .context("reading etcd's revision")?;
    let start_revision = head.header().context("etcd's answer has no header")?.revision() as u64;
    let log = Arc::new(WriteLog::new(start_revision + 1));
    if let Some(pid) = plan.etcd_pid {
        reset_peak_rss_of(pid);
    }
    Ok(Setup { prefix, start_revision, log, _control: control })
}

/// The running watchers.
struct Watchers {
    progress: Vec<Arc<Progress>>,
    handles: Vec<tokio::task::JoinHandle<WatcherOutcome>>,
    /// Flipped to stop every watcher.
    stop: watch::Sender<bool>,
}

/// Starts the watchers, `watchers_per_connection` to a gRPC connection (kube-apiserver shares
/// its etcd connection between watches too), and waits until etcd has created every watch, so
/// that no put happens before every watcher is in place.
async fn open_watchers(plan: &DirectPlan, setup: &Setup) -> anyhow::Result<Watchers> {
    let watch_plan = Arc::new(WatchPlan {
        prefix: setup.prefix.clone(),
        start_revision: setup.start_revision,
        log: setup.log.clone(),
        connecting: Semaphore::new(64),
    });
    let (stop, stop_rx) = watch::channel(false);
    let connect_started = Instant::now();
    let mut progress = Vec::with_capacity(plan.watchers);
    let mut handles = Vec::with_capacity(plan.watchers);
    let mut readies = Vec::with_capacity(plan.watchers);
    for group in connection_groups(plan.watchers, plan.watchers_per_connection) {
        let client = connect(&plan.endpoint).await?;
        for _ in 0..group {
            let p = Arc::new(Progress::default());
            let (ready_tx, ready_rx) = oneshot::channel();
            handles.push(tokio::spawn(watcher(
                client.clone(),
                watch_plan.clone(),
                p.clone(),
                stop_rx.clone(),
                ready_tx,
            )));
            progress.push(p);
            readies.push(ready_rx);
        }
    }
    for ready in readies {
        match ready.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("an etcd watcher could not start: {e}"),
            Err(_) => bail!("an etcd watcher ended before it started"),
        }
    }
    eprintln!(
        "bench: {} etcd watchers from revision {} on {} connections in {:.2} s; writing for {:?}",
        plan.watchers,
        setup.start_revision,
        plan.watchers.div_ceil(plan.watchers_per_connection.max(1)),
        connect_started.elapsed().as_secs_f64(),
        plan.duration
    );
    Ok(Watchers { progress, handles, stop })
}

/// The write phase's figures.
struct WritePhase {
    /// When the write phase began: the start of the delivery window and of etcd's CPU span.
    start: Instant,
    /// How long the writers ran.
    seconds: f64,
    written: u64,
    failed: u64,
    first_error: Option<String>,
}

/// Runs `write_connections` writers (each its own connection, one put in flight), paced
/// together for `duration`, each put's send instant logged under its revision. Fails if no
/// put succeeded: there would be nothing to deliver.
async fn write(plan: &DirectPlan, setup: &Setup) -> anyhow::Result<WritePhase> {
    let start = Instant::now();
    let writes = Arc::new(Writes {
        prefix: setup.prefix.clone(),
        padding: objects::padding(plan.object_bytes),
        object_bytes: plan.object_bytes,
        objects_per_connection: plan.objects_per_connection,
        pacer: Pacer { start, end: start + plan.duration, rate: plan.writes_per_sec, tickets: AtomicU64::new(0) },
        log: setup.log.clone(),
        written: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    });
    let mut writers = Vec::new();
    for i in 0..plan.write_connections.max(1) {
        let client = connect(&plan.endpoint).await?;
        writers.push(tokio::spawn(writer(client, writes.clone(), i)));
    }
    let mut first_error = None;
    for w in writers {
        first_error = first_error.or(w.await?);
    }
    let seconds = start.elapsed().as_secs_f64();
    let (written, failed) = (writes.written.load(Ordering::Relaxed), writes.failed.load(Ordering::Relaxed));
    if written == 0 {
        bail!("no write to etcd succeeded: {}", first_error.unwrap_or_default());
    }
    Ok(WritePhase { start, seconds, written, failed, first_error })
}

/// Waits (up to `drain_timeout`) until every live watcher has revision `final_revision`, the
/// last put's, so that the figures count every event the writes caused. Watchers that failed
/// are not waited for.
async fn drain(plan: &DirectPlan, progress: &[Arc<Progress>], final_revision: u64) {
    let drain_started = Instant::now();
    loop {
        let behind = progress
            .iter()
            .filter(|p| p.done.load(Ordering::Acquire) == 0 && p.last_revision.load(Ordering::Acquire) < final_revision)
            .count();
        if behind == 0 {
            break;
        }
        if drain_started.elapsed() > plan.drain_timeout {
            eprintln!("bench: {behind} etcd watchers did not get the last write within {:?}", plan.drain_timeout);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What the watchers received, merged.
struct Delivered {
    latency: Histogram<u64>,
    events: u64,
    /// Logged puts some watcher did not get, summed over the watchers.
    missing: u64,
    /// First put → last event received (at least the write phase): what events/s divides by.
    window: f64,
}

/// Stops the watchers, merges their latencies and counts (every watcher should get every
/// logged put), and says on stderr what went wrong: watchers that failed, events seen twice.
async fn collect(watchers: Watchers, log: &WriteLog, start: Instant, write_seconds: f64) -> anyhow::Result<Delivered> {
    let Watchers { progress, handles, stop } = watchers;
    stop.send_replace(true);
    let last_event_at = progress.iter().map(|p| p.last_event_at.load(Ordering::Acquire)).max().unwrap_or(0);
    let window = Duration::from_nanos(last_event_at.saturating_sub(log.at(start))).as_secs_f64().max(write_seconds);
    let expected = log.recorded();
    let mut latency = report::merged_histogram();
    let (mut events, mut missing, mut duplicates, mut failures) = (0, 0, 0, Vec::new());
    for handle in handles {
        let outcome = handle.await?;
        report::merge(&mut latency, &outcome.tally.latency);
        events += outcome.tally.events;
        duplicates += outcome.tally.duplicates;
        missing += expected.saturating_sub(outcome.tally.events - outcome.unmatched);
        failures.extend(outcome.failure);
    }
    if let Some(failure) = failures.first() {
        eprintln!("bench: {} etcd watchers failed; the first: {failure}", failures.len());
    }
    if duplicates > 0 {
        eprintln!("bench: etcd watchers saw {duplicates} events twice or out of order");
    }
    Ok(Delivered { latency, events, missing, window })
}

/// The comparison's row for etcd, with `bench fanout`'s figures: etcd serves these watchers
/// itself, so its CPU and peak RSS are the row's server figures.
fn to_row(
    plan: &DirectPlan,
    writes: WritePhase,
    delivered: Delivered,
    etcd_cpu_seconds: Option<f64>,
    span: f64,
    etcd_after: Option<ProcessUsage>,
) -> Row {
    let etcd_cpu_cores = etcd_cpu_seconds.map(|seconds| seconds / span);
    if writes.failed > 0 {
        eprintln!("bench: {} puts failed; the first: {}", writes.failed, writes.first_error.unwrap_or_default());
    }
    let latency = LatencySummary::of(&delivered.latency);
    Row {
        name: "etcd-direct".into(),
        watchers: plan.watchers,
        object_size: plan.object_bytes,
        // gRPC and protobuf: the comparison files the row under the point's transport.
        transport: super::transport::Transport::Http2,
        encoding: super::transport::WireEncoding::Protobuf,
        events_per_sec: delivered.events as f64 / delivered.window,
        latency_p50_ms: latency.p50_ms,
        latency_p99_ms: latency.p99_ms,
        latency,
        // etcd serves these watchers itself.
        server_cpu_cores: etcd_cpu_cores,
        server_peak_rss_bytes: etcd_after.map(|u| u.peak_rss_bytes),
        etcd_cpu_cores,
        writes: writes.written,
        writes_per_sec: writes.written as f64 / writes.seconds,
        delivered_events: delivered.events,
        cpu_seconds_per_million: super::row::per_million(etcd_cpu_seconds, delivered.events),
        missing_events: delivered.missing,
        note: format!(
            "{} etcd watches of one prefix, {} per gRPC connection (a Watch stream each); {} put connections over {} keys of {} B",
            plan.watchers,
            plan.watchers_per_connection.max(1),
            plan.write_connections.max(1),
            plan.write_connections.max(1) * plan.objects_per_connection.max(1),
            plan.object_bytes
        ),
    }
}

/// `listwatch bench etcd-direct` (hidden): the etcd row alone.
#[derive(Args, Debug)]
pub struct EtcdDirectArgs {
    /// etcd's client URL; without it, a private etcd is started for the run.
    #[arg(long)]
    etcd: Option<String>,
    /// With --etcd: its process id, to report its CPU and peak RSS.
    #[arg(long, requires = "etcd")]
    etcd_pid: Option<u32>,
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    #[arg(long, default_value_t = 100)]
    watchers_per_connection: usize,
    /// Writes per second, or `max`.
    #[arg(long, default_value = "max", value_parser = parse_rate)]
    writes_per_sec: WriteRate,
    #[arg(long, default_value = "20s", value_parser = super::parse_duration)]
    duration: Duration,
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    #[arg(long, default_value_t = 8)]
    write_connections: usize,
    #[arg(long, default_value_t = 16)]
    objects_per_connection: usize,
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    drain_timeout: Duration,
}

/// Runs the hidden subcommand and prints the row as JSON.
pub async fn run_command(args: EtcdDirectArgs) -> anyhow::Result<()> {
    let private = match &args.etcd {
        Some(_) => None,
        None => Some(PrivateEtcd::start().await?),
    };
    let (endpoint, pid) = match (&args.etcd, &private) {
        (Some(endpoint), _) => (endpoint.clone(), args.etcd_pid),
        (None, Some(etcd)) => (etcd.endpoint().to_string(), etcd.pid()),
        (None, None) => unreachable!("a private etcd runs when none is given"),
    };
    let plan = DirectPlan {
        watchers: args.watchers,
        watchers_per_connection: args.watchers_per_connection,
        writes_per_sec: args.writes_per_sec,
        duration: args.duration,
        object_bytes: args.object_size,
        write_connections: args.write_connections,
        objects_per_connection: args.objects_per_connection,
        drain_timeout: args.drain_timeout,
        ..DirectPlan::new(endpoint, pid)
    };
    let row = run(&plan).await?;
    println!(
        "etcd-direct: {:.0} events/s, latency p50 {:.2} ms p99 {:.2} ms, {} writes ({:.0}/s), {} missing, etcd {} cores, peak RSS {}",
        row.events_per_sec,
        row.latency_p50_ms,
        row.latency_p99_ms,
        row.writes,
        row.writes_per_sec,
        row.missing_events,
        row.etcd_cpu_cores.map_or("?".into(), |c| format!("{c:.2}")),
        row.server_peak_rss_bytes.map_or("?".into(), |b| format!("{:.1} MiB", report::mib(b)))
    );
    println!("{}", serde_json::to_string_pretty(&row)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchers_are_split_into_connections_of_at_most_the_given_size() {
        assert_eq!(connection_groups(250, 100), vec![100, 100, 50]);
        assert_eq!(connection_groups(100, 100), vec![100]);
        assert_eq!(connection_groups(3, 0), vec![1, 1, 1]);
        assert!(connection_groups(0, 100).is_empty());
    }

    #[test]
    fn values_are_padded_to_the_object_size() {
        let padding = objects::padding(1024);
        for sequence in [0, 7, 123_456_789] {
            let v = value("direct-3-12", sequence, &padding, 1024);
            assert_eq!(v.len(), 1024);
            let json: serde_json::Value = serde_json::from_slice(&v).unwrap();
            assert_eq!(json["data"]["sequence"], sequence.to_string());
        }
        // Below the bare ConfigMap: the bare ConfigMap.
        assert_eq!(value("a", 0, &padding, 10), objects::configmap_json(NAMESPACE, "a", 0, ""));
    }

    #[test]
    fn writes_are_due_at_start_plus_ticket_over_rate_until_the_end() {
        let start = Instant::now();
        let pacer =
            Pacer { start, end: start + Duration::from_secs(1), rate: WriteRate::PerSecond(10.0), tickets: 0.into() };
        let dues: Vec<_> = std::iter::from_fn(|| pacer.next()).collect();
        assert_eq!(dues.len(), 10);
        assert_eq!(dues[3], (3, start + Duration::from_millis(300)));
        // Past the end: no more tickets, for any writer.
        assert_eq!(pacer.next(), None);
    }

    #[test]
    fn events_count_once_and_find_their_writes_latency_even_when_logged_late() {
        let log = WriteLog::new(11);
        let mut tally = Tally::new(10);
        let sent = log.now();
        log.record(11, sent);
        tally.event(&log, 11, sent + 2_000_000);
        // Received before its write's answer named the revision.
        tally.event(&log, 12, sent + 3_000_000);
        // Again, or older: not counted.
        tally.event(&log, 12, sent + 4_000_000);
        tally.event(&log, 11, sent + 4_000_000);
        assert_eq!((tally.events, tally.duplicates, tally.unresolved.len()), (2, 2, 1));
        assert_eq!(tally.resolve(&log), 1);
        log.record(12, sent + 1_000_000);
        assert_eq!(tally.resolve(&log), 0);
        assert_eq!(tally.latency.len(), 2);
        // 2 ms for both (1% resolution).
        assert!(
            tally.latency.equivalent(tally.latency.min(), 2_000)
                && tally.latency.equivalent(tally.latency.max(), 2_000)
        );
    }
}
