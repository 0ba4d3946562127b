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
//! | LIST unset + limit                   | first page from the cache as for unset, no limit |
//! | LIST N + limit, Exact N, continue at N | the cache's state at N while its window has N and storage has not compacted it (kube 1.33's `ListFromCacheSnapshot`), else storage at N |
//! | continue at `rv: -1` (after a 410)   | storage, at its latest revision                  |
//! | WATCH                                | the cache's watchers, else a storage watch of its own |
//!
//! Uncached resources read storage for everything. What comes back (objects, a list page, a
//! [`WatchSource`] of events) is the same whichever path served it.

use std::sync::Arc;
use std::time::Instant;

use listwatch_meta::continue_token::ContinueToken;
use listwatch_meta::{ApiError, Object, WatchEvent};
use listwatch_storage::prefix_end;
use listwatch_watchcache::direct::{self, DirectOptions, DirectStart, DirectWatcher};
use listwatch_watchcache::{CacheError, CacheWatcher, PageRequest, Predicate, WatchCache, WatchStart, WatcherOptions};

use super::ResourceStore;
use crate::options::{ListOptions, RequestedVersion, ResourceVersionMatch};

/// Whether the cache serves a LIST, and how.
enum CacheRead {
    /// The cache's latest state, once it has `min_resource_version`; `limit` applies or not.
    Latest { min_resource_version: Option<i64>, honor_limit: bool },
    /// The state at one past revision (a continue token's, or `Exact`), from the window.
    At(i64),
    /// Storage serves it.
    Storage,
}

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
        if let Some(cache) = &self.cache {
            let read = self.cache_read(cache, options).await?;
            if let Some(result) = self.list_from_cache(cache, namespace, options, predicate.as_ref(), read).await? {
                return Ok(result);
            }
        }
        super::storage_list::list(self, namespace, options, predicate).await
    }

    /// Whether the cache may serve a LIST, and at which revision.
    async fn cache_read(&self, cache: &WatchCache, options: &ListOptions) -> Result<CacheRead, ApiError> {
        let exact = options.resource_version_match == Some(ResourceVersionMatch::Exact);
        let paging = options.limit > 0;
        let at = match (&options.continue_token, options.resource_version, options.resource_version_match) {
            // A continue token at the latest revision (after a 410) starts over at storage's.
            (Some(token), ..) if token.is_inconsistent() => return Ok(CacheRead::Storage),
            (Some(token), ..) => token.resource_version,
            (None, RequestedVersion::At(n), _) if exact => n,
            (None, _, _) if exact => return Ok(CacheRead::Storage),
            // Legacy exact: a resourceVersion with `limit` and no match.
            (None, RequestedVersion::At(n), None) if paging => n,
            (None, RequestedVersion::Any, _) => {
                return Ok(CacheRead::Latest { min_resource_version: None, honor_limit: false });
            }
            (None, RequestedVersion::At(n), Some(ResourceVersionMatch::NotOlderThan)) => {
                return Ok(CacheRead::Latest { min_resource_version: Some(n), honor_limit: true });
            }
            (None, RequestedVersion::At(n), None) => {
                return Ok(CacheRead::Latest { min_resource_version: Some(n), honor_limit: false });
            }
            (None, RequestedVersion::Unset, None) if self.consistent_reads_from_cache => {
                // A consistent read from the cache; storage if the cache does not catch up.
                return match cache.wait_consistent().await {
                    Ok(rv) => {
                        crate::metrics::consistent_read(self.resource, true);
                        Ok(CacheRead::Latest { min_resource_version: Some(rv), honor_limit: true })
                    }
                    Err(CacheError::NotReady { retry_after_seconds }) => {
                        Err(ApiError::too_many_requests("storage is (re)initializing", retry_after_seconds))
                    }
                    Err(_) => {
                        crate::metrics::consistent_read(self.resource, false);
                        Ok(CacheRead::Storage)
                    }
                };
            }
            _ => return Ok(CacheRead::Storage),
        };
        // A revision storage has compacted answers 410 there, as it would without the cache
        // (kube's cache does not serve snapshots below the compaction either).
        match self.storage.compacted_revision().await {
            Ok(compacted) if at >= compacted => Ok(CacheRead::At(at)),
            _ => Ok(CacheRead::Storage),
        }
    }

    /// A LIST, or one page of it, from the cache as `read` says; `None` when storage serves it
    /// (`read` says so, or the cache does not have that revision).
    async fn list_from_cache(
        &self,
        cache: &WatchCache,
        namespace: Option<&str>,
        options: &ListOptions,
        predicate: Option<&Predicate>,
        read: CacheRead,
    ) -> Result<Option<ListResult>, ApiError> {
        let (revision, min_resource_version, limit) = match read {
            CacheRead::Storage => return Ok(None),
            CacheRead::Latest { min_resource_version, honor_limit } => {
                (None, min_resource_version, if honor_limit { options.limit } else { 0 })
            }
            CacheRead::At(revision) => (Some(revision), None, options.limit),
        };
        let prefix = self.prefix(namespace);
        let start = match &options.continue_token {
            Some(token) => token.start_key_under(&prefix),
            None => prefix.clone(),
        };
        let end = prefix_end(prefix.as_bytes());
        let counted = !options.has_selectors();
        let request = PageRequest {
            start: start.as_bytes(),
            end: &end,
            resource_version: revision,
            limit: usize::try_from(limit).unwrap_or(0),
            predicate,
            count: counted,
        };
        let Some(page) = cache.page(&request, min_resource_version).await.map_err(|e| e.to_api_error())? else {
            return Ok(None);
        };
        crate::metrics::list_from_cache(&self.cache_prefix());
        let mut result = ListResult {
            resource_version: page.resource_version,
            continue_token: None,
            remaining: None,
            items: page.items,
        };
        if let Some(last) = page.last_key {
            let token = ContinueToken::for_next_page(&String::from_utf8_lossy(&last), &prefix, page.resource_version)
                .map_err(ApiError::internal)?;
            result.continue_token = Some(token.encode());
            // kube's `remainingItemCount`: keys from the page's start to the end, less the page.
            result.remaining = page.count.filter(|_| counted).map(|count| (count - result.items.len()) as i64);
        }
        Ok(Some(result))
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
