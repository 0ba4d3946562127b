//! The rules about where a client resumes: `missed-events` (later than anything it was sent,
//! or from the current state without a LIST, while its scope changed), `full-replay` (a
//! streaming list where a resume would do), `back-in-time` (served a state older than what it
//! had seen) and `bookmarks-ignored` (resumed before a bookmark it was sent, and paid a 410).

use super::client::{Walk, covers};
use super::finding::Rule;
use super::record::StreamEnd;

/// At most this many changes are named in a finding.
const CHANGES_NAMED: usize = 8;
/// client-go's reflector takes a watch that ended sooner than this with no event for an error
/// ("very short watch") and relists.
const VERY_SHORT_WATCH_MS: u64 = 1000;

impl Walk<'_> {
    /// The resume rules for a watch that the server started (`i` was answered 200).
    pub(super) fn check_resume(&mut self, i: usize) {
        let request = self.requests[i];
        let params = &request.params;
        // A span whose records were lost lies between the client's last recorded request and
        // this one: what it was sent then is unknown.
        let previous_ms = i.checked_sub(1).map(|j| self.requests[j].at_ms);
        if let Some((from, to)) =
            self.context.blind.iter().find(|(_, to)| *to <= request.at_ms && previous_ms.is_none_or(|p| p <= *to))
        {
            let (from, to) = (from.saturating_sub(self.context.epoch_ms), to.saturating_sub(self.context.epoch_ms));
            self.unchecked.push(format!(
                "{}: {}: resumed after {from}-{to} ms, when a server's records were lost with it",
                self.client,
                self.line(i)
            ));
            return;
        }
        let (delivered, lost) = self.delivered_point(&request.scope, i);
        let rewatch = self.scopes.iter().any(|(scope, state)| covers(scope, &request.scope) && state.watched);
        if params.send_initial_events == Some(true) {
            self.check_full_replay(i, delivered, rewatch);
        }
        if let Some(state_rv) = request.watch.as_ref().and_then(|w| w.state_resource_version) {
            self.check_back_in_time(i, state_rv, "a watch's initial state");
        }
        if lost {
            return;
        }
        match params.numeric_resource_version() {
            Some(asked) => {
                self.check_skip(i, asked, delivered);
                self.check_resume_behind(i, asked);
            }
            None if params.send_initial_events != Some(true) && rewatch => {
                self.check_current_state_rewatch(i, delivered);
            }
            None => {}
        }
    }

    /// A watch from `asked`, later than `delivered`: every change in between is missed. A
    /// paged LIST whose last page was never read, watched from, misses the unread pages.
    fn check_skip(&mut self, i: usize, asked: i64, delivered: Option<i64>) {
        let request = self.requests[i];
        let partial = self
            .scopes
            .iter()
            .filter(|(scope, _)| covers(scope, &request.scope))
            .filter_map(|(_, state)| state.partial_list)
            .find(|(rv, ..)| *rv == asked);
        if let Some((rv, items, pages, first)) = partial
            && delivered.is_none_or(|d| d < asked)
        {
            let held = self.changes.count_at(&request.scope, rv);
            let summary = match held {
                Some(held) => format!(
                    "watched from the resourceVersion {rv} of a paged LIST after reading {pages} page(s) with {items} of its {held} items: the rest were never sent"
                ),
                None => format!(
                    "watched from the resourceVersion {rv} of a paged LIST after reading only {pages} page(s) ({items} items), not its last"
                ),
            };
            let evidence = vec![self.line(first), self.line(i)];
            self.find(Rule::MissedEvents, i, summary, evidence);
            return;
        }
        let Some(delivered) = delivered else { return };
        if asked <= delivered {
            return;
        }
        match self.changes.between(&request.scope, delivered, asked) {
            Ok(missed) if missed.is_empty() => {}
            Ok(missed) => {
                let summary = format!(
                    "resumed at {asked}, past {delivered}, the last it was sent: {} change(s) in between never reached it",
                    missed.len()
                );
                let evidence = self.evidence_with_changes(i, &missed);
                self.find(Rule::MissedEvents, i, summary, evidence);
            }
            Err(why) => self.unchecked.push(format!("{}: {}: {why}", self.client, self.line(i))),
        }
    }

    /// A re-watch from the current state (`""` or `"0"`) with no LIST since its last stream:
    /// the changes between the last point delivered and the new state were never sent as
    /// changes (a deletion among them is lost for good).
    fn check_current_state_rewatch(&mut self, i: usize, delivered: Option<i64>) {
        let request = self.requests[i];
        let listed = self.scopes.iter().any(|(scope, state)| {
            covers(scope, &request.scope) && state.listed_since_stream && scope == &request.scope
        });
        let (Some(delivered), Some(now)) = (delivered, request.watch.as_ref().and_then(|w| w.state_resource_version))
        else {
            return;
        };
        if listed || now <= delivered {
            return;
        }
        match self.changes.between(&request.scope, delivered, now) {
            Ok(missed) if missed.is_empty() => {}
            Ok(missed) => {
                let deleted = missed.iter().filter(|change| change.starts_with("DELETED")).count();
                let summary = format!(
                    "re-watched from the current state (resourceVersion {:?}) without a LIST, after {delivered}: {} change(s) in between were never sent, {deleted} of them deletions",
                    request.params.resource_version.as_deref().unwrap_or(""),
                    missed.len()
                );
                let evidence = self.evidence_with_changes(i, &missed);
                self.find(Rule::MissedEvents, i, summary, evidence);
            }
            Err(why) => self.unchecked.push(format!("{}: {}: {why}", self.client, self.line(i))),
        }
    }

    /// `back-in-time`: a resume from before what the scope's last stream delivered, although
    /// that stream ended cleanly (its deadline, or the server closing it), so the client had
    /// read all of it: the changes in between come again, older than what it holds.
    fn check_resume_behind(&mut self, i: usize, asked: i64) {
        let request = self.requests[i];
        let Some(state) = self.scopes.get(&request.scope) else { return };
        let Some((last, Some(delivered), end)) = state.last_stream else { return };
        if asked >= delivered || !matches!(end, Some(StreamEnd::Timeout | StreamEnd::ServerClosed)) {
            return;
        }
        // Another stream of the scope still open: two chains (two informers) are not one.
        let at = request.at_ms;
        let concurrent = self.requests[..i].iter().enumerate().any(|(j, other)| {
            j != last
                && other.scope == request.scope
                && other.watch.as_ref().is_some_and(|w| w.ended_ms.is_none_or(|ended| ended > at))
        });
        if concurrent {
            return;
        }
        match self.changes.between(&request.scope, asked, delivered) {
            Ok(again) if again.is_empty() => {}
            Ok(again) => {
                let summary = format!(
                    "resumed at {asked}, behind {delivered}, which its last stream delivered whole before it ended: {} change(s) come again, older than what it holds",
                    again.len()
                );
                let mut evidence = vec![self.line(last), self.line(i)];
                evidence.extend(again.iter().take(CHANGES_NAMED).map(|change| format!("again: {change}")));
                self.find(Rule::BackInTime, i, summary, evidence);
            }
            Err(why) => self.unchecked.push(format!("{}: {}: {why}", self.client, self.line(i))),
        }
    }

    fn evidence_with_changes(&self, i: usize, missed: &[String]) -> Vec<String> {
        let request = self.requests[i];
        let mut evidence = self.recent(&request.scope, i, 2);
        evidence.extend(missed.iter().take(CHANGES_NAMED).map(|change| format!("missed: {change}")));
        if missed.len() > CHANGES_NAMED {
            evidence.push(format!("missed: … {} more", missed.len() - CHANGES_NAMED));
        }
        evidence
    }

    /// `full-replay`: a streaming list on a re-watch that could have resumed: the scope's last
    /// stream ended cleanly (its deadline, or the server closing it), it had been delivered a
    /// point, and no error came since. (After an error, a lost server or a cut, client-go too
    /// relists, by a streaming list when it uses them; kube-rs before 3.0 did it after every
    /// normal end.) A stream that ended within a second with nothing written to it is client-go's
    /// "very short watch", after which its reflector relists: no finding then.
    fn check_full_replay(&mut self, i: usize, delivered: Option<i64>, rewatch: bool) {
        let request = self.requests[i];
        let gone = self.scopes.iter().any(|(scope, state)| covers(scope, &request.scope) && state.gone_since_delivered);
        let Some(delivered) = delivered else { return };
        let Some(state) = self.scopes.get(&request.scope) else { return };
        let clean_end = matches!(state.last_stream, Some((_, _, Some(StreamEnd::Timeout | StreamEnd::ServerClosed))));
        if !rewatch || gone || !clean_end || state.retries.after_error() {
            return;
        }
        if let Some((last, ..)) = state.last_stream
            && let Some(watch) = &self.requests[last].watch
            && watch.events == 0
            && watch.bookmarks == 0
            && watch.ended_ms.is_some_and(|ended| ended.saturating_sub(self.requests[last].at_ms) < VERY_SHORT_WATCH_MS)
        {
            return;
        }
        let summary = format!(
            "re-watched with sendInitialEvents=true (every object again) after its stream ended cleanly, although it could resume at {delivered}"
        );
        let evidence = self.recent(&request.scope, i, 2);
        self.find(Rule::FullReplay, i, summary, evidence);
    }

    /// `back-in-time`: served a state (a LIST's, a watch's initial one) older than what the
    /// client had been delivered in the scope. A LIST that asked for the past
    /// (`resourceVersionMatch=Exact`) is exempt.
    pub(super) fn check_back_in_time(&mut self, i: usize, served: i64, what: &str) {
        let request = self.requests[i];
        if request.params.resource_version_match.as_deref() == Some("Exact") {
            return;
        }
        let Some(delivered) = self.surely_delivered(&request.scope, i) else { return };
        if served >= delivered {
            return;
        }
        let summary = format!("was served {what} at {served}, older than {delivered}, which it had been sent already");
        let evidence = self.recent(&request.scope, i, 2);
        self.find(Rule::BackInTime, i, summary, evidence);
    }

    /// `bookmarks-ignored`: a watch from before a bookmark the client was sent (on a watch
    /// that asked for them), answered 410 although the bookmark's resourceVersion was still
    /// servable.
    pub(super) fn check_bookmarks_ignored(&mut self, i: usize) {
        let request = self.requests[i];
        let Some(asked) = request.params.numeric_resource_version() else { return };
        let gone = match (&request.watch, request.answer.code) {
            (_, 410) => Some(&request.answer),
            (Some(watch), _) => watch.error.as_ref().filter(|error| error.code == 410),
            _ => None,
        };
        let Some(gone) = gone else { return };
        let bookmark = self
            .scopes
            .iter()
            .filter(|(scope, _)| covers(scope, &request.scope))
            .filter_map(|(_, state)| state.last_bookmark)
            .max();
        let Some((bookmark, bookmarked)) = bookmark else { return };
        if asked >= bookmark {
            return;
        }
        // kube's message names the oldest resourceVersion it still serves:
        // "too old resource version: 5 (10)". Without it, nothing says the bookmark would have
        // done better.
        let Some(oldest) = gone.message.as_deref().and_then(oldest_servable) else { return };
        if bookmark < oldest {
            return;
        }
        let summary = format!(
            "resumed at {asked}, before the bookmark at {bookmark} it was sent, and got a 410 (the server still served from {oldest})"
        );
        let evidence = vec![self.line(bookmarked), self.line(i)];
        self.find(Rule::BookmarksIgnored, i, summary, evidence);
    }
}

/// The oldest servable resourceVersion a 410's message names: `too old resource version: 5 (10)`.
fn oldest_servable(message: &str) -> Option<i64> {
    let open = message.rfind('(')?;
    message[open + 1..].strip_suffix(')')?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_oldest_servable_version_is_read_from_kubes_message() {
        assert_eq!(super::oldest_servable("too old resource version: 5 (10)"), Some(10));
        assert_eq!(super::oldest_servable("The resourceVersion for the provided watch is too old."), None);
    }
}
