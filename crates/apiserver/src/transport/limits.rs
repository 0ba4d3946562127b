//! kube-apiserver's max-in-flight filter: at most `--max-requests-inflight` read-only and
//! `--max-mutating-requests-inflight` mutating requests are served at once; one more is
//! answered 429 at once (no queueing) so an overloaded server sheds load instead of piling up
//! work and memory. 0 lifts a limit.
//!
//! As kube's `WithMaxInFlightLimit` does:
//! * long-running requests (watches, including `/watch/` paths and WebSocket watches, and the
//!   `attach`/`exec`/`log`/`portforward`/`proxy` subresources) are never counted, since they
//!   would hold a slot for their whole life; the debug API's history stream is long-running
//!   too;
//! * read-only means the verbs get, list and watch; every other verb is mutating (for a
//!   non-resource path the verb is the lower-case method, so only GET is read-only there);
//! * the refusal is Go's `http.Error`: a plain-text body, `Retry-After: 1`.
//!
//! A slot is held until the response body is finished (or dropped), which is when kube's
//! handler returns: a slow request body or a slow reader keeps its slot.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Response, header};
use http_body::{Body as HttpBody, Frame, SizeHint};

use crate::request::{self, Query, Verb};
use crate::response::{self, HttpResponse};
use crate::transport::body::{Aborted, Body, Chunk};

/// kube's answer when a limit is reached (`filters.tooManyRequests`).
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// The debug API's storage history: a stream that lasts as long as its reader.
const HISTORY_PATH: &str = "/debug/listwatch/history";

/// Subresources kube's `BasicLongRunningRequestCheck` treats as long-running.
const LONG_RUNNING_SUBRESOURCES: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

/// How the filter sees a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    LongRunning,
    ReadOnly,
    Mutating,
}

impl RequestKind {
    /// kube's classification, from the method and the request line's target.
    pub fn of(method: &Method, uri: &http::Uri) -> RequestKind {
        if uri.path() == HISTORY_PATH {
            return RequestKind::LongRunning;
        }
        // Only GET (and HEAD) can be a watch; other methods need no query parsing.
        let query =
            if matches!(*method, Method::GET | Method::HEAD) { Query::parse(uri.query()) } else { Query::default() };
        match request::parse(method, uri.path(), &query) {
            Some(r) => {
                if r.verb == Verb::Watch
                    || r.subresource.as_deref().is_some_and(|s| LONG_RUNNING_SUBRESOURCES.contains(&s))
                {
                    RequestKind::LongRunning
                } else if matches!(r.verb, Verb::Get | Verb::List) {
                    RequestKind::ReadOnly
                } else {
                    RequestKind::Mutating
                }
            }
            None if *method == Method::GET => RequestKind::ReadOnly,
            None => RequestKind::Mutating,
        }
    }
}

/// The two counters and their limits. Shared by every connection of a server.
pub struct InflightLimits {
    read_only: Arc<Bucket>,
    mutating: Arc<Bucket>,
}

struct Bucket {
    /// 0: unlimited.
    limit: usize,
    current: AtomicUsize,
    /// `apiserver_current_inflight_requests{request_kind=...}`.
    gauge: prometheus::IntGauge,
}

impl InflightLimits {
    pub fn new(max_read_only: usize, max_mutating: usize) -> InflightLimits {
        let bucket = |limit, kind| {
            Arc::new(Bucket { limit, current: AtomicUsize::new(0), gauge: crate::metrics::current_inflight(kind) })
        };
        InflightLimits { read_only: bucket(max_read_only, "readOnly"), mutating: bucket(max_mutating, "mutating") }
    }

    /// A slot for a request of `kind` (`None` for long-running ones), or a refusal.
    pub fn admit(&self, kind: RequestKind) -> Result<Option<Permit>, Refused> {
        let bucket = match kind {
            RequestKind::LongRunning => return Ok(None),
            RequestKind::ReadOnly => &self.read_only,
            RequestKind::Mutating => &self.mutating,
        };
        let before = bucket.current.fetch_add(1, Ordering::AcqRel);
        if bucket.limit != 0 && before >= bucket.limit {
            bucket.current.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused);
        }
        bucket.gauge.inc();
        Ok(Some(Permit(bucket.clone())))
    }
}

/// A request over its limit.
#[derive(Debug)]
pub struct Refused;

impl Refused {
    /// kube's answer: Go's `http.Error` text with `Retry-After: 1`.
    pub fn response(self) -> HttpResponse {
        too_many_requests(1)
    }
}

/// kube's 429 of its in-flight and priority-and-fairness filters: Go's `http.Error` text (not
/// a Status) with `Retry-After`.
pub fn too_many_requests(retry_after_seconds: u64) -> HttpResponse {
    let mut response = response::with_body(
        429,
        "text/plain; charset=utf-8",
        Body::full(Bytes::from(format!("{TOO_MANY_REQUESTS}\n"))),
    );
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// One admitted request's slot, given back when dropped.
pub struct Permit(Arc<Bucket>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.current.fetch_sub(1, Ordering::AcqRel);
        self.0.gauge.dec();
    }
}

/// Serves `request` with `handler` if `limits` admit it; kube's 429 if not.
pub async fn admit_then<B, F, Fut>(
    limits: &InflightLimits,
    request: http::Request<B>,
    handler: F,
) -> Result<Response<Guarded>, Infallible>
where
    F: FnOnce(http::Request<B>) -> Fut,
    Fut: Future<Output = Result<HttpResponse, Infallible>>,
{
    match limits.admit(RequestKind::of(request.method(), request.uri())) {
        Ok(permit) => Ok(Guarded::response(handler(request).await?, permit)),
        Err(refused) => Ok(Guarded::response(refused.response(), None)),
    }
}

/// A response body that keeps its request's slot until it is finished or dropped.
pub struct Guarded {
    body: Body,
    permit: Option<Permit>,
}

impl Guarded {
    pub fn response(response: HttpResponse, permit: Option<Permit>) -> Response<Guarded> {
        response.map(|body| Guarded { body, permit })
    }
}

impl HttpBody for Guarded {
    type Data = Chunk;
    type Error = Aborted;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Chunk>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            this.permit = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(method: Method, target: &str) -> RequestKind {
        RequestKind::of(&method, &target.parse().unwrap())
    }

    #[test]
    fn kubes_classification() {
        use RequestKind::*;
        assert_eq!(kind(Method::GET, "/api/v1/namespaces/a/pods?watch=1"), LongRunning);
        assert_eq!(kind(Method::GET, "/api/v1/watch/namespaces/a/pods/p"), LongRunning);
        assert_eq!(kind(Method::GET, "/apis/apps/v1/deployments?watch=true&resourceVersion=5"), LongRunning);
        assert_eq!(kind(Method::GET, "/api/v1/namespaces/a/pods/p/log"), LongRunning);
        assert_eq!(kind(Method::GET, "/debug/listwatch/history?resourceVersion=1"), LongRunning);
        assert_eq!(kind(Method::GET, "/api/v1/namespaces/a/pods?watch=0"), ReadOnly);
        assert_eq!(kind(Method::GET, "/api/v1/namespaces/a/pods/p"), ReadOnly);
        assert_eq!(kind(Method::GET, "/healthz"), ReadOnly);
        assert_eq!(kind(Method::GET, "/metrics"), ReadOnly);
        assert_eq!(kind(Method::POST, "/api/v1/namespaces/a/pods"), Mutating);
        assert_eq!(kind(Method::PUT, "/api/v1/namespaces/a/pods/p/status"), Mutating);
        assert_eq!(kind(Method::PATCH, "/api/v1/namespaces/a/pods/p"), Mutating);
        assert_eq!(kind(Method::DELETE, "/api/v1/namespaces/a/pods"), Mutating);
        // A POST to a watch-looking path is still a create, not a watch.
        assert_eq!(kind(Method::POST, "/api/v1/namespaces/a/pods?watch=1"), Mutating);
    }

    #[test]
    fn a_full_bucket_refuses_and_a_dropped_permit_frees_it() {
        let limits = InflightLimits::new(1, 0);
        let held = limits.admit(RequestKind::ReadOnly).unwrap();
        let refused = limits.admit(RequestKind::ReadOnly).err().expect("the second read is refused").response();
        assert_eq!(refused.status(), 429);
        assert_eq!(refused.headers()["retry-after"], "1");
        assert_eq!(refused.headers()["content-type"], "text/plain; charset=utf-8");
        // Long-running and mutating requests (0: unlimited) are not affected.
        assert!(limits.admit(RequestKind::LongRunning).unwrap().is_none());
        let writes: Vec<_> = (0..50).map(|_| limits.admit(RequestKind::Mutating).unwrap()).collect();
        drop(held);
        assert!(limits.admit(RequestKind::ReadOnly).is_ok());
        drop(writes);
    }

    #[tokio::test]
    async fn the_slot_lasts_until_the_body_is_done() {
        use http_body_util::BodyExt;
        let limits = InflightLimits::new(1, 1);
        let permit = limits.admit(RequestKind::Mutating).unwrap();
        let response = Guarded::response(response::json(200, Bytes::from_static(b"{}")), permit);
        assert!(limits.admit(RequestKind::Mutating).is_err(), "held while the body is unsent");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"{}");
        assert!(limits.admit(RequestKind::Mutating).is_ok(), "free once the body is sent");
    }
}
