//! The binary as a test fixture for other languages (examples/fixtures): the pytest fixture and
//! the Node one start `listwatch serve --ephemeral --addr 127.0.0.1:0 --ready-file F`, read the
//! URL and kubeconfig from F, drive a fault through the debug API, and read the audit. Run with
//! the official clients the zoo installs (scripts/zoo-clients.sh).

use std::path::Path;

use crate::support::binary;

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fixtures")
}

fn outcome(what: &str, out: &std::process::Output) -> String {
    format!(
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn the_pytest_fixture_runs_the_examples_tests() {
    let python = crate::zoo::clients().await.join("python-fixture/bin/python");
    let cache = tempfile::tempdir().expect("a directory");
    let out = tokio::process::Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(examples().join("python"))
        .env("LISTWATCH_BIN", binary())
        .current_dir(cache.path())
        .output()
        .await
        .expect("pytest runs");
    let text = outcome("pytest", &out);
    assert!(out.status.success(), "{text}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 passed"), "{text}");
}

#[tokio::test]
async fn the_node_fixture_runs_the_examples_tests() {
    // The example as a user has it: its files beside a node_modules holding client-node 1.4.0.
    let modules = crate::zoo::clients().await.join("node-client-1.4.0/node_modules");
    let dir = tempfile::tempdir().expect("a directory");
    for file in ["listwatch.mjs", "watch.test.mjs", "package.json"] {
        std::fs::copy(examples().join("node").join(file), dir.path().join(file)).expect("copy the example");
    }
    std::os::unix::fs::symlink(&modules, dir.path().join("node_modules")).expect("link node_modules");
    let out = tokio::process::Command::new("node")
        .args(["--test", "watch.test.mjs"])
        .env("LISTWATCH_BIN", binary())
        .current_dir(dir.path())
        .output()
        .await
        .expect("node runs");
    let text = outcome("node --test", &out);
    assert!(out.status.success(), "{text}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("# pass 2"), "{text}");
}
