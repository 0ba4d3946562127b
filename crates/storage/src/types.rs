//! The values that cross the [`Storage`](crate::Storage) interface.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// A store revision (etcd's `mod_revision` / header revision). Always > 0 for real data.
pub type Revision = i64;

/// What every storage operation returns; the error is a [`StorageError`] unless said otherwise.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// One key's state at some revision, as etcd's `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key (`/registry/<resource>/<namespace>/<name>` for the apiserver's objects).
    pub key: Bytes,
    /// The stored bytes; empty in a delete event's tombstone.
    pub value: Bytes,
    /// Revision of the key's last creation.
    pub create_revision: Revision,
    /// Revision of the key's last modification (for a DELETE event: the deletion's revision).
    pub mod_revision: Revision,
    /// 1 on creation, +1 on each update, 0 in a delete event's tombstone.
    pub version: i64,
}

impl fmt::Debug for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyValue")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("value_len", &self.value.len())
            .field("create_revision", &self.create_revision)
            .field("mod_revision", &self.mod_revision)
            .field("version", &self.version)
            .finish()
    }
}

/// A key range: one key, or `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// The first key of the range (inclusive), or the one key.
    pub start: Bytes,
    /// `None` means the single key `start`.
    pub end: Option<Bytes>,
}

impl KeyRange {
    /// The single key `key`.
    pub fn key(key: impl Into<Bytes>) -> Self {
        KeyRange { start: key.into(), end: None }
    }

    /// Every key that starts with `prefix` (the prefix must not be empty).
    pub fn prefix(prefix: impl Into<Bytes>) -> Self {
        let start: Bytes = prefix.into();
        let end = prefix_end(&start);
        KeyRange { start, end: Some(end) }
    }

    /// `[start, end)`.
    pub fn between(start: impl Into<Bytes>, end: impl Into<Bytes>) -> Self {
        KeyRange { start: start.into(), end: Some(end.into()) }
    }

    /// A range with an end at or before its start holds no key (etcd refuses to watch one).
    pub fn is_empty(&self) -> bool {
        matches!(&self.end, Some(end) if end.as_ref() != b"\0" && end[..] <= self.start[..])
    }

    /// Whether `key` falls in the range (etcd's `\0` end meaning "every key from `start` on").
    pub fn contains(&self, key: &[u8]) -> bool {
        match &self.end {
            None => key == &self.start[..],
            // etcd's "\0" range end means "every key >= start".
            Some(end) if end.as_ref() == b"\0" => key >= &self.start[..],
            Some(end) => key >= &self.start[..] && key < &end[..],
        }
    }
}

/// The smallest key greater than every key with this prefix (etcd's `GetPrefixRangeEnd`):
/// the last byte below 0xff incremented, trailing 0xff bytes dropped; `\0` when there is none.
pub fn prefix_end(prefix: &[u8]) -> Bytes {
    let mut end = prefix.to_vec();
    while let Some(last) = end.last_mut() {
        if *last < 0xff {
            *last += 1;
            return end.into();
        }
        end.pop();
    }
    Bytes::from_static(b"\0")
}

/// A read of one key or a range.
#[derive(Clone, Debug)]
pub struct RangeRequest {
    /// The key or keys to read.
    pub range: KeyRange,
    /// At most this many key-values (0 = no limit).
    pub limit: i64,
    /// Read at this revision (0 = latest).
    pub revision: Revision,
    /// Return only `count` (no key-values).
    pub count_only: bool,
}

impl RangeRequest {
    /// A read of the latest state of `range`, without limit.
    pub fn new(range: KeyRange) -> Self {
        RangeRequest { range, limit: 0, revision: 0, count_only: false }
    }
    /// At most `limit` key-values (0 = no limit); [`RangeResponse::more`] says whether more remain.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }
    /// Reads the state at `revision` (0 = latest); fails for a compacted or future revision.
    pub fn at_revision(mut self, revision: Revision) -> Self {
        self.revision = revision;
        self
    }
    /// Counts the keys without returning them.
    pub fn count_only(mut self) -> Self {
        self.count_only = true;
        self
    }
}

/// What a [`RangeRequest`] read.
#[derive(Clone, Debug)]
pub struct RangeResponse {
    /// Key-values in key order.
    pub kvs: Vec<KeyValue>,
    /// The revision the read was served at: the requested revision, or the current revision for
    /// a read of the latest state. (etcd's header always carries the current revision; both
    /// backends report the read revision here so paging and LIST resourceVersions are right.)
    pub revision: Revision,
    /// Number of keys in the whole range, regardless of `limit`.
    pub count: i64,
    /// Whether keys beyond `limit` remain.
    pub more: bool,
}

/// The result of a create or update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteResponse {
    /// The revision of this write (the new mod revision of the key).
    pub revision: Revision,
}

/// The result of a delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteResponse {
    /// The revision of the deletion.
    pub revision: Revision,
    /// The key's value just before the deletion.
    pub prev: KeyValue,
}

/// What an [`Event`] did to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted.
    Delete,
}

/// One change to one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Whether the key was written or deleted.
    pub kind: EventKind,
    /// The new state. For a delete: a tombstone with only `key` and `mod_revision` (the
    /// deletion's revision) set, as etcd sends it.
    pub kv: KeyValue,
    /// The key's state just before this event; `None` for a creation, or (etcd) when that
    /// state was already compacted.
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision of the change (the key's new `mod_revision`, or the deletion's).
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
    /// A PUT that created the key (etcd's `IsCreate`).
    pub fn is_create(&self) -> bool {
        self.kind == EventKind::Put && self.kv.create_revision == self.kv.mod_revision
    }
}

/// What a watch delivers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchResponse {
    /// One or more complete revisions, in revision order. Events are shared (`Arc`) because a
    /// store may hand the same event to many watchers.
    Events(Vec<Arc<Event>>),
    /// Every event up to and including this revision has been delivered.
    Progress(Revision),
    /// The watch's next revision was compacted away; carries the compaction revision. Nothing
    /// follows: the caller must relist.
    Compacted(Revision),
}

/// A watch of a key range.
#[derive(Clone, Debug)]
pub struct WatchRequest {
    /// The key or keys to watch.
    pub range: KeyRange,
    /// First revision to deliver (inclusive); 0 = the current revision + 1.
    pub start_revision: Revision,
    /// Ask for periodic progress notifications while no events arrive.
    pub progress_notify: bool,
}

impl WatchRequest {
    /// A watch of `range` from `start_revision` (0 = only changes after now), without progress
    /// notifications.
    pub fn new(range: KeyRange, start_revision: Revision) -> Self {
        WatchRequest { range, start_revision, progress_notify: false }
    }
    /// Asks for periodic progress notifications while no events arrive.
    pub fn with_progress_notify(mut self) -> Self {
        self.progress_notify = true;
        self
    }
}

/// A running watch. Dropping it cancels it.
pub struct Watch {
    stream: Box<dyn WatchStream>,
    progress: ProgressRequester,
}

impl Watch {
    /// A watch from a backend's stream and the way to ask that backend for progress.
    pub fn new(stream: Box<dyn WatchStream>, progress: ProgressRequester) -> Self {
        Watch { stream, progress }
    }

    /// The next response; `None` when the watch has ended for good (the store shut down, or
    /// after a [`WatchResponse::Compacted`]). Errors are terminal too.
    pub async fn next(&mut self) -> Option<Result<WatchResponse>> {
        self.stream.next().await
    }

    /// A handle that asks this watch for a progress notification; it can be used while another
    /// task awaits [`Watch::next`].
    pub fn progress_requester(&self) -> ProgressRequester {
        self.progress.clone()
    }
}

/// The backend half of a [`Watch`].
#[async_trait::async_trait]
pub trait WatchStream: Send {
    /// The next response; `None` once the watch has ended for good (see [`Watch::next`]).
    async fn next(&mut self) -> Option<Result<WatchResponse>>;
}

/// Asks a watch for a progress notification ("as soon as possible"; the backend retries until
/// one is delivered).
#[derive(Clone)]
pub struct ProgressRequester(Arc<dyn Fn() + Send + Sync>);

impl ProgressRequester {
    /// A requester that calls `f` each time progress is asked for.
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        ProgressRequester(Arc::new(f))
    }
    /// Asks for a progress notification; returns at once (the backend delivers it later).
    pub fn request(&self) {
        (self.0)();
    }
}

/// Which backend answers, for feature gates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendVersion {
    /// `"memory"` or `"etcd"`.
    pub backend: &'static str,
    /// The version string the backend reports (etcd's `status().version()`).
    pub version: String,
}

impl BackendVersion {
    /// `(major, minor, patch)` of an etcd version string; `None` if it does not parse.
    pub fn semver(&self) -> Option<(u64, u64, u64)> {
        let mut parts = self.version.trim_start_matches('v').split(['.', '-', '+']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?.parse().ok()?;
        Some((major, minor, patch))
    }

    /// Whether progress requests are answered reliably, kube-apiserver's gate
    /// (`feature_support_checker.go`): etcd >= 3.4.31 and not in [3.5.0, 3.5.13). The memory
    /// store always supports them. Consistent reads from the watch cache and streaming lists
    /// depend on it.
    pub fn supports_request_watch_progress(&self) -> bool {
        if self.backend == "memory" {
            return true;
        }
        match self.semver() {
            Some(v) => v >= (3, 4, 31) && !((3, 5, 0)..(3, 5, 13)).contains(&v),
            None => false,
        }
    }
}

/// Errors every backend reports the same way.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist (at the revision read).
    #[error("key not found")]
    NotFound,
    /// A create found the key already there.
    #[error("key already exists")]
    AlreadyExists,
    /// The key's mod revision is not the expected one.
    #[error("revision mismatch")]
    Conflict {
        /// The key's state now (`None` if it does not exist), read in the same transaction.
        current: Option<KeyValue>,
    },
    /// The requested revision is below the compaction revision.
    #[error("mvcc: required revision has been compacted (compacted at {compact_revision})")]
    Compacted {
        /// The oldest revision still readable.
        compact_revision: Revision,
    },
    /// The requested revision is above the current revision.
    #[error("mvcc: required revision is a future revision (current {current_revision})")]
    FutureRevision {
        /// The store's newest revision.
        current_revision: Revision,
    },
    /// The write is larger than [`MAX_REQUEST_BYTES`](crate::MAX_REQUEST_BYTES).
    #[error("request is too large: {size} bytes, limit {limit}")]
    ValueTooLarge {
        /// The size of the refused request, in bytes.
        size: usize,
        /// The largest request the store takes, in bytes.
        limit: usize,
    },
    /// The backend cannot be reached or has failed; the operation may or may not have applied.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The request makes no sense (etcd's InvalidArgument), e.g. a watch of an empty range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A value could not be transformed on its way in or out (a CRD's conversion webhook
    /// failed): the message says why, as the client will see it.
    #[error("{0}")]
    Transform(String),
}
