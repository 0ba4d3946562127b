//! Each rule shown both ways on hand-written records: the bug it looks for is found, and what
//! correct clients do (the spec's "must not trip" column) gives no finding.

use std::time::Duration;

use super::record::{Answer, ListServed, Params, Request, Scope, StreamEnd, Verb, WatchServed};
use super::{Context, Rule, Thresholds, judge};
use crate::record::{Change, HistoryEvent};

fn scope() -> Scope {
    Scope { group: String::new(), resource: "configmaps".into(), namespace: Some("ns".into()), ..Scope::default() }
}

/// A client's requests, built in time order.
struct Client {
    requests: Vec<Request>,
    now: u64,
}

impl Client {
    fn new() -> Client {
        Client { requests: Vec::new(), now: 1_000 }
    }

    fn after(&mut self, ms: u64) -> &mut Client {
        self.now += ms;
        self
    }

    fn request(&mut self, verb: Verb, rv: Option<&str>, code: u16) -> &mut Request {
        self.requests.push(Request {
            client: "c".into(),
            server: "s".into(),
            at_ms: self.now,
            verb,
            scope: scope(),
            name: None,
            params: Params { resource_version: rv.map(str::to_owned), ..Params::default() },
            answer: Answer { code, ..Answer::default() },
            list: None,
            watch: None,
            object_resource_version: None,
        });
        self.requests.last_mut().unwrap()
    }

    /// A LIST answered at `rv`.
    fn list(&mut self, asked: Option<&str>, rv: i64) -> &mut Client {
        let request = self.request(Verb::List, asked, 200);
        request.list = Some(ListServed { resource_version: rv, items: 3, more: false });
        self
    }

    /// A watch from `asked` that delivered up to `delivered` and ended `lasting` ms later.
    fn watch(&mut self, asked: &str, delivered: Option<i64>, lasting: u64, end: StreamEnd) -> &mut Client {
        let ended = self.now + lasting;
        let request = self.request(Verb::Watch, Some(asked), 200);
        request.watch =
            Some(WatchServed { delivered, ended_ms: Some(ended), end: Some(end), ..WatchServed::default() });
        self.now = ended;
        self
    }

    fn last(&mut self) -> &mut Request {
        self.requests.last_mut().unwrap()
    }

    fn error(&mut self, verb: Verb, asked: Option<&str>, code: u16, message: &str) -> &mut Client {
        let request = self.request(verb, asked, code);
        request.answer.message = Some(message.into());
        self
    }
}

fn put(revision: i64, name: &str) -> HistoryEvent {
    HistoryEvent {
        revision,
        kind: Change::Put,
        created: true,
        group: String::new(),
        resource: "configmaps".into(),
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        labels: Default::default(),
        fingerprint: revision as u64,
        object: None,
    }
}

/// Storage wrote one object per revision from 1 to `last`.
fn history(last: i64) -> Vec<HistoryEvent> {
    (1..=last).map(|rv| put(rv, &format!("o{rv}"))).collect()
}

fn rules(client: &Client, history: &[HistoryEvent], thresholds: &Thresholds) -> Vec<Rule> {
    let context = Context { epoch_ms: 0, end_ms: client.now, stopped: Default::default(), blind: Vec::new() };
    judge(&client.requests, history, &context, thresholds).findings.iter().map(|f| f.rule).collect()
}

fn findings(client: &Client, history: &[HistoryEvent]) -> Vec<Rule> {
    rules(client, history, &Thresholds::default())
}

#[test]
fn a_correct_reflector_gives_no_finding() {
    // client-go: LIST, WATCH from its RV, re-watch from the last delivered after each normal
    // end; a 410 in the stream, a LIST at the last RV, then a watch from the new list.
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout);
    c.watch("20", Some(25), 5_000, StreamEnd::ServerClosed);
    c.watch("25", Some(25), 100, StreamEnd::Error).last().watch.as_mut().unwrap().error =
        Some(Answer { code: 410, message: Some("too old resource version: 25 (27)".into()), ..Answer::default() });
    c.after(800).list(Some("25"), 30).watch("30", Some(40), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(40)), []);
}

/// A server that went away took the records of what it served after they were last read: a
/// client resuming past its recorded point after that is not judged (it may have been sent
/// the changes in the lost span), but is listed as unchecked; one whose records cover the span
/// still is.
#[test]
fn a_resume_after_records_were_lost_is_unchecked_not_a_finding() {
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout);
    let lost = (c.now + 100, c.now + 300);
    c.after(500).watch("35", Some(40), 5_000, StreamEnd::Timeout);
    let context = Context { epoch_ms: 0, end_ms: c.now, stopped: Default::default(), blind: vec![lost] };
    let report = judge(&c.requests, &history(40), &context, &Thresholds::default());
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.unchecked.len(), 1, "{:?}", report.unchecked);
    // The span lies before the client's last recorded request: its records cover it.
    let before = Context { blind: vec![(1, 2)], ..context };
    let report = judge(&c.requests, &history(40), &before, &Thresholds::default());
    assert_eq!(report.findings.iter().map(|f| f.rule).collect::<Vec<_>>(), [Rule::MissedEvents]);
}

#[test]
fn a_watch_from_past_what_was_delivered_misses_the_changes_between() {
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout);
    // Re-watches from "now" (35) instead of 20: 21..35 never reached it.
    c.watch("35", Some(40), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(40)), [Rule::MissedEvents]);
    // Nothing changed in between: nothing missed.
    let quiet: Vec<HistoryEvent> = history(40).into_iter().filter(|e| !(21..=35).contains(&e.revision)).collect();
    assert_eq!(findings(&c, &quiet), []);
}

#[test]
fn a_rewatch_from_the_current_state_without_a_list_misses_what_changed() {
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout);
    c.watch("", Some(40), 5_000, StreamEnd::Timeout).last().watch.as_mut().unwrap().state_resource_version = Some(35);
    assert_eq!(findings(&c, &history(40)), [Rule::MissedEvents]);
    // With a LIST in between it is a relist, not a skip.
    let mut d = Client::new();
    d.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout).list(None, 35);
    d.watch("", Some(40), 5_000, StreamEnd::Timeout).last().watch.as_mut().unwrap().state_resource_version = Some(35);
    assert_eq!(findings(&d, &history(40)), []);
}

#[test]
fn a_watch_from_a_paged_list_whose_last_page_was_never_read_misses_objects() {
    let mut c = Client::new();
    let first = c.request(Verb::List, Some(""), 200);
    first.params.limit = Some(2);
    first.list = Some(ListServed { resource_version: 10, items: 2, more: true });
    c.watch("10", Some(15), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(15)), [Rule::MissedEvents]);
}

#[test]
fn asking_an_expired_version_again_and_again_is_a_410_loop() {
    let gone = "too old resource version: 5 (20)";
    let mut c = Client::new();
    c.list(Some("0"), 5);
    for _ in 0..4 {
        c.after(1000).error(Verb::Watch, Some("5"), 410, gone);
    }
    assert_eq!(findings(&c, &history(30)), [Rule::GoneLoop]);
    // client-go: one LIST at the same RV after the 410 (a LIST, which succeeds).
    let mut d = Client::new();
    d.list(Some("0"), 5).after(1000).error(Verb::Watch, Some("5"), 410, gone).list(Some("5"), 30);
    d.watch("30", Some(30), 1000, StreamEnd::Timeout);
    assert_eq!(findings(&d, &history(30)), []);
}

#[test]
fn coming_back_before_retry_after_is_caught_and_waiting_it_out_is_not() {
    let mut c = Client::new();
    c.list(Some("0"), 5).error(Verb::Watch, Some("5"), 429, "throttled");
    c.last().answer.retry_after_seconds = Some(1);
    c.after(100).watch("5", Some(6), 1000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(6)), [Rule::RetryAfterIgnored]);
    // kube-rs: 800 ms or more, without reading the header.
    let mut d = Client::new();
    d.list(Some("0"), 5).error(Verb::Watch, Some("5"), 429, "throttled");
    d.last().answer.retry_after_seconds = Some(1);
    d.after(800).watch("5", Some(6), 1000, StreamEnd::Timeout);
    assert_eq!(findings(&d, &history(6)), []);
}

#[test]
fn retries_without_backoff_are_a_hot_loop_and_rewatches_after_normal_ends_are_not() {
    let mut c = Client::new();
    c.list(Some("0"), 5);
    for _ in 0..40 {
        c.after(50).error(Verb::List, None, 503, "storage unavailable");
    }
    assert!(findings(&c, &history(5)).contains(&Rule::HotLoop));
    // A fault that ends every stream every 200 ms: 5 re-watches a second, each resuming.
    let mut d = Client::new();
    d.list(Some("0"), 5);
    let mut rv = 5;
    for _ in 0..40 {
        d.watch(&rv.to_string(), Some(rv + 1), 200, StreamEnd::Cut);
        rv += 1;
    }
    assert_eq!(findings(&d, &history(rv)), []);
}

#[test]
fn lists_without_cause_are_a_relist_storm() {
    let mut c = Client::new();
    for _ in 0..6 {
        c.list(None, 5).after(1000);
    }
    assert_eq!(findings(&c, &history(5)), [Rule::RelistStorm]);
    let tolerant = Thresholds { relist_slack: 10, ..Thresholds::default() };
    assert_eq!(rules(&c, &history(5), &tolerant), []);
}

#[test]
fn resuming_before_a_bookmark_and_paying_a_410_is_bookmarks_ignored() {
    let mut c = Client::new();
    c.list(Some("0"), 5).watch("5", Some(50), 60_000, StreamEnd::Timeout);
    let watch = c.last();
    watch.params.allow_watch_bookmarks = true;
    watch.watch.as_mut().unwrap().last_bookmark = Some(50);
    // Resumes at 5 (its last event) instead of 50: 410, though 50 was still served.
    c.error(Verb::Watch, Some("5"), 410, "too old resource version: 5 (40)");
    assert_eq!(findings(&c, &history(5)), [Rule::BookmarksIgnored]);
    // The same resume when the bookmark was too old as well: no finding.
    c.last().answer.message = Some("too old resource version: 5 (60)".into());
    assert_eq!(findings(&c, &history(5)), []);
}

#[test]
fn a_client_that_never_watches_again_after_its_stream_ends_has_stalled() {
    let mut c = Client::new();
    c.list(Some("0"), 5).watch("5", Some(6), 1000, StreamEnd::Error);
    c.after(600_000).list(None, 7); // still running, still listing, never watching
    let thresholds = Thresholds { stall_deadline: Duration::from_secs(30), ..Thresholds::default() };
    assert!(rules(&c, &history(7), &thresholds).contains(&Rule::Stalled));
    // A stream that went silent and was replaced by the client's own timeout in time.
    let mut d = Client::new();
    d.list(Some("0"), 5).watch("5", Some(6), 10_000, StreamEnd::ClientGone);
    d.last().watch.as_mut().unwrap().stalled_ms = Some(d.now - 9_000);
    d.watch("6", Some(7), 1000, StreamEnd::Timeout).watch("7", Some(7), 1000, StreamEnd::ClientGone);
    assert_eq!(rules(&d, &history(7), &thresholds), []);
}

#[test]
fn a_streaming_list_on_every_reconnect_is_a_full_replay() {
    let mut c = Client::new();
    c.watch("", Some(10), 5_000, StreamEnd::Timeout).last().params.send_initial_events = Some(true);
    c.watch("", Some(12), 5_000, StreamEnd::Timeout).last().params.send_initial_events = Some(true);
    assert_eq!(findings(&c, &history(12)), [Rule::FullReplay]);
    // The first streaming list, then resumes: fine.
    let mut d = Client::new();
    d.watch("", Some(10), 5_000, StreamEnd::Timeout).last().params.send_initial_events = Some(true);
    d.watch("10", Some(12), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&d, &history(12)), []);
    // A resume the server closed 6 ms later with nothing written: client-go's "very short
    // watch", after which it relists, by a streaming list when it uses them.
    let mut e = Client::new();
    e.watch("", Some(10), 5_000, StreamEnd::Timeout).last().params.send_initial_events = Some(true);
    e.watch("10", Some(10), 6, StreamEnd::ServerClosed);
    e.after(1_000).watch("", Some(12), 5_000, StreamEnd::Timeout).last().params.send_initial_events = Some(true);
    assert_eq!(findings(&e, &history(12)), []);
    // The same, but a second long or an event delivered: it could have resumed.
    e.requests[1].watch.as_mut().unwrap().ended_ms = Some(e.requests[1].at_ms + 1_000);
    assert_eq!(findings(&e, &history(12)), [Rule::FullReplay]);
    e.requests[1].watch.as_mut().unwrap().ended_ms = Some(e.requests[1].at_ms + 6);
    e.requests[1].watch.as_mut().unwrap().events = 1;
    assert_eq!(findings(&e, &history(12)), [Rule::FullReplay]);
}

#[test]
fn a_list_served_older_than_what_the_client_saw_goes_back_in_time() {
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(30), 5_000, StreamEnd::Error);
    c.last().watch.as_mut().unwrap().error = Some(Answer { code: 410, ..Answer::default() });
    // A relist at "0" served by a lagging cache at 20.
    c.list(Some("0"), 20);
    assert_eq!(findings(&c, &history(30)), [Rule::BackInTime]);
    // The same relist served from an up-to-date cache.
    c.requests.last_mut().unwrap().list.as_mut().unwrap().resource_version = 31;
    assert_eq!(findings(&c, &history(31)), []);
}

#[test]
fn rules_can_be_turned_off() {
    let mut c = Client::new();
    for _ in 0..6 {
        c.list(None, 5).after(1000);
    }
    let off = Thresholds { off: vec![Rule::RelistStorm], ..Thresholds::default() };
    assert_eq!(rules(&c, &history(5), &off), []);
}

#[test]
fn resuming_behind_a_stream_read_to_its_end_goes_back_in_time() {
    // client-node 1.0-1.2: every reconnect from the LIST's resourceVersion.
    let mut c = Client::new();
    c.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Timeout);
    c.watch("10", Some(25), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(25)), [Rule::BackInTime]);
    // Behind a stream cut mid-event: the client may not have read it all.
    let mut d = Client::new();
    d.list(Some("0"), 10).watch("10", Some(20), 5_000, StreamEnd::Cut);
    d.watch("18", Some(25), 5_000, StreamEnd::Timeout);
    assert_eq!(findings(&d, &history(25)), []);
}

#[test]
fn a_watch_that_fails_at_once_counts_once() {
    // A watch answered 200 whose stream is only the ERROR 410, in the same millisecond, then
    // client-go's LIST at the same resourceVersion: one re-ask, not two.
    let mut c = Client::new();
    c.list(Some("0"), 5).watch("5", None, 0, StreamEnd::Error);
    c.last().watch.as_mut().unwrap().error =
        Some(Answer { code: 410, message: Some("too old resource version: 5 (9)".into()), ..Answer::default() });
    c.after(800).list(Some("5"), 12).watch("12", Some(12), 1000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(12)), []);
}

#[test]
fn a_refused_watch_does_not_replace_a_stream() {
    // kopf 1.42.1: its watch gets a 429 after a stream end, and its watcher dies.
    let mut c = Client::new();
    c.list(Some("0"), 5).watch("5", Some(6), 1000, StreamEnd::ServerClosed);
    c.error(Verb::Watch, Some("6"), 429, "Too many requests, please try again later.");
    c.after(60_000).list(None, 7);
    let thresholds = Thresholds { stall_deadline: Duration::from_secs(15), ..Thresholds::default() };
    assert_eq!(rules(&c, &history(7), &thresholds), [Rule::Stalled]);
}

#[test]
fn a_throttled_retry_of_the_list_after_a_410_is_not_a_loop() {
    // Our reflector in chaos: WATCH r gets 410, the LIST at r is throttled, then succeeds.
    let mut c = Client::new();
    c.list(Some("0"), 5).after(1000).error(Verb::Watch, Some("5"), 410, "too old resource version: 5 (9)");
    c.after(800).error(Verb::List, Some("5"), 429, "throttled");
    c.last().answer.retry_after_seconds = Some(1);
    c.after(1600).list(Some("5"), 12).watch("12", Some(12), 1000, StreamEnd::Timeout);
    assert_eq!(findings(&c, &history(12)), []);
}
