//! The multi-version key-value state: every version of every key since the last compaction,
//! and the revision log that watches replay.
//!
//! Because every write touches exactly one key, revision `r` is exactly one event, so the
//! log is a dense `VecDeque` indexed by `r - log_start`: a watch at any revision finds its place
//! in O(1). The per-key version lists answer reads at past revisions.
//!
//! This type knows nothing about durability or watchers (see `watch.rs` and `wal.rs`); it is
//! plain data behind the store's lock.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use crate::{Event, EventKind, KeyRange, KeyValue, Revision, StorageError};

/// One version of a key. `value == None` is a tombstone (the key was deleted at `mod_revision`).
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub mod_revision: Revision,
    pub create_revision: Revision,
    pub version: i64,
    pub value: Option<Bytes>,
}

/// A write to apply, already validated.
#[derive(Clone, Debug)]
pub(crate) enum Mutation {
    Put { key: Bytes, value: Bytes },
    Delete { key: Bytes },
}

pub(crate) struct Mvcc {
    /// key → versions in increasing `mod_revision`.
    index: BTreeMap<Bytes, Vec<Version>>,
    /// Events of revisions `log_start ..= current`.
    log: VecDeque<Arc<Event>>,
    log_start: Revision,
    /// The newest revision written (possibly not yet durable).
    current: Revision,
    /// The newest revision readers and watchers may see (durable, in durable mode).
    published: Revision,
    compact_revision: Revision,
}

impl Default for Mvcc {
    fn default() -> Self {
        // etcd starts an empty store at revision 1; the first write gets revision 2.
        Mvcc {
            index: BTreeMap::new(),
            log: VecDeque::new(),
            log_start: 2,
            current: 1,
            published: 1,
            // etcd's compaction revision starts below every revision (-1), so compacting to 0
            // once succeeds.
            compact_revision: -1,
        }
    }
}

impl Mvcc {
    pub fn current(&self) -> Revision {
        self.current
    }
    pub fn published(&self) -> Revision {
        self.published
    }
    /// The compaction revision, 0 if never compacted.
    pub fn compact_revision(&self) -> Revision {
        self.compact_revision.max(0)
    }

    /// The compaction revision as kept: -1 if never compacted (for snapshots and replay).
    pub fn raw_compact_revision(&self) -> Revision {
        self.compact_revision
    }

    /// Makes every revision up to `revision` visible.
    pub fn publish(&mut self, revision: Revision) {
        debug_assert!(revision <= self.current);
        self.published = self.published.max(revision);
    }

    /// The newest state of `key`, including unpublished writes (writes validate against it).
    pub fn latest(&self, key: &[u8]) -> Option<KeyValue> {
        let versions = self.index.get(key)?;
        live_kv(key, versions.last()?)
    }

    /// Checks that `revision` (0 = published) can be read, and resolves it.
    pub fn readable_revision(&self, revision: Revision) -> Result<Revision, StorageError> {
        if revision <= 0 {
            return Ok(self.published);
        }
        if revision < self.compact_revision {
            return Err(StorageError::Compacted { compact_revision: self.compact_revision() });
        }
        if revision > self.published {
            return Err(StorageError::FutureRevision { current_revision: self.published });
        }
        Ok(revision)
    }

    /// etcd's Range at `revision` (already resolved by [`Mvcc::readable_revision`]).
    /// Returns the key-values (at most `limit`, 0 = all), the count of the whole range, and
    /// whether more remain.
    pub fn range(
        &self,
        range: &KeyRange,
        limit: i64,
        revision: Revision,
        count_only: bool,
    ) -> (Vec<KeyValue>, i64, bool) {
        let mut kvs = Vec::new();
        let mut count = 0i64;
        let want = if count_only {
            0
        } else if limit > 0 {
            limit as usize
        } else {
            usize::MAX
        };
        for (key, versions) in self.index_range(range) {
            // Keys past the page are only counted (etcd's `count`, which kube's
            // `remainingItemCount` needs): no copy of them.
            let Some(version) = version_at(versions, revision).filter(|v| v.value.is_some()) else {
                continue;
            };
            count += 1;
            if kvs.len() < want {
                kvs.extend(live_kv(key, version));
            }
        }
        let more = !count_only && (kvs.len() as i64) < count;
        (kvs, count, more)
    }

    fn index_range<'a>(&'a self, range: &KeyRange) -> Box<dyn Iterator<Item = (&'a Bytes, &'a Vec<Version>)> + 'a> {
        match &range.end {
            None => Box::new(self.index.get_key_value(&range.start[..]).into_iter()),
            Some(end) if end.as_ref() == b"\0" => {
                Box::new(self.index.range::<[u8], _>((Bound::Included(&range.start[..]), Bound::Unbounded)))
            }
            Some(end) if end[..] <= range.start[..] => Box::new(std::iter::empty()),
            Some(end) => {
                Box::new(self.index.range::<[u8], _>((Bound::Included(&range.start[..]), Bound::Excluded(&end[..]))))
            }
        }
    }

    /// Applies a validated write at the next revision and returns its event.
    pub fn apply(&mut self, mutation: Mutation) -> Arc<Event> {
        let revision = self.current + 1;
        let event = match mutation {
            Mutation::Put { key, value } => {
                let versions = self.index.entry(key.clone()).or_default();
                let prev = versions.last().and_then(|v| live_kv(&key, v));
                let (create_revision, version) = match &prev {
                    Some(p) => (p.create_revision, p.version + 1),
                    None => (revision, 1),
                };
                versions.push(Version { mod_revision: revision, create_revision, version, value: Some(value.clone()) });
                Event {
                    kind: EventKind::Put,
                    kv: KeyValue { key, value, create_revision, mod_revision: revision, version },
                    prev,
                }
            }
            Mutation::Delete { key } => {
                let versions = self.index.entry(key.clone()).or_default();
                let prev = versions.last().and_then(|v| live_kv(&key, v));
                debug_assert!(prev.is_some(), "delete of a missing key must be refused before apply");
                versions.push(Version { mod_revision: revision, create_revision: 0, version: 0, value: None });
                Event { kind: EventKind::Delete, kv: tombstone(key, revision), prev }
            }
        };
        let event = Arc::new(event);
        if self.log.is_empty() {
            self.log_start = revision;
        }
        self.log.push_back(event.clone());
        self.current = revision;
        event
    }

    /// Events of revisions `from ..= to` that fall in `range`, scanning at most `max_revisions`
    /// revisions. Returns the events and the last revision scanned. `from` must be at or above
    /// the compaction revision.
    pub fn events(
        &self,
        from: Revision,
        to: Revision,
        max_revisions: i64,
        range: &KeyRange,
    ) -> (Vec<Arc<Event>>, Revision) {
        let from = from.max(self.log_start);
        let to = to.min(self.current).min(from.saturating_add(max_revisions - 1));
        let mut out = Vec::new();
        if to < from {
            return (out, to);
        }
        let first = (from - self.log_start) as usize;
        let last = (to - self.log_start) as usize;
        for event in self.log.range(first..=last) {
            if range.contains(&event.kv.key) {
                out.push(event.clone());
            }
        }
        (out, to)
    }

    /// etcd's compaction: drops every version superseded at or before `revision`, keeping the
    /// state at `revision` readable (a tombstone exactly at `revision` is kept, as etcd 3.5.16
    /// does, so a watch from `revision` still sees that deletion).
    pub fn compact(&mut self, revision: Revision) -> Result<(), StorageError> {
        if revision <= self.compact_revision {
            return Err(StorageError::Compacted { compact_revision: self.compact_revision() });
        }
        if revision > self.published {
            return Err(StorageError::FutureRevision { current_revision: self.published });
        }
        self.index.retain(|_, versions| {
            // Index of the version in force at `revision`, if any.
            let in_force = versions.partition_point(|v| v.mod_revision <= revision);
            if in_force == 0 {
                return true;
            }
            let base = in_force - 1;
            let drop_base = versions[base].value.is_none() && versions[base].mod_revision < revision;
            versions.drain(..if drop_base { base + 1 } else { base });
            !versions.is_empty()
        });
        while self.log.front().is_some_and(|e| e.revision() < revision) {
            self.log.pop_front();
            self.log_start += 1;
        }
        // etcd fills a previous value by reading at revision - 1; for the event at the
        // compaction revision that read is compacted, so the event has none.
        if let Some(front) = self.log.front_mut()
            && front.revision() == revision
            && front.prev.is_some()
        {
            *front = Arc::new(Event { prev: None, ..(**front).clone() });
        }
        self.compact_revision = revision;
        Ok(())
    }

    /// Every version, for a snapshot: `(key, versions)` in key order.
    pub fn versions(&self) -> impl Iterator<Item = (&Bytes, &Vec<Version>)> {
        self.index.iter()
    }

    /// Rebuilds the state from a snapshot's versions.
    pub fn restore(current: Revision, compact_revision: Revision, index: BTreeMap<Bytes, Vec<Version>>) -> Mvcc {
        // The log is every version at or above the compaction revision, in revision order, with
        // the version before it (if live) as the previous value.
        let mut events: Vec<Event> = Vec::new();
        for (key, versions) in &index {
            for (i, v) in versions.iter().enumerate() {
                if v.mod_revision < compact_revision.max(1) {
                    continue;
                }
                let prev = i.checked_sub(1).and_then(|p| live_kv(key, &versions[p]));
                events.push(match &v.value {
                    Some(_) => Event { kind: EventKind::Put, kv: live_kv(key, v).expect("live"), prev },
                    None => Event { kind: EventKind::Delete, kv: tombstone(key.clone(), v.mod_revision), prev },
                });
            }
        }
        events.sort_by_key(Event::revision);
        let log_start = events.first().map(Event::revision).unwrap_or(current + 1);
        debug_assert!(events.iter().enumerate().all(|(i, e)| e.revision() == log_start + i as i64));
        Mvcc {
            index,
            log: events.into_iter().map(Arc::new).collect(),
            log_start,
            current,
            published: current,
            compact_revision,
        }
    }
}

fn version_at(versions: &[Version], revision: Revision) -> Option<&Version> {
    let n = versions.partition_point(|v| v.mod_revision <= revision);
    n.checked_sub(1).map(|i| &versions[i])
}

fn live_kv(key: &[u8], v: &Version) -> Option<KeyValue> {
    let value = v.value.clone()?;
    Some(KeyValue {
        key: Bytes::copy_from_slice(key),
        value,
        create_revision: v.create_revision,
        mod_revision: v.mod_revision,
        version: v.version,
    })
}

fn tombstone(key: Bytes, revision: Revision) -> KeyValue {
    KeyValue { key, value: Bytes::new(), create_revision: 0, mod_revision: revision, version: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(m: &mut Mvcc, k: &str, v: &str) -> Revision {
        let e = m.apply(Mutation::Put {
            key: Bytes::copy_from_slice(k.as_bytes()),
            value: Bytes::copy_from_slice(v.as_bytes()),
        });
        m.publish(e.revision());
        e.revision()
    }

    #[test]
    fn compaction_keeps_the_state_at_the_compaction_revision() {
        let mut m = Mvcc::default();
        let r1 = put(&mut m, "a", "1");
        let r2 = put(&mut m, "a", "2");
        let e = m.apply(Mutation::Delete { key: Bytes::from_static(b"a") });
        m.publish(e.revision());
        let r4 = put(&mut m, "b", "1");
        m.compact(r2).unwrap();
        let all = KeyRange::prefix(&b""[..]);
        let all = KeyRange { start: Bytes::from_static(b"\0"), end: all.end };
        assert_eq!(m.range(&all, 0, r2, false).0[0].value, "2");
        assert!(
            matches!(m.readable_revision(r1), Err(StorageError::Compacted { compact_revision }) if compact_revision == r2)
        );
        // The deletion at r2+1 and the write at r4 are still in the log.
        let (events, _) = m.events(r2, r4, 100, &all);
        assert_eq!(events.iter().map(|e| e.revision()).collect::<Vec<_>>(), vec![r2, r2 + 1, r4]);
        // Compacting past the deletion drops the key entirely.
        m.compact(r4).unwrap();
        assert!(!m.index.contains_key(&b"a"[..]));
    }
}
