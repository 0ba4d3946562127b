//! `listwatch bench watchers`: what idle watchers cost the server, as a slope.
//!
//! One server; watchers of ConfigMaps are opened in steps (`--steps 10000,100000`) over
//! HTTP/1.1 (a connection each) or HTTP/2 (`--streams-per-connection` streams on each
//! connection, as client-go multiplexes its watches). At each step, once every watcher has its
//! response and the server has settled, the server's resident memory (`VmRSS`) is read; the
//! bytes per watcher between two steps is the slope, the figure that says what one more
//! watcher costs (a total alone mixes in the server's fixed cost). At the end one ConfigMap is
//! written and every watcher must receive it: idle watchers that no longer work would make a
//! cheap figure meaningless.
//!
//! 100,000 connections need more than one process's default open-files limit and more than
//! one source address's ephemeral ports: the bench raises the limit (`server.rs`) and spreads
//! connections over loopback source addresses (`http.rs`), and says so.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use http::Method;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};

use super::ServerArgs;
use super::decode::{Decoded, EventDecoder, resource_version_of};
use super::http::HttpConnection;
use super::objects::{self, BenchKind};
use super::report;
use super::server::ServerUnderTest;
use super::transport::{Connector, Opened, Transport, WireEncoding};

#[derive(Args, Debug)]
pub struct WatchersArgs {
    /// Watcher counts to reach, one after the other on the same server.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 100_000])]
    steps: Vec<usize>,
    /// Transport of the watches.
    #[arg(long, value_enum, default_value = "http2")]
    transport: Transport,
    /// With `--transport http2`: watches per connection.
    #[arg(long, default_value_t = 100)]
    streams_per_connection: usize,
    /// Wait this long after the last watcher of a step connected before reading the RSS.
    #[arg(long, default_value = "3s", value_parser = super::parse_duration)]
    settle: Duration,
    /// After the write, wait at most this long for every watcher to receive it.
    #[arg(long, default_value = "120s", value_parser = super::parse_duration)]
    delivery_timeout: Duration,
    /// Write the result as JSON here.
    #[arg(long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Serialize)]
struct Step {
    watchers: usize,
    connections: usize,
    server_rss_bytes: u64,
    /// (RSS − previous step's RSS) / (watchers − previous step's watchers).
    bytes_per_watcher_since_previous: Option<f64>,
    connect_seconds: f64,
}

#[derive(Serialize)]
struct WatchersResult {
    command: String,
    server: String,
    transport: Transport,
    streams_per_connection: usize,
    baseline_rss_bytes: u64,
    steps: Vec<Step>,
    /// The slope between the first and the last step.
    bytes_per_watcher: Option<f64>,
    server_peak_rss_bytes: Option<u64>,
    /// Watchers that received the final write, and how long the last of them took.
    received_write: usize,
    delivery_seconds: f64,
}

pub async fn run(args: WatchersArgs) -> anyhow::Result<()> {
    let mut steps = args.steps.clone();
    steps.sort_unstable();
    steps.dedup();
    let Some(&most) = steps.last() else { bail!("--steps is empty") };
    let server = ServerUnderTest::start(&args.server).await?;
    let kind = BenchKind::ConfigMap;
    let collection = kind.collection("default");
    let mut control = HttpConnection::connect(server.addr).await?;
    let (status, listed) = control.request(Method::GET, &format!("{collection}?limit=1"), None).await?;
    if !status.is_success() {
        bail!("LIST {collection} answered {status}: {}", String::from_utf8_lossy(&listed));
    }
    let start_rv = resource_version_of(&listed).context("the LIST has no resourceVersion")?;
    let rss = || server.usage().map(|u| u.rss_bytes).context("reading the server's RSS needs its pid");
    tokio::time::sleep(args.settle).await;
    let baseline = rss()?;
    eprintln!("bench: server RSS with no watchers: {:.1} MiB", report::mib(baseline));

    let connector =
        Arc::new(Connector::new(args.transport, WireEncoding::Json, server.addr, args.streams_per_connection));
    let path = Arc::new(format!("{collection}?watch=1&resourceVersion={start_rv}"));
    let connecting = Arc::new(Semaphore::new(256));
    let received = Arc::new(AtomicUsize::new(0));
    let (opened_tx, mut opened_rx) = mpsc::unbounded_channel::<Result<(), String>>();
    let mut tasks = Vec::with_capacity(most);
    let mut results = Vec::new();
    let mut previous: Option<(usize, u64)> = None;
    for &target in &steps {
        let started = Instant::now();
        while tasks.len() < target {
            tasks.push(tokio::spawn(idle_watcher(
                connector.clone(),
                path.clone(),
                connecting.clone(),
                received.clone(),
                opened_tx.clone(),
            )));
        }
        let mut waiting = target - results.last().map_or(0, |s: &Step| s.watchers);
        while waiting > 0 {
            match opened_rx.recv().await {
                Some(Ok(())) => waiting -= 1,
                Some(Err(e)) => bail!("a watcher could not start: {e}"),
                None => bail!("the watchers are gone"),
            }
        }
        let connect_seconds = started.elapsed().as_secs_f64();
        tokio::time::sleep(args.settle).await;
        let now = rss()?;
        let connections = match args.transport {
            Transport::Http2 => target.div_ceil(args.streams_per_connection.max(1)),
            _ => target,
        };
        let slope = previous.map(|(w, r)| (now as f64 - r as f64) / (target - w) as f64);
        eprintln!(
            "bench: {target} watchers over {connections} connections in {connect_seconds:.1} s: server RSS {:.1} MiB{}",
            report::mib(now),
            slope.map_or(String::new(), |s| format!(", {s:.0} B per watcher since the previous step"))
        );
        results.push(Step {
            watchers: target,
            connections,
            server_rss_bytes: now,
            bytes_per_watcher_since_previous: slope,
            connect_seconds,
        });
        previous = Some((target, now));
    }

    // Every watcher still works: one write reaches all of them.
    let name = format!("watchers-{}", objects::run_tag());
    let write_started = Instant::now();
    let (status, answer) = control.request(Method::POST, &collection, Some(kind.json("default", &name, 0, ""))).await?;
    if !status.is_success() {
        bail!("creating {name} answered {status}: {}", String::from_utf8_lossy(&answer));
    }
    while received.load(Ordering::Acquire) < most && write_started.elapsed() < args.delivery_timeout {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let delivery_seconds = write_started.elapsed().as_secs_f64();
    let received_write = received.load(Ordering::Acquire);
    let (first, last) = (&results[0], &results[results.len() - 1]);
    let result = WatchersResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        server: server.url.clone(),
        transport: args.transport,
        streams_per_connection: args.streams_per_connection,
        baseline_rss_bytes: baseline,
        bytes_per_watcher: (last.watchers > first.watchers).then(|| {
            (last.server_rss_bytes as f64 - first.server_rss_bytes as f64) / (last.watchers - first.watchers) as f64
        }),
        server_peak_rss_bytes: server.usage().map(|u| u.peak_rss_bytes),
        steps: results,
        received_write,
        delivery_seconds,
    };
    print_summary(&result);
    if let Some(path) = &args.output {
        report::write_json(path, &result)?;
    }
    for task in tasks {
        task.abort();
    }
    server.stop().await;
    if received_write < most {
        bail!(
            "{} of {most} watchers did not receive the write within {:?}",
            most - received_write,
            args.delivery_timeout
        );
    }
    Ok(())
}

/// Opens one watch, says so, then reads it until the first object event arrives (counted in
/// `received`) and keeps it open.
async fn idle_watcher(
    connector: Arc<Connector>,
    path: Arc<String>,
    connecting: Arc<Semaphore>,
    received: Arc<AtomicUsize>,
    opened: mpsc::UnboundedSender<Result<(), String>>,
) {
    let stream = {
        let _permit = connecting.acquire().await;
        connector.open(&path).await
    };
    let mut stream = match stream {
        Ok(Opened::Streaming(stream)) => stream,
        Ok(Opened::Refused(status, body)) => {
            let _ = opened.send(Err(format!("watch answered {status}: {}", String::from_utf8_lossy(&body))));
            return;
        }
        Err(e) => {
            let _ = opened.send(Err(format!("{e:#}")));
            return;
        }
    };
    let _ = opened.send(Ok(()));
    let mut decoder = EventDecoder::new(WireEncoding::Json, false);
    let mut counted = false;
    while let Some(Ok(bytes)) = stream.next_bytes().await {
        decoder.feed(&bytes, &mut |event| {
            if !counted && matches!(event, Decoded::Object { .. }) {
                counted = true;
                received.fetch_add(1, Ordering::AcqRel);
            }
        });
    }
}

fn print_summary(r: &WatchersResult) {
    println!(
        "watchers: {:?}{}, server RSS {:.1} MiB with none",
        r.transport,
        if r.transport == Transport::Http2 {
            format!(" ({} streams per connection)", r.streams_per_connection)
        } else {
            String::new()
        },
        report::mib(r.baseline_rss_bytes)
    );
    for s in &r.steps {
        println!(
            "  {:>7} watchers, {:>6} connections: RSS {:>8.1} MiB{}",
            s.watchers,
            s.connections,
            report::mib(s.server_rss_bytes),
            s.bytes_per_watcher_since_previous.map_or(String::new(), |b| format!(", +{b:.0} B per added watcher"))
        );
    }
    if let Some(slope) = r.bytes_per_watcher {
        println!("slope:    {:.2} KiB of server RSS per watcher", slope / 1024.0);
    }
    println!(
        "write:    received by {} of {} watchers in {:.2} s; server peak RSS {}",
        r.received_write,
        r.steps.last().map_or(0, |s| s.watchers),
        r.delivery_seconds,
        r.server_peak_rss_bytes.map_or("?".into(), |b| format!("{:.1} MiB", report::mib(b)))
    );
}
