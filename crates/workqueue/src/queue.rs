//! The basic work queue: a FIFO of keys with client-go's dirty and processing sets.
//!
//! Controllers enqueue *keys* (`namespace/name`), not objects, and re-read the object from a cache
//! when they process the key. That makes adds idempotent, and the queue exploits it with two sets
//! (client-go's `Typed[T]`):
//!
//! * `dirty`: keys that need processing. Adding a key that is already dirty does nothing, so any
//!   number of adds before a worker picks the key up collapse into one piece of work.
//! * `processing`: keys handed out by [`get`](WorkQueue::get) and not yet [`done`](WorkQueue::done).
//!   A key added while it is processing is only marked dirty; `done` puts it back in the FIFO. So a
//!   key is **never processed by two workers at once**, and a change that arrives during processing
//!   is never lost: it is processed again afterwards.
//!
//! Every key in the FIFO is dirty and not processing; `get` moves a key from dirty to processing.
//!
//! Shutdown follows client-go too: after [`shut_down`](WorkQueue::shut_down) adds are ignored and
//! `get` returns `None` once the FIFO is empty (keys already queued are still handed out);
//! [`shut_down_with_drain`](WorkQueue::shut_down_with_drain) also waits until every handed-out key is
//! `done`, and a later `shut_down` cuts that wait short.
//!
//! The state lives under one synchronous mutex that is never held across an `.await`; waiting is
//! done on [`tokio::sync::Notify`]s. A waiter always registers for the notification *before* it
//! looks at the state, so a wake-up between the look and the wait cannot be lost.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::metrics::{MetricsProvider, NoopMetricsProvider, QueueMetrics, UNFINISHED_WORK_UPDATE_PERIOD};

/// How a queue identifies itself to metrics (client-go's `QueueConfig`).
#[derive(Clone)]
pub struct QueueConfig {
    /// The queue's name, the `name` label of its metrics. An empty name records no metrics.
    pub name: String,
    /// Where the queue's metrics go; [`NoopMetricsProvider`] by default.
    pub metrics_provider: Arc<dyn MetricsProvider>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig { name: String::new(), metrics_provider: Arc::new(NoopMetricsProvider) }
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig").field("name", &self.name).finish_non_exhaustive()
    }
}

impl QueueConfig {
    /// A config with this name and the no-op metrics provider.
    pub fn named(name: impl Into<String>) -> Self {
        QueueConfig { name: name.into(), ..QueueConfig::default() }
    }

    /// Sends the queue's metrics to `provider`.
    pub fn with_metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = provider;
        self
    }
}

/// A deduplicating FIFO of keys for controller workers. See the [module docs](self).
///
/// Share it between workers behind an `Arc`.
pub struct WorkQueue<K> {
    inner: Arc<QueueInner<K>>,
}

struct QueueInner<K> {
    state: Mutex<QueueState<K>>,
    /// A key was queued, or shutdown began: wakes [`WorkQueue::get`].
    key_queued: Notify,
    /// Processing became empty, or a drain was cut short: wakes [`WorkQueue::shut_down_with_drain`].
    processing_settled: Notify,
}

struct QueueState<K> {
    /// The order in which keys are handed out; each is in `dirty` and not in `processing`.
    fifo: VecDeque<K>,
    dirty: HashSet<K>,
    processing: HashSet<K>,
    shutting_down: bool,
    /// A `shut_down_with_drain` is waiting for `processing` to empty.
    draining: bool,
    metrics: Option<QueueMetrics<K>>,
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("WorkQueue")
            .field("queued", &state.fifo.len())
            .field("dirty", &state.dirty.len())
            .field("processing", &state.processing.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    /// An unnamed queue without metrics.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue with a name and metrics provider.
    ///
    /// # Panics
    ///
    /// When the queue records metrics (a non-empty name and a provider other than the no-op one)
    /// and is built outside a Tokio runtime: it spawns the task that refreshes the unfinished-work
    /// gauges every 500 ms.
    pub fn with_config(config: QueueConfig) -> Self {
        let metrics = QueueMetrics::new(&config.name, &config.metrics_provider);
        let tick_metrics = metrics.is_some();
        let inner = Arc::new(QueueInner {
            state: Mutex::new(QueueState {
                fifo: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                shutting_down: false,
                draining: false,
                metrics,
            }),
            key_queued: Notify::new(),
            processing_settled: Notify::new(),
        });
        // Without metrics there is nothing to refresh, so no task (and no runtime needed).
        if tick_metrics {
            tokio::spawn(update_unfinished_work(Arc::downgrade(&inner)));
        }
        WorkQueue { inner }
    }

    /// Marks `key` as needing processing.
    ///
    /// Does nothing if the key is already dirty (waiting, or re-added during processing) or the
    /// queue is shutting down. A key that is processing right now is only marked dirty and is
    /// queued when its worker calls [`done`](Self::done).
    pub fn add(&self, key: K) {
        let mut state = self.inner.state.lock();
        if state.shutting_down || state.dirty.contains(&key) {
            return;
        }
        if let Some(metrics) = state.metrics.as_mut() {
            metrics.add(&key);
        }
        let processing = state.processing.contains(&key);
        state.dirty.insert(key.clone());
        if processing {
            return;
        }
        state.fifo.push_back(key);
        drop(state);
        self.inner.key_queued.notify_one();
    }

    /// Waits for a key to process and hands it out, or returns `None` once the queue is shutting
    /// down and empty: the worker should then exit.
    ///
    /// The caller owns the key until it calls [`done`](Self::done); until then no other worker is
    /// given the same key. Cancelling the future never loses a key: a key is taken only when the
    /// future completes.
    pub async fn get(&self) -> Option<K> {
        loop {
            let queued = self.inner.key_queued.notified();
            tokio::pin!(queued);
            queued.as_mut().enable();
            {
                let mut state = self.inner.state.lock();
                if let Some(key) = state.fifo.pop_front() {
                    if let Some(metrics) = state.metrics.as_mut() {
                        metrics.get(&key);
                    }
                    state.dirty.remove(&key);
                    state.processing.insert(key.clone());
                    return Some(key);
                }
                if state.shutting_down {
                    return None;
                }
            }
            queued.await;
        }
    }

    /// Marks `key`'s processing finished. If it was added again meanwhile, it is queued now.
    ///
    /// Must be called once for every key [`get`](Self::get) returned, whatever the outcome, or the
    /// key is never handed out again (and a drain never ends).
    pub fn done(&self, key: &K) {
        let mut state = self.inner.state.lock();
        if let Some(metrics) = state.metrics.as_mut() {
            metrics.done(key);
        }
        // Only a key that was handed out goes back: a stray `done` for a key that is merely queued
        // must not put it in the FIFO twice (client-go would).
        let was_processing = state.processing.remove(key);
        if was_processing && state.dirty.contains(key) {
            state.fifo.push_back(key.clone());
            drop(state);
            self.inner.key_queued.notify_one();
        } else if state.processing.is_empty() {
            drop(state);
            self.inner.processing_settled.notify_waiters();
        }
    }

    /// How many keys wait to be handed out, not counting keys re-added during processing. For
    /// information only: by the time the caller looks, workers may have changed it.
    pub fn len(&self) -> usize {
        self.inner.state.lock().fifo.len()
    }

    /// Whether no key waits to be handed out (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts shutting down: new adds are ignored, and `get` returns `None` once the queued keys
    /// are handed out. Also ends a [`shut_down_with_drain`](Self::shut_down_with_drain) that is
    /// still waiting. Calling it again is harmless.
    pub fn shut_down(&self) {
        let mut state = self.inner.state.lock();
        state.shutting_down = true;
        state.draining = false;
        drop(state);
        self.inner.key_queued.notify_waiters();
        self.inner.processing_settled.notify_waiters();
    }

    /// Shuts down like [`shut_down`](Self::shut_down), then waits until no handed-out key is
    /// outstanding, i.e. every key `get` returned is [`done`](Self::done): in-flight work is
    /// finished when it returns.
    ///
    /// As in client-go it waits for the processing set only: keys still queued are not waited for
    /// (workers can still get them). Workers must keep calling `done`, or this never returns; a
    /// `shut_down` from elsewhere ends the wait at once.
    pub async fn shut_down_with_drain(&self) {
        {
            let mut state = self.inner.state.lock();
            state.shutting_down = true;
            state.draining = true;
        }
        self.inner.key_queued.notify_waiters();
        loop {
            let settled = self.inner.processing_settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            {
                let state = self.inner.state.lock();
                if state.processing.is_empty() || !state.draining {
                    return;
                }
            }
            settled.await;
        }
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }
}

/// Refreshes the in-flight gauges every [`UNFINISHED_WORK_UPDATE_PERIOD`] until the queue shuts down
/// or is dropped. Holds only a weak reference so it never keeps a dropped queue alive.
async fn update_unfinished_work<K: Clone + Eq + Hash>(queue: Weak<QueueInner<K>>) {
    // Like a Go ticker: first tick one period after start, and late ticks are dropped, not bunched.
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD,
        UNFINISHED_WORK_UPDATE_PERIOD,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticker.tick().await;
        let Some(queue) = queue.upgrade() else { return };
        let mut state = queue.state.lock();
        if state.shutting_down {
            return;
        }
        if let Some(metrics) = state.metrics.as_mut() {
            metrics.update_unfinished_work();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// Lets spawned tasks run until they block again.
    async fn settle() {
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn keys_come_out_in_fifo_order() {
        let queue = WorkQueue::new();
        for key in ["a", "b", "c"] {
            queue.add(key);
        }
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, Some("c"));
    }

    #[tokio::test]
    async fn adding_a_queued_key_again_queues_it_once() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn key_added_while_processing_waits_for_done_then_is_requeued_once() {
        let queue = WorkQueue::new();
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        // Processing: the re-adds only mark it dirty, so no other worker can get it.
        queue.add("a");
        queue.add("a");
        assert_eq!(queue.len(), 0);
        queue.done(&"a");
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn done_without_a_new_add_does_not_requeue() {
        let queue = WorkQueue::new();
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert!(queue.is_empty());
        // The key is clean again: a new add queues it normally.
        queue.add("a");
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test]
    async fn a_stray_done_for_a_queued_key_does_not_duplicate_it() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.done(&"a");
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn get_waits_for_an_add() {
        let queue = Arc::new(WorkQueue::new());
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        settle().await;
        assert!(!getter.is_finished());
        queue.add("a".to_string());
        assert_eq!(getter.await.unwrap().as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn each_add_wakes_a_different_waiting_worker() {
        let queue = Arc::new(WorkQueue::new());
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        settle().await;
        for key in [1, 2, 3] {
            queue.add(key);
        }
        let mut got = Vec::new();
        for getter in getters {
            got.push(getter.await.unwrap().unwrap());
        }
        got.sort();
        assert_eq!(got, [1, 2, 3]);
    }

    #[tokio::test]
    async fn a_cancelled_get_does_not_swallow_a_wakeup() {
        let queue = Arc::new(WorkQueue::new());
        let cancelled = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        let survivor = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        settle().await;
        cancelled.abort();
        queue.add(7);
        assert_eq!(survivor.await.unwrap(), Some(7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_workers_never_process_one_key_at_once() {
        const KEYS: u32 = 3;
        const ROUNDS: u32 = 300;
        let queue = Arc::new(WorkQueue::new());
        let in_flight = Arc::new(parking_lot::Mutex::new(HashSet::new()));
        let processed = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (queue, in_flight, processed) = (queue.clone(), in_flight.clone(), processed.clone());
                tokio::spawn(async move {
                    while let Some(key) = queue.get().await {
                        assert!(in_flight.lock().insert(key), "key {key} handed to two workers at once");
                        // Stay busy across a yield so other workers (and adds) interleave.
                        tokio::time::sleep(Duration::from_micros(50)).await;
                        assert!(in_flight.lock().remove(&key));
                        processed.fetch_add(1, Ordering::Relaxed);
                        queue.done(&key);
                    }
                })
            })
            .collect();
        for round in 0..ROUNDS {
            queue.add(round % KEYS);
            if round % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        queue.shut_down_with_drain().await;
        for worker in workers {
            worker.await.unwrap();
        }
        // Collapsing made fewer passes than adds, but every key was processed at least once.
        let passes = processed.load(Ordering::Relaxed);
        assert!((KEYS as usize..=ROUNDS as usize).contains(&passes), "{passes} passes");
        assert!(in_flight.lock().is_empty());
    }

    #[tokio::test]
    async fn shut_down_wakes_every_waiting_worker_with_none() {
        let queue = Arc::new(WorkQueue::<u32>::new());
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        settle().await;
        queue.shut_down();
        for getter in getters {
            assert_eq!(getter.await.unwrap(), None);
        }
        assert!(queue.shutting_down());
    }

    #[tokio::test]
    async fn shut_down_ignores_adds_but_hands_out_what_was_queued() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.shut_down();
        queue.add("b");
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shut_down_with_drain_waits_for_in_flight_work() {
        let queue = Arc::new(WorkQueue::new());
        queue.add("a");
        queue.add("b");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        let drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shut_down_with_drain().await }
        });
        settle().await;
        assert!(queue.shutting_down());
        assert!(!drain.is_finished(), "returned while a and b were processing");
        queue.done(&"a");
        settle().await;
        assert!(!drain.is_finished(), "returned while b was processing");
        queue.done(&"b");
        drain.await.unwrap();
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shut_down_with_drain_does_not_wait_for_keys_still_queued() {
        // client-go waits only for the processing set: a queued key is handed out afterwards.
        let queue = WorkQueue::new();
        queue.add("a");
        queue.shut_down_with_drain().await;
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shut_down_with_drain_returns_at_once_when_idle() {
        let queue = WorkQueue::<u32>::new();
        queue.shut_down_with_drain().await;
        assert!(queue.shutting_down());
    }

    #[tokio::test]
    async fn shut_down_cuts_a_drain_short() {
        let queue = Arc::new(WorkQueue::new());
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        let drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shut_down_with_drain().await }
        });
        settle().await;
        assert!(!drain.is_finished());
        queue.shut_down();
        drain.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_metrics_ticker_does_not_keep_a_dropped_queue_alive() {
        let provider = Arc::new(crate::PrometheusMetricsProvider::new());
        let queue = WorkQueue::with_config(QueueConfig::named("dropped").with_metrics_provider(provider));
        queue.add(1);
        assert_eq!(queue.get().await, Some(1));
        let inner = Arc::downgrade(&queue.inner);
        drop(queue);
        assert!(inner.upgrade().is_none());
        // Its next tick finds the queue gone and the task ends.
        tokio::time::advance(UNFINISHED_WORK_UPDATE_PERIOD).await;
    }
}
