//! `listwatch bench testserver`: what a test pays for its apiserver, in process
//! (`listwatch-testserver`) and as a process (`listwatch serve --ephemeral --addr 127.0.0.1:0
//! --ready-file F`, as the pytest and Node fixtures start it), side by side on the same work:
//!
//! * **start**: from the call (or the exec) to the first answered request (`GET` of the
//!   `default` namespace), over `--runs` starts: median and p99;
//! * **idle memory**: the resident memory `--idle` servers add to this process, per server;
//!   and the resident memory of one idle `listwatch serve`;
//! * **a test's fixture**: start, install the example controller's Widget CRD (served), stop.
//!
//! Each start is measured alone, one after the other, so the figures are bounded by one core
//! and by what the server does at startup (the watch caches' first lists), not by contention.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use listwatch_testserver::TestServer;
use serde::Serialize;

use crate::http::HttpConnection;

#[derive(Args, Debug)]
pub struct TestServerArgs {
    /// How many starts to time, of each kind.
    #[arg(long, default_value_t = 100)]
    runs: usize,
    /// How many idle in-process servers to hold at once for the memory figure.
    #[arg(long, default_value_t = 50)]
    idle: usize,
    /// Write the result as JSON here.
    #[arg(long)]
    output: Option<PathBuf>,
}

/// Median, p99 and max of a set of times, in milliseconds.
#[derive(Serialize)]
struct Times {
    median_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Times {
    fn of(mut times: Vec<Duration>) -> Times {
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
        Times { median_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
    }

    fn brief(&self) -> String {
        format!("median {:.1} ms, p99 {:.1} ms, max {:.1} ms", self.median_ms, self.p99_ms, self.max_ms)
    }
}

#[derive(Serialize)]
struct TestServerResult {
    command: String,
    runs: usize,
    in_process_start: Times,
    process_start: Times,
    in_process_fixture: Times,
    process_fixture: Times,
    idle_servers: usize,
    in_process_idle_kib_per_server: f64,
    process_idle_rss_kib: u64,
}

/// The example controller's CRD (crates/testserver/tests/widgets.yaml), as JSON.
fn widgets_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                }}}
            }]
        }
    })
}

/// Sends `GET path` until it is answered `want` (a CRD's resource is served a moment after the
/// CRD is created).
async fn until_answered(url: &str, path: &str, want: http::StatusCode) -> anyhow::Result<()> {
    let addr = url.trim_start_matches("http://").parse().with_context(|| format!("the server's URL {url}"))?;
    let mut connection = HttpConnection::connect(addr).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = connection.request(http::Method::GET, path, None).await?;
        if status == want {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "GET {path} answered {status} for 30 s");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

async fn first_answer(url: &str) -> anyhow::Result<()> {
    until_answered(url, "/api/v1/namespaces/default", http::StatusCode::OK).await
}

/// A `listwatch serve` started as a fixture starts it.
struct Process {
    child: tokio::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Process {
    async fn start() -> anyhow::Result<Process> {
        let dir = tempfile::tempdir()?;
        let ready = dir.path().join("ready.json");
        let child = tokio::process::Command::new(std::env::current_exe()?)
            .args(["serve", "--ephemeral", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(dir.path().join("kubeconfig"))
            .arg("--ready-file")
            .arg(&ready)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting listwatch serve")?;
        let url = read_ready(&ready).await?;
        Ok(Process { child, url, _dir: dir })
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Waits for the ready file (written atomically once the server serves); its URL.
async fn read_ready(path: &Path) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let ready: serde_json::Value = serde_json::from_str(&text).context("the ready file")?;
            return Ok(ready["url"].as_str().unwrap_or_default().to_string());
        }
        anyhow::ensure!(Instant::now() < deadline, "no ready file within 30 s");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// Resident memory of a process, KiB (`VmRSS` in /proc).
fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:").and_then(|v| v.trim().trim_end_matches(" kB").parse().ok()))
        })
        .unwrap_or(0)
}

pub async fn run(args: TestServerArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let crd = serde_json::to_string(&widgets_crd())?;
    let crd_file = tempfile::NamedTempFile::new()?;
    std::fs::write(crd_file.path(), &crd)?;

    // Idle memory first, in a process that has started no server yet (memory freed by earlier
    // servers would be reused and hide the cost): what `idle` servers add to this process; one
    // idle `listwatch serve`.
    let before = rss_kib("self");
    let mut idle = Vec::new();
    for _ in 0..args.idle {
        idle.push(TestServer::start().await?);
    }
    let per_server = rss_kib("self").saturating_sub(before) as f64 / args.idle.max(1) as f64;
    drop(idle);
    let server = Process::start().await?;
    first_answer(&server.url).await?;
    let pid = server.child.id().map(|p| p.to_string()).unwrap_or_default();
    let process_rss = rss_kib(&pid);
    server.stop().await;

    let (mut in_process, mut process, mut in_fixture, mut process_fixture) = (vec![], vec![], vec![], vec![]);
    for _ in 0..args.runs {
        let started = Instant::now();
        let server = TestServer::start().await?;
        first_answer(server.url()).await?;
        in_process.push(started.elapsed());
        drop(server);

        let started = Instant::now();
        let server = Process::start().await?;
        first_answer(&server.url).await?;
        process.push(started.elapsed());
        server.stop().await;

        // A test's fixture: start, the CRD served, stop.
        let started = Instant::now();
        let server = TestServer::builder().crd_file(crd_file.path()).start().await?;
        drop(server);
        in_fixture.push(started.elapsed());

        let started = Instant::now();
        let server = Process::start().await?;
        let addr = server.url.trim_start_matches("http://").parse()?;
        let mut connection = HttpConnection::connect(addr).await?;
        let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        let (status, _) = connection.request(http::Method::POST, path, Some(crd.clone().into())).await?;
        anyhow::ensure!(status == http::StatusCode::CREATED, "creating the CRD answered {status}");
        until_answered(&server.url, "/apis/example.com/v1/namespaces/default/widgets", http::StatusCode::OK).await?;
        server.stop().await;
        process_fixture.push(started.elapsed());
    }

    let result = TestServerResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        runs: args.runs,
        in_process_start: Times::of(in_process),
        process_start: Times::of(process),
        in_process_fixture: Times::of(in_fixture),
        process_fixture: Times::of(process_fixture),
        idle_servers: args.idle,
        in_process_idle_kib_per_server: per_server,
        process_idle_rss_kib: process_rss,
    };
    println!("start to first answered request ({} starts each):", result.runs);
    println!("  in process (TestServer::start):            {}", result.in_process_start.brief());
    println!("  a process (listwatch serve --ready-file):  {}", result.process_start.brief());
    println!("a test's fixture (start, the Widget CRD served, stop):");
    println!("  in process:                                {}", result.in_process_fixture.brief());
    println!("  a process:                                 {}", result.process_fixture.brief());
    println!("idle memory:");
    println!("  in process: {:.0} KiB per server ({} servers held at once)", per_server, args.idle);
    println!("  a process:  {process_rss} KiB resident");
    if let Some(path) = &args.output {
        crate::report::write_json(path, &result)?;
    }
    Ok(())
}
