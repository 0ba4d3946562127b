//! The debug API (`--enable-debug-api`), for tests that must force a path now instead of
//! waiting for a timer:
//!
//! * `POST /debug/listwatch/compact[?revision=N]`: compact storage to N (default: the current
//!   revision);
//! * `POST /debug/listwatch/watchers/drop[?group=G&resource=R]`: end every client watch of a
//!   resource (or of all), as a relist or restart would;
//! * `POST /debug/listwatch/cache/reset?[group=G&]resource=R`: throw a resource's watch cache
//!   away and relist (watches from before get 410);
//! * `POST /debug/listwatch/throttle?count=N[&retryAfterSeconds=S][&plain=true]`: answer the next N API
//!   requests with 429 and `Retry-After`;
//! * `POST /debug/listwatch/continue/expire?for=D` (or `?count=N`): for D (or for the next N
//!   continue tokens, whenever they come), every continue token is answered 410 as if its
//!   revision had been compacted;
//! * `POST /debug/listwatch/toolarge?for=D[&behind=N]`: for D, a LIST or WATCH at a
//!   resourceVersion above storage's current one minus N is answered 504 "Too large resource
//!   version", as by a server whose cache trails storage;
//! * `POST /debug/listwatch/cache/lag?lag=L[&for=D][&group=G&resource=R]`: the watch caches (of
//!   one resource, or all) apply storage's changes L late, for D (an hour by default): a
//!   server whose cache trails the others';
//! * `POST /debug/listwatch/panic[?in=stream]`: panic in this request's handler (answered 500
//!   by the panic guard), or, with `in=stream`, in its response stream after one line (the
//!   body ends after that line); each counts in `listwatch_request_panics_total`;
//! * `GET /debug/listwatch/history?resourceVersion=N`: storage's own history after N, streamed
//!   (see [`history`]);
//! * `POST /debug/listwatch/break?kind=K`: break watch guarantee K on every stream from now on
//!   (`none` restores them; see [`WatchBreaker`]);
//! * `POST /debug/listwatch/bookmarks?interval=D`: watchers that asked for bookmarks get one
//!   every D from now on (`0s` restores the configured interval, kube's 1 minute);
//! * `POST /debug/listwatch/storage/outage?for=D`: every storage call fails as a dead etcd's
//!   would for D (`0s` ends an outage early; see `listwatch_storage::faults`);
//! * `POST /debug/listwatch/streams?fault=F&...`: network faults on watch streams (latency,
//!   cuts mid-event, blackholes, HTTP/2 GOAWAY; see [`streams`]);
//! * `POST /debug/listwatch/webhooks?mode=M&for=D[&name=N]`: for D, calls to every admission
//!   webhook (or to the one named N) fail as one that is `down`, `slow` or answers an `error`
//!   would (`0s` ends it; see `crate::faults::webhooks`).

pub mod clients;
mod history;
mod params;
mod streams;

use bytes::Bytes;
use listwatch_meta::ApiError;
use serde_json::json;

use crate::faults::{WatchBreaker, WebhookFailure};
use crate::request::Query;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;
use params::{duration_param, int_param};

pub async fn handle(
    state: &ApiState,
    method: &http::Method,
    path: &str,
    query: &Query,
) -> Result<HttpResponse, ApiError> {
    let expected = if path == "/debug/listwatch/history" { http::Method::GET } else { http::Method::POST };
    if *method != expected {
        return Err(ApiError::method_not_supported(&listwatch_meta::GroupResource::new("", "debug"), method.as_str()));
    }
    let int = |name: &str| int_param(query, name);
    let group = query.get("group").unwrap_or("");
    let body = match path {
        "/debug/listwatch/compact" => match state.compact(int("revision")?).await? {
            (compacted, true) => {
                json!({"compacted": compacted, "note": "already compacted at or past this revision"})
            }
            (compacted, false) => json!({"compacted": compacted}),
        },
        "/debug/listwatch/watchers/drop" => {
            json!({"dropped": state.drop_watchers(group, query.get("resource"))?})
        }
        "/debug/listwatch/cache/reset" => {
            let resource = query.get("resource").ok_or_else(|| ApiError::bad_request("resource is required"))?;
            let store = state.reset_cache(group, resource)?;
            json!({"reset": store.resource.plural})
        }
        "/debug/listwatch/continue/expire" => match (duration_param(query, "for")?, int("count")?) {
            (Some(lasting), None) => {
                state.expire_continue_tokens(lasting);
                json!({"continueExpiresForSeconds": lasting.as_secs_f64()})
            }
            (None, Some(count)) if count >= 0 => {
                state.expire_next_continue_tokens(count.unsigned_abs());
                json!({"continueExpiresNext": count})
            }
            _ => return Err(ApiError::bad_request("one of for=<duration> or count=<n> (not negative) is required")),
        },
        "/debug/listwatch/toolarge" => {
            let lasting = duration_param(query, "for")?.ok_or_else(|| ApiError::bad_request("for is required"))?;
            let behind = int("behind")?.unwrap_or(0).max(0);
            let current = state.storage.current_revision().await.map_err(crate::registry::storage_error)?;
            let ceiling = current - behind;
            state.read_faults.too_large_above(ceiling, std::time::Instant::now() + lasting);
            json!({"ceiling": ceiling, "forSeconds": lasting.as_secs_f64()})
        }
        "/debug/listwatch/cache/lag" => {
            let lag = duration_param(query, "lag")?.ok_or_else(|| ApiError::bad_request("lag is required"))?;
            let lasting = duration_param(query, "for")?.unwrap_or(std::time::Duration::from_secs(3600));
            let selected = state.stores_named(group, query.get("resource"));
            let until = std::time::Instant::now() + lasting;
            let lagging: Vec<&str> = selected
                .iter()
                .filter_map(|s| s.cache.as_ref().map(|cache| (s, cache)))
                .map(|(s, cache)| {
                    cache.lag(lag, until);
                    s.resource.plural
                })
                .collect();
            json!({"lagging": lagging, "lagSeconds": lag.as_secs_f64(), "forSeconds": lasting.as_secs_f64()})
        }
        "/debug/listwatch/throttle" => {
            let count = int("count")?.unwrap_or(1).max(0);
            let retry = int("retryAfterSeconds")?.unwrap_or(1).clamp(1, 3600).unsigned_abs();
            let plain = query.get("plain") == Some("true");
            let retry = state.throttle(count, std::time::Duration::from_secs(retry), plain);
            json!({"throttled": count, "retryAfterSeconds": retry, "plain": plain})
        }
        "/debug/listwatch/bookmarks" => {
            let interval =
                duration_param(query, "interval")?.ok_or_else(|| ApiError::bad_request("interval is required"))?;
            let effective = state.set_bookmark_interval(interval)?;
            json!({"bookmarkIntervalSeconds": effective.as_secs_f64()})
        }
        "/debug/listwatch/break" => {
            let breaker = query
                .get("kind")
                .ok_or_else(|| String::from("kind is required"))
                .and_then(str::parse::<WatchBreaker>)
                .map_err(ApiError::bad_request)?;
            state.watch_faults.breaker.set(breaker);
            json!({"breakWatch": breaker.name()})
        }
        "/debug/listwatch/storage/outage" => {
            let duration = duration_param(query, "for")?.ok_or_else(|| ApiError::bad_request("for is required"))?;
            state.storage_outage(duration)?;
            json!({"outageSeconds": duration.as_secs_f64()})
        }
        "/debug/listwatch/streams" => streams::respond(state, query)?,
        "/debug/listwatch/webhooks" => {
            let failure = query
                .get("mode")
                .ok_or_else(|| String::from("mode is required"))
                .and_then(str::parse::<WebhookFailure>)
                .map_err(ApiError::bad_request)?;
            let lasting = duration_param(query, "for")?.ok_or_else(|| ApiError::bad_request("for is required"))?;
            let webhook = query.get("name").filter(|n| !n.is_empty()).map(String::from);
            state.webhook_faults.set(webhook.clone(), failure, std::time::Instant::now() + lasting);
            json!({"webhook": webhook, "mode": failure.name(), "forSeconds": lasting.as_secs_f64()})
        }
        "/debug/listwatch/panic" if query.get("in") == Some("stream") => {
            use futures::StreamExt;
            let stream = futures::stream::iter(0..2).map(|n| {
                assert!(n == 0, "debug API: a panic in a response stream");
                crate::transport::body::Chunk::from(Bytes::from_static(b"{\"debug\":\"the line before the panic\"}\n"))
            });
            let label =
                crate::panics::RequestLabel::new(method, &http::Uri::from_static("/debug/listwatch/panic?in=stream"));
            let stream = crate::panics::guard_stream(stream, label);
            return Ok(response::with_body(200, "application/json", crate::transport::body::Body::stream(stream)));
        }
        "/debug/listwatch/panic" => panic!("debug API: a panic in a request handler"),
        "/debug/listwatch/history" => return history::respond(state, query).await,
        _ => return Err(ApiError::not_found_path()),
    };
    Ok(response::json(200, Bytes::from(body.to_string())))
}
