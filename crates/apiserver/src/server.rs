//! The server: its state (storage, one [`ResourceStore`] per resource, the watch caches) and
//! the routing of every request.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request};
use hyper::body::Incoming;
use listwatch_encoding::{Encoder, negotiate};
use listwatch_meta::{ApiError, Object, Registry, Resource};
use listwatch_storage::{BackendVersion, Storage, StorageError};
use listwatch_watchcache::{WatchCache, WatchCacheConfig};
use serde_json::Value;
use tokio::sync::watch;

use crate::body::Body;
use crate::debug::Throttle;
use crate::options::RequestedVersion;
use crate::request::{self, Query, ResourceRequest, Verb};
use crate::resource::ResourceStore;
use crate::response::{self, HttpResponse};
use crate::{body_in, discovery, list, metrics, panics, write};

/// Settings of the API server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Root of every key (`--etcd-prefix`).
    pub storage_root: String,
    /// Serve resources from watch caches (`--watch-cache`).
    pub watch_cache: bool,
    /// Per-resource overrides (`--watch-cache-resources pods=false,events=true`), by plural or
    /// `plural.group`.
    pub watch_cache_overrides: Vec<(String, bool)>,
    pub cache: WatchCacheConfig,
    /// `--min-request-timeout`: watches without `timeoutSeconds` last [this, 2× this).
    pub min_request_timeout: Duration,
    pub enable_debug_api: bool,
    /// `--compaction-interval` (0 disables the compactor).
    pub compaction_interval: Duration,
    /// The address clients reach the server at (for `/api`).
    pub advertise_address: String,
    /// Kubelet stand-in: how long after its grace period a pod on a node is removed.
    pub pod_termination_delay: Duration,
    /// Streams a client may open on one HTTP/2 connection (kube-apiserver's
    /// `--http2-max-streams-per-connection`, 1000 by default).
    pub http2_max_streams_per_connection: u32,
    /// `--max-requests-inflight`: read-only requests served at once, beyond which kube answers
    /// 429 (0: no limit; watches are not counted).
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight`: the same for mutating requests.
    pub max_mutating_requests_inflight: usize,
    /// How long a client may take to send its request headers (and, in hyper, how long an idle
    /// keep-alive connection waits for its next request): Go's `ReadHeaderTimeout`, 32 s in
    /// kube-apiserver. `None` waits forever.
    pub read_header_timeout: Option<Duration>,
    /// Who may ask (`--token-auth-file`, `--client-ca-file`, `--anonymous-auth`).
    pub authentication: crate::authn::Authentication,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            storage_root: "/registry".into(),
            watch_cache: true,
            watch_cache_overrides: Vec::new(),
            cache: WatchCacheConfig::default(),
            min_request_timeout: Duration::from_secs(1800),
            enable_debug_api: false,
            compaction_interval: Duration::from_secs(300),
            advertise_address: "127.0.0.1:8080".into(),
            pod_termination_delay: Duration::ZERO,
            http2_max_streams_per_connection: 1000,
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            read_header_timeout: Some(Duration::from_secs(32)),
            authentication: Default::default(),
        }
    }
}

/// The stack a runtime thread serving requests needs: bodies nest up to 10,000 levels (as
/// kube's decoder allows, see `body_in::from_json`), and dropping, cloning or encoding such a
/// value recurses once per level, past tokio's default 2 MiB. Only the pages a deep request
/// touches are used.
pub const REQUEST_THREAD_STACK_BYTES: usize = 16 << 20;

/// Namespaces kube-apiserver creates at startup.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Everything a request handler needs.
pub struct ApiState {
    pub config: ServerConfig,
    pub storage: Arc<dyn Storage>,
    pub backend: BackendVersion,
    stores: Vec<Arc<ResourceStore>>,
    pub throttle: Throttle,
    /// Flips to true on shutdown: open watches end.
    pub shutdown: watch::Receiver<bool>,
    shutdown_tx: watch::Sender<bool>,
    namespace_cleanup: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ApiState {
    /// Builds the state: one store per registered resource, cached or not, and the
    /// background controllers (namespace cleanup, compactor).
    pub async fn start(config: ServerConfig, storage: Arc<dyn Storage>) -> Result<Arc<ApiState>, StorageError> {
        let backend = storage.version().await?;
        let consistent_reads_from_cache = backend.supports_request_watch_progress();
        if !consistent_reads_from_cache {
            tracing::warn!(version = %backend.version, "storage does not answer progress requests reliably: consistent reads go to storage and streaming lists are refused");
        }
        let stores = Registry
            .resources()
            .iter()
            .map(|resource| {
                let cached = cache_enabled(&config, resource);
                let cache = cached.then(|| {
                    WatchCache::start(
                        resource,
                        resource.collection_prefix(&config.storage_root),
                        storage.clone(),
                        config.cache.clone(),
                    )
                });
                Arc::new(ResourceStore {
                    resource,
                    storage: storage.clone(),
                    cache,
                    root: config.storage_root.clone(),
                    consistent_reads_from_cache,
                })
            })
            .collect();
        let (shutdown_tx, shutdown) = watch::channel(false);
        let (cleanup_tx, cleanup_rx) = tokio::sync::mpsc::unbounded_channel();
        let state = Arc::new(ApiState {
            config,
            storage,
            backend,
            stores,
            throttle: Throttle::default(),
            shutdown,
            shutdown_tx,
            namespace_cleanup: cleanup_tx,
        });
        crate::gc::start(&state).await.map_err(|e| StorageError::Unavailable(e.to_string()))?;
        state.bootstrap_namespaces().await?;
        tokio::spawn(crate::controllers::namespace_cleanup(Arc::downgrade(&state), cleanup_rx));
        if !state.config.compaction_interval.is_zero() {
            tokio::spawn(crate::controllers::compactor(
                state.storage.clone(),
                state.config.compaction_interval,
                state.shutdown.clone(),
            ));
        }
        Ok(state)
    }

    /// Ends open watches and stops the background work.
    pub fn shut_down(&self) {
        self.shutdown_tx.send_replace(true);
    }

    pub fn stores(&self) -> impl Iterator<Item = &Arc<ResourceStore>> {
        self.stores.iter()
    }

    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceStore>> {
        self.stores
            .iter()
            .find(|s| s.resource.group == group && s.resource.version == version && s.resource.plural == plural)
    }

    pub fn store_of(&self, resource: &Resource) -> &Arc<ResourceStore> {
        self.stores.iter().find(|s| std::ptr::eq(s.resource, resource)).expect("every resource has a store")
    }

    fn namespaces(&self) -> &Arc<ResourceStore> {
        self.store("", "v1", "namespaces").expect("namespaces are registered")
    }

    /// Whether every watch cache has its initial list.
    pub fn is_ready(&self) -> bool {
        self.stores.iter().all(|s| s.cache.as_ref().is_none_or(WatchCache::is_ready))
    }

    /// Waits (bounded) until the caches are ready.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        for cache in self.stores.iter().filter_map(|s| s.cache.as_ref()) {
            if !cache.wait_ready(timeout).await {
                return false;
            }
        }
        true
    }

    async fn bootstrap_namespaces(&self) -> Result<(), StorageError> {
        let store = self.namespaces();
        for name in SYSTEM_NAMESPACES {
            let mut object = serde_json::json!({"metadata": {"name": name}}).as_object().cloned().expect("an object");
            crate::strategy::prepare_for_create(store.resource, &mut object);
            let bytes = listwatch_meta::object::to_storage_bytes(store.resource, Value::Object(object));
            match self.storage.create(store.key(None, name).as_bytes(), bytes).await {
                Ok(_) | Err(StorageError::AlreadyExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// kube's NamespaceLifecycle admission: no new objects in a missing (404) or terminating
    /// (403) namespace.
    pub async fn check_namespace_accepts_writes(
        &self,
        namespace: &str,
        resource: &Resource,
        name: &str,
    ) -> Result<(), ApiError> {
        let store = self.namespaces();
        let cached = match &store.cache {
            Some(cache) if cache.is_ready() => cache.get(None, namespace, 0).await.ok().flatten(),
            _ => None,
        };
        let found = match cached {
            Some(ns) => Some(ns),
            // Not in the cache (yet): ask storage, as kube's admission does on a miss.
            None => store.read(None, namespace).await?,
        };
        let Some(ns) = found else {
            return Err(ApiError::not_found(&store.resource.group_resource(), namespace));
        };
        let phase = ns.value().pointer("/status/phase").and_then(Value::as_str).map(String::from);
        if phase.as_deref() == Some("Terminating") {
            return Err(ApiError::forbidden(
                &resource.group_resource(),
                name,
                &format!("unable to create new content in namespace {namespace} because it is being terminated"),
            ));
        }
        Ok(())
    }

    /// How a delete treats `object` (finalizers, grace periods, propagation).
    pub fn deletion_policy(
        &self,
        resource: &Resource,
        object: &serde_json::Map<String, Value>,
        options: &write::DeleteOptions,
    ) -> crate::controllers::DeletionPolicy {
        crate::controllers::deletion_policy(resource, object, options)
    }

    /// After an object was marked for deletion (not yet removed).
    pub fn after_marked_for_deletion(
        &self,
        store: &ResourceStore,
        object: &Arc<Object>,
        policy: &crate::controllers::DeletionPolicy,
    ) {
        if store.resource.kind == "Namespace" && store.resource.group.is_empty() {
            let _ = self.namespace_cleanup.send(object.name().to_string());
        }
        if policy.grace_seconds > 0 && store.resource.graceful_deletion {
            crate::controllers::remove_after_grace(self, store, object, policy.grace_seconds);
        }
    }
}

fn cache_enabled(config: &ServerConfig, resource: &Resource) -> bool {
    let qualified = if resource.group.is_empty() {
        resource.plural.to_string()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    for (name, on) in config.watch_cache_overrides.iter().rev() {
        if *name == resource.plural || *name == qualified {
            return *on;
        }
    }
    config.watch_cache && resource.watch_cache
}

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
    let upgrade = crate::websocket::is_websocket_request(&parts.headers)
        .then(|| parts.extensions.remove::<hyper::upgrade::OnUpgrade>())
        .flatten();
    let query = Query::parse(parts.uri.query());
    let resource_request = request::parse(&parts.method, &path, &query);
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

/// The methods `path` has a route for, as a 405's `Allow` lists them.
fn allowed_methods(state: &ApiState, path: &str, query: &Query) -> Vec<&'static str> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if matches!(segments.as_slice(), ["version"] | ["api"] | ["api", _] | ["apis", _, _]) {
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
            return if state.is_ready() {
                text("ok")
            } else {
                Ok(response::with_body(
                    500,
                    "text/plain; charset=utf-8",
                    Body::full(Bytes::from_static(b"[-]watch-cache not ready\nreadyz check failed")),
                ))
            };
        }
        "/version" | "/version/" => return get_only(json(discovery::version())),
        "/metrics" => {
            return Ok(response::with_body(200, prometheus::TEXT_FORMAT, Body::full(metrics::render(state).await)));
        }
        "/api" | "/api/" => return get_only(json(discovery::api_versions(&state.config.advertise_address))),
        "/apis" | "/apis/" => return json(discovery::api_group_list()),
        _ => {}
    }
    if path.starts_with("/openapi/") {
        return crate::openapi::handle(path, query);
    }
    if let Some(rest) = path.strip_prefix("/debug/listwatch/").map(|_| path) {
        if !state.config.enable_debug_api {
            return Err(ApiError::not_found_path());
        }
        return crate::debug::handle(state, &parts.method, rest, query).await;
    }
    if let Some(error) = state.throttle.take() {
        return Err(error);
    }
    let Some(req) = resource_request else {
        // Group and group-version discovery.
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        return match segments.as_slice() {
            ["api", version] => discovery::api_resource_list("", version)
                .map_or_else(|| Err(ApiError::not_found_path()), |v| get_only(json(v))),
            ["apis", group] => discovery::api_group(group).map_or_else(|| Err(ApiError::not_found_path()), json),
            ["apis", group, version] => discovery::api_resource_list(group, version)
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
    let resource = store.resource;
    // The registry turns the name into a storage key only if it is a valid path segment (a
    // legacy watch of one name watches the collection instead).
    if let Some(name) = &req.name
        && !req.legacy_watch
    {
        request::check_path_name(name)?;
    }
    let accept = parts.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok());
    let negotiate = |list: bool| -> Result<listwatch_encoding::MediaType, ApiError> {
        with_include_object(negotiate(accept, resource, list)?, query)
    };
    // go-restful refuses a PATCH's Content-Type while routing, before the body is read.
    if req.verb == Verb::Patch {
        write::PatchKind::from_headers(&parts.headers)?;
    }
    let body = match req.verb {
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            body_in::read(body, body_in::MAX_BODY_BYTES).await?
        }
        _ => Bytes::new(),
    };
    match req.verb {
        Verb::Get if req.subresource.as_deref() == Some("scale") => crate::scale::get(store, req).await,
        Verb::Get => get(store, req, query, negotiate(false)?).await,
        Verb::List => {
            let media = negotiate(true)?;
            let options = crate::options::parse(query, resource, false, None)?;
            let listed = list::list(store, req.namespace.as_deref(), &options)
                .await
                .map_err(|e| crate::options::with_client_version(e, options.client_resource_version))?;
            let encoder = Encoder::new(resource, media);
            let pieces = encoder
                .list(&listed.items, listed.resource_version, listed.continue_token.as_deref(), listed.remaining)
                .into_pieces();
            Ok(response::with_body(200, encoder.content_type(), Body::pieces(pieces)))
        }
        Verb::Watch => match upgrade {
            Some(on_upgrade) => {
                let handshake = match crate::websocket::check_handshake(&parts.method, &parts.headers) {
                    Ok(handshake) => handshake,
                    Err(refusal) => return Ok(*refusal),
                };
                let watch = crate::watch::prepare(state, store, req, query, &parts.headers).await?;
                Ok(crate::websocket::respond(
                    state,
                    watch,
                    handshake,
                    on_upgrade,
                    crate::panics::RequestLabel::new(&parts.method, &parts.uri),
                ))
            }
            None => {
                let watch = crate::watch::prepare(state, store, req, query, &parts.headers).await?;
                Ok(crate::watch::chunked_response(
                    state,
                    watch,
                    crate::panics::RequestLabel::new(&parts.method, &parts.uri),
                ))
            }
        },
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            let media = negotiate(req.verb == Verb::DeleteCollection)?;
            let w = write::WriteRequest { state, store, req, query, headers: &parts.headers, body, media };
            match req.verb {
                Verb::Create => write::create(w).await,
                Verb::Update => write::update(w).await,
                Verb::Patch => write::patch(w).await,
                Verb::Delete => write::delete(w).await,
                _ => write::delete_collection(w).await,
            }
        }
    }
}

/// The store a resource request routes to, with go-restful's answers when it routes nowhere:
/// 404 for a path with no route, 405 (its generic Status) for a method the path does not take
/// (PUT or PATCH of a collection, POST to an object, DELETE of a subresource, a write to the
/// all-namespaces list of a namespaced kind, a verb the kind lacks).
fn resolve<'a>(state: &'a ApiState, req: &ResourceRequest) -> Result<&'a Arc<ResourceStore>, ApiError> {
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
        return Err(ApiError::not_found_path());
    }
    let all_namespaces = resource.namespaced && req.namespace.is_none();
    let wrong_path = match req.verb {
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

/// Applies `includeObject` (what Table rows carry: None, Metadata by default, or Object) to a
/// Table representation. kube reads it only when converting to a Table
/// (`ValidateTableOptions`): then a value it does not know is a 400; otherwise it is ignored.
pub fn with_include_object(
    mut media: listwatch_encoding::MediaType,
    query: &Query,
) -> Result<listwatch_encoding::MediaType, ApiError> {
    let Some(value) = query.get("includeObject") else { return Ok(media) };
    if let listwatch_encoding::Output::Table { include: current, .. } = &mut media.output {
        *current = listwatch_encoding::IncludeObject::parse(value).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                listwatch_meta::validation::go_quote(value)
            ))
        })?;
    }
    Ok(media)
}

/// GET of one object: resourceVersion unset reads storage (consistent), "0" the cache,
/// N the cache once it has N (not older than).
async fn get(
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    media: listwatch_encoding::MediaType,
) -> Result<HttpResponse, ApiError> {
    let name = req.name.as_deref().expect("GET has a name");
    let namespace = store.scope(req.namespace.as_deref());
    let (rv, client_version) = crate::options::parse_resource_version(query.get("resourceVersion").unwrap_or(""))?;
    let read = async {
        Ok(match (rv, &store.cache) {
            (RequestedVersion::Unset, _) => store.read(namespace, name).await?,
            (RequestedVersion::Any, Some(cache)) => {
                cache.get(namespace, name, 0).await.map_err(|e| e.to_api_error())?
            }
            (RequestedVersion::At(n), Some(cache)) => {
                cache.get(namespace, name, n).await.map_err(|e| e.to_api_error())?
            }
            (RequestedVersion::Any, None) => store.read(namespace, name).await?,
            (RequestedVersion::At(n), None) => {
                let current = store.current_revision().await?;
                if current < n {
                    return Err(ApiError::too_large_resource_version(n, current, 0));
                }
                store.read(namespace, name).await?
            }
        })
    };
    let object = read.await.map_err(|e| crate::options::with_client_version(e, client_version))?;
    let object = object.ok_or_else(|| ApiError::not_found(&store.resource.group_resource(), name))?;
    let encoder = Encoder::new(store.resource, media);
    Ok(response::with_body(200, encoder.content_type(), Body::full(encoder.object(&object))))
}

/// Serves `listener` until `shutdown` completes, then ends open watches and drains. With
/// `tls`, every connection is TLS first (HTTP/2 or HTTP/1.1 by ALPN); without, plain HTTP/1.1
/// and HTTP/2 with prior knowledge share the port. Requests pass the max-in-flight filter
/// ([`crate::limits`]); connections get Go's header limits and timeout ([`crate::conn`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ApiState>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let builder = Arc::new(crate::conn::builder(&state.config));
    let limits = Arc::new(crate::limits::InflightLimits::new(
        state.config.max_requests_inflight,
        state.config.max_mutating_requests_inflight,
    ));
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let setup_timeout = state.config.read_header_timeout;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    // Go's http.Server backoff after a failed accept (EMFILE and the like): 5 ms doubling to 1 s,
    // so a full file table neither spins the loop nor ends the server.
    let mut accept_delay = Duration::ZERO;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        accept_delay = (accept_delay * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                        tracing::warn!(error = %e, retry_in_ms = accept_delay.as_millis() as u64, "accept failed");
                        tokio::time::sleep(accept_delay).await;
                        continue;
                    }
                };
                accept_delay = Duration::ZERO;
                let (state, limits) = (state.clone(), limits.clone());
                let service = hyper::service::service_fn(move |req| {
                    let (state, limits) = (state.clone(), limits.clone());
                    async move { crate::limits::admit_then(&limits, req, |req| handle(state, req)).await }
                });
                tokio::spawn(crate::conn::serve(
                    stream,
                    tls.clone(),
                    builder.clone(),
                    service,
                    graceful.watcher(),
                    setup_timeout,
                ));
            }
            _ = &mut shutdown => break,
        }
    }
    state.shut_down();
    if tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await.is_err() {
        tracing::warn!("some connections did not close within 5 s");
    }
}
