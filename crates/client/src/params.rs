//! LIST and WATCH options (`metav1.ListOptions`) and their query strings.
//!
//! The fields map one to one onto the query parameters of spec apiserver-protocol.md §1.2; the
//! client sends only what is set, so the server's defaults apply to the rest.

use std::time::Duration;

/// How the server should match `resourceVersion` on a LIST or streaming WATCH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionMatch {
    /// Any state at or after the given resourceVersion (the watch cache may answer).
    NotOlderThan,
    /// The state at exactly the given resourceVersion (read from storage's history).
    Exact,
}

impl VersionMatch {
    fn as_str(self) -> &'static str {
        match self {
            VersionMatch::NotOlderThan => "NotOlderThan",
            VersionMatch::Exact => "Exact",
        }
    }
}

/// Options of a LIST.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `labelSelector`: only objects these labels select (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// `fieldSelector`: only objects these fields select (`metadata.name=x`).
    pub field_selector: Option<String>,
    /// `""` (unset) is a consistent read, `"0"` any (the watch cache), `"N"` not older than N.
    pub resource_version: String,
    /// `resourceVersionMatch`: how `resource_version` is matched (only with a non-empty one).
    pub resource_version_match: Option<VersionMatch>,
    /// Page size; `None` asks for everything at once.
    pub limit: Option<u32>,
    /// `continue`: the token of the page before, to read the next page.
    pub continue_token: Option<String>,
}

impl ListParams {
    /// Only objects `selector` (a label selector) selects.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Only objects `selector` (a field selector) selects.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// Reads at `resource_version` (see [`ListParams::resource_version`]).
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = resource_version.to_owned();
        self
    }

    /// Pages of at most `limit` objects.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    pub(crate) fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        selectors(&mut query, &self.label_selector, &self.field_selector);
        if !self.resource_version.is_empty() {
            query.append_pair("resourceVersion", &self.resource_version);
        }
        if let Some(m) = self.resource_version_match {
            query.append_pair("resourceVersionMatch", m.as_str());
        }
        if let Some(limit) = self.limit.filter(|l| *l > 0) {
            query.append_pair("limit", &limit.to_string());
        }
        if let Some(token) = self.continue_token.as_deref().filter(|t| !t.is_empty()) {
            query.append_pair("continue", token);
        }
        query.finish()
    }
}

/// Options of a WATCH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchParams {
    /// `labelSelector`: only events of objects these labels select.
    pub label_selector: Option<String>,
    /// `fieldSelector`: only events of objects these fields select.
    pub field_selector: Option<String>,
    /// Where to start: `""` most recent (with initial ADDED events), `"0"` any, `"N"` after N.
    pub resource_version: String,
    /// `timeoutSeconds`: the server ends the stream after this long. `None` lets the server pick
    /// (kube-apiserver: a random time in [30, 60) minutes).
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks` (default true).
    pub allow_bookmarks: bool,
    /// `sendInitialEvents` (a streaming list, spec §6). Sent with
    /// `resourceVersionMatch=NotOlderThan`, as the server requires.
    pub send_initial_events: Option<bool>,
    /// Client-side: end the stream when no bytes arrive for this long (the connection is taken
    /// to be dead). `None` means the server timeout plus [`DEFAULT_IDLE_MARGIN`], or no limit
    /// when there is no server timeout.
    pub idle_timeout: Option<Duration>,
}

/// How much longer than the server's watch timeout the client waits for bytes before it
/// declares the connection dead (kube-rs uses the same 5 s, PR #1945).
pub const DEFAULT_IDLE_MARGIN: Duration = Duration::from_secs(5);

impl Default for WatchParams {
    fn default() -> Self {
        WatchParams {
            label_selector: None,
            field_selector: None,
            resource_version: String::new(),
            timeout: None,
            allow_bookmarks: true,
            send_initial_events: None,
            idle_timeout: None,
        }
    }
}

impl WatchParams {
    /// Only events of objects `selector` (a label selector) selects.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Only events of objects `selector` (a field selector) selects.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// Starts at `resource_version` (see [`WatchParams::resource_version`]).
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = resource_version.to_owned();
        self
    }

    /// Asks the server to end the stream after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The idle limit in force: explicit, or the server timeout plus the margin.
    pub fn effective_idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout.or_else(|| self.timeout.map(|t| t + DEFAULT_IDLE_MARGIN))
    }

    pub(crate) fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("watch", "true");
        selectors(&mut query, &self.label_selector, &self.field_selector);
        if !self.resource_version.is_empty() {
            query.append_pair("resourceVersion", &self.resource_version);
        }
        if let Some(timeout) = self.timeout {
            // Whole seconds, at least one: 0 would mean "server default".
            query.append_pair("timeoutSeconds", &timeout.as_secs().max(1).to_string());
        }
        if self.allow_bookmarks {
            query.append_pair("allowWatchBookmarks", "true");
        }
        if let Some(initial) = self.send_initial_events {
            query.append_pair("sendInitialEvents", if initial { "true" } else { "false" });
            query.append_pair("resourceVersionMatch", VersionMatch::NotOlderThan.as_str());
        }
        query.finish()
    }
}

fn selectors(query: &mut form_urlencoded::Serializer<'_, String>, labels: &Option<String>, fields: &Option<String>) {
    if let Some(labels) = labels.as_deref().filter(|s| !s.is_empty()) {
        query.append_pair("labelSelector", labels);
    }
    if let Some(fields) = fields.as_deref().filter(|s| !s.is_empty()) {
        query.append_pair("fieldSelector", fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_query_sends_only_what_is_set() {
        assert_eq!(ListParams::default().query(), "");
        let params = ListParams { limit: Some(500), ..ListParams::default().at("0").labels("app in (a,b)") };
        assert_eq!(params.query(), "labelSelector=app+in+%28a%2Cb%29&resourceVersion=0&limit=500");
        let next = ListParams { continue_token: Some("tok".into()), limit: Some(500), ..ListParams::default() };
        assert_eq!(next.query(), "limit=500&continue=tok");
    }

    #[test]
    fn watch_query_for_a_streaming_list() {
        let params = WatchParams {
            send_initial_events: Some(true),
            timeout: Some(Duration::from_millis(300_900)),
            ..WatchParams::default()
        };
        assert_eq!(
            params.query(),
            "watch=true&timeoutSeconds=300&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        );
        assert_eq!(params.effective_idle_timeout(), Some(Duration::from_millis(305_900)));
        assert_eq!(WatchParams::default().at("12").query(), "watch=true&resourceVersion=12&allowWatchBookmarks=true");
    }
}
