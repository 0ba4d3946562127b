//! The command line as a CI job uses it, against a real listwatch: the report as JSON on stdout,
//! as JUnit XML in a file (with the text report on stdout), and the exit codes.
//!
//! `LISTWATCH_BIN` must name a built listwatch binary (see `against_listwatch.rs`).

use std::process::{Command, Output};

use listwatch_testkit::server::{Backend, Server};

/// A check that passes on listwatch, and one that is skipped without `--debug-api`.
const CHECKS: [&str; 4] = ["--check", "watch-event-types", "--check", "list-expired-continue"];

fn conformance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_listwatch-conformance")).args(args).output().expect("the conformance binary runs")
}

#[tokio::test]
async fn json_on_stdout_and_junit_in_a_file() {
    let server = Server::builder().backend(Backend::Ephemeral).start().await;

    let output = conformance(&[&["--server", &server.url, "--output", "json"][..], &CHECKS].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(json["passed"], true);
    assert_eq!(json["counts"], serde_json::json!({"passed": 1, "failed": 0, "skipped": 1}));
    assert_eq!(json["results"][0]["name"], "watch-event-types");
    assert_eq!(json["results"][0]["outcome"], "passed");
    assert_eq!(json["results"][1]["outcome"], "skipped");
    assert!(json["results"][1]["why"].as_str().unwrap().contains("debug"), "{json}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conformance.xml");
    let file_arg = file.display().to_string();
    let output = conformance(
        &[&["--server", &server.url, "--output", "junit", "--output-file", &file_arg][..], &CHECKS].concat(),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("PASS  watch-event-types") && stdout.contains("1 passed, 0 failed, 1 skipped"), "{stdout}");
    let xml = std::fs::read_to_string(&file).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"listwatch-conformance\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\""), "{xml}");
    assert!(xml.contains("<testcase classname=\"listwatch-conformance\" name=\"watch-event-types\""), "{xml}");
    assert!(xml.contains("<skipped message="), "{xml}");

    // A report that cannot be written is a run that cannot be trusted: exit 2.
    let nowhere = dir.path().join("missing").join("conformance.xml").display().to_string();
    let output = conformance(&["--server", &server.url, "--check", "watch-event-types", "--output-file", &nowhere]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("writing the report to"), "{output:?}");
}

/// `--resource custom` installs the suite's CRD, runs the checks on its custom resource and
/// leaves the CRD in place; `--delete-crd` deletes it after the run.
#[tokio::test]
async fn resource_custom_installs_its_crd_and_leaves_it_unless_told_to_delete_it() {
    let server = Server::builder().backend(Backend::Ephemeral).start().await;
    let crd = format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/conformanceblobs.conformance.listwatch.dev",
        server.url
    );
    let crd_status = || async { reqwest::get(&crd).await.expect("GET the CRD").status().as_u16() };
    assert_eq!(crd_status().await, 404);

    let checks = ["--check", "list-pagination", "--check", "protobuf-create-body"];
    let args = [&["--server", &server.url, "--resource", "custom", "--output", "json"][..], &checks].concat();
    let output = conformance(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("on conformanceblobs.conformance.listwatch.dev in namespace"),
        "{output:?}"
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(json["counts"], serde_json::json!({"passed": 1, "failed": 0, "skipped": 1}), "{json}");
    assert!(
        json["results"][1]["why"].as_str().unwrap().starts_with("a custom resource has no protobuf message"),
        "{json}"
    );
    assert_eq!(crd_status().await, 200, "the CRD is left in place");

    // A second run finds the CRD; this one deletes it afterwards.
    let output =
        conformance(&[&["--server", &server.url, "--resource", "custom", "--delete-crd"][..], &checks].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(crd_status().await, 404, "--delete-crd deletes the CRD");
}

/// A kubeconfig for `server_url` whose user runs the shell script `body` as its exec plugin.
fn exec_kubeconfig(dir: &std::path::Path, server_url: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let plugin = dir.join("plugin");
    std::fs::write(&plugin, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server_url}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: {}\n      args: [eks, get-token]\n",
        plugin.display()
    );
    std::fs::write(&kubeconfig, text).unwrap();
    kubeconfig
}

#[tokio::test]
async fn an_exec_plugin_in_the_kubeconfig_authenticates_and_a_failing_one_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "plugin-token,alice,1001\n").unwrap();
    let tokens = tokens.display().to_string();
    let server = Server::builder()
        .backend(Backend::Ephemeral)
        .args(["--token-auth-file", &tokens, "--anonymous-auth=false"])
        .start()
        .await;

    // Without credentials the server answers 401: checks that pass were authenticated, on plain
    // requests, watches, WebSocket watches and HTTP/2 alike.
    let token = r#"echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"plugin-token"}}'"#;
    let kubeconfig = exec_kubeconfig(dir.path(), &server.url, token).display().to_string();
    let checks = ["watch-event-types", "websocket-json-messages", "http2-many-watches"];
    let mut args = vec!["--kubeconfig", kubeconfig.as_str()];
    for check in checks {
        args.extend(["--check", check]);
    }
    let output = conformance(&args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("3 passed, 0 failed, 0 skipped"), "{stdout}");

    let failing = "echo 'error: the SSO session has expired' >&2; exit 3";
    let kubeconfig = exec_kubeconfig(dir.path(), &server.url, failing).display().to_string();
    let output = conformance(&["--kubeconfig", &kubeconfig, "--check", "watch-event-types"]);
    assert_eq!(output.status.code(), Some(2), "a plugin that fails stops the run before any check");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "plugin eks get-token`: it exited with exit status: 3; stderr: error: the SSO session has expired"
        ),
        "{stderr}"
    );
}
