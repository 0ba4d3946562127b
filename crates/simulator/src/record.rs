//! What a simulation run observed, as data: storage's own change log, and every client's watches,
//! lists and final store. The checker judges these records and nothing else, so a run can be saved
//! (`--record`, one JSON value a line) and judged again later, and a hand-written record is a test.
//!
//! Everything serializes as camelCase JSON. Revisions are `i64`, as Kubernetes resourceVersions
//! parse; times are milliseconds since the run started (`at_ms`), on one clock for the whole run.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One write in storage's change log. The log lists writes in revision order, one key per
/// revision, as Kubernetes writes (no multi-key transactions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    /// The storage revision the write made.
    pub revision: i64,
    /// Whether the key was written or deleted.
    pub kind: Change,
    /// For a [`Change::Put`], whether the key was absent before (the write created it).
    pub created: bool,
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource's plural name, e.g. `configmaps`.
    pub resource: String,
    /// The object's namespace, `""` for a cluster-scoped object.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
    /// The labels of the new state; for a delete, of the state deleted.
    pub labels: BTreeMap<String, String>,
    /// `listwatch_meta::fingerprint::object_fingerprint` of the new state; for a delete, of the
    /// state deleted.
    pub fingerprint: u64,
    /// The stored object of a Put, when the history was read for a record to replay
    /// (`/debug/listwatch/history?objects=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Value>,
}

/// How a write changed its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// The key was created or updated.
    #[serde(alias = "Put")]
    Put,
    /// The key was deleted.
    #[serde(alias = "Delete")]
    Delete,
}

/// A watch request as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchRequest {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource's plural name.
    pub resource: String,
    /// The namespace watched; `None` (or `""`) for all namespaces.
    pub namespace: Option<String>,
    /// The `labelSelector` parameter, if any.
    pub label_selector: Option<String>,
    /// The `fieldSelector` parameter, if any. The checker filters by `metadata.name` and
    /// `metadata.namespace` only.
    pub field_selector: Option<String>,
    /// The `resourceVersion` parameter as sent: `""`, `"0"` or a number.
    pub resource_version: String,
    /// The `sendInitialEvents` parameter, if sent.
    pub send_initial_events: Option<bool>,
    /// The `allowWatchBookmarks` parameter.
    pub allow_bookmarks: bool,
}

/// The type of a watch event, as Kubernetes names it on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventKind {
    /// `ADDED`
    Added,
    /// `MODIFIED`
    Modified,
    /// `DELETED`
    Deleted,
}

impl EventKind {
    /// The wire name: `ADDED`, `MODIFIED` or `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a watch stream delivered, in the order the client received it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Delivery {
    /// An `ADDED`, `MODIFIED` or `DELETED` event.
    Event {
        /// When the client decoded it.
        at_ms: u64,
        /// The event type.
        kind: EventKind,
        /// The object's namespace, `""` for a cluster-scoped object.
        namespace: String,
        /// The object's name.
        name: String,
        /// The object's uid.
        uid: String,
        /// The object's `metadata.resourceVersion`.
        resource_version: i64,
        /// The object's content fingerprint.
        fingerprint: u64,
        /// The object's labels.
        labels: BTreeMap<String, String>,
    },
    /// A `BOOKMARK` event.
    Bookmark {
        /// When the client decoded it.
        at_ms: u64,
        /// The bookmark's resourceVersion.
        resource_version: i64,
        /// Whether it carried the `k8s.io/initial-events-end: "true"` annotation.
        initial_events_end: bool,
    },
    /// An `ERROR` event (a Status in the stream), or the HTTP error that refused the watch.
    Error {
        /// When the client decoded it.
        at_ms: u64,
        /// The Status `code`, e.g. 410.
        code: u16,
        /// The Status `reason`, e.g. `Expired`.
        reason: String,
        /// The Status `message`.
        message: String,
    },
}

impl Delivery {
    /// When the client received it.
    pub fn at_ms(&self) -> u64 {
        match self {
            Delivery::Event { at_ms, .. } | Delivery::Bookmark { at_ms, .. } | Delivery::Error { at_ms, .. } => *at_ms,
        }
    }
}

/// How a watch stream ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum StreamEnd {
    /// The response body ended cleanly.
    Closed,
    /// A connection error, a decode error or a cut stream.
    Broken {
        /// What the client saw.
        error: String,
    },
    /// Still open when the run ended.
    Open,
}

/// One watch a client opened, and everything it delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchRecord {
    /// The client that opened it.
    pub client: String,
    /// Its number among the client's watches and lists, in the order they were opened.
    pub seq: u32,
    /// When the request was sent.
    pub opened_ms: u64,
    /// The request.
    pub request: WatchRequest,
    /// What the stream delivered, in order.
    pub deliveries: Vec<Delivery>,
    /// How the stream ended.
    pub end: StreamEnd,
    /// When the stream ended; `None` while it is open.
    pub ended_ms: Option<u64>,
}

/// An object as a LIST or a client's store holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectState {
    /// The namespace, `""` for a cluster-scoped object.
    pub namespace: String,
    /// The name.
    pub name: String,
    /// The uid.
    pub uid: String,
    /// `metadata.resourceVersion`: the revision of the object's last write.
    pub resource_version: i64,
    /// The content fingerprint.
    pub fingerprint: u64,
}

impl ObjectState {
    /// What the records keep of an object's JSON, as a client received it: `namespace` when
    /// the object names none, a resourceVersion of -1 when it has none (a server always sets
    /// one), the fingerprint of its content.
    pub fn of(object: &serde_json::Value, namespace: &str) -> ObjectState {
        let metadata = &object["metadata"];
        let text = |field: &str| metadata[field].as_str().map(str::to_string);
        ObjectState {
            namespace: text("namespace").unwrap_or_else(|| namespace.to_string()),
            name: text("name").unwrap_or_default(),
            uid: text("uid").unwrap_or_default(),
            resource_version: text("resourceVersion").and_then(|rv| rv.parse().ok()).unwrap_or(-1),
            fingerprint: listwatch_meta::fingerprint::object_fingerprint(object),
        }
    }
}

/// An object's labels, as the records keep them (`{}` when it has none).
pub fn labels_of(object: &serde_json::Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|labels| labels.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default()
}

/// One LIST a client made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRecord {
    /// The client that made it.
    pub client: String,
    /// Its number among the client's watches and lists, in the order they were made.
    pub seq: u32,
    /// When the request was sent.
    pub at_ms: u64,
    /// The `resourceVersion` parameter as sent.
    pub resource_version_requested: String,
    /// What came back.
    pub result: ListResult,
}

/// What a LIST returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ListResult {
    /// A list, all pages joined.
    Ok {
        /// The list's `metadata.resourceVersion`.
        resource_version: i64,
        /// The items.
        items: Vec<ObjectState>,
    },
    /// An error Status.
    Failed {
        /// The HTTP status code.
        code: u16,
        /// The Status message.
        message: String,
    },
}

/// One client: a reflector or informer over one resource, what it did and what it ended with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRecord {
    /// The client's name in the scenario.
    pub id: String,
    /// The resource it lists and watches (plural).
    pub resource: String,
    /// The resource's API group, `""` for the core group.
    pub group: String,
    /// The namespace it is limited to; `None` for all namespaces.
    pub namespace: Option<String>,
    /// The label selector it lists and watches with.
    pub label_selector: Option<String>,
    /// The field selector it lists and watches with (`metadata.name` and `metadata.namespace`
    /// only, as for [`WatchRequest::field_selector`]).
    #[serde(default)]
    pub field_selector: Option<String>,
    /// Its watches, in the order they were opened.
    pub watches: Vec<WatchRecord>,
    /// Its lists, in the order they were made.
    pub lists: Vec<ListRecord>,
    /// Its store when the run ended.
    pub final_store: Vec<ObjectState>,
}

/// What the run knows the server did on purpose, which makes a 410 legitimate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Known {
    /// Compactions of storage, in the order they ran.
    pub compactions: Vec<Compaction>,
    /// Watch-cache resets and server restarts.
    pub cache_resets: Vec<CacheReset>,
    /// How many events of one resource the server's watch cache keeps: a watch from further
    /// behind may get 410. `0` means no watch cache (watches are served by storage), so the
    /// window never makes a 410 legitimate.
    pub window_capacity: usize,
}

/// A storage compaction: revisions below `revision` are gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// When it was requested: a 410 from then on may come from it.
    pub at_ms: u64,
    /// The revision compacted to.
    pub revision: i64,
}

/// A watch-cache reset or a server restart: the cache's history starts again at `revision`, so a
/// watch from below it may get 410.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheReset {
    /// When the reset began (or the server went down): a 410 from then on may come from it.
    pub at_ms: u64,
    /// The resource whose cache was reset; `""` for every resource (a server restart).
    pub resource: String,
    /// The storage revision the new cache starts at.
    pub revision: i64,
}

/// A write the server acknowledged (2xx) during a run: it must be in storage's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acknowledged {
    /// `namespace/name`.
    pub key: String,
    /// The resourceVersion of the answer (for a delete: the object's before it).
    pub revision: i64,
    /// Whether it was a delete.
    pub delete: bool,
}
