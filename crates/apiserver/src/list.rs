//! LIST, with kube-apiserver's resourceVersion semantics (spec §1.4, §7, §8).
//!
//! | request                              | served from                                      |
//! |--------------------------------------|--------------------------------------------------|
//! | `resourceVersion=0`                  | the cache at once, `limit` ignored               |
//! | unset, no limit                      | the cache once it has storage's current revision (consistent read), else storage |
//! | N, no limit (or NotOlderThan)        | the cache after it reaches N (≤3 s, else 504)    |
//! | unset + limit, N + limit, Exact, continue | storage, at one revision for every page    |
//!
//! Uncached resources read storage for everything. Pages carry kube's continue token and
//! `remainingItemCount`; a token whose revision was compacted answers 410 with a fresh
//! token (`rv:-1`) that continues at the latest revision.

use std::sync::Arc;

use bytes::Bytes;
use listwatch_meta::continue_token::ContinueToken;
use listwatch_meta::{ApiError, Object};
use listwatch_storage::{KeyRange, RangeRequest, StorageError, prefix_end};
use listwatch_watchcache::CacheError;

use crate::options::{ListOptions, RequestedVersion, ResourceVersionMatch};
use crate::resource::{ResourceStore, storage_error};

/// A list result.
pub struct ListResult {
    pub items: Vec<Arc<Object>>,
    pub resource_version: i64,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

/// Storage pages grow up to this when selectors filter items out (kube's `maxLimit`).
const MAX_STORAGE_PAGE: i64 = 10_000;

pub async fn list(
    store: &ResourceStore,
    namespace: Option<&str>,
    options: &ListOptions,
) -> Result<ListResult, ApiError> {
    let namespace = store.scope(namespace);
    let predicate = store.predicate(options);
    let paging = options.limit > 0;
    let exact = options.resource_version_match == Some(ResourceVersionMatch::Exact);
    if let Some(cache) = &store.cache
        && options.continue_token.is_none()
        && !exact
    {
        // (the revision the cache must reach, whether `limit` applies)
        let from_cache = match (options.resource_version, options.resource_version_match) {
            (RequestedVersion::Any, _) => Some((None, false)),
            (RequestedVersion::At(n), Some(ResourceVersionMatch::NotOlderThan)) => Some((Some(n), true)),
            (RequestedVersion::At(n), None) if !paging => Some((Some(n), false)),
            (RequestedVersion::Unset, None) if store.consistent_reads_from_cache => {
                // A consistent read from the cache; storage if the cache does not catch up.
                match cache.wait_consistent().await {
                    Ok(rv) => {
                        crate::metrics::consistent_read(store.resource, true);
                        Some((Some(rv), true))
                    }
                    Err(CacheError::NotReady { retry_after_seconds }) => {
                        return Err(ApiError::too_many_requests("storage is (re)initializing", retry_after_seconds));
                    }
                    Err(_) => {
                        crate::metrics::consistent_read(store.resource, false);
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
                // The rest continues from storage at the cache's revision (a real revision of
                // storage, so the pages stay consistent).
                let total = result.items.len() as i64;
                result.items.truncate(options.limit as usize);
                let last = result.items.last().expect("limit > 0");
                let key = store.key(store.scope(Some(last.namespace())), last.name());
                let token = ContinueToken::for_next_page(&key, &store.prefix(namespace), result.resource_version)
                    .map_err(ApiError::internal)?;
                result.continue_token = Some(token.encode());
                result.remaining = (!options.has_selectors()).then_some(total - options.limit);
            }
            return Ok(result);
        }
    }
    list_from_storage(store, namespace, options, predicate).await
}

async fn list_from_storage(
    store: &ResourceStore,
    namespace: Option<&str>,
    options: &ListOptions,
    predicate: Option<listwatch_watchcache::Predicate>,
) -> Result<ListResult, ApiError> {
    let prefix = store.prefix(namespace);
    let end = prefix_end(prefix.as_bytes());
    // Where to read: a continue token's revision and key, or a requested revision.
    let (mut revision, mut start) = match &options.continue_token {
        Some(token) => (token.resource_version.max(0), token.start_key_under(&prefix)),
        None => {
            let revision = match options.resource_version {
                RequestedVersion::At(n) => {
                    let exact =
                        options.limit > 0 || options.resource_version_match == Some(ResourceVersionMatch::Exact);
                    if exact {
                        n
                    } else {
                        // Not older than N: the latest, if storage has N.
                        let current = store.current_revision().await?;
                        if current < n {
                            return Err(ApiError::too_large_resource_version(n, current, 0));
                        }
                        0
                    }
                }
                _ => 0,
            };
            (revision, prefix.clone())
        }
    };
    let limit = options.limit;
    let mut items = Vec::new();
    let mut page_size = if limit > 0 { limit } else { 0 };
    loop {
        let request = RangeRequest::new(KeyRange::between(Bytes::from(start.clone()), end.clone()))
            .limit(page_size)
            .at_revision(revision);
        let page = match store.storage.range(request).await {
            Ok(page) => page,
            Err(StorageError::Compacted { .. }) => return Err(compacted_error(options, &prefix)),
            Err(StorageError::FutureRevision { current_revision }) => {
                return Err(ApiError::too_large_resource_version(revision, current_revision, 0));
            }
            Err(e) => return Err(storage_error(e)),
        };
        revision = page.revision;
        let mut last_key = None;
        for kv in &page.kvs {
            last_key = Some(kv.key.clone());
            let object = match Object::from_storage(store.resource, &kv.value, kv.mod_revision) {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&kv.key), error = %e, "skipping a stored value that cannot be decoded");
                    crate::metrics::undecodable_object(store.resource.plural);
                    continue;
                }
            };
            if predicate.as_ref().is_none_or(|p| p(&object)) {
                items.push(Arc::new(object));
                if limit > 0 && items.len() as i64 == limit {
                    break;
                }
            }
        }
        let full = limit > 0 && items.len() as i64 >= limit;
        let stopped_inside_page = full && last_key.as_ref() != page.kvs.last().map(|kv| &kv.key);
        let more_in_storage = page.more || stopped_inside_page;
        if !more_in_storage {
            return Ok(ListResult { items, resource_version: revision, continue_token: None, remaining: None });
        }
        let last = last_key.expect("a page with more has keys");
        if full {
            let token = ContinueToken::for_next_page(&String::from_utf8_lossy(&last), &prefix, revision)
                .map_err(ApiError::internal)?
                .encode();
            // kube counts the remaining keys only for unfiltered lists.
            // kube counts the remaining keys only for unfiltered lists: the page's count (keys
            // from its start to the end of the range) less those this page went through.
            let remaining = if options.has_selectors() {
                None
            } else {
                let consumed = page.kvs.iter().position(|kv| kv.key == last).map_or(page.kvs.len(), |i| i + 1);
                Some(page.count - consumed as i64)
            };
            return Ok(ListResult { items, resource_version: revision, continue_token: Some(token), remaining });
        }
        // Filtered out too much: read further, in bigger pages, at the same revision.
        start = String::from_utf8_lossy(&next_key(&last)).into_owned();
        page_size = (page_size * 2).clamp(1, MAX_STORAGE_PAGE);
    }
}

fn next_key(key: &[u8]) -> Bytes {
    let mut next = key.to_vec();
    next.push(0);
    Bytes::from(next)
}

/// The 410 of a list whose revision was compacted: for a continue, kube's long message and a
/// token that continues inconsistently at the latest revision.
fn compacted_error(options: &ListOptions, _prefix: &str) -> ApiError {
    match &options.continue_token {
        Some(token) => ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        )
        .with_continue(token.at_resource_version(-1).encode()),
        None => ApiError::expired("The resourceVersion for the provided list is too old."),
    }
}
