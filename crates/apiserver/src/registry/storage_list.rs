//! LIST from storage, the path the delegator falls back to (and the only one for uncached
//! resources; for cached ones, revisions the cache's window no longer has and inconsistent
//! continue tokens): pages at one revision for every page,
//! kube's continue token and `remainingItemCount`. A token whose revision was compacted
//! answers 410 with a fresh token (`rv:-1`) that continues at the latest revision.

use std::sync::Arc;

use bytes::Bytes;
use listwatch_meta::continue_token::ContinueToken;
use listwatch_meta::{ApiError, Object};
use listwatch_storage::{KeyRange, RangeRequest, StorageError, prefix_end};

use super::{ListResult, ResourceStore, storage_error};
use crate::options::{ListOptions, RequestedVersion, ResourceVersionMatch};

/// Storage pages grow up to this when selectors filter items out (kube's `maxLimit`).
const MAX_STORAGE_PAGE: i64 = 10_000;

/// A list of `namespace` (or all) from storage, filtered by `predicate`.
pub(super) async fn list(
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
            Err(StorageError::Compacted { .. }) => return Err(compacted_error(options)),
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

/// The 410 of a list whose revision was compacted.
fn compacted_error(options: &ListOptions) -> ApiError {
    match &options.continue_token {
        Some(token) => expired_continue(token),
        None => ApiError::expired("The resourceVersion for the provided list is too old."),
    }
}

/// The 410 of a continue token whose revision is gone: kube's long message and a token that
/// continues inconsistently at the latest revision.
pub fn expired_continue(token: &ContinueToken) -> ApiError {
    ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    )
    .with_continue(token.at_resource_version(-1).encode())
}
