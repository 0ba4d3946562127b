//! The admission configurations (webhook configurations, policies and their bindings) as the
//! admission plugins read them: from two kinds' watch caches, as kube's plugins read their
//! informers, parsed once per change of either kind and shared by every request until then.

use std::sync::Arc;

use listwatch_meta::Object;
use listwatch_watchcache::WatchCache;
use parking_lot::Mutex;

use crate::registry::ResourceStore;

/// What two configuration kinds parse into, kept until either kind's cache moves.
pub struct ConfigurationCache<T> {
    current: Mutex<Option<([i64; 2], Arc<T>)>>,
}

impl<T> Default for ConfigurationCache<T> {
    fn default() -> Self {
        ConfigurationCache { current: Mutex::new(None) }
    }
}

impl<T> ConfigurationCache<T> {
    /// The objects of the two stores parsed by `parse` (the first store's, then the
    /// second's), or what was parsed while both caches were at the same revisions. Without
    /// ready caches, the stores are read and nothing is kept.
    pub async fn get(
        &self,
        stores: [Option<Arc<ResourceStore>>; 2],
        parse: impl FnOnce(&[Arc<Object>], &[Arc<Object>]) -> T,
    ) -> Arc<T> {
        let key = match (ready(&stores[0]), ready(&stores[1])) {
            (Some(a), Some(b)) => Some([a.resource_version(), b.resource_version()]),
            _ => None,
        };
        if let (Some(key), Some((cached, parsed))) = (key, self.current.lock().as_ref())
            && key == *cached
        {
            return parsed.clone();
        }
        let mut lists: [Vec<Arc<Object>>; 2] = Default::default();
        for (list, store) in lists.iter_mut().zip(&stores) {
            let cached = match ready(store) {
                Some(cache) => cache.list(None, None, None).await.map(|l| l.items).ok(),
                None => None,
            };
            *list = match cached {
                Some(objects) => objects,
                None => match store {
                    Some(store) => store.list_all_now().await.unwrap_or_default(),
                    None => Vec::new(),
                },
            };
        }
        let parsed = Arc::new(parse(&lists[0], &lists[1]));
        if let Some(key) = key {
            *self.current.lock() = Some((key, parsed.clone()));
        }
        parsed
    }
}

/// A store's watch cache, if it has one that is ready.
fn ready(store: &Option<Arc<ResourceStore>>) -> Option<&WatchCache> {
    store.as_ref().and_then(|s| s.cache.as_ref()).filter(|c| c.is_ready())
}
