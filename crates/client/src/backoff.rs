//! client-go's reflector backoff (spec client-machinery.md §1.1).
//!
//! Delays start at 800 ms and double up to 30 s; each delay gets up to +100 % jitter
//! (`wait.Jitter(d, 1.0)` = d + rand[0,1)·d), so the sequence is [0.8, 1.6), [1.6, 3.2), … and
//! [30, 60) s once capped — about 0.22 requests a second against an unhealthy server. When more
//! than 2 minutes pass between two delays the sequence starts over ("if we don't back off for
//! 2 min, assume the apiserver is healthy").
//!
//! This differs from kube-rs on purpose: kube-rs adds at most one initial step (+≤800 ms) of
//! jitter and resets on any success, which spreads clients less and can hammer a flapping server.

use std::time::Duration;

use tokio::time::Instant;

/// The backoff's numbers. [`BackoffConfig::default`] is client-go's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first delay (client-go: 800 ms).
    pub initial: Duration,
    /// No delay grows beyond this (before jitter).
    pub max: Duration,
    /// Each delay is the previous one times this (client-go: 2).
    pub factor: f64,
    /// Each delay `d` becomes `d + rand[0,1)·jitter·d`.
    pub jitter: f64,
    /// A gap longer than this since the previous delay resets the sequence.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// The state of one backoff sequence.
#[derive(Clone, Debug)]
pub struct Backoff {
    config: BackoffConfig,
    /// The next delay before jitter.
    step: Duration,
    last: Option<Instant>,
}

impl Backoff {
    /// A sequence that starts at `config.initial`.
    pub fn new(config: BackoffConfig) -> Backoff {
        Backoff { config, step: config.initial, last: None }
    }

    /// The next delay, taken at `now`.
    pub fn next_delay(&mut self, now: Instant) -> Duration {
        self.next_delay_with(now, rand::random::<f64>())
    }

    /// The next delay with the jitter's random draw (in [0, 1)) given, for tests.
    pub fn next_delay_with(&mut self, now: Instant, random: f64) -> Duration {
        if let Some(last) = self.last
            && now.saturating_duration_since(last) > self.config.reset_after
        {
            self.step = self.config.initial;
        }
        self.last = Some(now);
        let base = self.step;
        self.step = base.mul_f64(self.config.factor).min(self.config.max);
        base + base.mul_f64(self.config.jitter * random.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    #[test]
    fn client_go_numbers_without_jitter() {
        let mut backoff = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        let delays: Vec<u128> = (0..9).map(|_| backoff.next_delay_with(now, 0.0).as_millis()).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000]);
    }

    #[test]
    fn jitter_adds_up_to_the_whole_step() {
        let mut backoff = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        assert_eq!(backoff.next_delay_with(now, 0.5).as_millis(), 1200);
        assert!((secs(backoff.next_delay_with(now, 0.999_999)) - 3.2).abs() < 1e-5);
        for _ in 0..10 {
            backoff.next_delay_with(now, 0.0);
        }
        // Capped: [30, 60).
        let capped = backoff.next_delay(now);
        assert!((30.0..60.0).contains(&secs(capped)), "{capped:?}");
    }

    #[test]
    fn a_quiet_two_minutes_resets_the_sequence() {
        let mut backoff = Backoff::new(BackoffConfig::default());
        let start = Instant::now();
        for _ in 0..5 {
            backoff.next_delay_with(start, 0.0);
        }
        // Exactly 2 minutes is not "more than" 2 minutes.
        assert_eq!(backoff.next_delay_with(start + Duration::from_secs(120), 0.0).as_millis(), 25_600);
        let later = start + Duration::from_secs(120) + Duration::from_secs(121);
        assert_eq!(backoff.next_delay_with(later, 0.0).as_millis(), 800);
        assert_eq!(backoff.next_delay_with(later, 0.0).as_millis(), 1600);
    }
}
