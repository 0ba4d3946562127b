//! A watch's progress as the audit sees it: the pump reports each batch it wrote, the moment
//! it went silent (the `stall` fault) and how it ended; the audit reads it at any time.

use std::time::{SystemTime, UNIX_EPOCH};

use listwatch_meta::WatchEvent;
use listwatch_simulator::audit::record::{Answer, StreamEnd, WatchServed};
use parking_lot::Mutex;

/// Milliseconds since the Unix epoch: the clock of every record, shared by server processes.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One watch's progress, shared by its pump and the audit.
#[derive(Default)]
pub struct WatchTap(Mutex<WatchServed>);

/// What one batch carried, read before it is encoded.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    highest: Option<i64>,
    events: u64,
    bookmarks: u64,
    last_bookmark: Option<i64>,
    error: Option<Answer>,
}

impl Batch {
    /// What `events` carry.
    pub fn of(events: &[WatchEvent]) -> Batch {
        let mut batch = Batch::default();
        for event in events {
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    batch.events += 1;
                    batch.highest = batch.highest.max(Some(o.resource_version()));
                }
                WatchEvent::Bookmark { resource_version, .. } => {
                    batch.bookmarks += 1;
                    batch.highest = batch.highest.max(Some(*resource_version));
                    batch.last_bookmark = Some(*resource_version);
                }
                WatchEvent::Error(e) => {
                    let status = e.status();
                    batch.error = Some(Answer {
                        code: e.code(),
                        reason: Some(status.reason.clone()),
                        message: Some(status.message.clone()),
                        retry_after_seconds: None,
                    });
                }
            }
        }
        batch
    }
}

impl WatchTap {
    /// The watch started from a state at `resource_version` (a start from `""` or `"0"`, or a
    /// streaming list).
    pub fn starts_at(&self, resource_version: i64) {
        self.0.lock().state_resource_version = Some(resource_version);
    }

    /// A batch was written whole.
    pub fn wrote(&self, batch: &Batch) {
        let mut served = self.0.lock();
        served.delivered = served.delivered.max(batch.highest);
        served.events += batch.events;
        served.bookmarks += batch.bookmarks;
        if batch.last_bookmark.is_some() {
            served.last_bookmark = batch.last_bookmark;
        }
        if batch.error.is_some() {
            served.error = batch.error.clone();
        }
        served.last_write_ms = Some(now_ms());
    }

    /// The stream went silent for good (it stays open).
    pub fn stalled(&self) {
        let mut served = self.0.lock();
        if served.stalled_ms.is_none() && served.ended_ms.is_none() {
            served.stalled_ms = Some(now_ms());
        }
    }

    /// The stream ended (the first end reported is the one kept).
    pub fn ended(&self, how: StreamEnd) {
        let mut served = self.0.lock();
        if served.ended_ms.is_none() {
            served.ended_ms = Some(now_ms());
            served.end = Some(how);
        }
    }

    /// What the watch has served so far.
    pub fn served(&self) -> WatchServed {
        self.0.lock().clone()
    }
}
