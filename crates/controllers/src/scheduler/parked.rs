//! The pods the scheduler found no node for, oldest first: kube-scheduler's `unschedulablePods`,
//! with the two things its queue keeps beside them.
//!
//! * A **move cycle**, bumped whenever something happens that can make a parked pod fit (a
//!   node comes or changes, a bound pod leaves its node). A pod whose failed attempt overlapped
//!   a move was judged against a cluster that has changed since, so it is not parked but tried
//!   again after its backoff (kube's `moveRequestCycle` and `podBackoffQ`): a slot freed while
//!   the pod was being filtered is not missed until the periodic retry. Unlike kube, the nodes
//!   freed are kept with their cycles, and an overlap by them counts only if the pod fits one
//!   of those nodes now: in a rollout, where pods leave nodes many times a second, nearly every
//!   attempt overlaps some move, and kube's rule would keep every waiting pod cycling through
//!   the 10 s backoff instead of parked.
//! * Per pod, its failed **attempts**, for kube's backoff: 1 s, doubled per attempt, at most
//!   10 s (`podInitialBackoffSeconds`, `podMaxBackoffSeconds`).
//!
//! Keys only: the pods themselves are read from the informer's cache when they are moved.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

/// kube-scheduler's `podInitialBackoffSeconds`.
const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// kube-scheduler's `podMaxBackoffSeconds`.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How many freed nodes are remembered; an attempt older than the oldest counts as overlapping.
const FREED_KEPT: usize = 4096;

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
    /// The cycle of the last move that may have changed every node.
    all_moved: u64,
    /// The nodes freed by the last moves, with their cycles, oldest first.
    freed: VecDeque<(u64, String)>,
    /// The cycle of the newest freed node no longer kept.
    freed_forgotten: u64,
}

impl Parked {
    /// The move cycle now; [`Parked::failed`] compares an attempt's start with it.
    pub(super) fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Records a failed attempt that started at `cycle`: parks the pod (at the back) unless a
    /// move since may have made it fit — one that may have changed every node, or a node freed
    /// since that `fits_now` — in which case the pod is tried again after its backoff.
    pub(super) fn failed(&mut self, key: &str, cycle: u64, mut fits_now: impl FnMut(&str) -> bool) -> Failed {
        let attempts = self.attempts.entry(key.to_owned()).or_default();
        *attempts = attempts.saturating_add(1);
        let backoff = backoff(*attempts);
        self.unpark(key);
        let overlapped = self.all_moved > cycle
            || self.freed_forgotten > cycle
            || self.freed.iter().rev().take_while(|(moved, _)| *moved > cycle).any(|(_, node)| fits_now(node));
        if overlapped {
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
        self.all_moved = self.cycle;
        self.place.clear();
        std::mem::take(&mut self.order).into_values().collect()
    }

    /// `node` was freed, which may make some parked pods fit: asks `decide` about each parked
    /// key, oldest first, and returns the keys it moved.
    pub(super) fn take_in_order(&mut self, node: &str, mut decide: impl FnMut(&str) -> Take) -> Vec<String> {
        self.cycle += 1;
        if self.freed.len() == FREED_KEPT
            && let Some((forgotten, _)) = self.freed.pop_front()
        {
            self.freed_forgotten = forgotten;
        }
        self.freed.push_back((self.cycle, node.to_owned()));
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
            assert_eq!(parked.failed(key, parked.cycle(), |_| true), Failed::Parked);
        }
        parked
    }

    #[test]
    fn pods_leave_oldest_first_and_a_retried_pod_goes_to_the_back() {
        let mut parked = parked(&["a", "b", "c"]);
        assert_eq!(parked.failed("a", parked.cycle(), |_| true), Failed::Parked);
        assert_eq!(parked.take_all(), ["b", "c", "a"]);
        assert!(parked.take_all().is_empty());
    }

    #[test]
    fn a_failure_that_overlapped_a_move_that_may_fit_it_backs_off_as_kube_does() {
        let mut parked = parked(&["a"]);
        let started = parked.cycle();
        parked.take_in_order("node-1", |_| Take::Keep);
        // node-1 was freed during the attempt but the pod does not fit it: parked.
        assert_eq!(parked.failed("a", started, |node| node != "node-1"), Failed::Parked);
        // It fits: "a" failed twice already, so its third attempt backs off 4 s.
        assert_eq!(parked.failed("a", started, |node| node == "node-1"), Failed::Backoff(Duration::from_secs(4)));
        assert!(!parked.contains("a") && parked.holds("a"), "a pod in backoff is held, not parked");
        assert_eq!(parked.failed("a", parked.cycle(), |_| true), Failed::Parked, "no move since: parked");
        let started = parked.cycle();
        parked.take_all();
        for _ in 0..10 {
            parked.failed("a", started, |_| false);
        }
        assert_eq!(parked.failed("a", started, |_| false), Failed::Backoff(MAX_BACKOFF), "every node may have changed");
        parked.forget("a");
        assert!(!parked.holds("a"));
        assert_eq!(
            parked.failed("a", started, |_| false),
            Failed::Backoff(INITIAL_BACKOFF),
            "forgetting resets the attempts"
        );
    }

    #[test]
    fn an_attempt_older_than_the_freed_nodes_kept_counts_as_overlapped() {
        let mut parked = Parked::default();
        let started = parked.cycle();
        for _ in 0..=FREED_KEPT {
            parked.take_in_order("node-1", |_| Take::Keep);
        }
        assert!(matches!(parked.failed("a", started, |_| false), Failed::Backoff(_)));
        assert_eq!(parked.failed("a", parked.cycle() - 1, |_| false), Failed::Parked);
    }

    #[test]
    fn take_in_order_moves_keeps_forgets_and_stops() {
        let mut parked = parked(&["a", "b", "c", "d", "e"]);
        let moved = parked.take_in_order("node-1", |key| match key {
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
