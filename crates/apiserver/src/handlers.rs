//! The HTTP layer: the router and one module per verb family. Each handler parses what the
//! request asks (options, body, representation), hands the work to the registry, and encodes
//! the answer; watches are handed to a transport.
//!
//! * this file: [`handle`], hyper's entry point, and the routing of every path (health,
//!   discovery, OpenAPI, the debug API, then resources, with go-restful's 404 and 405);
//! * [`read`] (GET, LIST), [`watch`], [`write`](mod@write) (create, update), [`patch`] with
//!   [`patch_kind`], [`delete`], [`scale`] (the scale subresource), [`binding`] (pods');
//! * [`admission`], NamespaceLifecycle;
//! * [`body_in`], [`kinds`], [`schema`]: reading a request body as kube decodes it;
//!   [`negotiate`]: the response's representation;
//! * [`debug`]: the debug API (`--enable-debug-api`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{Method, Request};
use hyper::body::Incoming;
use listwatch_meta::{ApiError, Resource};
use serde_json::Value;

use crate::authn::UserInfo;
use crate::discovery;
use crate::metrics;
use crate::panics;
use crate::registry::ResourceStore;
use crate::request::{self, Query, ResourceRequest, Verb};
use crate::response::{self, HttpResponse};
use crate::state::ApiState;
use crate::transport::body::Body;
use patch_kind::PatchKind;

pub mod apply;
pub mod binding;
pub mod body_in;
pub mod custom;
pub mod custom_schema;
pub mod debug;
pub mod delete;
pub mod field_manager;
pub mod kinds;
pub mod negotiate;
pub mod patch;
pub mod patch_kind;
pub mod read;
pub mod scale;
pub mod schema;
pub mod strict_decoding;
pub mod token_request;
pub mod watch;
pub mod write;

/// hyper's entry point. A panic anywhere in routing or a handler is caught here and answered
/// 500 (see `crate::panics`), so the connection and its other streams live on.
pub async fn handle(state: Arc<ApiState>, req: Request<Incoming>) -> Result<HttpResponse, Infallible> {
    let started = Instant::now();
    let what = panics::RequestLabel::new(req.method(), req.uri());
    let mut counted = None;
    let response = match panics::guard(panics::Stage::Handler, &what, respond(&state, req, &mut counted)).await {
        Ok(response) => response,
        Err(()) => response::error(&panics::error()),
    };
    if let Some((r, resource)) = counted {
        metrics::request(
            r.verb.metric_name(),
            resource,
            r.subresource.as_deref().unwrap_or(""),
            r.namespace.is_some(),
            r.name.is_some(),
            response.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
    }
    Ok(response)
}

/// The response to one request; sets `counted` to what the request metrics are labelled
/// with, for API requests.
async fn respond(
    state: &Arc<ApiState>,
    req: Request<Incoming>,
    counted: &mut Option<(ResourceRequest, Option<&'static Resource>)>,
) -> HttpResponse {
    let (mut parts, body) = req.into_parts();
    // What Go's net/http refuses before kube-apiserver's handlers see the request.
    if let Err(refusal) = request::check_framing(parts.version, &parts.headers) {
        return response::refused(&refusal);
    }
    let Some(path) = request::decode_path(parts.uri.path()) else {
        return response::refused(&request::Refusal::MALFORMED_URL);
    };
    if let Err(unauthorized) = crate::authn::authenticate(&state.config.authentication, &mut parts) {
        return *unauthorized;
    }
    let query = Query::parse(parts.uri.query());
    let resource_request = request::parse(&parts.method, &path, &query);
    if let Err(refused) = authorize(state, &mut parts, &path, &query, resource_request.as_ref()).await {
        return response::error(&refused);
    }
    let upgrade = crate::transport::websocket::is_websocket_request(&parts.headers)
        .then(|| parts.extensions.remove::<hyper::upgrade::OnUpgrade>())
        .flatten();
    let resource =
        resource_request.as_ref().and_then(|r| state.store(&r.group, &r.version, &r.resource)).map(|s| s.resource);
    let result = route(state, &parts, body, &path, &query, resource_request.as_ref(), upgrade).await;
    *counted = resource_request.map(|r| (r, resource));
    let mut response = result.unwrap_or_else(|e| response::error(&e));
    if response.status() == http::StatusCode::METHOD_NOT_ALLOWED {
        // RFC 9110 asks for the methods the path takes. (kube-apiserver's go-restful router
        // computes them too, but kube's error handler drops the header.)
        let allowed = allowed_methods(state, &path, &query).join(", ");
        if let Ok(value) = http::HeaderValue::from_str(&allowed) {
            response.headers_mut().insert(http::header::ALLOW, value);
        }
    }
    response
}

/// kube's filters after authentication: impersonation, then authorization. The user the
/// request acts as replaces the authenticated one on it; a refusal is kube's 403 (or 400).
async fn authorize(
    state: &ApiState,
    parts: &mut http::request::Parts,
    path: &str,
    query: &Query,
    resource_request: Option<&ResourceRequest>,
) -> Result<(), ApiError> {
    let requester = parts.extensions.get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    check_service_account_exists(state, &requester).await?;
    let user = crate::authz::impersonation::resolve(state, requester, &parts.headers).await?;
    if state.config.authorization != crate::authz::AuthorizationMode::AlwaysAllow {
        let attributes = crate::authz::Attributes::of_request(&parts.method, path, query, resource_request);
        crate::authz::check(state, &user, &attributes).await?;
    }
    parts.extensions.insert(user);
    Ok(())
}

/// A service account token is valid only while its account exists with the uid it names
/// (kube's token validator reads the account): 401 otherwise.
async fn check_service_account_exists(state: &ApiState, user: &UserInfo) -> Result<(), ApiError> {
    let from_token = user
        .extra
        .get("authentication.kubernetes.io/credential-id")
        .is_some_and(|ids| ids.iter().any(|id| id.starts_with("JTI=")));
    let Some((namespace, name)) =
        from_token.then(|| crate::authn::service_account::split_username(&user.name)).flatten()
    else {
        return Ok(());
    };
    let resource = listwatch_meta::Registry.find("", "v1", "serviceaccounts").expect("registered");
    let store = state.store_of(resource);
    let cached = match &store.cache {
        Some(cache) if cache.is_ready() => cache.get(Some(&namespace), &name, 0).await.ok().flatten(),
        _ => None,
    };
    let account = match cached {
        Some(account) => Some(account),
        None => store.read(Some(&namespace), &name).await?,
    };
    match account {
        Some(account) if account.uid() == user.uid => Ok(()),
        _ => {
            tracing::info!(user = %user.name, "service account token of an account that is gone");
            Err(crate::authn::unauthorized())
        }
    }
}

/// The methods `path` has a route for, as a 405's `Allow` lists them.
fn allowed_methods(state: &ApiState, path: &str, query: &Query) -> Vec<&'static str> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if matches!(segments.as_slice(), ["version" | "api"] | ["api", _] | ["apis", _, _]) {
        return vec!["GET"];
    }
    [
        (Method::DELETE, "DELETE"),
        (Method::GET, "GET"),
        (Method::PATCH, "PATCH"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
    ]
    .into_iter()
    .filter(|(method, _)| {
        request::parse(method, path, query)
            .is_some_and(|r| (!r.legacy_watch || *method == Method::GET) && resolve(state, &r).is_ok())
    })
    .map(|(_, name)| name)
    .collect()
}

async fn route(
    state: &Arc<ApiState>,
    parts: &http::request::Parts,
    body: Incoming,
    path: &str,
    query: &Query,
    resource_request: Option<&ResourceRequest>,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
) -> Result<HttpResponse, ApiError> {
    let json = |v: Value| Ok(response::json(200, Bytes::from(v.to_string())));
    let text = |s: &'static str| {
        Ok(response::with_body(200, "text/plain; charset=utf-8", Body::full(Bytes::from_static(s.as_bytes()))))
    };
    // go-restful's web services (/version, /api, /api/v1, /apis/<group>/<version> and the
    // resources under them) route GET only where they serve GET; the other paths (health,
    // metrics, OpenAPI, and the aggregator's /apis and /apis/<group>) answer any method.
    let is_get = parts.method == Method::GET;
    let get_only =
        |answer: Result<HttpResponse, ApiError>| if is_get { answer } else { Err(ApiError::method_not_allowed()) };
    match path {
        "/healthz" | "/livez" => return text("ok"),
        "/readyz" => {
            // kube-apiserver's etcd-readiness check, and the watch caches' own.
            let failed: &'static [u8] = if state.storage_is_out() {
                b"[-]etcd-readiness failed: reason withheld\nreadyz check failed"
            } else if !state.is_ready() {
                b"[-]watch-cache not ready\nreadyz check failed"
            } else {
                return text("ok");
            };
            return Ok(response::with_body(500, "text/plain; charset=utf-8", Body::full(Bytes::from_static(failed))));
        }
        "/version" | "/version/" => return get_only(json(discovery::version())),
        "/metrics" => {
            let mut text = metrics::render(state.stores().iter()).await;
            if let Some(audit) = &state.client_audit {
                text.extend_from_slice(crate::client_audit::metrics_text(&audit.report()).as_bytes());
            }
            return Ok(response::with_body(200, prometheus::TEXT_FORMAT, Body::full(text)));
        }
        "/debug/listwatch/clients" if state.client_audit.is_some() => {
            let audit = state.client_audit.as_ref().expect("checked");
            return get_only(Ok(debug::clients::respond(audit, query.get("records") == Some("true"))));
        }
        "/api" | "/api/" => return get_only(json(discovery::api_versions(&state.config.advertise_address))),
        "/apis" | "/apis/" => return json(discovery::api_group_list(state)),
        _ => {}
    }
    if path.starts_with("/openapi/") {
        let accept = parts.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok());
        return crate::discovery::openapi::handle(state, path, query, accept);
    }
    if let Some(rest) = path.strip_prefix("/debug/listwatch/").map(|_| path) {
        if !state.config.enable_debug_api {
            return Err(ApiError::not_found_path());
        }
        return debug::handle(state, &parts.method, rest, query).await;
    }
    if let Some(throttled) = state.throttle.take() {
        if throttled.plain {
            let seconds = throttled.error.retry_after().map_or(1, u64::from);
            return Ok(crate::transport::limits::too_many_requests(seconds));
        }
        return Err(throttled.error);
    }
    let Some(req) = resource_request else {
        // Group and group-version discovery.
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        return match segments.as_slice() {
            ["api", version] => discovery::api_resource_list(state, "", version)
                .map_or_else(|| Err(ApiError::not_found_path()), |v| get_only(json(v))),
            ["apis", group] => discovery::api_group(state, group).map_or_else(|| Err(ApiError::not_found_path()), json),
            ["apis", group, version] => discovery::api_resource_list(state, group, version)
                .map_or_else(|| Err(ApiError::not_found_path()), |v| get_only(json(v))),
            // A resource path, with a method that is no REST verb (HEAD, OPTIONS, TRACE, ...):
            // 405 where the path has a route, as for any method the path does not take.
            _ => match request::parse(&Method::GET, path, query).map(|r| resolve(state, &r)) {
                Some(Ok(_)) => Err(ApiError::method_not_allowed()),
                Some(Err(e)) => Err(e),
                None => Err(ApiError::not_found_path()),
            },
        };
    };
    let store = resolve(state, req)?;
    let store = store.as_ref();
    let resource = store.resource;
    // The registry turns the name into a storage key only if it is a valid path segment (a
    // legacy watch of one name watches the collection instead).
    if let Some(name) = &req.name
        && !req.legacy_watch
    {
        request::check_path_name(name)?;
    }
    // go-restful refuses a PATCH's Content-Type while routing, before the body is read.
    if req.verb == Verb::Patch {
        PatchKind::from_headers(&parts.headers)?;
    }
    let warnings = custom::check(state, resource, req, &parts.headers).await?;
    let answer = serve_verb(state, parts, body, query, req, upgrade, store).await;
    Ok(response::with_warnings(answer.unwrap_or_else(|e| response::error(&e)), &warnings))
}

/// Reads the body a verb needs and serves the verb.
async fn serve_verb(
    state: &Arc<ApiState>,
    parts: &http::request::Parts,
    body: Incoming,
    query: &Query,
    req: &ResourceRequest,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
    store: &ResourceStore,
) -> Result<HttpResponse, ApiError> {
    let resource = store.resource;
    let accept = parts.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok());
    let media = |list: bool| negotiate::response_media(accept, resource, list, query);
    let body = match req.verb {
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            body_in::read(body, body_in::MAX_BODY_BYTES).await?
        }
        _ => Bytes::new(),
    };
    match req.verb {
        Verb::Get if req.subresource.as_deref() == Some("scale") => scale::get(store, req).await,
        Verb::Get => read::get(store, req, query, media(false)?).await,
        Verb::List => {
            read::refuse_by_fault(&state.read_faults, store, query, false)?;
            read::list(store, req, query, media(true)?).await
        }
        Verb::Watch => {
            read::refuse_by_fault(&state.read_faults, store, query, true)?;
            watch::watch(state, store, req, query, parts, upgrade).await
        }
        Verb::Create if req.subresource.as_deref() == Some("token") => {
            token_request::create(state, store, req, &parts.headers, body).await
        }
        Verb::Create if crate::authz::reviews::is_review(resource) => {
            let user = parts.extensions.get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
            crate::authz::reviews::create(state, resource, req.namespace.as_deref(), &user, &parts.headers, &body).await
        }
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            let media = media(req.verb == Verb::DeleteCollection)?;
            let user = parts.extensions.get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
            let w = write::WriteRequest { state, user: &user, store, req, query, headers: &parts.headers, body, media };
            match req.verb {
                Verb::Create if binding::is_binding(store, req) => {
                    binding::create(store, req, query, &parts.headers, w.body).await
                }
                Verb::Create => write::create(w).await,
                Verb::Update => write::update(w).await,
                Verb::Patch => patch::patch(w).await,
                Verb::Delete => delete::delete(w).await,
                _ => delete::delete_collection(w).await,
            }
        }
    }
}

/// The store a resource request routes to, with go-restful's answers when it routes nowhere:
/// 404 for a path with no route, 405 (its generic Status) for a method the path does not take
/// (PUT or PATCH of a collection, POST to an object, DELETE of a subresource, a write to the
/// all-namespaces list of a namespaced kind, a verb the kind lacks).
pub(crate) fn resolve(state: &ApiState, req: &ResourceRequest) -> Result<Arc<ResourceStore>, ApiError> {
    let Some(store) = state.store(&req.group, &req.version, &req.resource) else {
        return Err(ApiError::not_found_path());
    };
    let resource = store.resource;
    // A namespace segment on a cluster-scoped kind, or an object of a namespaced kind without
    // one, is no route; a namespaced kind's all-namespaces list takes GET only.
    if (!resource.namespaced && req.namespace.is_some() && resource.plural != "namespaces")
        || (resource.namespaced && req.namespace.is_none() && req.name.is_some())
    {
        return Err(ApiError::not_found_path());
    }
    if let Some(sub) = &req.subresource
        && !resource.subresources.iter().any(|s| s.name() == sub)
    {
        // kube's CR handler answers an unknown subresource itself, with a JSON 404.
        return Err(if resource.dynamic.is_some() {
            ApiError::not_found(&resource.group_resource(), req.name.as_deref().unwrap_or(""))
        } else {
            ApiError::not_found_path()
        });
    }
    let all_namespaces = resource.namespaced && req.namespace.is_none();
    // `pods/{name}/binding` and `serviceaccounts/{name}/token` take POST only.
    let binding =
        resource.subresources.iter().any(|s| s.is_create_only() && req.subresource.as_deref() == Some(s.name()));
    let wrong_path = match req.verb {
        Verb::Create if binding => req.name.is_none(),
        _ if binding => true,
        Verb::Update | Verb::Patch => req.name.is_none(),
        Verb::Create | Verb::DeleteCollection => req.name.is_some() || all_namespaces,
        Verb::Delete => req.subresource.is_some(),
        Verb::Get | Verb::List | Verb::Watch => false,
    };
    if wrong_path {
        return Err(ApiError::method_not_allowed());
    }
    if !resource.has_verb(req.verb.as_str()) {
        // A watch goes through the list route, whose handler refuses it by name (kube's
        // `NewMethodNotSupported`); the other verbs have no route.
        return Err(if req.verb == Verb::Watch {
            ApiError::method_not_supported(&resource.group_resource(), "watch")
        } else {
            ApiError::method_not_allowed()
        });
    }
    Ok(store)
}
