//! Delayed adds: a [`WorkQueue`] plus "add this key after a while" (client-go's `DelayingQueue`).
//!
//! Controllers requeue a failed key after a pause instead of at once, so a persistent error does
//! not become a hot loop. [`DelayingQueue::add_after`] records the key with a deadline in a waiting
//! set; a background task (client-go's `waitingLoop`) sleeps until the earliest deadline and then
//! [`add`](WorkQueue::add)s the keys that are due, so from then on the basic queue's dedupe applies
//! (a due key that is processing waits for `done`).
//!
//! The waiting set holds a key at most once, with the **earliest** deadline asked for: a later
//! `add_after` with a longer delay does not postpone the key, a shorter one brings it forward.
//! That is the rule a rate limiter relies on: a key's first scheduled retry is never pushed back
//! by a second failure report. A zero delay skips the waiting set and adds at once.
//!
//! Every `add_after` counts as a retry in `workqueue_retries_total` (also a zero-delay one, and
//! whatever the waiting set already holds), as in client-go.
//!
//! Differences from client-go, both about plumbing rather than behaviour: the waiting set is a
//! map ordered by deadline, updated directly under a lock instead of through a 1000-slot channel,
//! so `add_after` never blocks and its effect is visible at once; and there is no 10 s heartbeat,
//! because Tokio's timers are the only thing that wakes the task and they do not miss.
//!
//! The task lives as long as the queue: shutdown or dropping the queue stops it, and delayed keys
//! still waiting are discarded (a shut-down queue ignores adds anyway).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::{CounterMetric, retries_metric};
use crate::queue::{QueueConfig, WorkQueue};

/// Deadlines further out than this are clamped to it, so `Instant` arithmetic cannot overflow on
/// absurd delays such as `Duration::MAX`. About 30 years: longer than any process lives.
const FARTHEST_DELAY: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// A [`WorkQueue`] that can also add keys after a delay. See the [module docs](self).
pub struct DelayingQueue<K> {
    queue: Arc<WorkQueue<K>>,
    waiting: Arc<WaitingAdds<K>>,
    retries: Option<Box<dyn CounterMetric>>,
}

/// The keys waiting for their deadline, shared with the task that adds them when due.
struct WaitingAdds<K> {
    state: Mutex<WaitingState<K>>,
    /// The earliest deadline moved earlier, or the queue stopped: the task must look again.
    changed: Notify,
}

struct WaitingState<K> {
    /// Keys in deadline order; the sequence number separates equal deadlines (first come, first
    /// added).
    by_deadline: BTreeMap<(Instant, u64), K>,
    /// Each waiting key's entry in `by_deadline`, so a key is held once and can be moved.
    entry_of: HashMap<K, (Instant, u64)>,
    next_seq: u64,
    stopped: bool,
}

impl<K> fmt::Debug for DelayingQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting.state.lock().entry_of.len())
            .finish()
    }
}

/// Same as [`DelayingQueue::new`], so it panics outside a Tokio runtime too.
impl<K: Clone + Eq + Hash + Send + Sync + 'static> Default for DelayingQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> DelayingQueue<K> {
    /// An unnamed delaying queue without metrics.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns the task that adds delayed keys when they are due.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A delaying queue with a name and metrics provider.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns the task that adds delayed keys when they are due.
    pub fn with_config(config: QueueConfig) -> Self {
        let retries = retries_metric(&config.name, &config.metrics_provider);
        let queue = Arc::new(WorkQueue::with_config(config));
        let waiting = Arc::new(WaitingAdds {
            state: Mutex::new(WaitingState {
                by_deadline: BTreeMap::new(),
                entry_of: HashMap::new(),
                next_seq: 0,
                stopped: false,
            }),
            changed: Notify::new(),
        });
        tokio::spawn(add_when_due(queue.clone(), waiting.clone()));
        DelayingQueue { queue, waiting, retries }
    }

    /// Adds `key` once `delay` has passed; a zero delay adds it now.
    ///
    /// If the key is already waiting, it keeps the earlier of the two deadlines. Ignored once the
    /// queue is shutting down.
    pub fn add_after(&self, key: K, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(retries) = &self.retries {
            retries.inc();
        }
        if delay.is_zero() {
            self.queue.add(key);
            return;
        }
        let deadline = Instant::now() + delay.min(FARTHEST_DELAY);
        let mut state = self.waiting.state.lock();
        if state.stopped {
            return;
        }
        if let Some(&(current, seq)) = state.entry_of.get(&key) {
            if current <= deadline {
                return;
            }
            state.by_deadline.remove(&(current, seq));
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.by_deadline.insert((deadline, seq), key.clone());
        state.entry_of.insert(key, (deadline, seq));
        // Only a new earliest deadline changes when the task must wake up.
        let is_earliest = state.by_deadline.keys().next() == Some(&(deadline, seq));
        drop(state);
        if is_earliest {
            self.waiting.changed.notify_one();
        }
    }

    /// Marks `key` as needing processing now. See [`WorkQueue::add`].
    pub fn add(&self, key: K) {
        self.queue.add(key);
    }

    /// Waits for a key to process; `None` once shut down and empty. See [`WorkQueue::get`].
    pub async fn get(&self) -> Option<K> {
        self.queue.get().await
    }

    /// Marks `key`'s processing finished. See [`WorkQueue::done`].
    pub fn done(&self, key: &K) {
        self.queue.done(key);
    }

    /// How many keys wait to be handed out now; keys waiting for a deadline are not counted.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no key waits to be handed out now (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Shuts down (see [`WorkQueue::shut_down`]) and discards the keys waiting for a deadline.
    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.stop_waiting();
    }

    /// Shuts down, discards the keys waiting for a deadline, and waits for in-flight work. See
    /// [`WorkQueue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.stop_waiting();
        self.queue.shut_down_with_drain().await;
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.queue.shutting_down()
    }

    fn stop_waiting(&self) {
        let mut state = self.waiting.state.lock();
        state.stopped = true;
        state.by_deadline.clear();
        state.entry_of.clear();
        drop(state);
        self.waiting.changed.notify_one();
    }
}

impl<K> Drop for DelayingQueue<K> {
    fn drop(&mut self) {
        // Stop the task so it releases the queue; the keys it was holding die with the queue.
        self.waiting.state.lock().stopped = true;
        self.waiting.changed.notify_one();
    }
}

/// The background task: adds waiting keys to the queue as their deadlines pass.
async fn add_when_due<K: Clone + Eq + Hash + Send + Sync + 'static>(
    queue: Arc<WorkQueue<K>>,
    waiting: Arc<WaitingAdds<K>>,
) {
    let mut due = Vec::new();
    loop {
        // Registered before looking, so a deadline moved earlier meanwhile still wakes us.
        let changed = waiting.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let next_deadline = {
            let mut state = waiting.state.lock();
            if state.stopped {
                return;
            }
            let now = Instant::now();
            let WaitingState { by_deadline, entry_of, .. } = &mut *state;
            while let Some(entry) = by_deadline.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let key = entry.remove();
                entry_of.remove(&key);
                due.push(key);
            }
            by_deadline.keys().next().map(|&(deadline, _)| deadline)
        };
        // Added outside the waiting lock: the queue has its own lock, and holding both is needless.
        for key in due.drain(..) {
            queue.add(key);
        }
        match next_deadline {
            Some(deadline) => {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = &mut changed => {}
                }
            }
            None => changed.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moves paused time forward and lets the queue's task add what became due.
    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn add_after_adds_when_the_delay_has_passed() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 50 * MS);
        advance(49 * MS).await;
        assert_eq!(queue.len(), 0);
        advance(MS).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_delay_adds_at_once() {
        let queue = DelayingQueue::new();
        queue.add_after("a", Duration::ZERO);
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_longer_delay_does_not_postpone_a_waiting_key() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 1000 * MS);
        queue.add_after("a", 5000 * MS);
        advance(1000 * MS).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        // The longer request was dropped, not kept as a second add.
        advance(4000 * MS).await;
        assert_eq!(queue.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_delay_moves_a_waiting_key_earlier() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 5000 * MS);
        advance(100 * MS).await;
        queue.add_after("a", 1000 * MS);
        advance(999 * MS).await;
        assert_eq!(queue.len(), 0);
        advance(MS).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        // The old, later deadline is gone with it.
        advance(5000 * MS).await;
        assert_eq!(queue.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_keys_are_added_in_deadline_order() {
        let queue = DelayingQueue::new();
        queue.add_after("c", 30 * MS);
        queue.add_after("a", 10 * MS);
        queue.add_after("b", 20 * MS);
        advance(10 * MS).await;
        assert_eq!(queue.len(), 1);
        advance(20 * MS).await;
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, Some("c"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_due_key_that_is_processing_waits_for_done() {
        let queue = DelayingQueue::new();
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        queue.add_after("a", 10 * MS);
        advance(10 * MS).await;
        assert_eq!(queue.len(), 0, "handed out again while processing");
        queue.done(&"a");
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_get_receives_the_delayed_key() {
        let queue = Arc::new(DelayingQueue::new());
        queue.add_after("a", 10 * MS);
        // Paused time auto-advances to the deadline while `get` waits.
        let started = Instant::now();
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(started.elapsed(), 10 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_discards_waiting_keys_and_ignores_new_ones() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 10 * MS);
        queue.shut_down();
        queue.add_after("b", Duration::ZERO);
        advance(20 * MS).await;
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn huge_delays_do_not_overflow() {
        let queue = DelayingQueue::new();
        queue.add_after("a", Duration::MAX);
        queue.add_after("a", 10 * MS);
        advance(10 * MS).await;
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_queue_stops_its_task() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 10 * MS);
        let shared = Arc::downgrade(&queue.queue);
        drop(queue);
        advance(MS).await;
        assert!(shared.upgrade().is_none(), "the task still holds the queue");
    }
}
