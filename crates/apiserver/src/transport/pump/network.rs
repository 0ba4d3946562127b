//! Network faults ([`crate::faults::streams`]) as one stream carries them out: its copy of the
//! plan, re-read only when the debug API changed it (one atomic load per batch otherwise),
//! and which of the faults reach it (a cut or a blackhole reaches streams opened before it
//! expires; each cut is taken once).

use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::sync::watch;

use crate::faults::{StreamFaults, StreamPlan};

/// One stream's view of the network faults.
pub struct NetworkView {
    changes: watch::Receiver<StreamPlan>,
    /// One item per change of the plan. Its waiter is registered once and kept across
    /// batches (as the shutdown signal's is), so waiting for a batch costs no registration.
    wakeups: Pin<Box<dyn Stream<Item = ()> + Send>>,
    plan: StreamPlan,
    /// When the stream started: faults that expired before it spare it.
    opened: Instant,
    /// The last cut this stream took.
    last_cut: u64,
}

impl NetworkView {
    /// The view of a stream starting now.
    pub fn new(faults: &StreamFaults) -> NetworkView {
        let mut changes = faults.subscribe();
        let plan = *changes.borrow_and_update();
        let wakeups = futures::stream::unfold(faults.subscribe(), |mut changes| async move {
            changes.changed().await.ok()?;
            Some(((), changes))
        });
        NetworkView { changes, wakeups: Box::pin(wakeups), plan, opened: Instant::now(), last_cut: 0 }
    }

    /// Reads the plan again if it changed.
    pub fn refresh(&mut self) {
        if self.changes.has_changed().unwrap_or(false) {
            self.plan = *self.changes.borrow_and_update();
        }
    }

    /// Resolves once the plan changed (and was read); never when no one can change it.
    pub async fn changed(&mut self) {
        if self.wakeups.next().await.is_none() {
            std::future::pending::<()>().await;
        }
        self.refresh();
    }

    /// When this stream, silenced now, ends abnormally; `None` when it is not silenced.
    pub fn blackhole_end(&self) -> Option<Instant> {
        self.plan.blackhole.and_then(|b| b.end_of(self.opened))
    }

    /// Whether this stream is stalled for good.
    pub fn stalled(&self) -> bool {
        self.plan.stall.is_some_and(|stall| self.opened <= stall.until)
    }

    /// Whether this stream is to be cut at the event about to be written (the cut is then
    /// taken: it does not reach this stream again).
    pub fn take_cut(&mut self) -> bool {
        match self.plan.cut {
            Some(cut) if cut.id > self.last_cut && cut.applies_to(self.opened) => {
                self.last_cut = cut.id;
                true
            }
            _ => false,
        }
    }

    /// How long to hold the batch about to be written, if at all.
    pub fn latency(&self) -> Option<Duration> {
        self.plan.latency.and_then(|l| l.delay(Instant::now()))
    }
}

/// The first half of an event's encoded bytes: what a cut stream writes before it breaks.
pub fn first_half(event: &[Bytes]) -> Bytes {
    let bytes = listwatch_encoding::join(event);
    bytes.slice(..bytes.len() / 2)
}
