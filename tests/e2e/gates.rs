//! Features gated on the storage version, as kube-apiserver gates them: against etcd older
//! than 3.4.31 (or in [3.5.0, 3.5.13)) progress requests are unreliable, so consistent reads
//! go to etcd and streaming lists get a 500 ERROR event. Checked against Debian 12's etcd
//! 3.4.23 and, for contrast, etcd 3.5.

use std::time::Duration;

use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions, EtcdVersion};
use serde_json::json;

use crate::support::{Server, Watch, metric};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const SECONDS: Duration = Duration::from_secs(10);

async fn server_on(version: EtcdVersion) -> Server {
    let etcd = EtcdProcess::start(EtcdProcessOptions::default().version(version)).await;
    let storage = vec!["--etcd".to_string(), etcd.endpoint().to_string()];
    Server::start_with_storage(tempfile::tempdir().unwrap(), storage, Some(etcd), &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_etcd_reads_consistently_from_etcd_and_refuses_streaming_lists() {
    let server = server_on(EtcdVersion::V3_4).await;
    let (code, _) = server.post_json(CMS, &json!({"metadata": {"name": "a"}})).await;
    assert_eq!(code, 201);
    // A consistent list is right, and it did not come from the cache.
    let (code, list) = server.get(CMS).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(metric(&server, "apiserver_watch_cache_consistent_read_total", "resource=\"configmaps\"").await, 0.0);
    // A streaming list: 200, then one ERROR event with a 500 Status.
    let mut w = Watch::open(
        &server,
        &format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
    )
    .await;
    assert_eq!(w.status, 200);
    let error = w.next(SECONDS).await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 500);
    assert!(error["object"]["message"].as_str().unwrap().contains("RequestWatchProgress is disabled"));
    assert!(w.next(SECONDS).await.is_none());
    // Plain watches still work.
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion=0")).await;
    assert_eq!(w.next(SECONDS).await.unwrap()["type"], "ADDED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recent_etcd_reads_consistently_from_the_cache_and_streams_lists() {
    let server = server_on(EtcdVersion::V3_5).await;
    server.post_json(CMS, &json!({"metadata": {"name": "a"}})).await;
    let (code, _) = server.get(CMS).await;
    assert_eq!(code, 200);
    assert_eq!(metric(&server, "apiserver_watch_cache_consistent_read_total", "success=\"true\"").await, 1.0);
    let mut w = Watch::open(
        &server,
        &format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
    )
    .await;
    assert_eq!(w.next(SECONDS).await.unwrap()["type"], "ADDED");
    let end = w.next(SECONDS).await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}
