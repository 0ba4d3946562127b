//! The client audit's recorder (`serve --audit-clients`, and every server `listwatch simulate`
//! starts): what each client asked and what it was answered and sent, as
//! `listwatch_simulator::audit::record::Request`s, judged on demand by the audit's rules
//! (`GET /debug/listwatch/clients`, and `/metrics`). Not kube's audit log: that records
//! requests for people; this judges clients.
//!
//! The recorder wraps every connection's service ([`ClientAudit::begin`] before the request,
//! [`Recording::finish`] on its answer), so a 429 of the in-flight limit or of an injected
//! throttle is seen like any answer. Handlers leave what they served on the response (a
//! LIST's resourceVersion, a GET's object version: `crate::response`'s annotations); a watch's
//! pump reports what it wrote as it writes ([`stream::WatchTap`]). Storage's own change log, kept for a while
//! ([`changes`]), names what a client missed.
//!
//! * [`identity`]: who a client is;
//! * [`stream`]: a watch's progress, from the pump;
//! * [`changes`]: storage's recent changes.

pub mod changes;
pub mod identity;
pub mod stream;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use listwatch_simulator::audit::record::{Answer, Params, Request, Scope, Verb};
use listwatch_simulator::audit::{self, Context, Report, Thresholds};
use parking_lot::Mutex;

use crate::request::{self, Query, ResourceRequest};
use crate::response::{ErrorAnswer, ListAnswer, ObjectVersion};
use stream::WatchTap;
pub use stream::now_ms;

/// At most this many requests are kept (the oldest go first): a long-running server's audit
/// judges its recent past.
const MAX_REQUESTS: usize = 200_000;

/// The requests recorded, with the taps of their watches.
pub struct ClientAudit {
    /// The server's name in the records.
    pub server: String,
    entries: Mutex<VecDeque<Entry>>,
    /// Storage's recent changes.
    pub changes: changes::ChangeLog,
    /// The thresholds `/debug/listwatch/clients` and `/metrics` judge with.
    pub thresholds: Thresholds,
    /// When the audit began (ms since the epoch).
    pub started_ms: u64,
}

struct Entry {
    request: Request,
    tap: Option<Arc<WatchTap>>,
}

/// The peer of a connection, put on each of its requests by the server.
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub SocketAddr);

impl ClientAudit {
    /// An empty audit for the server named `server`, judging with `thresholds`.
    pub fn new(server: &str, thresholds: Thresholds) -> ClientAudit {
        ClientAudit {
            server: server.to_string(),
            entries: Mutex::new(VecDeque::new()),
            changes: changes::ChangeLog::default(),
            thresholds,
            started_ms: now_ms(),
        }
    }

    /// Starts recording a request, if it is an API request of a resource: who asks, what, with
    /// which parameters. A watch gets its tap now, on the request, for the handler to hand to
    /// the pump.
    pub fn begin(&self, parts: &mut http::request::Parts, client: String) -> Option<Recording> {
        let path = request::decode_path(parts.uri.path())?;
        let query = Query::parse(parts.uri.query());
        let resource_request = request::parse(&parts.method, &path, &query)?;
        if resource_request.subresource.is_some() {
            return None;
        }
        let verb = match resource_request.verb {
            request::Verb::List => Verb::List,
            request::Verb::Watch => Verb::Watch,
            request::Verb::Get => Verb::Get,
            _ => Verb::Write,
        };
        let request = Request {
            client,
            server: self.server.clone(),
            at_ms: now_ms(),
            verb,
            scope: scope_of(&resource_request, &query),
            name: resource_request.name.clone().filter(|_| !resource_request.legacy_watch),
            params: params_of(&query),
            answer: Answer::default(),
            list: None,
            watch: None,
            object_resource_version: None,
        };
        let tap = (verb == Verb::Watch).then(|| {
            let tap = Arc::new(WatchTap::default());
            parts.extensions.insert(tap.clone());
            tap
        });
        Some(Recording { request, tap })
    }

    fn keep(&self, entry: Entry) {
        let mut entries = self.entries.lock();
        if entries.len() == MAX_REQUESTS {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    /// Every request kept, watches as far as they have got.
    pub fn requests(&self) -> Vec<Request> {
        let entries = self.entries.lock();
        entries
            .iter()
            .map(|entry| {
                let mut request = entry.request.clone();
                if let Some(tap) = &entry.tap {
                    request.watch = Some(tap.served());
                }
                request
            })
            .collect()
    }

    /// The audit's findings on every client so far.
    pub fn report(&self) -> Report {
        let requests = self.requests();
        let history = self.changes.snapshot();
        let context =
            Context { epoch_ms: self.started_ms, end_ms: now_ms(), stopped: Default::default(), blind: Vec::new() };
        audit::judge(&requests, &history, &context, &self.thresholds)
    }
}

/// A request being recorded.
pub struct Recording {
    request: Request,
    tap: Option<Arc<WatchTap>>,
}

impl Recording {
    /// Records the answer (and what the handlers left on it) into `audit`.
    pub fn finish<B>(mut self, audit: &ClientAudit, response: &http::Response<B>) {
        let request = &mut self.request;
        request.answer.code = response.status().as_u16();
        request.answer.retry_after_seconds = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        if let Some(error) = response.extensions().get::<ErrorAnswer>() {
            request.answer.reason = Some(error.reason.clone());
            request.answer.message = Some(error.message.clone());
        }
        if let Some(ListAnswer(list)) = response.extensions().get::<ListAnswer>() {
            request.list = Some(*list);
        }
        if let Some(ObjectVersion(rv)) = response.extensions().get::<ObjectVersion>() {
            request.object_resource_version = Some(*rv);
        }
        // A watch that did not start (an error answer) has no stream to follow.
        let tap = self.tap.filter(|_| request.answer.code < 300);
        audit.keep(Entry { request: self.request, tap });
    }
}

fn scope_of(request: &ResourceRequest, query: &Query) -> Scope {
    let non_empty = |name: &str| query.get(name).filter(|v| !v.is_empty()).map(str::to_owned);
    let mut field_selector = non_empty("fieldSelector");
    if request.legacy_watch
        && let Some(name) = &request.name
    {
        field_selector = Some(format!("metadata.name={name}"));
    }
    Scope {
        group: request.group.clone(),
        resource: request.resource.clone(),
        namespace: request.namespace.clone(),
        label_selector: non_empty("labelSelector"),
        field_selector,
    }
}

fn params_of(query: &Query) -> Params {
    Params {
        resource_version: query.get("resourceVersion").map(str::to_owned),
        resource_version_match: query.get("resourceVersionMatch").filter(|v| !v.is_empty()).map(str::to_owned),
        send_initial_events: query.optional_flag("sendInitialEvents"),
        allow_watch_bookmarks: query.flag("allowWatchBookmarks"),
        limit: query.get("limit").and_then(|v| v.parse().ok()),
        continued: query.get("continue").is_some_and(|v| !v.is_empty()),
        timeout_seconds: query.get("timeoutSeconds").and_then(|v| v.parse().ok()),
    }
}

/// The findings per client and rule, as Prometheus text:
/// `listwatch_client_audit_findings{client="…",rule="…"} N`, every rule of every client seen.
pub fn metrics_text(report: &Report) -> String {
    let mut text = String::from(
        "# HELP listwatch_client_audit_findings Findings of the client audit, per client and rule.\n\
         # TYPE listwatch_client_audit_findings gauge\n",
    );
    let escape = |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    for (client, rules) in &report.clients {
        for (rule, count) in rules {
            text.push_str(&format!(
                "listwatch_client_audit_findings{{client=\"{}\",rule=\"{}\"}} {count}\n",
                escape(client),
                rule.name()
            ));
        }
    }
    text
}
