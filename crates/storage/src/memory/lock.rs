//! One process per data directory, as etcd locks its WAL: two stores appending to the same
//! log would interleave their records and lose acknowledged writes.
//!
//! The lock is an advisory `flock` on `listwatch.lock` in the directory, which also holds the
//! owner's pid so the refusal can name it. The kernel drops a `flock` when its process dies,
//! so a store killed with `kill -9` never leaves a lock behind that blocks a restart (the stale
//! pid in the file is simply overwritten).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file's name inside a data directory.
pub const LOCK_FILE: &str = "listwatch.lock";

/// A held lock on a data directory; released when dropped (or when the process ends).
#[derive(Debug)]
pub(crate) struct DirLock {
    // Keeps the locked file description open.
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` (created if missing) without waiting. Fails with
    /// [`io::ErrorKind::ResourceBusy`] and a message naming the holder's pid when another
    /// process (or another store in this process) holds it.
    pub(crate) fn acquire(dir: &Path) -> io::Result<DirLock> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(LOCK_FILE);
        // Not truncated on open: the holder's pid must stay readable until we own the lock.
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
        #[allow(unsafe_code)]
        // SAFETY: flock on a file descriptor we own; it has no memory effects.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io::Error::new(error.kind(), format!("locking {}: {error}", path.display())));
            }
            return Err(busy(dir, &path, holder_pid(&mut file)));
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.sync_data()?;
        Ok(DirLock { _file: file })
    }
}

fn holder_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn busy(dir: &Path, path: &Path, pid: Option<u32>) -> io::Error {
    let holder = match pid {
        Some(pid) => format!("process {pid}"),
        // The holder locks before it writes its pid: we looked in between.
        None => "another process".to_string(),
    };
    io::Error::new(
        io::ErrorKind::ResourceBusy,
        format!("the data directory {} is in use by {holder} (it holds the lock on {})", dir.display(), path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_the_first_release_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let pid = std::process::id();
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), format!("{pid}\n"));
        // flock locks belong to the open file description: a second open in the same process
        // conflicts like another process would.
        let refused = DirLock::acquire(dir.path()).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ResourceBusy);
        assert!(refused.to_string().contains(&format!("in use by process {pid}")), "{refused}");
        drop(first);
        let _again = DirLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn a_stale_pid_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "999999999\n").unwrap();
        let _lock = DirLock::acquire(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), format!("{}\n", std::process::id()));
    }

    #[test]
    fn a_store_holds_its_data_dir_until_closed() {
        use crate::memory::{MemoryOptions, MemoryStore};
        let dir = tempfile::tempdir().unwrap();
        let options = MemoryOptions { data_dir: Some(dir.path().to_path_buf()), ..Default::default() };
        let store = MemoryStore::open(options.clone()).unwrap();
        let refused = MemoryStore::open(options.clone()).err().expect("a second store on the same dir is refused");
        assert_eq!(refused.kind(), io::ErrorKind::ResourceBusy, "{refused}");
        store.close();
        let reopened = MemoryStore::open(options).unwrap();
        reopened.close();
    }
}
