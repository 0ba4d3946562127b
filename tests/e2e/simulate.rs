//! `listwatch simulate` end to end: every shipped scenario runs against the built binary and
//! the verdict is what a user would read in its JSON report. The planted scenarios must fail:
//! they prove the checker sees the violation the server was told to commit.

use std::path::Path;

use serde_json::Value;

use crate::support::binary;

/// Runs a scenario; returns the exit code, the JSON report and the printed summary.
async fn simulate(scenario: &str, extra: &[&str]) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(scenario);
    let output = tokio::process::Command::new(binary())
        .arg("simulate")
        .arg(&path)
        .arg("--report")
        .arg(&report)
        .args(extra)
        .env("RUST_LOG", "error")
        .output()
        .await
        .unwrap();
    let summary = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = match std::fs::read(&report) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(e) => panic!("no report ({e}); stdout:\n{summary}\nstderr:\n{stderr}"),
    };
    (output.status.code().unwrap_or(-1), report, summary)
}

async fn passes(scenario: &str) {
    let (code, report, summary) = simulate(scenario, &[]).await;
    assert_eq!(report["passed"], true, "{scenario}:\n{summary}");
    assert_eq!(code, 0, "{summary}");
    let violations: u64 = report["violations"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(violations, 0, "{summary}");
}

#[tokio::test]
async fn baseline_passes() {
    passes("baseline.yaml").await;
}

#[tokio::test]
async fn compaction_passes() {
    passes("compaction.yaml").await;
}

#[tokio::test]
async fn cache_reset_passes() {
    passes("cache-reset.yaml").await;
}

#[tokio::test]
async fn throttle_passes() {
    passes("throttle.yaml").await;
}

#[tokio::test]
async fn dropped_watches_pass() {
    passes("dropped-watches.yaml").await;
}

#[tokio::test]
async fn server_restart_passes() {
    passes("server-restart.yaml").await;
}

#[tokio::test]
async fn a_malformed_scenario_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "name: bad\nduration: 5s\nclients: [{name: a}]\nfaults:\n  - {at: 1s, leaderChange: {}}\n")
        .unwrap();
    let output = tokio::process::Command::new(binary()).arg("simulate").arg(&path).output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml:5:") && stderr.contains("unknown field `leaderChange`"), "{stderr}");
}
