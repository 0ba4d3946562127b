//! One accepted connection, from the socket to hyper, with the limits Go's `http.Server` sets
//! for kube-apiserver:
//!
//! * request headers up to 1 MiB (`DefaultMaxHeaderBytes`, plus Go's 4 KiB of read slack),
//!   however many fields they hold; HTTP/2 advertises the same header list size;
//! * `ReadHeaderTimeout` (32 s in kube): a client that does not finish its request headers in
//!   time is disconnected, so half-open and slowloris connections cannot pile up. The clock
//!   also runs over the connection's setup (TLS handshake, HTTP/2 preface) and, in hyper,
//!   over an idle keep-alive connection waiting for its next request.
//!
//! A connection shuts down gracefully when the server does, and an HTTP/2 connection also
//! when the debug API asks for GOAWAY ([`Closing`]): hyper then sends GOAWAY, its open streams
//! finish, and the client opens a new connection for new requests.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::config::ServerConfig;
use crate::transport::limits::Guarded;

/// Go's `http.DefaultMaxHeaderBytes`, which kube-apiserver uses.
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// What Go's server reads beyond `MaxHeaderBytes` before refusing ("bufio slop").
const HEADER_READ_SLACK: usize = 4096;

/// HTTP/1 header fields hyper makes room for. Go counts only bytes; hyper also caps the
/// number of fields (100 by default), so this is set high enough that the byte limit decides
/// for any real client.
const MAX_HEADER_FIELDS: usize = 1024;

/// The HTTP/2 client preface: a connection starting with it is HTTP/2 (prior knowledge).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What serves each request of a connection.
pub trait Service:
    hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<Guarded>, Error = Infallible>
{
}

impl<S> Service for S where
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<Guarded>,
            Error = Infallible,
        >
{
}

/// hyper's connection settings for `config`, one builder per protocol. Which protocol a
/// connection speaks is known from its first bytes ([`Rewound`]), so hyper_util's own
/// detection is not used: it hands hyper the bytes it read ahead in a read of their own, and
/// hyper's read buffer, then holding a partial request when it reads again, doubles to 16 KiB
/// for the connection's life (8 KiB more per HTTP/1.1 watcher).
pub struct Builders {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

/// hyper's connection settings for `config`.
pub fn builder(config: &ServerConfig) -> Builders {
    let mut http1 = http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(config.read_header_timeout)
        .max_buf_size(MAX_HEADER_BYTES + HEADER_READ_SLACK)
        .max_headers(MAX_HEADER_FIELDS);
    let mut http2 = http2::Builder::new(TokioExecutor::new());
    http2
        .max_concurrent_streams(config.http2_max_streams_per_connection)
        // Go's http2 server: MaxHeaderBytes padded for ten fields of 32 bytes' overhead.
        .max_header_list_size((MAX_HEADER_BYTES + 10 * 32) as u32);
    Builders { http1, http2 }
}

/// What may end a connection before its client does: the server's shutdown (every
/// connection) and the debug API's GOAWAY (HTTP/2 connections). Each connection holds a clone
/// for its life, which is how the server knows when all are gone.
#[derive(Clone)]
pub struct Closing {
    /// Turns true when the server shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// Changes each time the debug API asks for GOAWAY.
    pub goaways: watch::Receiver<u64>,
    /// Held while the connection lives: the server's drain waits until no one holds one.
    pub open: mpsc::Sender<()>,
}

/// Sets up `stream` (TLS, protocol detection) within `setup_timeout`, then serves it until
/// it closes or [`Closing`] ends it gracefully.
pub async fn serve<S>(
    stream: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    builder: Arc<Builders>,
    service: S,
    mut closing: Closing,
    setup_timeout: Option<Duration>,
) where
    S: Service + Send + 'static,
    S::Future: Send + 'static,
{
    let _ = stream.set_nodelay(true);
    // Only GOAWAYs asked for from now on concern this connection.
    closing.goaways.borrow_and_update();
    match tls {
        None => {
            let Some(io) = set_up(setup_timeout, async { Rewound::after_preface(stream).await }).await else {
                return;
            };
            serve_io(io, &builder, service, closing).await;
        }
        Some(acceptor) => {
            let setup = async {
                let stream = acceptor.accept(stream).await?;
                Rewound::after_preface(stream).await
            };
            let Some(io) = set_up(setup_timeout, setup).await else {
                return;
            };
            // Client certificates are known once the handshake is done: each request of the
            // connection carries them to the authenticator.
            let service = crate::authn::with_peer_certificates(&io.io, service);
            serve_io(io, &builder, service, closing).await;
        }
    }
}

/// Runs a connection's setup within `timeout`; `None` (logged) when it fails or times out.
async fn set_up<T>(timeout: Option<Duration>, setup: impl Future<Output = io::Result<T>>) -> Option<T> {
    let result = match timeout {
        Some(timeout) => tokio::time::timeout(timeout, setup).await.unwrap_or_else(|_| {
            Err(io::Error::new(io::ErrorKind::TimedOut, "no request within the read-header timeout"))
        }),
        None => setup.await,
    };
    result.inspect_err(|e| tracing::debug!(error = %e, "connection setup failed")).ok()
}

async fn serve_io<I, S>(io: Rewound<I>, builders: &Builders, service: S, closing: Closing)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: Service + Send + 'static,
    S::Future: Send + 'static,
{
    // Each connection is boxed at its own size: a task holding either would be the larger's.
    let result = if io.is_http2() {
        let conn = Box::pin(builders.http2.serve_connection(TokioIo::new(io), service));
        until_closed(conn, closing, true).await
    } else {
        let conn = Box::pin(builders.http1.serve_connection(TokioIo::new(io), service).with_upgrades());
        until_closed(conn, closing, false).await
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// A hyper connection that can be asked to finish what it has and close.
trait GracefulConnection: Future<Output = Result<(), hyper::Error>> {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, S> GracefulConnection for http1::UpgradeableConnection<I, S>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: Service,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http1::UpgradeableConnection::graceful_shutdown(self);
    }
}

impl<I, S> GracefulConnection for http2::Connection<I, S, TokioExecutor>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: Service + Send + 'static,
    S::Future: Send + 'static,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self);
    }
}

/// Serves `conn` until it ends, shutting it down gracefully when the server does and, for
/// HTTP/2, when the debug API asks for GOAWAY.
async fn until_closed<C: GracefulConnection>(
    mut conn: Pin<Box<C>>,
    closing: Closing,
    http2: bool,
) -> Result<(), hyper::Error> {
    let Closing { mut shutdown, mut goaways, open: _open } = closing;
    // Each signal is acted on once (and forgotten if its sender is gone).
    let (mut shutting_down, mut gone_away) = (false, !http2);
    loop {
        tokio::select! {
            result = conn.as_mut() => break result,
            down = shutdown.wait_for(|down| *down), if !shutting_down => {
                shutting_down = true;
                if down.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            asked = goaways.changed(), if !gone_away => {
                gone_away = true;
                if asked.is_ok() {
                    // hyper's graceful shutdown of an HTTP/2 connection is GOAWAY.
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// A stream whose first bytes were read ahead (to tell HTTP/2 from HTTP/1 under the setup
/// timeout) and are handed out again before the rest. hyper then detects the protocol from
/// bytes already there, so a client that stalls mid-preface is cut off by the timeout
/// instead of holding the connection forever.
pub struct Rewound<I> {
    prefix: Bytes,
    io: I,
}

impl<I: AsyncRead + Unpin> Rewound<I> {
    /// Reads until the bytes differ from the HTTP/2 preface, the whole preface is there, or
    /// the stream ends.
    async fn after_preface(mut io: I) -> io::Result<Rewound<I>> {
        let mut prefix = Vec::with_capacity(H2_PREFACE.len());
        while prefix.len() < H2_PREFACE.len() {
            let mut buf = [0u8; 24];
            let wanted = H2_PREFACE.len() - prefix.len();
            let n = io.read(&mut buf[..wanted]).await?;
            if n == 0 {
                break;
            }
            prefix.extend_from_slice(&buf[..n]);
            if !H2_PREFACE.starts_with(&prefix) {
                break;
            }
        }
        Ok(Rewound { prefix: Bytes::from(prefix), io })
    }
}

impl<I> Rewound<I> {
    /// Whether the connection speaks HTTP/2 (its first bytes are the client preface).
    fn is_http2(&self) -> bool {
        self.prefix.as_ref() == H2_PREFACE
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewound<I> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.prefix.is_empty() {
            return Pin::new(&mut self.io).poll_read(cx, buf);
        }
        let n = self.prefix.len().min(buf.remaining());
        buf.put_slice(&self.prefix[..n]);
        self.prefix.advance(n);
        // With whatever else the socket has ready in the same read: hyper, given the first
        // bytes of a request alone, reads again into a buffer it must then grow, and keeps it
        // grown.
        if self.prefix.is_empty() && buf.remaining() > 0 {
            let filled = buf.filled().len();
            match Pin::new(&mut self.io).poll_read(cx, buf) {
                Poll::Ready(Err(e)) if buf.filled().len() == filled => {
                    // The read-ahead bytes are handed out; the error comes with the next read.
                    tracing::trace!(error = %e, "read after the read-ahead failed");
                }
                _ => {}
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewound<I> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// What the stream hands out after the read-ahead, and the bytes read ahead.
    async fn through_rewound(sent: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(sent).await.unwrap();
        drop(client);
        let mut io = Rewound::after_preface(server).await.unwrap();
        let prefix = io.prefix.to_vec();
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        (all, prefix)
    }

    #[tokio::test]
    async fn http1_and_http2_are_read_ahead_and_replayed_whole() {
        let (all, prefix) = through_rewound(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
        assert_eq!(all, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert!(!H2_PREFACE.starts_with(&prefix));
        let sent = [H2_PREFACE, b"frames"].concat();
        let (all, prefix) = through_rewound(&sent).await;
        assert_eq!(all, sent);
        assert_eq!(prefix, H2_PREFACE);
        // A connection closed at once is no error: hyper sees the end.
        assert_eq!(through_rewound(b"").await, (Vec::new(), Vec::new()));
    }

    #[tokio::test]
    async fn a_stalled_preface_is_cut_off_by_the_timeout() {
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(b"PRI * HT").await.unwrap();
        let setup = set_up(Some(Duration::from_millis(50)), Rewound::after_preface(server)).await;
        assert!(setup.is_none());
        drop(client);
    }
}
