//! Rate-limited requeues: a [`DelayingQueue`] plus a [`RateLimiter`] (client-go's
//! `RateLimitingQueue`).
//!
//! This is the queue controllers use. When processing a key fails, the worker calls
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited), which asks the limiter how long the
//! key should wait (counting the failure) and adds it after that delay. When processing succeeds,
//! the worker calls [`forget`](RateLimitingQueue::forget) so the key's next failure starts the
//! backoff from the beginning. [`num_requeues`](RateLimitingQueue::num_requeues) lets a worker give
//! up on a key after some number of failures.
//!
//! `forget` only clears the limiter's memory: the worker must still call
//! [`done`](RateLimitingQueue::done) for the key it got, in every case.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use crate::delaying::DelayingQueue;
use crate::queue::QueueConfig;
use crate::rate_limiter::RateLimiter;

/// A [`DelayingQueue`] whose retries are paced by a [`RateLimiter`]. See the [module docs](self).
pub struct RateLimitingQueue<K> {
    queue: DelayingQueue<K>,
    rate_limiter: Box<dyn RateLimiter<K>>,
}

impl<K> fmt::Debug for RateLimitingQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue").field("queue", &self.queue).finish_non_exhaustive()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<K> {
    /// An unnamed queue without metrics, pacing retries with `rate_limiter` (usually
    /// [`default_controller_rate_limiter`](crate::default_controller_rate_limiter)).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (see [`DelayingQueue::new`]).
    pub fn new(rate_limiter: impl RateLimiter<K> + 'static) -> Self {
        Self::with_config(rate_limiter, QueueConfig::default())
    }

    /// A queue with a name and metrics provider, pacing retries with `rate_limiter`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (see [`DelayingQueue::new`]).
    pub fn with_config(rate_limiter: impl RateLimiter<K> + 'static, config: QueueConfig) -> Self {
        RateLimitingQueue { queue: DelayingQueue::with_config(config), rate_limiter: Box::new(rate_limiter) }
    }

    /// Adds `key` after the delay the rate limiter gives it, counting one more failure of `key`.
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.rate_limiter.when(&key);
        self.queue.add_after(key, delay);
    }

    /// Clears `key`'s failure history in the rate limiter. Does not replace [`done`](Self::done).
    pub fn forget(&self, key: &K) {
        self.rate_limiter.forget(key);
    }

    /// How many failures of `key` the rate limiter remembers.
    pub fn num_requeues(&self, key: &K) -> usize {
        self.rate_limiter.num_requeues(key)
    }

    /// Adds `key` once `delay` has passed. See [`DelayingQueue::add_after`].
    pub fn add_after(&self, key: K, delay: Duration) {
        self.queue.add_after(key, delay);
    }

    /// Marks `key` as needing processing now. See [`WorkQueue::add`](crate::WorkQueue::add).
    pub fn add(&self, key: K) {
        self.queue.add(key);
    }

    /// Waits for a key to process; `None` once shut down and empty. See
    /// [`WorkQueue::get`](crate::WorkQueue::get).
    pub async fn get(&self) -> Option<K> {
        self.queue.get().await
    }

    /// Marks `key`'s processing finished. See [`WorkQueue::done`](crate::WorkQueue::done).
    pub fn done(&self, key: &K) {
        self.queue.done(key);
    }

    /// How many keys wait to be handed out now; keys waiting for a delay are not counted.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no key waits to be handed out now (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Shuts down and discards delayed keys. See [`DelayingQueue::shut_down`].
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// Shuts down, discards delayed keys, and waits for in-flight work. See
    /// [`WorkQueue::shut_down_with_drain`](crate::WorkQueue::shut_down_with_drain).
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.queue.shutting_down()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rate_limiter::{ItemExponentialFailureRateLimiter, default_controller_rate_limiter};

    const MS: Duration = Duration::from_millis(1);

    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_waits_the_limiters_delay() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.add_rate_limited("a");
        assert_eq!(queue.num_requeues(&"a"), 1);
        advance(4 * MS).await;
        assert_eq!(queue.len(), 0);
        advance(MS).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));

        // Second failure: 10 ms.
        queue.add_rate_limited("a");
        queue.done(&"a");
        advance(9 * MS).await;
        assert_eq!(queue.len(), 0);
        advance(MS).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.num_requeues(&"a"), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn forget_restarts_the_backoff() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        for _ in 0..4 {
            queue.add_rate_limited("a");
        }
        assert_eq!(queue.num_requeues(&"a"), 4);
        queue.forget(&"a");
        assert_eq!(queue.num_requeues(&"a"), 0);
        // The first request (5 ms) is still waiting; forget does not touch the queue.
        advance(5 * MS).await;
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_limiter_sees_the_queues_failures() {
        let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000)));
        let queue = RateLimitingQueue::new(limiter.clone());
        queue.add_rate_limited("a");
        queue.add_rate_limited("a");
        assert_eq!(limiter.num_requeues(&"a"), 2);
        // The second failure asked for 10 ms, but the key keeps its earlier 5 ms deadline.
        advance(5 * MS).await;
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_with_drain_waits_for_the_worker_then_get_ends() {
        let queue = Arc::new(RateLimitingQueue::new(default_controller_rate_limiter()));
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        queue.add_rate_limited("b");
        let drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shut_down_with_drain().await }
        });
        // Let the drain start before "b" is due: shutdown discards the waiting "b".
        advance(Duration::ZERO).await;
        advance(10 * MS).await;
        assert!(!drain.is_finished());
        // A failure reported during shutdown is ignored rather than queued.
        queue.add_rate_limited("a");
        queue.done(&"a");
        drain.await.unwrap();
        assert_eq!(queue.get().await, None);
    }
}
