//! The registered watchers of one cache, indexed so that the work of an event or a bookmark
//! tick grows with the watchers it concerns, not with all of them (kube-apiserver's
//! `indexedWatchers` and `watcherBookmarkTimeBuckets`, in `cacher.go`).
//!
//! Each watcher sits in exactly one queue set, chosen by what it watches: all namespaces or one,
//! every object or one name (a `metadata.name=X` field selector, as `kubectl get pod X -w` and
//! single-object informers send). An event of object `ns/x` is offered to at most four sets:
//! all namespaces, namespace `ns`, name `x` in all namespaces, name `x` in `ns`. kube indexes
//! by one trigger field per resource, with its namespaces apart; here the trigger is the
//! name, which every resource has.
//!
//! Bookmark deadlines are kept ordered, earliest first (a `BTreeSet` of (due, id): kube's
//! per-second buckets, each exact instant its own bucket), so a tick visits the watchers due
//! and none other, and bringing bookmarks forward after the interval was shortened visits only
//! those due later than the new limit.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use tokio::sync::mpsc;

use crate::watcher::Queued;

/// The queues of a set of watchers, by id.
type Queues = HashMap<u64, mpsc::Sender<Queued>>;

/// Watchers of the same name (or of any name), by the namespace they watch.
#[derive(Default)]
struct ByNamespace {
    /// Watchers of all namespaces.
    all: Queues,
    /// Watchers of one namespace. A set that empties is removed.
    namespaces: HashMap<String, Queues>,
}

impl ByNamespace {
    fn queues_mut(&mut self, namespace: Option<&str>) -> &mut Queues {
        match namespace {
            None => &mut self.all,
            Some(ns) => self.namespaces.entry(ns.to_owned()).or_default(),
        }
    }

    /// Takes `id` out of the set of `namespace`, dropping that set if it empties.
    fn remove(&mut self, namespace: Option<&str>, id: u64) {
        match namespace {
            None => {
                self.all.remove(&id);
            }
            Some(ns) => {
                if let Some(queues) = self.namespaces.get_mut(ns) {
                    queues.remove(&id);
                    if queues.is_empty() {
                        self.namespaces.remove(ns);
                    }
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.all.is_empty() && self.namespaces.is_empty()
    }
}

/// What the cache knows of one registered watcher.
pub(super) struct Registered {
    /// Only this namespace's events (`None`: all).
    pub(super) namespace: Option<String>,
    /// Only the events of the object of this name (`None`: all).
    pub(super) name: Option<String>,
    pub(super) tx: mpsc::Sender<Queued>,
    /// When the next bookmark is due (`None`: no bookmarks, or past the last one).
    pub(super) next_bookmark: Option<Instant>,
    /// When the server ends the watch.
    pub(super) deadline: Instant,
}

/// The registered watchers of one cache and their indexes.
#[derive(Default)]
pub(super) struct Watchers {
    next_id: u64,
    registered: HashMap<u64, Registered>,
    /// Watchers of every object, by namespace.
    unnamed: ByNamespace,
    /// Watchers of one object name, by that name, then by namespace. A name whose watchers
    /// are all gone is removed.
    named: HashMap<String, ByNamespace>,
    /// (due, id) of every watcher with a bookmark scheduled, earliest first.
    bookmarks: BTreeSet<(Instant, u64)>,
}

impl Watchers {
    /// Registers a watcher; returns its id.
    pub(super) fn register(&mut self, watcher: Registered) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let scope = match &watcher.name {
            None => &mut self.unnamed,
            Some(name) => self.named.entry(name.clone()).or_default(),
        };
        scope.queues_mut(watcher.namespace.as_deref()).insert(id, watcher.tx.clone());
        if let Some(due) = watcher.next_bookmark {
            self.bookmarks.insert((due, id));
        }
        self.registered.insert(id, watcher);
        id
    }

    /// Removes a watcher from the registry and every index; false if it was not registered.
    pub(super) fn remove(&mut self, id: u64) -> bool {
        let Some(watcher) = self.registered.remove(&id) else {
            return false;
        };
        let namespace = watcher.namespace.as_deref();
        match &watcher.name {
            None => self.unnamed.remove(namespace, id),
            Some(name) => {
                if let Some(scope) = self.named.get_mut(name) {
                    scope.remove(namespace, id);
                    if scope.is_empty() {
                        self.named.remove(name);
                    }
                }
            }
        }
        if let Some(due) = watcher.next_bookmark {
            self.bookmarks.remove(&(due, id));
        }
        true
    }

    /// Removes every watcher (their queues close); returns how many there were.
    pub(super) fn clear(&mut self) -> usize {
        let removed = self.registered.len();
        *self = Watchers { next_id: self.next_id, ..Watchers::default() };
        removed
    }

    /// How many watchers are registered.
    pub(super) fn len(&self) -> usize {
        self.registered.len()
    }

    /// The watchers an event of object `namespace`/`name` concerns, each once: those of all
    /// namespaces or of `namespace`, watching every object or `name`.
    pub(super) fn interested<'a>(
        &'a self,
        namespace: &str,
        name: &str,
    ) -> impl Iterator<Item = (u64, &'a mpsc::Sender<Queued>)> + 'a {
        let named = self.named.get(name);
        let sets = [
            Some(&self.unnamed.all),
            self.unnamed.namespaces.get(namespace),
            named.map(|scope| &scope.all),
            named.and_then(|scope| scope.namespaces.get(namespace)),
        ];
        sets.into_iter().flatten().flat_map(|queues| queues.iter().map(|(&id, tx)| (id, tx)))
    }

    /// A registered watcher.
    pub(super) fn get(&self, id: u64) -> Option<&Registered> {
        self.registered.get(&id)
    }

    /// Moves every bookmark due after `latest` to `latest` (the interval was shortened).
    pub(super) fn bring_bookmarks_forward(&mut self, latest: Instant) {
        if self.bookmarks.last().is_none_or(|&(due, _)| due <= latest) {
            return;
        }
        // Everything after (latest, any id).
        let later = self.bookmarks.split_off(&(latest, u64::MAX));
        for (_, id) in later {
            if let Some(watcher) = self.registered.get_mut(&id) {
                watcher.next_bookmark = Some(latest);
            }
            self.bookmarks.insert((latest, id));
        }
    }

    /// The watchers whose bookmark is due at `now`, earliest first.
    pub(super) fn bookmarks_due(&self, now: Instant) -> Vec<u64> {
        self.bookmarks.range(..=(now, u64::MAX)).map(|&(_, id)| id).collect()
    }

    /// Sets when a watcher's next bookmark is due (`None`: no more).
    pub(super) fn schedule_bookmark(&mut self, id: u64, next: Option<Instant>) {
        let Some(watcher) = self.registered.get_mut(&id) else { return };
        if let Some(due) = watcher.next_bookmark {
            self.bookmarks.remove(&(due, id));
        }
        watcher.next_bookmark = next;
        if let Some(due) = next {
            self.bookmarks.insert((due, id));
        }
    }

    /// Whether no index holds anything (for tests: nothing leaks once all are removed).
    #[cfg(test)]
    pub(super) fn indexes_are_empty(&self) -> bool {
        self.registered.is_empty() && self.unnamed.is_empty() && self.named.is_empty() && self.bookmarks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn watcher(namespace: Option<&str>, name: Option<&str>, next_bookmark: Option<Instant>) -> Registered {
        let (tx, _rx) = mpsc::channel(1);
        Registered {
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            tx,
            next_bookmark,
            deadline: Instant::now() + Duration::from_secs(3600),
        }
    }

    fn interested(watchers: &Watchers, namespace: &str, name: &str) -> Vec<u64> {
        let mut ids: Vec<u64> = watchers.interested(namespace, name).map(|(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn an_event_concerns_its_namespace_its_name_and_watchers_of_everything() {
        let mut watchers = Watchers::default();
        let all = watchers.register(watcher(None, None, None));
        let ns_a = watchers.register(watcher(Some("a"), None, None));
        let ns_b = watchers.register(watcher(Some("b"), None, None));
        let x_anywhere = watchers.register(watcher(None, Some("x"), None));
        let x_in_a = watchers.register(watcher(Some("a"), Some("x"), None));
        let x_in_b = watchers.register(watcher(Some("b"), Some("x"), None));
        let y_in_a = watchers.register(watcher(Some("a"), Some("y"), None));

        assert_eq!(interested(&watchers, "a", "x"), [all, ns_a, x_anywhere, x_in_a]);
        assert_eq!(interested(&watchers, "b", "x"), [all, ns_b, x_anywhere, x_in_b]);
        assert_eq!(interested(&watchers, "a", "y"), [all, ns_a, y_in_a]);
        assert_eq!(interested(&watchers, "c", "z"), [all]);
        // Cluster-scoped objects have the empty namespace: only watchers of all namespaces.
        assert_eq!(interested(&watchers, "", "x"), [all, x_anywhere]);
    }

    #[test]
    fn removing_every_watcher_leaves_no_index_entry() {
        let mut watchers = Watchers::default();
        let soon = Instant::now() + Duration::from_secs(1);
        let ids: Vec<u64> =
            [(None, None), (Some("a"), None), (None, Some("x")), (Some("a"), Some("x")), (Some("b"), Some("y"))]
                .into_iter()
                .map(|(ns, name)| watchers.register(watcher(ns, name, Some(soon))))
                .collect();
        assert_eq!(watchers.len(), 5);
        // A rescheduled bookmark is found again by its new deadline.
        watchers.schedule_bookmark(ids[1], Some(soon + Duration::from_secs(5)));
        for &id in &ids {
            assert!(watchers.remove(id));
            assert!(!watchers.interested("a", "x").any(|(other, _)| other == id));
        }
        assert!(!watchers.remove(ids[0]), "already gone");
        assert_eq!(watchers.len(), 0);
        assert!(watchers.indexes_are_empty());
    }

    #[test]
    fn clear_empties_every_index_and_ids_stay_unique() {
        let mut watchers = Watchers::default();
        let first = watchers.register(watcher(Some("a"), Some("x"), Some(Instant::now())));
        assert_eq!(watchers.clear(), 1);
        assert!(watchers.indexes_are_empty());
        assert!(watchers.register(watcher(None, None, None)) > first);
    }

    #[test]
    fn only_due_bookmarks_are_returned_and_later_ones_come_forward() {
        let mut watchers = Watchers::default();
        let now = Instant::now();
        let due = watchers.register(watcher(None, None, Some(now)));
        let in_a_second = watchers.register(watcher(None, None, Some(now + Duration::from_secs(1))));
        let in_a_minute = watchers.register(watcher(None, None, Some(now + Duration::from_secs(60))));
        let _none = watchers.register(watcher(None, None, None));
        assert_eq!(watchers.bookmarks_due(now), [due]);

        // A 10 s interval from now: the minute's bookmark comes forward, the second's stays.
        let latest = now + Duration::from_secs(10);
        watchers.bring_bookmarks_forward(latest);
        assert_eq!(watchers.get(in_a_minute).unwrap().next_bookmark, Some(latest));
        assert_eq!(watchers.get(in_a_second).unwrap().next_bookmark, Some(now + Duration::from_secs(1)));
        assert_eq!(watchers.bookmarks_due(latest), [due, in_a_second, in_a_minute]);
        assert_eq!(watchers.bookmarks_due(latest - Duration::from_millis(1)), [due, in_a_second]);

        // Sent: the next is due later; none: it leaves the queue.
        watchers.schedule_bookmark(due, Some(now + Duration::from_secs(2)));
        watchers.schedule_bookmark(in_a_second, None);
        assert_eq!(watchers.bookmarks_due(now + Duration::from_secs(2)), [due]);
        assert_eq!(watchers.bookmarks_due(latest), [due, in_a_minute]);
    }
}
