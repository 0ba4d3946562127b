//! TLS against a listwatch serving HTTPS with a generated CA: every check passes over HTTPS
//! (h2 by ALPN, wss:// WebSocket watches) when the kubeconfig's CA is trusted, and the server's
//! certificate is verified unless `--insecure-skip-tls-verify` says otherwise, whatever the
//! kubeconfig says.
//!
//! `LISTWATCH_BIN` must name a built listwatch binary (see `against_listwatch.rs`).

use std::path::Path;
use std::process::{Command, Output};

use listwatch_conformance::Target;
use listwatch_testkit::server::{Backend, Server};

fn conformance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_listwatch-conformance")).args(args).output().expect("the conformance binary runs")
}

/// Exit code and stderr, for assertions that show both.
fn outcome(output: &Output) -> (Option<i32>, String) {
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

async fn https_server() -> Server {
    Server::builder()
        .backend(Backend::Ephemeral)
        .args(["--tls-generate", "--bookmark-interval", "1s"])
        .debug_api(true)
        .start()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_passes_over_https_with_the_kubeconfigs_ca() {
    let server = https_server().await;
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let target = Target::from_kubeconfig(&server.kubeconfig).expect("target").with_debug_api(true);
    assert_eq!(target.tls_description(), Some("TLS: verifying the server's certificate against the kubeconfig's CA"));
    let report = listwatch_conformance::run(&target, &[]).await;
    println!("{report}");
    report.assert_all_passed_allowing_skips(&[]);
}

#[tokio::test]
async fn the_certificate_is_verified_unless_the_command_line_says_otherwise() {
    let server = https_server().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = listwatch_client::Config::from_kubeconfig(&server.kubeconfig).unwrap().tls.ca_pem.expect("the CA");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    let ca_file = ca_file.display().to_string();
    let check = ["--check", "watch-event-types"];

    // A URL alone: the public roots do not know the generated CA, and the run does not start.
    let (code, stderr) = outcome(&conformance(&[&["--server", &server.url][..], &check].concat()));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("against the public roots"), "{stderr}");
    assert!(stderr.contains("invalid peer certificate: UnknownIssuer"), "{stderr}");
    assert!(
        stderr.contains("--certificate-authority PATH") && stderr.contains("--insecure-skip-tls-verify"),
        "{stderr}"
    );

    // The CA given, or verification explicitly off: the check runs and passes.
    let (code, stderr) =
        outcome(&conformance(&[&["--server", &server.url, "--certificate-authority", &ca_file][..], &check].concat()));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("against --certificate-authority"), "{stderr}");
    let (code, stderr) =
        outcome(&conformance(&[&["--server", &server.url, "--insecure-skip-tls-verify"][..], &check].concat()));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("NOT verified (--insecure-skip-tls-verify)"), "{stderr}");

    // Both at once contradict each other.
    let both = ["--server", &server.url, "--certificate-authority", &ca_file, "--insecure-skip-tls-verify"];
    assert_eq!(conformance(&[&both[..], &check].concat()).status.code(), Some(2));

    // A kubeconfig that says insecure-skip-tls-verify (and has no CA) is still verified...
    let insecure = insecure_kubeconfig(dir.path(), &server.url);
    let (code, stderr) = outcome(&conformance(&[&["--kubeconfig", &insecure][..], &check].concat()));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the kubeconfig's insecure-skip-tls-verify is not followed"), "{stderr}");
    assert!(stderr.contains("UnknownIssuer"), "{stderr}");
    // ...unless the command line says so.
    let flagged = ["--kubeconfig", &insecure, "--insecure-skip-tls-verify"];
    let (code, stderr) = outcome(&conformance(&[&flagged[..], &check].concat()));
    assert_eq!(code, Some(0), "{stderr}");
}

/// A kubeconfig for `server` with `insecure-skip-tls-verify: true` and no CA.
fn insecure_kubeconfig(dir: &Path, server: &str) -> String {
    let path = dir.join("insecure-kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\nusers:\n- name: u\n  user: {{}}\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}
