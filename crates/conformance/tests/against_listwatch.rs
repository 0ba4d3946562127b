//! Runs every conformance check against a real listwatch server, once on each watch path: the
//! watch cache, and storage watches (`--watch-cache=false`).
//!
//! The test builds nothing: `LISTWATCH_BIN` must name a built listwatch binary (e.g.
//! `cargo build -p listwatch && LISTWATCH_BIN=$PWD/target/debug/listwatch cargo test -p
//! listwatch-conformance`). Without it the test fails rather than skips, so a CI that forgot
//! to set it cannot look green.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use listwatch_conformance::{Report, Target};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};

/// A listwatch server started for one test, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listwatch_bin() -> PathBuf {
    match std::env::var_os("LISTWATCH_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "LISTWATCH_BIN is not set: build the server with `cargo build -p listwatch` and run \
             `LISTWATCH_BIN=$PWD/target/debug/listwatch cargo test -p listwatch-conformance`"
        ),
    }
}

/// A port that was free a moment ago (`--addr` needs a concrete one).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("binding a probe socket").local_addr().expect("probe address").port()
}

fn start_server(extra: &[&str]) -> Server {
    let bin = listwatch_bin();
    assert!(bin.is_file(), "LISTWATCH_BIN={} is not a file", bin.display());
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let base_url = format!("http://127.0.0.1:{port}");
    let child = Command::new(&bin)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--enable-debug-api"])
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .args(["--compaction-interval", "0", "--bookmark-interval", "1s"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
    let mut server = Server { child, base_url, _dir: dir };
    wait_ready(&mut server);
    server
}

/// Polls `/readyz` until the server answers 200.
fn wait_ready(server: &mut Server) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = server.base_url.trim_start_matches("http://").to_string();
    loop {
        if let Some(status) = server.child.try_wait().expect("polling the server") {
            panic!("listwatch exited before it was ready: {status}");
        }
        if readyz(&addr) {
            return;
        }
        assert!(Instant::now() < deadline, "listwatch at {} was not ready within 30 s", server.base_url);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One blocking `GET /readyz`; true on a 200.
fn readyz(addr: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// Runs every check against a fresh server started with `extra` flags.
fn run_all(extra: &[&str]) -> Report {
    let server = start_server(extra);
    let target = Target::new(&server.base_url).expect("target").with_debug_api(true);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let report = runtime.block_on(listwatch_conformance::run(&target, &[]));
    println!("listwatch serve {}:\n{report}\n", extra.join(" "));
    assert!(report.cleanup_problem.is_none(), "cleanup failed: {:?}", report.cleanup_problem);
    report
}

fn problems(cached: &Report, uncached: &Report) -> (Vec<String>, Vec<String>) {
    let names = |report: &Report, allowed: &[(&str, &str)]| -> Vec<String> {
        report.problems(allowed).iter().map(|r| r.name.clone()).collect()
    };
    // Storage watches send no periodic bookmarks (as kube's etcd watcher: spec §3.3).
    (names(cached, &[]), names(uncached, &[("watch-bookmarks", "the server sent no BOOKMARK")]))
}

/// One test per backend, both watch paths one after the other: nextest runs tests as parallel
/// processes, and the checks that time things (timeoutSeconds, bookmarks) should not share two
/// cores with a second full run.
#[test]
fn every_check_passes_on_both_watch_paths() {
    let cached = run_all(&["--ephemeral"]);
    let uncached = run_all(&["--ephemeral", "--watch-cache=false"]);
    let (cached_problems, uncached_problems) = problems(&cached, &uncached);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks failed (or were skipped for reasons not allowed; see the reports above): \
         watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
}

/// The same on etcd: a private one, because some checks compact storage.
#[test]
fn every_check_passes_on_etcd_on_both_watch_paths() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let etcd = runtime.block_on(EtcdProcess::start(EtcdProcessOptions::default()));
    let endpoint = etcd.endpoint().to_string();
    let cached = run_all(&["--etcd", &endpoint, "--etcd-prefix", "/cached/registry"]);
    let uncached = run_all(&["--etcd", &endpoint, "--etcd-prefix", "/uncached/registry", "--watch-cache=false"]);
    let (cached_problems, uncached_problems) = problems(&cached, &uncached);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks failed on etcd: watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
    drop(etcd);
}
