//! `listwatch bench startup`: how long `listwatch serve` takes from exec to a ready `/readyz`.
//!
//! Each run starts the server as a child on a free loopback port (embedded store, ephemeral or
//! on a fresh or pre-filled data dir), polls `/readyz` as fast as it can, and kills the server.
//! With `--objects N`, a data dir is first filled with N ConfigMaps by one server, so the
//! measured starts include recovering them from the write-ahead log.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One `GET /readyz`; true on 200.
async fn ready(port: u16) -> bool {
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else { return false };
    if stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.is_ok() && &head == b"HTTP/1.1 200"
}

/// Starts the server with `args` and returns the time to a ready `/readyz`.
async fn time_start(args: &[String]) -> anyhow::Result<(Duration, tokio::process::Child, u16)> {
    let port = free_port()?;
    let started = Instant::now();
    let child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("serve")
        .args(["--addr", &format!("127.0.0.1:{port}"), "--compaction-interval", "0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting listwatch serve")?;
    let deadline = started + Duration::from_secs(60);
    while !ready(port).await {
        anyhow::ensure!(Instant::now() < deadline, "the server was not ready within 60 s");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    Ok((started.elapsed(), child, port))
}

pub async fn run(args: StartupArgs) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig").display().to_string();
    let data = dir.path().join("data").display().to_string();
    let mut serve_args = vec!["--kubeconfig".to_string(), kubeconfig];
    if args.ephemeral {
        serve_args.push("--ephemeral".into());
    } else {
        serve_args.extend(["--data-dir".to_string(), data]);
    }
    if args.objects > 0 {
        let (_, mut child, port) = time_start(&serve_args).await?;
        let mut connection = super::http::HttpConnection::connect(([127, 0, 0, 1], port).into()).await?;
        for i in 0..args.objects {
            let body = format!(r#"{{"metadata":{{"name":"startup-{i}"}},"data":{{"k":"{}"}}}}"#, "x".repeat(900));
            let (status, _) = connection
                .request(http::Method::POST, "/api/v1/namespaces/default/configmaps", Some(body.into()))
                .await?;
            anyhow::ensure!(status == http::StatusCode::CREATED, "creating ConfigMap {i} answered {status}");
        }
        child.kill().await?;
    }
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs.max(1) {
        let (took, mut child, _) = time_start(&serve_args).await?;
        child.kill().await?;
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
