//! Watch streams read as a client must read them (spec §2.1, §2.3): a byte stream of
//! newline-delimited JSON events, where one HTTP chunk may carry several events and one event
//! may span chunks. Every read has a timeout; a read never waits on a sleep in place of an
//! event. All bytes received are kept so a failure can quote them.

use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ApiResponse, retry_after, truncate};
use crate::{CheckFailure, Target};

/// How long an event that a check caused may take to arrive.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the response headers of a watch may take.
const HEADERS_TIMEOUT: Duration = Duration::from_secs(10);

/// One event as it came off the wire.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub kind: String,
    pub object: Value,
    /// The line's bytes, without the newline.
    pub line: String,
}

impl WatchEvent {
    /// The object's `metadata.resourceVersion` as a number (0 when absent or not a number;
    /// checks that care say so).
    pub fn rv(&self) -> i64 {
        self.object["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `TYPE name@rv`, for comparing sequences and for reports.
    pub fn brief(&self) -> String {
        format!("{} {}@{}", self.kind, self.name(), self.rv())
    }

    pub fn is_bookmark(&self) -> bool {
        self.kind == "BOOKMARK"
    }

    /// Whether this is the bookmark that ends a streaming list's initial events.
    pub fn is_initial_events_end(&self) -> bool {
        self.is_bookmark() && self.object["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
    }
}

/// What one read of a watch gave.
#[derive(Debug)]
pub enum Read {
    Event(WatchEvent),
    /// The body ended cleanly (no partial event left).
    Ended,
    TimedOut,
}

/// What a length-prefixed (protobuf) read gave.
#[derive(Debug)]
pub enum FrameRead {
    /// One frame's body, without its 4-byte length.
    Frame(Vec<u8>),
    /// The body ended cleanly (no partial frame left).
    Ended,
    TimedOut,
}

/// A body read error (reqwest and hyper bodies both feed [`WatchStream`]).
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// An open watch: its response head and the events still to read.
pub struct WatchStream {
    pub path: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub version: reqwest::Version,
    /// When the request was sent.
    pub sent_at: Instant,
    body: BodyStream,
    /// Bytes received but not yet split into events.
    pending: Vec<u8>,
    /// Every byte received so far, for reports.
    received: Vec<u8>,
    ended: bool,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream").field("path", &self.path).field("status", &self.status).finish_non_exhaustive()
    }
}

impl Target {
    /// Starts a watch on `path_and_query` and waits for its response head. A non-200 answer is
    /// returned as the complete response (a 429 is retried for a while first).
    pub(crate) async fn open_watch(
        &self,
        path_and_query: &str,
    ) -> Result<Result<WatchStream, ApiResponse>, CheckFailure> {
        self.open_watch_accepting(path_and_query, "application/json").await
    }

    /// [`Target::open_watch`] with this `Accept` header.
    pub(crate) async fn open_watch_accepting(
        &self,
        path_and_query: &str,
        accept: &str,
    ) -> Result<Result<WatchStream, ApiResponse>, CheckFailure> {
        let started = Instant::now();
        let mut renewed = false;
        loop {
            let sent_at = Instant::now();
            let (request, used) = self.request_accepting(reqwest::Method::GET, path_and_query, accept).await?;
            let response = tokio::time::timeout(HEADERS_TIMEOUT, request.send())
                .await
                .map_err(|_| {
                    CheckFailure::failed(format!(
                        "GET {path_and_query}: no response head within {} s (a watch must answer at once, before any event)",
                        HEADERS_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(|e| CheckFailure::failed(format!("GET {path_and_query}: {}", crate::http::error_chain(&e))))?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            if status != 200 {
                let body = tokio::time::timeout(crate::http::REQUEST_TIMEOUT, response.bytes())
                    .await
                    .map_err(|_| CheckFailure::failed(format!("GET {path_and_query}: HTTP {status} body never ended")))?
                    .map_err(|e| CheckFailure::failed(format!("GET {path_and_query}: {e}")))?;
                if status == 429
                    && let Some(wait) = retry_after(&headers)
                    && started.elapsed() + wait < crate::http::RETRY_429_FOR
                {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                if status == 401 && !renewed && self.renewed_after_401(&used).await? {
                    renewed = true;
                    continue;
                }
                return Ok(Err(ApiResponse {
                    method: reqwest::Method::GET,
                    path: path_and_query.to_string(),
                    status,
                    headers,
                    body,
                }));
            }
            let version = response.version();
            let body: BodyStream = Box::pin(response.bytes_stream().map(|r| r.map_err(BodyError::from)));
            return Ok(Ok(WatchStream::new(path_and_query, headers, version, sent_at, body)));
        }
    }

    /// Starts a watch that must answer 200.
    pub(crate) async fn watch(&self, path_and_query: &str) -> Result<WatchStream, CheckFailure> {
        self.watch_accepting(path_and_query, "application/json").await
    }

    /// Starts a watch with this `Accept` header that must answer 200.
    pub(crate) async fn watch_accepting(
        &self,
        path_and_query: &str,
        accept: &str,
    ) -> Result<WatchStream, CheckFailure> {
        match self.open_watch_accepting(path_and_query, accept).await? {
            Ok(stream) => Ok(stream),
            Err(response) => Err(CheckFailure::failed_with(
                format!("GET {path_and_query}: a watch must answer 200, got {}", response.status),
                response.describe(),
            )),
        }
    }
}

impl WatchStream {
    /// A 200 watch response whose body is `body`.
    pub(crate) fn new(
        path: &str,
        headers: HeaderMap,
        version: reqwest::Version,
        sent_at: Instant,
        body: BodyStream,
    ) -> WatchStream {
        WatchStream {
            path: path.to_string(),
            status: 200,
            headers,
            version,
            sent_at,
            body,
            pending: Vec::new(),
            received: Vec::new(),
            ended: false,
        }
    }

    /// A watch with an empty body, for unit tests of code that only quotes a watch.
    #[cfg(test)]
    pub(crate) fn empty_for_tests() -> WatchStream {
        WatchStream::with_head_for_tests(HeaderMap::new(), reqwest::Version::HTTP_11)
    }

    /// A watch with these response headers and an empty body, for unit tests.
    #[cfg(test)]
    pub(crate) fn with_head_for_tests(headers: HeaderMap, version: reqwest::Version) -> WatchStream {
        let body: BodyStream = Box::pin(futures::stream::empty());
        WatchStream::new("/w", headers, version, Instant::now(), body)
    }

    /// The next event, the clean end of the body, or nothing within `within`.
    pub async fn read(&mut self, within: Duration) -> Result<Read, CheckFailure> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(newline) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=newline).collect();
                return self.parse(&line[..line.len() - 1]).map(Read::Event);
            }
            if self.ended {
                if !self.pending.is_empty() {
                    return Err(self.failure("the body ended inside an event (no closing newline)"));
                }
                return Ok(Read::Ended);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Ok(Read::TimedOut),
                Ok(None) => self.ended = true,
                Ok(Some(Ok(chunk))) => {
                    self.pending.extend_from_slice(&chunk);
                    self.received.extend_from_slice(&chunk);
                }
                Ok(Some(Err(e))) => {
                    return Err(self.failure(&format!("the watch body broke off (not a clean end): {e}")));
                }
            }
        }
    }

    /// [`WatchStream::read`] with an absolute deadline, for loops that must end by a fixed time
    /// however many events (e.g. periodic bookmarks) keep arriving.
    pub async fn read_before(&mut self, deadline: Instant) -> Result<Read, CheckFailure> {
        self.read(deadline.saturating_duration_since(Instant::now())).await
    }

    /// The next length-prefixed frame (a protobuf watch, §2.4: a 4-byte big-endian length,
    /// then that many bytes), the clean end of the body, or nothing within `within`.
    pub async fn read_frame(&mut self, within: Duration) -> Result<FrameRead, CheckFailure> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.pending.len() >= 4 {
                let len = u32::from_be_bytes([self.pending[0], self.pending[1], self.pending[2], self.pending[3]]);
                let len = len as usize;
                if self.pending.len() >= 4 + len {
                    let frame: Vec<u8> = self.pending.drain(..4 + len).skip(4).collect();
                    return Ok(FrameRead::Frame(frame));
                }
            }
            if self.ended {
                if !self.pending.is_empty() {
                    return Err(self.binary_failure("the body ended inside a frame"));
                }
                return Ok(FrameRead::Ended);
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Err(_) => return Ok(FrameRead::TimedOut),
                Ok(None) => self.ended = true,
                Ok(Some(Ok(chunk))) => {
                    self.pending.extend_from_slice(&chunk);
                    self.received.extend_from_slice(&chunk);
                }
                Ok(Some(Err(e))) => {
                    return Err(self.binary_failure(&format!("the watch body broke off (not a clean end): {e}")));
                }
            }
        }
    }

    /// The next frame; the end of the stream or a timeout fails the check.
    pub async fn next_frame(&mut self, within: Duration) -> Result<Vec<u8>, CheckFailure> {
        match self.read_frame(within).await? {
            FrameRead::Frame(frame) => Ok(frame),
            FrameRead::Ended => Err(self.binary_failure("the watch ended while a frame was expected")),
            FrameRead::TimedOut => Err(self.binary_failure(&format!("no frame within {:.1} s", within.as_secs_f64()))),
        }
    }

    /// A failure quoting the request and everything received so far, in hex.
    pub fn binary_failure(&self, why: &str) -> CheckFailure {
        CheckFailure::failed_with(format!("GET {}: {why}", self.path), crate::proto::hex(&self.received))
    }

    /// The next event; the end of the stream or a timeout fails the check.
    pub async fn next_event(&mut self, within: Duration) -> Result<WatchEvent, CheckFailure> {
        match self.read(within).await? {
            Read::Event(event) => Ok(event),
            Read::Ended => Err(self.failure("the watch ended while an event was expected")),
            Read::TimedOut => Err(self.failure(&format!("no event within {:.1} s", within.as_secs_f64()))),
        }
    }

    /// The next event that is not a BOOKMARK (for watches that asked for bookmarks but check
    /// other things).
    pub async fn next_change(&mut self, within: Duration) -> Result<WatchEvent, CheckFailure> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self.next_event(left).await?;
            if !event.is_bookmark() {
                return Ok(event);
            }
        }
    }

    /// Waits for the clean end of the stream; any event before it fails the check.
    pub async fn expect_end(&mut self, within: Duration) -> Result<(), CheckFailure> {
        match self.read(within).await? {
            Read::Ended => Ok(()),
            Read::Event(event) => Err(self.failure(&format!("expected the stream to end, got {}", event.brief()))),
            Read::TimedOut => {
                Err(self.failure(&format!("the stream did not end within {:.1} s", within.as_secs_f64())))
            }
        }
    }

    fn parse(&self, line: &[u8]) -> Result<WatchEvent, CheckFailure> {
        let text = String::from_utf8_lossy(line).into_owned();
        let value: Value = serde_json::from_slice(line).map_err(|e| {
            CheckFailure::failed_with(
                format!("GET {}: a watch line is not one JSON value: {e}", self.path),
                truncate(line),
            )
        })?;
        let Value::Object(fields) = value else {
            return Err(CheckFailure::failed_with(
                format!("GET {}: a watch line is not a JSON object", self.path),
                text,
            ));
        };
        let kind = fields.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let object = fields.get("object").cloned().unwrap_or(Value::Null);
        if kind.is_empty() || !object.is_object() {
            return Err(CheckFailure::failed_with(
                format!("GET {}: a watch event needs a string `type` and an object `object`", self.path),
                text,
            ));
        }
        Ok(WatchEvent { kind, object, line: text })
    }

    /// A failure quoting the request and everything received so far.
    pub fn failure(&self, why: &str) -> CheckFailure {
        CheckFailure::failed_with(format!("GET {}: {why}", self.path), self.transcript())
    }

    /// Every byte received so far.
    pub fn transcript(&self) -> String {
        if self.received.is_empty() {
            return "(no body bytes received)".into();
        }
        truncate(&self.received)
    }

    pub fn received(&self) -> &[u8] {
        &self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch whose body is these chunks, then a clean end.
    fn stream_of(chunks: &[&'static str]) -> WatchStream {
        let items: Vec<Result<Bytes, BodyError>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c.as_bytes()))).collect();
        WatchStream::new(
            "/w",
            HeaderMap::new(),
            reqwest::Version::HTTP_11,
            Instant::now(),
            Box::pin(futures::stream::iter(items)),
        )
    }

    const A: &str = r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#;
    const B: &str = r#"{"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"6"}}}"#;

    async fn briefs(watch: &mut WatchStream) -> Result<Vec<String>, CheckFailure> {
        let mut out = Vec::new();
        loop {
            match watch.read(Duration::from_secs(1)).await? {
                Read::Event(event) => out.push(event.brief()),
                Read::Ended => return Ok(out),
                Read::TimedOut => panic!("a finite stream timed out"),
            }
        }
    }

    #[tokio::test]
    async fn events_split_across_chunks_and_sharing_chunks() {
        let joined: &'static str = Box::leak(format!("{A}\n{B}\n").into_boxed_str());
        let (head, tail) = joined.split_at(17);
        let mut watch = stream_of(&[head, tail]);
        assert_eq!(briefs(&mut watch).await.unwrap(), ["ADDED a@5", "MODIFIED b@6"]);
        let mut bytewise: Vec<&'static str> = Vec::new();
        for i in 0..joined.len() {
            bytewise.push(&joined[i..i + 1]);
        }
        assert_eq!(briefs(&mut stream_of(&bytewise)).await.unwrap(), ["ADDED a@5", "MODIFIED b@6"]);
    }

    #[tokio::test]
    async fn a_body_ending_inside_an_event_fails() {
        let mut watch = stream_of(&[A]);
        let failure = briefs(&mut watch).await.unwrap_err();
        assert!(
            matches!(failure, CheckFailure::Failed { ref why, .. } if why.contains("inside an event")),
            "{failure:?}"
        );
    }

    #[tokio::test]
    async fn lines_that_are_not_events_fail() {
        for bad in ["[1]\n", "{\"type\":\"ADDED\"}\n", "{\"type\":\"ADDED\",\"object\":{}} x\n"] {
            let mut watch = stream_of(&[bad]);
            assert!(briefs(&mut watch).await.is_err(), "{bad:?} was accepted");
        }
    }

    #[tokio::test]
    async fn length_prefixed_frames_split_and_shared_across_chunks() {
        let mut body = Vec::new();
        for frame in [&b"abc"[..], b"", b"0123456789"] {
            body.extend_from_slice(&(frame.len() as u32).to_be_bytes());
            body.extend_from_slice(frame);
        }
        let chunks: Vec<Result<Bytes, BodyError>> = body.chunks(3).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        let mut watch = WatchStream::new(
            "/w",
            HeaderMap::new(),
            reqwest::Version::HTTP_11,
            Instant::now(),
            Box::pin(futures::stream::iter(chunks)),
        );
        let mut frames = Vec::new();
        loop {
            match watch.read_frame(Duration::from_secs(1)).await.unwrap() {
                FrameRead::Frame(frame) => frames.push(frame),
                FrameRead::Ended => break,
                FrameRead::TimedOut => panic!("a finite stream timed out"),
            }
        }
        assert_eq!(frames, [b"abc".to_vec(), Vec::new(), b"0123456789".to_vec()]);
        // A body that ends inside a frame fails.
        let cut: Vec<Result<Bytes, BodyError>> = vec![Ok(Bytes::from_static(&[0, 0, 0, 5, b'a']))];
        let mut watch = WatchStream::new(
            "/w",
            HeaderMap::new(),
            reqwest::Version::HTTP_11,
            Instant::now(),
            Box::pin(futures::stream::iter(cut)),
        );
        assert!(watch.read_frame(Duration::from_secs(1)).await.is_err());
    }

    #[tokio::test]
    async fn a_silent_stream_times_out_without_failing() {
        let body: BodyStream = Box::pin(futures::stream::pending());
        let mut watch = WatchStream::new("/w", HeaderMap::new(), reqwest::Version::HTTP_11, Instant::now(), body);
        assert!(matches!(watch.read(Duration::from_millis(20)).await.unwrap(), Read::TimedOut));
        assert!(watch.next_event(Duration::from_millis(20)).await.is_err());
    }
}
