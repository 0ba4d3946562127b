//! Runs every conformance check against a real listwatch server, once on each watch path: the
//! watch cache, and storage watches (`--watch-cache=false`).
//!
//! The test builds nothing: `LISTWATCH_BIN` must name a built listwatch binary (e.g.
//! `cargo build -p listwatch && LISTWATCH_BIN=$PWD/target/debug/listwatch cargo test -p
//! listwatch-conformance`). Without it the test fails rather than skips, so a CI that forgot
//! to set it cannot look green.

use listwatch_conformance::{Report, Target};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server, ServerBuilder};

/// Runs every check against a fresh server (testkit's harness, with the server's log shown
/// beside the test's output) started as `server` says, with `extra` flags.
fn run_all(server: ServerBuilder, extra: &[&str]) -> Report {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let server =
        runtime.block_on(server.args(["--bookmark-interval", "1s"]).args(extra).rust_log(None).echo_log(true).start());
    let target = Target::new(&server.url).expect("target").with_debug_api(true);
    let report = runtime.block_on(listwatch_conformance::run(&target, &[]));
    println!("listwatch serve {}:\n{report}\n", server.args().join(" "));
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
    let ephemeral = || Server::builder().backend(Backend::Ephemeral);
    let cached = run_all(ephemeral(), &[]);
    let uncached = run_all(ephemeral(), &["--watch-cache=false"]);
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
    let on_etcd = |prefix: &str| Server::builder().storage_flags(["--etcd", &endpoint, "--etcd-prefix", prefix]);
    let cached = run_all(on_etcd("/cached/registry"), &[]);
    let uncached = run_all(on_etcd("/uncached/registry"), &["--watch-cache=false"]);
    let (cached_problems, uncached_problems) = problems(&cached, &uncached);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks failed on etcd: watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
    drop(etcd);
}
