//! The official Python client (`kubernetes` on PyPI, installed by `scripts/python-client.sh`)
//! against listwatch: the scripts in `python/` do what a user's script does and assert as
//! they go; the test passes when one prints `ok` and exits 0.

use std::path::Path;
use std::time::Duration;

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(builtins_create_list_watch, custom_objects_through_a_crd,);

/// The interpreter with the client installed: `LISTWATCH_PYTHON` when `scripts/test.sh` installed
/// it before the tests started, else installed now (the script locks, so parallel tests wait for
/// one install).
pub async fn python() -> String {
    if let Ok(python) = std::env::var("LISTWATCH_PYTHON") {
        return python;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/python-client.sh");
    let out = tokio::process::Command::new(script).output().await.expect("scripts/python-client.sh runs");
    assert!(out.status.success(), "scripts/python-client.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs `tests/e2e/python/<script>` with the server's kubeconfig; returns what it printed.
pub async fn run_script(server: &Server, script: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/python").join(script);
    let kubectl = server.kubectl();
    let run =
        tokio::process::Command::new(python().await).arg(&path).arg(kubectl.kubeconfig()).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish in 120 s"))
        .expect("python runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.trim_end().ends_with("ok"), "{script} failed:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

async fn builtins_create_list_watch(backend: Backend) {
    let server = Server::start("python-builtins", backend, &[]).await;
    let printed = run_script(&server, "builtins.py").await;
    assert!(printed.contains("watched MODIFIED") && printed.contains("missing: 404"), "{printed}");
}

/// CustomObjectsApi on a CRD the script installs: defaulting and pruning, a watch, the status
/// subresource, a server-side apply and a delete.
async fn custom_objects_through_a_crd(backend: Backend) {
    let server = Server::start("python-custom-objects", backend, &[]).await;
    let printed = run_script(&server, "custom_objects.py").await;
    assert!(printed.contains("watched MODIFIED") && printed.contains("server-side applied"), "{printed}");
}
