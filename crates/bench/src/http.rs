//! One HTTP/1.1 connection on hyper's low-level client (`hyper::client::conn::http1`): no
//! pool, no retries, requests one after another on the same socket. Each bench client owns
//! one, so "N watchers" means exactly N TCP connections.

use std::net::SocketAddr;

use anyhow::Context;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// A keep-alive HTTP/1.1 connection to the server.
pub struct HttpConnection {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
}

impl HttpConnection {
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<HttpConnection> {
        HttpConnection::connect_numbered(addr, 0).await
    }

    /// Connects the `n`th of many connections to `addr`: see [`connect_tcp`].
    pub async fn connect_numbered(addr: SocketAddr, n: usize) -> anyhow::Result<HttpConnection> {
        let stream = connect_tcp(addr, n).await?;
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .context("HTTP/1.1 handshake")?;
        // The connection's I/O runs in its own task until the socket closes.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(HttpConnection { sender, host: HeaderValue::from_str(&addr.to_string())? })
    }

    /// Sends one request; the response body is left to the caller to stream.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        accept: &'static str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Response<Incoming>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, self.host.clone())
            .header(header::ACCEPT, accept);
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        let request = builder.body(Full::new(body.unwrap_or_default()))?;
        self.sender.ready().await.context("connection closed")?;
        Ok(self.sender.send_request(request).await?)
    }

    /// Sends one JSON request and reads the whole response.
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let response = self.send(method, path, "application/json", body).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}

/// Percent-encodes a query parameter value (continue tokens carry `=`, `+`, `/`).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Connections per loopback source address: below the 28,232 ephemeral ports of Linux's
/// default `ip_local_port_range`.
const CONNECTIONS_PER_SOURCE: usize = 20_000;

/// Opens the `n`th of many TCP connections to `addr` (no delay). One source address has only
/// so many ephemeral ports for one destination, so past [`CONNECTIONS_PER_SOURCE`] loopback
/// connections the `n`th is bound to `127.0.0.{1 + n / CONNECTIONS_PER_SOURCE}` (all of
/// 127/8 is loopback on Linux): how `bench watchers` reaches 100,000 HTTP/1.1 watchers.
pub async fn connect_tcp(addr: SocketAddr, n: usize) -> anyhow::Result<tokio::net::TcpStream> {
    let stream = match addr {
        SocketAddr::V4(v4) if v4.ip().is_loopback() && n >= CONNECTIONS_PER_SOURCE => {
            let host = u8::try_from(1 + n / CONNECTIONS_PER_SOURCE).context("too many connections for 127/8")?;
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from(([127, 0, 0, host], 0)))?;
            socket.connect(addr).await
        }
        _ => tokio::net::TcpStream::connect(addr).await,
    }
    .with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}
