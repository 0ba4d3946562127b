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
