//! The last-resort guard against panics in request handling.
//!
//! The goal stays zero panics; this is what a bug costs when one slips through. A handler that
//! panics answers 500 instead of dropping the connection (and, on HTTP/2, every other stream on
//! it); a response stream (a watch) that panics ends that stream cleanly, as a watch timeout
//! would, and nothing else. Each caught panic is logged and counted in
//! `listwatch_request_panics_total{stage}`.
//!
//! kube-apiserver's `WithPanicRecovery` writes the plain-text 500 "This request caused
//! apiserver to panic. Look in the logs for details."; client-go turns that body into the
//! Status `InternalError` "an error on the server ("…") has prevented the request from
//! succeeding". We send that Status directly, so every client sees what client-go shows.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::{FutureExt, Stream, StreamExt};
use listwatch_meta::ApiError;

use crate::metrics;

/// Where a panic was caught (the metric's `stage` label).
#[derive(Clone, Copy, Debug)]
pub enum Stage {
    /// Routing and the handler, before the response head.
    Handler,
    /// A streamed response body (chunked watches).
    Stream,
    /// A WebSocket watch.
    WebSocket,
}

impl Stage {
    fn label(self) -> &'static str {
        match self {
            Stage::Handler => "handler",
            Stage::Stream => "stream",
            Stage::WebSocket => "websocket",
        }
    }
}

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`).
fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// The request a guard watches over, for the log line of a panic. It holds the method and
/// URI (shared, not copied, but for streams) and is only formatted when a panic is caught, so
/// guarding a request costs no allocation.
#[derive(Clone, Debug)]
pub struct RequestLabel {
    method: http::Method,
    uri: http::Uri,
}

impl RequestLabel {
    pub fn new(method: &http::Method, uri: &http::Uri) -> RequestLabel {
        RequestLabel { method: method.clone(), uri: uri.clone() }
    }

    /// The label of a response stream, which outlives its request: the URI copied, because
    /// a shared one keeps alive the buffer hyper read the request head into (8 KiB or more),
    /// while hyper reads the connection's next bytes into a new one, for as long as a watch
    /// lasts.
    pub fn for_stream(method: &http::Method, uri: &http::Uri) -> RequestLabel {
        let uri = http::Uri::try_from(uri.to_string()).unwrap_or_else(|_| http::Uri::from_static("/"));
        RequestLabel { method: method.clone(), uri }
    }
}

impl std::fmt::Display for RequestLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.uri)
    }
}

/// Logs and counts a caught panic.
pub fn caught(stage: Stage, payload: &(dyn Any + Send), what: &RequestLabel) {
    metrics::request_panicked(stage.label());
    tracing::error!(stage = stage.label(), request = %what, panic = message(payload), "caught a panic");
}

/// The 500 a panicked request answers.
pub fn error() -> ApiError {
    ApiError::request_panicked()
}

/// Runs `future`, catching a panic in it (`Err` with the payload, already logged and counted).
pub async fn guard<T>(stage: Stage, what: &RequestLabel, future: impl Future<Output = T>) -> Result<T, ()> {
    AssertUnwindSafe(future).catch_unwind().await.map_err(|payload| caught(stage, payload.as_ref(), what))
}

/// `stream`, ended at its first panic (logged and counted) instead of unwinding into the
/// connection.
pub fn guard_stream<S>(stream: S, what: RequestLabel) -> impl Stream<Item = S::Item> + Send + 'static
where
    S: Stream<Item: Send> + Send + 'static,
{
    AssertUnwindSafe(stream).catch_unwind().filter_map(move |item| {
        let item = match item {
            Ok(item) => Some(item),
            Err(payload) => {
                caught(Stage::Stream, payload.as_ref(), &what);
                None
            }
        };
        std::future::ready(item)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_label() -> RequestLabel {
        RequestLabel::new(&http::Method::GET, &http::Uri::from_static("/test"))
    }

    #[tokio::test]
    async fn a_panicking_future_is_an_error() {
        let out = guard(Stage::Handler, &test_label(), async { panic!("boom") }).await;
        assert_eq!(out, Err::<(), ()>(()));
        assert_eq!(guard(Stage::Handler, &test_label(), async { 7 }).await, Ok(7));
    }

    #[tokio::test]
    async fn a_panicking_stream_ends_after_what_it_gave() {
        let stream = futures::stream::iter(1..).map(|n| if n == 3 { panic!("boom at {n}") } else { n });
        let seen: Vec<i32> = guard_stream(stream, test_label()).collect().await;
        assert_eq!(seen, [1, 2]);
    }

    #[test]
    fn the_error_is_what_client_go_makes_of_kube_apiservers_answer() {
        let e = error();
        assert_eq!((e.code(), e.reason()), (500, "InternalError"));
        assert_eq!(
            e.status().message,
            "an error on the server (\"This request caused apiserver to panic. Look in the logs for details.\") has prevented the request from succeeding"
        );
    }
}
