//! kube-rs (`kube` 5) against listwatch: the programs in `crates/bench/kube-rs/src/bin`
//! do what a kube-rs controller does and print `ok` when every check held. They are built by
//! `scripts/kube-rs-programs.sh` (scripts/test.sh runs it first and says where, in
//! `LISTWATCH_KUBE_RS_PROGRAMS`; run alone, the test builds them).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(server_side_apply_and_a_watcher_on_a_custom_resource,);

/// The directory holding the built programs.
pub async fn programs() -> PathBuf {
    if let Some(dir) = std::env::var_os("LISTWATCH_KUBE_RS_PROGRAMS") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kube-rs-programs.sh");
    let out = tokio::process::Command::new(script).output().await.expect("scripts/kube-rs-programs.sh runs");
    assert!(out.status.success(), "scripts/kube-rs-programs.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A CRD installed through kube-rs, `Patch::Apply` with a field manager creating and then
/// changing an object, a `watcher` seeing both, the manager in managedFields.
async fn server_side_apply_and_a_watcher_on_a_custom_resource(backend: Backend) {
    let server = Server::start("kube-rs-crd", backend, &[]).await;
    let program = programs().await.join("kube_rs_custom_resource");
    let kubectl = server.kubectl();
    let run = tokio::process::Command::new(&program).arg(kubectl.kubeconfig()).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the kube-rs program finished in 60 s")
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.trim_end().ends_with("ok"), "kube-rs failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("applied") && stdout.contains("watched the change"), "{stdout}");
}
