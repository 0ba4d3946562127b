//! The edges of HTTP where kube-apiserver (Go's net/http, go-restful, k8s.io/apiserver) has an
//! answer of its own: panics, durations and resourceVersions out of range, encoded paths and
//! odd methods, malformed framing. Each case asserts what a client sees: the Status's code,
//! reason and message, or the raw HTTP answer for what Go refuses before any handler runs.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::on_both_backends;
use crate::support::{Backend, Server, metric};

on_both_backends!(panics_answer_500_and_end_only_their_stream);

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
