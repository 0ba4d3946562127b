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

#[tokio::test]
async fn storage_outage_passes() {
    passes("storage-outage.yaml").await;
}

#[tokio::test]
async fn cut_streams_pass() {
    passes("cut-streams.yaml").await;
}

#[tokio::test]
async fn latency_passes() {
    passes("latency.yaml").await;
}

#[tokio::test]
async fn blackhole_passes() {
    passes("blackhole.yaml").await;
}

#[tokio::test]
async fn goaway_passes() {
    passes("goaway.yaml").await;
}

#[tokio::test]
async fn etcd_leader_changes_pass() {
    passes("etcd-leader-change.yaml").await;
}

#[tokio::test]
async fn server_failover_passes() {
    passes("server-failover.yaml").await;
}

#[tokio::test]
async fn kubectl_watch_passes() {
    passes("kubectl-watch.yaml").await;
}

#[tokio::test]
async fn chaos_passes_on_its_seed() {
    passes("chaos.yaml").await;
}

/// The checker's own proof: told to drop one event per watch, the server is caught, and the
/// run fails with a reliable violation (the gap; the store may still converge, when a later
/// event of the same object carries its whole state).
#[tokio::test]
async fn a_planted_skipped_event_fails_the_run() {
    let (code, report, summary) = simulate("planted-skip-event.yaml", &[]).await;
    assert_eq!(code, 1, "{summary}");
    assert_eq!(report["passed"], false);
    assert!(report["violations"]["reliable"].as_u64().unwrap() >= 1, "{summary}");
    for quiet in ["ordered", "unique", "atomic", "unjustified410"] {
        assert_eq!(report["violations"][quiet], 0, "{quiet}: {summary}");
    }
}

/// Runs a short scenario in which the server breaks watches as `kind` says.
async fn planted(kind: &str) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("planted.yaml");
    std::fs::write(
        &scenario,
        [
            format!("name: planted-{kind}"),
            "seed: 5".into(),
            "duration: 3s".into(),
            "workload: {objects: 10, rate: 30}".into(),
            "clients: [{name: listwatch}]".into(),
            "faults:".into(),
            format!("  - {{at: 0s, breakWatch: {{kind: {kind}}}}}"),
            "  - {at: 1s, dropWatches: {}}".into(),
            "checks: {converge: 3s}".into(),
        ]
        .join("\n"),
    )
    .unwrap();
    simulate(scenario.to_str().unwrap(), &[]).await
}

/// Each breaker is caught as the guarantee it breaks, and the run fails.
#[tokio::test]
async fn every_planted_violation_is_caught_as_its_guarantee() {
    for (kind, guarantee) in [
        ("duplicate-event", "unique"),
        ("bookmark-ahead", "bookmarkable"),
        ("alter-object", "atomic"),
        ("spurious-expired", "unjustified410"),
    ] {
        let (code, report, summary) = planted(kind).await;
        assert_eq!(code, 1, "{kind}: {summary}");
        assert!(report["violations"][guarantee].as_u64().unwrap() >= 1, "{kind}: {summary}");
    }
}
