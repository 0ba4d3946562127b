//! The server under test: a `listwatch serve` child process started for the run, a server
//! given by URL, or the raw broadcaster ([`super::raw`], the comparison's ceiling); plus what
//! the bench reads about a process from `/proc` (CPU seconds, peak RSS) and the open-files
//! limit that a thousand connections need.
//!
//! The child is this same executable (`std::env::current_exe()`), started through the tests'
//! harness ([`listwatch_testkit::server`]) as `listwatch serve --ephemeral --controllers=none
//! --compaction-interval 0s` on `127.0.0.1:0`, at the address it reports (or `--etcd URL` with a fresh
//! `--etcd-prefix`, so runs never see each other's objects). Its kubeconfig and log go to a
//! temporary directory; the log is kept (and its path printed) when the run does not end with
//! [`ServerUnderTest::stop`]. The child gets SIGTERM if the bench process dies
//! (`PR_SET_PDEATHSIG`), and is stopped with SIGTERM (then SIGKILL) at the end.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use listwatch_testkit::server::{Server, ServerBuilder, wait_until_ready};
use serde::Serialize;

use super::ServerArgs;
use super::raw::RawBroadcaster;

/// The tests' harness set up as the bench runs `listwatch serve`: this same executable, without
/// the debug API, under the bench's own `RUST_LOG`.
pub fn harness() -> anyhow::Result<ServerBuilder> {
    let exe = std::env::current_exe().context("finding this executable")?;
    Ok(Server::builder().binary(exe).debug_api(false).rust_log(None))
}

/// A server the bench talks to.
pub struct ServerUnderTest {
    /// `http://host:port`.
    pub url: String,
    pub addr: SocketAddr,
    /// Its process id, when known (started here, or `--server-pid`).
    pub pid: Option<u32>,
    /// What it serves from, for the report.
    pub backend: String,
    /// The key prefix a started server stores under in etcd (`--etcd`); pods are under
    /// `<prefix>/pods/`.
    pub etcd_prefix: Option<String>,
    /// The started child (`None` for a given server, and once stopped).
    child: Option<Server>,
    /// The raw broadcaster, when that is what runs ([`ServerUnderTest::raw_broadcaster`]).
    raw: Option<RawBroadcaster>,
}

impl ServerUnderTest {
    /// Starts a `listwatch serve` child (or connects to `--server`) and waits until `/readyz`
    /// answers 200.
    pub async fn start(args: &ServerArgs) -> anyhow::Result<ServerUnderTest> {
        if args.raw_broadcaster {
            return Self::raw_broadcaster(&args.serve_arg).await;
        }
        let Some(url) = &args.server else { return Self::spawn(args).await };
        let url = url.trim_end_matches('/').to_string();
        let host_port = url.strip_prefix("http://").context("--server wants an http:// URL")?;
        let addr = tokio::net::lookup_host(host_port)
            .await
            .with_context(|| format!("resolving {host_port}"))?
            .next()
            .with_context(|| format!("{host_port} resolves to no address"))?;
        let server = ServerUnderTest {
            url,
            addr,
            pid: args.server_pid,
            backend: "external".into(),
            etcd_prefix: None,
            child: None,
            raw: None,
        };
        server.wait_ready(Duration::from_secs(120)).await?;
        Ok(server)
    }

    async fn spawn(args: &ServerArgs) -> anyhow::Result<ServerUnderTest> {
        let workdir = tempfile::Builder::new().prefix("listwatch-bench-").tempdir()?;
        let (storage, backend, etcd_prefix) = match &args.etcd {
            Some(endpoints) => {
                let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis();
                let prefix = format!("/listwatch-bench-{}-{millis}", std::process::id());
                let described = format!("etcd {endpoints} (prefix {prefix})");
                let flags = vec!["--etcd".to_string(), endpoints.clone(), "--etcd-prefix".to_string(), prefix.clone()];
                (flags, described, Some(prefix))
            }
            None => (vec!["--ephemeral".to_string()], "embedded store (ephemeral)".to_string(), None),
        };
        let child = harness()?
            .dir(workdir)
            .storage_flags(storage)
            .args(&args.serve_arg)
            .exit_with_parent(true)
            .ready_timeout(Duration::from_secs(120))
            .try_start()
            .await
            .context("starting `listwatch serve`")?;
        let url = child.url.clone();
        let addr: SocketAddr = child.authority().parse().with_context(|| format!("the server reported {url}"))?;
        let pid = child.pid();
        eprintln!("bench: started `listwatch serve` (pid {pid}) on {addr} with the {backend}");
        Ok(ServerUnderTest { url, addr, pid: Some(pid), backend, etcd_prefix, child: Some(child), raw: None })
    }

    /// Starts a raw broadcaster ([`super::raw`]) as the server, with these flags (of `listwatch
    /// serve`'s, it knows `--watcher-queue`): writes go to its address over HTTP as to
    /// listwatch's, watches to the same address with [`super::transport::Transport::Raw`].
    pub async fn raw_broadcaster(flags: &[String]) -> anyhow::Result<ServerUnderTest> {
        let raw = RawBroadcaster::start(flags).await?;
        Ok(ServerUnderTest {
            url: format!("http://{}", raw.addr),
            addr: raw.addr,
            pid: Some(raw.pid),
            backend: "raw broadcaster (no HTTP or JSON on the watch path)".into(),
            etcd_prefix: None,
            child: None,
            raw: Some(raw),
        })
    }

    /// The last lines of the child's log (for error messages).
    fn log_tail(&self) -> String {
        let Some(child) = &self.child else { return String::new() };
        let text = child.log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits for a given server's `/readyz` to answer 200.
    async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        if !wait_until_ready(&self.url, timeout, Duration::from_millis(50)).await {
            bail!("{} did not become ready within {timeout:?}", self.url);
        }
        Ok(())
    }

    /// Adds "the server exited" (and where its log is) to an error, when the started child is
    /// gone: a run that fails because the server died says so.
    pub fn annotate(&self, error: anyhow::Error) -> anyhow::Error {
        match &self.child {
            Some(child) if !child.is_running() => error.context(format!(
                "`listwatch serve` (pid {}) exited during the run; last lines of its log:\n{}",
                self.pid.unwrap_or_default(),
                self.log_tail()
            )),
            _ => error,
        }
    }

    /// The server's CPU time and memory now, when its pid is known.
    pub fn usage(&self) -> Option<ProcessUsage> {
        ProcessUsage::of(self.pid?)
    }

    /// Resets the server's peak RSS (`VmHWM`) to its current RSS, so the next reading is the
    /// peak of what follows. Returns whether that worked.
    pub fn reset_peak_rss(&self) -> bool {
        self.pid.is_some_and(reset_peak_rss_of)
    }

    /// Stops a started child (SIGTERM, then SIGKILL after 10 s). A given server is left alone.
    pub async fn stop(mut self) {
        if let Some(mut child) = self.child.take() {
            child.stop().await;
        }
        if let Some(raw) = self.raw.take() {
            match raw.stats().await {
                Ok(stats) => eprintln!(
                    "bench: the raw broadcaster took {} writes and {} watchers, evicted {} that fell behind",
                    stats.resource_version - 1,
                    stats.accepted,
                    stats.evicted
                ),
                Err(e) => eprintln!("bench: could not read the raw broadcaster's counters: {e:#}"),
            }
            raw.stop().await;
        }
    }
}

impl Drop for ServerUnderTest {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            child.kill();
            // Keep the log of a run that did not end with `stop`.
            let kept = child.keep_dir();
            eprintln!("bench: the server's log is in {}", kept.join("server.log").display());
        }
    }
}

/// Resets process `pid`'s peak RSS (`VmHWM`) to its current RSS (where the kernel lets this
/// process do it). Returns whether that worked.
pub fn reset_peak_rss_of(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Raises this process's open-files limit (children inherit it) so that many thousands of
/// connections fit: the hard limit first, to the kernel's `fs.nr_open`, when the process may
/// (root), then the soft limit to the hard one. Says so when it changes the hard limit.
#[allow(unsafe_code)]
pub fn raise_open_files_limit() {
    let nr_open: u64 =
        std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|text| text.trim().parse().ok()).unwrap_or(0);
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        if nr_open > limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: nr_open, rlim_max: nr_open };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                eprintln!("bench: raised the open-files limit from {} to {nr_open} (fs.nr_open)", limit.rlim_max);
                return;
            }
        }
        if limit.rlim_cur < limit.rlim_max {
            let old = limit.rlim_cur;
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                tracing::debug!(old, new = limit.rlim_cur, "raised the open-files limit");
            } else {
                eprintln!("bench: could not raise the open-files limit from {old}");
            }
        }
    }
}

/// CPU seconds and memory of a process, from `/proc/<pid>/stat` and `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ProcessUsage {
    /// utime + stime, in seconds.
    pub cpu_seconds: f64,
    /// stime alone (the kernel's share: syscalls, TCP), in seconds.
    pub system_seconds: f64,
    /// `VmHWM`: peak resident set since start (or since the last reset), in bytes.
    pub peak_rss_bytes: u64,
    /// `VmRSS`: resident set now, in bytes.
    pub rss_bytes: u64,
}

impl ProcessUsage {
    pub fn of(pid: u32) -> Option<ProcessUsage> {
        Self::read(&format!("/proc/{pid}"))
    }

    pub fn of_self() -> Option<ProcessUsage> {
        Self::read("/proc/self")
    }

    #[allow(unsafe_code)]
    fn read(dir: &str) -> Option<ProcessUsage> {
        let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
        // Fields after the command name (which may hold spaces): state is field 3, so utime
        // (field 14) and stime (field 15) are the 12th and 13th here.
        let (_, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (user, system) = (fields.get(11)?.parse::<u64>().ok()?, fields.get(12)?.parse::<u64>().ok()?);
        // SAFETY: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Some(ProcessUsage {
            cpu_seconds: (user + system) as f64 / per_second,
            system_seconds: system as f64 / per_second,
            peak_rss_bytes: kib("VmHWM:") * 1024,
            rss_bytes: kib("VmRSS:") * 1024,
        })
    }
}

/// CPU seconds the whole machine spent busy (all processes, all cores) since boot, from the
/// first line of `/proc/stat`. Differences of two readings, less the server's and the bench's
/// own CPU, show how much else ran on the machine during a measurement.
#[allow(unsafe_code)]
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line.split_whitespace().filter_map(|t| t.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal ...
    let busy: u64 = ticks.iter().take(8).enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, t)| t).sum();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(busy as f64 / per_second)
}

/// Kernel CPU seconds between two readings.
pub fn system_between(before: Option<ProcessUsage>, after: Option<ProcessUsage>) -> Option<f64> {
    Some(after?.system_seconds - before?.system_seconds)
}

/// CPU seconds between two readings (`None` when either is missing).
pub fn cpu_between(before: Option<ProcessUsage>, after: Option<ProcessUsage>) -> Option<f64> {
    Some(after?.cpu_seconds - before?.cpu_seconds)
}

/// CPU seconds the rest of the machine used between two [`machine_busy_seconds`] readings.
pub fn other_cpu_seconds(
    machine_before: Option<f64>,
    machine_after: Option<f64>,
    server: Option<f64>,
    bench: Option<f64>,
) -> Option<f64> {
    Some((machine_after? - machine_before? - server.unwrap_or(0.0) - bench?).max(0.0))
}
