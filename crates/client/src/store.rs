//! The cache: objects by key, with secondary indexes (client-go's `Indexer` /
//! `threadSafeMap`, spec client-machinery.md §1.7).
//!
//! * Keys are `namespace/name`, or `name` for cluster-scoped objects ([`Object::key`]).
//! * Values are `Arc<K>`: readers and event handlers share the cached object and must treat it
//!   as read-only, as in client-go (there is no way to mutate through an `Arc` anyway).
//! * Index functions map an object to any number of index values; `by_index` finds objects by
//!   one value. An index bucket that becomes empty is removed, so high-cardinality values do not
//!   pile up (kubernetes#84959). The `namespace` index ([`NAMESPACE_INDEX`]) is what generated
//!   informers install and what namespace listers use.
//! * [`Store::replace`] swaps the whole content at once under the write lock and rebuilds the
//!   indexes, so readers see either the old or the new state, never a mix (kube-rs's `InitDone`
//!   swap, client-go's `Replace`); it reports what changed so the informer can notify.
//! * One `RwLock` guards items and indexes together; readers run in parallel.
//! * Each key is allocated once (`Arc<str>`) and shared by the item map and every index bucket
//!   that holds it, so indexes cost a pointer per entry, not another copy of the key.
//!
//! Every change bumps a generation counter that [`Store::wait_until`] waits on, so code that
//! needs "the cache has caught up to X" waits for changes instead of polling.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::watch;

use crate::resource::Object;

/// The index client-go's generated informers install: objects by namespace.
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the index values of an object.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The namespace index function (client-go `MetaNamespaceIndexFunc`).
pub fn namespace_index_fn<K: Object>() -> IndexFn<K> {
    Arc::new(|object: &K| vec![object.namespace().unwrap_or("").to_owned()])
}

/// An index is already defined under this name.
#[derive(Debug, thiserror::Error)]
#[error("an index named {0:?} already exists")]
pub struct IndexConflict(pub String);

/// What a [`Store::replace`] changed.
pub struct Replaced<K> {
    /// Objects that were not there before.
    pub added: Vec<Arc<K>>,
    /// `(old, new)` for keys present before and after.
    pub updated: Vec<(Arc<K>, Arc<K>)>,
    /// `(key, last known object)` for keys that are gone.
    pub removed: Vec<(String, Arc<K>)>,
}

/// A cache key, shared between the item map and the indexes.
type Key = Arc<str>;

struct Inner<K> {
    items: HashMap<Key, Arc<K>>,
    indexers: HashMap<String, IndexFn<K>>,
    /// index name → index value → keys.
    indices: HashMap<String, HashMap<String, HashSet<Key>>>,
    resource_version: String,
    synced: bool,
}

/// A thread-safe, indexed object cache. Cheap to clone (shared).
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
    generation: Arc<watch::Sender<u64>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store { inner: self.inner.clone(), generation: self.generation.clone() }
    }
}

impl<K: Object> Default for Store<K> {
    fn default() -> Self {
        Store::new()
    }
}

impl<K: Object> Store<K> {
    /// An empty store without indexes.
    pub fn new() -> Store<K> {
        Store {
            inner: Arc::new(RwLock::new(Inner {
                items: HashMap::new(),
                indexers: HashMap::new(),
                indices: HashMap::new(),
                resource_version: String::new(),
                synced: false,
            })),
            generation: Arc::new(watch::channel(0).0),
        }
    }

    /// An empty store with the namespace index.
    pub fn with_namespace_index() -> Store<K> {
        let store = Store::new();
        store.add_indexer(NAMESPACE_INDEX, namespace_index_fn()).expect("a new store has no indexes");
        store
    }

    fn changed(&self) {
        if self.generation.receiver_count() == 0 {
            // Nobody waits (a cache fed by a reflector, most of the time): count the change
            // without notifying, which would take the notifier's locks for no one. A waiter
            // that subscribes after this check reads the store (already changed) before waiting.
            self.generation.send_if_modified(|g| {
                *g += 1;
                false
            });
        } else {
            self.generation.send_modify(|g| *g += 1);
        }
    }

    // ---- reads ------------------------------------------------------------------------------

    /// The object with cache key `key` (`namespace/name`, or `name` for cluster-scoped).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// The object `name` in `namespace` (`None` or `""` for cluster-scoped).
    pub fn get_namespaced(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        self.get(&crate::resource::object_key(namespace, name))
    }

    /// Whether an object with cache key `key` is held.
    pub fn contains(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    /// Every object (in no particular order).
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// The cache keys of every object (in no particular order).
    pub fn keys(&self) -> Vec<String> {
        self.inner.read().items.keys().map(ToString::to_string).collect()
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` over the objects under the read lock (no copies of the list).
    pub fn for_each(&self, mut f: impl FnMut(&str, &Arc<K>)) {
        for (key, object) in &self.inner.read().items {
            f(key, object);
        }
    }

    /// The resourceVersion of the last list, event or bookmark taken in.
    pub fn resource_version(&self) -> String {
        self.inner.read().resource_version.clone()
    }

    /// Whether a complete list has been taken in.
    pub fn has_synced(&self) -> bool {
        self.inner.read().synced
    }

    /// Objects whose value for `index` is `value`; `None` if there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Option<Vec<Arc<K>>> {
        let inner = self.inner.read();
        let values = inner.indices.get(index)?;
        Some(
            values
                .get(value)
                .map(|keys| keys.iter().filter_map(|k| inner.items.get(k).cloned()).collect())
                .unwrap_or_default(),
        )
    }

    /// How many objects have `value` for `index` (without copying them out); `None` if there
    /// is no such index.
    pub fn index_len(&self, index: &str, value: &str) -> Option<usize> {
        let inner = self.inner.read();
        Some(inner.indices.get(index)?.get(value).map_or(0, HashSet::len))
    }

    /// Keys whose value for `index` is `value`; `None` if there is no such index.
    pub fn index_keys(&self, index: &str, value: &str) -> Option<Vec<String>> {
        let inner = self.inner.read();
        let values = inner.indices.get(index)?;
        Some(values.get(value).map(|keys| keys.iter().map(ToString::to_string).collect()).unwrap_or_default())
    }

    /// Objects sharing any of `object`'s values for `index` (client-go `Index`).
    pub fn index(&self, index: &str, object: &K) -> Option<Vec<Arc<K>>> {
        let inner = self.inner.read();
        let function = inner.indexers.get(index)?;
        let values = inner.indices.get(index)?;
        let mut keys: HashSet<Key> = HashSet::new();
        for value in function(object) {
            if let Some(bucket) = values.get(&value) {
                keys.extend(bucket.iter().cloned());
            }
        }
        Some(keys.iter().filter_map(|k| inner.items.get(k).cloned()).collect())
    }

    /// The values `index` currently holds (client-go `ListIndexFuncValues`).
    pub fn index_values(&self, index: &str) -> Vec<String> {
        self.inner.read().indices.get(index).map(|v| v.keys().cloned().collect()).unwrap_or_default()
    }

    /// The names of the indexes.
    pub fn indexers(&self) -> Vec<String> {
        self.inner.read().indexers.keys().cloned().collect()
    }

    /// How many buckets an index has (for tests of bucket cleanup).
    pub fn index_bucket_count(&self, index: &str) -> usize {
        self.inner.read().indices.get(index).map_or(0, HashMap::len)
    }

    /// A receiver that changes whenever the store does.
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Waits until `condition` holds for the store (checked now and after every change), at
    /// most `timeout`. Returns whether it held.
    pub async fn wait_until(&self, timeout: Duration, mut condition: impl FnMut(&Store<K>) -> bool) -> bool {
        let mut changes = self.subscribe_changes();
        let wait = async {
            loop {
                changes.borrow_and_update();
                if condition(self) {
                    return;
                }
                if changes.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    // ---- writes -----------------------------------------------------------------------------

    /// Adds an index and fills it from the current content.
    pub fn add_indexer(&self, name: &str, function: IndexFn<K>) -> Result<(), IndexConflict> {
        let mut inner = self.inner.write();
        if inner.indexers.contains_key(name) {
            return Err(IndexConflict(name.to_owned()));
        }
        let mut values: HashMap<String, HashSet<Key>> = HashMap::new();
        for (key, object) in &inner.items {
            for value in function(object) {
                values.entry(value).or_default().insert(key.clone());
            }
        }
        inner.indices.insert(name.to_owned(), values);
        inner.indexers.insert(name.to_owned(), function);
        drop(inner);
        self.changed();
        Ok(())
    }

    /// Inserts or replaces the object under its key; returns the previous one.
    pub fn insert(&self, object: Arc<K>) -> Option<Arc<K>> {
        self.insert_at(object, None)
    }

    /// Removes the object under `key`; returns it.
    pub fn remove(&self, key: &str) -> Option<Arc<K>> {
        self.remove_at(key, None)
    }

    /// [`insert`](Self::insert), and record `resource_version` in the same write.
    pub fn insert_at(&self, object: Arc<K>, resource_version: Option<&str>) -> Option<Arc<K>> {
        let key = object.key();
        let mut inner = self.inner.write();
        // An update (the common case) keeps the key it has: no new `Arc<str>`.
        let previous = match inner.items.get_mut(key.as_str()) {
            Some(slot) => Some(std::mem::replace(slot, object.clone())),
            None => inner.items.insert(Key::from(key.as_str()), object.clone()),
        };
        if !inner.indexers.is_empty() {
            let key = inner.items.get_key_value(key.as_str()).map(|(k, _)| k.clone()).expect("just inserted");
            inner.reindex(&key, previous.as_deref(), Some(&object));
        }
        if let Some(rv) = resource_version {
            rv.clone_into(&mut inner.resource_version);
        }
        drop(inner);
        self.changed();
        previous
    }

    /// [`remove`](Self::remove), and record `resource_version` in the same write.
    pub fn remove_at(&self, key: &str, resource_version: Option<&str>) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let previous = inner.items.remove_entry(key);
        if let Some((key, previous)) = &previous {
            inner.reindex(key, Some(previous), None);
        }
        if let Some(rv) = resource_version {
            rv.clone_into(&mut inner.resource_version);
        }
        drop(inner);
        self.changed();
        previous.map(|(_, object)| object)
    }

    /// Replaces the whole content at once, marks the store synced at `resource_version`, and
    /// reports the difference.
    pub fn replace(&self, objects: Vec<Arc<K>>, resource_version: &str) -> Replaced<K> {
        let mut items: HashMap<Key, Arc<K>> = HashMap::with_capacity(objects.len());
        for object in objects {
            items.insert(object.key().into(), object);
        }
        let mut inner = self.inner.write();
        let old = std::mem::take(&mut inner.items);
        let mut replaced = Replaced { added: Vec::new(), updated: Vec::new(), removed: Vec::new() };
        for (key, object) in &items {
            match old.get(key) {
                Some(previous) => replaced.updated.push((previous.clone(), object.clone())),
                None => replaced.added.push(object.clone()),
            }
        }
        for (key, object) in old {
            if !items.contains_key(&key) {
                replaced.removed.push((key.to_string(), object));
            }
        }
        let indexers: Vec<(String, IndexFn<K>)> = inner.indexers.iter().map(|(n, f)| (n.clone(), f.clone())).collect();
        let mut indices = HashMap::with_capacity(indexers.len());
        for (name, function) in indexers {
            let mut values: HashMap<String, HashSet<Key>> = HashMap::new();
            for (key, object) in &items {
                for value in function(object) {
                    values.entry(value).or_default().insert(key.clone());
                }
            }
            indices.insert(name, values);
        }
        inner.items = items;
        inner.indices = indices;
        inner.resource_version = resource_version.to_owned();
        inner.synced = true;
        drop(inner);
        self.changed();
        replaced
    }

    /// Records how far the store has caught up (from events and bookmarks).
    pub fn set_resource_version(&self, resource_version: &str) {
        let mut inner = self.inner.write();
        if inner.resource_version != resource_version {
            resource_version.clone_into(&mut inner.resource_version);
            drop(inner);
            self.changed();
        }
    }
}

impl<K> Inner<K> {
    /// Moves `key` from `old`'s index values to `new`'s, dropping buckets that empty.
    fn reindex(&mut self, key: &Key, old: Option<&K>, new: Option<&K>) {
        for (name, function) in &self.indexers {
            let old_values = old.map(|o| function(o)).unwrap_or_default();
            let new_values = new.map(|n| function(n)).unwrap_or_default();
            if old_values == new_values && old.is_some() && new.is_some() {
                continue;
            }
            let values = self.indices.entry(name.clone()).or_default();
            for value in &old_values {
                if new_values.contains(value) {
                    continue;
                }
                if let Some(bucket) = values.get_mut(value) {
                    bucket.remove(&**key);
                    if bucket.is_empty() {
                        values.remove(value);
                    }
                }
            }
            for value in new_values {
                values.entry(value).or_default().insert(key.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::DynamicObject;
    use serde_json::json;

    fn object(ns: &str, name: &str, rv: &str, app: &str) -> Arc<DynamicObject> {
        Arc::new(DynamicObject(json!({
            "metadata": {"namespace": ns, "name": name, "resourceVersion": rv, "labels": {"app": app}},
        })))
    }

    fn by_app() -> IndexFn<DynamicObject> {
        Arc::new(|o: &DynamicObject| o.label("app").map(|a| vec![a.to_owned()]).unwrap_or_default())
    }

    fn names(mut objects: Vec<Arc<DynamicObject>>) -> Vec<String> {
        objects.sort_by_key(|o| o.key());
        objects.iter().map(|o| o.key()).collect()
    }

    #[test]
    fn indexes_follow_inserts_updates_and_removals() {
        let store = Store::<DynamicObject>::with_namespace_index();
        store.add_indexer("app", by_app()).unwrap();
        assert!(store.add_indexer("app", by_app()).is_err());
        store.insert(object("a", "x", "1", "web"));
        store.insert(object("a", "y", "2", "web"));
        store.insert(object("b", "z", "3", "db"));
        assert_eq!(names(store.by_index("app", "web").unwrap()), ["a/x", "a/y"]);
        assert_eq!((store.index_len("app", "web"), store.index_len("app", "none")), (Some(2), Some(0)));
        assert_eq!(store.index_len("nope", "web"), None);
        assert_eq!(names(store.by_index(NAMESPACE_INDEX, "b").unwrap()), ["b/z"]);
        assert!(store.by_index("nope", "x").is_none());
        assert_eq!(names(store.index("app", &object("q", "q", "0", "db")).unwrap()), ["b/z"]);

        // An update moving the only member of a bucket leaves no empty bucket behind.
        let previous = store.insert(object("b", "z", "4", "cache")).unwrap();
        assert_eq!(previous.resource_version(), Some("3"));
        assert_eq!(store.index_keys("app", "db").unwrap(), Vec::<String>::new());
        assert_eq!(store.index_bucket_count("app"), 2);
        store.remove("b/z");
        store.remove("a/x");
        store.remove("a/y");
        assert_eq!(store.index_bucket_count("app"), 0);
        assert_eq!(store.index_bucket_count(NAMESPACE_INDEX), 0);
        assert!(store.is_empty());
    }

    #[test]
    fn replace_swaps_everything_and_reports_the_difference() {
        let store = Store::<DynamicObject>::with_namespace_index();
        store.add_indexer("app", by_app()).unwrap();
        store.insert(object("a", "keep", "1", "web"));
        store.insert(object("a", "gone", "2", "web"));
        assert!(!store.has_synced());
        let replaced = store.replace(vec![object("a", "keep", "5", "db"), object("c", "new", "6", "web")], "9");
        assert!(store.has_synced());
        assert_eq!(store.resource_version(), "9");
        assert_eq!(names(replaced.added), ["c/new"]);
        assert_eq!(replaced.updated.len(), 1);
        assert_eq!(replaced.updated[0].0.resource_version(), Some("1"));
        assert_eq!(replaced.updated[0].1.resource_version(), Some("5"));
        assert_eq!(replaced.removed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["a/gone"]);
        assert_eq!(names(store.by_index("app", "web").unwrap()), ["c/new"]);
        assert_eq!(store.index_values(NAMESPACE_INDEX).len(), 2);
    }

    #[tokio::test]
    async fn wait_until_wakes_on_changes() {
        let store = Store::<DynamicObject>::new();
        let writer = store.clone();
        let task = tokio::spawn(async move {
            for i in 0..5 {
                writer.insert(object("a", &format!("o{i}"), "1", "x"));
                tokio::task::yield_now().await;
            }
        });
        assert!(store.wait_until(Duration::from_secs(10), |s| s.len() == 5).await);
        task.await.unwrap();
        assert!(!store.wait_until(Duration::from_millis(10), |s| s.len() == 6).await);
    }
}
