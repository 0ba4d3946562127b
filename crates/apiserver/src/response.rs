//! Building responses: objects, lists, and Status errors, with kube-apiserver's headers.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use listwatch_meta::{ApiError, Status};

use crate::transport::body::Body;

pub type HttpResponse = Response<Body>;

/// A response with kube's generic headers (`Cache-Control: no-cache, private`).
pub fn with_body(code: u16, content_type: &str, body: Body) -> HttpResponse {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static("application/json")),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    response
}

pub fn json(code: u16, bytes: impl Into<Bytes>) -> HttpResponse {
    with_body(code, "application/json", Body::full(bytes.into()))
}

/// An error as its Status, with `Retry-After` when the Status asks for one.
pub fn error(e: &ApiError) -> HttpResponse {
    let status = e.status();
    let mut response = json(e.code(), Bytes::from(status.to_json()));
    // For the client audit: what the Status said, without parsing the body again.
    response.extensions_mut().insert(ErrorAnswer { reason: status.reason.clone(), message: status.message.clone() });
    if let Some(seconds) = e.retry_after() {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Go's net/http refusal of a request it could not read (see [`crate::request::Refusal`]):
/// its status line, a plain-text body, and the connection closed after it.
pub fn refused(refusal: &crate::request::Refusal) -> HttpResponse {
    let mut response = Response::new(Body::full(Bytes::from_static(refusal.body.as_bytes())));
    *response.status_mut() = StatusCode::from_u16(refusal.code).unwrap_or(StatusCode::BAD_REQUEST);
    response.extensions_mut().insert(hyper::ext::ReasonPhrase::from_static(refusal.reason.as_bytes()));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A `Status` of success (most kinds answer DELETE with one).
pub fn status(code: u16, status: &Status) -> HttpResponse {
    json(code, Bytes::from(status.to_json()))
}

/// Adds one `Warning: 299 - "<text>"` header per warning (kube-apiserver's warning headers).
pub fn with_warnings(mut response: HttpResponse, warnings: &[String]) -> HttpResponse {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

// What handlers leave on a response for the client audit (`crate::client_audit`), which reads
// them when it records the answer.

/// A LIST's page as served: left on the response by the LIST handler.
#[derive(Clone, Copy, Debug)]
pub struct ListAnswer(pub listwatch_simulator::audit::record::ListServed);

/// The Status of an error answer: left on the response by `response::error`.
#[derive(Clone, Debug)]
pub struct ErrorAnswer {
    /// The Status reason.
    pub reason: String,
    /// The Status message.
    pub message: String,
}

/// The resourceVersion of the object a GET answered with.
#[derive(Clone, Copy, Debug)]
pub struct ObjectVersion(pub i64);
