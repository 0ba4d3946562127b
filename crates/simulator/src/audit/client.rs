//! One client's walk: its requests and the ends of its streams in time order, scope by scope,
//! keeping what each rule needs (what the client was delivered, the last 410, the last 429,
//! the LISTs and their causes, streams that still owe a re-watch) and asking the rules at each
//! step.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};

use super::finding::{Context, Finding, Rule};
use super::record::{Request, Scope, StreamEnd, Verb, scope_text};
use super::thresholds::Thresholds;
use crate::record::HistoryEvent;
use crate::scope::{Scope as Parsed, ScopeText};
use crate::view::ScopedHistory;

/// Storage's change log, seen through the scopes the clients asked about.
pub(super) struct Changes<'a> {
    log: &'a [&'a HistoryEvent],
    views: RefCell<HashMap<ScopeText, Result<std::rc::Rc<ScopedHistory>, String>>>,
}

/// A change the client should have been sent, as a finding names it.
pub(super) type Change = String;

impl<'a> Changes<'a> {
    pub(super) fn new(log: &'a [&'a HistoryEvent]) -> Changes<'a> {
        Changes { log, views: RefCell::default() }
    }

    /// The changes in `scope` with revisions in `(after, up_to]`, or why they cannot be known
    /// (no history, a history that starts later, a selector the history cannot evaluate).
    pub(super) fn between(&self, scope: &Scope, after: i64, up_to: i64) -> Result<Vec<Change>, String> {
        let first = self.log.first().map(|e| e.revision).ok_or("storage's history was not recorded")?;
        if after + 1 < first && self.log.first().is_some_and(|e| !(e.revision == 1 || e.created)) {
            return Err(format!("storage's history starts at revision {first}, after {after}"));
        }
        let view = self.view(scope)?;
        Ok(view.between(after, up_to).iter().map(ToString::to_string).collect())
    }

    /// How many objects `scope` held at `revision`.
    pub(super) fn count_at(&self, scope: &Scope, revision: i64) -> Option<usize> {
        self.view(scope).ok().map(|view| view.state_at(revision).len())
    }

    fn view(&self, scope: &Scope) -> Result<std::rc::Rc<ScopedHistory>, String> {
        let text = ScopeText::new(
            &scope.group,
            &scope.resource,
            scope.namespace.as_deref(),
            scope.label_selector.as_deref(),
            scope.field_selector.as_deref(),
        );
        let log = self.log;
        self.views
            .borrow_mut()
            .entry(text)
            .or_insert_with_key(|text| {
                Parsed::parse(text).map(|parsed| std::rc::Rc::new(ScopedHistory::new(log.iter().copied(), &parsed)))
            })
            .clone()
    }
}

/// What one client's walk found.
pub(super) struct Walked {
    pub(super) findings: Vec<Finding>,
    pub(super) unchecked: Vec<String>,
}

/// What the walk keeps of one scope of the client.
#[derive(Default)]
pub(super) struct ScopeState {
    /// The highest resourceVersion delivered here: a whole LIST, a watch's events and bookmarks.
    pub(super) delivered: Option<i64>,
    /// A stream here ended with its server (killed): what it delivered last is unknown, so the
    /// next resume is taken at its word.
    pub(super) lost: bool,
    /// The last bookmark delivered to a watch that asked for bookmarks, and that watch.
    pub(super) last_bookmark: Option<(i64, usize)>,
    /// A paged LIST whose pages are not all read yet: its resourceVersion, items and pages read,
    /// and its first page.
    pub(super) partial_list: Option<(i64, usize, usize, usize)>,
    /// Whether a watch stream of this scope was ever served.
    pub(super) watched: bool,
    /// Whether a whole LIST was served here since the last stream end.
    pub(super) listed_since_stream: bool,
    /// A 410 since the last delivered point (a streaming re-list is then deserved).
    pub(super) gone_since_delivered: bool,
    /// The last stream of this scope to end: its request, what it delivered, how it ended.
    pub(super) last_stream: Option<(usize, Option<i64>, Option<StreamEnd>)>,
    /// The state the `retries` rules keep.
    pub(super) retries: RetryState,
}

/// What the retry rules keep of one scope.
#[derive(Default)]
pub(super) struct RetryState {
    /// The last 410 not yet followed by a successful LIST or a watch from elsewhere.
    pub(super) gone: Option<Gone>,
    /// A 429's Retry-After: requests before `.0` (ms) break it; `.1` is the 429's request.
    pub(super) retry_until: Option<(u64, usize)>,
    /// Whether the last answer (or stream end) in this scope was an error.
    pub(super) last_answer_error: bool,
    /// Requests that followed an error answer, within the hot-loop window: (ms, request).
    pub(super) after_errors: VecDeque<(u64, usize)>,
    /// A hot loop already reported runs until then (ms): one finding per burst.
    pub(super) hot_reported_until: u64,
    /// LISTs (first pages) so far.
    pub(super) lists: usize,
    /// What explains a LIST: error answers and stream ends the server gave.
    pub(super) causes: usize,
    /// The LISTs, as evidence.
    pub(super) list_requests: Vec<usize>,
    /// A storm already reported (one finding per scope).
    pub(super) storm_reported: bool,
}

/// A 410 and what followed it.
pub(super) struct Gone {
    /// The resourceVersion that expired (0 for an expired continue token).
    pub(super) resource_version: i64,
    /// The requests that asked it (or older) again, the 410's own first.
    pub(super) asked: Vec<usize>,
    /// Whether the loop was reported already.
    pub(super) reported: bool,
}

/// Streams that owe a re-watch: (the stream's request, when it ended or went silent, due by).
#[derive(Default)]
pub(super) struct Pending(pub(super) Vec<(usize, u64, u64)>);

/// A request, or the end of a stream, in time order.
#[derive(Clone, Copy)]
enum Step {
    StreamEnd(usize),
    Stalled(usize),
    Request(usize),
}

/// The walk of one client.
pub(super) struct Walk<'a> {
    pub(super) client: &'a str,
    pub(super) requests: &'a [&'a Request],
    pub(super) changes: &'a Changes<'a>,
    pub(super) context: &'a Context,
    pub(super) thresholds: &'a Thresholds,
    pub(super) scopes: BTreeMap<Scope, ScopeState>,
    /// Objects' resourceVersions the client was told by a GET or a write: a watch of that one
    /// object (`metadata.name=`) may resume there.
    pub(super) objects: HashMap<(Scope, String), i64>,
    pub(super) stalls: Pending,
    pub(super) findings: Vec<Finding>,
    pub(super) unchecked: Vec<String>,
}

/// Walks `requests` (one client's, in time order).
pub(super) fn walk(
    client: &str,
    requests: &[&Request],
    changes: &Changes,
    context: &Context,
    thresholds: &Thresholds,
) -> Walked {
    let mut steps: Vec<(u64, Step)> = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        steps.push((request.at_ms, Step::Request(i)));
        if let Some(ended) = request.watch.as_ref().and_then(|w| w.ended_ms) {
            steps.push((ended, Step::StreamEnd(i)));
        }
        if let Some(stalled) = request.watch.as_ref().and_then(|w| w.stalled_ms) {
            steps.push((stalled, Step::Stalled(i)));
        }
    }
    // A stream's end comes before a request of the same millisecond (the client reacts to
    // it), but never before its own request (a watch that failed at once).
    steps.sort_by_key(|(at, step)| {
        let rank = match step {
            Step::StreamEnd(i) | Step::Stalled(i) if requests[*i].at_ms == *at => 2,
            Step::StreamEnd(_) | Step::Stalled(_) => 0,
            Step::Request(_) => 1,
        };
        (*at, rank)
    });
    let mut walk = Walk {
        client,
        requests,
        changes,
        context,
        thresholds,
        scopes: BTreeMap::new(),
        objects: HashMap::new(),
        stalls: Default::default(),
        findings: Vec::new(),
        unchecked: Vec::new(),
    };
    for (_, step) in steps {
        match step {
            Step::Request(i) => walk.request(i),
            Step::StreamEnd(i) => walk.stream_end(i),
            Step::Stalled(i) => walk.owe_rewatch(i, walk.requests[i].at_ms.max(walk.stalled_at(i))),
        }
    }
    walk.finish_stalls();
    Walked { findings: walk.findings, unchecked: walk.unchecked }
}

impl Walk<'_> {
    fn request(&mut self, i: usize) {
        let request = self.requests[i];
        self.check_retry_after(i);
        self.check_hot_loop(i);
        match request.verb {
            Verb::List => self.list(i),
            Verb::Watch => self.watch(i),
            Verb::Get | Verb::Write => self.object(i),
        }
        self.after_answer(i);
    }

    fn list(&mut self, i: usize) {
        let request = self.requests[i];
        if !request.params.continued {
            self.check_relist_storm(i);
        }
        self.check_gone_loop(i);
        let Some(list) = &request.list else { return };
        if !request.params.continued {
            self.check_back_in_time(i, list.resource_version, "a LIST");
        }
        let state = self.scopes.entry(request.scope.clone()).or_default();
        let (rv, items, pages, first) = match (request.params.continued, state.partial_list) {
            (true, Some((rv, items, pages, first))) => (rv, items + list.items, pages + 1, first),
            // A page after the first with no first page seen: judged as a list of its own.
            _ => (list.resource_version, list.items, 1, i),
        };
        if list.more {
            state.partial_list = Some((rv, items, pages, first));
            return;
        }
        state.partial_list = None;
        state.delivered = state.delivered.max(Some(rv));
        state.listed_since_stream = true;
        state.gone_since_delivered = false;
        state.retries.gone = None;
    }

    fn watch(&mut self, i: usize) {
        let request = self.requests[i];
        self.check_gone_loop(i);
        self.satisfy_stalls(i);
        if request.watch.is_some() {
            self.check_resume(i);
        }
        self.check_bookmarks_ignored(i);
        let state = self.scopes.entry(request.scope.clone()).or_default();
        if request.watch.is_some() {
            state.watched = true;
            // A watch that started from a point other than the last 410's ends that 410's loop.
            let asked = request.params.numeric_resource_version();
            if state.retries.gone.as_ref().is_none_or(|gone| asked.is_none_or(|rv| rv > gone.resource_version)) {
                state.retries.gone = None;
            }
            if request.params.numeric_resource_version().is_some() {
                // A resume taken at its word after a stream lost with its server.
                if state.lost {
                    state.delivered = state.delivered.max(asked);
                    state.lost = false;
                }
            }
        }
    }

    fn object(&mut self, i: usize) {
        let request = self.requests[i];
        if let (Some(name), Some(rv)) = (&request.name, request.object_resource_version) {
            let key = (request.scope.clone(), name.clone());
            let known = self.objects.entry(key).or_insert(rv);
            *known = (*known).max(rv);
        }
    }

    /// What a stream's end leaves: what it delivered, its bookmark, its error, a re-watch owed.
    fn stream_end(&mut self, i: usize) {
        let request = self.requests[i];
        let Some(watch) = &request.watch else { return };
        let bookmarks = request.params.allow_watch_bookmarks;
        let state = self.scopes.entry(request.scope.clone()).or_default();
        state.delivered = state.delivered.max(watch.delivered);
        if bookmarks
            && let Some(b) = watch.last_bookmark
            && state.last_bookmark.is_none_or(|(last, _)| b >= last)
        {
            state.last_bookmark = Some((b, i));
        }
        state.listed_since_stream = false;
        state.last_stream = Some((i, watch.delivered, watch.end));
        state.retries.stream_end(i, request, watch);
        if let Some(error) = &watch.error
            && error.code == 410
        {
            state.gone_since_delivered = true;
        }
        if watch.end == Some(StreamEnd::Lost) {
            state.lost = true;
        }
        if Walk::owes_on_end(watch.end) && watch.end != Some(StreamEnd::Lost) {
            self.owe_rewatch(i, watch.ended_ms.unwrap_or(request.at_ms));
        }
    }

    fn stalled_at(&self, i: usize) -> u64 {
        self.requests[i].watch.as_ref().and_then(|w| w.stalled_ms).unwrap_or(0)
    }

    /// The point the client was delivered in `scope`: the highest over every scope of the same
    /// resource that holds it (a watch of all namespaces delivers what a namespace's watch
    /// would), streams still open included (their last point, which can only excuse a resume);
    /// and whether a stream lost with its server makes that point unknown.
    pub(super) fn delivered_point(&self, scope: &Scope, before: usize) -> (Option<i64>, bool) {
        self.point(scope, before, true)
    }

    /// The point the client had surely been delivered in `scope` before request `before`: as
    /// [`Self::delivered_point`], but without streams still open (whose last point may come
    /// later), so that it can only excuse a state served as older.
    pub(super) fn surely_delivered(&self, scope: &Scope, before: usize) -> Option<i64> {
        self.point(scope, before, false).0
    }

    fn point(&self, scope: &Scope, before: usize, open_streams: bool) -> (Option<i64>, bool) {
        let mut point = None;
        let mut lost = false;
        for (other, state) in &self.scopes {
            if covers(other, scope) {
                point = point.max(state.delivered);
                lost |= state.lost;
            }
        }
        // Streams open at this request's time: what they delivered so far is at most their end.
        let at = self.requests[before].at_ms;
        for (j, request) in self.requests.iter().enumerate().take(before).filter(|_| open_streams) {
            if let Some(watch) = &request.watch
                && watch.ended_ms.is_none_or(|ended| ended > at)
                && covers(&request.scope, scope)
                && j != before
            {
                point = point.max(watch.delivered);
            }
        }
        if let Some(name) = single_object(scope) {
            for ((object_scope, object), rv) in &self.objects {
                if object == name && object_scope.namespace == scope.namespace && same_resource(object_scope, scope) {
                    point = point.max(Some(*rv));
                }
            }
        }
        (point, lost)
    }

    /// Adds a finding.
    pub(super) fn find(&mut self, rule: Rule, i: usize, summary: String, evidence: Vec<String>) {
        if !self.thresholds.judges(rule) {
            return;
        }
        let request = self.requests[i];
        self.findings.push(Finding {
            client: self.client.to_string(),
            rule,
            scope: scope_text(&request.scope),
            at_ms: request.at_ms,
            summary,
            evidence,
        });
    }

    /// A request's evidence line.
    pub(super) fn line(&self, i: usize) -> String {
        self.requests[i].describe(self.context.epoch_ms)
    }

    /// Seconds since the start of the observation, for a sentence.
    pub(super) fn seconds(&self, at_ms: u64) -> String {
        format!("{:.3} s", at_ms.saturating_sub(self.context.epoch_ms) as f64 / 1000.0)
    }

    /// The recent requests of `scope` before `i`, at most `n`, as evidence.
    pub(super) fn recent(&self, scope: &Scope, i: usize, n: usize) -> Vec<String> {
        let mut lines: VecDeque<String> = VecDeque::new();
        for j in (0..i).rev() {
            if &self.requests[j].scope == scope {
                lines.push_front(self.line(j));
                if lines.len() == n {
                    break;
                }
            }
        }
        lines.push_back(self.line(i));
        lines.into()
    }
}

/// Whether `outer` sees every object `inner` sees: the same resource, all namespaces or the
/// same one, and no selector or the same one.
pub(super) fn covers(outer: &Scope, inner: &Scope) -> bool {
    same_resource(outer, inner)
        && (outer.namespace.is_none() || outer.namespace == inner.namespace)
        && (outer.label_selector.is_none() || outer.label_selector == inner.label_selector)
        && (outer.field_selector.is_none() || outer.field_selector == inner.field_selector)
}

fn same_resource(a: &Scope, b: &Scope) -> bool {
    a.group == b.group && a.resource == b.resource
}

/// The name a scope is limited to by `fieldSelector=metadata.name=NAME` alone.
fn single_object(scope: &Scope) -> Option<&str> {
    let fields = scope.field_selector.as_deref()?;
    let name = fields.strip_prefix("metadata.name=").or_else(|| fields.strip_prefix("metadata.name=="))?;
    (!name.contains(',') && scope.label_selector.is_none()).then_some(name)
}
