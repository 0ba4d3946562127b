//! The pods the scheduler found no node for, oldest first: kube-scheduler's `unschedulablePods`,
//! with the two things its queue keeps beside them.
//!
//! * A **move cycle**, bumped whenever something happens that can make a parked pod fit (a
//!   node comes or changes, a bound pod leaves its node). A pod whose failed attempt overlapped
//!   a move was judged against a cluster that has changed since, so it is not parked but tried
//!   again after its backoff (kube's `moveRequestCycle` and `podBackoffQ`): a slot freed while
//!   the pod was being filtered is not missed until the periodic retry.
//! * Per pod, its failed **attempts**, for kube's backoff: 1 s, doubled per attempt, at most
//!   10 s (`podInitialBackoffSeconds`, `podMaxBackoffSeconds`).
//!
//! Keys only: the pods themselves are read from the informer's cache when they are moved.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// kube-scheduler's `podInitialBackoffSeconds`.
const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// kube-scheduler's `podMaxBackoffSeconds`.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// What [`Parked::take_in_order`] does with one parked pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    /// Moves it to the queue and goes on.
    Move,
    /// Leaves it parked and goes on.
    Keep,
    /// Forgets it (the pod is gone or no longer waits) and goes on.
    Forget,
    /// Leaves it parked and stops looking.
    Stop,
}

/// What became of a failed attempt ([`Parked::failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failed {
    /// Parked until a move or the periodic retry.
    Parked,
    /// A move happened during the attempt: try again after this backoff.
    Backoff(Duration),
}

/// See the module doc.
#[derive(Debug, Default)]
pub(super) struct Parked {
    /// Parked keys by when they were parked (a sequence number), oldest first.
    order: BTreeMap<u64, String>,
    /// Each parked key's place in `order`.
    place: HashMap<String, u64>,
    next: u64,
    /// Failed attempts per pod since it last left the scheduler's hands.
    attempts: HashMap<String, u32>,
    /// Pods waiting out a backoff (queued for later, not parked).
    backing_off: HashSet<String>,
    /// Bumped by every move.
    cycle: u64,
}

impl Parked {
    /// The move cycle now; [`Parked::failed`] compares an attempt's start with it.
    pub(super) fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Records a failed attempt that started at `cycle`: parks the pod (at the back) unless a
    /// move happened since, in which case the pod is tried again after its backoff.
    pub(super) fn failed(&mut self, key: &str, cycle: u64) -> Failed {
        let attempts = self.attempts.entry(key.to_owned()).or_default();
        *attempts = attempts.saturating_add(1);
        let backoff = backoff(*attempts);
        self.unpark(key);
        if cycle != self.cycle {
            self.backing_off.insert(key.to_owned());
            return Failed::Backoff(backoff);
        }
        self.backing_off.remove(key);
        let at = self.next;
        self.next += 1;
        self.order.insert(at, key.to_owned());
        self.place.insert(key.to_owned(), at);
        Failed::Parked
    }

    /// Forgets `key` altogether: it was bound, or it is gone or no longer waits.
    pub(super) fn forget(&mut self, key: &str) {
        self.unpark(key);
        self.attempts.remove(key);
        self.backing_off.remove(key);
    }

    /// Whether `key` is parked.
    pub(super) fn contains(&self, key: &str) -> bool {
        self.place.contains_key(key)
    }

    /// Whether `key` failed its last attempt and waits, parked or backing off: an update that
    /// changes nothing the scheduler reads need not queue it.
    pub(super) fn holds(&self, key: &str) -> bool {
        self.contains(key) || self.backing_off.contains(key)
    }

    /// A move that may make any parked pod fit: takes every parked key, oldest first.
    pub(super) fn take_all(&mut self) -> Vec<String> {
        self.cycle += 1;
        self.place.clear();
        std::mem::take(&mut self.order).into_values().collect()
    }

    /// A move that may make some parked pods fit: asks `decide` about each parked key, oldest
    /// first, and returns the keys it moved.
    pub(super) fn take_in_order(&mut self, mut decide: impl FnMut(&str) -> Take) -> Vec<String> {
        self.cycle += 1;
        let mut moved = Vec::new();
        let mut forgotten = Vec::new();
        for (&at, key) in &self.order {
            match decide(key) {
                Take::Move => moved.push(at),
                Take::Forget => forgotten.push(at),
                Take::Keep => {}
                Take::Stop => break,
            }
        }
        for at in forgotten {
            if let Some(key) = self.order.remove(&at) {
                self.place.remove(&key);
                self.attempts.remove(&key);
            }
        }
        let moved: Vec<String> = moved.into_iter().filter_map(|at| self.order.remove(&at)).collect();
        for key in &moved {
            self.place.remove(key);
        }
        moved
    }

    fn unpark(&mut self, key: &str) {
        if let Some(at) = self.place.remove(key) {
            self.order.remove(&at);
        }
    }
}

/// kube's backoff after `attempts` failed attempts.
fn backoff(attempts: u32) -> Duration {
    INITIAL_BACKOFF.saturating_mul(1 << attempts.saturating_sub(1).min(16)).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(keys: &[&str]) -> Parked {
        let mut parked = Parked::default();
        for key in keys {
            assert_eq!(parked.failed(key, parked.cycle()), Failed::Parked);
        }
        parked
    }

    #[test]
    fn pods_leave_oldest_first_and_a_retried_pod_goes_to_the_back() {
        let mut parked = parked(&["a", "b", "c"]);
        assert_eq!(parked.failed("a", parked.cycle()), Failed::Parked);
        assert_eq!(parked.take_all(), ["b", "c", "a"]);
        assert!(parked.take_all().is_empty());
    }

    #[test]
    fn a_failure_that_overlapped_a_move_backs_off_as_kube_does() {
        let mut parked = parked(&["a"]);
        let started = parked.cycle();
        parked.take_in_order(|_| Take::Keep);
        // "a" failed once already: its second attempt backs off 2 s.
        assert_eq!(parked.failed("a", started), Failed::Backoff(Duration::from_secs(2)));
        assert!(!parked.contains("a") && parked.holds("a"), "a pod in backoff is held, not parked");
        for _ in 0..10 {
            parked.failed("a", started);
        }
        assert_eq!(parked.failed("a", started), Failed::Backoff(MAX_BACKOFF));
        parked.forget("a");
        assert!(!parked.holds("a"));
        assert_eq!(parked.failed("a", started), Failed::Backoff(INITIAL_BACKOFF), "forgetting resets the attempts");
    }

    #[test]
    fn take_in_order_moves_keeps_forgets_and_stops() {
        let mut parked = parked(&["a", "b", "c", "d", "e"]);
        let moved = parked.take_in_order(|key| match key {
            "a" => Take::Keep,
            "b" => Take::Forget,
            "c" => Take::Move,
            "d" => Take::Stop,
            _ => unreachable!("stopped at d"),
        });
        assert_eq!(moved, ["c"]);
        assert!(parked.contains("a") && !parked.contains("b") && !parked.contains("c") && parked.contains("d"));
        assert_eq!(parked.take_all(), ["a", "d", "e"]);
    }
}
