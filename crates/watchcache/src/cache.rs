//! The watch cache of one resource (kube-apiserver's `Cacher` + `watchCache`).
//!
//! One task per resource owns the storage watch. It lists the collection, then applies every
//! storage event to the current objects and to a window of recent events, and dispatches it to
//! the registered client watchers:
//!
//! 1. each interested watcher gets the event by a non-blocking send into its bounded queue;
//! 2. watchers whose queue is full are waited for together, for at most the time budget
//!    (`budget.rs`); those still full when it runs out are closed (their clients re-watch from
//!    their last resourceVersion) and counted.
//!
//! The window keeps at least `window` of history, up to `max_events`; a watch from before it
//! gets 410. Storage progress notifications advance the cache's resourceVersion without
//! events, so bookmarks and consistent reads move while a resource is quiet; while someone
//! waits for the cache to catch up, the task asks storage for progress every
//! `progress_request_period`. If storage reports compaction past the cache (or its watch fails
//! for good), the cache ends every client watch, relists, and starts again; requests that need
//! it meanwhile get 429 "storage is (re)initializing".
//!
//! The parts, as kube-apiserver splits them:
//!
//! * `cache/window.rs`: the objects and the window of events, and waiting for the cache to reach
//!   a resourceVersion (kube's `watch_cache.go`);
//! * `cache/watchers.rs`: the registered watchers, indexed by namespace and object name, and
//!   their bookmark deadlines in time order (kube's `indexedWatchers` and bookmark buckets);
//! * `cache/dispatch.rs`: dispatch to the watchers an event concerns within the time budget,
//!   and their bookmarks (kube's `cacher.go`);
//! * here: the public handle (list, get, watch and their readiness checks) and the task that
//!   lists and follows storage.

#[doc(hidden)]
pub mod bench_fixture;
mod dispatch;
mod snapshot;
mod watchers;
mod window;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use listwatch_meta::{ApiError, Object, Resource};
use listwatch_storage::{KeyRange, ProgressRequester, Storage, StorageError, WatchRequest, WatchResponse};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{Notify, mpsc, watch};

use self::dispatch::next_bookmark_time;
pub use self::snapshot::{CachePage, PageRequest};
use self::watchers::{Registered, Watchers};
use self::window::State;
use crate::budget::TimeBudget;
use crate::event::{CacheEvent, Predicate};
use crate::watcher::{CacheWatcher, WatchStart, WatcherOptions};

/// Settings of every watch cache (kube-apiserver's defaults).
#[derive(Clone, Debug)]
pub struct WatchCacheConfig {
    /// Keep at least this much history (`--watch-cache-window`, kube's `EventsHistoryWindow`).
    pub window: Duration,
    /// Keep at least this many events regardless of age (kube's lower bound capacity).
    pub min_events: usize,
    /// Never keep more events than this.
    pub max_events: usize,
    /// Capacity of each watcher's queue (kube: about one second of history, 10 to 100).
    pub watcher_queue: usize,
    /// How long a superseded object version keeps the encodings memoized for its event's
    /// fan-out (see [`Object::retire`]).
    pub retire_encodings_after: Duration,
    /// A watcher that asked for bookmarks gets one this often (kube: 1 minute).
    pub bookmark_interval: Duration,
    /// Replaces `bookmark_interval` while set (milliseconds; 0 = not set): one switch shared by
    /// every cache made from clones of this config, which the debug API and the simulator turn
    /// while the server runs. A watcher's next bookmark is then due no later than one new
    /// interval from now.
    pub bookmark_interval_override: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// How often the bookmark timer looks for due watchers (kube: ~1 s).
    pub bookmark_tick: Duration,
    /// Most time dispatch waits for blocked watchers at once (kube: 100 ms)...
    pub blocked_budget_max: Duration,
    /// ...and how much of it comes back per second (kube: 50 ms).
    pub blocked_budget_refill: Duration,
    /// How long a request waits for the cache to reach a resourceVersion (kube: 3 s).
    pub freshness_timeout: Duration,
    /// While someone waits, storage is asked for progress this often (kube: 100 ms).
    pub progress_request_period: Duration,
    /// Page size of the initial list (kube: 10,000).
    pub list_page_size: i64,
    /// Wait between failed attempts to list or watch storage.
    pub retry_backoff: Duration,
}

impl WatchCacheConfig {
    /// The bookmark interval in force: the override when set, else `bookmark_interval`.
    pub fn current_bookmark_interval(&self) -> Duration {
        match self.bookmark_interval_override.load(std::sync::atomic::Ordering::Relaxed) {
            0 => self.bookmark_interval,
            ms => Duration::from_millis(ms),
        }
    }
}

impl Default for WatchCacheConfig {
    fn default() -> Self {
        WatchCacheConfig {
            window: Duration::from_secs(75),
            min_events: 100,
            max_events: 100 * 1024,
            watcher_queue: 100,
            retire_encodings_after: Duration::from_secs(2),
            bookmark_interval: Duration::from_secs(60),
            bookmark_interval_override: Default::default(),
            bookmark_tick: Duration::from_secs(1),
            blocked_budget_max: Duration::from_millis(100),
            blocked_budget_refill: Duration::from_millis(50),
            freshness_timeout: Duration::from_secs(3),
            progress_request_period: Duration::from_millis(100),
            list_page_size: 10_000,
            retry_backoff: Duration::from_secs(1),
        }
    }
}

/// Why the cache cannot answer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CacheError {
    /// Initializing or relisting: 429 with this Retry-After.
    #[error("storage is (re)initializing")]
    NotReady {
        /// How long the client should wait: longer the longer the cache has been down.
        retry_after_seconds: u32,
    },
    /// The requested resourceVersion is older than the window: 410.
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld {
        /// The resourceVersion asked for.
        requested: i64,
        /// The oldest one the window still has.
        oldest: i64,
    },
    /// The cache did not reach the resourceVersion in time: 504 (Retry-After 1).
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The resourceVersion asked for.
        requested: i64,
        /// The newest one the cache has reached.
        current: i64,
    },
    /// The storage failed under the cache: 503.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl CacheError {
    /// The Status kube-apiserver answers for this error.
    pub fn to_api_error(&self) -> ApiError {
        match self {
            CacheError::NotReady { retry_after_seconds } => {
                ApiError::too_many_requests("storage is (re)initializing", *retry_after_seconds)
            }
            CacheError::TooOld { requested, oldest } => {
                ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
            }
            CacheError::TooLargeResourceVersion { requested, current } => {
                ApiError::too_large_resource_version(*requested, *current, 1)
            }
            CacheError::Storage(e) => ApiError::service_unavailable(e.to_string()),
        }
    }
}

/// A list served from the cache.
pub struct CacheList {
    /// The matching objects, in key order.
    pub items: Vec<Arc<Object>>,
    /// The revision the list is consistent at.
    pub resource_version: i64,
}

/// Figures for metrics.
#[derive(Clone, Debug, Default)]
pub struct WatchCacheStats {
    /// How many objects the cache holds.
    pub objects: usize,
    /// How many events the window keeps for watches that start in the past.
    pub window_events: usize,
    /// Oldest resourceVersion a watch can start from (0 when not ready).
    pub window_oldest_resource_version: i64,
    /// The newest revision the cache has processed.
    pub resource_version: i64,
    /// Watches open on the cache now.
    pub registered_watchers: usize,
    /// Watchers closed since start because they did not keep up.
    pub terminated_watchers: u64,
    /// How often the cache relisted from storage (after a compaction or a lost watch).
    pub relists: u64,
    /// Stored objects skipped because they did not decode.
    pub undecodable_objects: u64,
    /// Whether the cache serves requests (not initializing or relisting).
    pub ready: bool,
}

/// The watch cache of one resource. Cheap to clone.
#[derive(Clone)]
pub struct WatchCache {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) resource: &'static Resource,
    prefix: Bytes,
    storage: Arc<dyn Storage>,
    pub(crate) config: WatchCacheConfig,
    state: RwLock<State>,
    watchers: Mutex<Watchers>,
    /// The last resourceVersion the cache has processed.
    rv_tx: watch::Sender<i64>,
    /// `None` while ready; the time it went down otherwise.
    down_since: Mutex<Option<Instant>>,
    progress: Mutex<Option<ProgressRequester>>,
    /// How many requests wait for the cache to catch up (they want progress requests).
    waiting: AtomicUsize,
    progress_wanted: Notify,
    reset: Notify,
    budget: Mutex<TimeBudget>,
    terminated: AtomicU64,
    relists: AtomicU64,
    undecodable: AtomicU64,
    /// A lag put on the cache on purpose (the debug API): how late storage's changes are
    /// applied, and until when. `watch` so the cache's task hears of a change at once.
    lag: watch::Sender<Option<(Duration, Instant)>>,
}

impl WatchCache {
    /// Starts the cache of `resource`, whose objects live under `prefix` in `storage`.
    pub fn start(
        resource: &'static Resource,
        prefix: String,
        storage: Arc<dyn Storage>,
        config: WatchCacheConfig,
    ) -> WatchCache {
        let budget = TimeBudget::new(config.blocked_budget_max, config.blocked_budget_refill);
        let inner = Arc::new(Inner {
            resource,
            prefix: Bytes::from(prefix),
            storage,
            config,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                window: VecDeque::new(),
                resource_version: 0,
                list_resource_version: 0,
                evicted_since_list: false,
                superseded: VecDeque::new(),
            }),
            watchers: Mutex::default(),
            rv_tx: watch::channel(0).0,
            down_since: Mutex::new(Some(Instant::now())),
            progress: Mutex::new(None),
            waiting: AtomicUsize::new(0),
            progress_wanted: Notify::new(),
            reset: Notify::new(),
            budget: Mutex::new(budget),
            terminated: AtomicU64::new(0),
            relists: AtomicU64::new(0),
            undecodable: AtomicU64::new(0),
            lag: watch::channel(None).0,
        });
        tokio::spawn(run(Arc::downgrade(&inner)));
        WatchCache { inner }
    }

    /// The resource this cache holds.
    pub fn resource(&self) -> &'static Resource {
        self.inner.resource
    }

    /// The newest resourceVersion the cache has processed.
    pub fn resource_version(&self) -> i64 {
        *self.inner.rv_tx.borrow()
    }

    /// Whether the cache serves requests now; while not, they get 429 with a Retry-After.
    pub fn is_ready(&self) -> bool {
        self.inner.down_since.lock().is_none()
    }

    /// Waits until the cache is ready (for startup; requests get 429 instead).
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = self.inner.rv_tx.subscribe();
        loop {
            if self.is_ready() {
                return true;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                return self.is_ready();
            }
        }
    }

    /// Waits (up to the freshness timeout, asking storage for progress) until the cache has
    /// processed `resource_version`.
    pub async fn wait_until_fresh(&self, resource_version: i64) -> Result<(), CacheError> {
        self.inner.wait_until_fresh(resource_version).await
    }

    /// Storage's current revision, then a wait until the cache has it: what a consistent read
    /// from the cache needs (kube's consistent reads from cache). Errors when the cache does
    /// not catch up in time; the caller then reads storage instead.
    pub async fn wait_consistent(&self) -> Result<i64, CacheError> {
        let current = self.inner.storage.current_revision().await?;
        self.inner.wait_until_fresh(current).await?;
        Ok(current)
    }

    /// The objects of one namespace (or all) that match, in key order, at the cache's
    /// resourceVersion, after waiting for it to reach `min_resource_version` if given.
    pub async fn list(
        &self,
        namespace: Option<&str>,
        min_resource_version: Option<i64>,
        predicate: Option<&Predicate>,
    ) -> Result<CacheList, CacheError> {
        self.inner.check_ready()?;
        if let Some(rv) = min_resource_version {
            self.inner.wait_until_fresh(rv).await?;
        }
        let state = self.inner.state.read();
        let items =
            self.inner.objects_in(&state, namespace).filter(|o| predicate.is_none_or(|p| p(o))).cloned().collect();
        Ok(CacheList { items, resource_version: state.resource_version.max(min_resource_version.unwrap_or(0)) })
    }

    /// One page of a list (see `cache/snapshot.rs`): at `request.resource_version`, or at the
    /// cache's current one after waiting for it to reach `min_resource_version` if given.
    /// `None` when the cache cannot serve that revision (older than its window, newer than
    /// it has reached, or the cache is (re)initializing): the caller reads storage, as kube's
    /// delegator does on a snapshot miss.
    pub async fn page(
        &self,
        request: &PageRequest<'_>,
        min_resource_version: Option<i64>,
    ) -> Result<Option<CachePage>, CacheError> {
        if request.resource_version.is_some() {
            if !self.is_ready() {
                return Ok(None);
            }
        } else {
            self.inner.check_ready()?;
            if let Some(rv) = min_resource_version {
                self.inner.wait_until_fresh(rv).await?;
            }
        }
        let state = self.inner.state.read();
        Ok(self.inner.page(&state, request).map(|mut page| {
            page.resource_version = page.resource_version.max(min_resource_version.unwrap_or(0));
            page
        }))
    }

    /// One object, after waiting for the cache to reach `min_resource_version`.
    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
        min_resource_version: i64,
    ) -> Result<Option<Arc<Object>>, CacheError> {
        self.inner.check_ready()?;
        self.inner.wait_until_fresh(min_resource_version).await?;
        let key = self.inner.key_of(namespace, name);
        Ok(self.inner.state.read().objects.get(key.as_bytes()).cloned())
    }

    /// Starts a client watch.
    pub async fn watch(&self, options: WatcherOptions) -> Result<CacheWatcher, CacheError> {
        self.inner.check_ready()?;
        let inner = &self.inner;
        // Where to start, after any wait the start mode needs.
        let wait_for = match &options.start {
            WatchStart::Consistent { .. } => Some(inner.storage.current_revision().await?),
            WatchStart::NotOlderThan { resource_version, .. } => Some(*resource_version),
            WatchStart::Exact(_) | WatchStart::Any { .. } => None,
        };
        if let Some(rv) = wait_for {
            inner.wait_until_fresh(rv).await?;
        }
        let (tx, rx) = mpsc::channel(inner.config.watcher_queue.max(1));
        // Snapshot and registration under the state lock, so every event after the snapshot
        // reaches the queue (the watcher drops queued events at or below its start).
        let state = inner.state.read();
        let state_rv = state.resource_version;
        let (start_rv, initial) = match &options.start {
            WatchStart::Exact(rv) => {
                let oldest = inner.oldest_resource_version(&state);
                if *rv < oldest {
                    return Err(CacheError::TooOld { requested: *rv, oldest });
                }
                let events: Vec<Arc<CacheEvent>> =
                    state.window.iter().filter(|e| e.resource_version > *rv).cloned().collect();
                (*rv, crate::watcher::Initial::Events(events))
            }
            WatchStart::Any { initial_events }
            | WatchStart::Consistent { initial_events }
            | WatchStart::NotOlderThan { initial_events, .. } => {
                let objects = if *initial_events {
                    inner.objects_in(&state, options.namespace.as_deref()).cloned().collect()
                } else {
                    Vec::new()
                };
                (state.resource_version, crate::watcher::Initial::Objects(objects))
            }
        };
        let next_bookmark =
            options.bookmarks.then(|| next_bookmark_time(&inner.config, Instant::now(), options.deadline)).flatten();
        let mut watchers = inner.watchers.lock();
        // Ready again, under the lock that ends watchers: a reset marks the cache not ready
        // before it ends every watcher under this lock, and cannot replace the state while this
        // snapshot holds it. So a watcher registered here is either ended by that reset or was
        // snapshotted after its relist; without this check, a reset racing the check at the top
        // could leave a watcher of the old state registered, missing what the relist skipped.
        inner.check_ready()?;
        let id = watchers.register(Registered {
            namespace: options.namespace.clone(),
            name: options.name.clone(),
            tx,
            next_bookmark,
            deadline: options.deadline,
        });
        drop(watchers);
        drop(state);
        // Queued events up to here are in the snapshot (or, for a start in the future, not
        // wanted): the watcher drops them.
        let snapshot_rv = start_rv.max(state_rv);
        let forget = {
            let inner = Arc::downgrade(inner);
            Box::new(move || {
                if let Some(inner) = inner.upgrade() {
                    inner.unregister(id);
                }
            })
        };
        Ok(CacheWatcher::new(inner.resource, forget, options, start_rv, snapshot_rv, initial, rx))
    }

    /// Ends every client watch of this resource (debug API; clients re-watch).
    pub fn drop_watchers(&self) -> usize {
        self.inner.terminate_all_watchers()
    }

    /// Applies storage's changes `lag` late until `until` (a cache trailing storage, as one
    /// server's of several can), then catches up.
    pub fn lag(&self, lag: Duration, until: Instant) {
        self.inner.lag.send_replace((!lag.is_zero()).then_some((lag, until)));
    }

    /// Throws the cache away and relists (debug API): watchers end, and watches from before
    /// the relist get 410.
    pub fn reset(&self) {
        // Not ready from this moment: nothing is served from the old state any more.
        self.inner.set_ready(false);
        self.inner.reset.notify_one();
    }

    /// A snapshot of the figures metrics report.
    pub fn stats(&self) -> WatchCacheStats {
        let inner = &self.inner;
        let ready = self.is_ready();
        let state = inner.state.read();
        WatchCacheStats {
            objects: state.objects.len(),
            window_events: state.window.len(),
            window_oldest_resource_version: if ready { inner.oldest_resource_version(&state) } else { 0 },
            resource_version: state.resource_version,
            registered_watchers: inner.watchers.lock().len(),
            terminated_watchers: inner.terminated.load(Ordering::Relaxed),
            relists: inner.relists.load(Ordering::Relaxed),
            undecodable_objects: inner.undecodable.load(Ordering::Relaxed),
            ready,
        }
    }
}

impl Inner {
    fn check_ready(&self) -> Result<(), CacheError> {
        match *self.down_since.lock() {
            None => Ok(()),
            // kube's Retry-After while (re)initializing: e^(0.06 * downtime), 1 to 30 s.
            Some(since) => {
                let secs = (0.06 * since.elapsed().as_secs_f64()).exp().clamp(1.0, 30.0);
                Err(CacheError::NotReady { retry_after_seconds: secs as u32 })
            }
        }
    }

    fn set_ready(&self, ready: bool) {
        let mut down = self.down_since.lock();
        match (ready, down.is_some()) {
            (true, _) => *down = None,
            (false, false) => *down = Some(Instant::now()),
            (false, true) => {}
        }
        drop(down);
        // Wake `wait_ready`.
        self.rv_tx.send_modify(|_| {});
    }
}

/// The cache's task: list, watch, apply and dispatch; relist when the watch ends.
async fn run(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(cache) = inner.upgrade() else { return };
        cache.set_ready(false);
        cache.terminate_all_watchers();
        let listed = match cache.relist().await {
            Ok(rv) => rv,
            Err(e) => {
                tracing::warn!(resource = cache.resource.plural, error = %e, "watch cache cannot list storage; retrying");
                let backoff = cache.config.retry_backoff;
                drop(cache);
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        let request = WatchRequest::new(KeyRange::prefix(cache.prefix.clone()), listed + 1).with_progress_notify();
        let storage_watch = match cache.storage.watch(request).await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(resource = cache.resource.plural, error = %e, "watch cache cannot watch storage; retrying");
                let backoff = cache.config.retry_backoff;
                drop(cache);
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        *cache.progress.lock() = Some(storage_watch.progress_requester());
        cache.set_ready(true);
        let reason = follow(&cache, storage_watch).await;
        tracing::info!(resource = cache.resource.plural, reason, "watch cache relists");
    }
}

/// Follows the storage watch until it ends; returns why. Under an injected lag, what storage
/// says is held back in arrival order and applied `lag` after it arrived.
async fn follow(cache: &Arc<Inner>, mut storage_watch: listwatch_storage::Watch) -> &'static str {
    let mut bookmarks = tokio::time::interval(cache.config.bookmark_tick);
    bookmarks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut progress = tokio::time::interval(cache.config.progress_request_period);
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let requester = storage_watch.progress_requester();
    let mut lag = cache.lag.subscribe();
    let mut held: VecDeque<(Instant, WatchResponse)> = VecDeque::new();
    loop {
        let waiting = cache.waiting.load(Ordering::Acquire) > 0;
        let current_lag = (*lag.borrow()).filter(|(_, until)| Instant::now() < *until).map(|(lag, _)| lag);
        let release_at = held.front().map(|(arrived, _)| *arrived + current_lag.unwrap_or_default());
        tokio::select! {
            response = storage_watch.next() => match response {
                Some(Ok(answer @ (WatchResponse::Events(_) | WatchResponse::Progress(_)))) => {
                    // The lag as it is now, not as it was at the top of the loop: a lag set while
                    // this task waited (both woken at once, `select!` picking this branch first)
                    // holds back what arrives after it.
                    let lagging = (*lag.borrow_and_update()).is_some_and(|(_, until)| Instant::now() < until);
                    if lagging || !held.is_empty() {
                        held.push_back((Instant::now(), answer));
                    } else {
                        apply_answer(cache, answer).await;
                    }
                }
                Some(Ok(WatchResponse::Compacted(_))) => return "storage compacted past the cache",
                Some(Err(e)) => {
                    tracing::warn!(resource = cache.resource.plural, error = %e, "storage watch failed");
                    return "the storage watch failed";
                }
                None => return "the storage watch ended",
            },
            _ = sleep_until_some(release_at) => {
                if let Some((_, answer)) = held.pop_front() {
                    apply_answer(cache, answer).await;
                }
            }
            _ = lag.changed() => {}
            _ = bookmarks.tick() => cache.send_bookmarks(),
            _ = progress.tick(), if waiting => requester.request(),
            _ = cache.progress_wanted.notified() => requester.request(),
            _ = cache.reset.notified() => return "reset through the debug API",
        }
    }
}

/// Applies one answer of the storage watch: its events, or its progress.
async fn apply_answer(cache: &Arc<Inner>, answer: WatchResponse) {
    match answer {
        WatchResponse::Events(events) => {
            for event in cache.apply(&events) {
                cache.dispatch(&event).await;
            }
        }
        WatchResponse::Progress(revision) => cache.advance_to(revision),
        WatchResponse::Compacted(_) => {}
    }
}

/// Sleeps until `at`; forever when there is nothing to wait for.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listwatch_meta::WatchEvent;
    use listwatch_storage::memory::MemoryStore;
    use listwatch_storage::{Event, EventKind, KeyValue};

    fn put(name: &str, revision: i64) -> Arc<Event> {
        let value = format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns"}}}}"#);
        Arc::new(Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key: Bytes::from(format!("/registry/configmaps/ns/{name}")),
                value: Bytes::from(value),
                create_revision: revision,
                mod_revision: revision,
                version: 1,
            },
            prev: None,
        })
    }

    /// A watcher that registers after a batch was applied but before it was dispatched gets
    /// each event once: from its snapshot, not again from its queue.
    #[tokio::test]
    async fn registering_between_apply_and_dispatch_repeats_nothing() {
        let resource = listwatch_meta::Registry.find("", "v1", "configmaps").unwrap();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
        let cache = WatchCache::start(resource, "/registry/configmaps/".into(), storage, WatchCacheConfig::default());
        assert!(cache.wait_ready(Duration::from_secs(5)).await);
        let start = cache.resource_version();
        let applied = cache.inner.apply(&[put("a", start + 1), put("b", start + 2)]);
        let options = WatcherOptions {
            start: WatchStart::Exact(start),
            namespace: None,
            name: None,
            predicate: None,
            bookmarks: false,
            initial_events_end_bookmark: false,
            deadline: Instant::now() + Duration::from_secs(60),
        };
        let mut watcher = cache.watch(options).await.unwrap();
        for event in &applied {
            cache.inner.dispatch(event).await;
        }
        let mut seen = Vec::new();
        while seen.len() < 2 {
            tokio::time::timeout(Duration::from_secs(5), watcher.next_batch(&mut seen, 10)).await.unwrap();
        }
        // Nothing more is queued for it.
        let mut more = Vec::new();
        assert!(tokio::time::timeout(Duration::from_millis(100), watcher.next_batch(&mut more, 10)).await.is_err());
        let revisions: Vec<i64> = seen.iter().filter_map(WatchEvent::resource_version).collect();
        assert_eq!(revisions, [start + 1, start + 2]);
    }

    /// A version the cache replaced stops holding the wire forms memoized for its event once
    /// the fan-out had its time; the current version keeps them.
    #[tokio::test]
    async fn a_superseded_version_stops_holding_its_encodings() {
        let resource = listwatch_meta::Registry.find("", "v1", "configmaps").unwrap();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
        for (retire_after, encodes_of_first) in [(Duration::ZERO, 2), (Duration::from_secs(3600), 1)] {
            let config = WatchCacheConfig { retire_encodings_after: retire_after, ..Default::default() };
            let cache = WatchCache::start(resource, "/registry/configmaps/".into(), storage.clone(), config);
            assert!(cache.wait_ready(Duration::from_secs(5)).await);
            let start = cache.resource_version();
            let first = cache.inner.apply(&[put("a", start + 1)]).remove(0).object.clone();
            let second = cache.inner.apply(&[put("a", start + 2)]).remove(0).object.clone();
            let count = |object: &Object| {
                let mut calls = 0;
                for _ in 0..2 {
                    object.encoded(0, |_| {
                        calls += 1;
                        Bytes::from_static(b"x")
                    });
                }
                calls
            };
            assert_eq!(count(&first), encodes_of_first, "retired after {retire_after:?}");
            assert_eq!(count(&second), 1, "the current version memoizes");
        }
    }

    /// A bookmark skipped because the watcher's queue was full stays due and goes out on the
    /// next tick once there is room; then the next one is an interval away.
    #[tokio::test]
    async fn a_bookmark_skipped_for_a_full_queue_goes_out_on_a_later_tick() {
        // The timer ticks once at start (before any watcher), then only when the test says.
        let config = WatchCacheConfig {
            watcher_queue: 1,
            bookmark_interval: Duration::from_secs(3600),
            bookmark_tick: Duration::from_secs(3600),
            ..Default::default()
        };
        let resource = listwatch_meta::Registry.find("", "v1", "configmaps").unwrap();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
        let cache = WatchCache::start(resource, "/registry/configmaps/".into(), storage, config);
        assert!(cache.wait_ready(Duration::from_secs(5)).await);
        let start = cache.resource_version();
        let options = WatcherOptions {
            start: WatchStart::Exact(start),
            namespace: Some("ns".into()),
            name: None,
            predicate: None,
            bookmarks: true,
            initial_events_end_bookmark: false,
            deadline: Instant::now() + Duration::from_secs(7200),
        };
        let mut watcher = cache.watch(options).await.unwrap();
        let id = cache.inner.watchers.lock().interested("ns", "a").next().expect("the watcher").0;
        // One event fills the queue; then the bookmark falls due.
        let applied = cache.inner.apply(&[put("a", start + 1)]);
        cache.inner.dispatch(&applied[0]).await;
        cache.inner.watchers.lock().schedule_bookmark(id, Some(Instant::now()));

        cache.inner.send_bookmarks();
        assert_eq!(cache.inner.watchers.lock().bookmarks_due(Instant::now()), [id], "still due");
        let mut seen = Vec::new();
        assert!(watcher.next_batch(&mut seen, 10).await);
        cache.inner.send_bookmarks();
        assert!(watcher.next_batch(&mut seen, 10).await);
        match &seen[..] {
            [WatchEvent::Added(a), WatchEvent::Bookmark { resource_version, initial_events_end: false }] => {
                assert_eq!((a.name(), *resource_version), ("a", start + 1));
            }
            other => panic!("expected the event, then a bookmark: {other:?}"),
        }
        assert!(cache.inner.watchers.lock().bookmarks_due(Instant::now()).is_empty(), "next one an hour away");
    }
}
