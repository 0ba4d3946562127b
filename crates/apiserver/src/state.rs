//! What every handler and controller shares: the settings, storage, one
//! [`ResourceStore`] per served resource (cached or not) — the built-ins' fixed list and the
//! run-time set CRDs add ([`CustomResources`]) —, the faults the debug API injects, and the
//! shutdown signal. It depends on no handler; [`crate::server::start`] builds it and starts
//! the controllers around it.

use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::{Registry, Resource};
use listwatch_storage::{BackendVersion, Storage, StorageError};
use listwatch_watchcache::WatchCache;
use tokio::sync::watch;

use crate::client_audit::ClientAudit;
use crate::config::ServerConfig;
use crate::customresources::CustomResources;
use crate::faults::{ReadFaults, Throttle, WatchFaults, WebhookFaults};
use crate::registry::{DeletionNotices, ResourceStore};

/// Everything a request handler needs.
pub struct ApiState {
    /// The settings the server started with.
    pub config: ServerConfig,
    /// Where objects live.
    pub storage: Arc<dyn Storage>,
    /// The storage backend's version (what it supports).
    pub backend: BackendVersion,
    /// The built-in resources' stores, in registry order.
    stores: Vec<Arc<ResourceStore>>,
    /// The resources CRDs add while the server runs.
    pub custom: CustomResources,
    /// Where stores announce what they mark for deletion.
    deletions: DeletionNotices,
    consistent_reads_from_cache: bool,
    /// 429s the debug API asked for.
    pub throttle: Throttle,
    /// Expired continue tokens and too-large resourceVersions the debug API asked for.
    pub read_faults: ReadFaults,
    /// Admission webhook outages the debug API set.
    pub webhook_faults: WebhookFaults,
    /// What the debug API (and `--break-watch`) injects into watch streams; every stream's
    /// pump holds it.
    pub watch_faults: Arc<WatchFaults>,
    /// The RBAC policy as the watch caches hold it, parsed once per change.
    pub rbac: crate::authz::rbac::PolicyCache,
    /// The admission webhooks as the watch caches hold them, parsed once per change.
    pub webhooks:
        crate::admission::configurations::ConfigurationCache<crate::admission::webhooks::configuration::Hooks>,
    /// The ValidatingAdmissionPolicies with their bindings, as the watch caches hold them.
    pub policies:
        crate::admission::configurations::ConfigurationCache<crate::admission::policies::configuration::Policies>,
    /// The client audit's recorder (`--audit-clients`).
    pub client_audit: Option<Arc<ClientAudit>>,
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
        let (shutdown_tx, shutdown) = watch::channel(false);
        let watch_faults = Arc::new(WatchFaults::new(config.break_watch));
        let client_audit = config.audit_clients.clone().map(|thresholds| {
            let audit = ClientAudit::new(&config.advertise_address, thresholds);
            audit.changes.follow(storage.clone(), config.storage_root.clone(), shutdown.clone());
            Arc::new(audit)
        });
        let mut state = ApiState {
            config,
            storage,
            backend,
            stores: Vec::new(),
            custom: CustomResources::default(),
            deletions,
            consistent_reads_from_cache,
            throttle: Throttle::default(),
            read_faults: ReadFaults::default(),
            webhook_faults: WebhookFaults::default(),
            watch_faults,
            rbac: Default::default(),
            webhooks: Default::default(),
            policies: Default::default(),
            client_audit,
            shutdown,
            shutdown_tx,
        };
        state.stores = Registry.resources().iter().map(|resource| state.make_store(resource)).collect();
        Ok(state)
    }

    /// A new store for `resource`, with a watch cache of its own unless configured off.
    pub(crate) fn make_store(&self, resource: &'static Resource) -> Arc<ResourceStore> {
        self.make_store_on(resource, self.storage.clone())
    }

    /// A new store for `resource` on `storage` (the server's, or a layer over it: a CRD
    /// version's conversion), with a watch cache of its own unless configured off.
    pub(crate) fn make_store_on(&self, resource: &'static Resource, storage: Arc<dyn Storage>) -> Arc<ResourceStore> {
        let config = &self.config;
        let cache = cache_enabled(config, resource).then(|| {
            WatchCache::start(
                resource,
                resource.collection_prefix(&config.storage_root),
                storage.clone(),
                config.cache.clone(),
            )
        });
        Arc::new(ResourceStore {
            resource,
            storage,
            cache,
            root: config.storage_root.clone(),
            consistent_reads_from_cache: self.consistent_reads_from_cache,
            list_page_size: config.cache.list_page_size,
            deletions: self.deletions.clone(),
        })
    }

    /// Ends open watches and stops the background work.
    pub fn shut_down(&self) {
        self.shutdown_tx.send_replace(true);
    }

    /// One store per collection of objects: every built-in's, then the storage version's of
    /// each served CRD (its other versions' stores hold the same objects).
    pub fn stores(&self) -> Vec<Arc<ResourceStore>> {
        let custom = self.custom.snapshot();
        let served = custom.crds.values().filter_map(|c| c.stores.first().cloned());
        self.stores.iter().cloned().chain(served).collect()
    }

    /// The store of a group, version and plural, if served (a built-in, else a custom
    /// resource whose CRD serves it now).
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceStore>> {
        self.builtin(group, version, plural)
            .cloned()
            .or_else(|| self.custom.snapshot().store(group, version, plural).cloned())
    }

    fn builtin(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceStore>> {
        self.stores
            .iter()
            .find(|s| s.resource.group == group && s.resource.version == version && s.resource.plural == plural)
    }

    /// The store serving objects of `kind` in `group`/`version` (an owner reference's).
    pub fn store_of_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceStore>> {
        let matches = |s: &&Arc<ResourceStore>| {
            s.resource.group == group && s.resource.version == version && s.resource.kind == kind
        };
        if let Some(store) = self.stores.iter().find(matches) {
            return Some(store.clone());
        }
        let custom = self.custom.snapshot();
        custom.crds.values().flat_map(|c| c.stores.iter()).find(matches).cloned()
    }

    /// The store of a built-in resource.
    pub fn store_of(&self, resource: &Resource) -> &Arc<ResourceStore> {
        self.stores.iter().find(|s| std::ptr::eq(s.resource, resource)).expect("every built-in resource has a store")
    }

    /// The CustomResourceDefinitions' store.
    pub fn crds(&self) -> &Arc<ResourceStore> {
        self.builtin(listwatch_apiextensions::crd::GROUP, "v1", listwatch_apiextensions::crd::RESOURCE)
            .expect("CRDs are registered")
    }

    /// The namespaces' store.
    pub fn namespaces(&self) -> &Arc<ResourceStore> {
        self.builtin("", "v1", "namespaces").expect("namespaces are registered")
    }

    /// Whether every watch cache has its initial list.
    pub fn is_ready(&self) -> bool {
        self.stores().iter().all(|s| s.cache.as_ref().is_none_or(WatchCache::is_ready))
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
