//! Getting bytes to and from clients: the listening socket, each connection (TLS, HTTP/1.1 and
//! HTTP/2, Go's header limits), the max-in-flight filter, response bodies, and the watch
//! transports, which share one pump.
//!
//! * [`listener`], [`tls`], [`conn`], [`limits`]: sockets, connections and admission;
//! * [`body`]: the response body, a stream of chunks written with vectored writes;
//! * [`pump`]: the one loop that moves a watch's events to the wire; [`chunked`] and
//!   [`websocket`] only say how a batch becomes frames.

pub mod body;
pub mod chunked;
pub mod conn;
pub mod limits;
pub mod listener;
pub mod pump;
pub mod tls;
pub mod websocket;
