//! `listwatch bench create`: creates N pods (or widgets, a custom resource: `--kind widgets`)
//! in one namespace as fast as C connections allow; reports creates/s and the latency of each
//! create. [`create_objects`] is also the first half of `bench list`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::Args;
use http::Method;
use serde::Serialize;

use super::ServerArgs;
use super::http::HttpConnection;
use super::objects::{self, BenchKind};
use super::report::{self, LatencySummary};
use super::server::{ProcessUsage, ServerUnderTest, cpu_between, machine_busy_seconds, other_cpu_seconds};

/// What `bench create` and `bench list` create before they measure.
#[derive(Args, Debug, Clone)]
pub struct CreateLoad {
    /// What to create: pods, or widgets (a custom resource whose CRD the bench creates).
    #[arg(long, value_enum, default_value = "pods")]
    pub kind: objects::KindArg,
    /// How many objects to create.
    #[arg(long, default_value_t = 10_000)]
    pub objects: u64,
    /// Concurrent connections (each sends its next create when the previous one is answered).
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Approximate size of each stored object, in bytes (padded).
    #[arg(long, default_value_t = 1024)]
    pub object_size: usize,
    /// Namespace to create them in.
    #[arg(long, default_value = "default")]
    pub namespace: String,
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    load: CreateLoad,
    /// Write the result as JSON here.
    #[arg(long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
}

/// The outcome of creating pods.
#[derive(Clone, Debug, Serialize)]
pub struct CreateOutcome {
    pub requested: u64,
    pub created: u64,
    pub failed: u64,
    pub concurrency: usize,
    /// Bytes of padding per pod (after calibration).
    pub padding_bytes: usize,
    pub seconds: f64,
    pub creates_per_second: f64,
    pub latency: LatencySummary,
    /// The first error answer, if any.
    pub first_error: Option<String>,
}

/// Creates `load.objects` objects of `load.kind` named `<prefix>-<i>` with `load.concurrency`
/// connections, showing progress; returns what they are (their paths) and how the creates went.
pub async fn create_objects(
    addr: SocketAddr,
    load: &CreateLoad,
    prefix: &str,
) -> anyhow::Result<(BenchKind, CreateOutcome)> {
    let CreateLoad { kind, objects: count, concurrency, object_size, ref namespace } = *load;
    let namespace = namespace.as_str();
    let mut probe = HttpConnection::connect(addr).await?;
    // The pods' owner (pods naming a missing owner would be garbage collected) or the CRD first.
    let kind = objects::prepare(&mut probe, kind, namespace).await?;
    let plural = kind.plural();
    let padding_bytes =
        objects::calibrate_padding(&mut probe, &kind, namespace, &format!("{prefix}-probe"), object_size).await?;
    let padding: Arc<str> = objects::padding(padding_bytes).into();
    let next = Arc::new(AtomicU64::new(0));
    let created = Arc::new(AtomicU64::new(0));
    let bar = report::progress_bar(count, plural);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let mut connection = HttpConnection::connect(addr).await?;
        let (next, created, padding, bar, kind) =
            (next.clone(), created.clone(), padding.clone(), bar.clone(), kind.clone());
        let (namespace, prefix) = (namespace.to_string(), prefix.to_string());
        workers.push(tokio::spawn(async move {
            let mut histogram = report::latency_histogram();
            let mut failed = 0u64;
            let mut first_error = None;
            let collection = kind.collection(&namespace);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let body = kind.json(&namespace, &format!("{prefix}-{i}"), i, &padding);
                let sent = Instant::now();
                match connection.request(Method::POST, &collection, Some(body)).await {
                    Ok((status, _)) if status.is_success() => {
                        report::record(&mut histogram, sent.elapsed());
                        created.fetch_add(1, Ordering::Relaxed);
                        bar.inc(1);
                    }
                    Ok((status, answer)) => {
                        failed += 1;
                        first_error.get_or_insert_with(|| format!("{status}: {}", String::from_utf8_lossy(&answer)));
                    }
                    Err(e) => {
                        failed += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                        // A broken connection stays broken: open another.
                        match HttpConnection::connect(addr).await {
                            Ok(c) => connection = c,
                            Err(_) => break,
                        }
                    }
                }
            }
            (histogram, failed, first_error)
        }));
    }
    let mut histogram = report::merged_histogram();
    let (mut failed, mut first_error) = (0, None);
    for worker in workers {
        let (h, f, e) = worker.await?;
        report::merge(&mut histogram, &h);
        failed += f;
        first_error = first_error.or(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let created = created.load(Ordering::Relaxed);
    let outcome = CreateOutcome {
        requested: count,
        created,
        failed,
        concurrency,
        padding_bytes,
        seconds,
        creates_per_second: created as f64 / seconds,
        latency: LatencySummary::of(&histogram),
        first_error,
    };
    Ok((kind, outcome))
}

#[derive(Serialize)]
struct CreateResult {
    command: String,
    server: String,
    backend: String,
    object_size: usize,
    create: CreateOutcome,
    server_cpu_seconds: Option<f64>,
    server_peak_rss_mib: Option<f64>,
    bench_cpu_seconds: Option<f64>,
    /// What other processes used meanwhile (should be near 0).
    other_cpu_seconds: Option<f64>,
}

pub async fn run(args: CreateArgs) -> anyhow::Result<()> {
    let server = ServerUnderTest::start(&args.server).await?;
    let (server_before, self_before, machine_before) =
        (server.usage(), ProcessUsage::of_self(), machine_busy_seconds());
    let prefix = format!("bench-{}", objects::run_tag());
    let (kind, outcome) = create_objects(server.addr, &args.load, &prefix).await?;
    let (server_after, self_after, machine_after) = (server.usage(), ProcessUsage::of_self(), machine_busy_seconds());
    let server_cpu_seconds = cpu_between(server_before, server_after);
    let bench_cpu_seconds = cpu_between(self_before, self_after);
    let result = CreateResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        server: server.url.clone(),
        backend: server.backend.clone(),
        object_size: args.load.object_size,
        create: outcome,
        server_cpu_seconds,
        server_peak_rss_mib: server_after.map(|u| report::mib(u.peak_rss_bytes)),
        bench_cpu_seconds,
        other_cpu_seconds: other_cpu_seconds(machine_before, machine_after, server_cpu_seconds, bench_cpu_seconds),
    };
    let c = &result.create;
    println!(
        "created {}/{} {} (~{} B each) with {} connections in {:.2} s: {:.0} creates/s; latency {}",
        c.created,
        c.requested,
        kind.plural(),
        args.load.object_size,
        c.concurrency,
        c.seconds,
        c.creates_per_second,
        c.latency.brief()
    );
    if c.failed > 0 {
        println!("{} creates failed; first: {}", c.failed, c.first_error.as_deref().unwrap_or("?"));
    }
    print_usage(
        result.server_cpu_seconds,
        result.server_peak_rss_mib,
        result.bench_cpu_seconds,
        result.other_cpu_seconds,
        c.seconds,
    );
    if let Some(path) = &args.output {
        report::write_json(path, &result)?;
    }
    server.stop().await;
    Ok(())
}

/// One line on the CPU split between server and bench.
pub fn print_usage(
    server_cpu: Option<f64>,
    server_peak_mib: Option<f64>,
    bench_cpu: Option<f64>,
    other_cpu: Option<f64>,
    seconds: f64,
) {
    let cores = |cpu: Option<f64>| cpu.map_or("?".to_string(), |c| format!("{c:.2} s ({:.2} cores)", c / seconds));
    // `None`: the caller reports the peak itself.
    let peak = server_peak_mib.map_or(String::new(), |m| format!(", server peak RSS {m:.1} MiB"));
    println!(
        "server CPU {}{peak}; bench CPU {}; other processes {}",
        cores(server_cpu),
        cores(bench_cpu),
        cores(other_cpu)
    );
}
