//! When each write was sent, looked up by the resourceVersion it produced.
//!
//! Writers record `(resourceVersion, send instant)` once the response names the revision;
//! watchers look the instant up for every event they receive. Revisions of one run are dense
//! (every write is one revision), so the log is an array indexed by `rv - base`, in segments
//! allocated on first use, of atomics: recording and looking up take no lock and allocate
//! nothing in the steady state. Instants are nanoseconds since the log's origin, plus one, so
//! 0 means "not recorded (yet)": a watcher can see an event before the writer has read the
//! write's response; it keeps such events aside and resolves them later.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const SEGMENT_BITS: u32 = 16;
const SEGMENT_LEN: usize = 1 << SEGMENT_BITS;
/// 4,096 segments of 65,536 revisions: 268 million writes per run.
const SEGMENTS: usize = 4096;

pub struct WriteLog {
    origin: Instant,
    /// The first revision the run can produce.
    base: u64,
    segments: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// The highest revision recorded.
    max_rv: AtomicU64,
    recorded: AtomicU64,
}

impl WriteLog {
    pub fn new(base: u64) -> WriteLog {
        WriteLog {
            origin: Instant::now(),
            base,
            segments: (0..SEGMENTS).map(|_| OnceLock::new()).collect(),
            max_rv: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
        }
    }

    /// Now, in the log's clock (nanoseconds since its origin, never 0).
    pub fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64 + 1
    }

    /// An instant in the log's clock.
    pub fn at(&self, instant: Instant) -> u64 {
        instant.saturating_duration_since(self.origin).as_nanos() as u64 + 1
    }

    /// Records that the write which produced `rv` was sent at `sent` (from [`WriteLog::now`]).
    /// Returns false for a revision outside the log.
    pub fn record(&self, rv: u64, sent: u64) -> bool {
        let Some(index) = rv.checked_sub(self.base).map(|i| i as usize) else { return false };
        let segment = index >> SEGMENT_BITS;
        if segment >= SEGMENTS {
            return false;
        }
        let slots = self.segments[segment].get_or_init(|| (0..SEGMENT_LEN).map(|_| AtomicU64::new(0)).collect());
        slots[index & (SEGMENT_LEN - 1)].store(sent, Ordering::Release);
        self.max_rv.fetch_max(rv, Ordering::AcqRel);
        self.recorded.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// When the write that produced `rv` was sent, if it is recorded.
    pub fn sent_at(&self, rv: u64) -> Option<u64> {
        let index = rv.checked_sub(self.base)? as usize;
        let slots = self.segments.get(index >> SEGMENT_BITS)?.get()?;
        match slots[index & (SEGMENT_LEN - 1)].load(Ordering::Acquire) {
            0 => None,
            sent => Some(sent),
        }
    }

    pub fn max_rv(&self) -> u64 {
        self.max_rv.load(Ordering::Acquire)
    }

    /// How many writes are recorded.
    pub fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_looks_up() {
        let log = WriteLog::new(100);
        assert_eq!(log.sent_at(100), None);
        assert!(!log.record(99, 5));
        assert!(log.record(100, 5));
        assert!(log.record(100 + SEGMENT_LEN as u64 * 3 + 7, 9));
        assert_eq!(log.sent_at(100), Some(5));
        assert_eq!(log.sent_at(100 + SEGMENT_LEN as u64 * 3 + 7), Some(9));
        assert_eq!(log.sent_at(101), None);
        assert_eq!(log.recorded(), 2);
        assert_eq!(log.max_rv(), 100 + SEGMENT_LEN as u64 * 3 + 7);
    }
}
