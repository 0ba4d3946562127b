//! Watches over WebSocket (spec §2.5), with a real client (tokio-tungstenite): the handshake
//! as a request the checks shape (Origin, subprotocols, Accept, credentials), then one watch
//! event per message. Every read has a timeout; every message received is kept, described,
//! for reports.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::proto::hex;
use crate::{CheckFailure, Target};

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The subprotocol prefix that carries a bearer token (§2.5).
pub const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// How a check wants the handshake.
#[derive(Clone, Debug, Default)]
pub struct Handshake<'a> {
    /// The `Origin` header (kube refuses a handshake without one).
    pub origin: Option<&'a str>,
    /// `Sec-WebSocket-Protocol` values, joined with ", ".
    pub protocols: Vec<String>,
    /// The `Accept` header (JSON when unset).
    pub accept: Option<&'a str>,
    /// Leave out `Authorization` (when the token rides in a subprotocol instead).
    pub without_authorization: bool,
}

/// A handshake the server refused: its HTTP status and body.
#[derive(Debug)]
pub struct Refusal {
    pub status: u16,
    pub body: String,
}

/// What one read of a WebSocket watch gave.
#[derive(Debug)]
pub enum WsRead {
    Text(String),
    Binary(Vec<u8>),
    /// The server's Close frame.
    Close,
    /// The connection ended (after or without a Close frame).
    Ended,
    TimedOut,
}

/// An open WebSocket watch.
pub struct WsWatch {
    pub path: String,
    /// The subprotocol the server chose (its `Sec-WebSocket-Protocol`), if any.
    pub protocol: Option<String>,
    /// When the handshake was sent.
    pub sent_at: Instant,
    socket: Socket,
    /// One line per message received, for reports.
    transcript: Vec<String>,
}

impl std::fmt::Debug for WsWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsWatch").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Target {
    /// Opens a WebSocket watch on `path_and_query` (a watch URL). A refused handshake is
    /// returned as such; a handshake that neither succeeds nor is refused with an HTTP status
    /// fails the check.
    pub(crate) async fn websocket(
        &self,
        path_and_query: &str,
        handshake: &Handshake<'_>,
    ) -> Result<Result<WsWatch, Refusal>, CheckFailure> {
        // wss:// for an https target, with its TLS setup offering HTTP/1.1 only (an upgrade
        // cannot ride on h2).
        let (url, connector) = match &self.tls {
            Some(tls) => (
                format!("wss://{}{path_and_query}", self.base_url.trim_start_matches("https://")),
                Some(tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(tls.offering(&[b"http/1.1"])))),
            ),
            None => (format!("ws://{}{path_and_query}", self.base_url.trim_start_matches("http://")), None),
        };
        let fail = |why: String| CheckFailure::failed(format!("WebSocket GET {path_and_query}: {why}"));
        let mut request = url.as_str().into_client_request().map_err(|e| fail(format!("building the request: {e}")))?;
        let headers = request.headers_mut();
        let mut set = |name: &'static str, value: &str| -> Result<(), CheckFailure> {
            let value = HeaderValue::from_str(value).map_err(|e| fail(format!("header {name}: {e}")))?;
            headers.insert(name, value);
            Ok(())
        };
        set("Accept", handshake.accept.unwrap_or("application/json"))?;
        if let Some(origin) = handshake.origin {
            set("Origin", origin)?;
        }
        if !handshake.protocols.is_empty() {
            set("Sec-WebSocket-Protocol", &handshake.protocols.join(", "))?;
        }
        let (token, _) = self.bearer_token().await?;
        if let Some(token) = token.as_deref().filter(|_| !handshake.without_authorization) {
            set("Authorization", &format!("Bearer {token}"))?;
        }
        let sent_at = Instant::now();
        let connected = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            tokio_tungstenite::connect_async_tls_with_config(request, None, false, connector),
        )
        .await
        .map_err(|_| fail(format!("no handshake answer within {} s", HANDSHAKE_TIMEOUT.as_secs())))?;
        match connected {
            Ok((socket, response)) => {
                let protocol = response
                    .headers()
                    .get("sec-websocket-protocol")
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                Ok(Ok(WsWatch { path: path_and_query.to_string(), protocol, sent_at, socket, transcript: Vec::new() }))
            }
            Err(WsError::Http(response)) => {
                let body = response.body().as_deref().map(|b| String::from_utf8_lossy(b).into_owned());
                Ok(Err(Refusal { status: response.status().as_u16(), body: body.unwrap_or_default() }))
            }
            Err(e) => Err(fail(format!("the handshake failed: {e}"))),
        }
    }

    /// Opens a WebSocket watch that must be accepted.
    pub(crate) async fn websocket_watch(
        &self,
        path_and_query: &str,
        handshake: &Handshake<'_>,
    ) -> Result<WsWatch, CheckFailure> {
        match self.websocket(path_and_query, handshake).await? {
            Ok(watch) => Ok(watch),
            Err(refusal) => Err(CheckFailure::failed_with(
                format!("WebSocket GET {path_and_query}: the handshake was refused with HTTP {}", refusal.status),
                refusal.body,
            )),
        }
    }
}

impl WsWatch {
    /// The next data message, the server's Close, the end of the connection, or nothing
    /// within `within`. Pings and pongs are skipped (the client answers pings itself).
    pub async fn read(&mut self, within: Duration) -> Result<WsRead, CheckFailure> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let Ok(next) = tokio::time::timeout_at(deadline, self.socket.next()).await else {
                return Ok(WsRead::TimedOut);
            };
            let message = match next {
                None | Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => {
                    self.transcript.push("(connection ended)".into());
                    return Ok(WsRead::Ended);
                }
                Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake))) => {
                    self.transcript.push("(connection ended without a Close frame)".into());
                    return Ok(WsRead::Ended);
                }
                // Over TLS: the server closed the TCP connection without a TLS close_notify. The
                // WebSocket's own Close frames say whether the watch ended properly (the checks
                // look for them), so this is an end, noted, not a broken stream.
                Some(Err(WsError::Io(e))) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    self.transcript.push("(connection ended without a TLS close_notify)".into());
                    return Ok(WsRead::Ended);
                }
                Some(Err(e)) => {
                    self.transcript.push(format!("(error: {e})"));
                    return Err(self.failure(&format!("the WebSocket broke off: {e}")));
                }
                Some(Ok(message)) => message,
            };
            match message {
                Message::Text(text) => {
                    self.transcript.push(format!("text: {:?}", text.as_str()));
                    return Ok(WsRead::Text(text.as_str().to_string()));
                }
                Message::Binary(bytes) => {
                    self.transcript.push(format!("binary: {}", hex(&bytes)));
                    return Ok(WsRead::Binary(bytes.to_vec()));
                }
                Message::Close(frame) => {
                    self.transcript.push(format!("close: {frame:?}"));
                    return Ok(WsRead::Close);
                }
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        }
    }

    /// The next data message; anything else fails the check.
    pub async fn next_data(&mut self, within: Duration) -> Result<WsRead, CheckFailure> {
        match self.read(within).await? {
            read @ (WsRead::Text(_) | WsRead::Binary(_)) => Ok(read),
            WsRead::Close => Err(self.failure("the server closed the WebSocket while an event was expected")),
            WsRead::Ended => Err(self.failure("the connection ended while an event was expected")),
            WsRead::TimedOut => Err(self.failure(&format!("no message within {:.1} s", within.as_secs_f64()))),
        }
    }

    /// Sends the client's Close frame.
    pub async fn close(&mut self) -> Result<(), CheckFailure> {
        self.transcript.push("(client sent close)".into());
        tokio::time::timeout(HANDSHAKE_TIMEOUT, self.socket.close(None))
            .await
            .map_err(|_| self.failure("sending the client's Close frame did not finish"))?
            .map_err(|e| self.failure(&format!("sending the client's Close frame: {e}")))
    }

    /// A failure quoting the request and every message received so far.
    pub fn failure(&self, why: &str) -> CheckFailure {
        CheckFailure::failed_with(format!("WebSocket GET {}: {why}", self.path), self.transcript())
    }

    pub fn transcript(&self) -> String {
        if self.transcript.is_empty() {
            return "(no messages received)".into();
        }
        self.transcript.join("\n")
    }
}
