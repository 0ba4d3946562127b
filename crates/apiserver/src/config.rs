//! The server's settings, as `listwatch serve` fills them from its flags.

use std::time::Duration;

use listwatch_storage::faults::Outage;
use listwatch_watchcache::WatchCacheConfig;

use crate::faults::WatchBreaker;

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
    /// The watch caches' settings (window, budgets, list page size).
    pub cache: WatchCacheConfig,
    /// `--min-request-timeout`: watches without `timeoutSeconds` last [this, 2× this).
    pub min_request_timeout: Duration,
    /// `--enable-debug-api`: serve `/debug/listwatch/` (see the debug handler).
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
    /// `--authorization-mode`: who may do what once authenticated.
    pub authorization: crate::authz::attributes::AuthorizationMode,
    /// Create the namespaces kube-apiserver creates at startup (off when storage is to hold
    /// a replayed history, revision for revision).
    pub bootstrap_namespaces: bool,
    /// `--break-watch`: the watch guarantee every stream breaks on purpose from the start (the
    /// debug API can change it later).
    pub break_watch: WatchBreaker,
    /// The switch of the fault-injecting storage `listwatch serve` wraps around the backend
    /// when the debug API is on (`POST /debug/listwatch/storage/outage`); `None` when storage
    /// is not wrapped, and outages cannot be injected.
    pub storage_outage: Option<Outage>,
    /// `--audit-clients`: record and judge every client's requests (the client audit), with
    /// these thresholds; `None` records nothing.
    pub audit_clients: Option<listwatch_simulator::audit::Thresholds>,
    /// `--webhook-service`: where the Services admission webhooks name are reached.
    pub webhook_services: Vec<crate::webhook_client::ServiceUrl>,
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
            authorization: Default::default(),
            break_watch: WatchBreaker::None,
            storage_outage: None,
            bootstrap_namespaces: true,
            audit_clients: None,
            webhook_services: Vec::new(),
        }
    }
}

/// The stack a runtime thread serving requests needs: bodies nest up to 10,000 levels (as
/// kube's decoder allows, see `body_in::from_json`), and dropping, cloning or encoding such a
/// value recurses once per level, past tokio's default 2 MiB. Only the pages a deep request
/// touches are used.
pub const REQUEST_THREAD_STACK_BYTES: usize = 16 << 20;
