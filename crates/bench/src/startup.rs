//! `listwatch bench startup`: how long `listwatch serve` takes from exec to a ready `/readyz`.
//!
//! Each run starts the server through the tests' harness ([`listwatch_testkit::server`]) on a
//! loopback port (embedded store, ephemeral or on a fresh or pre-filled data dir), which probes
//! `/readyz` every 200 µs and reports the time from exec to ready; then kills the server.
//! With `--objects N`, a data dir is first filled with N ConfigMaps by one server, so the
//! measured starts include recovering them from the write-ahead log.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use listwatch_testkit::server::Server;
use serde::Serialize;

#[derive(Args, Debug)]
pub struct StartupArgs {
    /// How many starts to time.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Keep the store in memory only (else a data dir).
    #[arg(long)]
    ephemeral: bool,
    /// Fill the data dir with this many ConfigMaps first (not with --ephemeral).
    #[arg(long, default_value_t = 0, conflicts_with = "ephemeral")]
    objects: usize,
    /// Write the result as JSON here.
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Serialize)]
struct StartupResult {
    command: String,
    /// "ephemeral" or "durable".
    store: &'static str,
    objects: usize,
    runs: usize,
    median_ms: f64,
    p90_ms: f64,
    max_ms: f64,
    /// Every run, sorted.
    times_ms: Vec<f64>,
}

/// Starts the server on `storage` through the harness; returns the time from its exec to a
/// ready `/readyz`, and the server (killed when dropped).
async fn time_start(storage: &[String]) -> anyhow::Result<(Duration, Server)> {
    let server = super::server::harness()?
        .storage_flags(storage)
        // Probe as fast as it answers: the time to ready is what is measured.
        .ready_poll_interval(Duration::from_micros(200))
        .try_start()
        .await
        .context("starting listwatch serve")?;
    Ok((server.startup_time(), server))
}

pub async fn run(args: StartupArgs) -> anyhow::Result<()> {
    // The data dir outlives each server: the filling one's, then every timed one's.
    let dir = tempfile::tempdir()?;
    let storage = if args.ephemeral {
        vec!["--ephemeral".to_string()]
    } else {
        vec!["--data-dir".to_string(), dir.path().join("data").display().to_string()]
    };
    if args.objects > 0 {
        let (_, mut server) = time_start(&storage).await?;
        let addr = server.authority().parse().with_context(|| format!("the server reported {}", server.url))?;
        let mut connection = super::http::HttpConnection::connect(addr).await?;
        for i in 0..args.objects {
            let body = format!(r#"{{"metadata":{{"name":"startup-{i}"}},"data":{{"k":"{}"}}}}"#, "x".repeat(900));
            let (status, _) = connection
                .request(http::Method::POST, "/api/v1/namespaces/default/configmaps", Some(body.into()))
                .await?;
            anyhow::ensure!(status == http::StatusCode::CREATED, "creating ConfigMap {i} answered {status}");
        }
        server.kill();
    }
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs.max(1) {
        let (took, mut server) = time_start(&storage).await?;
        server.kill();
        times.push(took);
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let store = if args.ephemeral {
        "ephemeral".to_string()
    } else {
        format!("durable, {} objects in the data dir", args.objects)
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let result = StartupResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        store: if args.ephemeral { "ephemeral" } else { "durable" },
        objects: args.objects,
        runs: times.len(),
        median_ms: ms(at(0.5)),
        p90_ms: ms(at(0.9)),
        max_ms: ms(*times.last().expect("at least one run")),
        times_ms: times.iter().copied().map(ms).collect(),
    };
    println!(
        "startup to a ready /readyz ({store}): median {:.1} ms, p90 {:.1} ms, max {:.1} ms over {} runs",
        result.median_ms, result.p90_ms, result.max_ms, result.runs
    );
    if let Some(path) = &args.output {
        super::report::write_json(path, &result)?;
    }
    Ok(())
}
