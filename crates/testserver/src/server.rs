//! The running server: the embedded store (in memory), the apiserver's state and its accept
//! loop on a loopback port, the controllers as clients of it. A restart stops the accept loop
//! and the state (every watch ends, as a kube-apiserver's restart ends them) and starts new
//! ones on the same store and port; the store, the URL and the kubeconfig stay.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use listwatch_apiserver::{ApiState, ServerConfig};
use listwatch_storage::Storage;
use listwatch_storage::faults::{FaultyStorage, Outage};
use listwatch_storage::memory::{MemoryOptions, MemoryStore};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::builder::Builder;
use crate::faults::Faults;
use crate::{Error, crds, kubeconfig};

/// How long a starting server may take to serve (its watch caches to fill).
const READY_DEADLINE: Duration = Duration::from_secs(30);

/// A Kubernetes API server running in this process; dropping it stops the server.
pub struct TestServer {
    url: String,
    addr: SocketAddr,
    kubeconfig_dir: tempfile::TempDir,
    kubeconfig: std::path::PathBuf,
    builder: Builder,
    storage: Arc<dyn Storage>,
    outage: Outage,
    memory: MemoryStore,
    /// The state serving now (a restart replaces it).
    state: Mutex<Arc<ApiState>>,
    /// The accept loop serving now; `None` only in the middle of a restart.
    serving: tokio::sync::Mutex<Option<Serving>>,
    controllers: Option<listwatch_controllers::Running>,
}

/// One accept loop and how to stop it.
struct Serving {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Starts a server with the defaults: no CRDs, no controllers, the client audit on.
    pub async fn start() -> Result<TestServer, Error> {
        Builder::default().start().await
    }

    /// Chooses what the server starts with.
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) async fn start_with(builder: Builder) -> Result<TestServer, Error> {
        // Files are read before anything starts: a bad one costs nothing.
        let crds = crds::load(&builder.crds)?;
        let selection: listwatch_controllers::Selection =
            builder.controllers.parse().map_err(|e: String| Error::Other(anyhow::anyhow!("controllers: {e}")))?;
        let memory = MemoryStore::open(MemoryOptions::default()).context("opening the in-memory store")?;
        let outage = Outage::default();
        let storage: Arc<dyn Storage> = Arc::new(FaultyStorage::new(Arc::new(memory.clone()), outage.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("binding a loopback port")?;
        let addr = listener.local_addr().context("the bound address")?;
        let url = format!("http://{addr}");
        let kubeconfig_dir = tempfile::Builder::new()
            .prefix("listwatch-testserver-")
            .tempdir()
            .context("a directory for the kubeconfig")?;
        let kubeconfig = kubeconfig::write(kubeconfig_dir.path(), &url).context("writing the kubeconfig")?;
        let state = start_state(&builder, addr, storage.clone(), outage.clone()).await?;
        let serving = serve(listener, state.clone());
        let client = listwatch_client::Client::new(listwatch_client::Config::new(&url)).context("a client")?;
        crds::install(&client, &state, &crds).await?;
        let controllers = if selection.is_empty() {
            None
        } else {
            let options = listwatch_controllers::Options { nodes: builder.nodes, ..Default::default() };
            Some(listwatch_controllers::start(client, &selection, &options)?)
        };
        Ok(TestServer {
            url,
            addr,
            kubeconfig_dir,
            kubeconfig,
            builder,
            storage,
            outage,
            memory,
            state: Mutex::new(state),
            serving: tokio::sync::Mutex::new(Some(serving)),
            controllers,
        })
    }

    /// The server's URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig file for the server (in a temporary directory removed with the server), for
    /// programs that read one: `KUBECONFIG=<path> kubectl get pods`.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The directory the kubeconfig is in (removed with the server): a place for a test's own
    /// files.
    pub fn dir(&self) -> &Path {
        self.kubeconfig_dir.path()
    }

    /// A `kube::Config` for the server (namespace `default`).
    #[cfg(feature = "kube")]
    pub fn kube_config(&self) -> kube::Config {
        let mut config = kube::Config::new(self.url.parse().expect("the server's URL is a URI"));
        config.default_namespace = "default".into();
        config
    }

    /// A ready `kube::Client` for the server.
    #[cfg(feature = "kube")]
    pub fn client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.kube_config()).map_err(|e| Error::Other(e.into()))
    }

    /// A client of listwatch's own client stack (reflector, informers) for the server.
    pub fn listwatch_client(&self) -> listwatch_client::Client {
        listwatch_client::Client::new(listwatch_client::Config::new(&self.url)).expect("a client of a plain HTTP URL")
    }

    /// The faults this server can be made to suffer.
    pub fn faults(&self) -> Faults<'_> {
        Faults::new(self)
    }

    /// The client audit's verdict on every client the server has seen since it (re)started:
    /// findings per client (missed events, 410 loops, Retry-After ignored, ...). Empty with
    /// [`Builder::audit`] off. The server tells clients apart by User-Agent and address: give
    /// the client under test and the test's own helpers different User-Agents, or the test's
    /// requests are judged as the client's.
    pub fn audit(&self) -> crate::AuditReport {
        self.state().client_audit.as_ref().map(|audit| audit.report()).unwrap_or_default()
    }

    /// The state serving now.
    pub(crate) fn state(&self) -> Arc<ApiState> {
        self.state.lock().expect("state").clone()
    }

    /// Stops the server and starts it again on the same store and port; returns once it serves.
    pub(crate) async fn restart(&self) -> Result<(), Error> {
        let mut serving = self.serving.lock().await;
        if let Some(old) = serving.take() {
            let _ = old.stop.send(());
            let _ = old.task.await;
        }
        let listener = rebind(self.addr).with_context(|| format!("binding {} again", self.addr))?;
        let state = start_state(&self.builder, self.addr, self.storage.clone(), self.outage.clone()).await?;
        *serving = Some(serve(listener, state.clone()));
        *self.state.lock().expect("state") = state;
        Ok(())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(controllers) = self.controllers.take() {
            controllers.stop();
        }
        if let Some(serving) = self.serving.get_mut().take() {
            // The accept loop ends every watch and drains on its own.
            let _ = serving.stop.send(());
        }
        self.memory.close();
    }
}

/// The apiserver's state for `builder`, ready to serve.
async fn start_state(
    builder: &Builder,
    addr: SocketAddr,
    storage: Arc<dyn Storage>,
    outage: Outage,
) -> Result<Arc<ApiState>, Error> {
    let mut config = ServerConfig {
        enable_debug_api: true,
        advertise_address: addr.to_string(),
        audit_clients: builder.audit.then(Default::default),
        storage_outage: Some(outage),
        ..Default::default()
    };
    if let Some(events) = builder.watch_cache_max_events {
        config.cache.max_events = events;
    }
    if let Some(interval) = builder.bookmark_interval {
        config.cache.bookmark_interval = interval;
    }
    let state = listwatch_apiserver::start(config, storage).await.context("starting the API server")?;
    if !state.wait_ready(READY_DEADLINE).await {
        return Err(Error::Other(anyhow::anyhow!("not ready within {} s", READY_DEADLINE.as_secs())));
    }
    Ok(state)
}

/// Accepts connections on `listener` until stopped.
fn serve(listener: tokio::net::TcpListener, state: Arc<ApiState>) -> Serving {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(listwatch_apiserver::serve(listener, state, None, async move {
        let _ = stopped.await;
    }));
    Serving { stop, task }
}

/// Listens on `addr` again after a restart (SO_REUSEADDR: the old connections may linger in
/// TIME_WAIT).
fn rebind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}
