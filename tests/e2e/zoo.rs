//! The zoo: clients with the bugs real client libraries have shipped, each caught by the rule
//! (or the cache or exit check) that looks for it, and the same clients without the bug passing
//! the same scenario with no finding. The planted ones are one small informer
//! (`tests/zoo/planted.py`, the official Python client's kubeconfig loader and urllib3) with
//! one change each to what goes on the wire; the scenarios (`tests/zoo/scenarios/`) cause what
//! triggers each bug.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::binary;

fn zoo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo")
}

/// Runs a zoo scenario with `env` added; returns the JSON report and the printed summary.
async fn simulate(scenario: &str, env: &[(&str, &str)]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let output = tokio::process::Command::new(binary())
        .arg("simulate")
        .arg(zoo().join("scenarios").join(scenario))
        .arg("--report")
        .arg(&report)
        .env("RUST_LOG", "error")
        .env("LISTWATCH_ZOO", zoo())
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap();
    let summary = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = match std::fs::read(&report) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(e) => panic!("no report ({e}); stdout:\n{summary}\nstderr:\n{stderr}"),
    };
    assert_eq!(output.status.success(), report["passed"] == true, "{summary}");
    (report, summary)
}

/// The rules with findings for `client`, and the failed checks, from a report.
fn verdict(report: &Value, client: &str) -> (Vec<String>, Vec<String>) {
    let rules = report["audit"]["clients"][client]
        .as_object()
        .map(|counts| counts.iter().filter(|(_, n)| n.as_u64() > Some(0)).map(|(rule, _)| rule.clone()).collect())
        .unwrap_or_default();
    let checks = report["checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect();
    (rules, checks)
}

/// The planted client with `bug` under `scenario`: the rules it must trip, and words the failed
/// checks must hold (a cache difference, an exit).
async fn planted(bug: &str, scenario: &str, rules: &[&str], checks: &[&str]) {
    let python = crate::python_client::python().await;
    let (report, summary) = simulate(scenario, &[("BUG", bug), ("LISTWATCH_PYTHON", &python)]).await;
    let (found, failed) = verdict(&report, "simulate:client");
    for rule in rules {
        assert!(found.iter().any(|f| f == rule), "{bug}: {rule} was not found:\n{summary}");
    }
    for check in checks {
        assert!(failed.iter().any(|f| f.contains(check)), "{bug}: no failed check says {check:?}:\n{summary}");
    }
    if bug == "none" {
        assert_eq!(report["passed"], true, "the correct client must pass {scenario}:\n{summary}");
        assert!(found.is_empty() && failed.is_empty(), "{summary}");
    } else {
        assert_eq!(report["passed"], false, "{bug} must fail {scenario}:\n{summary}");
    }
}

macro_rules! planted {
    ($($test:ident: $bug:literal under $scenario:literal => rules [$($rule:literal),*] checks [$($check:literal),*];)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                planted($bug, $scenario, &[$($rule),*], &[$($check),*]).await;
            }
        )*
    };
}

planted! {
    correct_client_passes_resume: "none" under "resume.yaml" => rules [] checks [];
    correct_client_passes_expire: "none" under "expire.yaml" => rules [] checks [];
    correct_client_passes_bookmarks: "none" under "bookmarks.yaml" => rules [] checks [];
    correct_client_passes_throttle: "none" under "throttle.yaml" => rules [] checks [];
    correct_client_passes_outage: "none" under "outage.yaml" => rules [] checks [];
    correct_client_passes_stall: "none" under "stall.yaml" => rules [] checks [];
    rewatch_from_now_misses_events: "rewatch-from-now" under "resume.yaml"
        => rules ["missed-events"] checks ["stale"];
    never_advancing_goes_back_in_time: "never-advances" under "resume.yaml" => rules ["back-in-time"] checks [];
    streaming_every_time_is_a_full_replay: "streaming-every-time" under "resume.yaml"
        => rules ["full-replay"] checks [];
    dropped_modified_events_leave_old_objects: "drops-modified" under "resume.yaml"
        => rules [] checks ["at an old resourceVersion"];
    constant_relists_are_a_relist_storm: "relists-constantly" under "resume.yaml" => rules ["relist-storm"] checks [];
    reading_one_page_misses_objects: "first-page-only" under "resume.yaml"
        => rules ["missed-events"] checks ["missing"];
    a_relist_that_keeps_stale_objects_is_caught_by_the_cache: "relist-keeps-stale" under "expire.yaml"
        => rules [] checks ["stale, deleted from storage"];
    the_same_version_after_410_is_a_410_loop: "same-rv-after-410" under "expire.yaml"
        => rules ["410-loop", "hot-loop"] checks [];
    exiting_on_410_fails_the_exit_check: "exits-on-410" under "expire.yaml"
        => rules [] checks ["expected to keep running"];
    ignored_bookmarks_are_found: "ignores-bookmarks" under "bookmarks.yaml" => rules ["bookmarks-ignored"] checks [];
    an_ignored_retry_after_is_found: "ignores-retry-after" under "throttle.yaml"
        => rules ["retry-after-ignored"] checks [];
    no_backoff_is_a_hot_loop: "no-backoff" under "outage.yaml" => rules ["hot-loop"] checks [];
    no_idle_timeout_stalls: "no-idle-timeout" under "stall.yaml" => rules ["stalled"] checks ["missing"];
}
