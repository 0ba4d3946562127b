//! Network faults on watch streams (`POST /debug/listwatch/streams?fault=...`), each observed
//! as a client sees it: a cut is an unexpected end in the middle of an event (HTTP/1.1: no
//! terminating chunk; HTTP/2: a reset stream; WebSocket: no Close frame), latency delays
//! events and keeps their order, a blackhole is silence on an open connection and then an
//! abrupt end, and GOAWAY is an HTTP/2 GOAWAY frame while the open watch keeps delivering.
//! The faults sit in the pump and the connections, the same whatever the storage, so these
//! run on the embedded store.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{CMS, RawStream, Read, SECONDS, create, event_rv, list_rv, rv_of};
use crate::support::{Backend, Server, assert_failure};

async fn start(name: &str) -> Server {
    Server::start(name, Backend::Ephemeral, &[]).await
}

/// Sets a stream fault; returns the answer.
async fn fault(server: &Server, query: &str) -> Value {
    server.debug(&format!("streams?{query}")).await
}

/// A watch of the configmaps from the current resourceVersion, over raw HTTP/1.1.
async fn watch_from_now(server: &Server) -> (RawStream, i64) {
    let from = list_rv(server).await;
    (RawStream::open(server, &format!("{CMS}?watch=1&resourceVersion={from}")).await, from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_ends_open_streams_in_the_middle_of_their_next_event() {
    let server = start("cut").await;
    let (mut first, from) = watch_from_now(&server).await;
    let (mut second, _) = watch_from_now(&server).await;
    assert_eq!(fault(&server, "fault=cut").await, json!({"fault": "cut", "forSeconds": 0.0}));
    let created = create(&server, "a", json!({})).await;
    let Read::Abrupt(partial) = first.next(SECONDS).await else { panic!("the stream was not cut") };
    // The same event, whole, on a watch opened after the (one-shot) cut.
    let mut after = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    let event = after.line(SECONDS).await;
    assert_eq!(event_rv(&event), rv_of(&created));
    let whole = after.last_line.clone();
    assert_eq!(partial, whole[..whole.len() / 2], "the first half of the event, then the end");
    assert!(matches!(second.next(SECONDS).await, Read::Abrupt(p) if p == partial), "every open stream is cut");
    // The stream opened after the cut lives on.
    create(&server, "b", json!({})).await;
    assert_eq!(after.line(SECONDS).await["object"]["metadata"]["name"], "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_with_a_duration_also_cuts_streams_opened_before_it_expires() {
    let server = start("cut-for").await;
    fault(&server, "fault=cut&for=1h").await;
    let (mut opened_later, _) = watch_from_now(&server).await;
    create(&server, "a", json!({})).await;
    assert!(matches!(opened_later.next(SECONDS).await, Read::Abrupt(p) if !p.is_empty()));
    // Cleared: streams are whole again.
    assert_eq!(fault(&server, "fault=none").await, json!({"fault": "none"}));
    let (mut whole, _) = watch_from_now(&server).await;
    create(&server, "b", json!({})).await;
    assert_eq!(whole.line(SECONDS).await["object"]["metadata"]["name"], "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_drops_a_websocket_without_a_close_frame() {
    let server = start("cut-websocket").await;
    let from = list_rv(&server).await;
    let url = format!("{}{CMS}?watch=1&resourceVersion={from}", server.url.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert("Origin", "http://localhost".parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("a WebSocket watch");
    create(&server, "a", json!({})).await;
    let Message::Text(text) = tokio::time::timeout(SECONDS, socket.next()).await.unwrap().unwrap().unwrap() else {
        panic!("a text message")
    };
    assert!(text.contains("\"a\""), "{text}");

    fault(&server, "fault=cut").await;
    create(&server, "b", json!({})).await;
    let ended = tokio::time::timeout(SECONDS, socket.next()).await.expect("the socket ends");
    assert!(
        matches!(ended, Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake)))),
        "the socket must drop without a Close frame, got {ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_every_event_and_keeps_their_order() {
    let server = start("latency").await;
    let (mut watch, _) = watch_from_now(&server).await;
    let delay = Duration::from_millis(1200);
    let answer = fault(&server, "fault=latency&ms=1200&jitter=100&for=1h").await;
    assert_eq!(answer, json!({"fault": "latency", "ms": 1200, "jitter": 100, "forSeconds": 3600.0}));
    let mut written = Vec::new();
    for name in ["a", "b", "c"] {
        let before = Instant::now();
        let created = create(&server, name, json!({})).await;
        written.push((name, rv_of(&created), before));
    }
    for (name, rv, at) in written {
        let event = watch.line(SECONDS).await;
        assert_eq!((event["object"]["metadata"]["name"].as_str(), event_rv(&event)), (Some(name), rv));
        // Never earlier than the delay less its jitter after the write was sent.
        let waited = at.elapsed();
        assert!(waited >= delay - Duration::from_millis(100), "{name} came after {waited:?}");
    }
    // Without the fault, what comes next is not held.
    fault(&server, "fault=none").await;
    create(&server, "d", json!({})).await;
    assert_eq!(watch.line(SECONDS).await["object"]["metadata"]["name"], "d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackhole_is_silence_on_an_open_connection_then_an_abrupt_end() {
    let server = start("blackhole").await;
    let (mut watch, from) = watch_from_now(&server).await;
    let set = Instant::now();
    assert_eq!(fault(&server, "fault=blackhole&for=2s").await, json!({"fault": "blackhole", "forSeconds": 2.0}));
    create(&server, "a", json!({})).await;
    watch.assert_silent_for(Duration::from_millis(1500)).await;
    assert!(matches!(watch.next(SECONDS).await, Read::Abrupt(p) if p.is_empty()), "nothing, then the end");
    assert!(set.elapsed() >= Duration::from_secs(2), "ended after {:?}", set.elapsed());
    // Once it is over, a new watch gets what was written meanwhile.
    let mut resumed = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    assert_eq!(resumed.line(SECONDS).await["object"]["metadata"]["name"], "a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_mistakes_are_400() {
    let server = start("stream-faults-400").await;
    for query in [
        "",
        "?fault=explode",
        "?fault=latency&for=1s",
        "?fault=latency&ms=-1&for=1s",
        "?fault=latency&ms=10",
        "?fault=latency&ms=ten&for=1s",
        "?fault=blackhole",
        "?fault=cut&for=soon",
        "?fault=goaway&for=1s",
    ] {
        let answer = server.send("POST", &format!("/debug/listwatch/streams{query}"), "application/json", "").await;
        assert_failure(&answer, 400, "BadRequest");
    }
}

/// A minimal HTTP/2 client over prior knowledge: enough to open one watch and read the raw
/// frames the server sends, GOAWAY included.
struct H2 {
    conn: tokio::net::TcpStream,
    buffer: Vec<u8>,
}

/// One HTTP/2 frame.
#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

// HTTP/2 frame types (RFC 9113 §6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;

impl H2 {
    async fn connect(server: &Server) -> H2 {
        let mut conn = tokio::net::TcpStream::connect(server.authority()).await.expect("connect");
        conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
        let mut h2 = H2 { conn, buffer: Vec::new() };
        h2.send(SETTINGS, 0, 0, &[]).await;
        h2
    }

    /// A new connection with `GET path` on stream 1, answered 200.
    async fn open(server: &Server, path: &str) -> H2 {
        let mut h2 = H2::connect(server).await;
        h2.get(1, server.authority(), path).await;
        let head = h2.next().await;
        assert_eq!((head.kind, head.stream), (HEADERS, 1), "{head:?}");
        assert_eq!(head.payload.first(), Some(&0x88), ":status 200 (HPACK static index 8)");
        h2
    }

    async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut frame = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        frame.extend([kind, flags]);
        frame.extend(stream.to_be_bytes());
        frame.extend_from_slice(payload);
        self.conn.write_all(&frame).await.expect("send a frame");
    }

    /// GET `path` on `stream` (HPACK literals, never indexed or compressed).
    async fn get(&mut self, stream: u32, authority: &str, path: &str) {
        let mut block = Vec::new();
        for (name, value) in [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", path)] {
            block.push(0);
            block.push(name.len() as u8);
            block.extend_from_slice(name.as_bytes());
            block.push(value.len() as u8);
            block.extend_from_slice(value.as_bytes());
        }
        // END_STREAM | END_HEADERS
        self.send(HEADERS, 0x5, stream, &block).await;
    }

    /// The next frame that is not the connection's housekeeping (settings and pings, which
    /// are acknowledged here).
    async fn next(&mut self) -> Frame {
        loop {
            let frame = tokio::time::timeout(SECONDS, self.read()).await.expect("a frame in time");
            match frame.kind {
                SETTINGS if frame.flags & 1 == 0 => self.send(SETTINGS, 1, 0, &[]).await,
                PING if frame.flags & 1 == 0 => self.send(PING, 1, 0, &frame.payload).await,
                SETTINGS | PING | WINDOW_UPDATE => {}
                _ => return frame,
            }
        }
    }

    async fn read(&mut self) -> Frame {
        loop {
            if self.buffer.len() >= 9 {
                let len = u32::from_be_bytes([0, self.buffer[0], self.buffer[1], self.buffer[2]]) as usize;
                if self.buffer.len() >= 9 + len {
                    let frame = Frame {
                        kind: self.buffer[3],
                        flags: self.buffer[4],
                        stream: u32::from_be_bytes(self.buffer[5..9].try_into().unwrap()) & 0x7fff_ffff,
                        payload: self.buffer[9..9 + len].to_vec(),
                    };
                    self.buffer.drain(..9 + len);
                    return frame;
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.conn.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the connection closed");
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_reaches_http2_connections_and_open_watches_go_on() {
    let server = start("goaway").await;
    let from = list_rv(&server).await;
    let mut h2 = H2::open(&server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;

    assert_eq!(fault(&server, "fault=goaway").await, json!({"fault": "goaway"}));
    let goaway = h2.next().await;
    assert_eq!(goaway.kind, GOAWAY, "{goaway:?}");
    let error_code = u32::from_be_bytes(goaway.payload[4..8].try_into().unwrap());
    assert_eq!(error_code, 0, "a graceful GOAWAY (NO_ERROR)");

    // The watch opened before goes on over the same connection.
    create(&server, "a", json!({})).await;
    let data = loop {
        let frame = h2.next().await;
        if frame.kind == DATA {
            break frame;
        }
        assert_eq!(frame.kind, GOAWAY, "{frame:?}");
    };
    assert_eq!(data.stream, 1);
    let event: Value = serde_json::from_slice(&data.payload).expect("one JSON event");
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));
    // New requests go over a new connection, which is served.
    H2::open(&server, CMS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_resets_an_http2_stream_after_half_an_event() {
    let server = start("cut-http2").await;
    let from = list_rv(&server).await;
    let mut h2 = H2::open(&server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    fault(&server, "fault=cut").await;
    create(&server, "a", json!({})).await;
    let data = h2.next().await;
    assert_eq!((data.kind, data.stream), (DATA, 1), "{data:?}");
    assert!(!data.payload.is_empty() && !data.payload.ends_with(b"\n"), "part of an event");
    assert!(serde_json::from_slice::<Value>(&data.payload).is_err(), "not a whole event");
    let reset = h2.next().await;
    assert_eq!((reset.kind, reset.stream), (RST_STREAM, 1), "the stream is reset: {reset:?}");
}
