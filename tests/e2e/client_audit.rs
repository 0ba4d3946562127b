//! The client audit outside scenarios (`serve --audit-clients`): a client that hammers a
//! throttled server is found, per client, at `/debug/listwatch/clients` and in `/metrics`, and
//! a well-behaved client beside it is not; and the scenario file's audit section and a
//! command's cache are refused or reported as kube's users would expect.

use serde_json::Value;

use crate::support::{Backend, Server, binary};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn get_as(server: &Server, agent: &str, path: &str) -> u16 {
    let client = reqwest::Client::builder().user_agent(agent).build().unwrap();
    client.get(server.api(path)).send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn serve_audit_clients_finds_a_client_that_ignores_retry_after() {
    let server = Server::start("audit-serve", Backend::Ephemeral, &["--audit-clients"]).await;
    // A well-behaved client: one LIST, one watch from its resourceVersion that times out.
    let (_, list) = server.get(CMS).await;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let watch = format!("{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=1");
    assert_eq!(get_as(&server, "polite/1.0", &watch).await, 200);
    // Then 30 requests are throttled with Retry-After: 5, and a client asks 30 times at once.
    server.debug("throttle?count=30&retryAfterSeconds=5").await;
    let mut throttled = 0;
    for _ in 0..30 {
        if get_as(&server, "hammer/1.0", CMS).await == 429 {
            throttled += 1;
        }
    }
    assert_eq!(throttled, 30);

    let (code, clients) = server.get("/debug/listwatch/clients").await;
    assert_eq!(code, 200, "{clients}");
    let rules_of = |client: &str| -> Vec<String> {
        clients["clients"][client]
            .as_object()
            .unwrap_or_else(|| panic!("{client} was not recorded: {clients}"))
            .iter()
            .filter(|(_, n)| n.as_u64() > Some(0))
            .map(|(rule, _)| rule.clone())
            .collect()
    };
    let hammer = rules_of("hammer/1.0 @ 127.0.0.1");
    assert!(hammer.contains(&"retry-after-ignored".to_string()), "{clients}");
    assert!(hammer.contains(&"hot-loop".to_string()), "{clients}");
    assert_eq!(rules_of("polite/1.0 @ 127.0.0.1"), Vec::<String>::new(), "{clients}");
    let finding = clients["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "retry-after-ignored").unwrap();
    assert!(finding["summary"].as_str().unwrap().contains("Retry-After: 5"), "{finding}");
    assert!(finding["evidence"].as_array().unwrap().len() >= 2, "{finding}");

    let metrics = reqwest::get(server.api("/metrics")).await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(
            r#"listwatch_client_audit_findings{client="hammer/1.0 @ 127.0.0.1",rule="retry-after-ignored"} "#
        ),
        "{metrics}"
    );
    assert!(metrics.contains(r#"listwatch_client_audit_findings{client="polite/1.0 @ 127.0.0.1",rule="hot-loop"} 0"#));
}

#[tokio::test]
async fn without_the_audit_there_are_no_client_records() {
    let server = Server::start("audit-off", Backend::Ephemeral, &[]).await;
    let (code, body) = server.get("/debug/listwatch/clients").await;
    // Not an answer without the audit: the debug API's refusal (it takes only POSTs there).
    assert_eq!((code, body["kind"].as_str()), (405, Some("Status")), "{body}");
}

/// Runs `listwatch simulate` on a scenario written to a file; the exit code, stdout, stderr.
async fn simulate_text(text: &str) -> (i32, String, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.yaml");
    std::fs::write(&file, text).unwrap();
    let report = dir.path().join("report.json");
    let out = tokio::process::Command::new(binary())
        .arg("simulate")
        .arg(&file)
        .arg("--report")
        .arg(&report)
        .env("RUST_LOG", "error")
        .output()
        .await
        .unwrap();
    let report = std::fs::read(&report).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    )
}

#[tokio::test]
async fn unknown_audit_thresholds_and_rules_are_refused_with_their_place() {
    let base = "name: t\nduration: 1s\nclients: [{name: a}]\n";
    let (code, _, stderr, _) = simulate_text(&format!("{base}audit:\n  stalDeadline: 5s\n")).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("scenario.yaml:5:3") && stderr.contains("unknown field `stalDeadline`"), "{stderr}");
    let (code, _, stderr, _) = simulate_text(&format!("{base}audit: {{off: [missed-event]}}\n")).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("scenario.yaml:4:") && stderr.contains("unknown variant `missed-event`"), "{stderr}");
    let (code, _, stderr, _) = simulate_text(&format!("{base}audit: {{retryAfterFraction: 2}}\n")).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("retryAfterFraction must be in (0, 1]"), "{stderr}");
}

#[tokio::test]
async fn a_cache_that_never_answers_or_is_not_a_list_is_reported_as_that() {
    let scenario = r#"name: t
duration: 1s
clients: []
checks: {converge: 2s}
commands:
  - {name: silent, run: "sleep 30", exit: running, cache: {url: "http://127.0.0.1:${PORT}/", resource: configmaps, namespace: sim-0}}
  - name: not-a-list
    run: exec python3 -c 'import http.server,os;http.server.HTTPServer(("127.0.0.1",int(os.environ["PORT"])),type("H",(http.server.BaseHTTPRequestHandler,),{"do_GET":lambda s:(s.send_response(200),s.end_headers(),s.wfile.write(b"{\"kind\":\"Status\"}"))})).serve_forever()'
    exit: running
    cache: {url: "http://127.0.0.1:${PORT}/", resource: configmaps, namespace: sim-0}
"#;
    let (code, stdout, stderr, report) = simulate_text(scenario).await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let checks: Vec<&str> = report["checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(checks.iter().any(|c| c.starts_with("silent: cache:") && c.contains("never answered")), "{checks:?}");
    assert!(checks.iter().any(|c| c.starts_with("not-a-list: cache:") && c.contains("not a List")), "{checks:?}");
    assert!(!checks.iter().any(|c| c.contains("differs from storage")), "{checks:?}");
}
