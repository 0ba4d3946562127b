//! Network faults on watch streams (`POST /debug/listwatch/streams?fault=...`): what a lossy,
//! slow or broken network between the server and its clients does to a long-lived watch,
//! injected in the server itself so that it reaches streams already open, works the same over
//! chunked HTTP/1.1, HTTP/2 and WebSocket, and needs no proxy in front of the server.
//!
//! This is only the plan every stream reads; the pump carries it out, and the connections
//! carry out GOAWAY. A fault applies to every stream open when it is set and to those opened
//! until it expires:
//!
//! * latency: each batch is held `base ± jitter` before it is written, order kept;
//! * cut: at its next event, a stream writes the first half of the event's bytes and ends
//!   abnormally (one shot unless given a duration);
//! * blackhole: a stream writes nothing (its connection stays open) until the fault expires,
//!   then ends abnormally;
//! * stall: a stream writes nothing, ever, and does not end (not even at its deadline): the
//!   half-open TCP connection whose peer vanished, which only a client's own timeout notices;
//! * GOAWAY: every HTTP/2 connection open now shuts down gracefully (open streams finish, new
//!   requests need a new connection).

use std::time::{Duration, Instant};

use tokio::sync::watch;

/// Faults in effect for watch streams; streams read a copy when it changes.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamPlan {
    /// Batches are held before they are written.
    pub latency: Option<Latency>,
    /// Streams are cut mid-event.
    pub cut: Option<Cut>,
    /// Streams are silent, then end abnormally.
    pub blackhole: Option<Blackhole>,
    /// Streams go silent for good.
    pub stall: Option<Stall>,
}

/// Streams opened up to `until` go silent and never end.
#[derive(Clone, Copy, Debug)]
pub struct Stall {
    /// Streams opened after this are spared.
    pub until: Instant,
}

/// Each batch is held `base` ± `jitter` (uniformly) until `until`.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    /// The delay asked for.
    pub base: Duration,
    /// How far a batch's delay may stray from `base`, either way.
    pub jitter: Duration,
    /// When the fault ends.
    pub until: Instant,
}

impl Latency {
    /// How long to hold the next batch, if the fault is still on.
    pub fn delay(&self, now: Instant) -> Option<Duration> {
        if now >= self.until {
            return None;
        }
        let low = self.base.saturating_sub(self.jitter);
        let high = self.base.saturating_add(self.jitter);
        Some(if high > low { rand::random_range(low..=high) } else { low })
    }
}

/// Streams opened up to `until` are cut at their next event (each cut once per stream).
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    /// Tells one cut from the next, so a stream is cut once by each.
    pub id: u64,
    /// Streams opened after this are spared.
    pub until: Instant,
}

impl Cut {
    /// Whether a stream opened at `opened` is to be cut by this fault.
    pub fn applies_to(&self, opened: Instant) -> bool {
        opened <= self.until
    }
}

/// Streams opened up to `until` write nothing until then, and end abnormally at `until`.
#[derive(Clone, Copy, Debug)]
pub struct Blackhole {
    /// When the silenced streams end.
    pub until: Instant,
}

impl Blackhole {
    /// When a stream opened at `opened` is to end, if this fault holds it.
    pub fn end_of(&self, opened: Instant) -> Option<Instant> {
        (opened <= self.until).then_some(self.until)
    }
}

/// The plan and the GOAWAY signal, shared by the state, every watch stream and every
/// connection.
pub struct StreamFaults {
    plan: watch::Sender<StreamPlan>,
    /// Counts GOAWAYs asked for; each connection sends one when it changes.
    goaways: watch::Sender<u64>,
}

impl Default for StreamFaults {
    fn default() -> Self {
        StreamFaults { plan: watch::channel(StreamPlan::default()).0, goaways: watch::channel(0).0 }
    }
}

impl StreamFaults {
    /// The plan, for a stream that starts now (it is told when the plan changes).
    pub fn subscribe(&self) -> watch::Receiver<StreamPlan> {
        self.plan.subscribe()
    }

    /// GOAWAYs, for a connection that starts now (it is told of those asked for later).
    pub fn goaways(&self) -> watch::Receiver<u64> {
        self.goaways.subscribe()
    }

    /// Holds each batch `base` ± `jitter` for `lasting`.
    pub fn delay(&self, base: Duration, jitter: Duration, lasting: Duration) {
        let until = after(lasting);
        self.plan.send_modify(|plan| plan.latency = Some(Latency { base, jitter, until }));
    }

    /// Cuts every stream open now, and those opened within `lasting`, at its next event.
    pub fn cut(&self, lasting: Duration) {
        let until = after(lasting);
        self.plan.send_modify(|plan| {
            let id = plan.cut.map_or(1, |cut| cut.id + 1);
            plan.cut = Some(Cut { id, until });
        });
    }

    /// Silences every stream open now, and those opened within `lasting`, until `lasting` is
    /// over; then they end abnormally.
    pub fn blackhole(&self, lasting: Duration) {
        let until = after(lasting);
        self.plan.send_modify(|plan| plan.blackhole = Some(Blackhole { until }));
    }

    /// Silences every stream open now, and those opened within `lasting`, for good: they stay
    /// open, write nothing and never end.
    pub fn stall(&self, lasting: Duration) {
        let until = after(lasting);
        self.plan.send_modify(|plan| plan.stall = Some(Stall { until }));
    }

    /// Ends every fault of the plan: held batches go out, blackholed streams speak again,
    /// streams not cut yet are left alone.
    pub fn clear(&self) {
        self.plan.send_modify(|plan| *plan = StreamPlan::default());
    }

    /// Sends GOAWAY on every HTTP/2 connection open now.
    pub fn goaway(&self) {
        self.goaways.send_modify(|count| *count += 1);
    }
}

/// `now + lasting`, saturated a century away.
fn after(lasting: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    let now = Instant::now();
    now.checked_add(lasting.min(CENTURY)).unwrap_or(now)
}

/// A network fault on watch streams, as a value (the debug API parses one from its query; a
/// test server's handle takes one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFault {
    /// Each batch held `base` ± `jitter`, order kept, for `lasting`.
    Latency {
        /// The delay.
        base: Duration,
        /// Up to this much more or less.
        jitter: Duration,
        /// How long streams are slowed.
        lasting: Duration,
    },
    /// Each stream cut in the middle of its next event (streams opened within `lasting` too).
    Cut {
        /// How long new streams are cut too (zero: the open ones only).
        lasting: Duration,
    },
    /// Nothing written for `lasting` (connections stay open), then the streams end abnormally.
    Blackhole {
        /// How long.
        lasting: Duration,
    },
    /// The streams go silent and never end, not even at their deadline (streams opened within
    /// `lasting` too): a half-open connection only the client's own timeout notices.
    Stall {
        /// How long new streams stall too (zero: the open ones only).
        lasting: Duration,
    },
    /// GOAWAY on every HTTP/2 connection open now.
    GoAway,
    /// Ends latency, cuts not taken yet, blackholes and stalls of streams opened from now on.
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_stays_within_its_jitter_until_it_expires() {
        let now = Instant::now();
        let latency = Latency {
            base: Duration::from_millis(100),
            jitter: Duration::from_millis(20),
            until: now + Duration::from_secs(1),
        };
        for _ in 0..100 {
            let delay = latency.delay(now).expect("on");
            assert!((Duration::from_millis(80)..=Duration::from_millis(120)).contains(&delay), "{delay:?}");
        }
        assert!(latency.delay(now + Duration::from_secs(1)).is_none());
        let exact = Latency { jitter: Duration::ZERO, ..latency };
        assert_eq!(exact.delay(now), Some(Duration::from_millis(100)));
    }

    #[test]
    fn faults_reach_streams_open_now_and_those_opened_before_they_expire() {
        let faults = StreamFaults::default();
        let opened = Instant::now();
        let mut plan = faults.subscribe();
        faults.cut(Duration::ZERO);
        assert!(plan.has_changed().unwrap());
        let cut = plan.borrow_and_update().cut.expect("a cut");
        assert!(cut.applies_to(opened));
        assert!(!cut.applies_to(Instant::now() + Duration::from_millis(1)), "one shot: later streams are spared");
        faults.cut(Duration::from_secs(60));
        let again = plan.borrow_and_update().cut.unwrap();
        assert_eq!(again.id, cut.id + 1);
        assert!(again.applies_to(Instant::now()));

        faults.blackhole(Duration::from_secs(60));
        let blackhole = plan.borrow_and_update().blackhole.unwrap();
        assert_eq!(blackhole.end_of(opened), Some(blackhole.until));
        assert_eq!(blackhole.end_of(blackhole.until + Duration::from_millis(1)), None);
        faults.clear();
        assert!(plan.borrow_and_update().blackhole.is_none());
    }
}
