//! What the harness's tests do to a running server, shared by the test files: plain HTTP
//! requests on connections of their own (no client library, so a test sees exactly what the
//! server answered), ConfigMaps as the objects, and whether a process still runs.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::time::Duration;

use listwatch_testkit::server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The ConfigMaps of namespace `default`.
pub const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// One plain-HTTP request on a connection of its own: the status code and the body.
pub async fn request(server: &Server, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.authority()).await.expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        server.authority(),
        body.len()
    );
    stream.write_all(format!("{head}{body}").as_bytes()).await.expect("send");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_string(&mut answer))
        .await
        .expect("an answer within 30 s")
        .expect("read");
    let code = answer.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status line: {answer}"));
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    (code, body)
}

/// Whether `pid` runs (a zombie that its parent has yet to reap does not).
pub fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X'])))
}

/// Creates ConfigMap `name` in `default`; panics unless the server answers 201.
pub async fn create_configmap(server: &Server, name: &str) {
    let (code, body) = request(server, "POST", CMS, &format!(r#"{{"metadata":{{"name":"{name}"}}}}"#)).await;
    assert_eq!(code, 201, "{body}");
}

/// The status code of a GET of ConfigMap `name` in `default`.
pub async fn configmap_code(server: &Server, name: &str) -> u16 {
    request(server, "GET", &format!("{CMS}/{name}"), "").await.0
}
