//! A real framework's webhooks: kopf (1.42.2) serves a validating and a mutating webhook for
//! ConfigMaps and registers them itself (its managed configurations, created then merge-
//! patched); the server calls them over HTTPS with the CA kopf registered.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Backend, Server};

#[tokio::test]
async fn kopf_registers_and_serves_its_own_webhooks() {
    let python = crate::zoo::clients().await.join("python-kopf-1.42.2/bin/python");
    let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/real/kopf_webhooks.py");
    let dir = tempfile::tempdir().unwrap();
    let tls = listwatch_apiserver::tls::generate(dir.path(), &[]).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Server::start("admission-kopf", Backend::Memory, &[]).await;
    let log = dir.path().join("kopf.log");
    let mut kopf = tokio::process::Command::new(&python)
        .args(["-m", "kopf", "run", "--standalone", "--namespace", "default"])
        .arg(&program)
        .env("KUBECONFIG", &server.kubeconfig)
        .env("WEBHOOK_PORT", port.to_string())
        .env("WEBHOOK_CERT", &tls.cert)
        .env("WEBHOOK_KEY", &tls.key)
        .env("WEBHOOK_CA", &tls.ca_cert)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("kopf runs");
    let k = server.kubectl();
    let refused_by =
        "admission webhook \"forbid-passwords.auto.kopf.dev\" denied the request: no passwords in configmaps";
    let secret =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "leak"}, "data": {"password": "x"}});
    // kopf registers its webhooks once it has started: wait for the refusal.
    let deadline = Instant::now() + Duration::from_secs(90);
    let refused = loop {
        let got = server.post_json("/api/v1/namespaces/default/configmaps?dryRun=All", &secret).await;
        if got.0 == 422 {
            break got;
        }
        let running = kopf.try_wait().unwrap().is_none();
        assert!(
            running && Instant::now() < deadline,
            "kopf's webhook never refused ({got:?}); kopf's log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(refused.1["message"], refused_by, "{}", refused.1);
    // Its configurations are as kopf wrote them, and the server accepted them as they are.
    let validating = k.get_json(&["validatingwebhookconfiguration", "auto.kopf.dev"]).await;
    let hook = &validating["webhooks"][0];
    assert_eq!(hook["name"], "forbid-passwords.auto.kopf.dev");
    assert_eq!(hook["clientConfig"]["url"], format!("https://127.0.0.1:{port}/forbid-passwords"));
    // kubectl sees the refusal; an allowed ConfigMap is created with kopf's mutation.
    let out = k.run_with_input(&["create", "-f", "-"], &secret.to_string()).await;
    assert!(!out.success && out.stderr.contains(refused_by), "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut n = 0;
    loop {
        n += 1;
        let name = format!("plain-{n}");
        k.run(&["create", "configmap", &name, "--from-literal=a=b"]).await.ok();
        let stored = k.get_json(&["configmap", &name]).await;
        if stored["metadata"]["labels"]["stamped-by"] == "kopf" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kopf's mutating webhook never stamped ({stored}); kopf's log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kopf.kill().await.ok();
}
