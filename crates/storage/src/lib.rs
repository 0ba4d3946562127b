//! Storage with etcd v3 semantics.
//!
//! Everything above this crate (the watch cache, the apiserver) talks to storage through the
//! [`Storage`] trait, which is shaped after etcd's KV and Watch services as kube-apiserver uses
//! them:
//!
//! * one global, increasing **revision** for the whole store; every write of one key gets its own
//!   revision (there are no multi-key transactions: kube-apiserver never writes two keys at once);
//! * reads of one key or of a key range, at the latest revision or at a past one, with `limit`,
//!   `count` and `more` exactly as etcd's Range;
//! * writes guarded by the mod revision the caller read (optimistic concurrency, as etcd's
//!   `Txn(If mod_revision == r, Then put, Else get)`);
//! * watches of a key range from a start revision that deliver ordered batches of events with
//!   their previous values, progress notifications, and a terminal "compacted" outcome;
//! * compaction, the current revision, and the backend's version (callers gate features on it).
//!
//! Two backends implement it: [`memory::MemoryStore`], the embedded (optionally durable) MVCC
//! store that `listwatch serve` uses by default, and [`etcd::EtcdStore`], a real etcd cluster
//! reached over gRPC. One contract test suite (`tests/contract.rs`) runs against both.
//! [`faults::FaultyStorage`] wraps either to make it fail on purpose (a storage outage).

pub mod compactor;
pub mod etcd;
pub mod faults;
pub mod memory;
mod types;

pub use types::*;

use async_trait::async_trait;

/// etcd's default `--max-request-bytes` (1.5 MiB). Both backends refuse a write whose key and
/// value together exceed it, so an object that fits in one fits in the other.
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Bytes a write may add on top of its key and value before etcd counts it against
/// [`MAX_REQUEST_BYTES`] (the transaction's compare, put and else-get around them).
const REQUEST_OVERHEAD_BYTES: usize = 1024;

/// Refuses a write that etcd would refuse as too large; both backends call it first, so the
/// limit is the same whichever one is in use.
pub fn check_request_size(key: &[u8], value: &[u8]) -> Result<()> {
    let size = key.len() * 2 + value.len() + REQUEST_OVERHEAD_BYTES;
    if size > MAX_REQUEST_BYTES {
        return Err(StorageError::ValueTooLarge {
            size: key.len() + value.len(),
            limit: MAX_REQUEST_BYTES - REQUEST_OVERHEAD_BYTES,
        });
    }
    Ok(())
}

/// Refuses a watch of an empty key range, as etcd does ("mvcc: watcher range is empty"); both
/// backends call it first.
pub fn check_watch_range(range: &KeyRange) -> Result<()> {
    if range.is_empty() {
        return Err(StorageError::InvalidArgument("mvcc: watcher range is empty".into()));
    }
    Ok(())
}

/// The storage interface: etcd v3 semantics, one key per write.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Reads a single key or a range (see [`RangeRequest`]).
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse>;

    /// Creates `key`; fails with [`StorageError::AlreadyExists`] if it exists.
    async fn create(&self, key: &[u8], value: Bytes) -> Result<WriteResponse>;

    /// Replaces the value of `key` if its mod revision is still `expected_mod_revision`;
    /// otherwise fails with [`StorageError::Conflict`] carrying the current state, so the caller
    /// can retry without another read (kube-apiserver's guaranteed update does exactly that).
    async fn update(&self, key: &[u8], value: Bytes, expected_mod_revision: Revision) -> Result<WriteResponse>;

    /// Deletes `key`, guarded by its mod revision when one is given. Returns the previous value.
    async fn delete(&self, key: &[u8], expected_mod_revision: Option<Revision>) -> Result<DeleteResponse>;

    /// Watches a key range from a start revision (see [`WatchRequest`]).
    async fn watch(&self, request: WatchRequest) -> Result<Watch>;

    /// Compacts history below `revision` (revision itself stays readable and watchable).
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The store's current revision, read consistently (a quorum read on etcd).
    async fn current_revision(&self) -> Result<Revision>;

    /// The revision below which history is gone (0 if never compacted). etcd does not report
    /// it directly; its backend returns the highest compaction it has seen or performed.
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Which backend and version this is, for feature gates.
    async fn version(&self) -> Result<BackendVersion>;
}

pub use bytes::Bytes;
