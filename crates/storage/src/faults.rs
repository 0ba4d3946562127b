//! Storage that fails on purpose: a decorator of any [`Storage`] that, during an outage the
//! caller switches on ([`Outage::start`]), answers every call as a dead etcd would, so the
//! layers above (the watch cache, the apiserver, and the clients under test) meet the failure
//! they will meet in production, on the embedded store as on etcd:
//!
//! * every request fails with `etcdserver: request timed out` ([`OUTAGE_ERROR`]) and is not
//!   applied, so a write that fails was not acknowledged and is not in storage afterwards;
//! * every open watch stream ends with that error (the watch cache then re-initializes, and
//!   its relist fails until the outage is over), and no new watch starts.
//!
//! Outside an outage a call costs one atomic load more than the backend's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;

use crate::{
    BackendVersion, DeleteResponse, RangeRequest, RangeResponse, Result, Revision, Storage, StorageError, Watch,
    WatchRequest, WatchResponse, WatchStream, WriteResponse,
};

/// What every call answers during an outage: etcd's text when a request finds no leader in
/// time (etcd's `ErrTimeout`).
pub const OUTAGE_ERROR: &str = "etcdserver: request timed out";

fn unavailable() -> StorageError {
    StorageError::Unavailable(OUTAGE_ERROR.into())
}

/// The switch of a [`FaultyStorage`]: clones share it.
#[derive(Clone)]
pub struct Outage(Arc<OutageState>);

struct OutageState {
    /// When the clock of `until_ms` starts.
    epoch: Instant,
    /// The end of the outage in milliseconds after `epoch`; 0 when there is none.
    until_ms: AtomicU64,
    /// Counts outages started, so open watch streams end when one begins.
    started: watch::Sender<u64>,
}

impl Default for Outage {
    fn default() -> Self {
        Outage(Arc::new(OutageState {
            epoch: Instant::now(),
            until_ms: AtomicU64::new(0),
            started: watch::channel(0).0,
        }))
    }
}

impl std::fmt::Debug for Outage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outage").field("remaining", &self.remaining()).finish()
    }
}

impl Outage {
    /// Makes storage unavailable for `duration` from now (replacing an outage under way);
    /// a zero duration ends one now.
    pub fn start(&self, duration: Duration) {
        if duration.is_zero() {
            self.0.until_ms.store(0, Ordering::Release);
            return;
        }
        let until = self.0.epoch.elapsed().saturating_add(duration).as_millis().max(1);
        self.0.until_ms.store(u64::try_from(until).unwrap_or(u64::MAX), Ordering::Release);
        self.0.started.send_modify(|count| *count += 1);
    }

    /// How long the outage under way lasts still; `None` when storage works.
    pub fn remaining(&self) -> Option<Duration> {
        let until = self.0.until_ms.load(Ordering::Acquire);
        if until == 0 {
            return None;
        }
        Duration::from_millis(until).checked_sub(self.0.epoch.elapsed()).filter(|left| !left.is_zero())
    }

    /// Whether storage is unavailable now.
    pub fn is_active(&self) -> bool {
        self.remaining().is_some()
    }

    /// `Err` during an outage (one atomic load when there is none).
    fn check(&self) -> Result<()> {
        if self.is_active() {
            return Err(unavailable());
        }
        Ok(())
    }
}

/// A [`Storage`] that fails every call during an [`Outage`] and passes everything through
/// otherwise.
pub struct FaultyStorage {
    inner: Arc<dyn Storage>,
    outage: Outage,
}

impl FaultyStorage {
    /// `inner`, failing during the outages `outage` switches on.
    pub fn new(inner: Arc<dyn Storage>, outage: Outage) -> FaultyStorage {
        FaultyStorage { inner, outage }
    }
}

#[async_trait]
impl Storage for FaultyStorage {
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        self.outage.check()?;
        self.inner.range(request).await
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<WriteResponse> {
        self.outage.check()?;
        self.inner.create(key, value).await
    }

    async fn update(&self, key: &[u8], value: Bytes, expected_mod_revision: Revision) -> Result<WriteResponse> {
        self.outage.check()?;
        self.inner.update(key, value, expected_mod_revision).await
    }

    async fn delete(&self, key: &[u8], expected_mod_revision: Option<Revision>) -> Result<DeleteResponse> {
        self.outage.check()?;
        self.inner.delete(key, expected_mod_revision).await
    }

    async fn watch(&self, request: WatchRequest) -> Result<Watch> {
        self.outage.check()?;
        // Subscribed before the watch starts, so an outage beginning meanwhile ends it too.
        let outages = self.outage.0.started.subscribe();
        let watch = self.inner.watch(request).await?;
        let progress = watch.progress_requester();
        Ok(Watch::new(Box::new(OutageWatch { inner: watch, outages, ended: false }), progress))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.outage.check()?;
        self.inner.compact(revision).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.outage.check()?;
        self.inner.current_revision().await
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.outage.check()?;
        self.inner.compacted_revision().await
    }

    async fn version(&self) -> Result<BackendVersion> {
        self.outage.check()?;
        self.inner.version().await
    }
}

/// A watch that ends with [`OUTAGE_ERROR`] when an outage begins, as an etcd watch stream
/// breaks when its member dies.
struct OutageWatch {
    inner: Watch,
    outages: watch::Receiver<u64>,
    ended: bool,
}

#[async_trait]
impl WatchStream for OutageWatch {
    async fn next(&mut self) -> Option<Result<WatchResponse>> {
        if self.ended {
            return None;
        }
        tokio::select! {
            biased;
            _ = self.outages.changed() => {
                self.ended = true;
                Some(Err(unavailable()))
            }
            response = self.inner.next() => response,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyRange;
    use crate::memory::MemoryStore;

    fn faulty() -> (FaultyStorage, Outage) {
        let outage = Outage::default();
        (FaultyStorage::new(Arc::new(MemoryStore::ephemeral()), outage.clone()), outage)
    }

    #[tokio::test]
    async fn an_outage_fails_every_call_and_applies_nothing_until_it_ends() {
        let (storage, outage) = faulty();
        storage.create(b"/a", Bytes::from_static(b"1")).await.unwrap();
        assert!(!outage.is_active());
        outage.start(Duration::from_secs(60));
        assert!(outage.is_active());
        assert!(outage.remaining().is_some_and(|left| left <= Duration::from_secs(60)));
        let refused = storage.create(b"/b", Bytes::from_static(b"2")).await;
        assert_eq!(refused, Err(StorageError::Unavailable(OUTAGE_ERROR.into())));
        assert!(storage.range(RangeRequest::new(KeyRange::key("/a"))).await.is_err());
        assert!(storage.current_revision().await.is_err());
        assert!(storage.watch(WatchRequest::new(KeyRange::prefix("/"), 0)).await.is_err());
        // Ending it early (a zero duration): the write refused during it was not applied.
        outage.start(Duration::ZERO);
        assert!(!outage.is_active());
        let all = storage.range(RangeRequest::new(KeyRange::prefix("/"))).await.unwrap();
        assert_eq!(all.kvs.iter().map(|kv| &kv.key[..]).collect::<Vec<_>>(), [&b"/a"[..]]);
    }

    #[tokio::test]
    async fn an_outage_ends_open_watches_with_the_error_and_expires_by_itself() {
        let (storage, outage) = faulty();
        let mut watch = storage.watch(WatchRequest::new(KeyRange::prefix("/"), 0)).await.unwrap();
        storage.create(b"/a", Bytes::from_static(b"1")).await.unwrap();
        assert!(matches!(watch.next().await, Some(Ok(WatchResponse::Events(_)))));
        outage.start(Duration::from_millis(200));
        let ended = tokio::time::timeout(Duration::from_secs(5), watch.next()).await.expect("at once");
        assert_eq!(ended, Some(Err(StorageError::Unavailable(OUTAGE_ERROR.into()))));
        assert_eq!(watch.next().await, None);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!outage.is_active());
        storage.create(b"/b", Bytes::from_static(b"2")).await.unwrap();
    }
}
