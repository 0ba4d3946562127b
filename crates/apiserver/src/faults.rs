//! Faults injected on purpose: what the debug API (and the `--break-watch` flag) makes the
//! server do to its clients, so the watch simulator can show how clients cope and that its
//! checker catches a broken guarantee. Kept apart from the handlers, at the bottom of the
//! crate, so the state holds them and the transport reads them without knowing who set them.
//!
//! * [`throttle`]: 429s for the next N requests;
//! * [`breaker`]: which watch guarantee every stream breaks (the pump breaks it);
//! * [`streams`]: network faults on watch streams (latency, cuts, blackholes, stalls, GOAWAY);
//! * [`reads`]: expired continue tokens, too-large resourceVersions;
//! * [`webhooks`]: admission webhooks down, slow or failing.

pub mod breaker;
pub mod reads;
pub mod streams;
pub mod throttle;
pub mod webhooks;

pub use breaker::{BreakerSwitch, WatchBreaker};
pub use reads::ReadFaults;
pub use streams::{StreamFault, StreamFaults, StreamPlan};
pub use throttle::Throttle;
pub use webhooks::{WebhookFailure, WebhookFaults};

/// What the debug API injects into watch streams, shared by the state and every stream's pump.
#[derive(Default)]
pub struct WatchFaults {
    /// The guarantee streams break on purpose.
    pub breaker: BreakerSwitch,
    /// Network faults on streams and connections.
    pub streams: StreamFaults,
}

impl WatchFaults {
    /// Faults with `breaker` set from the start (`--break-watch`).
    pub fn new(breaker: WatchBreaker) -> WatchFaults {
        WatchFaults { breaker: BreakerSwitch::new(breaker), streams: StreamFaults::default() }
    }
}
