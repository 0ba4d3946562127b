//! The built `listwatch` binary run as `listwatch serve`: the one harness behind every test tree
//! (the end-to-end suite, the client's and the conformance crate's tests) and `listwatch bench`.
//!
//! * The binary is `LISTWATCH_BIN` when set, else a path the caller knows (the root package's
//!   tests pass `env!("CARGO_BIN_EXE_listwatch")`, the bench its own executable); without either
//!   it fails with a message that says how to build and name one. Tests never skip.
//! * The server listens on `127.0.0.1:0` and the harness reads the address it reports on stderr
//!   ("listwatch is serving on URL; ..."): the kernel picks the port when the server binds, so no
//!   other process can take it between a pick and the bind. Then `/readyz` must answer 200
//!   (over TLS too, for `--tls-generate`).
//! * Its storage is a [`Backend`], etcd endpoints and a key prefix that several servers may share
//!   ([`ServerBuilder::etcd_endpoints`], e.g. an [`EtcdCluster`](crate::etcd::EtcdCluster)'s),
//!   or explicit flags. Its kubeconfig and log (`server.log`:
//!   stderr and stdout, kept across restarts) live in a temporary directory of its own. It
//!   inherits this process's environment, changed by [`ServerBuilder::env`] and
//!   [`ServerBuilder::env_remove`].
//! * [`Server::startup_time`] is how long it took from exec to ready, for the bench's
//!   `startup`; [`wait_until_ready`] waits for a server started elsewhere.
//! * [`Server::restart`] starts it again on the same address, data dir and storage;
//!   [`Server::kill`] is a crash (SIGKILL), [`Server::stop`] a graceful stop (SIGTERM). Dropping it
//!   kills it, then removes its directory and stops its private etcd.
//!
//! Starting with [`ServerBuilder::start`] panics with the server's log when it fails (for tests);
//! [`ServerBuilder::try_start`] returns the error instead (for the bench).

mod readyz;

pub use readyz::wait_until_ready;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use crate::etcd::{EtcdProcess, EtcdProcessOptions, shared_endpoints, unique_prefix};
use crate::process::{die_with_parent, is_alive, limit_open_files, terminate};

/// Env var: the `listwatch` binary to run (scripts/test.sh sets it to the freshly built one).
pub const BIN_ENV: &str = "LISTWATCH_BIN";

/// What the server prints on stderr once it listens, followed by its URL and `;`.
const SERVING: &str = "listwatch is serving on ";

/// The default pause between two `/readyz` probes while waiting for a server.
const READY_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Which storage a server runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store, durable: its data dir is `data` in the server's directory, so it
    /// survives restarts.
    Memory,
    /// The embedded store in memory alone (`--ephemeral`): nothing on disk, nothing survives.
    Ephemeral,
    /// The run's shared etcd ([`shared_endpoints`]), under a key prefix of the server's own.
    Etcd,
    /// An etcd process of the server's own ([`Server::etcd`]), which a test may kill, restart or
    /// compact.
    PrivateEtcd,
}

/// Why a server could not be started: what went wrong, with the server's log.
#[derive(Debug)]
pub struct StartError(String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// The `listwatch` binary: `LISTWATCH_BIN` when set and not empty, else `fallback`.
pub fn listwatch_binary(fallback: Option<&Path>) -> Result<PathBuf, StartError> {
    let path = match std::env::var_os(BIN_ENV) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => fallback.map(Path::to_path_buf).ok_or_else(|| {
            StartError(format!(
                "{BIN_ENV} is not set: these tests run the listwatch binary. Run them through scripts/test.sh, \
                 or build it (`cargo build -p listwatch`) and set {BIN_ENV}=target/debug/listwatch"
            ))
        })?,
    };
    if !path.is_file() {
        return Err(StartError(format!("the listwatch binary {} is not a file", path.display())));
    }
    Ok(path)
}

/// Where a server's storage comes from.
#[derive(Debug)]
enum Storage {
    Backend(Backend),
    /// etcd endpoints the caller runs, and the key prefix (which other servers may share).
    Etcd {
        endpoints: Vec<String>,
        prefix: String,
    },
    Flags(Vec<String>),
}

/// How to start a [`Server`]; [`Server::builder`] makes one.
#[derive(Debug)]
pub struct ServerBuilder {
    name: String,
    storage: Storage,
    etcd_options: EtcdProcessOptions,
    etcd: Option<EtcdProcess>,
    binary: Option<PathBuf>,
    fallback_binary: Option<PathBuf>,
    args: Vec<String>,
    addr: String,
    dir: Option<TempDir>,
    debug_api: bool,
    process: ProcessOptions,
}

/// How the process itself is run (also on restarts).
#[derive(Clone, Debug)]
struct ProcessOptions {
    rust_log: Option<String>,
    /// Changes to the inherited environment, in order: a value sets the variable, `None`
    /// removes it.
    env: Vec<(OsString, Option<OsString>)>,
    echo_log: bool,
    exit_with_parent: bool,
    open_files: Option<u64>,
    ready_timeout: Duration,
    ready_poll_interval: Duration,
}

impl ServerBuilder {
    /// A server on [`Backend::Ephemeral`] with the debug API on, no compactor, no controllers,
    /// `RUST_LOG=info`.
    fn new() -> ServerBuilder {
        ServerBuilder {
            name: "listwatch".into(),
            storage: Storage::Backend(Backend::Ephemeral),
            etcd_options: EtcdProcessOptions::default(),
            etcd: None,
            binary: None,
            fallback_binary: None,
            args: Vec::new(),
            addr: "127.0.0.1:0".into(),
            dir: None,
            debug_api: true,
            process: ProcessOptions {
                rust_log: Some("info".into()),
                env: Vec::new(),
                echo_log: false,
                exit_with_parent: false,
                open_files: None,
                ready_timeout: Duration::from_secs(60),
                ready_poll_interval: READY_POLL_INTERVAL,
            },
        }
    }

    /// The test's name, in its etcd key prefix ([`Backend::Etcd`]).
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// The storage the server runs on (default [`Backend::Ephemeral`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.storage = Storage::Backend(backend);
        self
    }

    /// How a [`Backend::PrivateEtcd`] is run (e.g. its version).
    pub fn etcd_options(mut self, options: EtcdProcessOptions) -> Self {
        self.etcd_options = options;
        self
    }

    /// Runs on the etcd at `endpoints` (`--etcd`), which the caller keeps running, with every key
    /// under `prefix` (`--etcd-prefix`, e.g. `format!("{}registry", unique_prefix(name))`).
    /// Servers started with the same endpoints and prefix share their data, as the
    /// kube-apiservers of one cluster do: each sees the others' writes (through its own watch
    /// cache, so after a moment). For several servers on one [`EtcdCluster`], pass
    /// [`EtcdCluster::endpoints`] and one prefix to each.
    ///
    /// [`EtcdCluster`]: crate::etcd::EtcdCluster
    /// [`EtcdCluster::endpoints`]: crate::etcd::EtcdCluster::endpoints
    pub fn etcd_endpoints<S: Into<String>>(mut self, endpoints: impl IntoIterator<Item = S>, prefix: &str) -> Self {
        let endpoints = endpoints.into_iter().map(Into::into).collect();
        self.storage = Storage::Etcd { endpoints, prefix: prefix.to_owned() };
        self
    }

    /// Storage flags to use instead of a backend's (e.g. `--etcd URL --etcd-prefix P`).
    pub fn storage_flags<S: Into<String>>(mut self, flags: impl IntoIterator<Item = S>) -> Self {
        self.storage = Storage::Flags(flags.into_iter().map(Into::into).collect());
        self
    }

    /// An etcd the server owns: [`Server::etcd`], stopped after the server. Without storage
    /// flags, the server runs on it (`--etcd` its endpoint).
    pub fn etcd(mut self, etcd: EtcdProcess) -> Self {
        self.etcd = Some(etcd);
        self
    }

    /// Runs this binary, whatever `LISTWATCH_BIN` says (the bench runs itself).
    pub fn binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.binary = Some(binary.into());
        self
    }

    /// The binary to run when `LISTWATCH_BIN` is not set.
    pub fn fallback_binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.fallback_binary = Some(binary.into());
        self
    }

    /// Extra `serve` flags, after the harness's own (`--compaction-interval` among them replaces
    /// the harness's `0s`, `--controllers` the harness's `none`).
    pub fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `--addr`; default `127.0.0.1:0` (a port the kernel picks; the harness reads it back).
    pub fn addr(mut self, addr: &str) -> Self {
        self.addr = addr.to_owned();
        self
    }

    /// The directory for the kubeconfig, the log and a [`Backend::Memory`] data dir (default: a
    /// new temporary one).
    pub fn dir(mut self, dir: TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    /// `--enable-debug-api` (default on: tests force compactions and resets through it).
    pub fn debug_api(mut self, on: bool) -> Self {
        self.debug_api = on;
        self
    }

    /// The server's `RUST_LOG`; `None` leaves this process's own. Default `info`.
    pub fn rust_log(mut self, filter: Option<&str>) -> Self {
        self.process.rust_log = filter.map(str::to_owned);
        self
    }

    /// Sets `name` to `value` in the server's environment (e.g. `HOME`, where `serve` merges
    /// kubeconfigs); applied after [`rust_log`](Self::rust_log), in the order given.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.process.env.push((name.into(), Some(value.into())));
        self
    }

    /// Removes `name` from the environment the server inherits (e.g. this process's
    /// `KUBECONFIG`); a later [`env`](Self::env) of the same name sets it again.
    pub fn env_remove(mut self, name: impl Into<OsString>) -> Self {
        self.process.env.push((name.into(), None));
        self
    }

    /// Also copies the server's stderr to this process's stderr (so a test runner shows it).
    pub fn echo_log(mut self, on: bool) -> Self {
        self.process.echo_log = on;
        self
    }

    /// The server gets SIGTERM when the thread that started it ends (with its process): for a
    /// long-lived caller such as the bench. Off by default: a test's runtime may start it from
    /// a thread that ends before the test does.
    pub fn exit_with_parent(mut self, on: bool) -> Self {
        self.process.exit_with_parent = on;
        self
    }

    /// At most this many open files for the server (soft and hard `RLIMIT_NOFILE`), e.g. to
    /// make it run out.
    pub fn open_files_limit(mut self, files: u64) -> Self {
        self.process.open_files = Some(files);
        self
    }

    /// How long the server may take to report its address, and then to be ready. Default 60 s.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.process.ready_timeout = timeout;
        self
    }

    /// The pause between two `/readyz` probes while the server starts. Default 20 ms; a bench
    /// that times startups ([`Server::startup_time`]) wants it much shorter.
    pub fn ready_poll_interval(mut self, interval: Duration) -> Self {
        self.process.ready_poll_interval = interval;
        self
    }

    /// Starts the server and waits until it is ready; panics (with its log) if it cannot.
    pub async fn start(self) -> Server {
        self.try_start().await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts the server and waits until it is ready.
    pub async fn try_start(self) -> Result<Server, StartError> {
        let binary = match self.binary {
            Some(binary) => binary,
            None => listwatch_binary(self.fallback_binary.as_deref())?,
        };
        let dir = match self.dir {
            Some(dir) => dir,
            None => tempfile::Builder::new()
                .prefix("listwatch-server-")
                .tempdir()
                .map_err(|e| StartError(format!("cannot create a temporary directory: {e}")))?,
        };
        let mut etcd = self.etcd;
        let storage = match (self.storage, &etcd) {
            (Storage::Flags(flags), _) => flags,
            (Storage::Etcd { endpoints, prefix }, _) => {
                vec!["--etcd".into(), endpoints.join(","), "--etcd-prefix".into(), prefix]
            }
            (Storage::Backend(_), Some(given)) => vec!["--etcd".into(), given.endpoint().to_owned()],
            (Storage::Backend(Backend::Memory), None) => {
                vec!["--data-dir".into(), dir.path().join("data").display().to_string()]
            }
            (Storage::Backend(Backend::Ephemeral), None) => vec!["--ephemeral".into()],
            (Storage::Backend(Backend::Etcd), None) => vec![
                "--etcd".into(),
                shared_endpoints().await.join(","),
                "--etcd-prefix".into(),
                format!("{}registry", unique_prefix(&self.name)),
            ],
            (Storage::Backend(Backend::PrivateEtcd), None) => {
                let process = EtcdProcess::start(self.etcd_options).await;
                let flags = vec!["--etcd".into(), process.endpoint().to_owned()];
                etcd = Some(process);
                flags
            }
        };
        let kubeconfig = dir.path().join("kubeconfig");
        let mut args: Vec<String> = vec!["serve".into(), "--kubeconfig".into(), kubeconfig.display().to_string()];
        if self.debug_api {
            args.push("--enable-debug-api".into());
        }
        // No compactor unless asked for: the tests force compactions when they want them.
        let has_flag = |flag: &str| self.args.iter().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        if !has_flag("--compaction-interval") {
            args.extend(["--compaction-interval".into(), "0s".into()]);
        }
        // No controllers unless asked for: tests and benches see only their own writes.
        if !has_flag("--controllers") {
            args.push("--controllers=none".into());
        }
        args.extend(storage);
        args.extend(self.args);
        let mut server = Server {
            url: String::new(),
            kubeconfig,
            dir,
            etcd,
            child: None,
            binary,
            args,
            process: self.process,
            startup_time: Duration::ZERO,
        };
        server.launch(&self.addr).await?;
        Ok(server)
    }
}

/// A running `listwatch serve`. Killed when dropped; then its directory is removed and its
/// private etcd stopped.
#[derive(Debug)]
pub struct Server {
    /// `http://host:port` (`https://` with TLS), as the server reported it; the same after
    /// [`restart`](Self::restart).
    pub url: String,
    /// The kubeconfig the server wrote.
    pub kubeconfig: PathBuf,
    /// The server's own directory: kubeconfig, `server.log`, and `data` for [`Backend::Memory`].
    pub dir: TempDir,
    /// The etcd of a [`Backend::PrivateEtcd`] server.
    pub etcd: Option<EtcdProcess>,
    /// `None` while killed or stopped.
    child: Option<Child>,
    binary: PathBuf,
    /// `serve` and its flags, without `--addr`.
    args: Vec<String>,
    process: ProcessOptions,
    /// From spawning the process to its first ready `/readyz`, at the last (re)start.
    startup_time: Duration,
}

impl Server {
    /// A server to configure: [`Backend::Ephemeral`], the debug API on, no compactor,
    /// `RUST_LOG=info`, until told otherwise.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// How long the last start or restart took, from spawning the process to the first `200`
    /// from `/readyz` (to within [`ServerBuilder::ready_poll_interval`]).
    pub fn startup_time(&self) -> Duration {
        self.startup_time
    }

    /// `host:port` of [`url`](Self::url), for raw connections.
    pub fn authority(&self) -> &str {
        self.url.split_once("://").map_or(&self.url, |(_, authority)| authority)
    }

    /// The running server's process id; panics while it is killed or stopped.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// Whether the process runs (false once killed, stopped, or exited on its own).
    pub fn is_running(&self) -> bool {
        self.child.as_ref().is_some_and(|child| is_alive(child.id()))
    }

    /// The `serve` command line's flags (without `--addr`).
    pub fn args(&self) -> &[String] {
        &self.args[1..]
    }

    /// Where the server's stdout and stderr go (`server.log` in its directory).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Everything the server printed so far, across restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Kills the process with SIGKILL (as a crash would) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process gracefully (SIGTERM), killing it if it has not exited within 10 s.
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        terminate(child.id());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() {
            if tokio::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills the server and starts it again on the same address, data dir and storage; waits
    /// until it is ready. Panics (with its log) if it cannot.
    pub async fn restart(&mut self) {
        self.kill();
        let addr = self.authority().to_owned();
        if let Err(e) = self.launch(&addr).await {
            panic!("restarting: {e}");
        }
    }

    /// Keeps the server's directory (and log) when it is dropped; returns where it is.
    pub fn keep_dir(&mut self) -> PathBuf {
        self.dir.disable_cleanup(true);
        self.dir.path().to_owned()
    }

    /// Starts the process on `addr`, and waits until it reports its URL and is ready.
    async fn launch(&mut self, addr: &str) -> Result<(), StartError> {
        let log_path = self.log_path();
        let open_log = || std::fs::OpenOptions::new().create(true).append(true).open(&log_path);
        let stdout_log = open_log().map_err(|e| StartError(format!("cannot open {}: {e}", log_path.display())))?;
        let mut stderr_log = open_log().map_err(|e| StartError(format!("cannot open {}: {e}", log_path.display())))?;
        let mut command = Command::new(&self.binary);
        command
            .args(&self.args)
            .args([OsString::from("--addr"), OsString::from(addr)])
            .stdin(Stdio::null())
            .stdout(stdout_log)
            .stderr(Stdio::piped());
        if let Some(filter) = &self.process.rust_log {
            command.env("RUST_LOG", filter);
        }
        for (name, value) in &self.process.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if self.process.exit_with_parent {
            die_with_parent(&mut command);
        }
        if let Some(files) = self.process.open_files {
            limit_open_files(&mut command, files);
        }
        let spawned = std::time::Instant::now();
        let mut child =
            command.spawn().map_err(|e| StartError(format!("cannot run {}: {e}", self.binary.display())))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        self.child = Some(child);

        // A thread copies stderr to the log (a server whose stderr is closed dies on its next
        // line) and hands over the URL it reports.
        let (reported, url) = tokio::sync::oneshot::channel();
        let echo = self.process.echo_log;
        std::thread::spawn(move || {
            let mut reported = Some(reported);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(stderr_log, "{line}");
                if echo {
                    eprintln!("{line}");
                }
                if let Some(rest) = line.strip_prefix(SERVING)
                    && let Some(reported) = reported.take()
                {
                    let _ = reported.send(rest.split(';').next().unwrap_or("").trim().to_owned());
                }
            }
        });

        let timeout = self.process.ready_timeout;
        let command_line = format!("{} {} --addr {addr}", self.binary.display(), self.args.join(" "));
        self.url = match tokio::time::timeout(timeout, url).await {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => {
                let status = self.reap().await;
                return Err(StartError(format!(
                    "`{command_line}` exited ({status}) before serving; log:\n{}",
                    self.log()
                )));
            }
            Err(_) => {
                self.kill();
                return Err(StartError(format!(
                    "`{command_line}` did not report its address within {timeout:?}; log:\n{}",
                    self.log()
                )));
            }
        };
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if readyz::is_ready(&self.url).await {
                self.startup_time = spawned.elapsed();
                return Ok(());
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(StartError(format!(
                    "`{command_line}` exited ({status}) before it was ready; log:\n{}",
                    self.log()
                )));
            }
            if tokio::time::Instant::now() > deadline {
                self.kill();
                return Err(StartError(format!(
                    "`{command_line}` on {} was not ready within {timeout:?}; log:\n{}",
                    self.url,
                    self.log()
                )));
            }
            tokio::time::sleep(self.process.ready_poll_interval).await;
        }
    }
}

impl Server {
    /// The exit status of a process that closed its stderr (it is exiting), killing it if it
    /// has not exited within 5 s.
    async fn reap(&mut self) -> String {
        let Some(mut child) = self.child.take() else { return "not running".into() };
        for _ in 0..250 {
            if let Ok(Some(status)) = child.try_wait() {
                return status.to_string();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        "still running 5 s after closing stderr: killed".into()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
