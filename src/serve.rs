//! `listwatch serve`: opens storage, starts the API server, writes a kubeconfig for it, and
//! shuts down cleanly on Ctrl-C or SIGTERM.
//!
//! Authentication is off unless asked for (`--token-auth-file`, `--client-ca-file` or
//! `--client-cert-auth`, `--anonymous-auth`); the kubeconfig's user then carries what gets it
//! in: a client certificate when the CA's key is at hand, else the token file's first token.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use listwatch_apiserver::authn::{Authentication, ClientCa, ServiceAccountTokens, TokenFile};
use listwatch_apiserver::listener::{self, ListenAddr};
use listwatch_apiserver::{AuthorizationMode, ServerConfig, WatchBreaker};
use listwatch_storage::Storage;
use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::faults::{FaultyStorage, Outage};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};

use crate::kubeconfig::{self, Credentials, home};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, as Go takes it: host:port, :port (every interface), `[::1]:port`,
    /// localhost:port; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: ListenAddr,
    /// Use these etcd endpoints instead of the embedded store (comma-separated).
    #[arg(long, value_delimiter = ',')]
    etcd: Vec<String>,
    /// Root of every key in storage (kube-apiserver's --etcd-prefix).
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// Where the embedded store keeps its data [default: $XDG_DATA_HOME/listwatch or ~/.local/share/listwatch].
    #[arg(long, conflicts_with_all = ["ephemeral", "etcd"])]
    data_dir: Option<PathBuf>,
    /// Keep the embedded store in memory only.
    #[arg(long, conflicts_with = "etcd")]
    ephemeral: bool,
    /// Serve a history recorded by `listwatch simulate --record FILE`: an empty in-memory store
    /// into which the recorded changes are written again, at their recorded revisions.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["etcd", "data_dir"])]
    replay: Option<PathBuf>,
    /// How much faster than recorded the replay goes (2 = twice as fast).
    #[arg(long, default_value_t = 1.0, requires = "replay")]
    replay_speed: f64,
    /// Write a kubeconfig for this server here [default: ~/.kube/listwatch-config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Once serving, write `{"url": ..., "kubeconfig": ..., "pid": ...}` here (atomically), for
    /// a test fixture that started the server with `--addr 127.0.0.1:0` and waits for the file.
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// Enable /debug/listwatch/* (compact now, drop watchers, reset a cache, inject 429s, storage
    /// outages and faults on watch streams, stream storage's history).
    #[arg(long)]
    enable_debug_api: bool,
    /// Judge every client from what it asks and is sent (the client audit): findings at
    /// `GET /debug/listwatch/clients` and per client and rule in `/metrics`.
    #[arg(long)]
    audit_clients: bool,
    /// Serve reads and watches from watch caches.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    watch_cache: bool,
    /// Per-resource watch cache switches, e.g. `events=true,pods=false` (plural or plural.group).
    #[arg(long, value_delimiter = ',')]
    watch_cache_resources: Vec<String>,
    /// Keep at least this much watch history in each cache.
    #[arg(long, default_value = "75s", value_parser = humantime::parse_duration)]
    watch_cache_window: Duration,
    /// Never keep more events than this in a cache.
    #[arg(long, default_value_t = 102_400)]
    watch_cache_max_events: usize,
    /// Capacity of each cache watcher's queue.
    #[arg(long, default_value_t = 100)]
    watcher_queue: usize,
    /// How often a watcher that asked for bookmarks gets one.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    bookmark_interval: Duration,
    /// Watches without timeoutSeconds last a random time in [this, 2× this).
    #[arg(long, default_value = "1800s", value_parser = humantime::parse_duration)]
    min_request_timeout: Duration,
    /// Compact storage to the revision seen one interval earlier (0 disables).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    compaction_interval: Duration,
    /// Serve HTTPS with this certificate (PEM; HTTP/2 and HTTP/1.1 by ALPN).
    #[arg(long, requires = "tls_private_key_file", conflicts_with = "tls_generate")]
    tls_cert_file: Option<PathBuf>,
    /// The private key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// The CA to put in the kubeconfig for --tls-cert-file [default: the certificate itself].
    #[arg(long, requires = "tls_cert_file")]
    tls_ca_file: Option<PathBuf>,
    /// Serve HTTPS with a generated CA and server certificate (kept in the data dir, or next to
    /// the kubeconfig); the kubeconfig trusts that CA.
    #[arg(long)]
    tls_generate: bool,
    /// Streams a client may open on one HTTP/2 connection.
    #[arg(long, default_value_t = 1000)]
    http2_max_streams_per_connection: u32,
    /// Progress notification period of the embedded store (etcd's is set on etcd).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    progress_notify_interval: Duration,
    /// Read-only requests served at once; more are answered 429 (0: no limit; watches are
    /// not counted).
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// Mutating requests served at once; more are answered 429 (0: no limit).
    #[arg(long, default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// How long a client may take to send its request headers, and an idle keep-alive
    /// connection may wait for its next request (0 waits forever).
    #[arg(long, default_value = "32s", value_parser = humantime::parse_duration)]
    read_header_timeout: Duration,
    /// Authenticate bearer tokens from this CSV file (kube-apiserver's format:
    /// token,user,uid,"group1,group2"); the kubeconfig gets its first token.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Authenticate client certificates signed by this CA bundle (user CN, groups O); needs HTTPS.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// The private key of --client-ca-file: the kubeconfig's user gets a certificate it signs.
    #[arg(long, requires = "client_ca_file")]
    client_ca_key_file: Option<PathBuf>,
    /// With --tls-generate: authenticate client certificates signed by the generated CA, and give
    /// the kubeconfig's user one (CN listwatch-admin, O system:masters).
    #[arg(long, requires = "tls_generate", conflicts_with = "client_ca_file")]
    client_cert_auth: bool,
    /// Sign service account tokens (`kubectl create token`) with this key (PKCS#8 PEM, ECDSA
    /// P-256) instead of one generated at start, so tokens outlive a restart.
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// Also accept service account tokens signed by the keys in these files (PEM public keys,
    /// ECDSA P-256); repeatable.
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// Who may do what: AlwaysAllow (kube-apiserver's default) or RBAC. With RBAC and no
    /// authenticator given, serve adds --tls-generate --client-cert-auth, so the kubeconfig's
    /// user (listwatch-admin, in system:masters) still gets in.
    #[arg(long, default_value = "AlwaysAllow", value_parser = parse_authorization_mode)]
    authorization_mode: AuthorizationMode,
    /// Where an admission webhook's Service runs, as NAMESPACE/NAME=https://HOST:PORT
    /// (repeatable): nothing runs in-cluster, so a webhook configuration naming a Service is
    /// called at this address, its certificate checked for NAME.NAMESPACE.svc as kube checks it.
    #[arg(long, value_name = "NAMESPACE/NAME=https://HOST:PORT")]
    webhook_service: Vec<listwatch_apiserver::WebhookServiceUrl>,
    /// Serve requests that bring no credentials as system:anonymous; when false they get 401,
    /// except /healthz, /livez, /readyz and /version.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,
    /// Also add the listwatch cluster, user and context to $KUBECONFIG's first file or
    /// ~/.kube/config, as kind does (the current context changes only if it had none).
    #[arg(long)]
    kubeconfig_merge: bool,
    /// Break one watch guarantee on purpose (none, skip-event, duplicate-event, bookmark-ahead,
    /// alter-object, spurious-expired), to show that a checker catches it. Hidden: it is for
    /// testing the watch simulator, never for serving clients.
    #[arg(long, hide = true, default_value = "none")]
    break_watch: WatchBreaker,
    /// Controllers to run in-process against this server, as kube-controller-manager does:
    /// `all`, `none` (a bare API server), or some of deployment, replicaset, pod-lifecycle
    /// (the stand-in kubelet that makes pods Running and Ready), nodes (the fake nodes of
    /// --nodes), scheduler, node-lifecycle.
    #[arg(long, default_value = "all")]
    controllers: listwatch_controllers::Selection,
    /// How long a new pod stays Pending before the stand-in kubelet reports it Running: the
    /// default stages' delays are scaled to it (pod-ready waits this, plus up to half again).
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pod_start_delay: Duration,
    /// Stage files (kwok's `kind: Stage`, YAML) pods move through instead of the default
    /// stages; `default` names those, to add to them (`--stages default,examples/stages/crashloop.yaml`).
    /// A file that does not read as stages stops the server before it listens.
    #[arg(long, value_name = "FILE", value_delimiter = ',')]
    stages: Vec<PathBuf>,
    /// Seed of the stages' jitter and choices, to repeat a run [default: from the clock].
    #[arg(long)]
    stage_seed: Option<u64>,
    /// Fake nodes to register (node-0 .. node-N-1) and keep alive with Lease renewals and
    /// status heartbeats, as kwok's; pods then run only once the scheduler binds them. One by
    /// default, as a kwok or kind cluster has (`kubectl get nodes` shows node-0); 0 for none,
    /// when unbound pods run. A node annotated listwatch.dev/heartbeats=stopped stops renewing,
    /// as if it went away.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// How long a node's Lease may go unrenewed before the node lifecycle controller marks it
    /// Ready=Unknown and taints it unreachable (kube-controller-manager's flag).
    #[arg(long, default_value = "40s", value_parser = humantime::parse_duration)]
    node_monitor_grace_period: Duration,
    /// How often the node lifecycle controller checks each node (kube-controller-manager's flag).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    node_monitor_period: Duration,
    /// How long a pod with no toleration of its node's unreachable or not-ready taint stays
    /// before it is evicted (kube's DefaultTolerationSeconds, 300).
    #[arg(long, default_value_t = 300)]
    default_unreachable_toleration_seconds: u64,
}

fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("listwatch");
    }
    home().join(".local/share/listwatch")
}

fn server_config(args: &ServeArgs, advertise: String) -> anyhow::Result<ServerConfig> {
    let mut overrides = Vec::new();
    for entry in &args.watch_cache_resources {
        let (name, on) = entry
            .split_once('=')
            .with_context(|| format!("--watch-cache-resources wants name=true|false, got {entry:?}"))?;
        let on: bool = on.parse().with_context(|| format!("--watch-cache-resources: {on:?} is not true or false"))?;
        overrides.push((name.to_string(), on));
    }
    let mut config = ServerConfig {
        storage_root: args.etcd_prefix.clone(),
        watch_cache: args.watch_cache,
        watch_cache_overrides: overrides,
        min_request_timeout: args.min_request_timeout,
        enable_debug_api: args.enable_debug_api,
        compaction_interval: args.compaction_interval,
        advertise_address: advertise,
        http2_max_streams_per_connection: args.http2_max_streams_per_connection,
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        read_header_timeout: (!args.read_header_timeout.is_zero()).then_some(args.read_header_timeout),
        break_watch: args.break_watch,
        audit_clients: args.audit_clients.then(Default::default),
        ..Default::default()
    };
    config.cache.window = args.watch_cache_window;
    config.cache.max_events = args.watch_cache_max_events;
    config.cache.watcher_queue = args.watcher_queue;
    config.cache.bookmark_interval = args.bookmark_interval;
    Ok(config)
}

/// The opened storage, what to call it in logs, and the embedded store (to close on exit).
struct Opened {
    storage: Arc<dyn Storage>,
    described: String,
    memory: Option<MemoryStore>,
}

async fn open_storage(args: &ServeArgs) -> anyhow::Result<Opened> {
    if !args.etcd.is_empty() {
        let store = EtcdStore::connect(&args.etcd, EtcdOptions::default()).await.context("connecting to etcd")?;
        return Ok(Opened {
            storage: Arc::new(store),
            described: format!("etcd at {}", args.etcd.join(",")),
            memory: None,
        });
    }
    let progress_notify_interval = args.progress_notify_interval;
    let (data_dir, described) = if args.ephemeral || args.replay.is_some() {
        (None, "the embedded store, in memory only".to_string())
    } else {
        let dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
        let described = format!("the embedded store in {}", dir.display());
        (Some(dir), described)
    };
    let store = MemoryStore::open(MemoryOptions { data_dir: data_dir.clone(), progress_notify_interval })
        .with_context(|| format!("opening {described}"))?;
    Ok(Opened { storage: Arc::new(store.clone()), described, memory: Some(store) })
}

/// HTTPS and authentication, and what the kubeconfig needs to get through them.
struct Security {
    tls: Option<Arc<listwatch_apiserver::tls::ServerConfig>>,
    authentication: Authentication,
    /// The CA the kubeconfig trusts for the server.
    server_ca: Option<PathBuf>,
    credentials: Credentials,
}

/// The user the kubeconfig's client certificate names (kubeadm's admin is in the same group).
const ADMIN_USER: (&str, &str) = ("listwatch-admin", "system:masters");

/// kube-apiserver's `--authorization-mode` values that listwatch has (a list is refused:
/// Node and Webhook have nothing to ask here).
fn parse_authorization_mode(value: &str) -> Result<AuthorizationMode, String> {
    match value {
        "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
        "RBAC" => Ok(AuthorizationMode::Rbac),
        other => Err(format!("{other:?}: listwatch authorizes with AlwaysAllow or RBAC")),
    }
}

fn security(args: &ServeArgs, kubeconfig: &std::path::Path) -> anyhow::Result<Security> {
    use listwatch_apiserver::tls;
    // RBAC refuses anonymous requests nearly everything: without an authenticator of the
    // user's, the kubeconfig gets a client certificate of the generated CA.
    let admin_certificate = args.authorization_mode == AuthorizationMode::Rbac
        && args.token_auth_file.is_none()
        && args.client_ca_file.is_none()
        && args.tls_cert_file.is_none();
    let tls_generate = args.tls_generate || admin_certificate;
    let client_cert_auth = args.client_cert_auth || admin_certificate;
    // The server certificate, and the generated CA's files if any.
    let (server_files, generated) = if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_private_key_file) {
        let ca = args.tls_ca_file.clone().unwrap_or_else(|| cert.clone());
        (Some((cert.clone(), key.clone(), ca)), None)
    } else if tls_generate {
        let dir = match (&args.data_dir, args.ephemeral || !args.etcd.is_empty()) {
            (Some(dir), _) => dir.join("pki"),
            (None, false) => default_data_dir().join("pki"),
            (None, true) => kubeconfig.parent().unwrap_or(std::path::Path::new(".")).join("listwatch-pki"),
        };
        let files = tls::generate(&dir, &[args.addr.ip().to_string()])?;
        (Some((files.cert.clone(), files.key.clone(), files.ca_cert.clone())), Some(files))
    } else {
        (None, None)
    };
    // The client CA, and its key when the kubeconfig's user should get a certificate.
    let (client_ca, signer) = match (&args.client_ca_file, &generated) {
        (Some(ca), _) => (Some(ca.clone()), args.client_ca_key_file.clone().map(|key| (ca.clone(), key))),
        (None, Some(files)) if client_cert_auth => {
            (Some(files.ca_cert.clone()), Some((files.ca_cert.clone(), files.ca_key.clone())))
        }
        _ => (None, None),
    };
    if client_ca.is_some() && server_files.is_none() {
        anyhow::bail!("--client-ca-file needs HTTPS: add --tls-generate or --tls-cert-file");
    }
    let client_ca =
        client_ca.map(|path| ClientCa::load(&path).map(Arc::new)).transpose().map_err(anyhow::Error::msg)?;
    let tokens = args
        .token_auth_file
        .as_deref()
        .map(|path| TokenFile::load(path).map(Arc::new))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let verify_keys: Vec<&std::path::Path> = args.service_account_key_file.iter().map(PathBuf::as_path).collect();
    let service_accounts = ServiceAccountTokens::load(args.service_account_signing_key_file.as_deref(), &verify_keys)
        .map_err(anyhow::Error::msg)?;
    let authentication = Authentication {
        anonymous: args.anonymous_auth,
        tokens,
        client_ca,
        service_accounts: Arc::new(service_accounts),
    };
    if !authentication.anonymous && !authentication.is_enabled() {
        // kube-apiserver would serve everyone without a user; refusing everyone is no better.
        anyhow::bail!(
            "--anonymous-auth=false needs an authenticator: --token-auth-file, --client-ca-file or --client-cert-auth"
        );
    }
    if authentication.tokens.is_some() && server_files.is_none() {
        tracing::warn!(
            "kubectl and client-go send bearer tokens only over HTTPS: over plain HTTP their requests are anonymous (add --tls-generate)"
        );
    }
    let tls = server_files
        .as_ref()
        .map(|(cert, key, _)| tls::server_config(cert, key, authentication.client_ca.as_deref()))
        .transpose()?;
    let credentials = match (&signer, &authentication.tokens) {
        (Some((ca, key)), _) => {
            let (cert, key) = tls::client_certificate(ca, key, ADMIN_USER.0, ADMIN_USER.1)?;
            Credentials::ClientCertificate { cert, key }
        }
        (None, Some(tokens)) if !tokens.is_empty() => {
            Credentials::Token(tokens.first_token().unwrap_or_default().to_string())
        }
        // No token is looked at: a placeholder, without which kubectl may prompt over HTTPS.
        _ => Credentials::Token("listwatch".into()),
    };
    Ok(Security { tls, authentication, server_ca: server_files.map(|(_, _, ca)| ca), credentials })
}

/// Writes the kubeconfig (and merges it into the user's with `--kubeconfig-merge`).
fn write_kubeconfigs(args: &ServeArgs, path: &std::path::Path, server: &str, security: Security) -> anyhow::Result<()> {
    let ca_pem = match &security.server_ca {
        Some(ca) => Some(std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?),
        None => None,
    };
    let entry = kubeconfig::Entry { server: server.to_string(), ca_pem, credentials: security.credentials };
    kubeconfig::write(path, &entry)?;
    if args.kubeconfig_merge {
        let target = kubeconfig::merge_target();
        kubeconfig::merge(&target, &entry)?;
        say(format_args!("context \"{}\" merged into {} (kubectl --context {0})", kubeconfig::NAME, target.display()));
    }
    Ok(())
}

/// The ready file: written to a temporary name beside it, then renamed, so a reader that sees
/// the file sees all of it.
fn write_ready_file(path: &std::path::Path, server: &str, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let ready = serde_json::json!({"url": server, "kubeconfig": kubeconfig, "pid": std::process::id()});
    let partial = path.with_extension("partial");
    std::fs::write(&partial, format!("{ready}\n")).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Every watch holds a socket: the soft open-file limit goes up to the hard one.
fn raise_open_file_limit() {
    match listener::raise_open_file_limit() {
        Ok(Some((from, to))) => tracing::info!(from, to, "raised the open-file limit (RLIMIT_NOFILE)"),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit (RLIMIT_NOFILE)"),
    }
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    raise_open_file_limit();
    // Storage first: the embedded store locks its data dir before anything else is done there.
    // Stage files are read before anything else happens, so a bad one costs nothing.
    let stages = load_stages(&args)?;
    let Opened { storage, described, memory } = open_storage(&args).await?;
    let listening = listener::bind(&args.addr).with_context(|| format!("listening on {}", args.addr))?;
    let (listener, addr) = (listening.listener, listening.reachable);
    let kubeconfig = args.kubeconfig.clone().unwrap_or_else(kubeconfig::default_path);
    let mut security = security(&args, &kubeconfig)?;
    let tls = security.tls.take();
    let server = format!("{}://{addr}", if tls.is_some() { "https" } else { "http" });
    let mut config = server_config(&args, addr.to_string())?;
    config.authentication = security.authentication.clone();
    config.authorization = args.authorization_mode;
    config.webhook_services = args.webhook_service.clone();
    // With the debug API on, storage can be made to fail on purpose (a storage outage).
    let storage = if args.enable_debug_api {
        let outage = Outage::default();
        config.storage_outage = Some(outage.clone());
        Arc::new(FaultyStorage::new(storage, outage)) as Arc<dyn Storage>
    } else {
        storage
    };
    let replay = match &args.replay {
        Some(path) => {
            // The replayed history holds the namespaces; its revisions start at 1.
            config.bootstrap_namespaces = false;
            Some(listwatch_runner::replay::read(path)?)
        }
        None => None,
    };
    let state = listwatch_apiserver::start(config, storage).await.context("starting the API server")?;
    if let Some(changes) = replay {
        tokio::spawn(listwatch_runner::replay::run(state.clone(), changes, args.replay_speed));
    }
    write_kubeconfigs(&args, &kubeconfig, &server, security)?;
    let serving = tokio::spawn(listwatch_apiserver::serve(listener, state.clone(), tls, shutdown_signal()));
    let ready = state.wait_ready(Duration::from_secs(60)).await;
    tracing::info!(
        ready,
        elapsed_ms = started.elapsed().as_millis() as u64,
        listening = %listening.local,
        "serving the Kubernetes API on {server} from {described}"
    );
    say(format_args!("listwatch is serving on {server}; kubeconfig written to {}", kubeconfig.display()));
    say(format_args!("try: kubectl --kubeconfig {} get pods", kubeconfig.display()));
    if let Some(path) = &args.ready_file {
        write_ready_file(path, &server, &kubeconfig)?;
    }
    let controllers = start_controllers(&args, &kubeconfig, stages)?;
    serving.await?;
    if let Some(controllers) = controllers {
        controllers.stop();
    }
    if let Some(memory) = memory {
        memory.close();
    }
    tracing::info!("stopped");
    Ok(())
}

/// Starts the chosen controllers as clients of this server, through the kubeconfig just
/// written (so they pass its TLS and authentication as any client would).
fn start_controllers(
    args: &ServeArgs,
    kubeconfig: &std::path::Path,
    stages: Option<Arc<listwatch_controllers::stages::StageSet>>,
) -> anyhow::Result<Option<listwatch_controllers::Running>> {
    if args.controllers.is_empty() {
        return Ok(None);
    }
    let config = listwatch_client::Config::from_kubeconfig(kubeconfig)
        .with_context(|| format!("reading {} for the controllers", kubeconfig.display()))?;
    let client = listwatch_client::Client::new(config).context("a client for the controllers")?;
    let options = listwatch_controllers::Options {
        pod_start_delay: args.pod_start_delay,
        stages,
        stage_seed: args.stage_seed,
        nodes: args.nodes,
        node_lifecycle: listwatch_controllers::node_lifecycle::LifecycleOptions {
            monitor_period: args.node_monitor_period,
            grace_period: args.node_monitor_grace_period,
            default_toleration: Duration::from_secs(args.default_unreachable_toleration_seconds),
        },
        ..Default::default()
    };
    let running = listwatch_controllers::start(client, &args.controllers, &options)?;
    tracing::info!(controllers = %args.controllers, "controllers started");
    Ok(Some(running))
}

/// The stages `--stages` names, if it names any (the controllers use the default set if not).
fn load_stages(args: &ServeArgs) -> anyhow::Result<Option<Arc<listwatch_controllers::stages::StageSet>>> {
    if args.stages.is_empty() {
        return Ok(None);
    }
    let set = listwatch_controllers::stages::StageSet::load(&args.stages, args.pod_start_delay)
        .map_err(|e| anyhow::anyhow!("--stages: {e}"))?;
    tracing::info!(stages = set.stages().len(), "stages loaded");
    Ok(Some(Arc::new(set)))
}

/// A line for the person who started the server. Unlike `eprintln!`, a closed stderr (the
/// terminal went away, a supervisor stopped reading) does not panic a running server.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
