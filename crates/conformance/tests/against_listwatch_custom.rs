//! Runs every conformance check against a real listwatch with `--resource custom`: the checks
//! work on `conformanceblobs.conformance.listwatch.dev`, the suite's own ConfigMap-shaped custom
//! resource, whose CRD the run installs first. Custom resources must go through the same watch
//! cache, storage watches, bookmarks, paging and 410 paths as built-ins, so the same checks must
//! pass, on both watch paths and on both storage backends, as `against_listwatch.rs` asks of
//! ConfigMaps. Only the protobuf body checks are skipped (a CR has no protobuf message); the
//! other protobuf checks assert kube's 406 for a CR instead.
//!
//! `LISTWATCH_BIN` must name a built listwatch binary (see `against_listwatch.rs`).

use listwatch_conformance::{Report, Resource, Target};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server, ServerBuilder};

/// The skips every run with the custom resource has, with the start of their reason.
const CUSTOM_SKIPS: [(&str, &str); 2] = [
    ("protobuf-create-body", "a custom resource has no protobuf message"),
    ("protobuf-json-round-trip", "a custom resource has no protobuf message"),
];

/// Runs every check on the custom resource against a fresh server started as `server` says,
/// with `extra` flags; the run deletes its CRD afterwards, and that must work too.
fn run_all(server: ServerBuilder, extra: &[&str]) -> Report {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let server =
        runtime.block_on(server.args(["--bookmark-interval", "1s"]).args(extra).rust_log(None).echo_log(true).start());
    let target = Target::new(&server.url)
        .expect("target")
        .with_debug_api(true)
        .with_resource(Resource::Custom)
        .with_crd_deleted(true);
    let report = runtime.block_on(listwatch_conformance::run(&target, &[]));
    println!("listwatch serve {} (--resource custom):\n{report}\n", server.args().join(" "));
    assert!(report.cleanup_problem.is_none(), "cleanup failed: {:?}", report.cleanup_problem);
    report
}

fn problems(cached: &Report, uncached: &Report) -> (Vec<String>, Vec<String>) {
    let names = |report: &Report, allowed: &[(&str, &str)]| -> Vec<String> {
        report.problems(allowed).iter().map(|r| r.name.clone()).collect()
    };
    // Storage watches send no periodic bookmarks (as kube's etcd watcher: spec §3.3).
    let mut uncached_skips = CUSTOM_SKIPS.to_vec();
    uncached_skips.push(("watch-bookmarks", "the server sent no BOOKMARK"));
    (names(cached, &CUSTOM_SKIPS), names(uncached, &uncached_skips))
}

/// Both watch paths one after the other, as in `against_listwatch.rs`.
#[test]
fn every_check_passes_on_a_custom_resource_on_both_watch_paths() {
    let ephemeral = || Server::builder().backend(Backend::Ephemeral);
    let cached = run_all(ephemeral(), &[]);
    let uncached = run_all(ephemeral(), &["--watch-cache=false"]);
    let (cached_problems, uncached_problems) = problems(&cached, &uncached);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks failed on the custom resource (or were skipped for reasons not allowed; see the reports above): \
         watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
}

/// The same on etcd: a private one, because some checks compact storage.
#[test]
fn every_check_passes_on_a_custom_resource_on_etcd_on_both_watch_paths() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let etcd = runtime.block_on(EtcdProcess::start(EtcdProcessOptions::default()));
    let endpoint = etcd.endpoint().to_string();
    let on_etcd = |prefix: &str| Server::builder().storage_flags(["--etcd", &endpoint, "--etcd-prefix", prefix]);
    let cached = run_all(on_etcd("/cached/registry"), &[]);
    let uncached = run_all(on_etcd("/uncached/registry"), &["--watch-cache=false"]);
    let (cached_problems, uncached_problems) = problems(&cached, &uncached);
    assert!(
        cached_problems.is_empty() && uncached_problems.is_empty(),
        "checks failed on the custom resource on etcd: watch cache path {cached_problems:?}, storage watch path {uncached_problems:?}"
    );
    drop(etcd);
}
