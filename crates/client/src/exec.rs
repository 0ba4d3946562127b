//! Exec credential plugins: the `users[].user.exec` entry of a kubeconfig, as EKS
//! (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`) and AKS (`kubelogin`) write it. This is
//! client-go's `plugin/pkg/client/auth/exec` protocol, `client.authentication.k8s.io/v1` and
//! `v1beta1`:
//!
//! * the command runs with the kubeconfig's `args`, this process's environment plus the entry's
//!   `env`, and `KUBERNETES_EXEC_INFO`: an `ExecCredential` whose `spec.interactive` is false (a
//!   library has no terminal to offer, so `interactiveMode: Always` is refused) and, when the
//!   entry says `provideClusterInfo: true`, whose `spec.cluster` describes the cluster;
//! * it prints an `ExecCredential` on stdout whose `status` holds a bearer `token`, or a client
//!   certificate and key (`clientCertificateData`, `clientKeyData`, PEM), and optionally an
//!   `expirationTimestamp`;
//! * the credentials are kept until that time (for ever without one) or until the server answers
//!   401 to a request that used them; then the command runs again.
//!
//! A failing command is an error naming the command, its exit status and its stderr. A client
//! certificate from a plugin is used by connections opened after the plugin ran; connections
//! already open keep the certificate they were opened with.

mod credential;
mod run;

use std::sync::Arc;
use std::time::SystemTime;

use crate::error::Error;

pub use credential::ExecCredentials;

/// The `apiVersion`s of the protocol this client speaks.
pub const SUPPORTED_API_VERSIONS: [&str; 2] =
    ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];

/// A kubeconfig's `exec` entry, with the cluster it authenticates to when the plugin asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1`: the version of
    /// the `ExecCredential` sent and expected back.
    pub api_version: String,
    /// The program: a name looked up in `PATH`, or a path (a relative one with a `/` is resolved
    /// against the kubeconfig's directory, as client-go does).
    pub command: String,
    /// The program's arguments.
    pub args: Vec<String>,
    /// Added to this process's environment, in order.
    pub env: Vec<(String, String)>,
    /// Whether the plugin may read a terminal (`interactiveMode`).
    pub interactive_mode: InteractiveMode,
    /// Printed when the command cannot be found (how to install it).
    pub install_hint: Option<String>,
    /// Sent as `spec.cluster` when the entry has `provideClusterInfo: true`.
    pub cluster: Option<ExecCluster>,
}

/// Whether the plugin may talk to a person through stdin (`interactiveMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InteractiveMode {
    /// Never: the plugin must not read stdin.
    Never,
    /// If a terminal is available (this client never has one, so: never).
    #[default]
    IfAvailable,
    /// Only with a terminal: refused by this client.
    Always,
}

/// The cluster, as `KUBERNETES_EXEC_INFO`'s `spec.cluster` describes it to the plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecCluster {
    /// The API server's URL.
    pub server: String,
    /// The name the server's certificate is checked against, when it is not the URL's host.
    pub tls_server_name: Option<String>,
    /// Whether the kubeconfig turns certificate verification off for this cluster.
    pub insecure_skip_tls_verify: bool,
    /// PEM bytes (sent base64-encoded).
    pub certificate_authority_data: Option<Vec<u8>>,
    /// The proxy the cluster is reached through.
    pub proxy_url: Option<String>,
    /// Whether responses are asked for uncompressed.
    pub disable_compression: bool,
    /// The cluster's `client.authentication.k8s.io/exec` extension, if any.
    pub config: Option<serde_json::Value>,
}

impl ExecConfig {
    /// The command and its arguments, for messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str()).chain(self.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    }
}

/// Runs an [`ExecConfig`]'s plugin when credentials are needed, and keeps what it returned until
/// the credentials expire or a server refuses them. Shared by every request of a
/// [`Client`](crate::Client); cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct ExecProvider {
    config: ExecConfig,
    cached: parking_lot::Mutex<Option<Arc<ExecCredentials>>>,
    /// Held while the plugin runs, so concurrent requests wait for one run instead of starting
    /// their own.
    running: tokio::sync::Mutex<()>,
}

impl ExecProvider {
    /// A provider for `config`; nothing runs until credentials are asked for.
    pub fn new(config: ExecConfig) -> ExecProvider {
        ExecProvider { config, cached: parking_lot::Mutex::new(None), running: tokio::sync::Mutex::new(()) }
    }

    /// The plugin's configuration.
    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// Credentials that have not expired: the kept ones, or fresh ones from running the plugin.
    pub async fn credentials(&self) -> Result<Arc<ExecCredentials>, Error> {
        if let Some(kept) = self.unexpired() {
            return Ok(kept);
        }
        let _running = self.running.lock().await;
        // Another request may have run the plugin while this one waited.
        if let Some(kept) = self.unexpired() {
            return Ok(kept);
        }
        let fresh = Arc::new(run::run(&self.config).await?);
        *self.cached.lock() = Some(fresh.clone());
        Ok(fresh)
    }

    /// The server refused a request made with `used` (401): forget them, unless they were
    /// already replaced, so the next request runs the plugin again.
    pub fn refused(&self, used: &Arc<ExecCredentials>) {
        let mut cached = self.cached.lock();
        if cached.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, used)) {
            *cached = None;
        }
    }

    /// The kept credentials, expired or not (for the TLS handshake, which cannot wait for the
    /// plugin; requests refresh them before they connect).
    pub(crate) fn kept(&self) -> Option<Arc<ExecCredentials>> {
        self.cached.lock().clone()
    }

    fn unexpired(&self) -> Option<Arc<ExecCredentials>> {
        let kept = self.cached.lock().clone()?;
        let expired = kept.expires_at.is_some_and(|at| SystemTime::now() > at);
        (!expired).then_some(kept)
    }
}
