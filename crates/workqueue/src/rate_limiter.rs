//! Rate limiters: how long a failed key waits before its retry (client-go's
//! `default_rate_limiters.go`).
//!
//! A [`RateLimiter`] answers [`when`](RateLimiter::when) with the delay for a key's next retry and
//! counts the call as a failure; [`forget`](RateLimiter::forget) wipes a key's history once it
//! succeeds (or is given up on). Two kinds of limit are combined in practice:
//!
//! * **Per key**, so one broken object backs off without slowing the others:
//!   [`ItemExponentialFailureRateLimiter`] (base · 2^failures, capped) and
//!   [`ItemFastSlowRateLimiter`] (a few quick retries, then slow ones).
//! * **Overall**, so a burst of failures across many keys cannot flood the apiserver:
//!   [`BucketRateLimiter`], a token bucket with the semantics of Go's `rate.Limiter.Reserve`.
//!
//! [`MaxOfRateLimiter`] asks every limiter and takes the longest delay, and
//! [`default_controller_rate_limiter`] is client-go's standard combination: per key 5 ms doubling
//! up to 1000 s, overall 10 retries per second with bursts of 100. [`WithMaxWaitRateLimiter`] caps
//! another limiter's delays.
//!
//! Limiters take `&self` and lock internally, because all of a controller's workers share one.
//! The bucket reads time from [`tokio::time::Instant`], so tests can drive it with paused time;
//! outside a runtime that is the system clock.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Decides how long a key waits before it is retried, and remembers its failures.
pub trait RateLimiter<K>: Send + Sync {
    /// The delay before `key`'s next retry. Counts as one more failure of `key`.
    fn when(&self, key: &K) -> Duration;
    /// Forgets `key`'s failures, so its next delay starts from the beginning again. Call it when the
    /// key was processed successfully, or when giving up on it.
    fn forget(&self, key: &K);
    /// How many failures of `key` are remembered.
    fn num_requeues(&self, key: &K) -> usize;
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Box<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key);
    }
    fn num_requeues(&self, key: &K) -> usize {
        (**self).num_requeues(key)
    }
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Arc<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key);
    }
    fn num_requeues(&self, key: &K) -> usize {
        (**self).num_requeues(key)
    }
}

/// client-go's `DefaultTypedControllerRateLimiter`: the longer of a per-key exponential backoff
/// (5 ms, doubling per failure, at most 1000 s) and an overall token bucket (10 per second,
/// bursts of 100).
pub fn default_controller_rate_limiter<K: Clone + Eq + Hash + Send + Sync + 'static>() -> MaxOfRateLimiter<K> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000))),
        // The bucket only paces retries overall; it is not a per-key limit.
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// client-go's `DefaultTypedItemBasedRateLimiter`: per key 1 ms, doubling per failure, at most
/// 1000 s; no overall limit.
pub fn default_item_based_rate_limiter<K: Clone + Eq + Hash>() -> ItemExponentialFailureRateLimiter<K> {
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

/// Per key `base_delay · 2^failures`, at most `max_delay`.
///
/// The first failure waits `base_delay`. Giving up after some number of failures is the caller's
/// business (see [`num_requeues`](RateLimiter::num_requeues)).
pub struct ItemExponentialFailureRateLimiter<K> {
    failures: Mutex<HashMap<K, usize>>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<K> fmt::Debug for ItemExponentialFailureRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("keys", &self.failures.lock().len())
            .finish()
    }
}

impl<K: Clone + Eq + Hash> ItemExponentialFailureRateLimiter<K> {
    /// Starts at `base_delay` and doubles per failure up to `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        ItemExponentialFailureRateLimiter { failures: Mutex::new(HashMap::new()), base_delay, max_delay }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let exponent = {
            let mut failures = self.failures.lock();
            let count = failures.entry(key.clone()).or_insert(0);
            let exponent = *count;
            *count = count.saturating_add(1);
            exponent
        };
        // Exact integer doubling; any overflow is far past every sensible cap, so it means the cap.
        u32::try_from(exponent)
            .ok()
            .and_then(|exponent| 1u32.checked_shl(exponent))
            .and_then(|factor| self.base_delay.checked_mul(factor))
            .map_or(self.max_delay, |delay| delay.min(self.max_delay))
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn num_requeues(&self, key: &K) -> usize {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

/// Per key `fast_delay` for the first `max_fast_attempts` failures, `slow_delay` after that.
pub struct ItemFastSlowRateLimiter<K> {
    failures: Mutex<HashMap<K, usize>>,
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: usize,
}

impl<K> fmt::Debug for ItemFastSlowRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast_delay", &self.fast_delay)
            .field("slow_delay", &self.slow_delay)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("keys", &self.failures.lock().len())
            .finish()
    }
}

impl<K: Clone + Eq + Hash> ItemFastSlowRateLimiter<K> {
    /// `fast_delay` for the first `max_fast_attempts` failures of a key, then `slow_delay`.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: usize) -> Self {
        ItemFastSlowRateLimiter { failures: Mutex::new(HashMap::new()), fast_delay, slow_delay, max_fast_attempts }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemFastSlowRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let mut failures = self.failures.lock();
        let count = failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        if *count <= self.max_fast_attempts { self.fast_delay } else { self.slow_delay }
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn num_requeues(&self, key: &K) -> usize {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

/// An overall token bucket: `qps` tokens per second, holding at most `burst`, full at the start.
///
/// Like client-go's `BucketRateLimiter` around Go's `rate.Limiter`, each [`when`](RateLimiter::when)
/// *reserves* a token and returns how long until that token exists: the bucket may go into debt,
/// and the debt is the delay. So the first `burst` calls return zero, and calls beyond the burst are
/// spaced `1 / qps` apart (10 qps: 100 ms, 200 ms, …). It ignores the key and keeps no per-key
/// history, so `forget` does nothing and `num_requeues` is 0.
#[derive(Debug)]
pub struct BucketRateLimiter {
    bucket: Mutex<TokenBucket>,
}

#[derive(Debug)]
struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens at `updated`; negative when reservations are outstanding.
    tokens: f64,
    updated: Instant,
}

impl BucketRateLimiter {
    /// A bucket refilled at `qps` tokens per second (`f64::INFINITY`: no limit) holding at most
    /// `burst`.
    ///
    /// # Panics
    ///
    /// If `qps` is not positive or `burst` is 0: such a bucket could never hand out a token. (Go's
    /// limiter would answer with an effectively infinite delay instead.)
    pub fn new(qps: f64, burst: usize) -> Self {
        assert!(qps > 0.0, "token bucket rate must be positive, got {qps}");
        assert!(burst > 0, "token bucket burst must be positive");
        let burst = burst as f64;
        BucketRateLimiter { bucket: Mutex::new(TokenBucket { qps, burst, tokens: burst, updated: Instant::now() }) }
    }
}

impl TokenBucket {
    /// Takes one token at `now` and returns how long until it has been earned (`rate.Limiter.Reserve`
    /// followed by `Delay`).
    fn reserve(&mut self, now: Instant) -> Duration {
        if self.qps.is_infinite() {
            return Duration::ZERO;
        }
        let elapsed = now.saturating_duration_since(self.updated);
        let tokens = (self.tokens + elapsed.as_secs_f64() * self.qps).min(self.burst) - 1.0;
        self.updated = now;
        self.tokens = tokens;
        if tokens >= 0.0 {
            return Duration::ZERO;
        }
        // Same arithmetic as Go's `durationFromTokens`, truncated to whole nanoseconds like
        // `time.Duration(float)`, so the delays match to the nanosecond.
        let nanos = (-tokens / self.qps) * 1e9;
        Duration::from_nanos(nanos as u64)
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _key: &K) -> Duration {
        self.bucket.lock().reserve(Instant::now())
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> usize {
        0
    }
}

/// Asks every limiter and waits the longest of their delays.
///
/// Every limiter is asked each time (a token bucket reserves a token even when another limiter's
/// delay wins), so, as client-go notes, the bucket's burst can appear exceeded when some keys were
/// held back longer by a per-key limiter. `num_requeues` is the largest count, and `forget` goes to
/// all of them.
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> fmt::Debug for MaxOfRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter").field("limiters", &self.limiters.len()).finish()
    }
}

impl<K> MaxOfRateLimiter<K> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<K>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<K> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        self.limiters.iter().map(|limiter| limiter.when(key)).fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, key: &K) {
        for limiter in &self.limiters {
            limiter.forget(key);
        }
    }

    fn num_requeues(&self, key: &K) -> usize {
        self.limiters.iter().map(|limiter| limiter.num_requeues(key)).max().unwrap_or(0)
    }
}

/// Another limiter's delays, but never more than `max_delay` (client-go's `WithMaxWaitRateLimiter`).
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<R> {
    limiter: R,
    max_delay: Duration,
}

impl<R> WithMaxWaitRateLimiter<R> {
    /// Caps `limiter`'s delays at `max_delay`.
    pub fn new(limiter: R, max_delay: Duration) -> Self {
        WithMaxWaitRateLimiter { limiter, max_delay }
    }
}

impl<K, R: RateLimiter<K>> RateLimiter<K> for WithMaxWaitRateLimiter<R> {
    fn when(&self, key: &K) -> Duration {
        self.limiter.when(key).min(self.max_delay)
    }

    fn forget(&self, key: &K) {
        self.limiter.forget(key);
    }

    fn num_requeues(&self, key: &K) -> usize {
        self.limiter.num_requeues(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_from_5ms_and_caps_at_1000s() {
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let expected_ms: [u64; 18] = [
            5, 10, 20, 40, 80, 160, 320, 640, 1_280, 2_560, 5_120, 10_240, 20_480, 40_960, 81_920, 163_840, 327_680,
            655_360,
        ];
        for (failures, ms) in expected_ms.into_iter().enumerate() {
            assert_eq!(limiter.num_requeues(&"k"), failures);
            assert_eq!(limiter.when(&"k"), Duration::from_millis(ms), "failure {failures}");
        }
        // 5 ms · 2^18 = 1310.72 s is past the cap; so is everything after, without overflowing.
        for failures in 18..200 {
            assert_eq!(limiter.when(&"k"), Duration::from_secs(1000), "failure {failures}");
        }
        assert_eq!(limiter.num_requeues(&"k"), 200);
    }

    #[test]
    fn exponential_counts_each_key_separately_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        assert_eq!(limiter.when(&"a"), 5 * MS);
        assert_eq!(limiter.when(&"a"), 10 * MS);
        assert_eq!(limiter.when(&"b"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"a"), 2);
        assert_eq!(limiter.num_requeues(&"b"), 1);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"b"), 1);
    }

    #[test]
    fn default_item_based_starts_at_1ms() {
        let limiter = default_item_based_rate_limiter();
        assert_eq!(limiter.when(&"k"), MS);
        assert_eq!(limiter.when(&"k"), 2 * MS);
    }

    #[test]
    fn fast_slow_gives_fast_delays_then_slow_ones() {
        let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
        for _ in 0..3 {
            assert_eq!(limiter.when(&"k"), 5 * MS);
        }
        assert_eq!(limiter.when(&"k"), Duration::from_secs(10));
        assert_eq!(limiter.when(&"k"), Duration::from_secs(10));
        assert_eq!(limiter.num_requeues(&"k"), 5);
        limiter.forget(&"k");
        assert_eq!(limiter.num_requeues(&"k"), 0);
        assert_eq!(limiter.when(&"k"), 5 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_a_burst_of_100_then_10_per_second() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        for call in 0..100 {
            assert_eq!(RateLimiter::<&str>::when(&limiter, &"k"), Duration::ZERO, "call {call}");
        }
        // Beyond the burst each reservation goes further into debt, 100 ms per token.
        for debt in 1..=5u32 {
            assert_eq!(RateLimiter::<&str>::when(&limiter, &"k"), debt * 100 * MS);
        }
        // One second refills 10 tokens: 5 pay the debt, 5 are free, then debt again.
        tokio::time::advance(Duration::from_secs(1)).await;
        for call in 0..5 {
            assert_eq!(RateLimiter::<&str>::when(&limiter, &"k"), Duration::ZERO, "call {call}");
        }
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"k"), 100 * MS);
        // Half a token since then: the next one is 50 ms further out than it would have been.
        tokio::time::advance(50 * MS).await;
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"k"), 150 * MS);
        // It ignores keys entirely.
        assert_eq!(RateLimiter::<&str>::num_requeues(&limiter, &"k"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_up_to_the_burst_only() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..100 {
            assert_eq!(RateLimiter::<u8>::when(&limiter, &0), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u8>::when(&limiter, &0), 100 * MS);
    }

    #[test]
    fn unlimited_bucket_never_delays() {
        let limiter = BucketRateLimiter::new(f64::INFINITY, 1);
        for _ in 0..1000 {
            assert_eq!(RateLimiter::<u8>::when(&limiter, &0), Duration::ZERO);
        }
    }

    #[test]
    fn max_of_takes_the_longest_delay_and_the_largest_count() {
        let limiter: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1))),
            Box::new(ItemFastSlowRateLimiter::new(3 * MS, 50 * MS, 2)),
        ]);
        // Exponential: 1, 2, 4, 8, 16, 32, 64 ms; fast-slow: 3, 3, 50, 50, … ms.
        let expected_ms = [3, 3, 50, 50, 50, 50, 64];
        for ms in expected_ms {
            assert_eq!(limiter.when(&"k"), ms * MS);
        }
        assert_eq!(limiter.num_requeues(&"k"), 7);
        limiter.forget(&"k");
        assert_eq!(limiter.num_requeues(&"k"), 0);
        assert_eq!(limiter.when(&"k"), 3 * MS);
    }

    #[test]
    fn max_of_nothing_is_zero() {
        let limiter = MaxOfRateLimiter::<u8>::new(Vec::new());
        assert_eq!(limiter.when(&0), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&0), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_per_key_backoff_or_the_bucket_whichever_is_longer() {
        let limiter = default_controller_rate_limiter::<String>();
        // One key failing repeatedly: the per-key backoff dominates (the bucket has 100 tokens).
        for ms in [5, 10, 20, 40, 80] {
            assert_eq!(limiter.when(&"ns/broken".to_string()), ms * MS);
        }
        assert_eq!(limiter.num_requeues(&"ns/broken".to_string()), 5);
        // 95 more first failures of distinct keys use up the burst at 5 ms each.
        for i in 0..95 {
            assert_eq!(limiter.when(&format!("ns/{i}")), 5 * MS);
        }
        // Past the burst the bucket's debt dominates a fresh key's 5 ms.
        assert_eq!(limiter.when(&"ns/late-1".to_string()), 100 * MS);
        assert_eq!(limiter.when(&"ns/late-2".to_string()), 200 * MS);
        // The broken key again: per-key 160, 320, 640 ms against bucket debt 300, 400, 500 ms.
        for ms in [300, 400, 640] {
            assert_eq!(limiter.when(&"ns/broken".to_string()), ms * MS);
        }
        assert_eq!(limiter.num_requeues(&"ns/broken".to_string()), 8);
        limiter.forget(&"ns/broken".to_string());
        assert_eq!(limiter.num_requeues(&"ns/broken".to_string()), 0);
    }

    #[test]
    fn with_max_wait_caps_delays_and_passes_the_rest_through() {
        let limiter =
            WithMaxWaitRateLimiter::new(ItemFastSlowRateLimiter::new(MS, Duration::from_secs(60), 1), 10 * MS);
        assert_eq!(limiter.when(&"k"), MS);
        assert_eq!(limiter.when(&"k"), 10 * MS);
        assert_eq!(limiter.num_requeues(&"k"), 2);
        limiter.forget(&"k");
        assert_eq!(limiter.num_requeues(&"k"), 0);
    }

    #[test]
    fn shared_limiters_work_through_arc_and_box() {
        let shared = Arc::new(ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000)));
        let boxed: Box<dyn RateLimiter<&str>> = Box::new(shared.clone());
        assert_eq!(boxed.when(&"k"), 5 * MS);
        assert_eq!(shared.num_requeues(&"k"), 1);
    }
}
