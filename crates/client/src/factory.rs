//! [`SharedInformerFactory`]: one informer per resource and object type, shared by everything
//! that asks (client-go `informers.SharedInformerFactory`, spec client-machinery.md §1.9).
//!
//! Asking twice for the same resource with the same object type returns the same informer (same
//! reflector, same cache). The factory's namespace, selectors, default resync period, encoding,
//! watch transport and reflector settings apply to every informer it creates. `start` starts
//! the informers not yet started (call it again after asking for more), `wait_for_cache_sync`
//! waits for the started ones, `shutdown` stops them all.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::api::{Api, Encoding, WatchTransport};
use crate::client::Client;
use crate::informer::{InformerConfig, SharedInformer};
use crate::reflector::ReflectorConfig;
use crate::resource::{ApiResource, DynamicObject, Object, Resource};

/// What the factory needs from an informer without knowing its object type.
trait Control: Send + Sync {
    fn start(&self);
    fn stop(&self);
    fn is_running(&self) -> bool;
    fn synced(&self) -> tokio::sync::watch::Receiver<bool>;
    fn as_any(&self) -> &dyn Any;
}

impl<K: Object> Control for SharedInformer<K> {
    fn start(&self) {
        SharedInformer::start(self);
    }
    fn stop(&self) {
        SharedInformer::stop(self);
    }
    fn is_running(&self) -> bool {
        SharedInformer::is_running(self)
    }
    fn synced(&self) -> tokio::sync::watch::Receiver<bool> {
        SharedInformer::synced_receiver(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Creates and shares informers. Cheap to clone.
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    namespace: Option<String>,
    default_resync: Option<Duration>,
    reflector: ReflectorConfig,
    encoding: Encoding,
    watch_transport: WatchTransport,
    informers: Mutex<HashMap<(TypeId, ApiResource), Arc<dyn Control>>>,
}

/// Builds a [`SharedInformerFactory`].
pub struct FactoryBuilder {
    client: Client,
    namespace: Option<String>,
    default_resync: Option<Duration>,
    reflector: ReflectorConfig,
    encoding: Encoding,
    watch_transport: WatchTransport,
}

impl FactoryBuilder {
    /// Only this namespace (default: all).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// The resync period of handlers added without one.
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = Some(period);
        self
    }

    /// Every informer lists and watches only objects this label selector selects.
    pub fn label_selector(mut self, selector: &str) -> Self {
        self.reflector.label_selector = Some(selector.to_owned());
        self
    }

    /// Every informer lists and watches only objects this field selector selects.
    pub fn field_selector(mut self, selector: &str) -> Self {
        self.reflector.field_selector = Some(selector.to_owned());
        self
    }

    /// Reflector settings for every informer (its name and selectors are set per informer /
    /// by the other builder methods).
    pub fn reflector_config(mut self, config: ReflectorConfig) -> Self {
        let (labels, fields) = (self.reflector.label_selector.take(), self.reflector.field_selector.take());
        self.reflector = config;
        self.reflector.label_selector = self.reflector.label_selector.take().or(labels);
        self.reflector.field_selector = self.reflector.field_selector.take().or(fields);
        self
    }

    /// The encoding every informer lists and watches in.
    pub fn encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// How every informer's watches are carried (HTTP streaming or WebSocket).
    pub fn watch_transport(mut self, transport: WatchTransport) -> Self {
        self.watch_transport = transport;
        self
    }

    /// The factory, with no informer yet (they are made on first request).
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                client: self.client,
                namespace: self.namespace,
                default_resync: self.default_resync,
                reflector: self.reflector,
                encoding: self.encoding,
                watch_transport: self.watch_transport,
                informers: Mutex::new(HashMap::new()),
            }),
        }
    }
}

impl SharedInformerFactory {
    /// A factory for all namespaces, no resync, default settings.
    pub fn new(client: Client) -> SharedInformerFactory {
        SharedInformerFactory::builder(client).build()
    }

    /// A factory to configure before building (namespace, resync, selectors, transport).
    pub fn builder(client: Client) -> FactoryBuilder {
        FactoryBuilder {
            client,
            namespace: None,
            default_resync: None,
            reflector: ReflectorConfig::default(),
            encoding: Encoding::Json,
            watch_transport: WatchTransport::Http,
        }
    }

    /// The informer of a typed resource.
    pub fn informer<K: Resource>(&self) -> SharedInformer<K> {
        self.informer_for::<K>(&ApiResource::of::<K>())
    }

    /// The informer of any resource as [`DynamicObject`]s.
    pub fn dynamic(&self, resource: &ApiResource) -> SharedInformer<DynamicObject> {
        self.informer_for::<DynamicObject>(resource)
    }

    /// The informer of `resource` decoded as `K`.
    pub fn informer_for<K: Object>(&self, resource: &ApiResource) -> SharedInformer<K> {
        let key = (TypeId::of::<K>(), resource.clone());
        let mut informers = self.inner.informers.lock();
        if let Some(existing) = informers.get(&key) {
            return existing
                .as_any()
                .downcast_ref::<SharedInformer<K>>()
                .expect("informers are keyed by their object type")
                .clone();
        }
        let api = Api::<K>::new(self.inner.client.clone(), resource.clone(), self.inner.namespace.as_deref())
            .with_encoding(self.inner.encoding)
            .with_watch_transport(self.inner.watch_transport);
        let mut reflector = self.inner.reflector.clone();
        reflector.name = if resource.group.is_empty() {
            resource.plural.clone()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        };
        let informer = SharedInformer::new(
            api,
            InformerConfig { reflector, default_resync: self.inner.default_resync, ..InformerConfig::default() },
        );
        informers.insert(key, Arc::new(informer.clone()));
        informer
    }

    /// Starts every informer not started yet. Needs a Tokio runtime.
    pub fn start(&self) {
        for informer in self.inner.informers.lock().values() {
            if !informer.is_running() {
                informer.start();
            }
        }
    }

    /// Waits (at most `timeout` in all) until every started informer has synced; returns whether
    /// they all did.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> bool {
        let informers: Vec<Arc<dyn Control>> = self.inner.informers.lock().values().cloned().collect();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut all = true;
        for informer in informers.iter().filter(|i| i.is_running()) {
            let mut synced = informer.synced();
            all &= tokio::time::timeout_at(deadline, synced.wait_for(|s| *s)).await.is_ok_and(|r| r.is_ok());
        }
        all
    }

    /// Stops every informer.
    pub fn shutdown(&self) {
        for informer in self.inner.informers.lock().values() {
            informer.stop();
        }
    }
}
