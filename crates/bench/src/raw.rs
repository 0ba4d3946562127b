//! The raw ceiling: a broadcaster with no HTTP and no JSON work on the watch path, to show what
//! this machine can deliver at all with the same watchers and the same write stream.
//!
//! `listwatch bench raw-broadcaster --listen 127.0.0.1:0` (hidden) prints `listening on ADDR`
//! and serves one port two ways, told apart by the first line a connection sends:
//!
//! * an HTTP/1.1 request line (`… HTTP/1.1`): hyper serves it. Every request that is not a GET
//!   is a write: it takes the next resourceVersion from a counter, and the body (as received,
//!   not parsed; it must be one line of JSON, as the bench's objects are) becomes ONE event,
//!   `{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"N"},"body":<body>}}\n`, built
//!   once as [`Bytes`] and queued to every watcher. The answer is that event's object, so a
//!   write's answer names its resourceVersion like the apiserver's, and the bench's padding
//!   calibration makes events of the same size as listwatch's. GETs answer `/readyz` (ok),
//!   `/raw/stats` ([`RawStats`]) and anything else with an empty list at the current
//!   resourceVersion (the fan-out bench's starting point);
//! * any other line (the bench's [`super::transport::Transport::Raw`] sends `WATCH <path>`):
//!   a watcher. It is registered, gets a `BOOKMARK` line at the current resourceVersion (so the
//!   client knows from when it receives everything), and from then on only reads
//!   newline-delimited events. Where the line asks to start (`resourceVersion=`) is ignored:
//!   there is no history.
//!
//! Each watcher has its own task and a bounded queue (`--watcher-queue`: 100 by default, like
//! listwatch's cache watchers; 100,000 in `bench fanout --compare`, so the ceiling drops no
//! watcher). A write offers the event to every queue without waiting; a watcher whose
//! queue is full (its socket has not drained for that many events) is evicted: its socket is
//! closed, as the watch cache closes a watcher that cannot keep up, and counted in
//! [`RawStats::evicted`]. So a stalled reader never holds up the others.
//!
//! Why this is the ceiling for the fan-out bench: the watch path does the least any server
//! must do. Per event there is one copy of the bytes (the body into the event buffer) and no
//! encoding; per watcher, a reference-count increment to queue it, and the watcher's task
//! takes everything queued (up to 64 events) into one `writev`, so one write syscall per
//! watcher per batch at best, one per event at worst. No HTTP chunk framing, no per-watcher
//! filtering or conversion, no history, no bookmarks or timeouts. What listwatch costs more
//! than this row is the price of the protocol and the cache; what is left here is the kernel's
//! loopback TCP and the client side, which every row pays alike.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::{Buf, Bytes, BytesMut};
use clap::Args;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::http::HttpConnection;

/// The most events one `writev` takes.
const BATCH: usize = 64;
/// The longest first line read to tell a watcher from an HTTP request.
const MAX_FIRST_LINE: usize = 8192;
/// What comes before a write's object in its event.
const EVENT_HEAD: &[u8] = br#"{"type":"MODIFIED","object":"#;

/// `listwatch bench raw-broadcaster` (hidden).
#[derive(Args, Debug)]
pub struct RawBroadcasterArgs {
    /// Address to listen on; the one taken is printed as `listening on ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Events each watcher may have queued before it is evicted.
    #[arg(long, default_value_t = 100)]
    watcher_queue: usize,
    /// Exit when standard input ends (the bench that started this process is gone).
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

/// What `GET /raw/stats` answers.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawStats {
    /// The last resourceVersion given to a write.
    pub resource_version: u64,
    /// Watchers registered now.
    pub watchers: u64,
    /// Watchers registered since start.
    pub accepted: u64,
    /// Watchers closed because their queue was full.
    pub evicted: u64,
}

/// One registered watcher, as the writes see it.
struct WatcherSlot {
    queue: mpsc::Sender<Bytes>,
    /// Tells the watcher's task to close its socket now (it fell behind).
    evict: Option<oneshot::Sender<()>>,
}

/// The resourceVersion counter and the watchers: one lock, so that every watcher gets the
/// events in resourceVersion order.
struct HubState {
    resource_version: u64,
    watchers: Vec<WatcherSlot>,
}

/// The broadcaster's state, shared by every connection.
struct Hub {
    state: Mutex<HubState>,
    watcher_queue: usize,
    accepted: AtomicU64,
    evicted: AtomicU64,
}

impl Hub {
    fn new(watcher_queue: usize) -> Hub {
        Hub {
            // Starts at 1, so the first LIST already names a resourceVersion a watch can follow.
            state: Mutex::new(HubState { resource_version: 1, watchers: Vec::new() }),
            watcher_queue: watcher_queue.max(1),
            accepted: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a watcher; returns the resourceVersion after which it gets every event.
    fn register(&self, slot: WatcherSlot) -> u64 {
        let mut state = self.state();
        state.watchers.push(slot);
        self.accepted.fetch_add(1, Ordering::Relaxed);
        state.resource_version
    }

    /// Gives `body` the next resourceVersion, queues its event to every watcher, and returns
    /// the event's object (a slice of the same bytes).
    fn publish(&self, body: &[u8]) -> Bytes {
        let mut state = self.state();
        state.resource_version += 1;
        let event = event_bytes(state.resource_version, body);
        let evicted = &self.evicted;
        state.watchers.retain_mut(|watcher| match watcher.queue.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                evicted.fetch_add(1, Ordering::Relaxed);
                if let Some(evict) = watcher.evict.take() {
                    let _ = evict.send(());
                }
                false
            }
            // The watcher's task is gone (its client left).
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
        event.slice(EVENT_HEAD.len()..event.len() - 2)
    }

    fn stats(&self) -> RawStats {
        let state = self.state();
        RawStats {
            resource_version: state.resource_version,
            watchers: state.watchers.len() as u64,
            accepted: self.accepted.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }
}

/// `{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"N"},"body":<body>}}\n`; an empty
/// body is `null`, and a raw newline in the body (which would cut the event in two) a space.
fn event_bytes(resource_version: u64, body: &[u8]) -> Bytes {
    let mut event = BytesMut::with_capacity(EVENT_HEAD.len() + body.len() + 64);
    event.extend_from_slice(EVENT_HEAD);
    event.extend_from_slice(br#"{"metadata":{"resourceVersion":""#);
    event.extend_from_slice(resource_version.to_string().as_bytes());
    event.extend_from_slice(br#""},"body":"#);
    if body.is_empty() {
        event.extend_from_slice(b"null");
    } else if memchr::memchr(b'\n', body).is_none() {
        event.extend_from_slice(body);
    } else {
        event.extend(body.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
    }
    event.extend_from_slice(b"}}\n");
    event.freeze()
}

/// `BOOKMARK` at `resource_version`: the first line a watcher gets.
fn bookmark_bytes(resource_version: u64) -> Bytes {
    Bytes::from(format!(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"metadata\":{{\"resourceVersion\":\"{resource_version}\"}}}}}}\n"
    ))
}

/// Whether a connection's first line is an HTTP/1 request line.
fn is_http_request_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.ends_with(b" HTTP/1.1") || line.ends_with(b" HTTP/1.0")
}

/// Runs the hidden subcommand: listens, prints the address, serves until killed.
pub async fn serve(args: RawBroadcasterArgs) -> anyhow::Result<()> {
    let listener = TcpListener::bind(args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    println!("listening on {}", listener.local_addr()?);
    if args.exit_on_stdin_eof {
        tokio::spawn(async {
            let mut sink = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut sink).await;
            std::process::exit(0);
        });
    }
    accept_loop(listener, Arc::new(Hub::new(args.watcher_queue))).await
}

async fn accept_loop(listener: TcpListener, hub: Arc<Hub>) -> anyhow::Result<()> {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, hub.clone()));
            }
            // Out of file descriptors, or a connection reset before it was accepted: go on.
            Err(e) => {
                tracing::warn!("raw broadcaster: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Reads the first line and serves the connection as what it is.
async fn connection(mut stream: TcpStream, hub: Arc<Hub>) {
    let _ = stream.set_nodelay(true);
    let mut first = BytesMut::with_capacity(1024);
    let line_end = loop {
        match stream.read_buf(&mut first).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Some(end) = memchr::memchr(b'\n', &first) {
            break end;
        }
        if first.len() >= MAX_FIRST_LINE {
            return;
        }
    };
    if is_http_request_line(&first[..line_end]) {
        let io = TokioIo::new(Rewound { prefix: first.freeze(), stream });
        let service = hyper::service::service_fn(move |request| answer(request, hub.clone()));
        let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
    } else {
        watcher(stream, hub).await;
    }
}

/// Answers one HTTP request (see the module doc).
async fn answer(request: Request<Incoming>, hub: Arc<Hub>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let json = |status: StatusCode, body: Bytes| {
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = status;
        response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        response
    };
    if request.method() == Method::GET {
        return Ok(match request.uri().path() {
            "/readyz" | "/livez" | "/healthz" => Response::new(Full::new(Bytes::from_static(b"ok"))),
            "/raw/stats" => json(StatusCode::OK, Bytes::from(serde_json::to_vec(&hub.stats()).unwrap_or_default())),
            _ => {
                let resource_version = hub.stats().resource_version;
                json(
                    StatusCode::OK,
                    Bytes::from(format!(
                        r#"{{"kind":"List","metadata":{{"resourceVersion":"{resource_version}"}},"items":[]}}"#
                    )),
                )
            }
        });
    }
    let status = if request.method() == Method::POST { StatusCode::CREATED } else { StatusCode::OK };
    let body = request.into_body().collect().await?.to_bytes();
    Ok(json(status, hub.publish(&body)))
}

/// Serves one watcher until it leaves or is evicted.
async fn watcher(mut stream: TcpStream, hub: Arc<Hub>) {
    let (queue, mut events) = mpsc::channel(hub.watcher_queue);
    let (evict, mut evicted) = oneshot::channel();
    let from = hub.register(WatcherSlot { queue, evict: Some(evict) });
    let mut batch = vec![bookmark_bytes(from)];
    loop {
        tokio::select! {
            biased;
            _ = &mut evicted => return,
            written = write_batch(&mut stream, &mut batch) => if written.is_err() { return },
        }
        tokio::select! {
            biased;
            _ = &mut evicted => return,
            received = events.recv_many(&mut batch, BATCH) => if received == 0 { return },
        }
    }
}

/// Writes every event of `batch` with as few `writev`s as the socket allows, then empties it.
async fn write_batch(stream: &mut TcpStream, batch: &mut Vec<Bytes>) -> std::io::Result<()> {
    let mut first = 0;
    while first < batch.len() {
        let written = {
            let mut slices = [IoSlice::new(&[]); BATCH];
            let pending = &batch[first..batch.len().min(first + BATCH)];
            for (slice, event) in slices.iter_mut().zip(pending) {
                *slice = IoSlice::new(event);
            }
            stream.write_vectored(&slices[..pending.len()]).await?
        };
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut left = written;
        while left > 0 {
            let len = batch[first].len();
            if left >= len {
                left -= len;
                first += 1;
            } else {
                batch[first].advance(left);
                left = 0;
            }
        }
    }
    batch.clear();
    Ok(())
}

/// A stream whose first bytes were already read: they are read again first (hyper gets the
/// request line the sniffing took).
struct Rewound {
    prefix: Bytes,
    stream: TcpStream,
}

impl AsyncRead for Rewound {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewound {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// A raw broadcaster running as a child process (this same executable), so that its CPU and
/// memory are read from `/proc` like the server's (as a [`super::server::ServerUnderTest`], or
/// with [`super::server::ProcessUsage::of`] its pid). It is killed when this is dropped, and
/// exits by itself when the bench process is gone (its standard input ends).
pub struct RawBroadcaster {
    /// Where it listens (HTTP writes and raw watchers alike).
    pub addr: SocketAddr,
    pub pid: u32,
    child: tokio::process::Child,
}

impl RawBroadcaster {
    /// Starts `listwatch bench raw-broadcaster --listen 127.0.0.1:0` with more `flags` (none,
    /// or `--watcher-queue=N`, the one it shares with `listwatch serve`) and reads its address.
    pub async fn start(flags: &[String]) -> anyhow::Result<RawBroadcaster> {
        let exe = std::env::current_exe().context("finding this executable")?;
        let mut child = tokio::process::Command::new(exe)
            .args(["bench", "raw-broadcaster", "--listen", "127.0.0.1:0", "--exit-on-stdin-eof"])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting `listwatch bench raw-broadcaster`")?;
        let pid = child.id().context("the raw broadcaster exited at once")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut line = String::new();
        let mut stdout = tokio::io::BufReader::new(stdout);
        let read = stdout.read_line(&mut line);
        match tokio::time::timeout(Duration::from_secs(30), read).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => bail!("reading the raw broadcaster's address: {e}"),
            Err(_) => bail!("the raw broadcaster printed no address within 30 s"),
        }
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .with_context(|| format!("the raw broadcaster printed {line:?}, not `listening on ADDR`"))?;
        eprintln!("bench: started the raw broadcaster (pid {pid}) on {addr}");
        Ok(RawBroadcaster { addr, pid, child })
    }

    /// Its counters (`GET /raw/stats`).
    pub async fn stats(&self) -> anyhow::Result<RawStats> {
        raw_stats(self.addr).await
    }

    /// Kills it and waits until it is gone.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A broadcaster's counters, asked over HTTP.
pub async fn raw_stats(addr: SocketAddr) -> anyhow::Result<RawStats> {
    let mut connection = HttpConnection::connect(addr).await?;
    let (status, body) = connection.request(Method::GET, "/raw/stats", None).await?;
    if !status.is_success() {
        bail!("GET /raw/stats answered {status}");
    }
    Ok(serde_json::from_slice(&body)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Decoded, EventDecoder, resource_version_of};
    use crate::transport::{Connector, Opened, Transport, WatchStream, WireEncoding};

    /// A broadcaster in this process, on a free port.
    async fn broadcaster(watcher_queue: usize) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(accept_loop(listener, Arc::new(Hub::new(watcher_queue))));
        addr
    }

    /// A watch and what has been read of it.
    struct Reader {
        stream: WatchStream,
        decoder: EventDecoder,
    }

    impl Reader {
        async fn open(addr: SocketAddr) -> Reader {
            let connector = Connector::new(Transport::Raw, WireEncoding::Json, addr, 1);
            match connector.open("/api/v1/namespaces/default/configmaps?watch=1").await.unwrap() {
                Opened::Streaming(stream) => Reader { stream, decoder: EventDecoder::new(WireEncoding::Json, false) },
                Opened::Refused(status, _) => panic!("refused: {status}"),
            }
        }

        /// Reads until at least `count` object events arrived; returns their resourceVersions.
        async fn object_rvs(&mut self, count: usize) -> Vec<u64> {
            let mut rvs = Vec::new();
            while rvs.len() < count {
                let bytes = self.stream.next_bytes().await.expect("stream ended").unwrap();
                self.decoder.feed(&bytes, &mut |event| match event {
                    Decoded::Object { resource_version } => rvs.push(resource_version),
                    Decoded::Bookmark { .. } => {}
                    other => panic!("unexpected {other:?}"),
                });
            }
            rvs
        }
    }

    async fn write(connection: &mut HttpConnection, body: &str) -> u64 {
        let (status, answer) =
            connection.request(Method::PUT, "/anything", Some(Bytes::from(body.to_string()))).await.unwrap();
        assert!(status.is_success(), "{status}");
        resource_version_of(&answer).expect("the answer names a resourceVersion")
    }

    #[test]
    fn the_decoder_reads_an_event_as_an_object_at_its_resource_version() {
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}"#;
        let event = event_bytes(42, body);
        let mut seen = Vec::new();
        EventDecoder::new(WireEncoding::Json, false).feed(&event, &mut |e| seen.push(e));
        EventDecoder::new(WireEncoding::Json, true).feed(&event, &mut |e| seen.push(e));
        assert_eq!(seen, vec![Decoded::Object { resource_version: 42 }; 2]);
        let mut bookmark = Vec::new();
        EventDecoder::new(WireEncoding::Json, false).feed(&bookmark_bytes(9), &mut |e| bookmark.push(e));
        assert_eq!(bookmark, vec![Decoded::Bookmark { resource_version: 9 }]);
    }

    #[test]
    fn a_body_with_a_newline_stays_one_event() {
        let event = event_bytes(3, b"{\"a\":\n1}");
        assert_eq!(memchr::memchr_iter(b'\n', &event).count(), 1);
        assert!(event.ends_with(b"}}\n"));
        assert_eq!(
            &event_bytes(4, b"")[..],
            &br#"{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"4"},"body":null}}
"#[..]
        );
    }

    #[test]
    fn http_request_lines_are_told_from_watch_lines() {
        assert!(is_http_request_line(b"PUT /api/v1/x HTTP/1.1\r"));
        assert!(is_http_request_line(b"GET /readyz HTTP/1.0"));
        assert!(!is_http_request_line(b"WATCH /api/v1/configmaps?watch=1"));
    }

    #[tokio::test]
    async fn two_watchers_receive_the_same_events_in_order() {
        let addr = broadcaster(100).await;
        let (mut a, mut b) = (Reader::open(addr).await, Reader::open(addr).await);
        let mut connection = HttpConnection::connect(addr).await.unwrap();
        let mut written = Vec::new();
        for i in 0..50 {
            written.push(write(&mut connection, &format!(r#"{{"metadata":{{"name":"cm-{i}"}}}}"#)).await);
        }
        assert_eq!(written, (2..52).collect::<Vec<u64>>());
        assert_eq!(a.object_rvs(50).await, written);
        assert_eq!(b.object_rvs(50).await, written);
        let stats = raw_stats(addr).await.unwrap();
        assert_eq!((stats.resource_version, stats.watchers, stats.evicted), (51, 2, 0));
    }

    #[tokio::test]
    async fn a_watcher_that_stops_reading_is_evicted_and_does_not_stop_the_other() {
        // A hub that waited for the stalled watcher would hang: fail instead.
        let run = async {
            let addr = broadcaster(4).await;
            let mut reading = Reader::open(addr).await;
            // Connected and registered, never read again.
            let _stalled = Reader::open(addr).await;
            let mut connection = HttpConnection::connect(addr).await.unwrap();
            // 64 KiB events: the stalled socket fills the kernel's buffers, then its queue.
            let body = format!(r#"{{"payload":"{}"}}"#, "x".repeat(64 * 1024));
            let mut written = Vec::new();
            let mut received = Vec::new();
            while raw_stats(addr).await.unwrap().evicted == 0 {
                assert!(written.len() < 10_000, "the stalled watcher was never evicted");
                written.push(write(&mut connection, &body).await);
                received.extend(reading.object_rvs(1).await);
            }
            for _ in 0..10 {
                written.push(write(&mut connection, &body).await);
            }
            received.extend(reading.object_rvs(written.len() - received.len()).await);
            assert_eq!(received, written);
            let stats = raw_stats(addr).await.unwrap();
            assert_eq!((stats.watchers, stats.evicted), (1, 1));
        };
        tokio::time::timeout(Duration::from_secs(60), run).await.expect("the writes or the reading watcher got stuck");
    }
}
