//! WATCH (spec §1.3, §2, §3, §5, §6): the handler validates the options (400 / 422),
//! negotiates the stream type (406), asks the registry for the events (the resource's cache,
//! or a storage watch of its own when uncached), and answers 200 at once over chunked HTTP,
//! or 101 over WebSocket. Errors that happen after that point (a resourceVersion older than
//! the window, compaction on the uncached path, a streaming list that cannot be served) arrive
//! as one ERROR event, then the stream ends. At the deadline (`timeoutSeconds`, or a random
//! time in [min-request-timeout, 2×)) the stream simply ends. The pump that moves events to
//! the wire is [`crate::transport::pump`], the same for every transport.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::upgrade::OnUpgrade;
use listwatch_encoding::{Encoder, EventEncoder};
use listwatch_meta::ApiError;

use super::negotiate;
use crate::client_audit::stream::WatchTap;
use crate::options::{self, with_client_version};
use crate::panics::RequestLabel;
use crate::registry::ResourceStore;
use crate::request::{Query, ResourceRequest};
use crate::response::HttpResponse;
use crate::state::ApiState;
use crate::transport::pump::PreparedWatch;
use crate::transport::{chunked, websocket};

/// Serves a WATCH over WebSocket (when `upgrade` is there) or chunked HTTP.
pub async fn watch(
    state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    parts: &http::request::Parts,
    upgrade: Option<OnUpgrade>,
) -> Result<HttpResponse, ApiError> {
    let label = RequestLabel::for_stream(&parts.method, &parts.uri);
    let shutdown = state.shutdown.clone();
    match upgrade {
        Some(on_upgrade) => {
            // The handshake is checked first, so a bad one never starts a watch.
            let handshake = match websocket::check_handshake(&parts.method, &parts.headers) {
                Ok(handshake) => handshake,
                Err(refusal) => return Ok(*refusal),
            };
            let watch = prepare(state, store, req, query, parts).await?;
            Ok(websocket::respond(watch, shutdown, handshake, on_upgrade, label))
        }
        None => {
            let watch = prepare(state, store, req, query, parts).await?;
            Ok(chunked::respond(watch, shutdown, label))
        }
    }
}

/// Parses, validates and starts a watch (shared by every transport).
async fn prepare(
    state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    parts: &http::request::Parts,
) -> Result<PreparedWatch, ApiError> {
    let headers = &parts.headers;
    let resource = store.resource;
    let name = if req.legacy_watch { req.name.as_deref() } else { None };
    let options = options::parse(query, resource, true, name)?;
    let accept = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok());
    let media = negotiate::stream_media(accept, resource, query)?;
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
    let client_version = options.client_resource_version;
    let source =
        store.watch(&options, namespace, deadline).await.map_err(|e| with_client_version(e, client_version))?;
    let encoder = EventEncoder::new(Encoder::new(resource, media));
    let faults = state.watch_faults.clone();
    // The client audit's tap, when the audit recorded this request.
    let tap = parts.extensions.get::<Arc<WatchTap>>().cloned();
    if let Some(tap) = &tap
        && matches!(query.get("resourceVersion"), None | Some("" | "0"))
    {
        tap.starts_at(source.initial_through());
    }
    Ok(PreparedWatch { source, encoder, deadline, media, resource, client_version, faults, tap })
}

/// Longer than any watch is meant to live, and far from where `Instant` overflows.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `now + timeout`, saturated: a client's timeoutSeconds up to `i64::MAX` is a deadline a
/// century away at most, never an overflow.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout.min(CENTURY)).or_else(|| now.checked_add(Duration::from_secs(3600))).unwrap_or(now)
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
