//! The faults a test causes on purpose, as calls on [`ApiState`]: the one home of each. The
//! debug API (`handlers::debug`) answers HTTP with them; `listwatch-testserver` calls them
//! with no round trip. Each returns when the fault has taken effect (a reset cache is serving
//! again, dropped watchers are gone), so a caller can await the consequence instead of sleeping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use listwatch_meta::ApiError;
use listwatch_storage::StorageError;

use crate::faults::StreamFault;
use crate::registry::ResourceStore;
use crate::state::ApiState;

/// How long [`ApiState::reset_cache_and_wait`] waits for the relist.
const RELIST_DEADLINE: Duration = Duration::from_secs(30);

impl ApiState {
    /// The served resources of `group` named `resource` (every one when `None`).
    pub fn stores_named(&self, group: &str, resource: Option<&str>) -> Vec<Arc<ResourceStore>> {
        self.stores()
            .into_iter()
            .filter(|s| resource.is_none_or(|r| s.resource.plural == r && s.resource.group == group))
            .collect()
    }

    /// The one served resource of `group` named `resource`, or kube's 404 for a path that
    /// names no resource (naming the one asked for).
    fn store_named(&self, group: &str, resource: &str) -> Result<Arc<ResourceStore>, ApiError> {
        self.stores_named(group, Some(resource)).into_iter().next().ok_or_else(|| {
            let shown = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
            let mut error = ApiError::not_found_path();
            error.0.message = format!("the server could not find the requested resource ({shown})");
            error
        })
    }

    /// Compacts storage at `revision` (its current one when `None`); answers the revision
    /// storage is compacted at, and whether it already was (at or past `revision`).
    pub async fn compact(&self, revision: Option<i64>) -> Result<(i64, bool), ApiError> {
        let revision = match revision {
            Some(revision) => revision,
            None => self.storage.current_revision().await.map_err(crate::registry::storage_error)?,
        };
        match self.storage.compact(revision).await {
            Ok(()) => Ok((revision, false)),
            Err(StorageError::Compacted { compact_revision }) => Ok((compact_revision, true)),
            Err(StorageError::FutureRevision { current_revision }) => {
                Err(ApiError::bad_request(format!("revision {revision} is in the future (current {current_revision})")))
            }
            Err(e) => Err(crate::registry::storage_error(e)),
        }
    }

    /// Ends every client watch of a resource (of every resource when `resource` is `None`), as
    /// a relist or a restart would; answers how many ended. A resource not served is an error.
    pub fn drop_watchers(&self, group: &str, resource: Option<&str>) -> Result<usize, ApiError> {
        let selected = match resource {
            Some(resource) => vec![self.store_named(group, resource)?],
            None => self.stores_named(group, None),
        };
        Ok(selected.iter().filter_map(|s| s.cache.as_ref()).map(listwatch_watchcache::WatchCache::drop_watchers).sum())
    }

    /// Throws a resource's watch cache away and has it relist: its watchers end, and watches
    /// from before get 410. Returns at once (the cache answers 429 until it has relisted).
    pub fn reset_cache(&self, group: &str, resource: &str) -> Result<Arc<ResourceStore>, ApiError> {
        let store = self.store_named(group, resource)?;
        let Some(cache) = &store.cache else {
            return Err(ApiError::bad_request(format!("{} is not served from a watch cache", store.resource.plural)));
        };
        cache.reset();
        Ok(store)
    }

    /// [`ApiState::reset_cache`], then waits until the cache has relisted and serves again.
    pub async fn reset_cache_and_wait(&self, group: &str, resource: &str) -> Result<(), ApiError> {
        let store = self.reset_cache(group, resource)?;
        let cache = store.cache.as_ref().expect("reset_cache checked the cache");
        if cache.wait_ready(RELIST_DEADLINE).await {
            Ok(())
        } else {
            Err(ApiError::internal(format!(
                "the {} cache did not relist within {} s",
                store.resource.plural,
                RELIST_DEADLINE.as_secs()
            )))
        }
    }

    /// Answers the next `count` API requests 429 with `Retry-After: retry_after` (whole seconds,
    /// 1 to 3600), with a JSON `Status` or, `plain`, a plain-text body.
    pub fn throttle(&self, count: i64, retry_after: Duration, plain: bool) -> u32 {
        let seconds = u32::try_from(retry_after.as_secs()).unwrap_or(u32::MAX).clamp(1, 3600);
        self.throttle.set(count.max(0), seconds, plain);
        seconds
    }

    /// Every storage call fails as a dead etcd's would, for `lasting` (zero ends an outage).
    pub fn storage_outage(&self, lasting: Duration) -> Result<(), ApiError> {
        let Some(outage) = &self.config.storage_outage else {
            return Err(ApiError::bad_request("this server's storage cannot fail on purpose"));
        };
        outage.start(lasting);
        Ok(())
    }

    /// Watchers that asked for bookmarks get one every `interval` from now on (zero restores
    /// the configured interval); answers the interval in effect.
    pub fn set_bookmark_interval(&self, interval: Duration) -> Result<Duration, ApiError> {
        let millis = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        if !interval.is_zero() && millis == 0 {
            return Err(ApiError::bad_request("interval must be 0s or at least 1ms"));
        }
        self.config.cache.bookmark_interval_override.store(millis, std::sync::atomic::Ordering::Relaxed);
        Ok(self.config.cache.current_bookmark_interval())
    }

    /// For `lasting`, every continue token is answered 410 as if its revision were compacted.
    pub fn expire_continue_tokens(&self, lasting: Duration) {
        self.read_faults.expire_continue(Instant::now() + lasting);
    }

    /// The next `count` continue tokens, whenever they come, are answered 410 as if their
    /// revision were compacted.
    pub fn expire_next_continue_tokens(&self, count: u64) {
        self.read_faults.expire_next_continues(count);
    }

    /// A network fault on the watch streams open now (and, for a lasting one, those opened
    /// while it lasts).
    pub fn stream_fault(&self, fault: StreamFault) {
        let streams = &self.watch_faults.streams;
        match fault {
            StreamFault::Latency { base, jitter, lasting } => streams.delay(base, jitter, lasting),
            StreamFault::Cut { lasting } => streams.cut(lasting),
            StreamFault::Blackhole { lasting } => streams.blackhole(lasting),
            StreamFault::Stall { lasting } => streams.stall(lasting),
            StreamFault::GoAway => streams.goaway(),
            StreamFault::None => streams.clear(),
        }
    }
}
