//! The one watch pump: it takes a prepared watch's events in batches, ends the watch at its
//! deadline, at shutdown or after an ERROR event, encodes each event once (the objects'
//! bytes shared with every other watcher), counts what is sent, and hands each batch to the
//! transport's [`Framing`], which only decides how a batch becomes frames on its wire
//! (one chunk of a chunked body, or one WebSocket message per event). Faults belong here,
//! once, for every transport: the deliberate guarantee breakers ([`breakers`]).

mod breakers;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::Stream;
use listwatch_encoding::{EventEncoder, MediaType};
use listwatch_meta::{Resource, WatchEvent};
use tokio::sync::watch;

use crate::faults::{WatchBreaker, WatchFaults};
use crate::metrics;
use crate::options::with_client_version;
use crate::registry::WatchSource;

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

/// The state of a watch between batches: kept for the watch's life, so a batch costs no
/// allocation beyond its pieces and no timer re-arming.
struct PumpState<F> {
    watch: PreparedWatch,
    framing: F,
    deadline: Pin<Box<tokio::time::Sleep>>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    events: Vec<WatchEvent>,
    ends: Vec<usize>,
    metrics: metrics::WatchEventMetrics,
    _registered: Registered,
    ended: bool,
    /// No batch was taken yet.
    fresh: bool,
    /// Events at or below this resourceVersion are the initial events.
    initial_through: i64,
    breaking: breakers::Breaking,
}

/// The frames of a watch, until the source ends, the deadline passes, the server shuts
/// down (`shutdown` turns true), or an ERROR event was sent.
pub fn pump<F: Framing>(
    watch: PreparedWatch,
    mut shutdown: watch::Receiver<bool>,
    framing: F,
) -> impl Stream<Item = F::Frame> + Send + 'static {
    let state = PumpState {
        deadline: Box::pin(tokio::time::sleep_until(watch.deadline.into())),
        shutdown: Box::pin(async move {
            let _ = shutdown.wait_for(|down| *down).await;
        }),
        events: Vec::with_capacity(MAX_EVENTS_PER_BATCH),
        ends: Vec::with_capacity(MAX_EVENTS_PER_BATCH),
        metrics: metrics::WatchEventMetrics::for_resource(watch.resource),
        _registered: Registered::new(watch.resource),
        initial_through: watch.source.initial_through(),
        watch,
        framing,
        ended: false,
        fresh: true,
        breaking: breakers::Breaking::default(),
    };
    futures::stream::unfold(state, |mut s| async move {
        if s.ended {
            return None;
        }
        s.events.clear();
        s.ends.clear();
        // The deadline first: a watch whose deadline has passed (a negative timeoutSeconds)
        // ends even when events are ready (the timer alone may fire a tick late).
        if Instant::now() >= s.watch.deadline {
            return None;
        }
        let breaker = s.watch.faults.breaker.get();
        if std::mem::take(&mut s.fresh) && breaker == WatchBreaker::SpuriousExpired && s.watch.client_version > 0 {
            s.events.push(breakers::spurious_expired(s.watch.client_version));
        } else {
            tokio::select! {
                biased;
                _ = &mut s.deadline => return None,
                _ = &mut s.shutdown => return None,
                more = s.watch.next_batch(&mut s.events) => if !more { return None },
            }
            s.breaking.apply(breaker, &mut s.events, s.initial_through, s.watch.resource);
        }
        let mut pieces = Vec::with_capacity(s.events.len() * 3);
        for event in &s.events {
            let before = pieces.len();
            s.watch.encoder.event(event, &mut pieces);
            s.metrics.sent(pieces[before..].iter().map(Bytes::len).sum());
            s.ends.push(pieces.len());
            s.ended |= matches!(event, WatchEvent::Error(_));
        }
        let frame = s.framing.frame(pieces, &s.ends)?;
        Some((frame, s))
    })
}
