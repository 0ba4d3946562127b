//! kube-apiserver's time budget for blocked watchers (`time_budget.go`).
//!
//! When a dispatched event finds watchers with full queues, the dispatcher waits for them
//! for at most the available budget, shared by all of them. The budget refills at
//! `refill_per_second` of wall time up to `max`; time not spent is returned. So one slow
//! watcher can delay dispatch by at most `max` at once and `refill_per_second` on average,
//! and is closed when it does not drain in time.

use std::time::{Duration, Instant};

pub(crate) struct TimeBudget {
    budget: Duration,
    max: Duration,
    refill_per_second: Duration,
    last_refill: Instant,
}

impl TimeBudget {
    pub fn new(max: Duration, refill_per_second: Duration) -> TimeBudget {
        TimeBudget { budget: max, max, refill_per_second, last_refill: Instant::now() }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now - self.last_refill;
        self.last_refill = now;
        self.budget = (self.budget + self.refill_per_second.mul_f64(elapsed.as_secs_f64())).min(self.max);
    }

    /// Takes the whole available budget.
    pub fn take_available(&mut self) -> Duration {
        self.refill();
        std::mem::take(&mut self.budget)
    }

    /// Gives back what was not spent.
    pub fn return_unused(&mut self, unused: Duration) {
        self.refill();
        self.budget = (self.budget + unused).min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_capped_and_returned() {
        let mut b = TimeBudget::new(Duration::from_millis(100), Duration::from_millis(50));
        let got = b.take_available();
        assert!(got >= Duration::from_millis(100) && got < Duration::from_millis(101));
        assert!(b.take_available() < Duration::from_millis(5));
        b.return_unused(Duration::from_millis(500));
        assert!(b.take_available() <= Duration::from_millis(100));
    }
}
