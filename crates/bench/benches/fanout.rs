//! Watch fan-out in process: a write through storage and the watch cache to the encoded bytes
//! of every watcher, without sockets.
//!
//! ```text
//! cargo bench -p listwatch-bench --bench fanout
//! cargo bench -p listwatch-bench --bench fanout -- fanout/1000     # one size
//! ```
//!
//! The fixture is what `listwatch serve --ephemeral` runs for configmaps: an ephemeral
//! `MemoryStore`, and a `WatchCache` of configmaps on it. Each sample opens N cache watchers
//! (`WatchCache::watch` from the current resourceVersion) and gives each a consumer task that
//! does what the HTTP watch handler does minus the socket: `CacheWatcher::next_batch` (up to 256
//! events), then `EventEncoder::event` of each event into pieces (envelope + the object's shared
//! JSON). Then, timed, one task writes M = 1,000 updates of 100 ConfigMaps (~1 KiB each) as fast
//! as storage takes them, and the sample ends when every consumer has encoded all M.
//! Throughput is N × M events, so criterion prints delivered events/s.
//!
//! Each watcher's queue holds M events, so no watcher is ever closed for being slow: this
//! measures the fan-out and encoding path, not the slow-watcher policy. Storage history and the
//! cache window are kept small (compaction between samples, outside the timing).
// criterion_group! makes a public function a doc comment cannot reach.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use listwatch_encoding::{Encoder, EventEncoder, MediaType};
use listwatch_meta::{Registry, Resource};
use listwatch_storage::Storage;
use listwatch_storage::memory::MemoryStore;
use listwatch_watchcache::{WatchCache, WatchCacheConfig, WatchStart, WatcherOptions};
use tokio::runtime::Runtime;

/// Writes per sample.
const EVENTS: usize = 1_000;
/// ConfigMaps the writer cycles through.
const OBJECTS: usize = 100;
/// Events one `next_batch` may return (the HTTP handler's `MAX_EVENTS_PER_WRITE`).
const MAX_BATCH: usize = 256;
const STORAGE_ROOT: &str = "/registry";
const TIMEOUT: Duration = Duration::from_secs(120);

fn runtime() -> Runtime {
    // As the apiserver runs on this machine: one worker per core.
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

fn configmaps() -> &'static Resource {
    Registry.find("", "v1", "configmaps").expect("configmaps are registered")
}

/// A ConfigMap's stored bytes, about 1 KiB.
fn configmap_value(resource: &Resource, name: &str) -> Bytes {
    let object = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": "5a1e1d8e-0c4b-4c39-9d3e-6f1c8a2b7e10",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app": "listwatch-bench"},
        },
        "data": {"payload": "x".repeat(800)},
    });
    listwatch_meta::object::to_storage_bytes(resource, object)
}

/// Storage, the configmaps cache, and the ConfigMaps the writer updates.
struct Fixture {
    storage: Arc<dyn Storage>,
    cache: WatchCache,
    resource: &'static Resource,
    keys: Vec<String>,
    values: Vec<Bytes>,
    /// Each key's last mod revision.
    revisions: Vec<AtomicI64>,
}

impl Fixture {
    async fn new() -> Fixture {
        let resource = configmaps();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
        let config = WatchCacheConfig {
            watcher_queue: EVENTS + MAX_BATCH,
            max_events: 4 * EVENTS,
            ..WatchCacheConfig::default()
        };
        let cache = WatchCache::start(resource, resource.collection_prefix(STORAGE_ROOT), storage.clone(), config);
        assert!(cache.wait_ready(TIMEOUT).await, "the cache is ready");
        let names: Vec<String> = (0..OBJECTS).map(|i| format!("bench-{i}")).collect();
        let keys: Vec<String> = names.iter().map(|n| resource.object_key(STORAGE_ROOT, Some("default"), n)).collect();
        let values: Vec<Bytes> = names.iter().map(|n| configmap_value(resource, n)).collect();
        let mut revisions = Vec::new();
        for (key, value) in keys.iter().zip(&values) {
            let written = storage.create(key.as_bytes(), value.clone()).await.expect("create a ConfigMap");
            revisions.push(AtomicI64::new(written.revision));
        }
        Fixture { storage, cache, resource, keys, values, revisions }
    }

    /// One sample: `watchers` consumers, `EVENTS` writes; the time until all are encoded.
    async fn round(&self, watchers: usize) -> Duration {
        let current = self.storage.current_revision().await.expect("current revision");
        self.cache.wait_until_fresh(current).await.expect("the cache catches up");
        let mut consumers = Vec::with_capacity(watchers);
        for _ in 0..watchers {
            let options = WatcherOptions {
                start: WatchStart::Exact(current),
                namespace: None,
                name: None,
                predicate: None,
                bookmarks: false,
                initial_events_end_bookmark: false,
                deadline: Instant::now() + Duration::from_secs(3600),
            };
            let mut watcher = self.cache.watch(options).await.expect("a cache watch");
            let resource = self.resource;
            consumers.push(tokio::spawn(async move {
                let mut encoder = EventEncoder::new(Encoder::new(resource, MediaType::JSON));
                let (mut events, mut pieces) = (Vec::with_capacity(MAX_BATCH), Vec::with_capacity(MAX_BATCH * 3));
                let mut encoded = 0;
                while encoded < EVENTS {
                    events.clear();
                    assert!(watcher.next_batch(&mut events, MAX_BATCH).await, "the watch ended early");
                    pieces.clear();
                    for event in &events {
                        encoder.event(event, &mut pieces);
                    }
                    std::hint::black_box(&pieces);
                    encoded += events.len();
                }
            }));
        }
        let started = Instant::now();
        for i in 0..EVENTS {
            let slot = i % OBJECTS;
            let expected = self.revisions[slot].load(Ordering::Relaxed);
            let written = self
                .storage
                .update(self.keys[slot].as_bytes(), self.values[slot].clone(), expected)
                .await
                .expect("update a ConfigMap");
            self.revisions[slot].store(written.revision, Ordering::Relaxed);
        }
        for consumer in consumers {
            tokio::time::timeout(TIMEOUT, consumer).await.expect("consumers finish in time").expect("consumer ok");
        }
        let elapsed = started.elapsed();
        let last = self.storage.current_revision().await.expect("current revision");
        self.storage.compact(last).await.expect("compact");
        elapsed
    }
}

fn fanout(c: &mut Criterion) {
    let runtime = runtime();
    let fixture = runtime.block_on(Fixture::new());
    let mut group = c.benchmark_group("fanout");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for watchers in [1usize, 100, 1_000] {
        group.throughput(Throughput::Elements((watchers * EVENTS) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(watchers), &watchers, |b, &watchers| {
            let fixture = &fixture;
            b.to_async(&runtime).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += fixture.round(watchers).await;
                }
                total
            });
        });
    }
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
