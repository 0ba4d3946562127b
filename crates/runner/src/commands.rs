//! The user's own programs in a scenario (`commands:`): a controller, `kubectl get -w`, a test
//! binary, in any language. Each runs under `sh -c` from the start of the run with a kubeconfig
//! of its own in `KUBECONFIG` (its own token, so the servers' audit tells it from the others)
//! and a free port in `PORT` (for a `cache:` it serves). Its exit (or its survival, for one
//! that must keep running) is a check of the run; a command that cannot be started is
//! reported as that, not as a violation.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::scenario::{CommandExpectation, CommandSpec};

/// A started program.
pub struct Running {
    /// What the scenario says of it.
    pub spec: CommandSpec,
    /// The port it was given.
    pub port: u16,
    /// Its task: waits for it to exit, or for `stop`, and says how it ended.
    task: Result<(oneshot::Sender<()>, JoinHandle<Exited>), String>,
}

/// How a program ended.
struct Exited {
    /// Its exit status, if it exited on its own (before it was stopped).
    status: Option<ExitStatus>,
    /// When it exited on its own (ms since the epoch).
    at_ms: Option<u64>,
    stderr: String,
}

/// Starts every command, each with its kubeconfig.
pub fn start(specs: &[CommandSpec], kubeconfigs: &[PathBuf]) -> Vec<Running> {
    specs
        .iter()
        .zip(kubeconfigs)
        .map(|(spec, kubeconfig)| {
            let port = free_port();
            let child = Command::new("sh")
                .arg("-c")
                .arg(&spec.run)
                .env("KUBECONFIG", kubeconfig)
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                // Its own process group, so the whole pipeline (`sh` and what it started) is
                // stopped at the end, not just `sh`.
                .process_group(0)
                .spawn()
                .map_err(|e| format!("could not start `sh -c {}`: {e}", spec.run));
            let task = child.map(|child| {
                let (stop, stopped) = oneshot::channel();
                (stop, tokio::spawn(supervise(child, stopped)))
            });
            Running { spec: spec.clone(), port, task }
        })
        .collect()
}

/// Waits for `child` to exit, or for `stop` (then kills its group); keeps the tail of its
/// stderr.
async fn supervise(mut child: tokio::process::Child, stop: oneshot::Receiver<()>) -> Exited {
    let reader = child.stderr.take().map(|pipe| tokio::spawn(stderr_tail(pipe)));
    let (status, at_ms) = tokio::select! {
        status = child.wait() => (status.ok(), Some(listwatch_apiserver::client_audit::now_ms())),
        _ = stop => {
            if let Some(pid) = child.id() {
                kill_group(pid);
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
            (None, None)
        }
    };
    // Bounded: a process that escaped the group could hold the pipe open.
    let stderr = match reader {
        Some(reader) => tokio::time::timeout(Duration::from_secs(1), reader).await.ok().and_then(Result::ok),
        None => None,
    };
    Exited { status, at_ms, stderr: stderr.unwrap_or_default() }
}

/// The last 16 KiB a program wrote to stderr (read as it goes, so the pipe never fills).
async fn stderr_tail(mut pipe: tokio::process::ChildStderr) -> String {
    const KEPT: usize = 16 * 1024;
    let mut tail = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 2 * KEPT {
            tail.drain(..tail.len() - KEPT);
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_or(0, |a| a.port())
}

/// What became of a command.
pub struct Finished {
    /// Its name.
    pub name: String,
    /// Whether its exit was what the scenario expects.
    pub passed: bool,
    /// What happened, for the report.
    pub outcome: String,
    /// When it exited on its own (ms since the epoch), if it did.
    pub exited_ms: Option<u64>,
}

/// Ends every command (after the run's quiet period) and judges its exit.
pub async fn finish(running: Vec<Running>) -> Vec<Finished> {
    let mut finished = Vec::new();
    for Running { spec, task, .. } in running {
        let (stop, task) = match task {
            Ok(task) => task,
            Err(e) => {
                finished.push(Finished { name: spec.name, passed: false, outcome: e, exited_ms: None });
                continue;
            }
        };
        let _ = stop.send(());
        let Ok(exited) = task.await else {
            finished.push(Finished { name: spec.name, passed: false, outcome: "lost".into(), exited_ms: None });
            continue;
        };
        let (passed, mut outcome) = match (spec.exit(), exited.status) {
            (CommandExpectation::Success, Some(status)) => (status.success(), format!("exited: {status}")),
            (CommandExpectation::Success, None) => {
                (false, "still running at the end; expected to have exited 0".into())
            }
            (CommandExpectation::Running, None) => (true, "running until the end, as expected".into()),
            (CommandExpectation::Running, Some(status)) => {
                (false, format!("exited ({status}) before the end; expected to keep running"))
            }
        };
        if !passed && !exited.stderr.trim().is_empty() {
            let tail: Vec<&str> = exited.stderr.trim().lines().rev().take(3).collect();
            outcome.push_str(&format!("; stderr ends: {}", tail.into_iter().rev().collect::<Vec<_>>().join(" | ")));
        }
        finished.push(Finished { name: spec.name, passed, outcome, exited_ms: exited.at_ms });
    }
    finished
}

/// SIGKILL to the process group `pid` leads (the command's own, see `process_group(0)`).
#[allow(unsafe_code)]
fn kill_group(pid: u32) {
    // Never a group that could hold this process or every process: only a real child's pid.
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    if pid > 1 && pid != libc::pid_t::try_from(std::process::id()).unwrap_or(0) {
        // SAFETY: kill(2) has no memory effects; a negative pid names the child's own group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}
