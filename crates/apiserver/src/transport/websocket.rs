//! WATCH over WebSocket (spec §2.5): the same watch URLs, upgraded.
//!
//! The handshake follows what kube-apiserver inherits from x/net/websocket and its
//! authenticator:
//! * GET with `Upgrade: websocket`, `Sec-WebSocket-Version: 13` and a key, else 400;
//! * an `Origin` header that is a URL (Go's `url.ParseRequestURI`) is required: without one,
//!   or with one that does not parse (`null`, `not a url`), x/net's `checkOrigin` fails the
//!   handshake with a bare `403 Forbidden` (no body) and closes the connection;
//! * a bearer token offered as a `base64url.bearer.authorization.k8s.io.<token>` subprotocol
//!   is removed before the rest are considered (there is no authentication yet: it is accepted
//!   and ignored); then a single remaining subprotocol is echoed, more than one is 400.
//!
//! Then one watch event per message: text frames for JSON (the JSON line, trailing newline
//! included), binary frames for protobuf (the `WatchEvent` bytes, without the stream's length
//! prefix). The server ignores what the client sends, except that a close (or the connection
//! dropping) ends the watch at once; at the deadline the server closes the socket. A stream
//! ended abnormally by an injected fault drops the socket without a Close frame.

use bytes::Bytes;
use futures::{SinkExt, Stream, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use listwatch_encoding::Wire;
use listwatch_meta::ApiError;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::body::{Aborted, Body};
use super::pump::{Framing, PreparedWatch, pump};
use crate::panics::RequestLabel;
use crate::response::HttpResponse;

const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// Whether a request asks to upgrade to WebSocket.
pub fn is_websocket_request(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|part| part.trim().eq_ignore_ascii_case(token))))
    };
    has(header::UPGRADE, "websocket") && has(header::CONNECTION, "upgrade")
}

/// The checked handshake: the accept key and the subprotocol to echo.
pub struct Handshake {
    accept: String,
    protocol: Option<String>,
}

/// Checks the handshake headers (before the watch is prepared, so a bad handshake never
/// starts one). A refusal is the whole answer (boxed: a response is large).
pub fn check_handshake(method: &http::Method, headers: &HeaderMap) -> Result<Handshake, Box<HttpResponse>> {
    let bad_request = |message: &str| Box::new(crate::response::error(&ApiError::bad_request(message)));
    if method != http::Method::GET {
        return Err(bad_request("websocket: the handshake must be a GET"));
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok()) != Some("13") {
        return Err(bad_request("websocket: unsupported Sec-WebSocket-Version (only 13)"));
    }
    let key = headers.get(header::SEC_WEBSOCKET_KEY).map(http::HeaderValue::as_bytes).filter(|k| !k.is_empty());
    let Some(key) = key else {
        return Err(bad_request("websocket: missing Sec-WebSocket-Key"));
    };
    let origin = headers.get(header::ORIGIN).map(|o| String::from_utf8_lossy(o.as_bytes()).into_owned());
    if !origin.is_some_and(|o| !o.is_empty() && is_request_uri(&o)) {
        return Err(Box::new(forbidden_origin()));
    }
    let offered: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    // The bearer token rides in a subprotocol; it is taken out before the rest count.
    let remaining: Vec<String> = offered.into_iter().filter(|p| !p.starts_with(BEARER_PROTOCOL_PREFIX)).collect();
    if remaining.len() > 1 {
        return Err(bad_request("websocket: more than one subprotocol offered; the watch chooses none"));
    }
    Ok(Handshake { accept: derive_accept_key(key), protocol: remaining.into_iter().next() })
}

/// x/net/websocket's answer to a handshake whose origin check failed: the status line alone.
fn forbidden_origin() -> HttpResponse {
    let mut response = HttpResponse::new(Body::empty());
    *response.status_mut() = StatusCode::FORBIDDEN;
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whether Go's `url.ParseRequestURI` accepts `text`: an absolute path, or a scheme followed by
/// an opaque part or by `//host[:port]` and a path, with valid `%` escapes, no control bytes,
/// and only the bytes Go allows in a host.
fn is_request_uri(text: &str) -> bool {
    let valid_escapes = |s: &str| {
        let b = s.as_bytes();
        b.iter().enumerate().all(|(i, c)| {
            *c != b'%'
                || (b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        })
    };
    if text.bytes().any(|b| b < b' ' || b == 0x7f) {
        return false;
    }
    let rest = text.split_once('?').map_or(text, |(before, _)| before);
    if rest.starts_with('/') {
        return valid_escapes(rest);
    }
    // A scheme: a letter, then letters, digits, `+`, `-` or `.`, then `:`.
    let Some((scheme, rest)) = rest.split_once(':') else { return false };
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return false;
    }
    let Some(after) = rest.strip_prefix("//") else {
        // A rootless rest is an opaque URL (`mailto:x`).
        return true;
    };
    let (authority, path) = after.find('/').map_or((after, ""), |i| after.split_at(i));
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    // The port: after the `]` of an IPv6 literal, else after the last `:`; digits only.
    let port = match host.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((_, after)) => after,
            None => return false,
        },
        None => host.rfind(':').map_or("", |i| &host[i..]),
    };
    let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok =
        host.bytes().all(|b| b >= 0x80 || b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]<>\"%".contains(&b));
    port_ok && host_ok && valid_escapes(host) && valid_escapes(path)
}

/// Answers 101 and serves the watch on the upgraded connection.
pub fn respond(
    watch: PreparedWatch,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    handshake: Handshake,
    on_upgrade: OnUpgrade,
    what: RequestLabel,
) -> HttpResponse {
    let wire = watch.media.wire;
    let frames = pump(watch, shutdown.clone(), Messages { wire });
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "websocket upgrade failed");
                return;
            }
        };
        let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        // A panic ends this watch (the socket drops) and nothing else.
        let served = crate::panics::guard(crate::panics::Stage::WebSocket, &what, serve(socket, frames));
        tokio::select! {
            _ = served => {}
            _ = shutdown.wait_for(|down| *down) => {}
        }
    });
    let mut response = HttpResponse::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&handshake.accept).expect("base64 is a header value"),
    );
    if let Some(protocol) = handshake.protocol
        && let Ok(value) = HeaderValue::from_str(&protocol)
    {
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, value);
    }
    response
}

/// A batch as one message per event: text for JSON (the JSON line, trailing newline
/// included), binary for protobuf (the `WatchEvent` bytes without the stream's 4-byte length
/// prefix, which is not part of a WebSocket message).
struct Messages {
    wire: Wire,
}

impl Framing for Messages {
    type Frame = Vec<Message>;

    fn frame(&mut self, pieces: Vec<Bytes>, ends: &[usize]) -> Option<Vec<Message>> {
        let mut start = 0;
        let mut messages = Vec::with_capacity(ends.len());
        for &end in ends {
            let event = listwatch_encoding::join(&pieces[start..end]);
            start = end;
            messages.push(match self.wire {
                Wire::Json | Wire::Yaml => Message::Text(Utf8Bytes::try_from(event).ok()?),
                Wire::Protobuf => Message::Binary(event.slice(4..)),
            });
        }
        Some(messages)
    }

    /// A message is whole or nothing: a cut stream just drops its socket.
    fn partial(&mut self, _bytes: Bytes) -> Option<Vec<Message>> {
        None
    }
}

async fn serve<S>(socket: WebSocketStream<S>, frames: impl Stream<Item = Result<Vec<Message>, Aborted>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut sink, mut incoming) = socket.split();
    let mut frames = std::pin::pin!(frames);
    loop {
        tokio::select! {
            biased;
            batch = frames.next() => {
                let Some(messages) = batch else { break };
                // Ended abnormally: the socket drops without a Close frame.
                let Ok(messages) = messages else { return };
                for message in messages {
                    if sink.feed(message).await.is_err() {
                        return;
                    }
                }
                if sink.flush().await.is_err() {
                    break;
                }
            }
            // Anything from the client is ignored, but its close ends the watch now, after the
            // Close reply (RFC 6455 §5.5.1) that tungstenite queued is sent.
            message = incoming.next() => match message {
                Some(Ok(Message::Close(_))) => {
                    let _ = sink.flush().await;
                    return;
                }
                None | Some(Err(_)) => return,
                Some(Ok(_)) => continue,
            },
        }
    }
    let _ = sink.send(Message::Close(None)).await;
    let _ = sink.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_as_go_parses_a_request_uri() {
        for ok in [
            "http://localhost",
            "https://a.example:8443/x?y",
            "/relative/path",
            "mailto:someone",
            "localhost:8080x",
            "http://[::1]:80",
        ] {
            assert!(is_request_uri(ok), "{ok}");
        }
        for bad in ["null", "not a url", "http://a b", "http://a:80x", "http://[::1", "/%zz", "1http://a"] {
            assert!(!is_request_uri(bad), "{bad}");
        }
    }
}
