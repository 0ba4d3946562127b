//! Runs every conformance check against a real listwatch server, once on each watch path: the
//! watch cache, and storage watches (`--watch-cache=false`); on the embedded store and on etcd;
//! on ConfigMaps, and with `--resource custom` on the suite's own ConfigMap-shaped custom
//! resource (`conformanceblobs.conformance.listwatch.dev`, whose CRD the run installs and, here,
//! deletes afterwards). Custom resources must go through the same watch cache, storage watches,
//! bookmarks, paging and 410 paths as built-ins, so the same checks must pass on them; only the
//! protobuf body checks are skipped (a CR has no protobuf message), while the other protobuf
//! checks assert kube's 406 for a CR instead.
//!
//! The test builds nothing: `LISTWATCH_BIN` must name a built listwatch binary (e.g.
//! `cargo build -p listwatch && LISTWATCH_BIN=$PWD/target/debug/listwatch cargo test -p
//! listwatch-conformance`). Without it the test fails rather than skips, so a CI that forgot
//! to set it cannot look green.

use listwatch_conformance::{Report, Resource, Target};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server, ServerBuilder};

/// The skips every run on the custom resource has, with the start of their reason.
const CUSTOM_SKIPS: [(&str, &str); 2] = [
    ("protobuf-create-body", "a custom resource has no protobuf message"),
    ("protobuf-json-round-trip", "a custom resource has no protobuf message"),
];

/// Runs every check on `resource` against a fresh server (testkit's harness, with the server's
/// log shown beside the test's output) started as `server` says, with `extra` flags.
fn run_all(resource: Resource, server: ServerBuilder, extra: &[&str]) -> Report {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let server =
        runtime.block_on(server.args(["--bookmark-interval", "1s"]).args(extra).rust_log(None).echo_log(true).start());
    let target = Target::new(&server.url)
        .expect("target")
        .with_debug_api(true)
        .with_resource(resource)
        .with_crd_deleted(resource.is_custom());
    let report = runtime.block_on(listwatch_conformance::run(&target, &[]));
    println!("listwatch serve {} (--resource {resource:?}):\n{report}\n", server.args().join(" "));
    assert!(report.cleanup_problem.is_none(), "cleanup failed: {:?}", report.cleanup_problem);
    report
}

/// Runs every check on `resource` on both watch paths, one after the other (nextest runs tests
/// as parallel processes, and the checks that time things, timeoutSeconds and bookmarks, should
/// not share two cores with a second full run), and asserts that none failed or was skipped for
/// a reason not allowed.
fn every_check_passes_on_both_watch_paths_of(resource: Resource, server: impl Fn() -> ServerBuilder) {
    let cached = run_all(resource, server(), &[]);
    let uncached = run_all(resource, server(), &["--watch-cache=false"]);
    let names = |report: &Report, allowed: &[(&str, &str)]| -> Vec<String> {
        report.problems(allowed).iter().map(|r| r.name.clone()).collect()
    };
    let mut allowed = if resource.is_custom() { CUSTOM_SKIPS.to_vec() } else { Vec::new() };
    let cached_problems = names(&cached, &allowed);
    // Storage watches send no periodic bookmarks (as kube's etcd watcher: spec §3.3).
    allowed.push(("watch-bookmarks", "the server sent no BOOKMARK"));
    let uncached_problems = names(&uncached, &allowed);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks on {resource:?} failed (or were skipped for reasons not allowed; see the reports above): \
         watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
}

fn ephemeral() -> ServerBuilder {
    Server::builder().backend(Backend::Ephemeral)
}

/// The same on etcd: a private one, because some checks compact storage; each run has a
/// prefix of its own.
fn on_etcd(resource: Resource) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let etcd = runtime.block_on(EtcdProcess::start(EtcdProcessOptions::default()));
    let endpoint = etcd.endpoint().to_string();
    let runs = std::sync::atomic::AtomicUsize::new(0);
    every_check_passes_on_both_watch_paths_of(resource, || {
        let prefix = format!("/run{}/registry", runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        Server::builder().storage_flags(["--etcd", &endpoint, "--etcd-prefix", &prefix])
    });
    drop(etcd);
}

#[test]
fn every_check_passes_on_both_watch_paths() {
    every_check_passes_on_both_watch_paths_of(Resource::ConfigMaps, ephemeral);
}

#[test]
fn every_check_passes_on_etcd_on_both_watch_paths() {
    on_etcd(Resource::ConfigMaps);
}

#[test]
fn every_check_passes_on_a_custom_resource_on_both_watch_paths() {
    every_check_passes_on_both_watch_paths_of(Resource::Custom, ephemeral);
}

#[test]
fn every_check_passes_on_a_custom_resource_on_etcd_on_both_watch_paths() {
    on_etcd(Resource::Custom);
}
