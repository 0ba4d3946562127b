//! Typed, read-only views of a cache (client-go's generated listers and `ResourceIndexer[T]`,
//! spec client-machinery.md §1.7).
//!
//! `list` takes a [`LabelSelector`]; an empty one skips label evaluation. A namespace lister uses
//! the `namespace` index when the store has it and scans otherwise. A miss is `None` rather than
//! client-go's NotFound error.

use std::sync::Arc;

use crate::resource::{Object, object_key};
use crate::selector::LabelSelector;
use crate::store::{NAMESPACE_INDEX, Store};

/// Lists and gets objects of one resource from a cache.
pub struct Lister<K> {
    store: Store<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister { store: self.store.clone() }
    }
}

impl<K: Object> Lister<K> {
    /// A lister reading `store` (an informer's [`lister`](crate::SharedInformer::lister) makes
    /// one).
    pub fn new(store: Store<K>) -> Lister<K> {
        Lister { store }
    }

    /// Every cached object the selector matches.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let mut out = Vec::new();
        self.store.for_each(|_, object| {
            if selector.is_empty() || selector.matches(object.as_ref()) {
                out.push(object.clone());
            }
        });
        out
    }

    /// A cluster-scoped object by name (or a namespaced one by `namespace/name`).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get(name)
    }

    /// The objects of one namespace.
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister { store: self.store.clone(), namespace: namespace.to_owned() }
    }
}

/// The objects of one namespace.
pub struct NamespaceLister<K> {
    store: Store<K>,
    namespace: String,
}

impl<K: Object> NamespaceLister<K> {
    /// The cached objects of this namespace the selector matches (through the namespace index
    /// when the store has it).
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let keep = |object: &K| selector.is_empty() || selector.matches(object);
        match self.store.by_index(NAMESPACE_INDEX, &self.namespace) {
            Some(objects) => objects.into_iter().filter(|o| keep(o)).collect(),
            None => {
                let mut out = Vec::new();
                self.store.for_each(|_, object| {
                    if object.namespace().unwrap_or("") == self.namespace && keep(object) {
                        out.push(object.clone());
                    }
                });
                out
            }
        }
    }

    /// The object `name` of this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get(&object_key(Some(&self.namespace), name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::DynamicObject;
    use serde_json::json;

    fn object(ns: &str, name: &str, app: &str) -> Arc<DynamicObject> {
        Arc::new(DynamicObject(json!({"metadata": {"namespace": ns, "name": name, "labels": {"app": app}}})))
    }

    #[test]
    fn lists_by_namespace_with_and_without_the_index() {
        for store in [Store::<DynamicObject>::with_namespace_index(), Store::new()] {
            store.insert(object("a", "x", "web"));
            store.insert(object("a", "y", "db"));
            store.insert(object("b", "x", "web"));
            let lister = Lister::new(store);
            let web = LabelSelector::parse("app=web").unwrap();
            assert_eq!(lister.list(&web).len(), 2);
            assert_eq!(lister.list(&LabelSelector::everything()).len(), 3);
            let a = lister.namespace("a");
            assert_eq!(a.list(&LabelSelector::everything()).len(), 2);
            assert_eq!(a.list(&web).len(), 1);
            assert_eq!(a.get("y").unwrap().label("app"), Some("db"));
            assert!(a.get("nope").is_none());
            assert!(lister.get("b/x").is_some());
        }
    }
}
