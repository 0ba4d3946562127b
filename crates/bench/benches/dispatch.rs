//! What the watch cache's dispatcher costs per event and per bookmark tick, by how many
//! watchers are registered and how many the event concerns.
//!
//! ```text
//! cargo bench -p listwatch-bench --bench dispatch -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! The fixture (`bench_fixture`) starts a configmaps cache on an ephemeral memory store and
//! registers watchers of single namespaces (`ns-0`, `ns-1`, …); each sample hands one prepared
//! MODIFIED event straight to the dispatcher, so storage, decoding and the cache's task are not
//! timed. Queues are emptied every 64 events, outside the timing, so no watcher is ever blocked:
//! this measures finding and feeding the interested watchers, not the slow-watcher policy.
//!
//! * `dispatch/one_namespace/100`: 100 watchers, all of the event's namespace;
//! * `dispatch/100_namespaces/10000`: 10,000 watchers, 100 in each of 100 namespaces; the event
//!   concerns the 100 of one;
//! * `bookmark_tick/none_due/10000`: one tick of the bookmark timer with 10,000 watchers that
//!   asked for bookmarks, none due yet.
//!
//! Figures (the command above, criterion's median estimate; one run each on a 2-core machine
//! shared with other builds, load average about 4: noisy, and differences of a few tens of
//! per cent, like the first row's, are within that noise):
//!
//! | bench                           | every watcher scanned (before) | indexed (after) |
//! |---------------------------------|--------------------------------|-----------------|
//! | `dispatch/one_namespace/100`    | 4.7 µs                         | 5.3 µs (no significant change) |
//! | `dispatch/100_namespaces/10000` | 64.7 µs                        | 5.0 µs          |
//! | `bookmark_tick/none_due/10000`  | 29.3 µs                        | 52 ns           |
//!
//! With the indexes, dispatch costs what the 100 interested watchers cost whatever else is
//! registered, and a tick with none due costs two lookups in the ordered deadlines.
// criterion_group! makes a public function a doc comment cannot reach.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use listwatch_watchcache::bench_fixture::DispatchFixture;
use tokio::runtime::Runtime;

/// Events dispatched between two drains of the queues (below the default capacity of 100).
const DRAIN_EVERY: u64 = 64;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

/// Times `iters` dispatches of namespace `namespace`'s event, draining the queues untimed.
fn time_dispatches(runtime: &Runtime, fixture: &mut DispatchFixture, namespace: usize, iters: u64) -> Duration {
    runtime.block_on(async {
        let mut total = Duration::ZERO;
        for i in 0..iters {
            let started = Instant::now();
            fixture.dispatch(namespace).await;
            total += started.elapsed();
            if i % DRAIN_EVERY == DRAIN_EVERY - 1 {
                fixture.drain();
            }
        }
        fixture.drain();
        total
    })
}

fn dispatch(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("dispatch");
    for (name, namespaces, per_namespace) in [("one_namespace", 1, 100), ("100_namespaces", 100, 100)] {
        let mut fixture = runtime.block_on(DispatchFixture::new(namespaces, per_namespace, false));
        let watchers = namespaces * per_namespace;
        assert_eq!(fixture.registered(), watchers);
        // A namespace in the middle of the set.
        let namespace = namespaces / 2;
        group.bench_function(BenchmarkId::new(name, watchers), |b| {
            b.iter_custom(|iters| time_dispatches(&runtime, &mut fixture, namespace, iters));
        });
        // Nobody was closed: every sample fed every interested watcher.
        assert_eq!(fixture.registered(), watchers);
    }
    group.finish();
}

fn bookmark_tick(c: &mut Criterion) {
    let runtime = runtime();
    let fixture = runtime.block_on(DispatchFixture::new(100, 100, true));
    let mut group = c.benchmark_group("bookmark_tick");
    // The first bookmarks are a minute away: no tick of this sample is due any.
    group.bench_function(BenchmarkId::new("none_due", 10_000), |b| b.iter(|| fixture.bookmark_tick()));
    group.finish();
}

criterion_group!(benches, dispatch, bookmark_tick);
criterion_main!(benches);
