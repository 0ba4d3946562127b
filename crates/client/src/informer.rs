//! Shared informers: one reflector and one cache per resource, any number of event handlers
//! (client-go's `sharedIndexInformer`, spec client-machinery.md §1.6, §1.8).
//!
//! # Pieces
//!
//! * A **reflector task** runs the [`Reflector`] and hands its events over a small bounded
//!   channel to the **driver task**.
//! * The **driver** applies each event to the [`Store`] and turns it into notifications for every
//!   handler, under one lock (client-go's `blockDeltas`), so a handler registered concurrently
//!   sees each object exactly once: either in its initial snapshot or as a later notification.
//!   It also runs the resync timers.
//! * Each **handler** has its own unbounded queue and its own consumer (an OS thread calling the
//!   [`EventHandler`] methods in order, or the task polling a [`Subscription`] stream).
//!
//! # Choices
//!
//! * **Growing per-handler buffers.** A slow handler never holds up the reflector, the cache or
//!   the other handlers; its queue grows instead, as client-go's `processorListener` does with its
//!   unbounded ring buffer. The price is memory for a handler that never catches up, so the
//!   informer logs a warning each time a handler's backlog doubles past 1024 (client-go logs at
//!   1024 too), and [`HandlerRegistration::pending`] exposes the backlog. (The alternative, kube-rs's
//!   bounded back-pressured broadcast, makes every subscriber and the cache wait for the slowest.)
//!   Handlers run on their own threads so a blocking callback cannot stall the async runtime.
//! * **Relists replace atomically.** A list (or a streaming list's initial events) replaces the
//!   store in one swap. Handlers then get deletions first — objects that vanished become
//!   [`DeletedObject::FinalStateUnknown`] tombstones, client-go's `DeletedFinalStateUnknown`,
//!   since the real delete was missed — then additions, then updates marked
//!   [`UpdateCause::Relist`] (the order of client-go's `ReplacedAll` processing).
//! * **No duplicate notifications.** An update whose resourceVersion did not change (an unchanged
//!   object seen again by a relist, or a resync) is a *sync* notification: it goes only to
//!   handlers that asked for a resync period, exactly client-go's `isSync` rule. So a handler
//!   without a resync period never gets two notifications for the same resourceVersion of an
//!   object; tombstones are the exception by nature (the final state is unknown).
//! * **Resync** (a handler's period, at least 1 s) replays the cache to that handler as
//!   `on_update(obj, obj, UpdateCause::Resync)`; it makes no API call.
//! * **Late handlers** first get every cached object as `on_add(obj, in_initial_list = true)`.
//! * **HasSynced per handler** turns true when the handler has *processed* every initial-list
//!   notification, not merely when the cache is full (kubernetes#113763).
//! * **Transform** (set before start) runs on every object as it enters, before it is cached.
//!
//! Only checked against listwatch (both backends), not against a real kube-apiserver.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

use crate::error::Error;
use crate::lister::Lister;
use crate::reflector::{ErrorHandler, ListerWatcher, Reflector, ReflectorConfig, ReflectorEvent};
use crate::resource::Object;
use crate::store::{IndexConflict, IndexFn, Store};

/// client-go's `minimumResyncPeriod`, the default of [`InformerConfig::minimum_resync_period`].
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The first backlog a handler is warned about (client-go's `initialBufferSize`).
const PENDING_WARNING: usize = 1024;

/// Transforms each object as it enters the cache (e.g. to drop `managedFields`).
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// A deleted object, as handlers get it.
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// From a DELETED event: the object's last state, its resourceVersion the deletion's.
    Known(Arc<K>),
    /// Found missing by a relist: the watch missed the delete, so this is only the last state
    /// the cache knew (client-go `DeletedFinalStateUnknown`).
    FinalStateUnknown {
        /// The object's cache key (`namespace/name`).
        key: String,
        /// The last state the cache knew.
        object: Arc<K>,
    },
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Known(object) => DeletedObject::Known(object.clone()),
            DeletedObject::FinalStateUnknown { key, object } => {
                DeletedObject::FinalStateUnknown { key: key.clone(), object: object.clone() }
            }
        }
    }
}

impl<K: Object> DeletedObject<K> {
    /// The object (for a tombstone: its last known state).
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Known(object) | DeletedObject::FinalStateUnknown { object, .. } => object,
        }
    }

    /// The cache key (client-go `DeletionHandlingMetaNamespaceKeyFunc`).
    pub fn key(&self) -> String {
        match self {
            DeletedObject::Known(object) => object.key(),
            DeletedObject::FinalStateUnknown { key, .. } => key.clone(),
        }
    }

    /// Whether a relist, not a DELETED event, found the object gone.
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, DeletedObject::FinalStateUnknown { .. })
    }
}

/// Why a handler gets `on_update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateCause {
    /// A watch event (ADDED or MODIFIED for an object already cached).
    Watch,
    /// A relist replaced the cache. If old and new have the same resourceVersion it is a sync
    /// notification, sent only to handlers with a resync period.
    Relist,
    /// The handler's resync period elapsed; old and new are the same cached object.
    Resync,
}

/// One notification, as a [`Subscription`] yields it.
#[derive(Debug)]
pub enum Notification<K> {
    /// An object entered the cache.
    Add {
        /// The object as cached.
        object: Arc<K>,
        /// Whether it came with the first list (client-go's `isInInitialList`).
        in_initial_list: bool,
    },
    /// A cached object changed, or was resent.
    Update {
        /// What the cache held before.
        old: Arc<K>,
        /// What it holds now.
        new: Arc<K>,
        /// Why the handler hears about it.
        cause: UpdateCause,
    },
    /// An object left the cache.
    Delete(DeletedObject<K>),
    /// Every initial-list notification came before this (the subscription's HasSynced).
    Synced,
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add { object, in_initial_list } => {
                Notification::Add { object: object.clone(), in_initial_list: *in_initial_list }
            }
            Notification::Update { old, new, cause } => {
                Notification::Update { old: old.clone(), new: new.clone(), cause: *cause }
            }
            Notification::Delete(deleted) => Notification::Delete(deleted.clone()),
            Notification::Synced => Notification::Synced,
        }
    }
}

/// Callbacks for one handler. Called in order, one at a time, on the handler's own thread.
/// Keep them quick (hand work to a work queue); a panic is logged and that notification skipped.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object entered the cache; `in_initial_list` when it came with the first list.
    fn on_add(&self, _object: &Arc<K>, _in_initial_list: bool) {}
    /// A cached object changed (or was resent, see `cause`).
    fn on_update(&self, _old: &Arc<K>, _new: &Arc<K>, _cause: UpdateCause) {}
    /// An object left the cache.
    fn on_delete(&self, _object: &DeletedObject<K>) {}
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>, UpdateCause) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// An [`EventHandler`] made of closures (client-go `ResourceEventHandlerFuncs`).
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        HandlerFns { add: None, update: None, delete: None }
    }
}

impl<K> HandlerFns<K> {
    /// A handler that ignores everything until callbacks are set.
    pub fn new() -> Self {
        HandlerFns::default()
    }

    /// Calls `f` for each added object (and whether it came with the first list).
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Calls `f` for each update, with the old and the new object.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>, UpdateCause) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Calls `f` for each deleted object.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for HandlerFns<K> {
    fn on_add(&self, object: &Arc<K>, in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(object, in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>, cause: UpdateCause) {
        if let Some(f) = &self.update {
            f(old, new, cause);
        }
    }
    fn on_delete(&self, object: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(object);
        }
    }
}

/// An informer's settings.
#[derive(Clone, Debug)]
pub struct InformerConfig {
    /// How the informer's reflector lists and watches.
    pub reflector: ReflectorConfig,
    /// The resync period of handlers added without one (`None`: no resync).
    pub default_resync: Option<Duration>,
    /// Shorter resync periods are raised to this (client-go: 1 s).
    pub minimum_resync_period: Duration,
}

impl Default for InformerConfig {
    fn default() -> Self {
        InformerConfig {
            reflector: ReflectorConfig::default(),
            default_resync: None,
            minimum_resync_period: MINIMUM_RESYNC_PERIOD,
        }
    }
}

/// A handler's registration: its sync state and backlog, and the way to remove it.
pub struct HandlerRegistration {
    synced: watch::Receiver<bool>,
    pending: Arc<AtomicUsize>,
    remove: Arc<dyn Fn() + Send + Sync>,
}

impl HandlerRegistration {
    /// Whether this handler has processed every notification of the initial list.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits (at most `timeout`) until [`has_synced`](Self::has_synced).
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut synced = self.synced.clone();
        tokio::time::timeout(timeout, synced.wait_for(|s| *s)).await.is_ok_and(|r| r.is_ok())
    }

    /// Notifications queued and not yet processed.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// Stops delivering to this handler. Notifications already queued are still processed.
    pub fn remove(&self) {
        (self.remove)();
    }
}

enum Item<K> {
    Notify(Notification<K>),
    /// Marks the end of the initial list for this handler.
    Synced,
}

struct Listener<K> {
    id: u64,
    sender: mpsc::UnboundedSender<Item<K>>,
    resync: Option<Duration>,
    next_resync: Option<Instant>,
    /// Whether the end-of-initial-list marker was queued.
    marked: bool,
    pending: Arc<AtomicUsize>,
    warn_at: usize,
}

impl<K> Listener<K> {
    fn send(&mut self, item: Item<K>, informer: &str) {
        if let Item::Notify(_) = item {
            let pending = self.pending.fetch_add(1, Ordering::Relaxed) + 1;
            if pending >= self.warn_at {
                tracing::warn!(informer, handler = self.id, pending, "an event handler is falling behind");
                self.warn_at *= 2;
            } else if pending < PENDING_WARNING / 2 {
                self.warn_at = PENDING_WARNING;
            }
        }
        if self.sender.send(item).is_err() {
            // The consumer is gone (a dropped subscription): nothing to deliver to.
            self.pending.store(0, Ordering::Relaxed);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Audience {
    All,
    /// Sync notifications: only handlers with a resync period.
    Resyncing,
}

struct Listeners<K> {
    list: Vec<Listener<K>>,
}

impl<K> Listeners<K> {
    fn distribute(&mut self, notification: Notification<K>, audience: Audience, informer: &str) {
        for listener in &mut self.list {
            if audience == Audience::Resyncing && listener.resync.is_none() {
                continue;
            }
            listener.send(Item::Notify(notification.clone()), informer);
        }
    }
}

/// A new registration, with the consumer side's sync flag and backlog counter.
type Registered = (HandlerRegistration, Arc<watch::Sender<bool>>, Arc<AtomicUsize>);

enum RunState {
    NotStarted,
    Running { shutdown: watch::Sender<bool>, reflector: tokio::task::JoinHandle<()> },
    Stopped,
}

struct Shared<K> {
    name: String,
    store: Store<K>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    config: Mutex<InformerConfig>,
    transform: Mutex<Option<Transform<K>>>,
    listeners: Mutex<Listeners<K>>,
    run: Mutex<RunState>,
    synced: watch::Sender<bool>,
    /// Wakes the driver when resync schedules change.
    resync_changed: Notify,
    next_id: AtomicU64,
}

/// One resource's reflector, cache and handlers. Cheap to clone (shared).
pub struct SharedInformer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        SharedInformer { shared: self.shared.clone() }
    }
}

impl<K: Object> SharedInformer<K> {
    /// An informer over `lister_watcher` (usually an [`Api`](crate::Api)). Its store has the
    /// `namespace` index.
    pub fn new(lister_watcher: impl ListerWatcher<K>, config: InformerConfig) -> SharedInformer<K> {
        SharedInformer::from_arc(Arc::new(lister_watcher), config)
    }

    /// [`SharedInformer::new`] with a source that is already shared.
    pub fn from_arc(lister_watcher: Arc<dyn ListerWatcher<K>>, config: InformerConfig) -> SharedInformer<K> {
        SharedInformer {
            shared: Arc::new(Shared {
                name: config.reflector.name.clone(),
                store: Store::with_namespace_index(),
                lister_watcher,
                config: Mutex::new(config),
                transform: Mutex::new(None),
                listeners: Mutex::new(Listeners { list: Vec::new() }),
                run: Mutex::new(RunState::NotStarted),
                synced: watch::channel(false).0,
                resync_changed: Notify::new(),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// The cache.
    pub fn store(&self) -> Store<K> {
        self.shared.store.clone()
    }

    /// A typed read-only view of the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.shared.store.clone())
    }

    /// Whether the first complete list is in the cache (not whether handlers processed it: see
    /// [`HandlerRegistration::has_synced`]).
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits (at most `timeout`) until [`has_synced`](Self::has_synced).
    pub async fn wait_for_sync(&self, timeout: Duration) -> bool {
        let mut synced = self.shared.synced.subscribe();
        tokio::time::timeout(timeout, synced.wait_for(|s| *s)).await.is_ok_and(|r| r.is_ok())
    }

    pub(crate) fn synced_receiver(&self) -> watch::Receiver<bool> {
        self.shared.synced.subscribe()
    }

    /// The resourceVersion the cache has reached.
    pub fn last_sync_resource_version(&self) -> String {
        self.shared.store.resource_version()
    }

    /// Adds an index (also after start: existing objects are indexed at once).
    pub fn add_indexer(&self, name: &str, function: IndexFn<K>) -> Result<(), IndexConflict> {
        self.shared.store.add_indexer(name, function)
    }

    /// Sets the transform applied to every object before it is cached. Only before start.
    pub fn set_transform(&self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Result<(), Error> {
        self.before_start("set_transform")?;
        *self.shared.transform.lock() = Some(Arc::new(transform));
        Ok(())
    }

    /// Sets the reflector's error handler (client-go `SetWatchErrorHandler`). Only before start.
    pub fn set_error_handler(&self, handler: ErrorHandler) -> Result<(), Error> {
        self.before_start("set_error_handler")?;
        self.shared.config.lock().reflector.error_handler = Some(handler);
        Ok(())
    }

    fn before_start(&self, what: &str) -> Result<(), Error> {
        match *self.shared.run.lock() {
            RunState::NotStarted => Ok(()),
            _ => Err(Error::InvalidRequest(format!("{what} must be called before the informer starts"))),
        }
    }

    /// Adds a handler with the informer's default resync period.
    pub fn add_event_handler(&self, handler: impl EventHandler<K>) -> Result<HandlerRegistration, Error> {
        let resync = self.shared.config.lock().default_resync;
        self.add_event_handler_with_resync(handler, resync)
    }

    /// Adds a handler with its own resync period (`None`: never; at least
    /// [`InformerConfig::minimum_resync_period`]). It first gets
    /// every cached object as an initial-list add.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync: Option<Duration>,
    ) -> Result<HandlerRegistration, Error> {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Item<K>>();
        let (registration, synced, pending) = self.register(sender, resync)?;
        let name = self.shared.name.clone();
        std::thread::Builder::new()
            .name(format!("informer-{name}"))
            .spawn(move || {
                while let Some(item) = receiver.blocking_recv() {
                    match item {
                        Item::Synced => {
                            synced.send_replace(true);
                        }
                        Item::Notify(notification) => {
                            let result = std::panic::catch_unwind(AssertUnwindSafe(|| match &notification {
                                Notification::Add { object, in_initial_list } => handler.on_add(object, *in_initial_list),
                                Notification::Update { old, new, cause } => handler.on_update(old, new, *cause),
                                Notification::Delete(deleted) => handler.on_delete(deleted),
                                Notification::Synced => {}
                            }));
                            pending.fetch_sub(1, Ordering::Relaxed);
                            if result.is_err() {
                                tracing::error!(informer = %name, "an event handler panicked; the notification was skipped");
                            }
                        }
                    }
                }
            })
            .map_err(|e| Error::InvalidRequest(format!("starting a handler thread: {e}")))?;
        Ok(registration)
    }

    /// Adds a handler that is a stream of [`Notification`]s, with the default resync period.
    pub fn subscribe(&self) -> Result<Subscription<K>, Error> {
        let resync = self.shared.config.lock().default_resync;
        self.subscribe_with_resync(resync)
    }

    /// Adds a handler that is a stream of [`Notification`]s, with its own resync period (`None`:
    /// no resync).
    pub fn subscribe_with_resync(&self, resync: Option<Duration>) -> Result<Subscription<K>, Error> {
        let (sender, receiver) = mpsc::unbounded_channel::<Item<K>>();
        let (registration, synced, pending) = self.register(sender, resync)?;
        Ok(Subscription { receiver, synced, pending, registration })
    }

    fn register(&self, sender: mpsc::UnboundedSender<Item<K>>, resync: Option<Duration>) -> Result<Registered, Error> {
        if matches!(*self.shared.run.lock(), RunState::Stopped) {
            return Err(Error::InvalidRequest("the informer has stopped".into()));
        }
        let minimum = self.shared.config.lock().minimum_resync_period;
        let resync = resync.map(|period| period.max(minimum));
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let pending = Arc::new(AtomicUsize::new(0));
        let synced = Arc::new(watch::channel(false).0);
        let mut listener = Listener {
            id,
            sender,
            resync,
            next_resync: resync.map(|period| Instant::now() + period),
            marked: false,
            pending: pending.clone(),
            warn_at: PENDING_WARNING,
        };
        {
            // Under the distribution lock: no event is applied between the snapshot and the
            // registration, so the handler sees every object exactly once.
            let mut listeners = self.shared.listeners.lock();
            for object in self.shared.store.list() {
                listener.send(Item::Notify(Notification::Add { object, in_initial_list: true }), &self.shared.name);
            }
            if self.shared.store.has_synced() {
                listener.marked = true;
                listener.send(Item::Synced, &self.shared.name);
            }
            listeners.list.push(listener);
        }
        self.shared.resync_changed.notify_one();
        let weak = Arc::downgrade(&self.shared);
        let remove = Arc::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.listeners.lock().list.retain(|l| l.id != id);
            }
        });
        let registration = HandlerRegistration { synced: synced.subscribe(), pending: pending.clone(), remove };
        Ok((registration, synced, pending))
    }

    /// Starts the reflector and the driver on the current Tokio runtime. Does nothing if already
    /// started; an informer cannot be restarted after [`stop`](Self::stop).
    pub fn start(&self) {
        let mut run = self.shared.run.lock();
        if !matches!(*run, RunState::NotStarted) {
            return;
        }
        let config = self.shared.config.lock().reflector.clone();
        let mut reflector = Reflector::from_arc(self.shared.lister_watcher.clone(), config);
        let (events_tx, events_rx) = mpsc::channel(64);
        let reflector_task = tokio::spawn(async move {
            loop {
                let event = reflector.next_event().await;
                if events_tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        tokio::spawn(drive(self.shared.clone(), events_rx, shutdown_rx));
        *run = RunState::Running { shutdown, reflector: reflector_task };
    }

    /// Whether [`start`](Self::start) was called and [`stop`](Self::stop) not since.
    pub fn is_running(&self) -> bool {
        matches!(*self.shared.run.lock(), RunState::Running { .. })
    }

    /// Stops the reflector and the driver. Handlers finish what is queued, then end.
    pub fn stop(&self) {
        let previous = std::mem::replace(&mut *self.shared.run.lock(), RunState::Stopped);
        if let RunState::Running { shutdown, reflector } = previous {
            reflector.abort();
            let _ = shutdown.send(true);
        }
        self.shared.listeners.lock().list.clear();
    }
}

/// Applies reflector events and runs resyncs until shutdown.
async fn drive<K: Object>(
    shared: Arc<Shared<K>>,
    mut events: mpsc::Receiver<ReflectorEvent<K>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let next_resync = shared.listeners.lock().list.iter().filter_map(|l| l.next_resync).min();
        let resync_sleep = async {
            match next_resync {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => shared.apply(event),
                None => break,
            },
            _ = resync_sleep => shared.resync_due(),
            _ = shared.resync_changed.notified() => {}
            _ = shutdown.changed() => break,
        }
    }
    shared.listeners.lock().list.clear();
}

impl<K: Object> Shared<K> {
    fn apply(&self, event: ReflectorEvent<K>) {
        let transform = self.transform.lock().clone();
        // Objects arrive in `Arc`s the reflector made (it keeps no other reference): without a
        // transform they go into the store as they are.
        let ingest = |object: Arc<K>| match &transform {
            None => object,
            Some(transform) => match Arc::try_unwrap(object) {
                Ok(object) => Arc::new(transform(object)),
                Err(shared) => shared,
            },
        };
        let name = self.name.as_str();
        let mut listeners = self.listeners.lock();
        match event {
            ReflectorEvent::Replace { objects, resource_version, .. } => {
                let first = !self.store.has_synced();
                let objects: Vec<Arc<K>> = objects.into_iter().map(ingest).collect();
                let replaced = self.store.replace(objects, &resource_version);
                for (key, object) in replaced.removed {
                    let deleted = DeletedObject::FinalStateUnknown { key, object };
                    listeners.distribute(Notification::Delete(deleted), Audience::All, name);
                }
                for object in replaced.added {
                    listeners.distribute(Notification::Add { object, in_initial_list: first }, Audience::All, name);
                }
                for (old, new) in replaced.updated {
                    let audience =
                        if same_version(old.as_ref(), new.as_ref()) { Audience::Resyncing } else { Audience::All };
                    listeners.distribute(Notification::Update { old, new, cause: UpdateCause::Relist }, audience, name);
                }
                for listener in listeners.list.iter_mut().filter(|l| !l.marked) {
                    listener.marked = true;
                    listener.send(Item::Synced, name);
                }
                self.synced.send_replace(true);
            }
            ReflectorEvent::Added(object) | ReflectorEvent::Modified(object) => {
                let new = ingest(object);
                match self.store.insert_at(new.clone(), new.resource_version()) {
                    Some(old) => {
                        let audience =
                            if same_version(old.as_ref(), new.as_ref()) { Audience::Resyncing } else { Audience::All };
                        listeners.distribute(
                            Notification::Update { old, new, cause: UpdateCause::Watch },
                            audience,
                            name,
                        );
                    }
                    None => listeners.distribute(
                        Notification::Add { object: new, in_initial_list: false },
                        Audience::All,
                        name,
                    ),
                }
            }
            ReflectorEvent::Deleted(object) => {
                let object = ingest(object);
                self.store.remove_at(&object.key(), object.resource_version());
                listeners.distribute(Notification::Delete(DeletedObject::Known(object)), Audience::All, name);
            }
            ReflectorEvent::Bookmark { resource_version } => self.store.set_resource_version(&resource_version),
        }
    }

    /// Replays the cache to every handler whose resync is due.
    fn resync_due(&self) {
        let now = Instant::now();
        let mut listeners = self.listeners.lock();
        let synced = self.store.has_synced();
        let objects = if synced { self.store.list() } else { Vec::new() };
        for listener in &mut listeners.list {
            let (Some(period), Some(due)) = (listener.resync, listener.next_resync) else { continue };
            if due > now {
                continue;
            }
            listener.next_resync = Some(now + period);
            for object in &objects {
                let notification =
                    Notification::Update { old: object.clone(), new: object.clone(), cause: UpdateCause::Resync };
                listener.send(Item::Notify(notification), &self.name);
            }
        }
    }
}

fn same_version<K: Object>(old: &K, new: &K) -> bool {
    matches!((old.resource_version(), new.resource_version()), (Some(a), Some(b)) if a == b)
}

/// A handler that is a stream of notifications (see [`SharedInformer::subscribe`]). Dropping it
/// removes the handler.
pub struct Subscription<K> {
    receiver: mpsc::UnboundedReceiver<Item<K>>,
    synced: Arc<watch::Sender<bool>>,
    pending: Arc<AtomicUsize>,
    registration: HandlerRegistration,
}

impl<K> Subscription<K> {
    /// The registration (sync state, backlog, removal).
    pub fn registration(&self) -> &HandlerRegistration {
        &self.registration
    }
}

impl<K> Drop for Subscription<K> {
    fn drop(&mut self) {
        self.registration.remove();
    }
}

impl<K> futures::Stream for Subscription<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.receiver.poll_recv(cx) {
            Poll::Ready(Some(Item::Synced)) => {
                self.synced.send_replace(true);
                Poll::Ready(Some(Notification::Synced))
            }
            Poll::Ready(Some(Item::Notify(notification))) => {
                self.pending.fetch_sub(1, Ordering::Relaxed);
                Poll::Ready(Some(notification))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests;
