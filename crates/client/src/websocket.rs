//! WATCH over WebSocket (spec apiserver-protocol.md §2.5).
//!
//! The same watch URL, opened with an HTTP/1.1 upgrade. kube-apiserver's handler comes from
//! `golang.org/x/net/websocket`, which refuses a handshake without an `Origin` header (403), so
//! one is always sent: the server's own origin. No subprotocol is offered (the watch handler
//! gives none meaning, and more than one fails the handshake); the bearer token goes in the
//! `Authorization` header, which non-browser clients can send.
//!
//! Every message is one event: text messages are JSON events (with their trailing newline),
//! binary messages are `metav1.WatchEvent` protobuf messages without the length prefix. Pings are
//! answered by tungstenite; a close frame ends the stream normally.
//!
//! The connection is made by the client's HTTP/1.1-only connector (ALPN `http/1.1` over TLS), so
//! the TLS settings, trust roots and `tls-server-name` are the ones every other request uses.
//!
//! Only checked against listwatch's WebSocket watch (JSON and protobuf, plain and TLS), which
//! follows kube-apiserver's handler; not against a real kube-apiserver.

use std::time::Duration;

use futures::StreamExt;
use http::Uri;
use http::header::{ACCEPT, AUTHORIZATION, HeaderValue, ORIGIN, USER_AGENT};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::client::Client;
use crate::error::Error;
use crate::event::{WatchEvent, decode_json_event, decode_protobuf_event};
use crate::watch::WatchStream;

fn ws_error(e: tokio_tungstenite::tungstenite::Error) -> Error {
    Error::WebSocket(Box::new(e))
}

/// Opens a WebSocket watch of `path_and_query` (which carries `watch=true` and the options).
pub(crate) async fn watch<K: DeserializeOwned + 'static, T: Send + 'static>(
    client: &Client,
    path_and_query: &str,
    accept: &str,
    max_event_bytes: usize,
    idle_timeout: Option<Duration>,
    wrap: fn(K) -> T,
) -> Result<WatchStream<T>, Error> {
    let http_url = client.url(path_and_query);
    let http_uri: Uri = http_url.parse().map_err(|e| Error::InvalidRequest(format!("{http_url}: {e}")))?;
    let secure = http_uri.scheme_str() == Some("https");
    let authority = http_uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
    let origin = format!("{}://{authority}", if secure { "https" } else { "http" });
    let ws_url = format!("{}://{authority}{}", if secure { "wss" } else { "ws" }, path_of(&http_uri));

    let mut connector = client.websocket_connector();
    let connect = async {
        futures::future::poll_fn(|cx| tower_service::Service::<Uri>::poll_ready(&mut connector, cx))
            .await
            .map_err(|e| connect_error(&http_url, e))?;
        tower_service::Service::call(&mut connector, http_uri.clone()).await.map_err(|e| connect_error(&http_url, e))
    };
    let connect_timeout = client.config().connect_timeout;
    let stream = tokio::time::timeout(connect_timeout, connect)
        .await
        .unwrap_or(Err(Error::Timeout { what: "connecting a WebSocket watch", after: connect_timeout }))?;

    let mut request = ws_url.as_str().into_client_request().map_err(ws_error)?;
    let headers = request.headers_mut();
    headers.insert(ORIGIN, HeaderValue::from_str(&origin).map_err(|e| Error::InvalidRequest(e.to_string()))?);
    headers.insert(ACCEPT, HeaderValue::from_str(accept).map_err(|e| Error::InvalidRequest(e.to_string()))?);
    headers.insert(
        USER_AGENT,
        HeaderValue::from_str(&client.config().user_agent).map_err(|e| Error::InvalidRequest(e.to_string()))?,
    );
    if let Some(value) = client.authorization().await? {
        headers.insert(AUTHORIZATION, value);
    }
    let config =
        WebSocketConfig::default().max_message_size(Some(max_event_bytes)).max_frame_size(Some(max_event_bytes));
    let handshake = tokio_tungstenite::client_async_with_config(request, TokioIo::new(stream), Some(config));
    let handshake = match client.config().request_timeout {
        Some(limit) => tokio::time::timeout(limit, handshake)
            .await
            .map_err(|_| Error::Timeout { what: "the WebSocket handshake", after: limit })?,
        None => handshake.await,
    };
    let (socket, _response) = handshake.map_err(handshake_error)?;

    let events = futures::stream::unfold((socket, false), move |(mut socket, done)| async move {
        if done {
            return None;
        }
        loop {
            let message = match idle_timeout {
                Some(limit) => match tokio::time::timeout(limit, socket.next()).await {
                    Ok(message) => message,
                    Err(_) => {
                        return Some((
                            Err(Error::Timeout { what: "waiting for WebSocket watch events", after: limit }),
                            (socket, true),
                        ));
                    }
                },
                None => socket.next().await,
            };
            let event: Result<WatchEvent<T>, Error> = match message {
                None | Some(Ok(Message::Close(_))) => return None,
                Some(Ok(Message::Text(text))) => decode_json_event(text.as_bytes()).map(|e| e.map(wrap)),
                Some(Ok(Message::Binary(bytes))) => decode_protobuf_event(&bytes).map(|e| e.map(wrap)),
                Some(Ok(_)) => continue,
                Some(Err(e)) => Err(ws_error(e)),
            };
            let last = matches!(event, Err(_) | Ok(WatchEvent::Error(_)));
            return Some((event, (socket, last)));
        }
    });
    Ok(events.boxed())
}

fn path_of(uri: &Uri) -> &str {
    uri.path_and_query().map(http::uri::PathAndQuery::as_str).unwrap_or("/")
}

fn connect_error(url: &str, e: Box<dyn std::error::Error + Send + Sync>) -> Error {
    // Keep the io::Error reachable through `source()` so "connection refused" is recognised.
    match e.downcast::<std::io::Error>() {
        Ok(io) => Error::Io { what: "connecting a WebSocket watch", source: *io },
        Err(other) => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(other.as_ref());
            while let Some(err) = source {
                if let Some(io) = err.downcast_ref::<std::io::Error>() {
                    return Error::Io {
                        what: "connecting a WebSocket watch",
                        source: std::io::Error::new(io.kind(), format!("{url}: {other}")),
                    };
                }
                source = err.source();
            }
            Error::Io { what: "connecting a WebSocket watch", source: std::io::Error::other(format!("{url}: {other}")) }
        }
    }
}

/// A refused handshake carries the server's HTTP response; keep its Status.
fn handshake_error(e: tokio_tungstenite::tungstenite::Error) -> Error {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(response) => {
            let body = response.body().as_deref().unwrap_or_default();
            crate::client::status_error(response.status(), response.headers(), body)
        }
        other => ws_error(other),
    }
}
