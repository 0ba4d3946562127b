//! Stores and watch helpers for the storage tests: each contract test runs on the memory store
//! (ephemeral and durable) and on etcd, named by the test harness's [`Backend`].

use std::sync::Arc;
use std::time::Duration;

use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};
use listwatch_storage::{Event, Revision, Storage, Watch, WatchResponse};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions, shared_endpoints, unique_prefix};

/// Which store a test runs on: the harness's one [`Backend`], which names the same four
/// storages for a server: [`Backend::Ephemeral`] the memory store alone, [`Backend::Memory`] the
/// memory store on a data dir, [`Backend::Etcd`] the run's shared etcd, [`Backend::PrivateEtcd`]
/// an etcd of the test's own.
pub use listwatch_testkit::server::Backend;

/// Keeps whatever a backend needs alive (a temporary dir, a private etcd) for the test.
pub struct Guard(#[allow(dead_code)] Box<dyn std::any::Any + Send>);

/// A store on `backend` that other tests may share, and a key prefix private to this test.
pub async fn open_store(backend: Backend, test: &str) -> (Arc<dyn Storage>, String, Guard) {
    match backend {
        Backend::Ephemeral => (Arc::new(MemoryStore::ephemeral()), "/lwtest/t/".into(), Guard(Box::new(()))),
        Backend::Memory => {
            let dir = tempfile::tempdir().unwrap();
            let options = MemoryOptions { data_dir: Some(dir.path().to_path_buf()), ..Default::default() };
            (Arc::new(MemoryStore::open(options).unwrap()), "/lwtest/t/".into(), Guard(Box::new(dir)))
        }
        Backend::Etcd => {
            let store = EtcdStore::connect(&shared_endpoints().await, EtcdOptions::default()).await.unwrap();
            (Arc::new(store), unique_prefix(test), Guard(Box::new(())))
        }
        Backend::PrivateEtcd => {
            let etcd = EtcdProcess::start(EtcdProcessOptions::default()).await;
            let store = EtcdStore::connect(&[etcd.endpoint().to_string()], EtcdOptions::default()).await.unwrap();
            (Arc::new(store), unique_prefix(test), Guard(Box::new(etcd)))
        }
    }
}

/// A store of this test's own (for compaction and other global operations): the shared etcd
/// becomes a private one; a memory store is the test's own anyway.
pub async fn open_private_store(backend: Backend, test: &str) -> (Arc<dyn Storage>, String, Guard) {
    let private = if backend == Backend::Etcd { Backend::PrivateEtcd } else { backend };
    open_store(private, test).await
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
