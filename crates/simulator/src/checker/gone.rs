//! Whether a 410 Gone was deserved. A server may refuse to continue a watch from revision `p` only
//! when the history after `p` is really unavailable: compacted away, from before the watch cache
//! was rebuilt (a reset or a restart, KEP-1904), or pushed out of the cache's window by newer
//! events. Anything else is a silent relist forced on every client, which is what this catches.
//!
//! `p` is the watch's position when the error came: the highest revision it had delivered, or the
//! revision it was started at. A watch that asked for `""` or `"0"` and delivered nothing has no
//! position, and no reason to be sent 410.
//!
//! The change log carries no times, so the window rule counts every write of the resource after
//! `p`, not only those before the error: it can excuse a 410 that came too early, never blame a
//! right one.

use crate::record::Known;

/// Judges 410s for the watches of one resource.
pub(crate) struct GoneJudge<'a> {
    pub(crate) known: &'a Known,
    pub(crate) resource: &'a str,
    /// The revisions of every write of the resource, ascending.
    pub(crate) revisions: &'a [i64],
}

impl GoneJudge<'_> {
    /// `Err` with what the server had when a 410 at `at_ms` to a watch at `position` was not
    /// deserved.
    pub(crate) fn judge(&self, at_ms: u64, position: Option<i64>) -> Result<(), String> {
        let Some(position) = position else {
            return Err("the watch asked for no revision and had delivered none".to_owned());
        };
        let compacted = self.known.compactions.iter().filter(|c| c.at_ms <= at_ms).map(|c| c.revision).max();
        if compacted.is_some_and(|compacted| position < compacted) {
            return Ok(());
        }
        let reset = self.known.cache_resets.iter().any(|reset| {
            reset.at_ms <= at_ms
                && (reset.resource.is_empty() || reset.resource == self.resource)
                && position < reset.revision
        });
        if reset {
            return Ok(());
        }
        let newer = self.revisions.len() - self.revisions.partition_point(|&revision| revision <= position);
        let capacity = self.known.window_capacity;
        if capacity > 0 && newer >= capacity {
            return Ok(());
        }
        let compacted = compacted.map_or("never compacted".to_owned(), |c| format!("compacted to {c}"));
        let window = if capacity == 0 { "no window".to_owned() } else { format!("a window of {capacity}") };
        Err(format!(
            "at revision {position}: {compacted}, no cache reset above it, {newer} newer writes of {} and {window}",
            self.resource
        ))
    }
}
