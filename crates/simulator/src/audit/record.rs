//! What the server saw of its clients, as data: one [`Request`] per API request, with the
//! answer it got and, for a LIST or a WATCH, what was served. The server records these (with
//! `serve --audit-clients`, and always under `listwatch simulate`), the runner merges the
//! records of several servers, and [`super::judge`] reads nothing else.
//!
//! Times are milliseconds since the Unix epoch, so records of several server processes share
//! one clock. resourceVersions are `i64`, as Kubernetes parses them.

use serde::{Deserialize, Serialize};

/// The verb of a request, as kube's request info names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// A LIST (a collection GET without `watch`).
    List,
    /// A WATCH (`watch=true` or the legacy `/watch/` path).
    Watch,
    /// A GET of one object.
    Get,
    /// Create, update, patch, delete, deletecollection: a write.
    Write,
}

/// What a request asked about: kube's scope of a list or watch (the resource, optionally one
/// namespace and the selectors), or the one object of a GET or a write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource's plural name.
    pub resource: String,
    /// The namespace; `None` for all namespaces (or a cluster-scoped resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The `labelSelector` parameter, if not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// The `fieldSelector` parameter, if not empty (a legacy `/watch/NS/NAME` becomes
    /// `metadata.name=NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
}

/// The list and watch parameters a request sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    /// `resourceVersion` as sent (`None` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version_match: Option<String>,
    /// `sendInitialEvents`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_initial_events: Option<bool>,
    /// `allowWatchBookmarks=true`.
    #[serde(default)]
    pub allow_watch_bookmarks: bool,
    /// `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Whether a `continue` token was sent (a page after the first).
    #[serde(default)]
    pub continued: bool,
    /// `timeoutSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
}

impl Params {
    /// The resourceVersion as a number, when it is one above 0 (`""`, `"0"` and garbage are
    /// `None`).
    pub fn numeric_resource_version(&self) -> Option<i64> {
        self.resource_version.as_deref().and_then(|rv| rv.parse::<i64>().ok()).filter(|rv| *rv > 0)
    }

    /// Whether the request asks for the current state rather than a point to resume from:
    /// `resourceVersion` absent, `""` or `"0"`.
    pub fn from_current_state(&self) -> bool {
        matches!(self.resource_version.as_deref(), None | Some("" | "0"))
    }
}

/// The answer's status line, as far as the audit cares.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The HTTP status code (200 for a watch that started, whatever came in its stream).
    pub code: u16,
    /// The Status `reason` of an error answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The Status `message` of an error answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The `Retry-After` header, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

impl Answer {
    /// Whether the answer is an error (4xx or 5xx).
    pub fn is_error(&self) -> bool {
        self.code >= 400
    }
}

/// What a LIST served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListServed {
    /// The list's `metadata.resourceVersion`: the state it shows.
    pub resource_version: i64,
    /// Items on this page.
    pub items: usize,
    /// Whether a `continue` token came with it (more pages to read).
    pub more: bool,
}

/// How a watch stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamEnd {
    /// Its deadline (`timeoutSeconds`, or the server's random one) passed: a normal end.
    Timeout,
    /// The server ended it early without an ERROR event: a dropped or slow watcher, a cache
    /// reset, a shutdown.
    ServerClosed,
    /// An ERROR event ended it.
    Error,
    /// Cut mid-event (an injected network fault).
    Cut,
    /// The client went away (closed the connection or the stream).
    ClientGone,
    /// The server went away (killed or restarted) while the stream ran, so what it delivered
    /// last is not known (set by whoever read the records before the server went).
    Lost,
}

/// What a WATCH served, kept up to date while the stream runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchServed {
    /// For a watch that starts with the current state (`resourceVersion` `""` or `"0"`, or a
    /// streaming list): the resourceVersion of that state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_resource_version: Option<i64>,
    /// The highest resourceVersion of an event or bookmark written whole to the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<i64>,
    /// ADDED, MODIFIED and DELETED events written.
    pub events: u64,
    /// Bookmarks written (the initial-events-end one included).
    pub bookmarks: u64,
    /// The resourceVersion of the last bookmark written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_bookmark: Option<i64>,
    /// The ERROR event that ended the stream: its Status code and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Answer>,
    /// When the server wrote the last thing it wrote (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write_ms: Option<u64>,
    /// When the stream went silent for good (the `stall` fault), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_ms: Option<u64>,
    /// When it ended (ms since the epoch); `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// How it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<StreamEnd>,
}

/// One API request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// The client: its authenticated user, else its User-Agent and source address.
    pub client: String,
    /// The server that answered (several serve one client in an HA scenario).
    pub server: String,
    /// When it arrived (ms since the epoch).
    pub at_ms: u64,
    /// What it did.
    pub verb: Verb,
    /// What it asked about.
    pub scope: Scope,
    /// For a GET or a write: the object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The list and watch parameters.
    #[serde(default)]
    pub params: Params,
    /// The answer.
    pub answer: Answer,
    /// For a LIST that succeeded: what it served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListServed>,
    /// For a WATCH that started: what it served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchServed>,
    /// For a GET or a write that succeeded: the object's resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_resource_version: Option<i64>,
}

impl Request {
    /// One line naming the request, for a finding's evidence: when, what, where, which
    /// resourceVersion, and the answer.
    pub fn describe(&self, epoch_ms: u64) -> String {
        let verb = match self.verb {
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Get => "GET",
            Verb::Write => "WRITE",
        };
        let mut line =
            format!("{:.3} s {verb} {}", self.at_ms.saturating_sub(epoch_ms) as f64 / 1000.0, scope_text(&self.scope));
        if let Some(rv) = &self.params.resource_version {
            line.push_str(&format!(" resourceVersion={rv:?}"));
        }
        if self.params.send_initial_events == Some(true) {
            line.push_str(" sendInitialEvents=true");
        }
        if self.params.continued {
            line.push_str(" continue=…");
        }
        line.push_str(&format!(" → {}", self.answer.code));
        if let Some(reason) = &self.answer.reason {
            line.push_str(&format!(" {reason}"));
        }
        if let Some(list) = &self.list {
            line.push_str(&format!(
                " (list at {}{})",
                list.resource_version,
                if list.more { ", more pages" } else { "" }
            ));
        }
        if let Some(watch) = &self.watch {
            if let Some(delivered) = watch.delivered {
                line.push_str(&format!(" (delivered up to {delivered})"));
            }
            if let Some(error) = &watch.error {
                line.push_str(&format!(" (ERROR {} in the stream)", error.code));
            }
        }
        line
    }
}

/// `group/resource` with the namespace and selectors, as a finding names a scope.
pub fn scope_text(scope: &Scope) -> String {
    let resource =
        if scope.group.is_empty() { scope.resource.clone() } else { format!("{}.{}", scope.resource, scope.group) };
    let mut text = match &scope.namespace {
        Some(namespace) => format!("{resource} in {namespace}"),
        None => resource,
    };
    if let Some(labels) = &scope.label_selector {
        text.push_str(&format!(" labelSelector={labels:?}"));
    }
    if let Some(fields) = &scope.field_selector {
        text.push_str(&format!(" fieldSelector={fields:?}"));
    }
    text
}
