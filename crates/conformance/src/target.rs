//! The server under test: where it is, how to authenticate, the namespace the run owns, and
//! whether listwatch's debug API (`/debug/listwatch/*`) may be used to force compaction and
//! cache resets.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use listwatch_client::ExecProvider;

use crate::kubeconfig::{Kubeconfig, KubeconfigError};

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error("server URL {0:?} is not an http:// or https:// URL")]
    BadUrl(String),
    #[error(
        "{0} is an https:// URL but this build has no TLS; rebuild with `--features tls`, or put `kubectl proxy` in front of the server and use its http:// URL"
    )]
    NoTls(String),
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Where and how to reach the server under test.
#[derive(Clone)]
pub struct Target {
    /// `http(s)://host:port`, no trailing slash.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// The kubeconfig's exec credential plugin, when it gives the token instead: run when a
    /// request needs credentials and the kept ones expired, or after a 401.
    pub(crate) exec: Option<Arc<ExecProvider>>,
    /// The namespace the run creates, fills with ConfigMaps and deletes; unique per run.
    pub namespace: String,
    /// Whether `/debug/listwatch/*` is available. Checks that need it (forcing compaction or a
    /// cache reset) report Skipped without it.
    pub debug_api: bool,
    pub(crate) client: reqwest::Client,
    /// The watch-guarantee checks' one observation run, shared by those checks (and by clones
    /// of this target); [`crate::run`] starts every run with an empty one.
    pub(crate) guarantee_observation: crate::checks::guarantees::SharedObservation,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("exec", &self.exec.as_ref().map(|exec| exec.config().command_line()))
            .field("namespace", &self.namespace)
            .field("debug_api", &self.debug_api)
            .finish()
    }
}

impl Target {
    /// A target at `base_url`, with no token, no debug API and a fresh namespace name.
    pub fn new(base_url: &str) -> Result<Target, TargetError> {
        Target::build(Kubeconfig { server: base_url.trim_end_matches('/').to_string(), ..Kubeconfig::default() })
    }

    /// The server, token and TLS material of a kubeconfig's current context.
    pub fn from_kubeconfig(path: &Path) -> Result<Target, TargetError> {
        Target::from_kubeconfig_with_server(path, None)
    }

    /// A kubeconfig's credentials, with `server` (when given) instead of its server URL.
    pub fn from_kubeconfig_with_server(path: &Path, server: Option<&str>) -> Result<Target, TargetError> {
        let mut config = Kubeconfig::load(path)?;
        if let Some(server) = server {
            config.server = server.trim_end_matches('/').to_string();
        }
        Target::build(config)
    }

    /// This target with a fixed bearer token (instead of the kubeconfig's credentials).
    pub fn with_token(mut self, token: impl Into<String>) -> Target {
        self.token = Some(token.into());
        self.exec = None;
        self
    }

    pub fn with_debug_api(mut self, enabled: bool) -> Target {
        self.debug_api = enabled;
        self
    }

    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Target {
        self.namespace = namespace.into();
        self
    }

    fn build(config: Kubeconfig) -> Result<Target, TargetError> {
        check_url(&config.server)?;
        // No overall timeout: watches are long-lived; every read has its own.
        let builder = reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(10));
        let builder = tls(builder, &config)?;
        Ok(Target {
            base_url: config.server,
            token: config.token,
            exec: config.exec.map(|exec| Arc::new(ExecProvider::new(exec))),
            namespace: fresh_namespace(),
            debug_api: false,
            client: builder.build()?,
            guarantee_observation: Default::default(),
        })
    }

    /// Runs the kubeconfig's exec credential plugin now, if there is one, so that a plugin that
    /// fails stops the run before any check (the error names the command and quotes its stderr).
    pub async fn prepare_credentials(&self) -> Result<(), String> {
        match &self.exec {
            Some(exec) => exec.credentials().await.map(|_| ()).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// This target with no observation made yet: each run observes afresh.
    pub(crate) fn for_new_run(&self) -> Target {
        Target { guarantee_observation: Default::default(), ..self.clone() }
    }

    /// The absolute URL of `path_and_query` on the server.
    pub(crate) fn url(&self, path_and_query: &str) -> String {
        format!("{}{}", self.base_url, path_and_query)
    }

    /// `/api/v1/namespaces/<ns>/configmaps`, the collection every check works in.
    pub(crate) fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.namespace)
    }
}

fn check_url(url: &str) -> Result<(), TargetError> {
    if url.starts_with("https://") {
        if cfg!(feature = "tls") {
            return Ok(());
        }
        return Err(TargetError::NoTls(url.to_string()));
    }
    if !url.starts_with("http://") {
        return Err(TargetError::BadUrl(url.to_string()));
    }
    Ok(())
}

#[cfg(feature = "tls")]
fn tls(mut builder: reqwest::ClientBuilder, config: &Kubeconfig) -> Result<reqwest::ClientBuilder, TargetError> {
    builder = builder.use_rustls_tls();
    if let Some(ca) = &config.certificate_authority {
        for certificate in reqwest::Certificate::from_pem_bundle(ca)? {
            builder = builder.add_root_certificate(certificate);
        }
    }
    if config.insecure_skip_tls_verify {
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let Some(identity) = &config.client_identity {
        builder = builder.identity(reqwest::Identity::from_pem(identity)?);
    }
    Ok(builder)
}

#[cfg(not(feature = "tls"))]
fn tls(builder: reqwest::ClientBuilder, _config: &Kubeconfig) -> Result<reqwest::ClientBuilder, TargetError> {
    Ok(builder)
}

/// `lwconf-<time><pid>` in hex: unique per run, a valid DNS label.
fn fresh_namespace() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("lwconf-{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}
