//! The embedded store: an MVCC key-value store with etcd's semantics, in memory, optionally
//! durable.
//!
//! * `mvcc.rs`: the versions of every key and the revision log (the data);
//! * `watch.rs`: watches as cursors into that log (the watchable side);
//! * `wal.rs`: the write-ahead log and snapshots that make it durable;
//! * `lock.rs`: the lock that keeps a second process out of a data directory in use.
//!
//! Writes take the store's lock, validate against the newest state, apply at the next
//! revision and (durable mode) enqueue their log record before releasing it. A revision
//! becomes visible to reads and watches when it is *published*: at once in ephemeral mode,
//! after its group `fdatasync` in durable mode. The write returns only then.

mod lock;
mod mvcc;
mod wal;
mod watch;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch as watch_channel;

use self::lock::DirLock;
pub use self::lock::LOCK_FILE;
use self::mvcc::{Mutation, Mvcc};
use self::wal::{SnapshotData, Wal};
use crate::{
    BackendVersion, DeleteResponse, RangeRequest, RangeResponse, Result, Revision, Storage, StorageError, Watch,
    WatchRequest, WriteResponse, check_request_size,
};

/// Settings of the memory store.
#[derive(Clone, Debug)]
pub struct MemoryOptions {
    /// Where the log and snapshots live; `None` is the ephemeral (in-memory only) mode.
    pub data_dir: Option<PathBuf>,
    /// Period of progress notifications for watches that ask for them (etcd's
    /// `--experimental-watch-progress-notify-interval`; Kubernetes runs etcd with 5 s).
    pub progress_notify_interval: Duration,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions { data_dir: None, progress_notify_interval: Duration::from_secs(5) }
    }
}

/// The embedded store. Cheap to clone (shared state).
#[derive(Clone)]
pub struct MemoryStore {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    mvcc: RwLock<Mvcc>,
    /// The published revision, for watchers and waiting writers.
    published_tx: watch_channel::Sender<Revision>,
    wal: Option<Wal>,
    failed: AtomicBool,
    failure: Mutex<String>,
    options: MemoryOptions,
    /// The data directory's lock (durable mode), held until [`MemoryStore::close`] or drop.
    dir_lock: Mutex<Option<DirLock>>,
}

impl Shared {
    fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }
    fn failure(&self) -> StorageError {
        StorageError::Unavailable(self.failure.lock().clone())
    }
}

impl MemoryStore {
    /// An in-memory store that keeps nothing on disk.
    pub fn ephemeral() -> MemoryStore {
        Self::with_state(Mvcc::default(), None, MemoryOptions::default())
    }

    /// Opens (or creates) the store described by `options`: durable when it has a data dir.
    /// A data dir in use by another store (this process or another) is refused with
    /// [`std::io::ErrorKind::ResourceBusy`], naming the holder's pid.
    pub fn open(options: MemoryOptions) -> std::io::Result<MemoryStore> {
        let Some(dir) = options.data_dir.clone() else {
            return Ok(Self::with_state(Mvcc::default(), None, options));
        };
        let dir_lock = DirLock::acquire(&dir)?;
        let (mvcc, next_seq) = wal::recover(&dir)?;
        // The writer thread needs the store to publish into; the store needs the writer. Tie
        // them with a slot filled right after both exist.
        let slot: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>> = Arc::default();
        let (on_synced, want_snapshot) = (slot.clone(), slot.clone());
        let wal = Wal::start(
            dir,
            next_seq,
            move |result| {
                if let Some(shared) = on_synced.get().and_then(Weak::upgrade) {
                    shared.on_synced(result);
                }
            },
            move || {
                if let Some(shared) = want_snapshot.get().and_then(Weak::upgrade) {
                    shared.snapshot();
                }
            },
        )?;
        let store = Self::with_state(mvcc, Some(wal), options);
        *store.shared.dir_lock.lock() = Some(dir_lock);
        let _ = slot.set(Arc::downgrade(&store.shared));
        Ok(store)
    }

    fn with_state(mvcc: Mvcc, wal: Option<Wal>, options: MemoryOptions) -> MemoryStore {
        let (published_tx, _) = watch_channel::channel(mvcc.published());
        MemoryStore {
            shared: Arc::new(Shared {
                mvcc: RwLock::new(mvcc),
                published_tx,
                wal,
                failed: AtomicBool::new(false),
                failure: Mutex::new(String::new()),
                options,
                dir_lock: Mutex::new(None),
            }),
        }
    }

    /// Whether this store keeps its data on disk.
    pub fn is_durable(&self) -> bool {
        self.shared.wal.is_some()
    }

    /// Stops the log writer after flushing it (durable mode) and releases the data dir.
    /// Writes after this fail.
    pub fn close(&self) {
        if let Some(wal) = &self.shared.wal {
            wal.close();
        }
        self.shared.dir_lock.lock().take();
    }

    /// Validates and applies one write; waits until it is durable.
    async fn write(
        &self,
        key: &[u8],
        check: impl FnOnce(Option<crate::KeyValue>) -> Result<Mutation>,
    ) -> Result<(Revision, Option<crate::KeyValue>)> {
        let shared = &self.shared;
        let (revision, prev) = {
            let mut mvcc = shared.mvcc.write();
            if shared.is_failed() {
                return Err(shared.failure());
            }
            let mutation = check(mvcc.latest(key))?;
            let mut record = Vec::new();
            if shared.wal.is_some() {
                wal::encode_mutation(&mut record, mvcc.current() + 1, &mutation);
            }
            let event = mvcc.apply(mutation);
            let revision = event.revision();
            match &shared.wal {
                Some(wal) => wal.append(record, revision),
                None => mvcc.publish(revision),
            }
            (revision, event.prev.clone())
        };
        if shared.wal.is_none() {
            shared.published_tx.send_replace(revision);
        } else {
            shared.wait_durable(revision).await?;
        }
        Ok((revision, prev))
    }
}

impl Shared {
    /// Called by the log writer once a group is on disk.
    fn on_synced(&self, result: std::io::Result<Revision>) {
        match result {
            Ok(revision) => {
                self.mvcc.write().publish(revision);
                self.published_tx.send_replace(revision);
            }
            Err(e) => {
                *self.failure.lock() = format!("the memory store's log cannot be written: {e}");
                self.failed.store(true, Ordering::Release);
                // Wake every waiting writer and watcher so they see the failure.
                self.published_tx.send_modify(|_| {});
            }
        }
    }

    async fn wait_durable(&self, revision: Revision) -> Result<()> {
        let mut rx = self.published_tx.subscribe();
        loop {
            if self.is_failed() {
                return Err(self.failure());
            }
            if *rx.borrow_and_update() >= revision {
                return Ok(());
            }
            if rx.changed().await.is_err() {
                return Err(StorageError::Unavailable("the memory store is closed".into()));
            }
        }
    }

    /// Starts a new log segment and writes a snapshot of the state at that point.
    fn snapshot(&self) {
        if let Some(wal) = &self.wal {
            let mvcc = self.mvcc.read();
            // Under the read lock no write can slip between the copy and the rotation marker
            // (writers enqueue records under the write lock).
            wal.rotate(SnapshotData::of(&mvcc));
        }
    }
}

#[async_trait]
impl Storage for MemoryStore {
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let mvcc = self.shared.mvcc.read();
        let revision = mvcc.readable_revision(request.revision)?;
        let (kvs, count, more) = mvcc.range(&request.range, request.limit, revision, request.count_only);
        Ok(RangeResponse { kvs, revision, count, more })
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<WriteResponse> {
        check_request_size(key, &value)?;
        let key = Bytes::copy_from_slice(key);
        let (revision, _) = self
            .write(&key.clone(), |latest| match latest {
                Some(_) => Err(StorageError::AlreadyExists),
                None => Ok(Mutation::Put { key, value }),
            })
            .await?;
        Ok(WriteResponse { revision })
    }

    async fn update(&self, key: &[u8], value: Bytes, expected_mod_revision: Revision) -> Result<WriteResponse> {
        check_request_size(key, &value)?;
        let key = Bytes::copy_from_slice(key);
        let (revision, _) = self
            .write(&key.clone(), |latest| match latest {
                Some(kv) if kv.mod_revision == expected_mod_revision => Ok(Mutation::Put { key, value }),
                current => Err(StorageError::Conflict { current }),
            })
            .await?;
        Ok(WriteResponse { revision })
    }

    async fn delete(&self, key: &[u8], expected_mod_revision: Option<Revision>) -> Result<DeleteResponse> {
        let key = Bytes::copy_from_slice(key);
        let (revision, prev) = self
            .write(&key.clone(), |latest| match (latest, expected_mod_revision) {
                (None, None) => Err(StorageError::NotFound),
                (Some(kv), Some(expected)) if kv.mod_revision != expected => {
                    Err(StorageError::Conflict { current: Some(kv) })
                }
                (None, Some(_)) => Err(StorageError::Conflict { current: None }),
                (Some(_), _) => Ok(Mutation::Delete { key }),
            })
            .await?;
        Ok(DeleteResponse { revision, prev: prev.expect("a deleted key had a value") })
    }

    async fn watch(&self, request: WatchRequest) -> Result<Watch> {
        crate::check_watch_range(&request.range)?;
        if self.shared.is_failed() {
            return Err(self.shared.failure());
        }
        let interval = request.progress_notify.then_some(self.shared.options.progress_notify_interval);
        let (stream, progress) =
            watch::MemoryWatch::start(self.shared.clone(), request.range, request.start_revision, interval);
        Ok(Watch::new(Box::new(stream), progress))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        {
            let mut mvcc = self.shared.mvcc.write();
            if self.shared.is_failed() {
                return Err(self.shared.failure());
            }
            mvcc.compact(revision)?;
            if let Some(wal) = &self.shared.wal {
                let mut record = Vec::new();
                wal::encode_compact(&mut record, revision);
                wal.append(record, mvcc.current());
                // A compaction is the natural point to shed the log it made redundant.
                wal.rotate(SnapshotData::of(&mvcc));
            }
        }
        // Lagging watchers learn of the compaction when they next read the log.
        Ok(())
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.mvcc.read().published())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.shared.mvcc.read().compact_revision())
    }

    async fn version(&self) -> Result<BackendVersion> {
        Ok(BackendVersion { backend: "memory", version: env!("CARGO_PKG_VERSION").to_string() })
    }
}
