//! What the kit needs to know about, and do to, a process by its pid (Linux `/proc` and
//! signals), shared by the etcd and listwatch harnesses.

/// Whether `pid` runs (a zombie, waiting for its parent to reap it, does not count).
pub(crate) fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesized command name.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Asks `pid` to shut down gracefully (SIGTERM).
pub(crate) fn terminate(pid: u32) {
    #[allow(unsafe_code)]
    // SAFETY: kill(2) has no memory effects; the pid is a child this process has not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

/// Limits the child being started to `files` open files (soft and hard limit): for `pre_exec`.
pub(crate) fn limit_open_files(command: &mut std::process::Command, files: u64) {
    use std::os::unix::process::CommandExt;
    #[allow(unsafe_code)]
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: files as libc::rlim_t, rlim_max: files as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes the child being started get SIGTERM when the thread that starts it ends (the test or
/// bench process dies): for `pre_exec`.
pub(crate) fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    #[allow(unsafe_code)]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}
