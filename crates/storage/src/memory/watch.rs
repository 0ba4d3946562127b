//! Watches on the memory store.
//!
//! A watch is a cursor into the store's revision log, not a queue: each call to `next` reads
//! the events after its cursor straight from the log (up to 1,000 revisions per batch, like a
//! catching-up etcd watcher), and waits for the published revision to move when it has caught
//! up. So a watcher that falls behind costs the store nothing and is never cancelled: it simply
//! catches up from history, which only compaction bounds; if compaction passes its cursor it
//! gets `Compacted`, as etcd sends it.
//!
//! Progress notifications are exact: a watcher that has scanned the log up to the published
//! revision `P` has delivered every event `<= P`, so it answers a progress request (or its
//! periodic timer, when it asked for one and had no events since the last tick) with `P`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::Shared;
use crate::{KeyRange, ProgressRequester, Result, Revision, WatchResponse, WatchStream};

/// At most this many revisions per `Events` batch (etcd's `watchBatchMaxRevs`).
const MAX_REVISIONS_PER_BATCH: i64 = 1000;

pub(super) struct MemoryWatch {
    shared: Arc<Shared>,
    range: KeyRange,
    /// The next revision to examine.
    next: Revision,
    published: watch::Receiver<Revision>,
    progress: Arc<ProgressFlag>,
    ticker: Option<tokio::time::Interval>,
    events_since_tick: bool,
    tick_due: bool,
    done: bool,
}

#[derive(Default)]
struct ProgressFlag {
    requested: AtomicBool,
    notify: Notify,
}

impl MemoryWatch {
    pub(super) fn start(
        shared: Arc<Shared>,
        range: KeyRange,
        start_revision: Revision,
        progress_interval: Option<Duration>,
    ) -> (MemoryWatch, ProgressRequester) {
        let published = shared.published_tx.subscribe();
        let next = if start_revision > 0 { start_revision } else { shared.mvcc.read().published() + 1 };
        let progress: Arc<ProgressFlag> = Arc::default();
        let flag = progress.clone();
        let requester = ProgressRequester::new(move || {
            flag.requested.store(true, Ordering::Release);
            flag.notify.notify_one();
        });
        let ticker = progress_interval.map(|period| {
            let mut t = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        let watch = MemoryWatch {
            shared,
            range,
            next,
            published,
            progress,
            ticker,
            events_since_tick: false,
            tick_due: false,
            done: false,
        };
        (watch, requester)
    }

    /// Reads the log once. `None` means "caught up, nothing to say: wait".
    fn poll_log(&mut self) -> Option<WatchResponse> {
        loop {
            let mvcc = self.shared.mvcc.read();
            if self.next < mvcc.compact_revision() {
                self.done = true;
                return Some(WatchResponse::Compacted(mvcc.compact_revision()));
            }
            let published = mvcc.published();
            if self.next <= published {
                let (events, scanned_to) = mvcc.events(self.next, published, MAX_REVISIONS_PER_BATCH, &self.range);
                self.next = scanned_to + 1;
                if !events.is_empty() {
                    self.events_since_tick = true;
                    return Some(WatchResponse::Events(events));
                }
                continue;
            }
            // Caught up. A watch whose start is still in the future reports no progress (a
            // revision below its start would break the bookmark contract; etcd #20221).
            if self.next == published + 1 {
                if self.progress.requested.swap(false, Ordering::AcqRel) {
                    return Some(WatchResponse::Progress(published));
                }
                if std::mem::take(&mut self.tick_due) {
                    return Some(WatchResponse::Progress(published));
                }
            }
            return None;
        }
    }
}

#[async_trait::async_trait]
impl WatchStream for MemoryWatch {
    async fn next(&mut self) -> Option<Result<WatchResponse>> {
        loop {
            if self.done {
                return None;
            }
            if self.shared.is_failed() {
                self.done = true;
                return Some(Err(self.shared.failure()));
            }
            // Mark the published revision as seen before reading the log, so a write that
            // lands after the read wakes us.
            self.published.borrow_and_update();
            if let Some(response) = self.poll_log() {
                return Some(Ok(response));
            }
            let has_ticker = self.ticker.is_some();
            let ticker = self.ticker.as_mut();
            tokio::select! {
                changed = self.published.changed() => {
                    if changed.is_err() {
                        self.done = true;
                    }
                }
                _ = self.progress.notify.notified() => {}
                _ = async { ticker.expect("guarded").tick().await }, if has_ticker => {
                    // etcd skips the notification of a watcher that had events since the
                    // previous tick.
                    self.tick_due = !std::mem::take(&mut self.events_since_tick);
                }
            }
        }
    }
}
