//! Errors, and the server's `Status` they carry.
//!
//! Every failure the server reports — a non-2xx response or a watch `ERROR` event — becomes
//! [`Error::Api`] holding the server's own [`Status`] (code, reason, message, details), so callers
//! branch on what the server said rather than on text. A non-2xx body that is not a Status (a
//! proxy's HTML page, say) is turned into one the way client-go does it: the HTTP code, a reason
//! derived from the code, and the body as the message.
//!
//! The classification helpers ([`Error::is_expired`], [`Error::is_too_large_resource_version`],
//! [`Error::is_too_many_requests`], [`Error::is_connection_refused`], [`Error::is_probable_eof`])
//! are the predicates client-go's reflector and RetryWatcher decide with (spec
//! client-machinery.md §1.2 step 3, §1.2 step 5, §1.10).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `metav1.Status`, as the server sends it in error responses and watch `ERROR` events.
///
/// Decoded leniently: every field is optional, unknown fields are ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `Failure` for every error (`Success` only on some DELETE answers).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// What went wrong, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `Expired`, `Gone`, `NotFound`, `TooManyRequests`, `Timeout`, ...
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The object the error is about, and for some errors its causes or a retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code (filled from the response when the body leaves it out).
    #[serde(default)]
    pub code: u16,
    /// ListMeta: a 410 for an expired continue token carries a fresh inconsistent-continue
    /// token here (spec apiserver-protocol.md §7.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<StatusListMeta>,
}

/// `metav1.StatusDetails`: which object an error is about, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The object's name, when the error is about one object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's API group (empty for the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The object's resource (kube puts the plural here) or kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's uid, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual failures (one per invalid field, for a 422 `Invalid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// How long the server asks to wait before retrying (429s, timeouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// `metav1.StatusCause`: one failure behind an error, usually of one field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The kind of failure (`FieldValueInvalid`, `FieldValueRequired`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The failure, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The JSON path of the field (`metadata.name`); empty when not about a field.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// The list metadata a Status carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusListMeta {
    /// The continue token to start over with after an expired one.
    #[serde(default, rename = "continue", skip_serializing_if = "String::is_empty")]
    pub continue_token: String,
    /// A resourceVersion, when the server sets one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Any other ListMeta fields, kept as sent.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Status {
    /// A Status for a response whose body is not one: what client-go's
    /// `newUnstructuredResponseError` builds (code, the reason the code implies, the body text).
    pub fn from_http(code: u16, body: &[u8]) -> Status {
        let text = String::from_utf8_lossy(body).trim().to_string();
        let reason = reason_for_code(code);
        let message = if text.is_empty() {
            format!("the server responded with the status code {code} but did not return more information")
        } else {
            text
        };
        Status { status: "Failure".into(), message, reason: reason.into(), code, ..Status::default() }
    }

    /// The server's `retryAfterSeconds`, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.details.as_ref()?.retry_after_seconds.filter(|s| *s > 0).map(|s| Duration::from_secs(u64::from(s)))
    }

    /// Whether a cause of this type is listed.
    pub fn has_cause(&self, reason: &str) -> bool {
        self.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == reason))
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = if self.message.is_empty() { "(no message)" } else { &self.message };
        match self.reason.as_str() {
            "" => write!(f, "{message} (HTTP {})", self.code),
            reason => write!(f, "{message} (HTTP {}, {reason})", self.code),
        }
    }
}

/// The reason client-go gives a bare HTTP code (apimachinery `errors.NewGenericServerResponse`).
fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// Everything that can go wrong talking to an apiserver.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a Status: a non-2xx response, or a watch `ERROR` event.
    #[error("the server reported: {0}")]
    Api(Box<Status>),
    /// The request could not be sent or its response head not received (connect, TLS, reset).
    #[error("request to {url} failed: {source}")]
    Request {
        /// The URL of the request.
        url: String,
        /// What the HTTP client reported.
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// Reading a response body failed part-way.
    #[error("reading the response body: {0}")]
    Body(#[source] hyper::Error),
    /// The connection failed or ended where it must not (e.g. in the middle of a watch event).
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes could not be decoded.
    #[error("decoding {what}: {message}")]
    Decode {
        /// What was being decoded (`a watch event`, `a list`).
        what: &'static str,
        /// Why it did not decode.
        message: String,
    },
    /// A wait ran out: `what` names it (a request, or the gap between watch events).
    #[error("{what} timed out after {after:?}")]
    Timeout {
        /// What was waited for.
        what: &'static str,
        /// How long it was waited for.
        after: Duration,
    },
    /// A WebSocket watch failed (handshake or stream).
    #[error("websocket: {0}")]
    WebSocket(#[source] Box<tokio_tungstenite::tungstenite::Error>),
    /// The kubeconfig or explicit configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// TLS material could not be loaded.
    #[error("TLS: {0}")]
    Tls(String),
    /// An exec credential plugin failed: which command, and why (its exit status and stderr, or
    /// what is wrong with what it printed).
    #[error("exec credential plugin `{command}`: {why}")]
    ExecPlugin {
        /// The plugin's command, as the kubeconfig names it.
        command: String,
        /// Its exit status and stderr, or what is wrong with what it printed.
        why: String,
    },
    /// The caller asked for something this client refuses (e.g. RetryWatcher from "0").
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl Error {
    pub(crate) fn decode(what: &'static str, message: impl std::fmt::Display) -> Error {
        Error::Decode { what, message: message.to_string() }
    }

    /// The server's Status, for [`Error::Api`].
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(status) => Some(status),
            _ => None,
        }
    }

    /// The HTTP code the server reported, for [`Error::Api`].
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// 410 with reason `Expired` or `Gone` (servers up to 1.17 used `Gone`): the resourceVersion
    /// or continue token is older than the server keeps. client-go `isExpiredError`.
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(|s| s.code == 410 || s.reason == "Expired" || s.reason == "Gone")
    }

    /// "Too large resource version": the server has not caught up with the resourceVersion asked
    /// for (504 with cause `ResourceVersionTooLarge`; 1.17.0–1.18.5 servers only said it in the
    /// message). client-go `isTooLargeResourceVersionError`.
    pub fn is_too_large_resource_version(&self) -> bool {
        let Some(status) = self.status() else { return false };
        if status.has_cause("ResourceVersionTooLarge") {
            return true;
        }
        if status.code != 504 && status.reason != "Timeout" {
            return false;
        }
        let in_causes = status
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.message.contains("Too large resource version")));
        in_causes || status.message.contains("Too large resource version")
    }

    /// 429 TooManyRequests (API Priority and Fairness, or the debug throttle).
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(|s| s.code == 429 || s.reason == "TooManyRequests")
    }

    /// 401 or 403.
    pub fn is_unauthorized_or_forbidden(&self) -> bool {
        self.status().is_some_and(|s| s.code == 401 || s.code == 403)
    }

    /// The server's Retry-After, if it gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        self.status().and_then(Status::retry_after)
    }

    /// The TCP connection was refused: nothing listens there (yet). client-go re-watches after a
    /// backoff instead of relisting (`utilnet.IsConnectionRefused`).
    pub fn is_connection_refused(&self) -> bool {
        self.io_kinds().any(|kind| kind == std::io::ErrorKind::ConnectionRefused)
    }

    /// The connection ended under us (reset, broken pipe, a body cut short, an idle watch timing
    /// out). client-go treats these as a watch that simply ended (`net.IsProbableEOF`,
    /// `net.IsTimeout`): re-watch from the last resourceVersion, no relist.
    pub fn is_probable_eof(&self) -> bool {
        use std::io::ErrorKind::*;
        if matches!(self, Error::Timeout { .. }) {
            return true;
        }
        if let Error::WebSocket(e) = self {
            use tokio_tungstenite::tungstenite::Error as Ws;
            if matches!(**e, Ws::ConnectionClosed | Ws::AlreadyClosed | Ws::Protocol(_)) {
                return true;
            }
        }
        if self
            .io_kinds()
            .any(|k| matches!(k, ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | TimedOut))
        {
            return true;
        }
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(err) = source {
            if let Some(hyper_error) = err.downcast_ref::<hyper::Error>()
                && (hyper_error.is_incomplete_message()
                    || hyper_error.is_canceled()
                    || hyper_error.is_closed()
                    || hyper_error.is_body_write_aborted())
            {
                return true;
            }
            // h2 reports a GOAWAY or a reset stream as its own error type, which this crate does
            // not name; its text is stable.
            let text = err.to_string();
            if text.contains("connection reset") || text.contains("stream no longer needed") || text.contains("GOAWAY")
            {
                return true;
            }
            source = err.source();
        }
        false
    }

    fn io_kinds(&self) -> impl Iterator<Item = std::io::ErrorKind> + '_ {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(self);
        std::iter::from_fn(move || {
            while let Some(err) = source {
                source = err.source();
                if let Some(io) = err.downcast_ref::<std::io::Error>() {
                    return Some(io.kind());
                }
            }
            None
        })
    }
}

impl From<Box<Status>> for Error {
    fn from(status: Box<Status>) -> Self {
        Error::Api(status)
    }
}

impl From<Status> for Error {
    fn from(status: Status) -> Self {
        Error::Api(Box::new(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(json: &str) -> Error {
        Error::from(serde_json::from_str::<Status>(json).unwrap())
    }

    #[test]
    fn classifies_expired_and_gone() {
        assert!(api(r#"{"code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}"#).is_expired());
        assert!(api(r#"{"code":410,"reason":"Gone"}"#).is_expired());
        assert!(!api(r#"{"code":404,"reason":"NotFound"}"#).is_expired());
    }

    #[test]
    fn classifies_too_large_resource_version_in_all_server_variants() {
        let current = r#"{"code":504,"reason":"Timeout","message":"Timeout: Too large resource version: 9, current: 5","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1}}"#;
        assert!(api(current).is_too_large_resource_version());
        assert_eq!(api(current).retry_after(), Some(Duration::from_secs(1)));
        // 1.17.0–1.18.5: no cause type, only the text.
        let old = r#"{"code":504,"reason":"Timeout","message":"Too large resource version: 9, current: 5"}"#;
        assert!(api(old).is_too_large_resource_version());
        assert!(!api(r#"{"code":504,"reason":"Timeout","message":"slow"}"#).is_too_large_resource_version());
    }

    #[test]
    fn non_status_bodies_become_statuses() {
        let status = Status::from_http(503, b"<html>down</html>");
        assert_eq!(status.reason, "ServiceUnavailable");
        assert_eq!(status.message, "<html>down</html>");
        assert!(Error::from(Status::from_http(429, b"")).is_too_many_requests());
    }

    #[test]
    fn io_errors_are_classified_through_the_source_chain() {
        let refused = Error::WebSocket(Box::new(tokio_tungstenite::tungstenite::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        ))));
        assert!(refused.is_connection_refused());
        assert!(!refused.is_probable_eof());
        let cut = Error::Io { what: "watch", source: std::io::ErrorKind::UnexpectedEof.into() };
        assert!(cut.is_probable_eof());
        assert!(!Error::decode("x", "y").is_probable_eof());
        assert!(Error::Timeout { what: "idle", after: Duration::from_secs(1) }.is_probable_eof());
    }
}
