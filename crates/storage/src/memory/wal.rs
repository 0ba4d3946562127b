//! Durability for the memory store: a write-ahead log of revisions plus snapshots.
//!
//! Files in the data directory:
//! * `wal-<seq>.log`: records `[len u32 LE][crc32 u32 LE][payload]`, one per write (`Put`,
//!   `Delete`) or compaction (`Compact`), in revision order;
//! * `snap-<seq>.snap`: the whole MVCC state (every version since the last compaction) as it
//!   was when segment `<seq>` was started, i.e. covering all segments below `<seq>`.
//!
//! Writers append encoded records to a shared queue while holding the store lock (so the
//! queue is in revision order) and then wait; one writer thread drains the queue, writes and
//! `fdatasync`s it as a group, and only then publishes the revisions to readers and watchers.
//! So an acknowledged write survives `kill -9` (and power loss), and nothing is ever seen that
//! could be lost.
//!
//! A snapshot is taken after a compaction, or once the current segment grows past a size:
//! the store clones its versions under its lock and enqueues a rotation marker; the writer
//! thread starts a new segment at that point and a background thread writes the snapshot, then
//! deletes the segments it covers. Recovery loads the newest complete snapshot and replays the
//! segments after it; a torn record at the end of the last segment (a crash mid-write) is cut off.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use super::mvcc::{Mutation, Mvcc, Version};
use crate::Revision;

const PUT: u8 = 1;
const DELETE: u8 = 2;
const COMPACT: u8 = 3;
const SNAP_HEADER: u8 = 10;
const SNAP_KEY: u8 = 11;
const SNAP_END: u8 = 12;

/// A record of the log, decoded.
#[derive(Debug, PartialEq)]
pub(crate) enum Record {
    Put { revision: Revision, key: Bytes, value: Bytes },
    Delete { revision: Revision, key: Bytes },
    Compact { revision: Revision },
}

pub(crate) fn encode_mutation(out: &mut Vec<u8>, revision: Revision, mutation: &Mutation) {
    frame(out, |p| match mutation {
        Mutation::Put { key, value } => {
            p.push(PUT);
            p.extend_from_slice(&revision.to_le_bytes());
            put_bytes(p, key);
            put_bytes(p, value);
        }
        Mutation::Delete { key } => {
            p.push(DELETE);
            p.extend_from_slice(&revision.to_le_bytes());
            put_bytes(p, key);
        }
    });
}

pub(crate) fn encode_compact(out: &mut Vec<u8>, revision: Revision) {
    frame(out, |p| {
        p.push(COMPACT);
        p.extend_from_slice(&revision.to_le_bytes());
    });
}

/// Appends `[len][crc][payload]`, the payload written in place by `write`.
fn frame(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    write(out);
    let payload = &out[start + 8..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

fn put_bytes(p: &mut Vec<u8>, b: &[u8]) {
    p.extend_from_slice(&(b.len() as u32).to_le_bytes());
    p.extend_from_slice(b);
}

/// Reads framed payloads from a file. Returns the payloads and the byte offset after the last
/// good one; `torn` is true if the file ends with an incomplete or corrupt record.
struct FrameReader {
    data: Vec<u8>,
}

impl FrameReader {
    fn open(path: &Path) -> io::Result<FrameReader> {
        let mut data = Vec::new();
        BufReader::new(File::open(path)?).read_to_end(&mut data)?;
        Ok(FrameReader { data })
    }

    /// `(payloads, good_len, torn)`.
    fn payloads(&self) -> (Vec<&[u8]>, usize, bool) {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < self.data.len() {
            if self.data.len() - pos < 8 {
                return (out, pos, true);
            }
            let len = u32::from_le_bytes(self.data[pos..pos + 4].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(self.data[pos + 4..pos + 8].try_into().unwrap());
            let Some(payload) = self.data.get(pos + 8..pos + 8 + len) else {
                return (out, pos, true);
            };
            if crc32fast::hash(payload) != crc {
                return (out, pos, true);
            }
            out.push(payload);
            pos += 8 + len;
        }
        (out, pos, false)
    }
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn u8(&mut self) -> io::Result<u8> {
        let (b, rest) = self.0.split_first().ok_or_else(corrupt)?;
        self.0 = rest;
        Ok(*b)
    }
    fn i64(&mut self) -> io::Result<i64> {
        let b = self.0.get(..8).ok_or_else(corrupt)?;
        self.0 = &self.0[8..];
        Ok(i64::from_le_bytes(b.try_into().unwrap()))
    }
    fn u32(&mut self) -> io::Result<u32> {
        let b = self.0.get(..4).ok_or_else(corrupt)?;
        self.0 = &self.0[4..];
        Ok(u32::from_le_bytes(b.try_into().unwrap()))
    }
    fn bytes(&mut self) -> io::Result<Bytes> {
        let n = self.u32()? as usize;
        let b = self.0.get(..n).ok_or_else(corrupt)?;
        self.0 = &self.0[n..];
        Ok(Bytes::copy_from_slice(b))
    }
}

fn corrupt() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "corrupt record in the memory store's data directory")
}

fn decode_record(payload: &[u8]) -> io::Result<Record> {
    let mut c = Cursor(payload);
    Ok(match c.u8()? {
        PUT => Record::Put { revision: c.i64()?, key: c.bytes()?, value: c.bytes()? },
        DELETE => Record::Delete { revision: c.i64()?, key: c.bytes()? },
        COMPACT => Record::Compact { revision: c.i64()? },
        _ => return Err(corrupt()),
    })
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("wal-{seq:016x}.log"))
}
fn snapshot_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("snap-{seq:016x}.snap"))
}

/// `(sequence numbers of segments, of snapshots)` found in `dir`, ascending.
fn list_files(dir: &Path) -> io::Result<(Vec<u64>, Vec<u64>)> {
    let mut segments = Vec::new();
    let mut snapshots = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let parse = |s: &str| u64::from_str_radix(s, 16).ok();
        if let Some(seq) = name.strip_prefix("wal-").and_then(|s| s.strip_suffix(".log")).and_then(parse) {
            segments.push(seq);
        } else if let Some(seq) = name.strip_prefix("snap-").and_then(|s| s.strip_suffix(".snap")).and_then(parse) {
            snapshots.push(seq);
        }
    }
    segments.sort_unstable();
    snapshots.sort_unstable();
    Ok((segments, snapshots))
}

/// The versions a snapshot holds, cloned from the store under its lock.
pub(crate) struct SnapshotData {
    pub current: Revision,
    pub compact_revision: Revision,
    pub versions: Vec<(Bytes, Vec<Version>)>,
}

impl SnapshotData {
    pub fn of(mvcc: &Mvcc) -> SnapshotData {
        SnapshotData {
            current: mvcc.current(),
            compact_revision: mvcc.raw_compact_revision(),
            versions: mvcc.versions().map(|(k, v)| (k.clone(), v.clone())).collect(),
        }
    }

    fn write(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("tmp");
        let mut out = BufWriter::new(File::create(&tmp)?);
        let mut buf = Vec::new();
        frame(&mut buf, |p| {
            p.push(SNAP_HEADER);
            p.extend_from_slice(&self.current.to_le_bytes());
            p.extend_from_slice(&self.compact_revision.to_le_bytes());
        });
        for (key, versions) in &self.versions {
            frame(&mut buf, |p| {
                p.push(SNAP_KEY);
                put_bytes(p, key);
                p.extend_from_slice(&(versions.len() as u32).to_le_bytes());
                for v in versions {
                    p.extend_from_slice(&v.mod_revision.to_le_bytes());
                    p.extend_from_slice(&v.create_revision.to_le_bytes());
                    p.extend_from_slice(&v.version.to_le_bytes());
                    match &v.value {
                        Some(value) => {
                            p.push(1);
                            put_bytes(p, value);
                        }
                        None => p.push(0),
                    }
                }
            });
            if buf.len() > 1 << 20 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        frame(&mut buf, |p| {
            p.push(SNAP_END);
            p.extend_from_slice(&(self.versions.len() as u64).to_le_bytes());
        });
        out.write_all(&buf)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(path.parent().expect("snapshot in a directory"))
    }

    /// Reads a snapshot; `None` if it is incomplete or corrupt (a crash while writing it).
    fn read(path: &Path) -> io::Result<Option<Mvcc>> {
        let reader = FrameReader::open(path)?;
        let (payloads, _, torn) = reader.payloads();
        if torn {
            return Ok(None);
        }
        let mut payloads = payloads.into_iter();
        let Some(header) = payloads.next() else {
            return Ok(None);
        };
        let mut c = Cursor(header);
        if c.u8()? != SNAP_HEADER {
            return Ok(None);
        }
        let (current, compact_revision) = (c.i64()?, c.i64()?);
        let mut index = BTreeMap::new();
        for payload in payloads {
            let mut c = Cursor(payload);
            match c.u8()? {
                SNAP_KEY => {
                    let key = c.bytes()?;
                    let n = c.u32()? as usize;
                    let mut versions = Vec::with_capacity(n);
                    for _ in 0..n {
                        let (mod_revision, create_revision, version) = (c.i64()?, c.i64()?, c.i64()?);
                        let value = if c.u8()? == 1 { Some(c.bytes()?) } else { None };
                        versions.push(Version { mod_revision, create_revision, version, value });
                    }
                    index.insert(key, versions);
                }
                SNAP_END => {
                    if c.i64()? as usize != index.len() {
                        return Ok(None);
                    }
                    return Ok(Some(Mvcc::restore(current, compact_revision, index)));
                }
                _ => return Ok(None),
            }
        }
        Ok(None)
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Rebuilds the store from `dir` (creating it if needed). Returns the state and the sequence
/// number for the next segment.
pub(crate) fn recover(dir: &Path) -> io::Result<(Mvcc, u64)> {
    fs::create_dir_all(dir)?;
    let (segments, snapshots) = list_files(dir)?;
    let mut mvcc = None;
    let mut from_seq = 0;
    for &seq in snapshots.iter().rev() {
        if let Some(state) = SnapshotData::read(&snapshot_path(dir, seq))? {
            mvcc = Some(state);
            from_seq = seq;
            break;
        }
        tracing::warn!(seq, "ignoring an incomplete snapshot");
    }
    let mut mvcc = mvcc.unwrap_or_default();
    let replay: Vec<u64> = segments.iter().copied().filter(|&s| s >= from_seq).collect();
    for (i, &seq) in replay.iter().enumerate() {
        let path = segment_path(dir, seq);
        let reader = FrameReader::open(&path)?;
        let (payloads, good_len, torn) = reader.payloads();
        for payload in payloads {
            apply_record(&mut mvcc, decode_record(payload)?)?;
        }
        if torn {
            if i + 1 != replay.len() {
                return Err(corrupt());
            }
            tracing::warn!(segment = %path.display(), good_len, "cutting a torn record off the end of the log");
            OpenOptions::new().write(true).open(&path)?.set_len(good_len as u64)?;
        }
    }
    let next_seq = segments.last().copied().max(snapshots.last().copied()).map_or(1, |s| s + 1);
    Ok((mvcc, next_seq))
}

fn apply_record(mvcc: &mut Mvcc, record: Record) -> io::Result<()> {
    let (revision, mutation) = match record {
        Record::Compact { revision } => {
            if revision > mvcc.raw_compact_revision() {
                mvcc.compact(revision).map_err(|_| corrupt())?;
            }
            return Ok(());
        }
        Record::Put { revision, key, value } => (revision, Mutation::Put { key, value }),
        Record::Delete { revision, key } => (revision, Mutation::Delete { key }),
    };
    // Records already covered by the snapshot are skipped (a snapshot may be newer than the
    // start of the segment it was taken in).
    if revision <= mvcc.current() {
        return Ok(());
    }
    if revision != mvcc.current() + 1 {
        return Err(corrupt());
    }
    let event = mvcc.apply(mutation);
    mvcc.publish(event.revision());
    Ok(())
}

/// What writers hand to the writer thread, in order.
enum Item {
    Records { bytes: Vec<u8>, last_revision: Revision },
    Rotate(Box<SnapshotData>),
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    closed: bool,
}

/// The writer side of the log: a queue and the thread that drains it.
pub(crate) struct Wal {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Size at which the writer thread asks for a snapshot even without a compaction.
pub(crate) const SEGMENT_SNAPSHOT_BYTES: u64 = 64 << 20;

impl Wal {
    /// Starts the writer thread on segment `seq` in `dir`. `on_synced(revision, result)` is
    /// called after each group is durable (or failed); `want_snapshot()` when the segment has
    /// grown past [`SEGMENT_SNAPSHOT_BYTES`].
    pub fn start(
        dir: PathBuf,
        seq: u64,
        on_synced: impl Fn(io::Result<Revision>) + Send + 'static,
        want_snapshot: impl Fn() + Send + 'static,
    ) -> io::Result<Wal> {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let mut writer = SegmentWriter::create(&dir, seq)?;
        let q = queue.clone();
        let thread = std::thread::Builder::new().name("memory-store-wal".into()).spawn(move || {
            let mut asked_for_snapshot = false;
            loop {
                let items: Vec<Item> = {
                    let (lock, cond) = &*q;
                    let mut queue = lock.lock();
                    while queue.items.is_empty() && !queue.closed {
                        cond.wait(&mut queue);
                    }
                    if queue.items.is_empty() {
                        return;
                    }
                    queue.items.drain(..).collect()
                };
                let mut last = None;
                let result = (|| -> io::Result<()> {
                    for item in items {
                        match item {
                            Item::Records { bytes, last_revision } => {
                                writer.write(&bytes)?;
                                last = Some(last_revision);
                            }
                            Item::Rotate(snapshot) => {
                                writer.sync()?;
                                writer = SegmentWriter::create(&dir, writer.seq + 1)?;
                                asked_for_snapshot = false;
                                spawn_snapshot_writer(dir.clone(), writer.seq, snapshot);
                            }
                        }
                    }
                    writer.sync()
                })();
                match result {
                    Ok(()) => {
                        if let Some(revision) = last {
                            on_synced(Ok(revision));
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the memory store's log cannot be written; the store stops accepting writes");
                        on_synced(Err(e));
                        return;
                    }
                }
                if writer.len > SEGMENT_SNAPSHOT_BYTES && !asked_for_snapshot {
                    asked_for_snapshot = true;
                    want_snapshot();
                }
            }
        })?;
        Ok(Wal { queue, thread: Mutex::new(Some(thread)) })
    }

    /// Enqueues encoded records ending at `last_revision`. Call under the store's lock, so the
    /// queue stays in revision order.
    pub fn append(&self, bytes: Vec<u8>, last_revision: Revision) {
        let (lock, cond) = &*self.queue;
        let mut queue = lock.lock();
        if let Some(Item::Records { bytes: pending, last_revision: last }) = queue.items.back_mut() {
            pending.extend_from_slice(&bytes);
            *last = last_revision;
        } else {
            queue.items.push_back(Item::Records { bytes, last_revision });
        }
        cond.notify_one();
    }

    /// Enqueues a rotation: a new segment starts here and `snapshot` (the state at this point)
    /// is written in the background. Call under the store's lock.
    pub fn rotate(&self, snapshot: SnapshotData) {
        let (lock, cond) = &*self.queue;
        lock.lock().items.push_back(Item::Rotate(Box::new(snapshot)));
        cond.notify_one();
    }

    /// Flushes what is queued and stops the writer thread.
    pub fn close(&self) {
        let (lock, cond) = &*self.queue;
        lock.lock().closed = true;
        cond.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.close();
    }
}

struct SegmentWriter {
    file: File,
    seq: u64,
    len: u64,
}

impl SegmentWriter {
    fn create(dir: &Path, seq: u64) -> io::Result<SegmentWriter> {
        let file = OpenOptions::new().create(true).append(true).open(segment_path(dir, seq))?;
        let len = file.metadata()?.len();
        sync_dir(dir)?;
        Ok(SegmentWriter { file, seq, len })
    }
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// Writes the snapshot covering segments below `seq`, then removes what it makes redundant.
fn spawn_snapshot_writer(dir: PathBuf, seq: u64, snapshot: Box<SnapshotData>) {
    let spawned = std::thread::Builder::new().name("memory-store-snapshot".into()).spawn(move || {
        let path = snapshot_path(&dir, seq);
        if let Err(e) = snapshot.write(&path) {
            // Not fatal: the older snapshot and every segment are still there.
            tracing::error!(error = %e, "writing a snapshot of the memory store failed");
            return;
        }
        if let Ok((segments, snapshots)) = list_files(&dir) {
            for s in segments.into_iter().filter(|&s| s < seq) {
                let _ = fs::remove_file(segment_path(&dir, s));
            }
            for s in snapshots.into_iter().filter(|&s| s < seq) {
                let _ = fs::remove_file(snapshot_path(&dir, s));
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the snapshot writer");
    }
}
