//! `listwatch serve`: opens storage, starts the API server, writes a kubeconfig for it, and
//! shuts down cleanly on Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use listwatch_apiserver::listener::{self, ListenAddr};
use listwatch_apiserver::{ApiState, ServerConfig};
use listwatch_storage::Storage;
use listwatch_storage::etcd::{EtcdOptions, EtcdStore};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, as Go takes it: host:port, :port (every interface), [::1]:port,
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
    /// Write a kubeconfig for this server here [default: ~/.kube/listwatch-config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Enable /debug/listwatch/* (compact now, drop watchers, reset a cache, inject 429s).
    #[arg(long)]
    enable_debug_api: bool,
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
}

fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("listwatch");
    }
    home().join(".local/share/listwatch")
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."))
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
    let (data_dir, described) = if args.ephemeral {
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

/// Writes the kubeconfig. The user carries a placeholder bearer token: listwatch does not
/// authenticate yet (any token is accepted), and without one kubectl prompts for a username
/// over HTTPS.
fn write_kubeconfig(path: &std::path::Path, server: &str, ca: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let ca = match ca {
        Some(ca) => format!("    certificate-authority: {}\n", std::fs::canonicalize(ca)?.display()),
        None => String::new(),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: listwatch\n  cluster:\n    server: {server}\n{ca}contexts:\n- name: listwatch\n  context:\n    cluster: listwatch\n    user: listwatch\n    namespace: default\ncurrent-context: listwatch\nusers:\n- name: listwatch\n  user:\n    token: listwatch\n"
    );
    std::fs::write(path, text).with_context(|| format!("writing the kubeconfig {}", path.display()))
}

/// The TLS configuration, if any, and the CA file the kubeconfig should trust.
fn tls_config(
    args: &ServeArgs,
    kubeconfig: &std::path::Path,
) -> anyhow::Result<(Option<Arc<listwatch_apiserver::tls::ServerConfig>>, Option<PathBuf>)> {
    use listwatch_apiserver::tls;
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_private_key_file) {
        let ca = args.tls_ca_file.clone().unwrap_or_else(|| cert.clone());
        return Ok((Some(tls::server_config(cert, key)?), Some(ca)));
    }
    if !args.tls_generate {
        return Ok((None, None));
    }
    let dir = match (&args.data_dir, args.ephemeral || !args.etcd.is_empty()) {
        (Some(dir), _) => dir.join("pki"),
        (None, false) => default_data_dir().join("pki"),
        (None, true) => kubeconfig.parent().unwrap_or(std::path::Path::new(".")).join("listwatch-pki"),
    };
    let files = tls::generate(&dir, &[args.addr.ip().to_string()])?;
    Ok((Some(tls::server_config(&files.cert, &files.key)?), Some(files.ca_cert)))
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
    let Opened { storage, described, memory } = open_storage(&args).await?;
    let listening = listener::bind(&args.addr).with_context(|| format!("listening on {}", args.addr))?;
    let (listener, addr) = (listening.listener, listening.reachable);
    let kubeconfig = args.kubeconfig.clone().unwrap_or_else(|| home().join(".kube/listwatch-config"));
    let (tls, ca) = tls_config(&args, &kubeconfig)?;
    let server = format!("{}://{addr}", if tls.is_some() { "https" } else { "http" });
    let state =
        ApiState::start(server_config(&args, addr.to_string())?, storage).await.context("starting the API server")?;
    write_kubeconfig(&kubeconfig, &server, ca.as_deref())?;
    let serving = tokio::spawn(listwatch_apiserver::serve(listener, state.clone(), tls, shutdown_signal()));
    let ready = state.wait_ready(Duration::from_secs(60)).await;
    tracing::info!(
        ready,
        elapsed_ms = started.elapsed().as_millis() as u64,
        listening = %listening.local,
        "serving the Kubernetes API on {server} from {described}"
    );
    eprintln!("listwatch is serving on {server}; kubeconfig written to {}", kubeconfig.display());
    eprintln!("try: kubectl --kubeconfig {} get pods", kubeconfig.display());
    serving.await?;
    if let Some(memory) = memory {
        memory.close();
    }
    tracing::info!("stopped");
    Ok(())
}
