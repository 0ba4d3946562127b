//! Starting and serving: [`start`] builds the state and its controllers; [`serve`] accepts
//! connections and hands each request to the router ([`crate::handlers::handle`]).

use std::sync::Arc;
use std::time::Duration;

use listwatch_storage::{Storage, StorageError};
use serde_json::Value;

use crate::client_audit::{Peer, identity};
use crate::config::ServerConfig;
use crate::state::ApiState;

/// Namespaces kube-apiserver creates at startup.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Builds the state (one store per resource, the watch caches) and starts what runs beside
/// the handlers: the controllers and the compactor. The namespaces kube-apiserver creates at
/// startup exist when it returns.
pub async fn start(config: ServerConfig, storage: Arc<dyn Storage>) -> Result<Arc<ApiState>, StorageError> {
    let (deletions, marked) = tokio::sync::mpsc::unbounded_channel();
    let state = Arc::new(ApiState::new(config, storage, deletions).await?);
    crate::upkeep::start(&state, marked).await.map_err(|e| StorageError::Unavailable(e.to_string()))?;
    if state.config.bootstrap_namespaces {
        bootstrap_namespaces(&state).await?;
    }
    // kube writes its default roles whatever the mode; here only where they are used.
    if state.config.authorization == crate::authz::AuthorizationMode::Rbac {
        crate::authz::bootstrap::ensure(&state).await?;
    }
    Ok(state)
}

async fn bootstrap_namespaces(state: &ApiState) -> Result<(), StorageError> {
    let store = state.namespaces();
    for name in SYSTEM_NAMESPACES {
        let mut object = serde_json::json!({"metadata": {"name": name}}).as_object().cloned().expect("an object");
        crate::registry::strategy::prepare_for_create(store.resource, &mut object);
        let bytes = listwatch_meta::object::to_storage_bytes(store.resource, Value::Object(object));
        match state.storage.create(store.key(None, name).as_bytes(), bytes).await {
            Ok(_) | Err(StorageError::AlreadyExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Serves `listener` until `shutdown` completes, then ends open watches and drains. With
/// `tls`, every connection is TLS first (HTTP/2 or HTTP/1.1 by ALPN); without, plain HTTP/1.1
/// and HTTP/2 with prior knowledge share the port. Requests pass the max-in-flight filter
/// ([`crate::transport::limits`]); connections get Go's header limits and timeout
/// ([`crate::transport::conn`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ApiState>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let builder = Arc::new(crate::transport::conn::builder(&state.config));
    let limits = Arc::new(crate::transport::limits::InflightLimits::new(
        state.config.max_requests_inflight,
        state.config.max_mutating_requests_inflight,
    ));
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let setup_timeout = state.config.read_header_timeout;
    // Every connection holds a sender: once all are dropped, the drain is over.
    let (open, mut all_closed) = tokio::sync::mpsc::channel::<()>(1);
    let closing = crate::transport::conn::Closing {
        shutdown: state.shutdown.clone(),
        goaways: state.watch_faults.streams.goaways(),
        open,
    };
    let mut shutdown = std::pin::pin!(shutdown);
    // Go's http.Server backoff after a failed accept (EMFILE and the like): 5 ms doubling to 1 s,
    // so a full file table neither spins the loop nor ends the server.
    let mut accept_delay = Duration::ZERO;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
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
                    // Boxed: the handler's future is ~7 KB, and hyper keeps the space of an
                    // inline one for as long as the request lives (a watch: for hours), where
                    // a box is freed once the response head is out. ~7 KB less per watcher.
                    Box::pin(async move {
                        let Some(audit) = state.client_audit.clone() else {
                            return crate::transport::limits::admit_then(&limits, req, |req| {
                                crate::handlers::handle(state, req)
                            })
                            .await;
                        };
                        // Recorded around the in-flight limit, whose 429s are answers too.
                        let (mut parts, body) = req.into_parts();
                        parts.extensions.insert(Peer(peer));
                        let client = identity::of(&parts, &state.config.authentication);
                        let recording = audit.begin(&mut parts, client);
                        let req = http::Request::from_parts(parts, body);
                        let response =
                            crate::transport::limits::admit_then(&limits, req, |req| crate::handlers::handle(state, req))
                                .await;
                        if let (Some(recording), Ok(response)) = (recording, &response) {
                            recording.finish(&audit, response);
                        }
                        response
                    })
                });
                tokio::spawn(crate::transport::conn::serve(
                    stream,
                    tls.clone(),
                    builder.clone(),
                    service,
                    closing.clone(),
                    setup_timeout,
                ));
            }
            _ = &mut shutdown => break,
        }
    }
    // Connections shut down gracefully and open watches end.
    state.shut_down();
    drop(closing);
    if tokio::time::timeout(Duration::from_secs(5), all_closed.recv()).await.is_err() {
        tracing::warn!("some connections did not close within 5 s");
    }
}
