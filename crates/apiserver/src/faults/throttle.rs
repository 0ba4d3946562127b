//! 429s on demand (`POST /debug/listwatch/throttle`): the next N API requests are refused as
//! an overloaded server refuses them.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};

use listwatch_meta::ApiError;

/// Requests still to answer with 429, and the Retry-After to give them.
#[derive(Default)]
pub struct Throttle {
    remaining: AtomicI64,
    retry_after: AtomicU32,
    plain: AtomicBool,
}

/// One throttled answer.
pub struct Throttled {
    /// The Status, with its Retry-After.
    pub error: ApiError,
    /// Answer as kube's in-flight and priority-and-fairness filters do: Go's `http.Error`
    /// plain text, not a Status (clients that expect a Status must cope).
    pub plain: bool,
}

impl Throttle {
    /// Takes one throttled answer if any are left.
    pub fn take(&self) -> Option<Throttled> {
        let left = self.remaining.fetch_sub(1, Ordering::AcqRel);
        if left > 0 {
            let retry = self.retry_after.load(Ordering::Acquire).max(1);
            let error = ApiError::too_many_requests(
                "the server has received too many requests and has asked us to try again later (debug throttle)",
                retry,
            );
            return Some(Throttled { error, plain: self.plain.load(Ordering::Acquire) });
        }
        self.remaining.fetch_add(1, Ordering::AcqRel);
        None
    }

    /// Answers the next `count` requests with 429 and `Retry-After: retry_after` (as plain
    /// text when `plain`).
    pub fn set(&self, count: i64, retry_after: u32, plain: bool) {
        self.retry_after.store(retry_after, Ordering::Release);
        self.plain.store(plain, Ordering::Release);
        self.remaining.store(count, Ordering::Release);
    }
}
