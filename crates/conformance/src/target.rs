//! The server under test: where it is, how to authenticate, how to check its TLS certificate
//! (`tls.rs`), the namespace the run owns, and whether listwatch's debug API
//! (`/debug/listwatch/*`) may be used to force compaction and cache resets.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use listwatch_client::ExecProvider;

use crate::kubeconfig::{Kubeconfig, KubeconfigError};
use crate::resource::Resource;
use crate::tls::{Tls, TlsOptions};

/// Why a target cannot be reached as given.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The kubeconfig could not be read or used.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    /// The server URL is neither `http://` nor `https://`.
    #[error("server URL {0:?} is not an http:// or https:// URL")]
    BadUrl(String),
    /// The TLS options or material are unusable.
    #[error("TLS: {0}")]
    Tls(String),
    /// The HTTP client could not be built.
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
    /// The namespace the run creates, fills with objects of [`Target::resource`] and
    /// deletes; unique per run.
    pub namespace: String,
    /// The resource every check works on: ConfigMaps, or the suite's own custom resource.
    pub resource: Resource,
    /// With the custom resource: whether the run deletes its CRD at the end (it is left in
    /// place by default, for the next run and for concurrent ones).
    pub delete_crd: bool,
    /// Whether `/debug/listwatch/*` is available. Checks that need it (forcing compaction or a
    /// cache reset) report Skipped without it.
    pub debug_api: bool,
    pub(crate) client: reqwest::Client,
    /// The kubeconfig's part, kept to rebuild the client with other [`TlsOptions`].
    kubeconfig: Kubeconfig,
    /// The TLS setup, for an https target.
    pub(crate) tls: Option<Tls>,
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
            .field("resource", &self.resource)
            .finish()
    }
}

impl Target {
    /// A target at `base_url`, with no token, no debug API and a fresh namespace name; an https
    /// server's certificate is verified against the public roots (see [`Target::with_tls`]).
    pub fn new(base_url: &str) -> Result<Target, TargetError> {
        let kubeconfig = Kubeconfig { server: base_url.trim_end_matches('/').to_string(), ..Kubeconfig::default() };
        Target::build(kubeconfig, &TlsOptions::default())
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
        Target::build(config, &TlsOptions::default())
    }

    /// This target with the command line's TLS options (a CA to trust, or no verification).
    pub fn with_tls(self, options: &TlsOptions) -> Result<Target, TargetError> {
        let (client, tls) = connect(&self.kubeconfig, options, self.exec.clone())?;
        Ok(Target { client, tls, ..self })
    }

    /// For an https target, what its certificate is verified against (or that it is not).
    pub fn tls_description(&self) -> Option<&str> {
        self.tls.as_ref().map(|tls| tls.description.as_str())
    }

    /// This target with a fixed bearer token (instead of the kubeconfig's credentials).
    pub fn with_token(mut self, token: impl Into<String>) -> Target {
        self.token = Some(token.into());
        self.exec = None;
        self
    }

    /// This target with listwatch's debug API used (or not).
    pub fn with_debug_api(mut self, enabled: bool) -> Target {
        self.debug_api = enabled;
        self
    }

    /// This target with the checks working on `resource` (ConfigMaps by default).
    pub fn with_resource(mut self, resource: Resource) -> Target {
        self.resource = resource;
        self
    }

    /// This target deleting the custom resource's CRD after the run (or leaving it).
    pub fn with_crd_deleted(mut self, delete: bool) -> Target {
        self.delete_crd = delete;
        self
    }

    /// This target with `namespace` as the run's namespace instead of a fresh name.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Target {
        self.namespace = namespace.into();
        self
    }

    fn build(config: Kubeconfig, options: &TlsOptions) -> Result<Target, TargetError> {
        let exec = config.exec.clone().map(|exec| Arc::new(ExecProvider::new(exec)));
        let (client, tls) = connect(&config, options, exec.clone())?;
        Ok(Target {
            base_url: config.server.clone(),
            token: config.token.clone(),
            exec,
            namespace: fresh_namespace(),
            debug_api: false,
            resource: Resource::default(),
            delete_crd: false,
            client,
            kubeconfig: config,
            tls,
            guarantee_observation: Default::default(),
        })
    }

    /// Makes sure the run can start: runs the kubeconfig's exec credential plugin, if there is
    /// one (the error names the command and quotes its stderr), and reaches the server (any HTTP
    /// answer will do; a refused connection or a failed TLS handshake will not), so that neither
    /// shows up as every check failing.
    pub async fn preflight(&self) -> Result<(), String> {
        if let Some(exec) = &self.exec {
            exec.credentials().await.map_err(|e| e.to_string())?;
        }
        let (request, _) = self
            .request_accepting(reqwest::Method::GET, "/version", "application/json")
            .await
            .map_err(|failure| failure.describe())?;
        match tokio::time::timeout(crate::http::REQUEST_TIMEOUT, request.send()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                let hint = if self.tls.is_some() {
                    " (to trust the server's CA give --certificate-authority PATH or a kubeconfig that has it; \
                     --insecure-skip-tls-verify skips verification)"
                } else {
                    ""
                };
                Err(format!("cannot reach {}: {}{hint}", self.base_url, crate::http::error_chain(&e)))
            }
            Err(_) => {
                Err(format!("{} did not answer within {} s", self.base_url, crate::http::REQUEST_TIMEOUT.as_secs()))
            }
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

    /// The collection every check works in: the resource's in the run's namespace.
    pub(crate) fn collection(&self) -> String {
        self.resource.collection(&self.namespace)
    }
}

/// The HTTP client for `config`'s server, and its TLS setup when it is an https one.
fn connect(
    config: &Kubeconfig,
    options: &TlsOptions,
    exec: Option<Arc<ExecProvider>>,
) -> Result<(reqwest::Client, Option<Tls>), TargetError> {
    let https = match &config.server {
        url if url.starts_with("https://") => true,
        url if url.starts_with("http://") => false,
        url => return Err(TargetError::BadUrl(url.clone())),
    };
    // No overall timeout: watches are long-lived; every read has its own.
    let mut builder = reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(10));
    let tls = if https { Some(crate::tls::configure(&config.tls, options, exec)?) } else { None };
    if let Some(tls) = &tls {
        // As Go's client: h2 preferred by ALPN, HTTP/1.1 else.
        builder = builder.use_preconfigured_tls(tls.offering(&[b"h2", b"http/1.1"]));
    }
    Ok((builder.build()?, tls))
}

/// `lwconf-<time><pid>` in hex: unique per run, a valid DNS label.
fn fresh_namespace() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("lwconf-{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}
