//! Events after a watch's start revision S (the revision it resumed at, or the end of its initial
//! events), judged one by one against the scope's history:
//!
//! * `ordered`: each event's revision is above every earlier one's (an equal revision is a repeat,
//!   counted as `unique` instead);
//! * `unique`: no (revision, key) twice;
//! * `atomic`: each event is the one history makes of the write at its revision (type, uid,
//!   fingerprint; for DELETED the last state's);
//! * `resumable`: a watch resumed at S first delivers the scope's first event after S;
//! * `reliable`: every event of the scope in (S, highest revision delivered] was delivered;
//! * `bookmarkable`: a bookmark is not below the last event nor an earlier bookmark, and no event at
//!   or below a bookmark comes after it.
//!
//! A bookmark that passes an event not yet delivered is counted once, by what became of the event:
//! `bookmarkable` when it comes after the bookmark, `reliable` when it never comes (the reliable
//! window reaches the bookmark). Counting the lost event under both would make one fault read as
//! two.

use std::collections::HashSet;

use crate::record::Delivery;

use super::initial::InitialEnd;
use super::judge::{Delivered, Step, WatchCheck};
use super::verdict::Guarantee;
use crate::view::ObjectKey;

/// Where a watch's live events start.
pub(super) enum LiveStart {
    /// Resumed at a revision: the first event must be the scope's first after it.
    Resumed(i64),
    /// After a streaming list's initial events.
    AfterInitialEvents(InitialEnd),
}

/// What the watch has delivered so far.
struct Progress {
    /// S.
    start: i64,
    /// Whether the first event must be the first after S (a resumed watch).
    resumed: bool,
    /// Whether an event has been delivered after S.
    any_event: bool,
    /// Whether the watch asked for initial events (so one end bookmark is due, and it came).
    streaming: bool,
    last_event: Option<i64>,
    last_bookmark: Option<i64>,
    /// The highest revision delivered, events or bookmarks: where the reliable window ends.
    highest: i64,
    seen: HashSet<(i64, ObjectKey)>,
}

impl WatchCheck<'_> {
    /// Judges `deliveries`, all after S.
    pub(super) fn live_events(&mut self, deliveries: &[Delivery], from: LiveStart) {
        let (start, resumed, initial) = match from {
            LiveStart::Resumed(revision) => (revision, true, None),
            LiveStart::AfterInitialEvents(end) => (end.revision, false, Some(end.seen)),
        };
        let streaming = initial.is_some();
        let mut progress = Progress {
            start,
            resumed,
            any_event: false,
            streaming,
            last_event: None,
            // The end of the initial events is a bookmark too.
            last_bookmark: streaming.then_some(start),
            highest: start,
            seen: initial.unwrap_or_default(),
        };
        for delivery in deliveries {
            match Step::of(delivery) {
                Step::Event(event) => self.live_event(&mut progress, &event),
                Step::Bookmark { revision, initial_events_end } => {
                    self.bookmark(&mut progress, revision, initial_events_end);
                }
                Step::Error(error) => self.error(error, Some(progress.highest)),
            }
        }
        for expected in self.view.between(progress.start, progress.highest) {
            if !progress.seen.contains(&(expected.revision, expected.key.clone())) {
                self.flag(Guarantee::Reliable, || format!("{expected} never delivered"));
            }
        }
    }

    fn live_event(&mut self, progress: &mut Progress, event: &Delivered<'_>) {
        if progress.resumed && !progress.any_event {
            self.first_after_resume(progress.start, event);
        }
        progress.any_event = true;
        let id = event.id();
        if progress.seen.contains(&id) {
            self.flag(Guarantee::Unique, || format!("{event} delivered twice"));
            return;
        }
        progress.seen.insert(id);
        if progress.last_event == Some(event.revision) {
            self.flag(Guarantee::Unique, || format!("{event}: a second event at revision {}", event.revision));
            return;
        }
        if let Some(last) = progress.last_event.filter(|&last| event.revision < last) {
            self.flag(Guarantee::Ordered, || format!("{event} after an event at {last}"));
        }
        if let Some(bookmark) = progress.last_bookmark.filter(|&bookmark| event.revision <= bookmark) {
            self.flag(Guarantee::Bookmarkable, || format!("{event} after a bookmark at {bookmark}"));
        }
        self.content(event, true);
        progress.last_event = progress.last_event.max(Some(event.revision));
        progress.highest = progress.highest.max(event.revision);
    }

    /// A watch resumed at `start` must continue with the scope's first event after it.
    fn first_after_resume(&mut self, start: i64, event: &Delivered<'_>) {
        if event.revision <= start {
            self.flag(Guarantee::Resumable, || format!("resumed at {start}, the first event was {event}"));
        } else if let Some(expected) = self.view.first_after(start) {
            if (expected.revision, &expected.key) != (event.revision, &event.key) {
                self.flag(Guarantee::Resumable, || {
                    format!("resumed at {start}, the first event was {event}, not {expected}")
                });
            }
        }
    }

    fn bookmark(&mut self, progress: &mut Progress, revision: i64, initial_events_end: bool) {
        if initial_events_end {
            let why = if progress.streaming { "a second" } else { "an unasked-for" };
            self.flag(Guarantee::InitialEventsEnd, || format!("{why} initial-events-end bookmark at {revision}"));
        }
        if let Some(last) = progress.last_event.filter(|&last| revision < last) {
            self.flag(Guarantee::Bookmarkable, || format!("a bookmark at {revision} after an event at {last}"));
        } else if let Some(last) = progress.last_bookmark.filter(|&last| revision < last) {
            self.flag(Guarantee::Bookmarkable, || format!("a bookmark at {revision} after a bookmark at {last}"));
        }
        progress.last_bookmark = progress.last_bookmark.max(Some(revision));
        progress.highest = progress.highest.max(revision);
    }
}
