//! Pages of a LIST at one revision, from the cache (kube-apiserver 1.33's
//! `ListFromCacheSnapshot`, KEP-4988): the continue pages of a paged LIST and `Exact` LISTs
//! are read here instead of from storage while the revision is still in the window.
//!
//! kube keeps a copy-on-write copy of its store per event. This cache keeps none: the objects
//! as they stood at revision R are the current objects with the window's changes after R
//! undone, and every such change is in the window while R is not older than the window's
//! oldest revision (each event keeps the state it replaced). A page walks the current objects
//! of its key range merged with the states at R of the keys changed since, so it costs the
//! page (and, for `remainingItemCount`, a count of the rest of the range) plus the changes since
//! R, never a copy of the collection, and an old revision costs no memory until it is read.

use std::cmp::Ordering as KeyOrder;
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use listwatch_meta::{EventType, Object};

use super::Inner;
use super::window::State;
use crate::event::Predicate;

/// What one page asks for.
pub struct PageRequest<'a> {
    /// The first storage key of the page (inclusive)...
    pub start: &'a [u8],
    /// ...and the end of the collection's range (exclusive).
    pub end: &'a [u8],
    /// The revision to read at; `None`: the cache's current one.
    pub resource_version: Option<i64>,
    /// At most this many items (0: no limit).
    pub limit: usize,
    /// Which objects the list wants.
    pub predicate: Option<&'a Predicate>,
    /// Whether to count the keys from `start` to `end` (for `remainingItemCount`).
    pub count: bool,
}

/// One page of a list read from the cache.
pub struct CachePage {
    /// The matching objects, in key order.
    pub items: Vec<Arc<Object>>,
    /// The revision the page is consistent at.
    pub resource_version: i64,
    /// The key of the last item when more keys follow it in the range (the next page starts
    /// after it); `None` on the last page.
    pub last_key: Option<Bytes>,
    /// Keys from `start` to the end of the range at that revision, when asked for.
    pub count: Option<usize>,
}

impl Inner {
    /// A page at `request.resource_version` (or now), or `None` when that revision is not the
    /// cache's to serve: older than its window, or newer than it has reached.
    pub(super) fn page(&self, state: &State, request: &PageRequest<'_>) -> Option<CachePage> {
        let at = request.resource_version.unwrap_or(state.resource_version);
        if at > state.resource_version || at < self.oldest_resource_version(state) {
            return None;
        }
        if request.start >= request.end {
            return Some(CachePage { items: Vec::new(), resource_version: at, last_key: None, count: Some(0) });
        }
        let undone = self.states_at(state, at, request.start, request.end);
        let current = state.objects.range::<[u8], _>((Bound::Included(request.start), Bound::Excluded(request.end)));
        let mut keys = AsOf { current: current.peekable(), undone: undone.iter().peekable() };
        let limit = if request.limit == 0 { usize::MAX } else { request.limit };
        let mut items = Vec::with_capacity(request.limit.min(state.objects.len()));
        let mut seen = 0usize;
        let mut last_key = None;
        for (key, object) in keys.by_ref() {
            seen += 1;
            if request.predicate.is_none_or(|p| p(object)) {
                items.push(object.clone());
                if items.len() == limit {
                    last_key = Some(key.clone());
                    break;
                }
            }
        }
        // More follow when any key does (kube's `hasMore`, matching or not).
        let more = keys.next().is_some();
        let count = request.count.then(|| seen + if more { 1 + keys.count() } else { 0 });
        Some(CachePage { items, resource_version: at, last_key: last_key.filter(|_| more), count })
    }

    /// The keys of `start..end` changed after `at`, each with its state at `at` (`None`: it did
    /// not exist then). The first change after `at` of a key holds the state it replaced.
    fn states_at(&self, state: &State, at: i64, start: &[u8], end: &[u8]) -> BTreeMap<Bytes, Option<Arc<Object>>> {
        let since = state.window.partition_point(|e| e.resource_version <= at);
        let mut undone = BTreeMap::new();
        for event in state.window.range(since..) {
            let key = self.key_of(Some(event.object.namespace()), event.object.name());
            if key.as_bytes() < start || key.as_bytes() >= end {
                continue;
            }
            undone.entry(Bytes::from(key)).or_insert_with(|| match event.kind {
                EventType::Added => None,
                EventType::Modified | EventType::Deleted => event.prev.clone(),
            });
        }
        undone
    }
}

/// The objects at a past revision, in key order: the current ones, where a key changed since
/// its state then instead.
struct AsOf<'a, C: Iterator<Item = (&'a Bytes, &'a Arc<Object>)>> {
    current: Peekable<C>,
    undone: Peekable<std::collections::btree_map::Iter<'a, Bytes, Option<Arc<Object>>>>,
}

impl<'a, C: Iterator<Item = (&'a Bytes, &'a Arc<Object>)>> Iterator for AsOf<'a, C> {
    type Item = (&'a Bytes, &'a Arc<Object>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.current.peek(), self.undone.peek()) {
                (None, None) => return None,
                (Some(_), None) => KeyOrder::Less,
                (None, Some(_)) => KeyOrder::Greater,
                (Some((current, _)), Some((changed, _))) => current.cmp(changed),
            };
            match order {
                KeyOrder::Less => return self.current.next(),
                // A changed key: its state then, if it existed then.
                KeyOrder::Equal | KeyOrder::Greater => {
                    if order == KeyOrder::Equal {
                        self.current.next();
                    }
                    let (key, then) = self.undone.next().expect("peeked");
                    if let Some(object) = then {
                        return Some((key, object));
                    }
                }
            }
        }
    }
}
