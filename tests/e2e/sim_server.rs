//! The server side of the watch simulator: storage's own history stream, the deliberate
//! guarantee breakers, storage outages, and network faults on watch streams, each through the
//! debug API as a user's test would drive it, observed on the wire as a client sees it.
//!
//! Watches here are read over raw HTTP/1.1 with the chunked framing decoded by hand
//! ([`RawStream`]), so that how a stream ends (the terminating chunk, or the connection
//! dropped mid-event) is seen exactly, not tidied away by an HTTP library.

mod breakers;
mod history;
mod outage;
mod reads;
mod streams;

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::Server;

/// Configmaps of the default namespace.
pub const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Long enough for anything the server does at once, on a busy machine.
pub const SECONDS: Duration = Duration::from_secs(15);

/// What a raw stream gave next.
#[derive(Debug)]
pub enum Read {
    /// One whole JSON line.
    Line(Value),
    /// The terminating chunk: the body ended as HTTP means it to.
    Clean,
    /// The connection closed without the terminating chunk; the bytes after the last whole
    /// line are kept (part of an event when the stream was cut mid-event).
    Abrupt(Vec<u8>),
}

/// A streamed response read over raw HTTP/1.1, its chunked body decoded by hand.
pub struct RawStream {
    conn: TcpStream,
    /// Bytes read from the socket and not decoded yet.
    raw: Vec<u8>,
    /// Decoded body bytes not yet returned as a line.
    body: Vec<u8>,
    /// The terminating chunk was seen.
    terminated: bool,
    /// The bytes of the last line returned, newline included.
    pub last_line: Vec<u8>,
    /// The head's status code.
    pub status: u16,
}

impl RawStream {
    /// Sends `GET path` and reads the response head; panics unless it is a chunked 200.
    pub async fn open(server: &Server, path: &str) -> RawStream {
        let stream = RawStream::request(server, path).await;
        assert_eq!(stream.status, 200, "GET {path}");
        stream
    }

    /// Sends `GET path` and reads the response head (any status).
    pub async fn request(server: &Server, path: &str) -> RawStream {
        let mut conn = TcpStream::connect(server.authority()).await.expect("connect");
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\r\n", server.authority());
        conn.write_all(request.as_bytes()).await.expect("send the request");
        let mut stream =
            RawStream { conn, raw: Vec::new(), body: Vec::new(), terminated: false, last_line: Vec::new(), status: 0 };
        let head = tokio::time::timeout(SECONDS, stream.head()).await.expect("a response head in time");
        stream.status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        if stream.status == 200 {
            assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
        }
        stream
    }

    async fn head(&mut self) -> String {
        loop {
            if let Some(end) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.raw[..end]).into_owned();
                self.raw.drain(..end + 4);
                return head;
            }
            assert!(self.fill().await, "the connection closed before the response head");
        }
    }

    /// Reads more from the socket; false at its end (or a reset).
    async fn fill(&mut self) -> bool {
        let mut buffer = [0u8; 16 * 1024];
        match self.conn.read(&mut buffer).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.raw.extend_from_slice(&buffer[..n]);
                true
            }
        }
    }

    /// Moves every whole chunk from `raw` to `body`.
    fn decode(&mut self) {
        while !self.terminated {
            let Some(line_end) = self.raw.windows(2).position(|w| w == b"\r\n") else { return };
            let size_text = String::from_utf8_lossy(&self.raw[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                .unwrap_or_else(|_| panic!("a chunk size, got {size_text:?}"));
            if size == 0 {
                self.terminated = true;
                return;
            }
            let start = line_end + 2;
            if self.raw.len() < start + size + 2 {
                return;
            }
            self.body.extend_from_slice(&self.raw[start..start + size]);
            self.raw.drain(..start + size + 2);
        }
    }

    /// The next line, or how the body ended; panics if nothing happens within `timeout`.
    #[track_caller]
    pub fn next(&mut self, timeout: Duration) -> impl Future<Output = Read> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            tokio::time::timeout(timeout, self.next_read())
                .await
                .unwrap_or_else(|_| panic!("nothing on the stream within {timeout:?} (at {caller})"))
        }
    }

    async fn next_read(&mut self) -> Read {
        loop {
            self.decode();
            if let Some(end) = self.body.iter().position(|b| *b == b'\n') {
                self.last_line = self.body.drain(..=end).collect();
                let value = serde_json::from_slice(&self.last_line)
                    .unwrap_or_else(|e| panic!("a JSON line, got {:?}: {e}", String::from_utf8_lossy(&self.last_line)));
                return Read::Line(value);
            }
            if self.terminated {
                assert!(self.body.is_empty(), "the body ended inside a line");
                return Read::Clean;
            }
            if !self.fill().await {
                // Undecoded bytes are a chunk cut short: they belong to the partial event too.
                let mut partial = std::mem::take(&mut self.body);
                partial.extend_from_slice(&self.raw);
                return Read::Abrupt(partial);
            }
        }
    }

    /// Waits `quiet` and asserts that nothing arrived meanwhile (the stream stays open).
    pub async fn assert_silent_for(&mut self, quiet: Duration) {
        if let Ok(read) = tokio::time::timeout(quiet, self.next_read()).await {
            panic!("expected silence for {quiet:?}, got {read:?}");
        }
    }

    /// The next line; panics if the stream ends instead.
    #[track_caller]
    pub fn line(&mut self, timeout: Duration) -> impl Future<Output = Value> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match self.next(timeout).await {
                Read::Line(value) => value,
                other => panic!("a line expected at {caller}, got {other:?}"),
            }
        }
    }
}

/// The resourceVersion of an object (as the API returns it).
pub fn rv_of(object: &Value) -> i64 {
    object["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a resourceVersion")
}

/// The resourceVersion of a watch event's object.
pub fn event_rv(event: &Value) -> i64 {
    crate::support::event_rv(event)
}

/// Creates configmap `name` with `labels`; returns the created object.
pub async fn create(server: &Server, name: &str, labels: Value) -> Value {
    let (code, created) = server
        .post_json(CMS, &serde_json::json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}))
        .await;
    assert_eq!(code, 201, "{created}");
    created
}

/// The current resourceVersion of the configmaps list.
pub async fn list_rv(server: &Server) -> i64 {
    let (code, list) = server.get(CMS).await;
    assert_eq!(code, 200, "{list}");
    rv_of(&list)
}
