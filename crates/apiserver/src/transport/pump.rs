//! The one watch pump: it takes a prepared watch's events in batches, ends the watch at its
//! deadline, at shutdown or after an ERROR event, encodes each event once (the objects'
//! bytes shared with every other watcher), counts what is sent, and hands each batch to the
//! transport's [`Framing`], which only decides how a batch becomes frames on its wire
//! (one chunk of a chunked body, or one WebSocket message per event). Faults belong here,
//! once, for every transport: the deliberate guarantee breakers ([`breakers`]) and the
//! network faults ([`network`]: latency, cuts mid-event, blackholes), which end a stream
//! abnormally ([`Aborted`]) where a broken network would.

mod breakers;
mod network;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::Stream;
use listwatch_encoding::{EventEncoder, MediaType};
use listwatch_meta::{Resource, WatchEvent};
use tokio::sync::watch;

use listwatch_simulator::audit::record::StreamEnd;

use crate::client_audit::stream::{Batch, WatchTap};
use crate::faults::{WatchBreaker, WatchFaults};
use crate::metrics;
use crate::options::with_client_version;
use crate::registry::WatchSource;
use crate::transport::body::Aborted;

/// At most this many events per batch (and per write).
const MAX_EVENTS_PER_BATCH: usize = 256;

/// A started watch: where its events come from, how they are encoded, and when it ends.
pub struct PreparedWatch {
    /// The events, from the cache or storage.
    pub source: WatchSource,
    /// The encoder of the negotiated stream type, which memoizes each object's bytes.
    pub encoder: EventEncoder,
    /// When the watch ends (the body simply ends, as kube's does).
    pub deadline: Instant,
    /// The stream's representation.
    pub media: MediaType,
    /// The resource watched (for metrics).
    pub resource: &'static Resource,
    /// The client's resourceVersion, named in a "too large" ERROR event.
    pub client_version: u64,
    /// The faults injected into watch streams (the debug API's switches).
    pub faults: Arc<WatchFaults>,
    /// The client audit's view of this stream, when the audit is on.
    pub tap: Option<Arc<WatchTap>>,
}

impl PreparedWatch {
    /// The next batch of events (see [`WatchSource::next_batch`]).
    async fn next_batch(&mut self, out: &mut Vec<WatchEvent>) -> bool {
        let before = out.len();
        let more = self.source.next_batch(out, MAX_EVENTS_PER_BATCH).await;
        if self.client_version > i64::MAX as u64 {
            for event in &mut out[before..] {
                if let WatchEvent::Error(e) = event {
                    *e = with_client_version(e.clone(), self.client_version);
                }
            }
        }
        more
    }
}

/// How a transport writes a batch of encoded events.
pub trait Framing: Send + 'static {
    /// What one batch becomes on this transport's wire.
    type Frame: Send + 'static;

    /// The frame of one batch: `pieces` holds its events encoded back to back, event `i`
    /// ending at `pieces[..ends[i]]`. `None` ends the watch (a batch this wire cannot carry).
    fn frame(&mut self, pieces: Vec<Bytes>, ends: &[usize]) -> Option<Self::Frame>;

    /// The frame of the first bytes of an event cut short (an injected fault), or `None` when
    /// this wire cannot carry part of an event.
    fn partial(&mut self, bytes: Bytes) -> Option<Self::Frame>;
}

/// Counts a watch as registered while it lives.
struct Registered(&'static Resource);

impl Registered {
    fn new(resource: &'static Resource) -> Registered {
        metrics::watcher_registered(resource, 1);
        Registered(resource)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        metrics::watcher_registered(self.0, -1);
    }
}

/// Batches a stream may hold under injected latency before it stops taking more from its
/// source (which then falls behind as a slow reader would).
const MAX_HELD_BATCHES: usize = 1024;

/// The state of a watch between batches: kept for the watch's life, so a batch costs no
/// allocation beyond its pieces and no timer re-arming.
struct PumpState<F: Framing> {
    watch: PreparedWatch,
    framing: F,
    deadline: Pin<Box<tokio::time::Sleep>>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    events: Vec<WatchEvent>,
    ends: Vec<usize>,
    metrics: metrics::WatchEventMetrics,
    _registered: Registered,
    /// The source has nothing more (it ended, or an ERROR event was taken): what is held goes
    /// out, then the stream ends.
    source_done: bool,
    /// Nothing more is written.
    finished: bool,
    /// The stream ends abnormally at the next step (after a cut's partial event).
    abort_next: bool,
    /// No batch was taken yet.
    fresh: bool,
    /// Events at or below this resourceVersion are the initial events.
    initial_through: i64,
    breaking: breakers::Breaking,
    network: network::NetworkView,
    /// Frames held back by injected latency, with when each is due (and, for the audit, what
    /// each carries), in order.
    held: VecDeque<(Instant, F::Frame, Option<Batch>)>,
    /// What the frame about to be returned carries (for the audit).
    returning: Option<Batch>,
    /// Why the stream ends, once it does.
    end: StreamEnd,
    /// Silent for good (the `stall` fault): nothing is written, the stream never ends.
    stalled: bool,
}

/// The frames of a watch, until the source ends, the deadline passes, the server shuts
/// down (`shutdown` turns true), or an ERROR event was sent; `Err` when an injected fault
/// ends it abnormally.
pub fn pump<F: Framing>(
    watch: PreparedWatch,
    mut shutdown: watch::Receiver<bool>,
    framing: F,
) -> impl Stream<Item = Result<F::Frame, Aborted>> + Send + 'static {
    let state = PumpState {
        deadline: Box::pin(tokio::time::sleep_until(watch.deadline.into())),
        shutdown: Box::pin(async move {
            let _ = shutdown.wait_for(|down| *down).await;
        }),
        // Both grow to the largest batch this watch saw, not to the largest possible one:
        // most watches see small batches, and 100,000 idle ones should not hold kilobytes
        // each (`listwatch bench watchers` measures it).
        events: Vec::new(),
        ends: Vec::new(),
        metrics: metrics::WatchEventMetrics::for_resource(watch.resource),
        _registered: Registered::new(watch.resource),
        initial_through: watch.source.initial_through(),
        network: network::NetworkView::new(&watch.faults.streams),
        watch,
        framing,
        source_done: false,
        finished: false,
        abort_next: false,
        fresh: true,
        breaking: breakers::Breaking::default(),
        held: VecDeque::new(),
        returning: None,
        end: StreamEnd::ServerClosed,
        stalled: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        let item = s.step().await;
        s.tell_audit(&item);
        Some((item?, s))
    })
}

impl<F: Framing> PumpState<F> {
    /// Tells the client audit what `item` wrote, or how the stream ended.
    fn tell_audit(&mut self, item: &Option<Result<F::Frame, Aborted>>) {
        let Some(tap) = &self.watch.tap else { return };
        match item {
            Some(Ok(_)) => {
                if let Some(batch) = self.returning.take() {
                    tap.wrote(&batch);
                }
            }
            Some(Err(Aborted)) => tap.ended(StreamEnd::Cut),
            None => tap.ended(self.end),
        }
    }

    /// What the events about to be framed carry, when the audit wants to know.
    fn batch(&self) -> Option<Batch> {
        self.watch.tap.as_ref().map(|_| Batch::of(&self.events))
    }

    /// Ends the stream for `why` (the audit is told when the end is returned).
    fn ends(&mut self, why: StreamEnd) -> Option<Result<F::Frame, Aborted>> {
        self.end = why;
        None
    }
}

impl<F: Framing> Drop for PumpState<F> {
    /// A stream dropped before it ended: the client went away (an end already told is kept).
    fn drop(&mut self) {
        if let Some(tap) = &self.watch.tap {
            tap.ended(StreamEnd::ClientGone);
        }
    }
}

impl<F: Framing> PumpState<F> {
    /// The next frame, an abnormal end, or `None` once the watch is over.
    async fn step(&mut self) -> Option<Result<F::Frame, Aborted>> {
        loop {
            if std::mem::take(&mut self.abort_next) {
                return Some(Err(Aborted));
            }
            // The deadline first: a watch whose deadline has passed (a negative timeoutSeconds)
            // ends even when events are ready (the timer alone may fire a tick late).
            self.network.refresh();
            if self.stalled || self.network.stalled() {
                // Silent for good, deadline or not, until the server shuts down (or the client,
                // noticing at last, goes away and the stream is dropped).
                if !std::mem::replace(&mut self.stalled, true)
                    && let Some(tap) = &self.watch.tap
                {
                    tap.stalled();
                }
                (&mut self.shutdown).await;
                return self.ends(StreamEnd::ServerClosed);
            }
            if self.finished {
                return None;
            }
            if Instant::now() >= self.watch.deadline {
                return self.ends(StreamEnd::Timeout);
            }
            if let Some(end) = self.network.blackhole_end() {
                // Silent, the connection open, until the blackhole ends; then broken.
                tokio::select! {
                    biased;
                    _ = &mut self.deadline => return self.ends(StreamEnd::Timeout),
                    _ = &mut self.shutdown => return self.ends(StreamEnd::ServerClosed),
                    _ = tokio::time::sleep_until(end.into()) => {
                        self.finished = true;
                        return Some(Err(Aborted));
                    }
                    _ = self.network.changed() => continue,
                }
            }
            let held_due = self.held.front().map(|(due, ..)| *due);
            if held_due.is_some_and(|due| due <= Instant::now()) {
                return self.held.pop_front().map(|(_, frame, batch)| {
                    self.returning = batch;
                    Ok(frame)
                });
            }
            let until_held_due = async {
                match held_due {
                    Some(due) => tokio::time::sleep_until(due.into()).await,
                    None => std::future::pending().await,
                }
            };
            self.events.clear();
            self.ends.clear();
            let breaker = self.watch.faults.breaker.get();
            if std::mem::take(&mut self.fresh)
                && breaker == WatchBreaker::SpuriousExpired
                && self.watch.client_version > 0
            {
                self.events.push(breakers::spurious_expired(self.watch.client_version));
            } else {
                let take_more = !self.source_done && self.held.len() < MAX_HELD_BATCHES;
                if !take_more && held_due.is_none() {
                    // The source is done: an ERROR event ended it, or the cache closed the
                    // watcher (dropped, too slow, reset), which `end` already says.
                    return None;
                }
                tokio::select! {
                    biased;
                    _ = &mut self.deadline => return self.ends(StreamEnd::Timeout),
                    _ = &mut self.shutdown => return self.ends(StreamEnd::ServerClosed),
                    _ = self.network.changed() => continue,
                    _ = until_held_due => continue,
                    more = self.watch.next_batch(&mut self.events), if take_more => {
                        if !more {
                            self.source_done = true;
                            continue;
                        }
                    }
                }
                self.breaking.apply(breaker, &mut self.events, self.initial_through, self.watch.resource);
            }
            let batch = self.batch();
            let mut pieces = Vec::with_capacity(self.events.len() * 3);
            for event in &self.events {
                let before = pieces.len();
                self.watch.encoder.event(event, &mut pieces);
                self.metrics.sent(pieces[before..].iter().map(Bytes::len).sum());
                self.ends.push(pieces.len());
                if matches!(event, WatchEvent::Error(_)) {
                    self.source_done = true;
                    self.end = StreamEnd::Error;
                }
            }
            if self.network.take_cut() {
                // Half of the first event, then the connection breaks (frames held back are
                // lost with it, as bytes in flight are).
                self.finished = true;
                self.abort_next = true;
                let first = self.ends.first().copied().unwrap_or(0);
                match self.framing.partial(network::first_half(&pieces[..first])) {
                    Some(frame) => return Some(Ok(frame)),
                    None => continue,
                }
            }
            let Some(frame) = self.framing.frame(pieces, &self.ends) else {
                return self.ends(StreamEnd::ServerClosed);
            };
            let delay = self.network.latency();
            if delay.is_none() && self.held.is_empty() {
                self.returning = batch;
                return Some(Ok(frame));
            }
            // Held back (or behind frames held back): due after the delay, never before the
            // frame ahead of it, so the order is kept.
            let now = Instant::now();
            let due = delay.map_or(now, |delay| now + delay).max(self.held.back().map_or(now, |(due, ..)| *due));
            self.held.push_back((due, frame, batch));
        }
    }
}
