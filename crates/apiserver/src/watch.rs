//! WATCH over chunked HTTP (spec §1.3, §2, §3, §5, §6).
//!
//! The handler validates the options (400 / 422), negotiates the stream type (406), picks the
//! watch path (the resource's cache, or a storage watch of its own when uncached), and answers
//! 200 at once; errors that happen after that point (a resourceVersion older than the window,
//! compaction on the uncached path, a streaming list that cannot be served) arrive as one
//! ERROR event, then the stream ends. The body is a stream of batches: whatever events are
//! queued for the watcher are encoded together and written with one vectored write, the
//! objects' bytes shared with every other watcher. At the deadline (`timeoutSeconds`, or a
//! random time in [min-request-timeout, 2×)) the body simply ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderMap;
use listwatch_encoding::{Encoder, EventEncoder, MediaType, negotiate_stream};
use listwatch_meta::ApiError;
use listwatch_meta::WatchEvent;
use listwatch_watchcache::direct::{self, DirectOptions, DirectStart, DirectWatcher};
use listwatch_watchcache::{CacheError, CacheWatcher, WatchStart, WatcherOptions};

use crate::body::{Body, Chunk};
use crate::metrics;
use crate::options::{ListOptions, RequestedVersion};
use crate::request::{Query, ResourceRequest};
use crate::resource::ResourceStore;
use crate::response::{self, HttpResponse};
use crate::server::ApiState;

/// At most this many events per write.
const MAX_EVENTS_PER_WRITE: usize = 256;

/// Where a watch's events come from.
pub enum Source {
    Cache(CacheWatcher),
    Direct(DirectWatcher),
    /// A watch that is only an ERROR event.
    Error(Option<ApiError>),
}

impl Source {
    pub(crate) async fn next_batch(&mut self, out: &mut Vec<WatchEvent>) -> bool {
        match self {
            Source::Cache(w) => w.next_batch(out, MAX_EVENTS_PER_WRITE).await,
            Source::Direct(w) => w.next_batch(out, MAX_EVENTS_PER_WRITE).await,
            Source::Error(e) => match e.take() {
                Some(e) => {
                    out.push(WatchEvent::Error(e));
                    true
                }
                None => false,
            },
        }
    }
}

/// A prepared watch: its events' source, encoding and deadline.
pub struct PreparedWatch {
    pub source: Source,
    pub encoder: EventEncoder,
    pub deadline: Instant,
    pub media: MediaType,
    pub resource: &'static listwatch_meta::Resource,
    /// The client's resourceVersion, named in a "too large" ERROR event.
    client_version: u64,
}

impl PreparedWatch {
    /// The next batch of events (see [`Source::next_batch`]).
    pub(crate) async fn next_batch(&mut self, out: &mut Vec<WatchEvent>) -> bool {
        let before = out.len();
        let more = self.source.next_batch(out).await;
        if self.client_version > i64::MAX as u64 {
            for event in &mut out[before..] {
                if let WatchEvent::Error(e) = event {
                    *e = crate::options::with_client_version(e.clone(), self.client_version);
                }
            }
        }
        more
    }
}

/// Parses, validates and starts a watch (shared by every transport).
pub async fn prepare(
    state: &ApiState,
    store: &Arc<ResourceStore>,
    req: &ResourceRequest,
    query: &Query,
    headers: &HeaderMap,
) -> Result<PreparedWatch, ApiError> {
    let resource = store.resource;
    let name = if req.legacy_watch { req.name.as_deref() } else { None };
    let options = crate::options::parse(query, resource, true, name)?;
    let accept = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok());
    let media = crate::server::with_include_object(negotiate_stream(accept, resource)?, query)?;
    let timeout = match options.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s.unsigned_abs()),
        // kube turns a negative timeoutSeconds into a negative Duration: the watch's timer has
        // already fired, and the stream ends at once.
        Some(s) if s < 0 => Duration::ZERO,
        _ => {
            let min = state.config.min_request_timeout;
            min + min.mul_f64(rand::random::<f64>())
        }
    };
    let deadline = deadline_after(timeout);
    let namespace = store.scope(req.namespace.as_deref()).map(String::from);
    let source = match &store.cache {
        Some(_) => cached(state, store, &options, namespace, deadline).await,
        None => uncached(state, store, &options, namespace.as_deref()).await,
    };
    let client_version = options.client_resource_version;
    let source = source.map_err(|e| crate::options::with_client_version(e, client_version))?;
    let encoder = EventEncoder::new(Encoder::new(resource, media));
    Ok(PreparedWatch { source, encoder, deadline, media, resource, client_version })
}

/// Longer than any watch is meant to live, and far from where `Instant` overflows.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `now + timeout`, saturated: a client's timeoutSeconds up to `i64::MAX` is a deadline a
/// century away at most, never an overflow.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout.min(CENTURY)).or_else(|| now.checked_add(Duration::from_secs(3600))).unwrap_or(now)
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

async fn cached(
    state: &ApiState,
    store: &ResourceStore,
    options: &ListOptions,
    namespace: Option<String>,
    deadline: Instant,
) -> Result<Source, ApiError> {
    let cache = store.cache.as_ref().expect("cached resource");
    let progress_supported = state.backend.supports_request_watch_progress();
    let (start, end_bookmark) = match cache_start(options, progress_supported) {
        Ok(s) => s,
        Err(e) => return Ok(Source::Error(Some(e))),
    };
    let watch_list = options.send_initial_events == Some(true);
    let watcher_options = WatcherOptions {
        start,
        namespace,
        predicate: store.predicate(options),
        bookmarks: options.allow_watch_bookmarks,
        initial_events_end_bookmark: end_bookmark,
        deadline,
    };
    match cache.watch(watcher_options).await {
        Ok(w) => Ok(Source::Cache(w)),
        Err(e @ CacheError::TooOld { .. }) => Ok(Source::Error(Some(e.to_api_error()))),
        // A streaming list (or a consistent start) that the cache cannot reach in time: an
        // ERROR event, as kube sends it.
        Err(e @ CacheError::TooLargeResourceVersion { .. })
            if watch_list || options.resource_version == RequestedVersion::Unset =>
        {
            Ok(Source::Error(Some(e.to_api_error())))
        }
        Err(e) => Err(e.to_api_error()),
    }
}

async fn uncached(
    state: &ApiState,
    store: &ResourceStore,
    options: &ListOptions,
    namespace: Option<&str>,
) -> Result<Source, ApiError> {
    let start = match (options.send_initial_events, options.resource_version) {
        (Some(false), RequestedVersion::Unset | RequestedVersion::Any) => {
            DirectStart::After(store.current_revision().await?)
        }
        (Some(true), RequestedVersion::At(n)) => DirectStart::ListThenWatch { min_resource_version: n },
        (Some(false) | None, RequestedVersion::At(n)) => DirectStart::After(n),
        (_, RequestedVersion::Unset | RequestedVersion::Any) => DirectStart::ListThenWatch { min_resource_version: 0 },
    };
    // kube-apiserver's WatchList defaulting happens before the storage path is chosen: a
    // watch from "" or "0" is a streaming list there too.
    let streaming = match options.send_initial_events {
        Some(initial) => initial,
        None => matches!(options.resource_version, RequestedVersion::Unset | RequestedVersion::Any),
    };
    let direct_options = DirectOptions {
        start,
        predicate: store.predicate(options),
        initial_events_end_bookmark: streaming && options.allow_watch_bookmarks,
    };
    let watcher = direct::watch(
        &store.storage,
        store.resource,
        store.prefix(namespace),
        direct_options,
        state.config.cache.list_page_size,
    )
    .await?;
    Ok(Source::Direct(watcher))
}

/// The chunked-HTTP response of a prepared watch.
pub fn chunked_response(state: &ApiState, watch: PreparedWatch, what: crate::panics::RequestLabel) -> HttpResponse {
    let content_type = watch.media.stream_content_type();
    // A panic while producing a batch ends this watch only (the client re-watches).
    let stream = crate::panics::guard_stream(event_stream(state, watch), what);
    response::with_body(200, content_type, Body::stream(stream))
}

/// Counts a watch as registered while it lives.
pub(crate) struct Registered(&'static listwatch_meta::Resource);

impl Registered {
    pub(crate) fn new(resource: &'static listwatch_meta::Resource) -> Registered {
        metrics::watcher_registered(resource, 1);
        Registered(resource)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        metrics::watcher_registered(self.0, -1);
    }
}

/// The state of a watch's body between batches: kept for the watch's life, so a batch costs
/// no allocation beyond its pieces and no timer re-arming.
struct StreamState {
    watch: PreparedWatch,
    deadline: Pin<Box<tokio::time::Sleep>>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    events: Vec<WatchEvent>,
    metrics: metrics::WatchEventMetrics,
    _registered: Registered,
    ended: bool,
}

/// The batches of a watch, encoded for the wire (JSON lines or protobuf frames), until the
/// source ends, the deadline passes, or the server shuts down.
pub fn event_stream(state: &ApiState, watch: PreparedWatch) -> impl futures::Stream<Item = Chunk> + Send + 'static {
    let mut shutdown = state.shutdown.clone();
    let stream_state = StreamState {
        deadline: Box::pin(tokio::time::sleep_until(watch.deadline.into())),
        shutdown: Box::pin(async move {
            let _ = shutdown.wait_for(|down| *down).await;
        }),
        events: Vec::with_capacity(MAX_EVENTS_PER_WRITE),
        metrics: metrics::WatchEventMetrics::for_resource(watch.resource),
        _registered: Registered::new(watch.resource),
        watch,
        ended: false,
    };
    futures::stream::unfold(stream_state, |mut s| async move {
        if s.ended {
            return None;
        }
        s.events.clear();
        // The deadline first: a watch whose deadline has passed (a negative timeoutSeconds)
        // ends even when events are ready (the timer alone may fire a tick late).
        if Instant::now() >= s.watch.deadline {
            return None;
        }
        tokio::select! {
            biased;
            _ = &mut s.deadline => return None,
            _ = &mut s.shutdown => return None,
            more = s.watch.next_batch(&mut s.events) => if !more { return None },
        }
        let mut pieces = Vec::with_capacity(s.events.len() * 3);
        for event in &s.events {
            let before = pieces.len();
            s.watch.encoder.event(event, &mut pieces);
            s.metrics.sent(pieces[before..].iter().map(Bytes::len).sum());
            s.ended |= matches!(event, WatchEvent::Error(_));
        }
        Some((Chunk::new(pieces), s))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_saturate() {
        let now = Instant::now();
        let far = deadline_after(Duration::from_secs(i64::MAX as u64));
        assert!(far > now + Duration::from_secs(50 * 365 * 24 * 3600));
        assert!(deadline_after(Duration::MAX) >= far);
        assert!(deadline_after(Duration::ZERO) <= Instant::now());
    }
}
