//! The deliberate guarantee breakers (`listwatch serve --break-watch=<kind>`, `POST
//! /debug/listwatch/break?kind=<kind>`): a server that breaks one watch guarantee on purpose,
//! so the watch simulator's checker can be shown to catch each violation. This is only the
//! switch every watch stream reads; what each kind does to a stream is the pump's work
//! (`crate::transport::pump`), the same for every transport.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// Which guarantee watch streams break. "The event" is the 3rd ADDED, MODIFIED or DELETED
/// event of a stream after its initial events, counted while a breaker is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchBreaker {
    /// Every guarantee holds.
    #[default]
    None,
    /// The event is not sent (a gap: Reliable).
    SkipEvent,
    /// The event is sent twice (Unique).
    DuplicateEvent,
    /// A BOOKMARK at the event's resourceVersion comes before it (Bookmarkable).
    BookmarkAhead,
    /// The event's object carries a label `listwatch.dev/altered: "true"` it never had, at the
    /// same resourceVersion (an event must carry the state written at its revision).
    AlterObject,
    /// A watch from a numeric resourceVersion > 0 is answered with an in-stream 410 Expired
    /// although that version is in the window (a 410 only when history is really gone).
    SpuriousExpired,
}

impl WatchBreaker {
    /// Every kind, in the order the help lists them.
    pub const ALL: [WatchBreaker; 6] = [
        WatchBreaker::None,
        WatchBreaker::SkipEvent,
        WatchBreaker::DuplicateEvent,
        WatchBreaker::BookmarkAhead,
        WatchBreaker::AlterObject,
        WatchBreaker::SpuriousExpired,
    ];

    /// The kind's name on the command line and in the debug API.
    pub fn name(self) -> &'static str {
        match self {
            WatchBreaker::None => "none",
            WatchBreaker::SkipEvent => "skip-event",
            WatchBreaker::DuplicateEvent => "duplicate-event",
            WatchBreaker::BookmarkAhead => "bookmark-ahead",
            WatchBreaker::AlterObject => "alter-object",
            WatchBreaker::SpuriousExpired => "spurious-expired",
        }
    }
}

impl fmt::Display for WatchBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WatchBreaker {
    type Err = String;

    fn from_str(s: &str) -> Result<WatchBreaker, String> {
        WatchBreaker::ALL.into_iter().find(|b| b.name() == s).ok_or_else(|| {
            let names: Vec<&str> = WatchBreaker::ALL.iter().map(|b| b.name()).collect();
            format!("unknown watch breaker {s:?}: one of {}", names.join(", "))
        })
    }
}

/// The breaker every watch stream reads: one atomic load per batch.
#[derive(Default)]
pub struct BreakerSwitch(AtomicU8);

impl BreakerSwitch {
    /// A switch set to `breaker`.
    pub fn new(breaker: WatchBreaker) -> BreakerSwitch {
        let switch = BreakerSwitch::default();
        switch.set(breaker);
        switch
    }

    /// The breaker set now.
    pub fn get(&self) -> WatchBreaker {
        WatchBreaker::ALL.get(usize::from(self.0.load(Ordering::Relaxed))).copied().unwrap_or_default()
    }

    /// Sets the breaker for every stream, open or to come.
    pub fn set(&self, breaker: WatchBreaker) {
        let index = WatchBreaker::ALL.iter().position(|b| *b == breaker).expect("every kind is listed");
        self.0.store(index as u8, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names_and_the_switch() {
        let switch = BreakerSwitch::default();
        assert_eq!(switch.get(), WatchBreaker::None);
        for kind in WatchBreaker::ALL {
            assert_eq!(kind.name().parse::<WatchBreaker>(), Ok(kind));
            switch.set(kind);
            assert_eq!(switch.get(), kind);
        }
        let unknown = "skip".parse::<WatchBreaker>().unwrap_err();
        assert!(unknown.contains("skip-event, duplicate-event"), "{unknown}");
    }
}
