//! The read faults of the debug API: expired continue tokens, too-large resourceVersions, and
//! a watch cache that trails storage. Each answers as kube does in the situation it stands for.

use std::time::Duration;

use serde_json::json;

use crate::support::{Backend, Server, assert_status};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn create(server: &Server, name: &str) -> i64 {
    let (code, body) = server.post_json(CMS, &json!({"metadata": {"name": name}})).await;
    assert_eq!(code, 201, "{body}");
    body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn continue_tokens_expire_while_the_fault_lasts() {
    let server = Server::start("reads-continue", Backend::Ephemeral, &[]).await;
    for i in 0..3 {
        create(&server, &format!("c{i}")).await;
    }
    let (_, first) = server.get(&format!("{CMS}?limit=1")).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    server.debug("continue/expire?for=60s").await;
    let expired = server.get(&format!("{CMS}?limit=1&continue={token}")).await;
    assert_status(
        &expired,
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    );
    assert!(expired.1["metadata"]["continue"].as_str().is_some_and(|t| !t.is_empty()), "{}", expired.1);
    // A list without a token is served.
    assert_eq!(server.get(CMS).await.0, 200);
}

#[tokio::test]
async fn reads_past_the_ceiling_are_too_large_while_the_fault_lasts() {
    let server = Server::start("reads-toolarge", Backend::Ephemeral, &[]).await;
    let rv = create(&server, "a").await;
    server.debug("toolarge?for=60s&behind=1").await;
    let (code, body) = server.get(&format!("{CMS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!((code, body["reason"].as_str()), (504, Some("Timeout")), "{body}");
    assert_eq!(body["message"], format!("Timeout: Too large resource version: {rv}, current: {}", rv - 1));
    let (code, _) = server.get(&format!("{CMS}?watch=1&resourceVersion={rv}")).await;
    assert_eq!(code, 504);
    // Below the ceiling, and without a resourceVersion, reads are served.
    assert_eq!(server.get(&format!("{CMS}?resourceVersion={}&resourceVersionMatch=NotOlderThan", rv - 1)).await.0, 200);
    assert_eq!(server.get(CMS).await.0, 200);
}

#[tokio::test]
async fn a_lagging_cache_serves_older_state_until_it_catches_up() {
    let server = Server::start("reads-lag", Backend::Ephemeral, &[]).await;
    create(&server, "before").await;
    let lag = server.debug("cache/lag?lag=1500ms&for=60s&resource=configmaps").await;
    assert_eq!(lag["lagging"], json!(["configmaps"]));
    let rv = create(&server, "after").await;
    // From the cache (resourceVersion=0) the write is not there yet...
    let (_, list) = server.get(&format!("{CMS}?resourceVersion=0")).await;
    let cached: i64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(cached < rv, "the cache is at {cached}, the write at {rv}");
    assert!(!list.to_string().contains("\"after\""), "{list}");
    // ...until the lag has passed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, list) = server.get(&format!("{CMS}?resourceVersion=0")).await;
        if list.to_string().contains("\"after\"") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the lagging cache never caught up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
