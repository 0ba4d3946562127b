//! Authentication: who is asking, as kube-apiserver's built-in authenticators decide it.
//!
//! Off by default, for local use: with no authenticator configured every request is the
//! anonymous user (a bearer token is not looked at, so any token works). Configured, it is
//! kube's chain (`pkg/kubeapiserver/authenticator/config.go`):
//! * x509 client certificates verified against `--client-ca-file` ([`client_cert`]), then
//!   bearer tokens from `--token-auth-file` ([`token_file`]) in `Authorization: Bearer` or in a
//!   WebSocket `base64url.bearer.authorization.k8s.io.` subprotocol. The first to authenticate
//!   wins; failures of the others are then forgotten. Authenticated users get the group
//!   `system:authenticated`.
//! * A request none of them authenticates is anonymous (`system:anonymous`, group
//!   `system:unauthenticated`) when `--anonymous-auth` allows it, except that credentials that
//!   were presented and failed (an unknown token, a certificate from another CA) are never
//!   anonymous: 401 `Unauthorized`.
//! * With `--anonymous-auth=false`, kube's public-info paths (`/healthz`, `/livez`, `/readyz`,
//!   `/version`, what its default RBAC grants `system:unauthenticated`) stay open to anonymous
//!   requests, as kube 1.32 allows with an authentication configuration whose anonymous
//!   authenticator is limited to those paths; everything else is 401.
//!
//! The user goes on the request as a [`UserInfo`] extension for authorization and logs
//! (authorization itself allows everything).

pub mod client_cert;
pub mod service_account;
pub mod token_file;

use std::sync::Arc;

use base64::Engine as _;
use http::header;
use listwatch_meta::ApiError;
use rustls::pki_types::CertificateDer;

pub use client_cert::ClientCa;
pub use service_account::ServiceAccountTokens;
pub use token_file::TokenFile;

use crate::response::{self, HttpResponse};

/// kube's `user.Info` as the built-in authenticators fill it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`system:anonymous` for anonymous requests).
    pub name: String,
    /// The uid, when the authenticator knows one.
    pub uid: String,
    /// The groups, including the virtual ones kube adds.
    pub groups: Vec<String>,
    /// Whatever else the authenticator (or an impersonation) says about the user.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// The user of a request without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of every anonymous request.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group of every authenticated request.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";

impl UserInfo {
    /// The anonymous user, as kube's anonymous authenticator makes it.
    pub fn anonymous() -> UserInfo {
        UserInfo { name: ANONYMOUS.into(), groups: vec![ALL_UNAUTHENTICATED.into()], ..UserInfo::default() }
    }

    /// kube's `AuthenticatedGroupAdder`: `system:authenticated` unless the user is anonymous or
    /// already in either catch-all group.
    fn with_authenticated_group(mut self) -> UserInfo {
        if self.name != ANONYMOUS && !self.groups.iter().any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.into());
        }
        self
    }
}

/// The certificate chain a TLS client presented (end entity first), put on each request of its
/// connection by the server.
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<[CertificateDer<'static>]>);

/// A connection's service that puts the TLS client's [`PeerCertificates`] on each request.
pub struct WithPeerCertificates<S> {
    inner: S,
    peer: Option<PeerCertificates>,
}

/// Wraps the service of a TLS connection so its requests carry the client's certificates.
pub fn with_peer_certificates<IO, S>(
    stream: &tokio_rustls::server::TlsStream<IO>,
    service: S,
) -> WithPeerCertificates<S> {
    let peer = stream.get_ref().1.peer_certificates().filter(|chain| !chain.is_empty());
    let peer = peer.map(|chain| PeerCertificates(chain.iter().map(|c| c.clone().into_owned()).collect()));
    WithPeerCertificates { inner: service, peer }
}

impl<S, B> hyper::service::Service<http::Request<B>> for WithPeerCertificates<S>
where
    S: hyper::service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut req: http::Request<B>) -> Self::Future {
        if let Some(peer) = &self.peer {
            req.extensions_mut().insert(peer.clone());
        }
        self.inner.call(req)
    }
}

/// How requests are authenticated (`ServerConfig::authentication`).
#[derive(Clone, Debug)]
pub struct Authentication {
    /// `--anonymous-auth`.
    pub anonymous: bool,
    /// `--token-auth-file`.
    pub tokens: Option<Arc<TokenFile>>,
    /// `--client-ca-file`.
    pub client_ca: Option<Arc<ClientCa>>,
    /// Service account tokens (always on, as in kube): their key and issuer.
    pub service_accounts: Arc<ServiceAccountTokens>,
}

impl Default for Authentication {
    fn default() -> Self {
        Authentication {
            anonymous: true,
            tokens: None,
            client_ca: None,
            service_accounts: Arc::new(ServiceAccountTokens::generate()),
        }
    }
}

/// What kube's default RBAC (`system:public-info-viewer`) lets `system:unauthenticated` read.
const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];

const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

impl Authentication {
    /// Whether any authenticator is configured (else every request is anonymous).
    pub fn is_enabled(&self) -> bool {
        self.tokens.is_some() || self.client_ca.is_some()
    }

    /// The user making the request, or why it is unauthorized (kube's log message; the
    /// client only sees `Unauthorized`).
    pub fn authenticate(&self, parts: &http::request::Parts) -> Result<UserInfo, String> {
        let mut errors = Vec::new();
        if let (Some(ca), Some(peer)) = (&self.client_ca, parts.extensions.get::<PeerCertificates>()) {
            match ca.authenticate(&peer.0) {
                Ok(Some(user)) => return Ok(user.with_authenticated_group()),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        for token in [bearer_token(&parts.headers), websocket_token(parts)] {
            match token {
                Ok(Some(token)) => match self.token_user(&token) {
                    Some(Ok(user)) => return Ok(user),
                    Some(Err(e)) => errors.push(e),
                    // Without a token file, a token that is no service account's is not
                    // looked at (the kubeconfig's placeholder).
                    None if self.tokens.is_none() => {}
                    None => errors.push("invalid bearer token".into()),
                },
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors.join(", "));
        }
        if self.anonymous || PUBLIC_PATHS.contains(&parts.uri.path()) {
            return Ok(UserInfo::anonymous());
        }
        Err("no credentials and anonymous requests are disabled".into())
    }
}

impl Authentication {
    /// The user a bearer token authenticates as (a TokenReview's question), if any.
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        self.token_user(token)?.ok()
    }

    /// The token file's user of `token`, else the service account it is a token of; `None`
    /// when no authenticator knows it, `Err` for a service account token that is invalid.
    fn token_user(&self, token: &str) -> Option<Result<UserInfo, String>> {
        if let Some(user) = self.tokens.as_ref().and_then(|t| t.user(token)) {
            return Some(Ok(user.clone().with_authenticated_group()));
        }
        let found = self.service_accounts.authenticate(token, &[])?;
        Some(found.map(|(user, _)| user.with_authenticated_group()))
    }
}

/// kube's bearertoken authenticator: `Authorization: Bearer <token>` (scheme in any case; the
/// token is the second space-separated word, and an empty one is no token).
fn bearer_token(headers: &http::HeaderMap) -> Result<Option<String>, String> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = String::from_utf8_lossy(value.as_bytes());
    let parts: Vec<&str> = value.trim().split(' ').collect();
    if parts.len() < 2 || !parts[0].eq_ignore_ascii_case("bearer") || parts[1].is_empty() {
        return Ok(None);
    }
    Ok(Some(parts[1].to_string()))
}

/// kube's WebSocket protocol authenticator: a token in a
/// `base64url.bearer.authorization.k8s.io.<unpadded base64url>` subprotocol of a WebSocket
/// request, which must offer another subprotocol as well.
fn websocket_token(parts: &http::request::Parts) -> Result<Option<String>, String> {
    if !crate::transport::websocket::is_websocket_request(&parts.headers) {
        return Ok(None);
    }
    let mut token = None;
    let mut others = 0;
    for value in parts.headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        for protocol in String::from_utf8_lossy(value.as_bytes()).split(',') {
            let Some(encoded) = protocol.trim().strip_prefix(BEARER_PROTOCOL_PREFIX) else {
                others += 1;
                continue;
            };
            if token.is_some() {
                return Err("multiple base64.bearer.authorization tokens specified".into());
            }
            let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded)
                .map_err(|_| "invalid base64.bearer.authorization token encoding".to_string())?;
            token = Some(String::from_utf8(decoded).map_err(|_| "invalid base64.bearer.authorization token")?);
        }
    }
    match token.filter(|t| !t.is_empty()) {
        Some(_) if others == 0 => Err("missing additional subprotocol".into()),
        token => Ok(token),
    }
}

/// Authenticates a request before it is routed: puts the [`UserInfo`] on it, or answers
/// kube's 401 Status.
pub fn authenticate(config: &Authentication, parts: &mut http::request::Parts) -> Result<(), Box<HttpResponse>> {
    match config.authenticate(parts) {
        Ok(user) => {
            parts.extensions.insert(user);
            Ok(())
        }
        Err(reason) => {
            tracing::info!(path = parts.uri.path(), %reason, "unable to authenticate the request");
            Err(Box::new(response::error(&unauthorized())))
        }
    }
}

/// kube's `apierrors.NewUnauthorized("Unauthorized")`.
pub fn unauthorized() -> ApiError {
    ApiError(Box::new(listwatch_meta::Status {
        kind: "Status".into(),
        api_version: "v1".into(),
        metadata: Default::default(),
        status: Some("Failure".into()),
        message: "Unauthorized".into(),
        reason: "Unauthorized".into(),
        details: None,
        code: 401,
    }))
}

#[cfg(test)]
mod tests;
