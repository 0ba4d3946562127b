//! Storage throughput: single-key writes per second, and watch events per second delivered in
//! process to many watchers, for the memory store (ephemeral and durable) and a real etcd.
//!
//! ```text
//! cargo bench -p listwatch-bench --bench storage
//! LISTWATCH_BENCH_BACKENDS=memory,memory-durable cargo bench -p listwatch-bench --bench storage   # a subset
//! cargo bench -p listwatch-bench --bench storage -- writes/                                        # one group
//! ```
//!
//! Backends (`LISTWATCH_BENCH_BACKENDS`, comma-separated; default the first three):
//! * `memory`: the memory store, ephemeral;
//! * `memory-durable`: the memory store with its data dir on disk (under `target/tmp`), every
//!   write `fdatasync`ed (group commit);
//! * `etcd`: a private etcd 3.5 **with fsync**, data dir on the same disk, over gRPC on
//!   127.0.0.1: the fair comparison for `memory-durable`;
//! * `memory-durable-shm`, `etcd-shm`: the same on /dev/shm (tmpfs, where fsync costs nothing;
//!   `etcd-shm` also runs with `--unsafe-no-fsync`, as the test suites' etcd does), for
//!   reference.
//!
//! Groups:
//! * `writes/<backend>/<writers>`: `<writers>` concurrent tasks each writing its own key (a
//!   create, then updates guarded by the previous revision, as kube-apiserver writes), values of
//!   1 KiB, each freshly allocated. Throughput = writes.
//! * `watch/<backend>/<watchers>`: `<watchers>` watches of one prefix, then one writer writes M
//!   events (updates of 100 keys, 1 KiB values) while every watcher reads; the time is until
//!   every watcher has received all M. Throughput = watchers × M events.
//!
//! History is compacted between samples (outside the measured time) so memory stays bounded.
// criterion_group! makes a public function a doc comment cannot reach.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};
use listwatch_storage::{KeyRange, Revision, Storage, Watch, WatchRequest, WatchResponse};
use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions};
use tokio::runtime::Runtime;

const BACKENDS_ENV: &str = "LISTWATCH_BENCH_BACKENDS";
const DEFAULT_BACKENDS: &str = "memory,memory-durable,etcd";
const VALUE_BYTES: usize = 1024;
/// Keys the watch benchmark's writer cycles through.
const WATCH_KEYS: usize = 100;
/// Deadline of every await on a watch (and of a whole round).
const TIMEOUT: Duration = Duration::from_secs(120);

/// The last revision of each key a benchmark writes, kept between rounds.
type Slots = Arc<Vec<AtomicI64>>;

fn slots(n: usize) -> Slots {
    Arc::new((0..n).map(|_| AtomicI64::new(0)).collect())
}

/// A store under test and whatever keeps it alive.
struct Backend {
    name: &'static str,
    store: Arc<dyn Storage>,
    _keep: Box<dyn std::any::Any>,
}

fn runtime() -> Runtime {
    // As the apiserver runs on this machine: one worker per core.
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

fn disk_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("storage-bench");
    std::fs::create_dir_all(&dir).expect("create the bench data dir");
    dir
}

async fn open(name: &str) -> Backend {
    let memory_durable = |parent: std::path::PathBuf, name: &'static str| {
        let dir = tempfile::Builder::new().prefix("memory-durable.").tempdir_in(parent).expect("a temp dir");
        let options = MemoryOptions { data_dir: Some(dir.path().to_path_buf()), ..Default::default() };
        eprintln!("{name}: data dir {}", dir.path().display());
        let store = MemoryStore::open(options).expect("open the durable memory store");
        Backend { name, store: Arc::new(store), _keep: Box::new(dir) }
    };
    let etcd = |options: EtcdProcessOptions, name: &'static str| async move {
        let etcd = EtcdProcess::start(options).await;
        eprintln!("{name}: data dir {}", etcd.data_dir().display());
        let store = EtcdStore::connect(&[etcd.endpoint().to_string()], EtcdOptions::default()).await.expect("connect");
        Backend { name, store: Arc::new(store), _keep: Box::new(etcd) }
    };
    match name {
        "memory" => Backend { name: "memory", store: Arc::new(MemoryStore::ephemeral()), _keep: Box::new(()) },
        "memory-durable" => memory_durable(disk_dir(), "memory-durable"),
        "memory-durable-shm" => memory_durable("/dev/shm".into(), "memory-durable-shm"),
        "etcd" => {
            let options = EtcdProcessOptions::default().unsafe_no_fsync(false).data_dir_parent(disk_dir());
            etcd(options, "etcd").await
        }
        "etcd-shm" => etcd(EtcdProcessOptions::default(), "etcd-shm").await,
        other => panic!("{BACKENDS_ENV}: unknown backend {other:?}"),
    }
}

fn value() -> Bytes {
    // A fresh allocation per write, as a caller serializing an object would hand over.
    Bytes::from(vec![b'v'; VALUE_BYTES])
}

/// Writes one key: a create the first time, then updates guarded by the previous revision.
async fn write(store: &dyn Storage, key: &[u8], revision: &mut Revision) {
    let result =
        if *revision == 0 { store.create(key, value()).await } else { store.update(key, value(), *revision).await };
    *revision = result.unwrap_or_else(|e| panic!("writing {}: {e}", String::from_utf8_lossy(key))).revision;
}

/// Compacts all history (outside the measured time), so memory stays bounded.
async fn compact(store: &dyn Storage) {
    let current = store.current_revision().await.expect("current revision");
    if store.compacted_revision().await.expect("compacted revision") < current {
        store.compact(current).await.expect("compact");
    }
}

/// `iters` writes spread over `writers` concurrent tasks, each on its own key.
async fn write_round(store: Arc<dyn Storage>, writers: usize, iters: u64, revisions: Slots) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (store, revisions) = (store.clone(), revisions.clone());
            let n = iters / writers as u64 + u64::from((w as u64) < iters % writers as u64);
            tokio::spawn(async move {
                let key = format!("/bench/writes/{writers}/{w:03}");
                let mut revision = revisions[w].load(Ordering::Acquire);
                for _ in 0..n {
                    write(&*store, key.as_bytes(), &mut revision).await;
                }
                revisions[w].store(revision, Ordering::Release);
            })
        })
        .collect();
    for task in tasks {
        tokio::time::timeout(TIMEOUT, task).await.expect("writers done in time").expect("a writer panicked");
    }
    let elapsed = start.elapsed();
    compact(&*store).await;
    elapsed
}

/// Reads `events` events from `watch`, then hands it back.
async fn read_events(mut watch: Watch, events: usize) -> Watch {
    let mut seen = 0;
    while seen < events {
        match tokio::time::timeout(TIMEOUT, watch.next()).await {
            Ok(Some(Ok(WatchResponse::Events(batch)))) => seen += batch.len(),
            Ok(Some(Ok(WatchResponse::Progress(_)))) => {}
            Ok(other) => panic!("unexpected watch response {other:?}"),
            Err(_) => panic!("a watcher got {seen} of {events} events within {TIMEOUT:?}"),
        }
    }
    assert_eq!(seen, events, "a watcher got more events than were written");
    watch
}

/// `iters` rounds of: `watchers` watchers (opened once per sample) each receive the `events`
/// events one writer writes. Only the rounds are timed.
async fn watch_round(store: Arc<dyn Storage>, watchers: usize, events: usize, iters: u64, keys: Slots) -> Duration {
    let range = KeyRange::prefix("/bench/watch/");
    let opened = futures::future::join_all((0..watchers).map(|_| store.watch(WatchRequest::new(range.clone(), 0))));
    let mut watches: Vec<Watch> = tokio::time::timeout(TIMEOUT, opened)
        .await
        .expect("watches opened in time")
        .into_iter()
        .map(|w| w.unwrap())
        .collect();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let readers: Vec<_> = watches.drain(..).map(|w| tokio::spawn(read_events(w, events))).collect();
        let writer = {
            let (store, keys) = (store.clone(), keys.clone());
            tokio::spawn(async move {
                let mut revisions: Vec<Revision> = keys.iter().map(|k| k.load(Ordering::Acquire)).collect();
                for i in 0..events {
                    let k = i % WATCH_KEYS;
                    write(&*store, format!("/bench/watch/{k:03}").as_bytes(), &mut revisions[k]).await;
                }
                for (cell, revision) in keys.iter().zip(revisions) {
                    cell.store(revision, Ordering::Release);
                }
            })
        };
        tokio::time::timeout(TIMEOUT, writer).await.expect("writer done in time").expect("the writer panicked");
        for reader in readers {
            watches
                .push(tokio::time::timeout(TIMEOUT, reader).await.expect("readers done").expect("a reader panicked"));
        }
        total += start.elapsed();
    }
    drop(watches);
    compact(&*store).await;
    total
}

/// Events the watch benchmark's writer writes per round: enough for a measurable round, few
/// enough that a round on a store whose writes wait for fsync stays short.
fn events_per_round(backend: &str, watchers: usize) -> usize {
    let fast = matches!(backend, "memory" | "memory-durable-shm");
    match (watchers, fast) {
        (1, true) => 20_000,
        (1, false) => 1_000,
        (100, true) => 2_000,
        (100, false) => 300,
        (_, true) => 200,
        (_, false) => 100,
    }
}

fn storage(c: &mut Criterion) {
    let rt = runtime();
    let names = std::env::var(BACKENDS_ENV).unwrap_or_else(|_| DEFAULT_BACKENDS.to_string());
    let backends: Vec<Backend> =
        names.split(',').map(str::trim).filter(|n| !n.is_empty()).map(|name| rt.block_on(open(name))).collect();

    let mut group = c.benchmark_group("writes");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(1));
    for backend in &backends {
        for writers in [1usize, 64] {
            let revisions = slots(writers);
            group.bench_function(BenchmarkId::new(backend.name, writers), |b| {
                b.to_async(&rt)
                    .iter_custom(|iters| write_round(backend.store.clone(), writers, iters, revisions.clone()));
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("watch");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for backend in &backends {
        let keys = slots(WATCH_KEYS);
        for watchers in [1usize, 100, 1000] {
            let events = events_per_round(backend.name, watchers);
            group.throughput(Throughput::Elements((watchers * events) as u64));
            group.bench_function(BenchmarkId::new(backend.name, watchers), |b| {
                b.to_async(&rt)
                    .iter_custom(|iters| watch_round(backend.store.clone(), watchers, events, iters, keys.clone()));
            });
        }
    }
    group.finish();
    drop(backends);
}

criterion_group!(benches, storage);
criterion_main!(benches);
