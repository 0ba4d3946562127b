//! Plain (non-watch) requests: send, read the whole answer with a timeout, and keep status,
//! headers and body bytes so a failing check can show exactly what the server said.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use listwatch_client::ExecCredentials;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::{CheckFailure, Target};

/// How long a non-watch request may take, from sending to the last body byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// For how long a 429 (e.g. a watch cache re-initialising after a reset) is retried, honouring
/// `Retry-After`, before it is taken as the answer.
pub const RETRY_429_FOR: Duration = Duration::from_secs(15);

/// A complete answer.
#[derive(Clone, Debug)]
pub struct ApiResponse {
    pub method: Method,
    pub path: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl ApiResponse {
    /// The body as JSON, or a failure showing it.
    pub fn json(&self) -> Result<Value, CheckFailure> {
        serde_json::from_slice(&self.body).map_err(|e| {
            CheckFailure::failed_with(format!("{} {}: body is not JSON: {e}", self.method, self.path), self.describe())
        })
    }

    /// The body as JSON if the status is `expected`, else a failure showing the answer.
    pub fn expect(&self, expected: u16) -> Result<Value, CheckFailure> {
        if self.status != expected {
            return Err(CheckFailure::failed_with(
                format!("{} {}: expected HTTP {expected}, got {}", self.method, self.path, self.status),
                self.describe(),
            ));
        }
        self.json()
    }

    /// The answer as a person would want to see it in a report.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}\nHTTP {}\n", self.method, self.path, self.status);
        for name in ["content-type", "retry-after"] {
            if let Some(value) = self.headers.get(name) {
                text.push_str(&format!("{name}: {}\n", String::from_utf8_lossy(value.as_bytes())));
            }
        }
        if self.content_type().starts_with("application/vnd.kubernetes.protobuf") {
            text.push_str(&crate::proto::hex(&self.body));
        } else {
            text.push_str(&truncate(&self.body));
        }
        text
    }

    /// The `Content-Type` header ("" when absent).
    pub fn content_type(&self) -> &str {
        self.headers.get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }
}

/// An error with its causes, `outer: inner: innermost` (reqwest's own text stops at the outer
/// one, e.g. "error sending request", and leaves out the reason, e.g. an untrusted certificate).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Body bytes for a report: lossy UTF-8, cut at 4 KiB.
pub fn truncate(bytes: &[u8]) -> String {
    const MAX: usize = 4096;
    if bytes.len() <= MAX {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    format!("{}… ({} bytes in all)", String::from_utf8_lossy(&bytes[..MAX]), bytes.len())
}

/// The exec plugin's credentials a request was sent with, to re-run the plugin if they are
/// refused.
pub(crate) type UsedCredentials = Option<Arc<ExecCredentials>>;

impl Target {
    /// The bearer token to send: the fixed one, or the exec plugin's (running it when the kept
    /// credentials expired), with the plugin's credentials it came from.
    pub(crate) async fn bearer_token(&self) -> Result<(Option<String>, UsedCredentials), CheckFailure> {
        let Some(exec) = &self.exec else { return Ok((self.token.clone(), None)) };
        let credentials = exec.credentials().await.map_err(|e| CheckFailure::failed(e.to_string()))?;
        Ok((credentials.token.clone(), Some(credentials)))
    }

    /// After a 401 to a request sent with `used`: runs the exec plugin again and says whether
    /// it gave a new token worth one more try.
    pub(crate) async fn renewed_after_401(&self, used: &UsedCredentials) -> Result<bool, CheckFailure> {
        let (Some(exec), Some(used)) = (&self.exec, used) else { return Ok(false) };
        exec.refused(used);
        let fresh = exec.credentials().await.map_err(|e| CheckFailure::failed(e.to_string()))?;
        Ok(fresh.token != used.token)
    }

    /// A request with the target's credentials and this `Accept` header, and the exec
    /// plugin's credentials it carries.
    pub(crate) async fn request_accepting(
        &self,
        method: Method,
        path_and_query: &str,
        accept: &str,
    ) -> Result<(reqwest::RequestBuilder, UsedCredentials), CheckFailure> {
        let mut request = self.client.request(method, self.url(path_and_query)).header(reqwest::header::ACCEPT, accept);
        let (token, used) = self.bearer_token().await?;
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Ok((request, used))
    }

    /// Sends a request with a JSON body (if any), accepting JSON, and reads the whole answer;
    /// a 429 is retried (after `Retry-After`) for a while, as every client does.
    pub(crate) async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
    ) -> Result<ApiResponse, CheckFailure> {
        let body = body.map(|b| ("application/json", Bytes::from(serde_json::to_vec(b).unwrap_or_default())));
        self.send_as(method, path_and_query, "application/json", body).await
    }

    /// [`Target::send`] with this `Accept` header and a body of any content type (given as
    /// `(content type, bytes)`).
    pub(crate) async fn send_as(
        &self,
        method: Method,
        path_and_query: &str,
        accept: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<ApiResponse, CheckFailure> {
        let started = Instant::now();
        let mut renewed = false;
        loop {
            let (mut request, used) = self.request_accepting(method.clone(), path_and_query, accept).await?;
            if let Some((content_type, bytes)) = &body {
                request = request.header(reqwest::header::CONTENT_TYPE, *content_type).body(bytes.clone());
            }
            let response = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let response = request.send().await?;
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>(ApiResponse {
                    method: method.clone(),
                    path: path_and_query.to_string(),
                    status,
                    headers,
                    body,
                })
            })
            .await
            .map_err(|_| {
                CheckFailure::failed(format!(
                    "{method} {path_and_query}: no complete answer within {} s",
                    REQUEST_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| CheckFailure::failed(format!("{method} {path_and_query}: {}", error_chain(&e))))?;
            if response.status == 429
                && let Some(wait) = retry_after(&response.headers)
                && started.elapsed() + wait < RETRY_429_FOR
            {
                tokio::time::sleep(wait).await;
                continue;
            }
            if response.status == 401 && !renewed && self.renewed_after_401(&used).await? {
                renewed = true;
                continue;
            }
            return Ok(response);
        }
    }

    pub(crate) async fn get(&self, path_and_query: &str) -> Result<ApiResponse, CheckFailure> {
        self.send(Method::GET, path_and_query, None).await
    }

    /// A GET with this `Accept` header.
    pub(crate) async fn get_as(&self, path_and_query: &str, accept: &str) -> Result<ApiResponse, CheckFailure> {
        self.send_as(Method::GET, path_and_query, accept, None).await
    }
}

/// The `Retry-After` delay in seconds, if the header is there.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds.clamp(1, 5)))
}

/// A `metav1.Status` body's fields that checks assert on.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub kind: String,
    pub status: String,
    pub code: i64,
    pub reason: String,
    pub message: String,
    pub details: Value,
    pub continue_token: String,
}

impl Status {
    pub fn from_json(value: &Value) -> Status {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Status {
            kind: text(&value["kind"]),
            status: text(&value["status"]),
            code: value["code"].as_i64().unwrap_or_default(),
            reason: text(&value["reason"]),
            message: text(&value["message"]),
            details: value["details"].clone(),
            continue_token: text(&value["metadata"]["continue"]),
        }
    }
}
