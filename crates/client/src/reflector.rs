//! The reflector: keeps a consumer's view of a resource in step with the server by LIST + WATCH,
//! with exactly client-go's rules for which resourceVersion to ask for and when to relist
//! (spec client-machinery.md §1.1–§1.4, §6).
//!
//! It is an explicit state machine (the private `State` enum), advanced one transition at a
//! time by [`Reflector::next_event`], which returns the next [`ReflectorEvent`] for the consumer
//! (an informer, or anything else):
//!
//! ```text
//! state          input                                          next
//! Unsynced       streaming lists on (and not given up on)       StreamingList
//! Unsynced       LIST ok                                        Synced               emits Replace
//! Unsynced       LIST 410 / "Too large"                         LIST again at "" at once
//! Unsynced       LIST failed                                    BackingOff → Unsynced
//! StreamingList  ADDED / MODIFIED / DELETED                     StreamingList        buffered
//! StreamingList  initial-events-end bookmark                    Watching (same stream), emits Replace
//! StreamingList  410 / "Too large"                              Unsynced, RV "" (stream again)
//! StreamingList  429 / connection refused                       BackingOff → Unsynced
//! StreamingList  other error, early end, wait over, N attempts  Unsynced, LIST this time
//! Synced         watch opened                                   Watching
//! Synced         429 / connection refused                       BackingOff → Synced
//! Synced         any other error                                BackingOff → Unsynced
//! Watching       event or bookmark                              Watching             emits it, RV advances
//! Watching       stream ended / connection dropped / idle       Synced (re-watch at once)
//! Watching       in-stream 429                                  BackingOff → Synced
//! Watching       410, unknown error, very short watch           BackingOff → Unsynced (relist)
//! BackingOff     delay over                                     Unsynced or Synced
//! ```
//!
//! The resourceVersion rules, with the client-go source they come from:
//! * The first LIST is at `"0"` (served by the watch cache), later relists at the last synced RV
//!   ("not older than", never back in time, kubernetes PR #83520), and at `""` (a consistent
//!   read) only after a LIST itself failed with 410 or "Too large resource version"; that retry
//!   happens at once, without backoff (`relistResourceVersion`, PR #86430, #91073).
//! * Pagination (500 a page) only where client-go's policy uses it: an explicit page size; or a
//!   server that once answered a `"0"` list in pages (its watch cache is off); or a list at `""`.
//!   A relist at a real RV is unpaginated so the watch cache can serve it. A continue token that
//!   expires falls back to one full list at the requested RV (`pager.FullListIfExpired`).
//! * A watch that ends normally is re-opened at once from the last RV, no relist, no backoff. A
//!   429 or a refused connection backs off and re-watches. An in-stream 410, an unknown error,
//!   or a "very short watch" (closed within 1 s with no event) backs off and relists.
//! * Every watch asks for bookmarks and gets a random `timeoutSeconds` in [min, 2·min) (client-go:
//!   [300, 600) s, kubernetes#6770), plus a client-side idle limit a little above it. Bookmarks
//!   advance the RV. Events of a watch started at `""`/`"0"` only advance it from the first
//!   non-ADDED event on (PR #136583: synthetic ADDED events are not RV-ordered).
//! * Streaming lists (`sendInitialEvents=true`, optional): requested at the last RV, or `""` on
//!   first start or after the RV became unavailable; the events are buffered until the
//!   `k8s.io/initial-events-end` bookmark, then handed over as one replacement and the same
//!   stream goes on as the watch. The wait for the bookmark is bounded (a warning every 10 s,
//!   then a fall-back to LIST for this sync; client-go waits forever, kubernetes#140890), 410 or
//!   "Too large" retry at `""`, and a resume never sends `sendInitialEvents`.
//! * Between sync attempts: client-go's backoff (see [`crate::backoff`]).
//!
//! Errors never stop the reflector: each is reported to the error handler together with what
//! the reflector does next ([`ReflectorError`]), then handled by the rules above.
//!
//! Only checked against listwatch: this module's behaviour was tested against listwatch (both
//! storage backends) and scripted fakes, not against a real kube-apiserver.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::error::Error;
use crate::event::WatchEvent;
use crate::params::{ListParams, WatchParams};
use crate::resource::{Object, ObjectList};
use crate::watch::WatchStream;

mod config;
pub use config::{DEFAULT_PAGE_SIZE, ErrorHandler, ReflectorConfig};

/// What a reflector lists and watches through. [`Api`](crate::Api) implements it; tests and
/// special sources can implement it too.
///
/// `list` returns its items in `Arc`s, as the store will hold them: a list of 100,000 objects
/// then never exists as a `Vec<K>` next to the same objects in `Arc`s
/// ([`Api::list_shared`](crate::Api::list_shared); other sources can use
/// [`ObjectList::map_items`]`(list, Arc::new)`).
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// One LIST request (one page, when `params` has a limit).
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<K>>, Error>>;
    /// Opens a watch; its events arrive on the returned stream.
    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<K>, Error>>;

    /// `watch` with each object in an `Arc`, which is what the reflector takes. The default
    /// wraps `watch`'s objects; [`Api`](crate::Api) wraps them as it decodes them.
    fn watch_shared<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<Arc<K>>, Error>>
    where
        K: Send + 'static,
    {
        Box::pin(async move {
            let stream = self.watch(params).await?;
            Ok(stream.map(|item| item.map(|event| event.map(Arc::new))).boxed())
        })
    }
}

impl<K, T: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<T> {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<K>>, Error>> {
        (**self).list(params)
    }
    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<K>, Error>> {
        (**self).watch(params)
    }
    fn watch_shared<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<Arc<K>>, Error>>
    where
        K: Send + 'static,
    {
        (**self).watch_shared(params)
    }
}

/// Where a reflector was when an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Listing (possibly page by page).
    List,
    /// Receiving a streaming list's initial events.
    StreamingList,
    /// Opening a watch after a sync.
    OpeningWatch,
    /// Receiving a watch's events.
    Watching,
}

/// What the reflector does after an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Back off, then list again.
    Relist,
    /// List again at once at `""` (the RV was unavailable).
    RetryListConsistent,
    /// Back off, then re-open the watch from the same RV.
    Rewatch,
    /// Open a new watch from the last RV at once (the stream merely ended).
    RewatchNow,
    /// Try the streaming list again (at `""` after a 410, or after a backoff).
    RetryStreamingList,
    /// Give up streaming for this sync and LIST.
    FallBackToList,
}

/// An error seen by a reflector, with where and what follows.
#[derive(Debug)]
pub struct ReflectorError {
    /// What went wrong.
    pub error: Error,
    /// What the reflector was doing.
    pub phase: Phase,
    /// What it does next.
    pub recovery: Recovery,
}

/// What a reflector tells its consumer.
#[derive(Debug)]
pub enum ReflectorEvent<K> {
    /// The complete state at `resource_version` (a list, or a streaming list's initial
    /// events): replace everything held with it.
    Replace {
        /// Every object there is.
        objects: Vec<Arc<K>>,
        /// The revision the state is at: the next watch starts there.
        resource_version: String,
        /// Whether the state came from a streaming list (else from LIST).
        streamed: bool,
    },
    /// A new object (or a relist found one): add it.
    Added(Arc<K>),
    /// An object changed: replace what is held.
    Modified(Arc<K>),
    /// An object was deleted; the value is its last state.
    Deleted(Arc<K>),
    /// The stream has reached `resource_version` (nothing changed).
    Bookmark {
        /// The revision the stream has reached.
        resource_version: String,
    },
}

/// Where the reflector is. See the module docs for the transitions.
enum State<K> {
    /// Nothing to build on yet (start, or after a 410 or unknown error): the next step syncs.
    Unsynced,
    /// A streaming list is delivering its initial events into `buffer`.
    StreamingList {
        stream: WatchStream<Arc<K>>,
        buffer: HashMap<String, Arc<K>>,
        opened: Instant,
        deadline: Instant,
        next_warning: Instant,
        events: u64,
    },
    /// Synced at `last_sync_resource_version`: the next step opens a watch from there.
    Synced,
    /// A watch is streaming. `trusted` is false while a watch started at `""`/`"0"` has only
    /// delivered (synthetic, unordered) ADDED events.
    Watching { stream: WatchStream<Arc<K>>, opened: Instant, events: u64, trusted: bool },
    /// Waiting until `until`, then `then`.
    BackingOff { until: Instant, then: AfterBackoff },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterBackoff {
    Sync,
    Watch,
}

/// The list-and-watch loop of one resource. See the module docs.
pub struct Reflector<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    config: ReflectorConfig,
    state: State<K>,
    last_sync_resource_version: String,
    /// A LIST at the last RV failed with 410 / "Too large": the next ones use `""`.
    resource_version_unavailable: bool,
    /// A `"0"` list came back in pages: the watch cache is off, keep paging.
    paginated_result: bool,
    /// This sync lists, because the streaming list failed.
    fall_back_to_list: bool,
    streaming_list_attempts: u32,
    backoff: Backoff,
}

impl<K: Object> Reflector<K> {
    /// A reflector listing and watching through `lister_watcher`; it does nothing until driven.
    pub fn new(lister_watcher: impl ListerWatcher<K>, config: ReflectorConfig) -> Reflector<K> {
        Reflector::from_arc(Arc::new(lister_watcher), config)
    }

    /// [`Reflector::new`] with a source that is already shared.
    pub fn from_arc(lister_watcher: Arc<dyn ListerWatcher<K>>, config: ReflectorConfig) -> Reflector<K> {
        Reflector {
            lister_watcher,
            backoff: Backoff::new(config.backoff),
            config,
            state: State::Unsynced,
            last_sync_resource_version: String::new(),
            resource_version_unavailable: false,
            paginated_result: false,
            fall_back_to_list: false,
            streaming_list_attempts: 0,
        }
    }

    /// The resourceVersion of the last list, event or bookmark taken in.
    pub fn last_sync_resource_version(&self) -> &str {
        &self.last_sync_resource_version
    }

    /// The next event. Never ends; errors go to the error handler.
    ///
    /// Cancel-safe in the sense that matters: dropping the future loses no state, at worst a
    /// request in flight is made again.
    pub async fn next_event(&mut self) -> ReflectorEvent<K> {
        loop {
            if let Some(event) = self.step().await {
                return event;
            }
        }
    }

    /// The reflector as an endless stream of events.
    pub fn into_stream(self) -> impl futures::Stream<Item = ReflectorEvent<K>> + Send {
        futures::stream::unfold(self, |mut reflector| async move {
            let event = reflector.next_event().await;
            Some((event, reflector))
        })
    }

    /// One transition.
    async fn step(&mut self) -> Option<ReflectorEvent<K>> {
        // Decide first, so no borrow of the state (which holds a non-`Sync` stream) lives
        // across an await.
        enum Next {
            Wait(Instant, AfterBackoff),
            StartStreamingList,
            List,
            ContinueStreamingList,
            OpenWatch,
            ContinueWatching,
        }
        let next = match &self.state {
            State::BackingOff { until, then } => Next::Wait(*until, *then),
            State::Unsynced if self.config.streaming_list && !self.fall_back_to_list => Next::StartStreamingList,
            State::Unsynced => Next::List,
            State::StreamingList { .. } => Next::ContinueStreamingList,
            State::Synced => Next::OpenWatch,
            State::Watching { .. } => Next::ContinueWatching,
        };
        match next {
            Next::Wait(until, then) => {
                tokio::time::sleep_until(until).await;
                self.state = match then {
                    AfterBackoff::Sync => State::Unsynced,
                    AfterBackoff::Watch => State::Synced,
                };
                None
            }
            Next::StartStreamingList => {
                self.start_streaming_list().await;
                None
            }
            Next::List => self.list().await,
            Next::ContinueStreamingList => self.step_streaming_list().await,
            Next::OpenWatch => {
                self.open_watch().await;
                None
            }
            Next::ContinueWatching => self.step_watching().await,
        }
    }

    /// client-go `relistResourceVersion`.
    fn relist_resource_version(&self) -> String {
        if self.resource_version_unavailable {
            String::new()
        } else if self.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            self.last_sync_resource_version.clone()
        }
    }

    /// client-go `rewatchResourceVersion` (used by streaming lists).
    fn rewatch_resource_version(&self) -> String {
        if self.resource_version_unavailable { String::new() } else { self.last_sync_resource_version.clone() }
    }

    fn watch_params(&self, resource_version: String) -> WatchParams {
        let min = self.config.min_watch_timeout;
        let timeout = min + min.mul_f64(rand::random::<f64>());
        // The server works in whole seconds; the idle limit follows what it was actually told.
        let server_timeout = Duration::from_secs(timeout.as_secs().max(1));
        WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            resource_version,
            timeout: Some(server_timeout),
            allow_bookmarks: true,
            send_initial_events: None,
            idle_timeout: Some(server_timeout + self.config.idle_margin),
        }
    }

    fn report(&self, error: Error, phase: Phase, recovery: Recovery) {
        let report = ReflectorError { error, phase, recovery };
        match &self.config.error_handler {
            Some(handler) => handler(&report),
            None => log_error(&self.config.name, &report),
        }
    }

    fn back_off(&mut self, then: AfterBackoff, at_least: Option<Duration>) {
        let now = Instant::now();
        let delay = self.backoff.next_delay(now).max(at_least.unwrap_or_default());
        self.state = State::BackingOff { until: now + delay, then };
    }

    // ---- LIST -------------------------------------------------------------------------------

    async fn list(&mut self) -> Option<ReflectorEvent<K>> {
        let resource_version = self.relist_resource_version();
        let result = match self.list_pages(&resource_version).await {
            Err(e) if e.is_expired() || e.is_too_large_resource_version() => {
                // The RV is gone (or not reached yet): at once, a consistent list at "".
                self.resource_version_unavailable = true;
                self.report(e, Phase::List, Recovery::RetryListConsistent);
                let consistent = self.relist_resource_version();
                self.list_pages(&consistent).await
            }
            other => other,
        };
        match result {
            Ok(list) => {
                let resource_version = list.metadata.resource_version;
                if resource_version.is_empty() {
                    let e = Error::decode("a list", "the server's list has no resourceVersion");
                    self.report(e, Phase::List, Recovery::Relist);
                    self.back_off(AfterBackoff::Sync, None);
                    return None;
                }
                self.resource_version_unavailable = false;
                self.fall_back_to_list = false;
                self.streaming_list_attempts = 0;
                self.last_sync_resource_version = resource_version.clone();
                self.state = State::Synced;
                Some(ReflectorEvent::Replace { objects: list.items, resource_version, streamed: false })
            }
            Err(e) => {
                self.report(e, Phase::List, Recovery::Relist);
                self.back_off(AfterBackoff::Sync, None);
                None
            }
        }
    }

    /// All pages of a list at `resource_version` (client-go's pager with `FullListIfExpired`).
    async fn list_pages(&mut self, resource_version: &str) -> Result<ObjectList<Arc<K>>, Error> {
        let limit = match self.config.page_size {
            Some(size) => Some(size),
            None if self.paginated_result => Some(DEFAULT_PAGE_SIZE),
            None if !resource_version.is_empty() && resource_version != "0" => None,
            None => Some(DEFAULT_PAGE_SIZE),
        };
        let requested = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            resource_version: resource_version.to_owned(),
            resource_version_match: None,
            limit,
            continue_token: None,
        };
        let mut params = requested.clone();
        let mut result: Option<ObjectList<Arc<K>>> = None;
        loop {
            let page = match self.list_once(&params).await {
                Ok(page) => page,
                Err(e) if e.is_expired() && params.continue_token.is_some() => {
                    // The snapshot of the first page is gone: one full list at the RV asked for.
                    tracing::debug!(reflector = %self.config.name, error = %e, "continue token expired; listing in full");
                    let full = ListParams { limit: None, ..requested.clone() };
                    return self.list_once(&full).await;
                }
                Err(e) => return Err(e),
            };
            let next = page.metadata.continue_token().map(str::to_owned);
            match &mut result {
                None => result = Some(page),
                Some(list) => list.items.extend(page.items),
            }
            match next {
                Some(token) => {
                    if resource_version == "0" {
                        self.paginated_result = true;
                    }
                    // Later pages carry only the token (an RV with a continue is a 400).
                    params.continue_token = Some(token);
                    params.resource_version = String::new();
                }
                None => {
                    let mut list = result.expect("at least one page");
                    list.metadata.continue_token = None;
                    return Ok(list);
                }
            }
        }
    }

    fn list_once(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<Arc<K>>, Error>> + Send + 'static {
        let (lister_watcher, limit, params) = (self.lister_watcher.clone(), self.config.list_timeout, params.clone());
        async move { list_with_timeout(lister_watcher, limit, &params).await }
    }

    // ---- streaming list ---------------------------------------------------------------------

    async fn start_streaming_list(&mut self) {
        let mut params = self.watch_params(self.rewatch_resource_version());
        params.send_initial_events = Some(true);
        self.streaming_list_attempts += 1;
        match self.lister_watcher.watch_shared(&params).await {
            Ok(stream) => {
                let now = Instant::now();
                self.state = State::StreamingList {
                    stream,
                    buffer: HashMap::new(),
                    opened: now,
                    deadline: now + self.config.initial_events_timeout,
                    next_warning: now + self.config.initial_events_warning_interval,
                    events: 0,
                };
            }
            Err(e) => self.streaming_list_failed(e),
        }
    }

    /// client-go `watchList` retries: 410/TooLarge at `""` at once, 429/refused after a backoff,
    /// anything else lists instead; bounded, unlike client-go.
    fn streaming_list_failed(&mut self, error: Error) {
        if self.streaming_list_attempts >= self.config.streaming_list_attempts {
            self.report(error, Phase::StreamingList, Recovery::FallBackToList);
            self.fall_back_to_list = true;
            self.state = State::Unsynced;
        } else if error.is_expired() || error.is_too_large_resource_version() {
            self.resource_version_unavailable = true;
            self.report(error, Phase::StreamingList, Recovery::RetryStreamingList);
            self.state = State::Unsynced;
        } else if error.is_connection_refused() || error.is_too_many_requests() {
            let retry_after = error.retry_after();
            self.report(error, Phase::StreamingList, Recovery::RetryStreamingList);
            self.back_off(AfterBackoff::Sync, retry_after);
        } else {
            self.report(error, Phase::StreamingList, Recovery::FallBackToList);
            self.fall_back_to_list = true;
            self.state = State::Unsynced;
        }
    }

    async fn step_streaming_list(&mut self) -> Option<ReflectorEvent<K>> {
        let State::StreamingList { stream, deadline, next_warning, .. } = &mut self.state else { unreachable!() };
        let wake = (*deadline).min(*next_warning);
        let Ok(item) = tokio::time::timeout_at(wake, stream.next()).await else {
            let (deadline, opened) = match &mut self.state {
                State::StreamingList { deadline, opened, next_warning, .. } => {
                    *next_warning += self.config.initial_events_warning_interval;
                    (*deadline, *opened)
                }
                _ => unreachable!(),
            };
            if Instant::now() >= deadline {
                let after = self.config.initial_events_timeout;
                self.report(
                    Error::Timeout { what: "waiting for the initial-events-end bookmark", after },
                    Phase::StreamingList,
                    Recovery::FallBackToList,
                );
                self.fall_back_to_list = true;
                self.state = State::Unsynced;
            } else {
                tracing::warn!(
                    reflector = %self.config.name,
                    waited = ?opened.elapsed(),
                    "awaiting the initial-events-end bookmark of a streaming list"
                );
            }
            return None;
        };
        let State::StreamingList { buffer, events, .. } = &mut self.state else { unreachable!() };
        match item {
            Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                *events += 1;
                buffer.insert(object.key(), object);
                None
            }
            Some(Ok(WatchEvent::Deleted(object))) => {
                *events += 1;
                buffer.remove(&object.key());
                None
            }
            Some(Ok(WatchEvent::Bookmark(bookmark))) if bookmark.is_initial_events_end() => {
                if bookmark.resource_version.is_empty() {
                    let e = Error::decode("a bookmark", "the initial-events-end bookmark has no resourceVersion");
                    self.streaming_list_failed(e);
                    return None;
                }
                let State::StreamingList { stream, buffer, opened, events, .. } =
                    std::mem::replace(&mut self.state, State::Unsynced)
                else {
                    unreachable!()
                };
                self.resource_version_unavailable = false;
                self.fall_back_to_list = false;
                self.streaming_list_attempts = 0;
                self.last_sync_resource_version = bookmark.resource_version.clone();
                // The same stream goes on as the watch, from the bookmark's RV.
                self.state = State::Watching { stream, opened, events: events + 1, trusted: true };
                Some(ReflectorEvent::Replace {
                    objects: buffer.into_values().collect(),
                    resource_version: bookmark.resource_version,
                    streamed: true,
                })
            }
            // Progress bookmarks before the end say nothing about the initial events.
            Some(Ok(WatchEvent::Bookmark(_))) => None,
            Some(Ok(WatchEvent::Error(status))) => {
                self.streaming_list_failed(Error::from(status));
                None
            }
            Some(Err(e)) => {
                self.streaming_list_failed(e);
                None
            }
            None => {
                let e = Error::Io {
                    what: "a streaming list",
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the stream ended before the initial-events-end bookmark",
                    ),
                };
                self.streaming_list_failed(e);
                None
            }
        }
    }

    // ---- WATCH ------------------------------------------------------------------------------

    async fn open_watch(&mut self) {
        let resource_version = self.last_sync_resource_version.clone();
        let trusted = !resource_version.is_empty() && resource_version != "0";
        let params = self.watch_params(resource_version);
        match self.lister_watcher.watch_shared(&params).await {
            Ok(stream) => {
                self.state = State::Watching { stream, opened: Instant::now(), events: 0, trusted };
            }
            Err(e) if e.is_connection_refused() || e.is_too_many_requests() => {
                let retry_after = e.retry_after();
                self.report(e, Phase::OpeningWatch, Recovery::Rewatch);
                self.back_off(AfterBackoff::Watch, retry_after);
            }
            Err(e) => {
                self.report(e, Phase::OpeningWatch, Recovery::Relist);
                self.back_off(AfterBackoff::Sync, None);
            }
        }
    }

    async fn step_watching(&mut self) -> Option<ReflectorEvent<K>> {
        let State::Watching { stream, .. } = &mut self.state else { unreachable!() };
        let item = stream.next().await;
        let State::Watching { events, .. } = &mut self.state else { unreachable!() };
        if matches!(item, Some(Ok(_))) {
            *events += 1;
        }
        match item {
            Some(Ok(WatchEvent::Added(object))) => {
                self.observe(object.resource_version(), true);
                Some(ReflectorEvent::Added(object))
            }
            Some(Ok(WatchEvent::Modified(object))) => {
                self.observe(object.resource_version(), false);
                Some(ReflectorEvent::Modified(object))
            }
            Some(Ok(WatchEvent::Deleted(object))) => {
                self.observe(object.resource_version(), false);
                Some(ReflectorEvent::Deleted(object))
            }
            Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                self.observe(Some(&bookmark.resource_version), false);
                Some(ReflectorEvent::Bookmark { resource_version: bookmark.resource_version })
            }
            Some(Ok(WatchEvent::Error(status))) => {
                self.watch_failed(Error::from(status));
                None
            }
            Some(Err(e)) if e.is_probable_eof() => {
                self.report(e, Phase::Watching, Recovery::RewatchNow);
                self.watch_ended();
                None
            }
            Some(Err(e)) => {
                self.watch_failed(e);
                None
            }
            None => {
                self.watch_ended();
                None
            }
        }
    }

    /// Takes in an event's RV, unless the watch started at `""`/`"0"` and has only sent ADDED
    /// events so far.
    fn observe(&mut self, resource_version: Option<&str>, added: bool) {
        let State::Watching { trusted, .. } = &mut self.state else { return };
        if !*trusted && !added {
            *trusted = true;
        }
        if *trusted && let Some(rv) = resource_version.filter(|rv| !rv.is_empty()) {
            rv.clone_into(&mut self.last_sync_resource_version);
        }
    }

    fn watch_ended(&mut self) {
        let State::Watching { opened, events, .. } = &self.state else { unreachable!() };
        if *events == 0 && opened.elapsed() < self.config.very_short_watch {
            let e = Error::Io {
                what: "a watch",
                source: std::io::Error::other(
                    "very short watch: the watch lasted less than a second and no items were received",
                ),
            };
            self.report(e, Phase::Watching, Recovery::Relist);
            self.back_off(AfterBackoff::Sync, None);
        } else {
            self.state = State::Synced;
        }
    }

    fn watch_failed(&mut self, error: Error) {
        if error.is_too_many_requests() {
            let retry_after = error.retry_after();
            self.report(error, Phase::Watching, Recovery::Rewatch);
            self.back_off(AfterBackoff::Watch, retry_after);
        } else {
            // 410 included: relist at the last RV (not marked unavailable: a list "not older
            // than" it is still valid, PR #86430).
            self.report(error, Phase::Watching, Recovery::Relist);
            self.back_off(AfterBackoff::Sync, None);
        }
    }
}

/// One LIST request under the reflector's per-page limit, over an owned `Arc` so the future does
/// not borrow the reflector (which is `Send` but not `Sync`: it holds the watch stream).
async fn list_with_timeout<K: Object>(
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    limit: Option<Duration>,
    params: &ListParams,
) -> Result<ObjectList<Arc<K>>, Error> {
    let request = lister_watcher.list(params);
    match limit {
        Some(limit) => tokio::time::timeout(limit, request)
            .await
            .unwrap_or(Err(Error::Timeout { what: "a list request", after: limit })),
        None => request.await,
    }
}

/// client-go's `DefaultWatchErrorHandler` levels.
fn log_error(name: &str, report: &ReflectorError) {
    let ReflectorError { error, phase, recovery } = report;
    if error.is_expired() || error.is_probable_eof() {
        tracing::debug!(reflector = %name, ?phase, ?recovery, %error, "watch ended");
    } else {
        tracing::warn!(reflector = %name, ?phase, ?recovery, %error, "list/watch failed");
    }
}

#[cfg(test)]
pub(crate) mod tests;
