//! The edges of HTTP where kube-apiserver (Go's net/http, go-restful, k8s.io/apiserver) has an
//! answer of its own: panics, durations and resourceVersions out of range, encoded paths and
//! odd methods, malformed framing. Each case asserts what a client sees: the Status's code,
//! reason and message, or the raw HTTP answer for what Go refuses before any handler runs.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, assert_status, metric};

on_both_backends!(
    panics_answer_500_and_end_only_their_stream,
    watch_timeouts_saturate_or_end_at_once,
    resource_versions_are_unsigned_64_bit,
    paths_decode_and_names_are_path_segments,
    methods_a_path_does_not_take_are_405,
    framing_go_refuses,
    websocket_origins_must_be_urls,
    json_nests_as_deep_as_kubes_decoder,
);

const CMS: &str = "/api/v1/namespaces/default/configmaps";

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

    // Past int64: kube's strconv.ParseInt error, as is (the query's conversion error).
    let out_of_range = server.get(&format!("{CMS}?watch=1&timeoutSeconds=9223372036854775808")).await;
    assert_status(
        &out_of_range,
        400,
        "BadRequest",
        "strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
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

/// `method path` on a connection of its own, with a Host header.
async fn raw(server: &Server, method: &str, path: &str, extra_headers: &str) -> String {
    let host = server.url.trim_start_matches("http://").to_string();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra_headers}Connection: close\r\n\r\n");
    exchange(&mut connect(server).await, request.as_bytes()).await
}

/// The status code and Status body of a raw response.
fn raw_status(response: &str) -> (u16, Value) {
    let code = response.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, serde_json::from_str(body_of(response)).unwrap_or(Value::Null))
}

async fn paths_decode_and_names_are_path_segments(backend: Backend) {
    let server = Server::start("edges-paths", backend, &[]).await;
    assert_eq!(server.post_json(CMS, &json!({"metadata": {"name": "cm0"}})).await.0, 201);
    // Escapes are decoded, as Go decodes the path: %30 is "0", and %2F splits segments.
    let (code, object) = server.get(&format!("{CMS}/cm%30")).await;
    assert_eq!((code, object["metadata"]["name"].as_str()), (200, Some("cm0")));
    let (code, object) = server.get("/api/v1/namespaces%2Fdefault%2Fconfigmaps%2Fcm0").await;
    assert_eq!((code, object["metadata"]["name"].as_str()), (200, Some("cm0")));
    let not_found = "the server could not find the requested resource";
    assert_status(&server.get(&format!("{CMS}/cm0%2Fnope")).await, 404, "NotFound", not_found);
    // `.` and `..` (sent raw: URL libraries fold them away), and `%`, are no names.
    for (name, why) in [("..", "may not be '..'"), (".", "may not be '.'")] {
        for method in ["GET", "DELETE"] {
            let answer = raw_status(&raw(&server, method, &format!("{CMS}/{name}"), "").await);
            assert_status(&answer, 400, "BadRequest", &format!("Name parameter invalid: \"{name}\": {why}"));
        }
    }
    let answer = raw_status(&raw(&server, "GET", &format!("{CMS}/../status"), "").await);
    assert_eq!(answer.0, 404, "configmaps have no status: {}", answer.1);
    assert_status(
        &server.get(&format!("{CMS}/a%25b")).await,
        400,
        "BadRequest",
        "Name parameter invalid: \"a%b\": may not contain '%'",
    );
    // A malformed escape: Go's plain 400, before any handler.
    let refused = raw(&server, "GET", &format!("{CMS}/%zz"), "").await;
    assert!(refused.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("content-type: text/plain; charset=utf-8"), "{refused}");
    assert_eq!(body_of(&refused), "400 Bad Request");
}

async fn methods_a_path_does_not_take_are_405(backend: Backend) {
    let server = Server::start("edges-methods", backend, &[]).await;
    assert_eq!(server.post_json(CMS, &json!({"metadata": {"name": "m"}})).await.0, 201);
    // go-restful's 405 Status, as kube-apiserver's service error handler renders it, with the
    // Allow header RFC 9110 asks for (kube's handler drops go-restful's).
    let not_allowed = "the server does not allow this method on the requested resource";
    let collection = "DELETE, GET, POST";
    let object = "DELETE, GET, PATCH, PUT";
    let cases = [
        ("DELETE", "/api/v1".to_string(), "GET"),
        ("DELETE", "/version".to_string(), "GET"),
        ("POST", "/api".to_string(), "GET"),
        ("PUT", "/apis/apps/v1".to_string(), "GET"),
        ("FROB", "/api/v1/pods".to_string(), "GET"),
        ("TRACE", CMS.to_string(), collection),
        ("OPTIONS", format!("{CMS}/m"), object),
        ("HEAD", CMS.to_string(), collection),
        ("PUT", CMS.to_string(), collection),
        ("POST", format!("{CMS}/m"), object),
        ("DELETE", "/api/v1/configmaps".to_string(), "GET"),
        ("POST", "/api/v1/configmaps".to_string(), "GET"),
        ("DELETE", "/api/v1/watch/namespaces/default/configmaps".to_string(), "GET"),
        ("DELETE", "/apis/apps/v1/namespaces/default/deployments/d/status".to_string(), "GET, PATCH, PUT"),
    ];
    for (method, path, allow) in &cases {
        let answer = raw(&server, method, path, "").await;
        assert!(answer.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{method} {path}: {answer}");
        assert!(answer.contains(&format!("\r\nallow: {allow}\r\n")), "{method} {path}: {answer}");
        if *method != "HEAD" {
            let status = raw_status(&answer);
            assert_status(&status, 405, "MethodNotAllowed", not_allowed);
            assert_eq!(status.1["details"], json!({}), "{method} {path}");
        }
    }
    // Nothing was deleted by the all-namespaces DELETE.
    assert_eq!(server.get(&format!("{CMS}/m")).await.0, 200);
    // A path with no route stays 404, whatever the method.
    for (method, path) in [("FROB", "/api/v1/widgets"), ("OPTIONS", "/api/v2"), ("DELETE", "/nope")] {
        let status = raw_status(&raw(&server, method, path, "").await);
        assert_status(&status, 404, "NotFound", "the server could not find the requested resource");
    }
    // The paths outside go-restful answer any method (as kube's health checks and the
    // aggregator's /apis do).
    for (method, path) in [("DELETE", "/healthz"), ("POST", "/apis"), ("HEAD", "/livez")] {
        let answer = raw(&server, method, path, "").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{method} {path}: {answer}");
    }
}

async fn framing_go_refuses(backend: Backend) {
    let server = Server::start("edges-framing", backend, &[]).await;
    let host = server.url.trim_start_matches("http://").to_string();
    // Go's own answers, status line and body, then the connection closes.
    let refused = |request: String, status_line: &'static str, body: &'static str| {
        let server = &server;
        async move {
            let mut conn = connect(server).await;
            let answer = exchange(&mut conn, request.as_bytes()).await;
            assert!(answer.starts_with(&format!("HTTP/1.1 {status_line}\r\n")), "{request:?}: {answer}");
            let head = answer.to_ascii_lowercase();
            assert!(head.contains("\r\ncontent-type: text/plain; charset=utf-8\r\n"), "{answer}");
            assert!(head.contains("\r\nconnection: close\r\n"), "{answer}");
            assert_eq!(body_of(&answer), body, "{request:?}");
            let mut rest = [0u8; 16];
            let closed = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut rest)).await;
            assert!(matches!(closed, Ok(Ok(0))), "the connection closes after {request:?}");
        }
    };
    refused(
        "GET /version HTTP/1.1\r\n\r\n".into(),
        "400 Bad Request: missing required Host header",
        "400 Bad Request: missing required Host header",
    )
    .await;
    refused(
        format!("GET /version HTTP/1.1\r\nHost: {host}\r\nHost: other\r\n\r\n"),
        "400 Bad Request: too many Host headers",
        "400 Bad Request: too many Host headers",
    )
    .await;
    refused(
        "GET /version HTTP/1.1\r\nHost: a b\r\n\r\n".into(),
        "400 Bad Request: malformed Host header",
        "400 Bad Request: malformed Host header",
    )
    .await;
    let chunked_body = "Content-Type: application/json\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    refused(
        format!("POST {CMS} HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: gzip, chunked\r\n{chunked_body}"),
        "501 Not Implemented",
        "Unsupported transfer encoding",
    )
    .await;
    refused(
        format!("POST {CMS} HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n{chunked_body}"),
        "501 Not Implemented",
        "Unsupported transfer encoding",
    )
    .await;
    // HTTP/1.0 needs no Host; one chunked coding is fine.
    let answer = exchange(&mut connect(&server).await, b"GET /version HTTP/1.0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.0 200 OK\r\n"), "{answer}");
    let object = r#"{"metadata":{"name":"te"}}"#;
    let created = format!(
        "POST {CMS} HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n{:x}\r\n{object}\r\n0\r\n\r\n",
        object.len()
    );
    let answer = exchange(&mut connect(&server).await, created.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 201 Created\r\n"), "{answer}");
}

async fn websocket_origins_must_be_urls(backend: Backend) {
    use tokio_tungstenite::tungstenite::Error as WsError;
    let server = Server::start("edges-origin", backend, &[]).await;
    let path = format!("{CMS}?watch=1&resourceVersion=0&timeoutSeconds=5");
    // x/net/websocket's checkOrigin: an Origin Go cannot parse as a URL is refused with a bare
    // 403, like a missing one.
    for origin in [Some("not a url"), Some("null"), Some("http://a b"), None] {
        let mut request = ws_request(&server, &path);
        match origin {
            Some(origin) => request.headers_mut().insert("Origin", origin.parse().unwrap()),
            None => request.headers_mut().remove("Origin"),
        };
        match tokio_tungstenite::connect_async(request).await {
            Err(WsError::Http(response)) => {
                assert_eq!(response.status(), 403, "{origin:?}");
                assert!(
                    response.body().as_ref().is_none_or(std::vec::Vec::is_empty),
                    "{origin:?}: {:?}",
                    response.body()
                );
            }
            Err(e) => panic!("{origin:?}: expected a 403, got {e}"),
            Ok(_) => panic!("{origin:?}: expected a 403, got a connection"),
        }
    }
    // A URL, or an absolute path, is an origin.
    for origin in ["http://localhost:8080", "/from/a/path"] {
        let mut request = ws_request(&server, &path);
        request.headers_mut().insert("Origin", origin.parse().unwrap());
        assert!(tokio_tungstenite::connect_async(request).await.is_ok(), "{origin}");
    }
}

/// `{"a":{"a":...1...}}`, `depth` objects deep.
fn nested(depth: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
}

async fn json_nests_as_deep_as_kubes_decoder(backend: Backend) {
    let server = Server::start("edges-json-depth", backend, &[]).await;
    // 10,000 levels decode (serde_json alone stops at 128): the deep field is unknown to a
    // ConfigMap, so it is dropped with a warning, and the object is created.
    let body = format!(r#"{{"metadata":{{"name":"deep"}},"data":{{"k":"v"}},"extra":{}}}"#, nested(9_998));
    let r =
        server.http.post(server.api(CMS)).header("Content-Type", "application/json").body(body).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let warning = r.headers().get("warning").map(|w| w.to_str().unwrap().to_string());
    assert_eq!(warning.as_deref(), Some(r#"299 - "unknown field \"extra\"""#));
    let (code, object) = server.get(&format!("{CMS}/deep")).await;
    assert_eq!((code, object["data"]["k"].as_str()), (200, Some("v")));
    // One level more is Go's scanner error, in kube's message.
    let body = format!(r#"{{"metadata":{{"name":"deeper"}},"extra":{}}}"#, nested(10_000));
    let answer = server.send("POST", CMS, "application/json", body).await;
    assert_status(
        &answer,
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '{' exceeded max depth ({\"metadata\":{\"name\":\"deeper\"}, ...)",
    );
    assert_eq!(server.get(&format!("{CMS}/deeper")).await.0, 404);
    // Embedded JSON (managedFields' fieldsV1) is kept, so it must stay readable once stored:
    // up to the 127 levels the whole object may nest, and 400 past that, nothing written.
    let managed = |name: &str, depth: usize| {
        format!(
            r#"{{"metadata":{{"name":"{name}","managedFields":[{{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{}}}]}}}}"#,
            nested(depth)
        )
    };
    assert_eq!(server.send("POST", CMS, "application/json", managed("fields-ok", 123)).await.0, 201);
    let (code, object) = server.get(&format!("{CMS}/fields-ok")).await;
    assert_eq!((code, object["metadata"]["name"].as_str()), (200, Some("fields-ok")));
    let refused = server.send("POST", CMS, "application/json", managed("fields-deep", 2_000)).await;
    assert_status(
        &refused,
        400,
        "BadRequest",
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: metadata.managedFields[0].fieldsV1: embedded JSON nests deeper than the 127 levels an object may have",
    );
    assert_eq!(server.get(&format!("{CMS}/fields-deep")).await.0, 404);
    // (Listed as a Table: the list itself nests two levels deeper than its items, past what
    // serde_json reads by default.)
    let table = server
        .http
        .get(server.api(&format!("{CMS}?includeObject=None")))
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let names: Vec<&str> = table["rows"].as_array().unwrap().iter().filter_map(|r| r["cells"][0].as_str()).collect();
    assert_eq!(names, ["deep", "fields-ok"]);
    assert_eq!(metric(&server, "listwatch_request_panics_total", "").await, 0.0);
}
