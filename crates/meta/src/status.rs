//! `metav1.Status` and the API errors built from it.
//!
//! Every failure the server answers is one of these, with the HTTP code, `reason`, message
//! and details kube-apiserver would send (k8s.io/apimachinery `pkg/api/errors/errors.go`), so
//! clients that branch on `reason` or on `details.causes` behave as against a real cluster.

use serde::{Deserialize, Serialize};

use crate::validation::go_quote;

/// A `metav1.Status` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// List metadata; kube sets only `continue`, on an expired continue token.
    pub metadata: StatusListMeta,
    /// `Success` or `Failure`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What went wrong, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What went wrong, for programs (`NotFound`, `Conflict`, `Invalid`, ...); empty on success.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The object the error is about, and for some errors its causes or a retry delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code it is answered with; 0 on success.
    #[serde(default, skip_serializing_if = "is_zero_code")]
    pub code: u16,
}

fn is_zero_code(code: &u16) -> bool {
    *code == 0
}

/// The list metadata a Status carries (only `continue` is ever set, on an expired continue).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusListMeta {
    /// The continue token to start over with after an expired one.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
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
    /// The object's resource (kube puts the plural here, e.g. `pods`) or kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's uid, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual failures (one per invalid field, for a 422).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// How long to wait before retrying (for 429s and timeouts); 0 when not set.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One cause of an error: for 422s, a field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The kind of failure (`FieldValueInvalid`, `FieldValueRequired`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The failure, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The JSON path of the field (`metadata.name`); empty when the cause is not about a field.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl StatusCause {
    /// A cause from its three parts, as kube lists them.
    pub fn new(reason: &str, message: impl Into<String>, field: &str) -> Self {
        StatusCause { reason: reason.into(), message: message.into(), field: field.into() }
    }
}

impl Status {
    /// A `Success` status (what DELETE answers for most kinds).
    pub fn success(details: Option<StatusDetails>) -> Status {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusListMeta::default(),
            status: Some("Success".into()),
            message: String::new(),
            reason: String::new(),
            details,
            code: 0,
        }
    }

    /// A `Failure` Status with this code, reason, message and details.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>, details: Option<StatusDetails>) -> Status {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: StatusListMeta::default(),
            status: Some("Failure".into()),
            message: message.into(),
            reason: reason.into(),
            details,
            code,
        }
    }

    /// The Status as the JSON body of a response.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a Status always serializes")
    }
}

/// `resource` or `resource.group`, as kube names a resource in messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The lowercase plural (`configmaps`).
    pub resource: String,
}

impl GroupResource {
    /// A resource in a group, as the API spells them.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource { group: group.into(), resource: resource.into() }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// An error answered as a Status: its HTTP code is `status.code`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{} ({}): {}", .0.code, .0.reason, .0.message)]
pub struct ApiError(pub Box<Status>);

impl ApiError {
    fn new(code: u16, reason: &str, message: impl Into<String>, details: Option<StatusDetails>) -> ApiError {
        ApiError(Box::new(Status::failure(code, reason, message, details)))
    }

    /// The HTTP status code to answer with.
    pub fn code(&self) -> u16 {
        self.0.code
    }

    /// kube's machine-readable reason (`NotFound`, `Conflict`, ...).
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// The whole Status, to answer as the body.
    pub fn status(&self) -> &Status {
        &self.0
    }

    /// Seconds to put in `Retry-After`, if any.
    pub fn retry_after(&self) -> Option<u32> {
        self.0.details.as_ref().map(|d| d.retry_after_seconds).filter(|&s| s > 0)
    }

    fn details(gr: &GroupResource, name: &str) -> Option<StatusDetails> {
        Some(StatusDetails {
            name: name.into(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        })
    }

    /// 404 `<resource> "<name>" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("{gr} {} not found", go_quote(name)), Self::details(gr, name))
    }

    /// 404 for a path that names no resource.
    pub fn not_found_path() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(StatusDetails::default()),
        )
    }

    /// 409 `<resource> "<name>" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> ApiError {
        ApiError::new(409, "AlreadyExists", format!("{gr} {} already exists", go_quote(name)), Self::details(gr, name))
    }

    /// 409 `Operation cannot be fulfilled on <resource> "<name>": <why>`.
    pub fn conflict(gr: &GroupResource, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} {}: {why}", go_quote(name)),
            Self::details(gr, name),
        )
    }

    /// The optimistic-lock conflict of an update with a stale resourceVersion.
    pub fn modified_conflict(gr: &GroupResource, name: &str) -> ApiError {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `<Kind>[.group] "<name>" is invalid: <field>: <detail>, ...`. `kind` is the kind
    /// (`Pod`), or `ListOptions` with group `meta.k8s.io` for invalid list options.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> ApiError {
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        // kube's `ErrorList.ToAggregate()`: `field: message` each (`: message` for the empty
        // path), duplicates once.
        let mut summary: Vec<String> = Vec::new();
        for cause in &causes {
            let text = format!("{}: {}", cause.field, cause.message);
            if !summary.contains(&text) {
                summary.push(text);
            }
        }
        let summary = match summary.len() {
            0 => String::new(),
            1 => format!(": {}", summary[0]),
            _ => format!(": [{}]", summary.join(", ")),
        };
        let details =
            StatusDetails { name: name.into(), group: group.into(), kind: kind.into(), causes, ..Default::default() };
        ApiError::new(422, "Invalid", format!("{qualified} {} is invalid{summary}", go_quote(name)), Some(details))
    }

    /// kube's `NewGenericServerResponse(422, ...)`, what a patch that cannot apply answers: the
    /// reason `Invalid`, a fixed message, empty details; the cause itself is not shown.
    pub fn unprocessable_entity() -> ApiError {
        ApiError::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            Some(StatusDetails::default()),
        )
    }

    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message, None)
    }

    /// 403 `<resource> "<name>" is forbidden: <why>`.
    pub fn forbidden(gr: &GroupResource, name: &str, why: &str) -> ApiError {
        // kube's `NewForbidden`: no resource (a non-resource path), no name (a collection).
        let message = if gr.group.is_empty() && gr.resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {why}")
        } else {
            format!("{gr} {} is forbidden: {why}", go_quote(name))
        };
        ApiError::new(403, "Forbidden", message, Self::details(gr, name))
    }

    /// 405 `<verb> is not supported on resources of kind "<resource>"` (kube's wording).
    pub fn method_not_supported(gr: &GroupResource, action: &str) -> ApiError {
        let details = StatusDetails { group: gr.group.clone(), kind: gr.resource.clone(), ..Default::default() };
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{action} is not supported on resources of kind \"{gr}\""),
            Some(details),
        )
    }

    /// 406 for an `Accept` the server cannot produce.
    pub fn not_acceptable(message: impl Into<String>) -> ApiError {
        ApiError::new(406, "NotAcceptable", message, None)
    }

    /// 410 `Expired` (a resourceVersion or continue token too old).
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message, None)
    }

    /// 413 for a body or a value that is too large.
    pub fn request_entity_too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(413, "RequestEntityTooLarge", format!("Request entity too large: {}", message.into()), None)
    }

    /// 415 for a request body type the handler has no decoder for (kube's
    /// `NewUnsupportedMediaTypeError` with the serializers' media types).
    pub fn unsupported_media_type() -> ApiError {
        Self::unsupported_media_type_of(&[
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ])
    }

    /// 415 naming the media types the handler reads (a PATCH's patch types).
    pub fn unsupported_media_type_of(accepted: &[&str]) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// A refusal of go-restful's router (`415: Unsupported Media Type` for a Content-Type the
    /// route does not consume, `406: Not Acceptable...`), which kube-apiserver's
    /// `serviceErrorHandler` answers as a generic Status carrying the router's text.
    pub fn router_refusal(code: u16, message: &str) -> ApiError {
        let reason = match code {
            406 => "NotAcceptable",
            415 => "UnsupportedMediaType",
            404 => "NotFound",
            _ => "BadRequest",
        };
        ApiError::new(code, reason, message, Some(StatusDetails::default()))
    }

    /// 429 with `Retry-After`.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> ApiError {
        let details = StatusDetails { retry_after_seconds, ..Default::default() };
        ApiError::new(429, "TooManyRequests", message, Some(details))
    }

    /// 504 `Timeout: Too large resource version: <requested>, current: <current>` with the
    /// `ResourceVersionTooLarge` cause clients detect it by (`retry_after` 1 from the watch
    /// cache, 0 from storage).
    pub fn too_large_resource_version(requested: i64, current: i64, retry_after_seconds: u32) -> ApiError {
        let details = StatusDetails {
            causes: vec![StatusCause::new("ResourceVersionTooLarge", "Too large resource version", "")],
            retry_after_seconds,
            ..Default::default()
        };
        ApiError::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
            Some(details),
        )
    }

    /// 504 for a request that did not finish in time.
    pub fn timeout(message: impl Into<String>, retry_after_seconds: u32) -> ApiError {
        let details = StatusDetails { retry_after_seconds, ..Default::default() };
        ApiError::new(504, "Timeout", message, Some(details))
    }

    /// 500: only for the server's own failures, never for a client's mistake.
    pub fn internal(message: impl std::fmt::Display) -> ApiError {
        let details = StatusDetails {
            causes: vec![StatusCause::new("UnexpectedServerResponse", message.to_string(), "")],
            ..Default::default()
        };
        ApiError::new(500, "InternalError", format!("Internal error occurred: {message}"), Some(details))
    }

    /// 500 for a request whose handler panicked: kube-apiserver's plain-text answer
    /// ("This request caused apiserver to panic. Look in the logs for details.") as client-go
    /// turns it into a Status (`NewGenericServerResponse` with the body as an
    /// `UnexpectedServerResponse` cause).
    pub fn request_panicked() -> ApiError {
        let body = "This request caused apiserver to panic. Look in the logs for details.";
        let details = StatusDetails {
            causes: vec![StatusCause::new("UnexpectedServerResponse", body, "")],
            ..Default::default()
        };
        ApiError::new(
            500,
            "InternalError",
            format!("an error on the server ({body:?}) has prevented the request from succeeding"),
            Some(details),
        )
    }

    /// 405 from go-restful's router: the path exists but takes no request with this method
    /// (kube-apiserver's `serviceErrorHandler` answers it as a generic Status, without the
    /// router's `Allow` header).
    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(StatusDetails::default()),
        )
    }

    /// 503 when storage cannot be reached.
    pub fn service_unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(503, "ServiceUnavailable", message, None)
    }

    /// Adds a continue token to the Status's list metadata (the expired-continue 410).
    pub fn with_continue(mut self, token: String) -> ApiError {
        self.0.metadata.continue_token = Some(token);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_matches_kube_apiserver() {
        let e = ApiError::modified_conflict(&GroupResource::new("", "configmaps"), "foo");
        let json: serde_json::Value = serde_json::from_slice(&e.status().to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
             "message":"Operation cannot be fulfilled on configmaps \"foo\": the object has been modified; please apply your changes to the latest version and try again",
             "reason":"Conflict","details":{"name":"foo","kind":"configmaps"},"code":409})
        );
    }

    #[test]
    fn invalid_list_options() {
        let e = ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![StatusCause::new(
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents is forbidden for list",
                "sendInitialEvents",
            )],
        );
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.status().message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
        );
    }

    #[test]
    fn too_large_resource_version_has_the_cause_and_retry() {
        let e = ApiError::too_large_resource_version(100, 90, 1);
        assert_eq!(e.retry_after(), Some(1));
        assert_eq!(e.status().message, "Timeout: Too large resource version: 100, current: 90");
        assert_eq!(e.status().details.as_ref().unwrap().causes[0].reason, "ResourceVersionTooLarge");
    }
}
