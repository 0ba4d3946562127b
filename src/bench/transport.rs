//! How a watch's bytes reach the client: the transport (`--transport`) and the wire encoding
//! asked for (`--encoding`).
//!
//! A [`WatchStream`] opens one watch on its own connection and hands out the bytes as they
//! arrive, in whatever pieces the transport delivers them (HTTP/1.1 chunks here); cutting them
//! into events is [`super::decode`]'s job. Adding a transport means adding a [`Transport`]
//! variant, a `WatchStream` variant and its `open`/`next_bytes` arms; adding an encoding means
//! an `Accept` header here and a decoder there. Only HTTP/1.1 and JSON exist so far; the other
//! values are accepted by the CLI and refused with "not implemented yet".

use std::net::SocketAddr;

use bytes::Bytes;
use clap::ValueEnum;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Serialize;

use super::http::HttpConnection;

/// `--transport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Chunked HTTP/1.1, one connection per watch.
    Http1,
    /// HTTP/2 streams (not implemented yet).
    Http2,
    /// WebSocket, one event per message (not implemented yet).
    Websocket,
}

/// `--encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireEncoding {
    /// Newline-delimited JSON watch events.
    Json,
    /// Length-prefixed protobuf frames (not implemented yet).
    Protobuf,
}

impl WireEncoding {
    /// The `Accept` header that asks the server for this encoding.
    pub fn accept(self) -> &'static str {
        match self {
            WireEncoding::Json => "application/json",
            WireEncoding::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }
    }
}

/// A flag value as the command line spells it.
fn flag_name(value: &impl ValueEnum) -> String {
    value.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
}

/// Refuses the transports and encodings the bench cannot speak yet.
pub fn check_supported(transport: Transport, encoding: WireEncoding) -> anyhow::Result<()> {
    if transport != Transport::Http1 {
        anyhow::bail!("--transport {}: not implemented yet (only http1 is)", flag_name(&transport));
    }
    if encoding != WireEncoding::Json {
        anyhow::bail!("--encoding {}: not implemented yet (only json is)", flag_name(&encoding));
    }
    Ok(())
}

/// An open watch.
pub enum WatchStream {
    Http1 {
        body: Incoming,
        /// Keeps the connection's request side alive while the body streams.
        _connection: HttpConnection,
    },
}

/// The outcome of opening a watch.
pub enum Opened {
    Streaming(WatchStream),
    /// The server answered something other than 200 (status and body).
    Refused(StatusCode, Bytes),
}

impl WatchStream {
    /// Opens a watch of `path` (with its query) on a new connection.
    pub async fn open(
        transport: Transport,
        encoding: WireEncoding,
        addr: SocketAddr,
        path: &str,
    ) -> anyhow::Result<Opened> {
        match transport {
            Transport::Http1 => {
                let mut connection = HttpConnection::connect(addr).await?;
                let response = connection.send(Method::GET, path, encoding.accept(), None).await?;
                if response.status() != StatusCode::OK {
                    let status = response.status();
                    let body = response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    return Ok(Opened::Refused(status, body));
                }
                Ok(Opened::Streaming(WatchStream::Http1 { body: response.into_body(), _connection: connection }))
            }
            Transport::Http2 | Transport::Websocket => {
                anyhow::bail!("--transport {}: not implemented yet", flag_name(&transport))
            }
        }
    }

    /// The next bytes of the stream; `None` once the server has ended it.
    pub async fn next_bytes(&mut self) -> Option<anyhow::Result<Bytes>> {
        match self {
            WatchStream::Http1 { body, .. } => loop {
                match body.frame().await? {
                    Ok(frame) => {
                        if let Ok(data) = frame.into_data() {
                            return Some(Ok(data));
                        }
                        // Trailers: nothing to read.
                    }
                    Err(e) => return Some(Err(e.into())),
                }
            },
        }
    }
}
