//! How a watch's bytes reach the client: the transport (`--transport`) and the wire encoding
//! asked for (`--encoding`).
//!
//! A [`Connector`] opens watches and a [`WatchStream`] hands out a watch's bytes as they
//! arrive, in whatever pieces the transport delivers them (HTTP chunks or data frames, or
//! WebSocket messages); cutting them into events is [`super::decode`]'s job. Adding a
//! transport means a [`Transport`] variant, a `WatchStream` variant and their arms; adding an
//! encoding means an `Accept` header here and a decoder there.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use clap::ValueEnum;
use http::{HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::http::{HttpConnection, connect_tcp};

/// How much a raw watch reads at most at once.
const RAW_READ_SIZE: usize = 64 * 1024;

/// `--transport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Chunked HTTP/1.1, one connection per watch.
    Http1,
    /// HTTP/2 with prior knowledge: watches are streams sharing connections.
    Http2,
    /// WebSocket, one event per message, one connection per watch.
    Websocket,
    /// Plain TCP, one connection per watch: a `WATCH <path>` line, then newline-delimited JSON
    /// events and nothing else. Only the raw broadcaster ([`super::raw`]) speaks it.
    Raw,
}

/// `--encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireEncoding {
    /// Newline-delimited JSON watch events.
    Json,
    /// Length-prefixed protobuf frames.
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

/// Opens watches over one transport, sharing what the transport shares: HTTP/2 watches are
/// streams on a few connections (`streams_per_connection` each, as client-go multiplexes its
/// watches), the others get a connection each.
pub struct Connector {
    transport: Transport,
    encoding: WireEncoding,
    addr: SocketAddr,
    streams_per_connection: usize,
    /// Connections opened so far (their source address depends on it: [`connect_tcp`]).
    opened: std::sync::atomic::AtomicUsize,
    /// HTTP/2 connections and how many watches each carries.
    http2: tokio::sync::Mutex<Vec<(hyper::client::conn::http2::SendRequest<Empty<Bytes>>, usize)>>,
}

/// An open watch.
pub enum WatchStream {
    /// HTTP/1.1 or HTTP/2: the response body.
    Http {
        body: Incoming,
        /// Keeps an HTTP/1.1 connection's request side alive while the body streams.
        _connection: Option<HttpConnection>,
    },
    /// One event per message; protobuf messages get their length prefix back so the same
    /// decoder reads both transports.
    WebSocket { socket: Box<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>>, encoding: WireEncoding },
    /// Raw TCP: the bytes as read. `buffer` holds what was read while opening (the first line
    /// at least) until the first [`WatchStream::next_bytes`].
    Raw { stream: tokio::net::TcpStream, buffer: BytesMut },
}

/// The outcome of opening a watch.
pub enum Opened {
    Streaming(WatchStream),
    /// The server answered something other than 200 (status and body).
    Refused(StatusCode, Bytes),
}

impl Connector {
    pub fn new(
        transport: Transport,
        encoding: WireEncoding,
        addr: SocketAddr,
        streams_per_connection: usize,
    ) -> Connector {
        Connector {
            transport,
            encoding,
            addr,
            streams_per_connection: streams_per_connection.max(1),
            opened: std::sync::atomic::AtomicUsize::new(0),
            http2: tokio::sync::Mutex::new(Vec::new()),
        }
    }

    /// Opens a watch of `path` (with its query).
    pub async fn open(&self, path: &str) -> anyhow::Result<Opened> {
        match self.transport {
            Transport::Http1 => {
                let mut connection = HttpConnection::connect_numbered(self.addr, self.next_number()).await?;
                let response = connection.send(Method::GET, path, self.encoding.accept(), None).await?;
                Ok(opened(response, Some(connection)).await)
            }
            Transport::Http2 => {
                let mut sender = self.http2_sender().await?;
                let request = http::Request::get(format!("http://{}{path}", self.addr))
                    .header(http::header::ACCEPT, self.encoding.accept())
                    .body(Empty::<Bytes>::new())?;
                sender.ready().await?;
                let response = sender.send_request(request).await?;
                Ok(opened(response, None).await)
            }
            Transport::Websocket => {
                use tokio_tungstenite::tungstenite::client::IntoClientRequest;
                let mut request = format!("ws://{}{path}", self.addr).into_client_request()?;
                request.headers_mut().insert("Origin", HeaderValue::from_static("http://listwatch-bench"));
                request.headers_mut().insert(http::header::ACCEPT, HeaderValue::from_static(self.encoding.accept()));
                let stream = connect_tcp(self.addr, self.next_number()).await?;
                match tokio_tungstenite::client_async(request, stream).await {
                    Ok((socket, _)) => Ok(Opened::Streaming(WatchStream::WebSocket {
                        socket: Box::new(socket),
                        encoding: self.encoding,
                    })),
                    Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                        let status = response.status();
                        Ok(Opened::Refused(status, Bytes::from(response.into_body().unwrap_or_default())))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Transport::Raw => {
                let mut stream = tokio::net::TcpStream::connect(self.addr).await?;
                stream.set_nodelay(true)?;
                stream.write_all(format!("WATCH {path}\n").as_bytes()).await?;
                // The broadcaster answers with a line once the watch is registered: from then
                // on it gets every write, as a 200 means for the HTTP transports.
                let mut buffer = BytesMut::with_capacity(RAW_READ_SIZE);
                while memchr::memchr(b'\n', &buffer).is_none() {
                    if stream.read_buf(&mut buffer).await? == 0 {
                        anyhow::bail!("the raw broadcaster closed the watch before answering");
                    }
                }
                Ok(Opened::Streaming(WatchStream::Raw { stream, buffer }))
            }
        }
    }

    fn next_number(&self) -> usize {
        self.opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// A connection with room for one more stream (a new one when all are full).
    async fn http2_sender(&self) -> anyhow::Result<hyper::client::conn::http2::SendRequest<Empty<Bytes>>> {
        let mut pool = self.http2.lock().await;
        if let Some((sender, streams)) = pool.last_mut()
            && *streams < self.streams_per_connection
            && !sender.is_closed()
        {
            *streams += 1;
            return Ok(sender.clone());
        }
        let stream = connect_tcp(self.addr, self.next_number()).await?;
        let (sender, connection) = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(16 << 20)
            .handshake(TokioIo::new(stream))
            .await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        pool.push((sender.clone(), 1));
        Ok(sender)
    }
}

async fn opened(response: http::Response<Incoming>, connection: Option<HttpConnection>) -> Opened {
    if response.status() != StatusCode::OK {
        let status = response.status();
        let body = response.into_body().collect().await.map(http_body_util::Collected::to_bytes).unwrap_or_default();
        return Opened::Refused(status, body);
    }
    Opened::Streaming(WatchStream::Http { body: response.into_body(), _connection: connection })
}

impl WatchStream {
    /// The next bytes of the stream; `None` once the server has ended it.
    pub async fn next_bytes(&mut self) -> Option<anyhow::Result<Bytes>> {
        match self {
            WatchStream::Http { body, .. } => loop {
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
            WatchStream::WebSocket { socket, encoding } => {
                use futures::StreamExt;
                use tokio_tungstenite::tungstenite::Message;
                loop {
                    match socket.next().await? {
                        Ok(Message::Text(text)) => return Some(Ok(Bytes::from(text))),
                        Ok(Message::Binary(bytes)) => {
                            if *encoding == WireEncoding::Protobuf {
                                let mut framed = Vec::with_capacity(4 + bytes.len());
                                framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                                framed.extend_from_slice(&bytes);
                                return Some(Ok(Bytes::from(framed)));
                            }
                            return Some(Ok(bytes));
                        }
                        Ok(Message::Close(_)) => return None,
                        Ok(_) => continue,
                        Err(e) => return Some(Err(e.into())),
                    }
                }
            }
            WatchStream::Raw { stream, buffer } => {
                if buffer.is_empty() {
                    buffer.reserve(RAW_READ_SIZE);
                    match stream.read_buf(buffer).await {
                        Ok(0) => return None,
                        Ok(_) => {}
                        Err(e) => return Some(Err(e.into())),
                    }
                }
                Some(Ok(buffer.split().freeze()))
            }
        }
    }
}
