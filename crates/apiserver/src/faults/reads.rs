//! Faults on the starts of LISTs and WATCHes (the debug API's `continue/expire` and
//! `toolarge`), each for a while:
//!
//! * expired continue tokens: every LIST that sends a `continue` token (for a while, or the
//!   next N of them) is answered 410 as if its revision had been compacted (kube's long
//!   message, and a token that continues inconsistently at the latest revision);
//! * too large resourceVersions: a LIST or WATCH at a resourceVersion above a ceiling is
//!   answered 504 "Too large resource version", as by a server whose cache trails storage after
//!   a restart (kubernetes#91073 is the client bug it shows).

use std::time::Instant;

use parking_lot::Mutex;

/// The read faults in effect.
#[derive(Default)]
pub struct ReadFaults {
    expire_continue_until: Mutex<Option<Instant>>,
    /// How many continue tokens are still to expire, whenever they come.
    expire_continue_next: Mutex<u64>,
    too_large: Mutex<Option<TooLarge>>,
}

#[derive(Clone, Copy)]
struct TooLarge {
    until: Instant,
    /// The resourceVersion the server claims to have reached.
    ceiling: i64,
}

impl ReadFaults {
    /// Continue tokens expire until `until`.
    pub fn expire_continue(&self, until: Instant) {
        *self.expire_continue_until.lock() = Some(until);
    }

    /// The next `count` continue tokens expire, whenever they come: a fault that meets a
    /// client's paged LIST however slowly that client starts.
    pub fn expire_next_continues(&self, count: u64) {
        *self.expire_continue_next.lock() = count;
    }

    /// Whether a continue token sent now expires (counting it against the next N, if any).
    pub fn continue_expires(&self) -> bool {
        if self.expire_continue_until.lock().is_some_and(|until| Instant::now() < until) {
            return true;
        }
        let mut next = self.expire_continue_next.lock();
        if *next > 0 {
            *next -= 1;
            return true;
        }
        false
    }

    /// Reads above `ceiling` are too large until `until`.
    pub fn too_large_above(&self, ceiling: i64, until: Instant) {
        *self.too_large.lock() = Some(TooLarge { until, ceiling });
    }

    /// The resourceVersion the server claims to have reached, when `asked` is above it now.
    pub fn too_large(&self, asked: i64) -> Option<i64> {
        let fault = (*self.too_large.lock())?;
        (Instant::now() < fault.until && asked > fault.ceiling).then_some(fault.ceiling)
    }
}
