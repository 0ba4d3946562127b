//! The zoo: clients with the bugs real client libraries have shipped, each caught by the rule
//! (or the cache or exit check) that looks for it, and the same clients without the bug passing
//! the same scenario with no finding. The planted ones are one small informer
//! (`tests/zoo/planted.py`, the official Python client's kubeconfig loader and urllib3) with
//! one change each to what goes on the wire; the scenarios (`tests/zoo/scenarios/`) cause what
//! triggers each bug. The released ones are library releases with a documented bug, each
//! beside the release that fixed it (`scripts/zoo-clients.sh` installs them), running the
//! programs in `tests/zoo/real/`. And the current releases of every client this project holds
//! correct run under every shipped scenario with no finding.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::simulate::simulate_file;
use crate::support::kubectl_binary;

fn zoo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo")
}

/// Runs a zoo scenario with `env` added; returns the JSON report and the printed summary.
async fn simulate(scenario: &str, env: &[(&str, &str)]) -> (Value, String) {
    let zoo = zoo();
    let zoo_dir = zoo.display().to_string();
    let mut env = env.to_vec();
    env.push(("LISTWATCH_ZOO", &zoo_dir));
    let (code, report, summary) = simulate_file(&zoo.join("scenarios").join(scenario), &[], &env).await;
    assert_eq!(code == 0, report["passed"] == true, "{summary}");
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
    correct_client_passes_gap: "none" under "gap.yaml" => rules [] checks [];
    correct_client_passes_expire: "none" under "expire.yaml" => rules [] checks [];
    correct_client_passes_bookmarks: "none" under "bookmarks.yaml" => rules [] checks [];
    correct_client_passes_throttle: "none" under "throttle.yaml" => rules [] checks [];
    correct_client_passes_outage: "none" under "outage.yaml" => rules [] checks [];
    correct_client_passes_stall: "none" under "stall.yaml" => rules [] checks [];
    correct_client_passes_paging: "none" under "paging.yaml" => rules [] checks [];
    correct_client_passes_toolarge: "none" under "toolarge.yaml" => rules [] checks [];
    keeping_a_partial_list_misses_objects: "keeps-partial-list" under "paging.yaml"
        => rules ["missed-events"] checks [];
    hammering_a_too_large_version_is_a_hot_loop: "hammers-too-large" under "toolarge.yaml"
        => rules ["hot-loop"] checks [];
    rewatch_from_now_misses_events: "rewatch-from-now" under "gap.yaml"
        => rules ["missed-events"] checks ["stale"];
    never_advancing_goes_back_in_time: "never-advances" under "resume.yaml" => rules ["back-in-time"] checks [];
    streaming_every_time_is_a_full_replay: "streaming-every-time" under "resume.yaml"
        => rules ["full-replay"] checks [];
    dropped_modified_events_leave_old_objects: "drops-modified" under "resume.yaml"
        => rules [] checks ["at an old resourceVersion"];
    constant_relists_are_a_relist_storm: "relists-constantly" under "resume.yaml" => rules ["relist-storm"] checks [];
    reading_one_page_misses_objects: "first-page-only" under "resume.yaml"
        => rules ["missed-events"] checks [];
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

/// Where `scripts/zoo-clients.sh` installed the released clients (`scripts/test.sh` runs it
/// first and says where in `LISTWATCH_ZOO_CLIENTS`; run alone, the test installs them).
pub(crate) async fn clients() -> PathBuf {
    if let Some(dir) = std::env::var_os("LISTWATCH_ZOO_CLIENTS") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/zoo-clients.sh");
    let out = tokio::process::Command::new(script).output().await.expect("scripts/zoo-clients.sh runs");
    assert!(out.status.success(), "scripts/zoo-clients.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The command line of a released client: `python-kubernetes-<v>` runs a Python program,
/// `python-kopf-<v>` the kopf operator, `node-client-<v>` the client-node informer; all watch
/// `namespace`.
async fn released_command(client: &str, program: &str, namespace: &str) -> String {
    let dir = clients().await.join(client);
    let real = zoo().join("real");
    let quote = |p: &Path| format!("'{}'", p.display());
    if client.starts_with("node-client-") {
        format!("env CLIENT_DIR={} node {} {namespace}", quote(&dir), quote(&real.join(program)))
    } else if client.starts_with("python-kopf-") {
        format!(
            "{} -m kopf run --standalone --namespace {namespace} {}",
            quote(&dir.join("bin/python")),
            quote(&real.join(program))
        )
    } else {
        format!("{} {} {namespace}", quote(&dir.join("bin/python")), quote(&real.join(program)))
    }
}

/// A released client under a scenario: the rules it must trip (none: it must pass).
async fn released(client: &str, program: &str, namespace: &str, scenario: &str, rules: &[&str]) {
    let command = released_command(client, program, namespace).await;
    let (report, summary) = simulate(scenario, &[("CLIENT", &command)]).await;
    let (found, failed) = verdict(&report, "simulate:client");
    if rules.is_empty() {
        assert_eq!(report["passed"], true, "{client} must pass {scenario}:\n{summary}");
        assert!(found.is_empty() && failed.is_empty(), "{summary}");
    } else {
        assert_eq!(found, rules, "{client} under {scenario}:\n{summary}");
    }
}

macro_rules! released {
    ($($test:ident: $client:literal runs $program:literal in $namespace:literal under $scenario:literal => [$($rule:literal),*];)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                released($client, $program, $namespace, $scenario, &[$($rule),*]).await;
            }
        )*
    };
}

released! {
    // python-base#227: with timeout_seconds, a 410 ends the stream silently; the loop asks the
    // expired resourceVersion again and again. Fixed in 17.17.0.
    python_12_0_1_loops_on_410: "python-kubernetes-12.0.1" runs "python_watch_loop.py" in "sim-0"
        under "real-expire.yaml" => ["410-loop", "hot-loop"];
    python_17_17_0_relists_on_410: "python-kubernetes-17.17.0" runs "python_watch_loop.py" in "sim-0"
        under "real-expire.yaml" => [];
    // python#1729: bookmark resourceVersions dropped; a quiet watch resumes before its bookmark
    // and gets 410. Fixed in 36.0.0.
    python_35_0_0_ignores_bookmarks: "python-kubernetes-35.0.0" runs "python_bookmarks.py" in "default"
        under "real-bookmarks.yaml" => ["bookmarks-ignored"];
    python_36_0_3_resumes_from_bookmarks: "python-kubernetes-36.0.3" runs "python_bookmarks.py" in "default"
        under "real-bookmarks.yaml" => [];
    // PR #2429: the informer resumes from its first LIST every time. Fixed in 1.3.0.
    client_node_1_2_0_goes_back_in_time: "node-client-1.2.0" runs "informer.mjs" in "sim-0"
        under "real-resume.yaml" => ["back-in-time"];
    client_node_1_3_0_resumes_where_it_was: "node-client-1.3.0" runs "informer.mjs" in "sim-0"
        under "real-resume.yaml" => [];
    // kopf #1229: a plain-text 429 kills the watcher while the operator runs on. Fixed in 1.42.2.
    kopf_1_42_1_stalls_after_a_plain_429: "python-kopf-1.42.1" runs "kopf_operator.py" in "sim-0"
        under "real-throttle-plain.yaml" => ["stalled"];
    kopf_1_42_2_waits_and_watches_again: "python-kopf-1.42.2" runs "kopf_operator.py" in "sim-0"
        under "real-throttle-plain.yaml" => [];
}

/// Every client this project holds correct, at its current release, as a command of a
/// scenario: the official Python client (a watch loop, and a long-lived stream with
/// bookmarks), the JavaScript client's informer (1.4.0, the newest that runs on Node 20),
/// kopf, kube-rs's reflector, and `kubectl get -w` (run again a second after each end, as a
/// user's loop would).
async fn current_clients() -> Vec<(String, String)> {
    let kube_rs = crate::kube_rs::programs().await.join("kube_rs_watch");
    let kubectl = kubectl_binary();
    vec![
        ("python".into(), released_command("python-kubernetes-36.0.3", "python_watch_loop.py", "sim-0").await),
        ("python-bookmarks".into(), released_command("python-kubernetes-36.0.3", "python_bookmarks.py", "sim-0").await),
        ("client-node".into(), released_command("node-client-1.4.0", "informer.mjs", "sim-0").await),
        ("kopf".into(), released_command("python-kopf-1.42.2", "kopf_operator.py", "sim-0").await),
        ("kube-rs".into(), format!("'{}' sim-0", kube_rs.display())),
        (
            "kubectl".into(),
            format!(
                "while :; do '{}' get configmaps -n sim-0 -w --request-timeout=0 -o name >/dev/null; sleep 1; done",
                kubectl.display()
            ),
        ),
    ]
}

/// A shipped scenario with the current clients added as commands: every client, ours
/// included, must have no finding, and the run must pass.
async fn current_clients_pass(scenario: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(scenario);
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut commands = doc.get("commands").and_then(|c| c.as_sequence()).cloned().unwrap_or_default();
    for (name, run) in current_clients().await {
        let mut command = serde_yaml_ng::Mapping::new();
        command.insert("name".into(), name.into());
        command.insert("run".into(), format!("exec sh -c {}", shell_quote(&run)).into());
        command.insert("exit".into(), "running".into());
        commands.push(serde_yaml_ng::Value::Mapping(command));
    }
    doc["commands"] = serde_yaml_ng::Value::Sequence(commands);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(scenario);
    std::fs::write(&file, serde_yaml_ng::to_string(&doc).unwrap()).unwrap();
    let (report, summary) = simulate(file.to_str().unwrap(), &[]).await;
    let findings = report["audit"]["findings"].as_array().unwrap();
    assert!(findings.is_empty(), "{scenario}: findings on correct clients:\n{summary}");
    assert_eq!(report["passed"], true, "{scenario} with the current clients:\n{summary}");
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

macro_rules! current_clients_pass {
    ($($test:ident: $scenario:literal,)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                current_clients_pass($scenario).await;
            }
        )*
    };
}

current_clients_pass! {
    current_clients_pass_baseline: "baseline.yaml",
    current_clients_pass_blackhole: "blackhole.yaml",
    current_clients_pass_bookmarks: "bookmarks.yaml",
    current_clients_pass_cache_reset: "cache-reset.yaml",
    current_clients_pass_chaos: "chaos.yaml",
    current_clients_pass_compaction: "compaction.yaml",
    current_clients_pass_cut_streams: "cut-streams.yaml",
    current_clients_pass_deployment_churn: "deployment-churn.yaml",
    current_clients_pass_dropped_watches: "dropped-watches.yaml",
    current_clients_pass_etcd_leader_change: "etcd-leader-change.yaml",
    current_clients_pass_goaway: "goaway.yaml",
    current_clients_pass_kubectl_watch: "kubectl-watch.yaml",
    current_clients_pass_latency: "latency.yaml",
    current_clients_pass_server_failover: "server-failover.yaml",
    current_clients_pass_server_restart: "server-restart.yaml",
    current_clients_pass_slow_client: "slow-client.yaml",
    current_clients_pass_storage_outage: "storage-outage.yaml",
    current_clients_pass_throttle: "throttle.yaml",
}
