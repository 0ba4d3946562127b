//! `listwatch informer`: the cache fills, it says when it is synced, then events follow.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(informer_command_shows_fill_sync_and_events);

async fn informer_command_shows_fill_sync_and_events(backend: Backend) {
    let server = Server::start("informer-cli", backend, &[]).await;
    let mut last_rv = String::new();
    for i in 0..3 {
        let (_, created) = server
            .post_json("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": format!("pre{i}")}}))
            .await;
        last_rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    }
    // The informer's first list (resourceVersion "0") may be served by a watch cache that has not
    // seen the last writes yet (kube-apiserver's too, on etcd); a list "not older than" the last
    // write waits until it has.
    let (code, _) = server
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={last_rv}&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(code, 200);
    let mut child = tokio::process::Command::new(crate::support::binary())
        .args(["informer", "cm", "-n", "default", "--duration", "30s", "--kubeconfig"])
        .arg(&server.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next =
        async || tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    assert!(next().await.contains("informer for configmaps (ConfigMap), namespace default"));
    for n in 1..=3 {
        let line = next().await;
        assert!(line.contains(&format!("cache filling: {n} objects")), "{line}");
    }
    assert!(next().await.contains("synced: 3 objects in the cache"));
    server.post_json("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "live"}})).await;
    assert!(next().await.contains("ADDED    default/live"));
    server.send("DELETE", "/api/v1/namespaces/default/configmaps/live", "application/json", "").await;
    assert!(next().await.contains("DELETED  default/live"));
}
