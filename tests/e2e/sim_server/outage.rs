//! Storage outages (`POST /debug/listwatch/storage/outage?for=D`), on the embedded store and on
//! etcd alike: while storage is out, requests get an error Status at once (no hang), writes are
//! not acknowledged, `/readyz` fails, open watches end as kube's re-initializing watch cache
//! ends them and new ones get 429; afterwards writes succeed, a watch from before resumes or
//! gets kube's 410, and every acknowledged write is there.

use std::time::Duration;

use serde_json::{Value, json};

use super::{CMS, RawStream, Read, SECONDS, create, event_rv, rv_of};
use crate::on_both_backends;
use crate::support::{Backend, Server, assert_failure, assert_status};

on_both_backends!(requests_fail_while_storage_is_out_and_nothing_acknowledged_is_lost, outages_end_by_themselves);

/// What storage answers while it is out: what etcd says when a request finds no leader in time.
const ETCD_TIMEOUT: &str = "etcdserver: request timed out";

/// `/readyz`'s status code and body.
async fn readyz(server: &Server) -> (u16, String) {
    let r = server.http.get(server.api("/readyz")).send().await.expect("readyz");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// Waits (bounded) until `/readyz` answers 200.
async fn wait_ready(server: &Server) {
    let deadline = tokio::time::Instant::now() + SECONDS;
    while readyz(server).await.0 != 200 {
        assert!(tokio::time::Instant::now() < deadline, "not ready again within {SECONDS:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A request that must be answered at once, not hang on dead storage.
async fn answered<T>(request: impl Future<Output = T>) -> T {
    tokio::time::timeout(SECONDS, request).await.expect("an answer, not a hang")
}

async fn requests_fail_while_storage_is_out_and_nothing_acknowledged_is_lost(backend: Backend) {
    let server = Server::start("outage", backend, &[]).await;
    let before = create(&server, "before", json!({})).await;
    let start = rv_of(&before);
    let mut watch = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await;

    assert_eq!(server.debug("storage/outage?for=1h").await, json!({"outageSeconds": 3600.0}));
    // A consistent GET reads storage: an error Status, at once.
    let got = answered(server.get(&format!("{CMS}/before"))).await;
    assert_status(&got, 503, "ServiceUnavailable", ETCD_TIMEOUT);
    // A write is not acknowledged.
    let refused = answered(server.post_json(CMS, &json!({"metadata": {"name": "during"}}))).await;
    assert_status(&refused, 503, "ServiceUnavailable", ETCD_TIMEOUT);
    let (code, body) = readyz(&server).await;
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("[-]etcd-readiness failed"), "{body}");
    // The watch cache lost its storage watch: open watches end cleanly, new ones get 429 until
    // it has relisted.
    assert!(matches!(watch.next(SECONDS).await, Read::Clean));
    let rewatch = answered(server.get(&format!("{CMS}?watch=1&resourceVersion={start}"))).await;
    assert_failure(&rewatch, 429, "TooManyRequests");
    assert!(rewatch.1["message"].as_str().unwrap().starts_with("storage is (re)initializing"), "{}", rewatch.1);

    // Storage is back (the outage ended early).
    assert_eq!(server.debug("storage/outage?for=0s").await, json!({"outageSeconds": 0.0}));
    wait_ready(&server).await;
    let after = create(&server, "after", json!({})).await;
    // A watch from before resumes with what came after, or gets kube's 410 when the relisted
    // cache's window starts past it; never the refused write.
    let mut resumed = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await;
    let first = resumed.line(SECONDS).await;
    match first["type"].as_str() {
        Some("ERROR") => {
            assert_eq!(
                (first["object"]["code"].as_u64(), first["object"]["reason"].as_str()),
                (Some(410), Some("Expired"))
            );
        }
        _ => {
            assert_eq!(
                (first["type"].as_str(), first["object"]["metadata"]["name"].as_str()),
                (Some("ADDED"), Some("after"))
            );
            assert_eq!(event_rv(&first), rv_of(&after));
        }
    }
    // Every acknowledged write is there, and only those.
    let (code, list) = server.get(CMS).await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().filter_map(|o| o["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["after", "before"]);
}

async fn outages_end_by_themselves(backend: Backend) {
    let server = Server::start("outage-expires", backend, &[]).await;
    let outage = |query: &'static str| {
        let server = &server;
        async move { server.send("POST", &format!("/debug/listwatch/storage/outage{query}"), "application/json", "").await }
    };
    assert_failure(&outage("").await, 400, "BadRequest");
    assert_failure(&outage("?for=soon").await, 400, "BadRequest");

    assert_eq!(outage("?for=1s").await.0, 200);
    let during = json!({"metadata": {"name": "during"}});
    assert_status(&answered(server.post_json(CMS, &during)).await, 503, "ServiceUnavailable", ETCD_TIMEOUT);
    // Writes succeed again once the second is over (each refused try is not applied).
    let deadline = tokio::time::Instant::now() + SECONDS;
    let written: Value = loop {
        let (code, body) = answered(server.post_json(CMS, &during)).await;
        if code == 201 {
            break body;
        }
        assert_status(&(code, body), 503, "ServiceUnavailable", ETCD_TIMEOUT);
        assert!(tokio::time::Instant::now() < deadline, "storage did not come back within {SECONDS:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(written["metadata"]["name"], "during");
    wait_ready(&server).await;
}
