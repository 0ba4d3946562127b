//! Backends and watch helpers for the storage tests.

use std::sync::Arc;
use std::time::Duration;

use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};
use listwatch_storage::{Event, Revision, Storage, Watch, WatchResponse};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions, shared_endpoints, unique_prefix};

#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Memory,
    MemoryDurable,
    Etcd,
}

/// Keeps whatever a backend needs alive (a temporary dir, a private etcd) for the test.
pub struct Guard(#[allow(dead_code)] Box<dyn std::any::Any + Send>);

impl Backend {
    /// A store that other tests may share, and a key prefix private to this test.
    pub async fn shared(self, test: &str) -> (Arc<dyn Storage>, String, Guard) {
        self.open(test, false).await
    }

    /// A store of this test's own (for compaction and other global operations).
    pub async fn private(self, test: &str) -> (Arc<dyn Storage>, String, Guard) {
        self.open(test, true).await
    }

    async fn open(self, test: &str, private: bool) -> (Arc<dyn Storage>, String, Guard) {
        match self {
            Backend::Memory => (Arc::new(MemoryStore::ephemeral()), "/lwtest/t/".into(), Guard(Box::new(()))),
            Backend::MemoryDurable => {
                let dir = tempfile::tempdir().unwrap();
                let options = MemoryOptions { data_dir: Some(dir.path().to_path_buf()), ..Default::default() };
                (Arc::new(MemoryStore::open(options).unwrap()), "/lwtest/t/".into(), Guard(Box::new(dir)))
            }
            Backend::Etcd => {
                let prefix = unique_prefix(test);
                if private {
                    let etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
                    let store =
                        EtcdStore::connect(&[etcd.endpoint().to_string()], EtcdOptions::default()).await.unwrap();
                    (Arc::new(store), prefix, Guard(Box::new(etcd)))
                } else {
                    let store = EtcdStore::connect(&shared_endpoints().await, EtcdOptions::default()).await.unwrap();
                    (Arc::new(store), prefix, Guard(Box::new(())))
                }
            }
        }
    }
}

/// Flattened events from `watch` until one at or past `revision`, failing on anything else.
pub async fn collect_until(watch: &mut Watch, revision: Revision, timeout: Duration) -> Vec<Arc<Event>> {
    let mut out: Vec<Arc<Event>> = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while out.last().is_none_or(|e| e.revision() < revision) {
        let next = tokio::time::timeout_at(deadline, watch.next())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for revision {revision}; got {out:?}"));
        match next {
            Some(Ok(WatchResponse::Events(events))) => out.extend(events),
            Some(Ok(WatchResponse::Progress(_))) => {}
            other => panic!("unexpected watch response {other:?}"),
        }
    }
    out
}

/// The next progress notification (events in between are an error: the tests that use this
/// watch quiet ranges).
pub async fn next_progress(watch: &mut Watch, timeout: Duration) -> Revision {
    match tokio::time::timeout(timeout, watch.next()).await {
        Ok(Some(Ok(WatchResponse::Progress(rev)))) => rev,
        Ok(other) => panic!("expected a progress notification, got {other:?}"),
        Err(_) => panic!("no progress notification within {timeout:?}"),
    }
}
