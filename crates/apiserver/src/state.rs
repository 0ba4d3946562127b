//! What every handler and controller shares: the settings, storage, one
//! [`ResourceStore`] per served resource (cached or not), the faults the debug API injects,
//! and the shutdown signal. It depends on no handler; [`crate::server::start`] builds it and
//! starts the controllers around it.

use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::{Registry, Resource};
use listwatch_storage::{BackendVersion, Storage, StorageError};
use listwatch_watchcache::WatchCache;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::faults::{Throttle, WatchFaults};
use crate::registry::{DeletionNotices, ResourceStore};

/// Everything a request handler needs.
pub struct ApiState {
    /// The settings the server started with.
    pub config: ServerConfig,
    /// Where objects live.
    pub storage: Arc<dyn Storage>,
    /// The storage backend's version (what it supports).
    pub backend: BackendVersion,
    stores: Vec<Arc<ResourceStore>>,
    /// 429s the debug API asked for.
    pub throttle: Throttle,
    /// What the debug API (and `--break-watch`) injects into watch streams; every stream's
    /// pump holds it.
    pub watch_faults: Arc<WatchFaults>,
    /// Flips to true on shutdown: open watches end.
    pub shutdown: watch::Receiver<bool>,
    shutdown_tx: watch::Sender<bool>,
}

impl ApiState {
    /// Builds the state: one store per registered resource, cached or not, each announcing
    /// the objects it marks for deletion to `deletions`.
    pub async fn new(
        config: ServerConfig,
        storage: Arc<dyn Storage>,
        deletions: DeletionNotices,
    ) -> Result<ApiState, StorageError> {
        let backend = storage.version().await?;
        let consistent_reads_from_cache = backend.supports_request_watch_progress();
        if !consistent_reads_from_cache {
            tracing::warn!(version = %backend.version, "storage does not answer progress requests reliably: consistent reads go to storage and streaming lists are refused");
        }
        let stores = Registry
            .resources()
            .iter()
            .map(|resource| {
                let cached = cache_enabled(&config, resource);
                let cache = cached.then(|| {
                    WatchCache::start(
                        resource,
                        resource.collection_prefix(&config.storage_root),
                        storage.clone(),
                        config.cache.clone(),
                    )
                });
                Arc::new(ResourceStore {
                    resource,
                    storage: storage.clone(),
                    cache,
                    root: config.storage_root.clone(),
                    consistent_reads_from_cache,
                    list_page_size: config.cache.list_page_size,
                    deletions: deletions.clone(),
                })
            })
            .collect();
        let (shutdown_tx, shutdown) = watch::channel(false);
        let watch_faults = Arc::new(WatchFaults::new(config.break_watch));
        Ok(ApiState {
            config,
            storage,
            backend,
            stores,
            throttle: Throttle::default(),
            watch_faults,
            shutdown,
            shutdown_tx,
        })
    }

    /// Ends open watches and stops the background work.
    pub fn shut_down(&self) {
        self.shutdown_tx.send_replace(true);
    }

    /// Every resource's store.
    pub fn stores(&self) -> impl Iterator<Item = &Arc<ResourceStore>> {
        self.stores.iter()
    }

    /// The store of a group, version and plural, if served.
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceStore>> {
        self.stores
            .iter()
            .find(|s| s.resource.group == group && s.resource.version == version && s.resource.plural == plural)
    }

    /// The store of a registered resource.
    pub fn store_of(&self, resource: &Resource) -> &Arc<ResourceStore> {
        self.stores.iter().find(|s| std::ptr::eq(s.resource, resource)).expect("every resource has a store")
    }

    /// The namespaces' store.
    pub fn namespaces(&self) -> &Arc<ResourceStore> {
        self.store("", "v1", "namespaces").expect("namespaces are registered")
    }

    /// Whether every watch cache has its initial list.
    pub fn is_ready(&self) -> bool {
        self.stores.iter().all(|s| s.cache.as_ref().is_none_or(WatchCache::is_ready))
    }

    /// Whether storage is failing on purpose now (a debug API outage).
    pub fn storage_is_out(&self) -> bool {
        self.config.storage_outage.as_ref().is_some_and(listwatch_storage::faults::Outage::is_active)
    }

    /// Waits (bounded) until the caches are ready.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        for cache in self.stores.iter().filter_map(|s| s.cache.as_ref()) {
            if !cache.wait_ready(timeout).await {
                return false;
            }
        }
        true
    }
}

fn cache_enabled(config: &ServerConfig, resource: &Resource) -> bool {
    let qualified = if resource.group.is_empty() {
        resource.plural.to_string()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    for (name, on) in config.watch_cache_overrides.iter().rev() {
        if *name == resource.plural || *name == qualified {
            return *on;
        }
    }
    config.watch_cache && resource.watch_cache
}
