//! Real etcd servers for tests, run through `scripts/etcd.sh`.
//!
//! * [`shared_endpoint`]: one etcd per test process, shared by every test in it. Tests stay
//!   isolated by writing under their own [`unique_prefix`]. Set `LISTWATCH_ETCD_ENDPOINTS` to use
//!   an etcd you run yourself instead (e.g. `scripts/etcd-compose.yaml`).
//! * [`EtcdProcess`]: a private etcd that a test may kill, restart or stop, e.g. to check that
//!   watches resume, or to run against the old etcd 3.4.
//! * [`EtcdCluster`]: a private cluster of several members, whose leader a test may move or
//!   kill, as kube-apiservers meet it in production.
//!
//! Tests never skip silently: when etcd cannot be fetched or started, these functions panic with
//! the script's error output.
//!
//! Every etcd started here is tied to the test process: the script's watchdog (`--exit-with`)
//! kills it, and removes its data dir, when the test process exits in any way (a Rust static is
//! never dropped, and a test binary may be killed), so no etcd outlives its tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::process::Command;
use tokio::sync::OnceCell;

use crate::process::is_alive;

mod cluster;

pub use cluster::{EtcdCluster, EtcdMember, MemberStatus};

/// Env var: comma-separated endpoints of an etcd to use instead of starting one.
pub const ENDPOINTS_ENV: &str = "LISTWATCH_ETCD_ENDPOINTS";
/// Env var: `3.4` or `3.5` (default), the version of the shared etcd this kit starts.
pub const VERSION_ENV: &str = "LISTWATCH_ETCD_VERSION";

/// Which etcd to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EtcdVersion {
    /// Debian 12's etcd 3.4.23: old, with known watch bugs (progress requests are not reliable).
    V3_4,
    /// etcd 3.5 or newer (Debian 13's 3.5.16 unless a newer `etcd` is on PATH).
    #[default]
    V3_5,
}

impl EtcdVersion {
    fn as_arg(self) -> &'static str {
        match self {
            EtcdVersion::V3_4 => "3.4",
            EtcdVersion::V3_5 => "3.5",
        }
    }

    fn from_env() -> Self {
        match std::env::var(VERSION_ENV).as_deref() {
            Ok("3.4") => EtcdVersion::V3_4,
            Ok("3.5" | "") | Err(_) => EtcdVersion::V3_5,
            Ok(other) => panic!("{VERSION_ENV}={other:?}: expected 3.4 or 3.5"),
        }
    }
}

/// How to run an [`EtcdProcess`], or each member of an [`EtcdCluster`].
#[derive(Clone, Debug)]
pub struct EtcdProcessOptions {
    /// Which etcd release to run. Default 3.5.
    pub version: EtcdVersion,
    /// `--unsafe-no-fsync`: much faster writes, no durability on power loss (a killed process
    /// loses nothing: the data still reaches the page cache). Default true.
    pub unsafe_no_fsync: bool,
    /// `--experimental-watch-progress-notify-interval`. Default 5 s, as Kubernetes sets it;
    /// etcd's minimum is 100 ms.
    pub progress_interval: Duration,
    /// The directory to create the data dir in. Default `None`: /dev/shm (memory, where fsync
    /// costs nothing), else the temp dir. A benchmark of etcd with fsync names a dir on disk.
    pub data_dir_parent: Option<PathBuf>,
}

impl Default for EtcdProcessOptions {
    fn default() -> Self {
        EtcdProcessOptions {
            version: EtcdVersion::V3_5,
            unsafe_no_fsync: true,
            progress_interval: Duration::from_secs(5),
            data_dir_parent: None,
        }
    }
}

impl EtcdProcessOptions {
    /// Runs this etcd release.
    pub fn version(mut self, version: EtcdVersion) -> Self {
        self.version = version;
        self
    }
    /// Sets `--unsafe-no-fsync` (see [`EtcdProcessOptions::unsafe_no_fsync`]).
    pub fn unsafe_no_fsync(mut self, unsafe_no_fsync: bool) -> Self {
        self.unsafe_no_fsync = unsafe_no_fsync;
        self
    }
    /// Sets the progress notification interval.
    pub fn progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }
    /// Creates the data dir in `dir` (e.g. on disk, for a benchmark with fsync).
    pub fn data_dir_parent(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir_parent = Some(dir.into());
        self
    }
}

/// The endpoint(s) of the etcd shared by this test process (comma-separated if
/// `LISTWATCH_ETCD_ENDPOINTS` names several). The first call starts it.
pub async fn shared_endpoint() -> String {
    static SHARED: OnceCell<String> = OnceCell::const_new();
    SHARED
        .get_or_init(|| async {
            if let Ok(endpoints) = std::env::var(ENDPOINTS_ENV) {
                if !endpoints.trim().is_empty() {
                    return endpoints;
                }
            }
            let options = EtcdProcessOptions::default().version(EtcdVersion::from_env());
            let started = run_start(&options, &Launch::default()).await;
            // Not an EtcdProcess: statics are never dropped. The watchdog stops it at exit.
            started.endpoint
        })
        .await
        .clone()
}

/// [`shared_endpoint`] split into a list, as `EtcdStore::connect` takes it.
pub async fn shared_endpoints() -> Vec<String> {
    shared_endpoint().await.split(',').map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect()
}

/// A key prefix of its own for one test, `/lwtest/<name>-<random>/`, so tests that share one
/// etcd (and runs that share a long-lived one) never see each other's keys.
pub fn unique_prefix(test_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name: String =
        test_name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect();
    format!("/lwtest/{name}-{:016x}/", random_u64() ^ COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A random number without a dependency: std's hasher keys are seeded randomly per process.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// A private etcd server: a fresh data dir (under /dev/shm unless
/// [`EtcdProcessOptions::data_dir_parent`] says otherwise) and a free port on 127.0.0.1.
/// Dropping it kills etcd and removes the data dir.
#[derive(Debug)]
pub struct EtcdProcess {
    options: EtcdProcessOptions,
    endpoint: String,
    port: u16,
    data_dir: PathBuf,
    /// `None` while stopped or killed.
    pid: Option<u32>,
}

impl EtcdProcess {
    /// Starts a new etcd (fetching the binary on first use). Panics if it cannot.
    pub async fn start(options: EtcdProcessOptions) -> EtcdProcess {
        let data_dir = fresh_data_dir(options.data_dir_parent.as_deref());
        let started = run_start(&options, &Launch::first_start(&data_dir)).await;
        let port = port_of(&started.endpoint);
        EtcdProcess { options, endpoint: started.endpoint, port, data_dir, pid: Some(started.pid) }
    }

    /// `http://127.0.0.1:<port>`; the same across restarts.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The running etcd's pid (`None` while stopped or killed).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Where etcd keeps its data; kept across [`restart`](Self::restart).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The release this etcd runs.
    pub fn version(&self) -> EtcdVersion {
        self.options.version
    }

    /// Kills etcd with SIGKILL (as a crash would) and waits until it is gone. The data dir stays
    /// for [`restart`](Self::restart).
    pub async fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            signal_kill(pid);
            wait_gone(pid).await;
        }
    }

    /// Stops etcd gracefully (SIGTERM). The data dir stays for [`restart`](Self::restart).
    pub async fn stop(&mut self) {
        if let Some(pid) = self.pid.take() {
            run_stop(pid).await;
        }
    }

    /// Starts etcd again on the same data dir and port (stopping it first if it runs).
    pub async fn restart(&mut self) {
        self.stop().await;
        let launch =
            Launch { data_dir: Some(self.data_dir.clone()), client_port: Some(self.port), ..Launch::default() };
        let started = run_start(&self.options, &launch).await;
        assert_eq!(started.endpoint, self.endpoint, "restarted etcd must keep its endpoint");
        self.pid = Some(started.pid);
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        kill_and_remove(self.pid.take(), &self.data_dir);
    }
}

/// For a drop: kills etcd `pid` (if running), waits briefly until it is gone, and removes its
/// data dir.
fn kill_and_remove(pid: Option<u32>, data_dir: &Path) {
    if let Some(pid) = pid {
        signal_kill(pid);
        // Briefly: etcd must be gone before its data dir is removed.
        for _ in 0..50 {
            if !is_alive(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = std::fs::remove_dir_all(data_dir);
}

/// What `etcd.sh start` printed.
struct Started {
    endpoint: String,
    pid: u32,
}

/// Where and how `etcd.sh start` runs one etcd. The default is the script's own choice of
/// everything: a fresh data dir, free ports, a cluster of one.
#[derive(Clone, Debug, Default)]
struct Launch {
    /// The data dir; `None`: the script makes a fresh one (and removes it at exit).
    data_dir: Option<PathBuf>,
    /// The watchdog also removes `data_dir` when this process exits: set on the first start of a
    /// dir made here. That watchdog outlives the etcd it started, so restarts need not repeat it.
    cleanup_data_dir: bool,
    /// The client port; `None`: a free one.
    client_port: Option<u16>,
    /// Membership of a multi-member cluster; `None`: a cluster of one.
    member: Option<MemberFlags>,
}

impl Launch {
    /// The first start on `data_dir`, a dir made here.
    fn first_start(data_dir: &Path) -> Launch {
        Launch { data_dir: Some(data_dir.to_owned()), cleanup_data_dir: true, ..Launch::default() }
    }
}

/// `etcd.sh start`'s flags for one member of a multi-member cluster.
#[derive(Clone, Debug)]
struct MemberFlags {
    name: String,
    peer_port: u16,
    /// `--initial-cluster`: every member as `name=http://127.0.0.1:peer_port`.
    initial_cluster: String,
    /// `--initial-cluster-state`: `new`, or `existing` for a restart.
    state: &'static str,
    /// `--initial-cluster-token`, unique per cluster.
    token: String,
}

fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/etcd.sh")
}

fn script() -> Command {
    let mut command = Command::new("bash");
    command.arg(script_path());
    command.stdin(std::process::Stdio::null());
    command
}

/// Runs `etcd.sh start`, tied to this process's lifetime; panics if it fails.
async fn run_start(options: &EtcdProcessOptions, launch: &Launch) -> Started {
    try_run_start(options, launch).await.unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `etcd.sh start`, tied to this process's lifetime; the error has the script's output.
async fn try_run_start(options: &EtcdProcessOptions, launch: &Launch) -> Result<Started, String> {
    let mut command = script();
    command
        .arg("start")
        .args(["--version", options.version.as_arg()])
        .args(["--progress-interval", &format!("{}ms", options.progress_interval.as_millis().max(100))])
        .args(["--exit-with", &std::process::id().to_string()]);
    if options.unsafe_no_fsync {
        command.arg("--unsafe");
    }
    if let Some(data_dir) = &launch.data_dir {
        command.arg("--data-dir").arg(data_dir);
        if launch.cleanup_data_dir {
            // Also if this process dies before the EtcdProcess or EtcdCluster is dropped.
            command.arg("--cleanup-data-dir");
        }
    }
    if let Some(port) = launch.client_port {
        command.args(["--port", &port.to_string()]);
    }
    if let Some(member) = &launch.member {
        command
            .args(["--name", &member.name])
            .args(["--peer-port", &member.peer_port.to_string()])
            .args(["--initial-cluster", &member.initial_cluster])
            .args(["--initial-cluster-state", member.state])
            .args(["--initial-cluster-token", &member.token]);
    }
    let output = command.output().await.map_err(|e| format!("cannot run {}: {e}", script_path().display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "could not start etcd {} with {} ({}):\n{stderr}",
            options.version.as_arg(),
            script_path().display(),
            output.status
        ));
    }
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
            .map(str::to_owned)
            .ok_or_else(|| format!("etcd.sh start printed no {name}= line:\n{stdout}\n{stderr}"))
    };
    let endpoint = field("ENDPOINT")?;
    let pid = field("PID")?.parse().map_err(|e| format!("etcd.sh start printed a bad PID: {e}\n{stdout}"))?;
    Ok(Started { endpoint, pid })
}

/// Runs `etcd.sh stop`: SIGTERM, then SIGKILL after 10 s. Panics if it fails.
async fn run_stop(pid: u32) {
    let output = script().arg("stop").arg(pid.to_string()).output().await;
    let output = output.unwrap_or_else(|e| panic!("cannot run {}: {e}", script_path().display()));
    if !output.status.success() {
        panic!("etcd.sh stop {pid} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    }
}

fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in endpoint {endpoint}"))
}

/// A new, empty, private dir under `parent`, by default /dev/shm (memory-backed: fast, and gone
/// at reboot).
fn fresh_data_dir(parent: Option<&Path>) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = match parent {
        Some(parent) => parent.to_path_buf(),
        None if shm.is_dir() => shm.to_path_buf(),
        None => std::env::temp_dir(),
    };
    for _ in 0..100 {
        let dir = base.join(format!("listwatch-etcd-test.{:016x}", random_u64()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create an etcd data dir {}: {e}", dir.display()),
        }
    }
    panic!("cannot find a fresh etcd data dir name under {}", base.display());
}

fn signal_kill(pid: u32) {
    // `kill` the command rather than libc: no unsafe code, no dependency.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status();
}

async fn wait_gone(pid: u32) {
    for _ in 0..500 {
        if !is_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("etcd {pid} did not exit within 5 s of SIGKILL");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_prefixes_differ_and_are_clean() {
        let a = unique_prefix("watch resumes/after kill");
        let b = unique_prefix("watch resumes/after kill");
        assert_ne!(a, b);
        assert!(a.starts_with("/lwtest/watch-resumes-after-kill-"), "{a}");
        assert!(a.ends_with('/'));
    }

    #[test]
    fn endpoint_port() {
        assert_eq!(port_of("http://127.0.0.1:2379"), 2379);
    }
}
