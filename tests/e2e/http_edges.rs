//! The edges of HTTP where kube-apiserver (Go's net/http, go-restful, k8s.io/apiserver) has an
//! answer of its own: panics, durations and resourceVersions out of range, encoded paths and
//! odd methods, malformed framing. Each case asserts what a client sees: the Status's code,
//! reason and message, or the raw HTTP answer for what Go refuses before any handler runs.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, metric};

on_both_backends!(
    panics_answer_500_and_end_only_their_stream,
    watch_timeouts_saturate_or_end_at_once,
    resource_versions_are_unsigned_64_bit,
);

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[track_caller]
fn assert_status(got: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (c, body) = got;
    assert_eq!(*c, code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

/// One HTTP/1.x exchange over a connection of its own or `conn`: writes `request` as is and
/// reads one response (to its Content-Length, or to the end of the connection).
async fn exchange(conn: &mut tokio::net::TcpStream, request: &[u8]) -> String {
    conn.write_all(request).await.expect("write the request");
    let mut buffer = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok());
                if length.is_some_and(|n| buffer.len() >= end + 4 + n) {
                    return;
                }
            }
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.expect("a response within 10 s");
    String::from_utf8_lossy(&buffer).into_owned()
}

async fn connect(server: &Server) -> tokio::net::TcpStream {
    tokio::net::TcpStream::connect(server.url.trim_start_matches("http://")).await.expect("connect")
}

/// The body of a raw response.
fn body_of(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

async fn panics_answer_500_and_end_only_their_stream(backend: Backend) {
    let server = Server::start("edges-panics", backend, &[]).await;
    let panics = |stage: &'static str| {
        let server = &server;
        async move { metric(server, "listwatch_request_panics_total", &format!("stage=\"{stage}\"")).await }
    };
    assert_eq!(panics("handler").await, 0.0);
    // A handler that panics answers 500, as client-go renders kube-apiserver's answer...
    let panicked = server.send("POST", "/debug/listwatch/panic", "application/json", "").await;
    let message = "an error on the server (\"This request caused apiserver to panic. Look in the logs for details.\") has prevented the request from succeeding";
    assert_status(&panicked, 500, "InternalError", message);
    assert_eq!(
        panicked.1["details"]["causes"][0]["message"],
        "This request caused apiserver to panic. Look in the logs for details."
    );
    assert_eq!(panics("handler").await, 1.0);
    // ...and the connection lives on: the next request on it is served.
    let mut conn = connect(&server).await;
    let host = server.url.trim_start_matches("http://").to_string();
    let first =
        exchange(&mut conn, format!("POST /debug/listwatch/panic HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).await;
    assert!(first.starts_with("HTTP/1.1 500 "), "{first}");
    let second = exchange(&mut conn, format!("GET /version HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).await;
    assert!(second.starts_with("HTTP/1.1 200 "), "{second}");
    assert_eq!(panics("handler").await, 2.0);

    // A response stream that panics ends after what it sent, cleanly, and counts.
    let r = server.http.post(server.api("/debug/listwatch/panic?in=stream")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("the body ends cleanly"), "{\"debug\":\"the line before the panic\"}\n");
    assert_eq!(panics("stream").await, 1.0);
    // Everything else still works.
    assert_eq!(server.post_json(CMS, &json!({"metadata": {"name": "after"}})).await.0, 201);
}

/// A WebSocket watch request for `path` (with the Origin kube requires).
fn ws_request(server: &Server, path: &str) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = format!("{}{path}", server.url.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert("Origin", "http://localhost".parse().unwrap());
    request
}

async fn watch_timeouts_saturate_or_end_at_once(backend: Backend) {
    use futures::StreamExt;
    let server = Server::start("edges-timeouts", backend, &[]).await;
    let (_, created) = server.post_json(CMS, &json!({"metadata": {"name": "t0"}})).await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    // The largest timeoutSeconds is a watch that lasts (it used to overflow the deadline), over
    // chunked HTTP and over WebSocket.
    let forever = format!("{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=9223372036854775807");
    let mut chunked = Watch::open(&server, &forever).await;
    assert_eq!(chunked.status, 200);
    let (mut socket, _) = tokio_tungstenite::connect_async(ws_request(&server, &forever)).await.expect("upgraded");
    server.post_json(CMS, &json!({"metadata": {"name": "t1"}})).await;
    let event = chunked.next(Duration::from_secs(10)).await.expect("an event, not the end");
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("t1")));
    let message = tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap().unwrap().unwrap();
    let event: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
    assert_eq!(event["object"]["metadata"]["name"], "t1");

    // A negative timeoutSeconds: the deadline has passed, the stream ends at once, before the
    // initial events it would have had.
    for start in ["", "&resourceVersion=0", &format!("&resourceVersion={rv}")] {
        let mut ended = Watch::open(&server, &format!("{CMS}?watch=1&timeoutSeconds=-5{start}")).await;
        assert_eq!(ended.status, 200);
        assert_eq!(ended.next(Duration::from_secs(5)).await, None, "a watch{start} that ends at once");
    }
    let (mut socket, _) =
        tokio_tungstenite::connect_async(ws_request(&server, &format!("{CMS}?watch=1&timeoutSeconds=-1")))
            .await
            .expect("upgraded");
    let first = tokio::time::timeout(Duration::from_secs(5), socket.next()).await.expect("the server closes");
    assert!(
        matches!(first, Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_)))),
        "a close, not an event: {first:?}"
    );

    // Past int64: kube's strconv.ParseInt error.
    let out_of_range = server.get(&format!("{CMS}?watch=1&timeoutSeconds=9223372036854775808")).await;
    assert_status(
        &out_of_range,
        400,
        "BadRequest",
        "timeoutSeconds: Invalid value: \"9223372036854775808\": strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
    );
    // The server is fine.
    assert_eq!(metric(&server, "listwatch_request_panics_total", "").await, 0.0);
}

/// Asserts a "too large resource version" Status naming `requested`.
#[track_caller]
fn assert_too_large(got: &(u16, Value), requested: &str, retry_after: Option<u64>) {
    let (code, body) = got;
    assert_eq!(*code, 504, "{body}");
    assert_eq!(body["reason"], "Timeout", "{body}");
    let message = body["message"].as_str().unwrap_or("");
    let current = message
        .strip_prefix(&format!("Timeout: Too large resource version: {requested}, current: "))
        .unwrap_or_else(|| panic!("not kube's message: {body}"));
    assert!(current.parse::<u64>().is_ok(), "{body}");
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
    );
    assert_eq!(body["details"]["retryAfterSeconds"].as_u64(), retry_after, "{body}");
}

async fn resource_versions_are_unsigned_64_bit(backend: Backend) {
    let server = Server::start("edges-rv", backend, &[]).await;
    server.post_json(CMS, &json!({"metadata": {"name": "r"}})).await;
    // Not a u64: 400, the same message on GET as on LIST.
    let invalid = "invalid resource version: resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid syntax";
    assert_status(&server.get(&format!("{CMS}/r?resourceVersion=-1")).await, 400, "BadRequest", invalid);
    assert_status(&server.get(&format!("{CMS}?resourceVersion=-1")).await, 400, "BadRequest", invalid);
    let too_big = "invalid resource version: resourceVersion: Invalid value: \"18446744073709551616\": strconv.ParseUint: parsing \"18446744073709551616\": value out of range";
    assert_status(
        &server.get(&format!("{CMS}/r?resourceVersion=18446744073709551616")).await,
        400,
        "BadRequest",
        too_big,
    );

    // A u64 past int64 is a resourceVersion storage has not reached: the cache waits (3 s),
    // then 504 with Retry-After 1; storage (a paged list) answers 504 at once.
    let max = "18446744073709551615";
    let started = std::time::Instant::now();
    assert_too_large(&server.get(&format!("{CMS}/r?resourceVersion={max}")).await, max, Some(1));
    assert!(started.elapsed() >= Duration::from_secs(2), "the cache waited for it");
    let half = "9223372036854775808";
    assert_too_large(&server.get(&format!("{CMS}?resourceVersion={half}")).await, half, Some(1));
    assert_too_large(&server.get(&format!("{CMS}?resourceVersion={max}&limit=1")).await, max, None);

    // A watch from it waits for that revision: nothing arrives, the stream stays open.
    let mut waiting =
        Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={max}&allowWatchBookmarks=true")).await;
    assert_eq!(waiting.status, 200);
    server.post_json(CMS, &json!({"metadata": {"name": "later"}})).await;
    let quiet = tokio::time::timeout(Duration::from_secs(1), waiting.next(Duration::from_secs(2))).await;
    assert!(quiet.is_err(), "a watch from the future got {quiet:?}");
    // A streaming list from it: the ERROR event kube sends once the cache has not reached it.
    let mut listed = Watch::open(
        &server,
        &format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={max}"),
    )
    .await;
    assert_eq!(listed.status, 200);
    let error = listed.next(Duration::from_secs(10)).await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR", "{error}");
    let status = &error["object"];
    assert!(status["details"]["retryAfterSeconds"].as_u64().is_some_and(|s| (1..=3).contains(&s)), "{status}");
    let mut status = status.clone();
    status["details"]["retryAfterSeconds"] = json!(1);
    assert_too_large(&(status["code"].as_u64().unwrap() as u16, status), max, Some(1));
    assert_eq!(listed.next(Duration::from_secs(5)).await, None, "the stream ends after the ERROR");
}
