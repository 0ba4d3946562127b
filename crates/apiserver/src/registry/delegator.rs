//! The one place that decides whether the watch cache or storage serves a read (kube's
//! `cacher/delegator.go`), with kube-apiserver's resourceVersion semantics (spec §1.4, §7, §8).
//!
//! | request                              | served from                                      |
//! |--------------------------------------|--------------------------------------------------|
//! | GET, resourceVersion unset           | storage (a consistent read)                      |
//! | GET, `0` or N                        | the cache (N: once it has N), else storage       |
//! | LIST `resourceVersion=0`             | the cache at once, `limit` ignored               |
//! | LIST unset, no limit                 | the cache once it has storage's current revision (consistent read), else storage |
//! | LIST N, no limit (or NotOlderThan)   | the cache after it reaches N (≤3 s, else 504)    |
//! | LIST unset + limit, N + limit, Exact, continue | storage, at one revision for every page |
//! | WATCH                                | the cache's watchers, else a storage watch of its own |
//!
//! Uncached resources read storage for everything. What comes back (objects, a list page, a
//! [`WatchSource`] of events) is the same whichever path served it.

use std::sync::Arc;
use std::time::Instant;

use listwatch_meta::continue_token::ContinueToken;
use listwatch_meta::{ApiError, Object, WatchEvent};
use listwatch_watchcache::direct::{self, DirectOptions, DirectStart, DirectWatcher};
use listwatch_watchcache::{CacheError, CacheWatcher, WatchStart, WatcherOptions};

use super::ResourceStore;
use crate::options::{ListOptions, RequestedVersion, ResourceVersionMatch};

/// A list result.
pub struct ListResult {
    /// The objects of this page, in key order.
    pub items: Vec<Arc<Object>>,
    /// The revision the list is consistent at.
    pub resource_version: i64,
    /// Where the next page starts, when there is one.
    pub continue_token: Option<String>,
    /// `remainingItemCount`, when kube would send it (unfiltered pages).
    pub remaining: Option<i64>,
}

/// Where a watch's events come from.
pub enum WatchSource {
    /// One of the watch cache's watchers.
    Cache(CacheWatcher),
    /// A storage watch of its own (uncached resources), with the resourceVersion its initial
    /// events are at or below.
    Direct { watcher: DirectWatcher, initial_through: i64 },
    /// A watch that is only an ERROR event (a start the cache cannot serve, sent as kube sends
    /// it: a 200, then the error in the stream).
    Error(Option<ApiError>),
}

impl WatchSource {
    /// Waits for events and appends up to `max` of them to `out`; false once the watch has
    /// ended.
    pub async fn next_batch(&mut self, out: &mut Vec<WatchEvent>, max: usize) -> bool {
        match self {
            WatchSource::Cache(w) => w.next_batch(out, max).await,
            WatchSource::Direct { watcher, .. } => watcher.next_batch(out, max).await,
            WatchSource::Error(e) => match e.take() {
                Some(e) => {
                    out.push(WatchEvent::Error(e));
                    true
                }
                None => false,
            },
        }
    }

    /// The resourceVersion at or below which this watch's events are its initial events (the
    /// state it started from); above it they are changes.
    pub fn initial_through(&self) -> i64 {
        match self {
            WatchSource::Cache(w) => w.start_resource_version(),
            WatchSource::Direct { initial_through, .. } => *initial_through,
            WatchSource::Error(_) => 0,
        }
    }
}

impl ResourceStore {
    /// GET of one object: resourceVersion unset reads storage (consistent), "0" the cache, N
    /// the cache once it has N (not older than).
    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
        rv: RequestedVersion,
    ) -> Result<Option<Arc<Object>>, ApiError> {
        let namespace = self.scope(namespace);
        Ok(match (rv, &self.cache) {
            (RequestedVersion::Unset, _) => self.read(namespace, name).await?,
            (RequestedVersion::Any, Some(cache)) => {
                cache.get(namespace, name, 0).await.map_err(|e| e.to_api_error())?
            }
            (RequestedVersion::At(n), Some(cache)) => {
                cache.get(namespace, name, n).await.map_err(|e| e.to_api_error())?
            }
            (RequestedVersion::Any, None) => self.read(namespace, name).await?,
            (RequestedVersion::At(n), None) => {
                let current = self.current_revision().await?;
                if current < n {
                    return Err(ApiError::too_large_resource_version(n, current, 0));
                }
                self.read(namespace, name).await?
            }
        })
    }

    /// LIST (see the module doc for which path serves which request).
    pub async fn list(&self, namespace: Option<&str>, options: &ListOptions) -> Result<ListResult, ApiError> {
        let namespace = self.scope(namespace);
        let predicate = self.predicate(options);
        let paging = options.limit > 0;
        let exact = options.resource_version_match == Some(ResourceVersionMatch::Exact);
        if let Some(cache) = &self.cache
            && options.continue_token.is_none()
            && !exact
        {
            // (the revision the cache must reach, whether `limit` applies)
            let from_cache = match (options.resource_version, options.resource_version_match) {
                (RequestedVersion::Any, _) => Some((None, false)),
                (RequestedVersion::At(n), Some(ResourceVersionMatch::NotOlderThan)) => Some((Some(n), true)),
                (RequestedVersion::At(n), None) if !paging => Some((Some(n), false)),
                (RequestedVersion::Unset, None) if self.consistent_reads_from_cache => {
                    // A consistent read from the cache; storage if the cache does not catch up.
                    match cache.wait_consistent().await {
                        Ok(rv) => {
                            crate::metrics::consistent_read(self.resource, true);
                            Some((Some(rv), true))
                        }
                        Err(CacheError::NotReady { retry_after_seconds }) => {
                            return Err(ApiError::too_many_requests(
                                "storage is (re)initializing",
                                retry_after_seconds,
                            ));
                        }
                        Err(_) => {
                            crate::metrics::consistent_read(self.resource, false);
                            None
                        }
                    }
                }
                _ => None,
            };
            if let Some((min_rv, honor_limit)) = from_cache {
                let list = cache.list(namespace, min_rv, predicate.as_ref()).await.map_err(|e| e.to_api_error())?;
                let mut result = ListResult {
                    items: list.items,
                    resource_version: list.resource_version,
                    continue_token: None,
                    remaining: None,
                };
                if honor_limit && paging && result.items.len() as i64 > options.limit {
                    // The rest continues from storage at the cache's revision (a real revision
                    // of storage, so the pages stay consistent).
                    let total = result.items.len() as i64;
                    result.items.truncate(options.limit as usize);
                    let last = result.items.last().expect("limit > 0");
                    let key = self.key(self.scope(Some(last.namespace())), last.name());
                    let token = ContinueToken::for_next_page(&key, &self.prefix(namespace), result.resource_version)
                        .map_err(ApiError::internal)?;
                    result.continue_token = Some(token.encode());
                    result.remaining = (!options.has_selectors()).then_some(total - options.limit);
                }
                return Ok(result);
            }
        }
        super::storage_list::list(self, namespace, options, predicate).await
    }

    /// Every object as of storage's current revision, for the controllers: from the cache when
    /// it is ready and reaches that revision, else from storage. Unlike a client's consistent
    /// LIST, a cache still initializing is no refusal (a controller reconciling after a 410
    /// must see everything written up to now, and has no one to send a 429 to).
    pub async fn list_all_now(&self) -> Result<Vec<Arc<Object>>, ApiError> {
        if let Some(cache) = &self.cache
            && cache.is_ready()
        {
            let now = self.current_revision().await?;
            if let Ok(list) = cache.list(None, Some(now), None).await {
                return Ok(list.items);
            }
        }
        Ok(super::storage_list::list(self, None, &ListOptions::default(), None).await?.items)
    }

    /// WATCH: the events of `namespace` (or all) from the start `options` ask for, until
    /// `deadline`. A start the cache cannot serve is a [`WatchSource::Error`] (kube answers
    /// 200 and sends it as an ERROR event) or, for the errors kube answers before the stream,
    /// `Err`.
    pub async fn watch(
        &self,
        options: &ListOptions,
        namespace: Option<String>,
        deadline: Instant,
    ) -> Result<WatchSource, ApiError> {
        match &self.cache {
            Some(_) => self.watch_cached(options, namespace, deadline).await,
            None => self.watch_uncached(options, namespace.as_deref()).await,
        }
    }

    async fn watch_cached(
        &self,
        options: &ListOptions,
        namespace: Option<String>,
        deadline: Instant,
    ) -> Result<WatchSource, ApiError> {
        let cache = self.cache.as_ref().expect("cached resource");
        let (start, end_bookmark) = match cache_start(options, self.consistent_reads_from_cache) {
            Ok(s) => s,
            Err(e) => return Ok(WatchSource::Error(Some(e))),
        };
        let watch_list = options.send_initial_events == Some(true);
        let watcher_options = WatcherOptions {
            start,
            namespace,
            // A watch of one object (`metadata.name=X`, among other terms or not) is indexed by
            // that name; the predicate still decides what matches.
            name: options.field_selector.requires_exact_name().map(str::to_owned),
            predicate: self.predicate(options),
            bookmarks: options.allow_watch_bookmarks,
            initial_events_end_bookmark: end_bookmark,
            deadline,
        };
        match cache.watch(watcher_options).await {
            Ok(w) => Ok(WatchSource::Cache(w)),
            Err(e @ CacheError::TooOld { .. }) => Ok(WatchSource::Error(Some(e.to_api_error()))),
            // A streaming list (or a consistent start) that the cache cannot reach in time: an
            // ERROR event, as kube sends it.
            Err(e @ CacheError::TooLargeResourceVersion { .. })
                if watch_list || options.resource_version == RequestedVersion::Unset =>
            {
                Ok(WatchSource::Error(Some(e.to_api_error())))
            }
            Err(e) => Err(e.to_api_error()),
        }
    }

    async fn watch_uncached(&self, options: &ListOptions, namespace: Option<&str>) -> Result<WatchSource, ApiError> {
        let start = match (options.send_initial_events, options.resource_version) {
            (Some(false), RequestedVersion::Unset | RequestedVersion::Any) => {
                DirectStart::After(self.current_revision().await?)
            }
            (Some(true), RequestedVersion::At(n)) => DirectStart::ListThenWatch { min_resource_version: n },
            (Some(false) | None, RequestedVersion::At(n)) => DirectStart::After(n),
            (_, RequestedVersion::Unset | RequestedVersion::Any) => {
                DirectStart::ListThenWatch { min_resource_version: 0 }
            }
        };
        // kube-apiserver's WatchList defaulting happens before the storage path is chosen: a
        // watch from "" or "0" is a streaming list there too.
        let streaming = match options.send_initial_events {
            Some(initial) => initial,
            None => matches!(options.resource_version, RequestedVersion::Unset | RequestedVersion::Any),
        };
        let after = match start {
            DirectStart::After(rv) => Some(rv),
            DirectStart::ListThenWatch { .. } => None,
        };
        let direct_options = DirectOptions {
            start,
            predicate: self.predicate(options),
            initial_events_end_bookmark: streaming && options.allow_watch_bookmarks,
        };
        let watcher =
            direct::watch(&self.storage, self.resource, self.prefix(namespace), direct_options, self.list_page_size)
                .await?;
        // The list's revision is not told: storage's revision after it is at or past it, so
        // every initial event is at or below that (what the debug API's breakers count from).
        let initial_through = match after {
            Some(rv) => rv,
            None => self.storage.current_revision().await.unwrap_or(0),
        };
        Ok(WatchSource::Direct { watcher, initial_through })
    }
}

/// The watch's start, with kube-apiserver's WatchList defaulting: a watch from "" or "0"
/// behaves as a streaming list (initial events, then the end bookmark if bookmarks were
/// asked for).
fn cache_start(options: &ListOptions, progress_supported: bool) -> Result<(WatchStart, bool), ApiError> {
    let bookmarks = options.allow_watch_bookmarks;
    Ok(match (options.send_initial_events, options.resource_version) {
        (Some(_), _) if !progress_supported => {
            return Err(ApiError::internal(
                "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled",
            ));
        }
        (Some(initial), RequestedVersion::Unset) => {
            (WatchStart::Consistent { initial_events: initial }, initial && bookmarks)
        }
        (Some(initial), RequestedVersion::Any) => (WatchStart::Any { initial_events: initial }, initial && bookmarks),
        (Some(true), RequestedVersion::At(n)) => {
            (WatchStart::NotOlderThan { resource_version: n, initial_events: true }, bookmarks)
        }
        (Some(false), RequestedVersion::At(n)) => (WatchStart::Exact(n), false),
        (None, RequestedVersion::At(n)) => (WatchStart::Exact(n), false),
        (None, RequestedVersion::Unset) if progress_supported => {
            (WatchStart::Consistent { initial_events: true }, bookmarks)
        }
        (None, RequestedVersion::Unset | RequestedVersion::Any) => {
            (WatchStart::Any { initial_events: true }, bookmarks && progress_supported)
        }
    })
}
