//! The rules about how a client retries: `410-loop` (the same expired resourceVersion asked
//! again and again), `retry-after-ignored` (back before a 429's Retry-After), `hot-loop`
//! (requests after error answers faster than any backoff) and `relist-storm` (LISTs beyond
//! what the errors and stream ends explain). Each judges one scope of one client.

use super::client::{Gone, RetryState, Walk};
use super::finding::Rule;
use super::record::{Request, StreamEnd, WatchServed};

impl RetryState {
    /// Whether the last answer or stream end in the scope was an error.
    pub(super) fn after_error(&self) -> bool {
        self.last_answer_error
    }

    /// What a stream's end leaves: a cause for a LIST (unless the client itself hung up), and
    /// an error (the ERROR event's 410 among them).
    pub(super) fn stream_end(&mut self, i: usize, request: &Request, watch: &WatchServed) {
        if watch.end != Some(StreamEnd::ClientGone) {
            self.causes += 1;
        }
        self.last_answer_error = watch.error.is_some();
        if let Some(error) = &watch.error
            && error.code == 410
        {
            self.gone_for(i, request);
        }
    }

    /// A 410 for what request `i` asked: a new loop to watch, unless it is the current loop's
    /// resourceVersion (or older) asked again, which the walk has counted already.
    fn gone_for(&mut self, i: usize, request: &Request) {
        let asked = request.params.numeric_resource_version().unwrap_or(0);
        if self.gone.as_ref().is_none_or(|gone| asked > gone.resource_version) {
            self.gone = Some(Gone { resource_version: asked, asked: vec![i], reported: false });
        }
    }
}

impl Walk<'_> {
    fn retry_state(&mut self, i: usize) -> &mut RetryState {
        &mut self.scopes.entry(self.requests[i].scope.clone()).or_default().retries
    }

    /// What an answer leaves for the next request of its scope.
    pub(super) fn after_answer(&mut self, i: usize) {
        let request = self.requests[i];
        let fraction = self.thresholds.retry_after_fraction;
        let state = self.retry_state(i);
        if !request.answer.is_error() {
            state.last_answer_error = false;
            return;
        }
        state.causes += 1;
        state.last_answer_error = true;
        if request.answer.code == 410 {
            state.gone_for(i, request);
        }
        if request.answer.code == 429
            && let Some(seconds) = request.answer.retry_after_seconds
        {
            let wait = (seconds as f64 * 1000.0 * fraction) as u64;
            state.retry_until = Some((request.at_ms + wait, i));
        }
    }

    /// `retry-after-ignored`: a request of the scope before the last 429's Retry-After (times
    /// the threshold's fraction) has passed.
    pub(super) fn check_retry_after(&mut self, i: usize) {
        let at = self.requests[i].at_ms;
        let Some((until, throttled)) = self.retry_state(i).retry_until else { return };
        self.retry_state(i).retry_until = None;
        if at >= until {
            return;
        }
        let told = self.requests[throttled].answer.retry_after_seconds.unwrap_or(0);
        let waited = at.saturating_sub(self.requests[throttled].at_ms);
        let summary = format!("came back {waited} ms after a 429 that said Retry-After: {told}");
        let evidence = vec![self.line(throttled), self.line(i)];
        self.find(Rule::RetryAfterIgnored, i, summary, evidence);
    }

    /// `hot-loop`: more requests after error answers within the window than the rate allows.
    pub(super) fn check_hot_loop(&mut self, i: usize) {
        let at = self.requests[i].at_ms;
        let window = u64::try_from(self.thresholds.hot_loop_window.as_millis()).unwrap_or(u64::MAX);
        let allowed = self.thresholds.hot_loop_per_second * self.thresholds.hot_loop_window.as_secs_f64();
        let state = self.retry_state(i);
        if !state.last_answer_error {
            return;
        }
        state.after_errors.push_back((at, i));
        while state.after_errors.front().is_some_and(|(t, _)| *t + window < at) {
            state.after_errors.pop_front();
        }
        if (state.after_errors.len() as f64) <= allowed || at < state.hot_reported_until {
            return;
        }
        state.hot_reported_until = at + window;
        let burst: Vec<usize> = state.after_errors.iter().map(|(_, j)| *j).collect();
        let first = self.requests[burst[0]].at_ms;
        let summary = format!(
            "{} requests after error answers in {} ms (more than {}/s for {:?}): no backoff",
            burst.len(),
            at - first,
            self.thresholds.hot_loop_per_second,
            self.thresholds.hot_loop_window
        );
        let mut evidence: Vec<String> = burst.iter().take(4).map(|j| self.line(*j)).collect();
        if burst.len() > 5 {
            evidence.push(format!("… {} more …", burst.len() - 5));
        }
        evidence.push(self.line(i));
        self.find(Rule::HotLoop, i, summary, evidence);
    }

    /// `410-loop`: after a 410 for r, r or older asked again, and refused with 410 again, more
    /// often than the threshold, with no successful LIST in between.
    pub(super) fn check_gone_loop(&mut self, i: usize) {
        let request = self.requests[i];
        let repeats = self.thresholds.gone_repeats;
        let state = self.retry_state(i);
        let Some(gone) = &mut state.gone else { return };
        // A streaming list is a relist (client-go's, after a 410, starts at its last
        // resourceVersion too): it ends the loop rather than repeats it.
        if request.params.send_initial_events == Some(true) {
            state.gone = None;
            return;
        }
        let asked = request.params.numeric_resource_version();
        if asked.is_none_or(|rv| rv > gone.resource_version) || gone.asked.is_empty() {
            return;
        }
        // Only a re-ask refused with 410 again turns the loop: a retry of a LIST that was
        // throttled, or one that succeeds, is not one.
        let refused_again = request.answer.code == 410
            || request.watch.as_ref().and_then(|w| w.error.as_ref()).is_some_and(|e| e.code == 410);
        if !refused_again {
            return;
        }
        // `asked` holds the 410 itself and the requests since that asked again.
        gone.asked.push(i);
        let again = gone.asked.len() - 1;
        if again <= repeats || gone.reported {
            return;
        }
        gone.reported = true;
        let rv = gone.resource_version;
        let asked: Vec<usize> = gone.asked.clone();
        let summary =
            format!("asked resourceVersion {rv} (or older) {again} more times after a 410 for it, without a LIST");
        let evidence = asked.iter().take(6).map(|j| self.line(*j)).collect();
        self.find(Rule::GoneLoop, i, summary, evidence);
    }

    /// `relist-storm`: LISTs beyond one per cause plus the slack.
    pub(super) fn check_relist_storm(&mut self, i: usize) {
        let slack = self.thresholds.relist_slack;
        let state = self.retry_state(i);
        state.lists += 1;
        state.list_requests.push(i);
        let allowed = 1 + state.causes + slack;
        if state.lists <= allowed || state.storm_reported {
            return;
        }
        state.storm_reported = true;
        let (lists, causes) = (state.lists, state.causes);
        let listed: Vec<usize> = state.list_requests.iter().rev().take(5).rev().copied().collect();
        let summary = format!(
            "{lists} LISTs where the server gave {causes} errors or stream ends (one LIST each, plus the first and {slack} more, would do)"
        );
        let evidence = listed.iter().map(|j| self.line(*j)).collect();
        self.find(Rule::RelistStorm, i, summary, evidence);
    }
}
