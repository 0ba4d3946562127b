//! The user's own programs in a scenario (`commands:`): a controller, `kubectl get -w`, a test
//! binary. Each runs under `sh -c` with the first server's kubeconfig in `KUBECONFIG`, from the
//! start of the run; its exit code (or its survival, for one that must keep running) is a check
//! of the run, apart from the watch guarantees. A command that cannot be started is reported as
//! that, not as a violation.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use super::scenario::{CommandExpectation, CommandSpec};

/// A started program.
pub struct Running {
    spec: CommandSpec,
    child: Result<Child, String>,
}

/// Starts every command.
pub fn start(specs: &[CommandSpec], kubeconfig: &Path) -> Vec<Running> {
    specs
        .iter()
        .map(|spec| {
            let child = Command::new("sh")
                .arg("-c")
                .arg(&spec.run)
                .env("KUBECONFIG", kubeconfig)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                // Its own process group, so the whole pipeline (`sh` and what it started) is
                // stopped at the end, not just `sh`.
                .process_group(0)
                .spawn()
                .map_err(|e| format!("could not start `sh -c {}`: {e}", spec.run));
            Running { spec: spec.clone(), child }
        })
        .collect()
}

/// What became of a command.
pub struct Finished {
    /// Its name.
    pub name: String,
    /// Whether it did what the scenario expects.
    pub passed: bool,
    /// What happened, for the report.
    pub outcome: String,
}

/// Ends every command (after the run's quiet period) and judges it.
pub async fn finish(running: Vec<Running>) -> Vec<Finished> {
    let mut finished = Vec::new();
    for Running { spec, child } in running {
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                finished.push(Finished { name: spec.name, passed: false, outcome: e });
                continue;
            }
        };
        let exited = child.try_wait().ok().flatten();
        let (passed, mut outcome) = match (spec.expect, exited) {
            (CommandExpectation::Success, Some(status)) => (status.success(), format!("exited: {status}")),
            (CommandExpectation::Success, None) => {
                (false, "still running at the end; expected to have exited 0".into())
            }
            (CommandExpectation::Running, None) => (true, "running until the end, as expected".into()),
            (CommandExpectation::Running, Some(status)) => {
                (false, format!("exited ({status}) before the end; expected to keep running"))
            }
        };
        if let Some(pid) = child.id() {
            kill_group(pid);
        }
        let _ = child.start_kill();
        let _ = child.wait().await;
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            // Bounded: a process that escaped the group could hold the pipe open.
            let _ = tokio::time::timeout(Duration::from_secs(1), pipe.read_to_string(&mut stderr)).await;
        }
        if !passed && !stderr.trim().is_empty() {
            let tail: Vec<&str> = stderr.trim().lines().rev().take(3).collect();
            outcome.push_str(&format!("; stderr ends: {}", tail.into_iter().rev().collect::<Vec<_>>().join(" | ")));
        }
        finished.push(Finished { name: spec.name, passed, outcome });
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
