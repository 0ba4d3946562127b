//! `stalled`: a stream that ended, or went silent without ending (the half-open TCP case the
//! `stall` fault makes), owes a new watch of its scope within the deadline from a client that
//! is still running. A client that never notices a silent stream, or that stops watching
//! after an error while it goes on running, keeps a cache that no longer moves.

use super::client::{Walk, covers};
use super::finding::Rule;
use super::record::StreamEnd;

impl Walk<'_> {
    /// A stream ended (or went silent at `at`): its scope is owed a new watch.
    pub(super) fn owe_rewatch(&mut self, i: usize, at: u64) {
        let deadline = u64::try_from(self.thresholds.stall_deadline.as_millis()).unwrap_or(u64::MAX);
        if self.stalls.0.iter().any(|(j, ..)| *j == i) {
            return;
        }
        self.stalls.0.push((i, at, at.saturating_add(deadline)));
    }

    /// Where a stream's end owes a re-watch: every end but the client's own hang-up (which
    /// is its choice, or its answer to a silent stream already owed).
    pub(super) fn owes_on_end(end: Option<StreamEnd>) -> bool {
        !matches!(end, Some(StreamEnd::ClientGone) | None)
    }

    /// A new watch the server started pays what the streams of its scope owe (one refused,
    /// a 429 say, pays nothing); one after the deadline is late.
    pub(super) fn satisfy_stalls(&mut self, i: usize) {
        let request = self.requests[i];
        if request.watch.is_none() {
            return;
        }
        let mut late = Vec::new();
        self.stalls.0.retain(|(owed, since, due)| {
            let paid = covers(&request.scope, &self.requests[*owed].scope) && request.at_ms >= *since;
            if paid && request.at_ms > *due {
                late.push((*owed, *since));
            }
            !paid
        });
        for (owed, since) in late {
            let waited = (request.at_ms - since) as f64 / 1000.0;
            let summary = format!(
                "watched again only {waited:.1} s after its stream {} (deadline {:?})",
                self.how_it_stopped(owed),
                self.thresholds.stall_deadline
            );
            let evidence = vec![self.line(owed), self.line(i)];
            self.find(Rule::Stalled, owed, summary, evidence);
        }
    }

    /// At the end: what is still owed past its deadline, by a client still running then.
    pub(super) fn finish_stalls(&mut self) {
        let stopped = self.context.stopped.get(self.client).copied();
        let owed = std::mem::take(&mut self.stalls.0);
        for (i, since, due) in owed {
            if due > self.context.end_ms || stopped.is_some_and(|stopped| stopped <= due) {
                continue;
            }
            let summary = format!(
                "its stream {} at {} and it never watched again, though it kept running (deadline {:?})",
                self.how_it_stopped(i),
                self.seconds(since),
                self.thresholds.stall_deadline
            );
            let evidence = vec![self.line(i)];
            self.find(Rule::Stalled, i, summary, evidence);
        }
    }

    fn how_it_stopped(&self, i: usize) -> &'static str {
        match self.requests[i].watch.as_ref() {
            Some(watch) if watch.stalled_ms.is_some() => "went silent",
            Some(watch) => match watch.end {
                Some(StreamEnd::Error) => "ended with an ERROR",
                Some(StreamEnd::Cut) => "was cut",
                Some(StreamEnd::Timeout) => "timed out",
                _ => "ended",
            },
            None => "ended",
        }
    }
}
