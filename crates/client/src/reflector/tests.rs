//! The reflector's choices against a scripted fake: which resourceVersion, limit and continue
//! token each request carries, when it relists, re-watches or backs off. Time is paused, so
//! backoffs and timeouts pass instantly and are measured exactly.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;

use super::*;
use crate::error::Status;
use crate::event::{Bookmark, INITIAL_EVENTS_END_ANNOTATION};
use crate::resource::{DynamicObject, ListMeta};

pub(crate) fn cm(name: &str, rv: &str) -> DynamicObject {
    DynamicObject(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": rv},
    }))
}

pub(crate) fn list(rv: &str, items: Vec<DynamicObject>, continue_token: Option<&str>) -> ObjectList<DynamicObject> {
    ObjectList {
        metadata: ListMeta {
            resource_version: rv.to_owned(),
            continue_token: continue_token.map(str::to_owned),
            remaining_item_count: None,
        },
        items,
    }
}

pub(crate) fn status(code: u16, reason: &str, message: &str) -> Status {
    Status { status: "Failure".into(), code, reason: reason.into(), message: message.into(), ..Status::default() }
}

pub(crate) fn expired() -> Error {
    Error::from(status(410, "Expired", "too old resource version: 1 (5)"))
}

pub(crate) fn bookmark(rv: &str) -> WatchEvent<DynamicObject> {
    WatchEvent::Bookmark(Bookmark { resource_version: rv.to_owned(), annotations: Default::default() })
}

pub(crate) fn end_bookmark(rv: &str) -> WatchEvent<DynamicObject> {
    let mut annotations = std::collections::BTreeMap::new();
    annotations.insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
    WatchEvent::Bookmark(Bookmark { resource_version: rv.to_owned(), annotations })
}

fn refused() -> Error {
    Error::Io { what: "connect", source: std::io::ErrorKind::ConnectionRefused.into() }
}

/// A request the fake saw.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Call {
    List { rv: String, limit: Option<u32>, continue_token: Option<String> },
    Watch { rv: String, send_initial_events: Option<bool> },
}

pub(crate) fn l(rv: &str, limit: Option<u32>) -> Call {
    Call::List { rv: rv.to_owned(), limit, continue_token: None }
}

pub(crate) fn w(rv: &str) -> Call {
    Call::Watch { rv: rv.to_owned(), send_initial_events: None }
}

type Events = Vec<Result<WatchEvent<DynamicObject>, Error>>;

/// What the fake answers, in order.
pub(crate) enum Reply {
    List(Result<ObjectList<DynamicObject>, Error>),
    /// A watch that delivers these events, then ends (or hangs when `hang`).
    Watch(Events, bool),
    WatchFails(Error),
    /// A watch fed by the test.
    Live(tokio::sync::mpsc::UnboundedReceiver<Result<WatchEvent<DynamicObject>, Error>>),
}

/// A scripted [`ListerWatcher`]: answers from the script, records every request, and hangs
/// when the script is used up.
#[derive(Default)]
pub(crate) struct Script {
    pub calls: Mutex<Vec<Call>>,
    pub watch_params: Mutex<Vec<WatchParams>>,
    replies: Mutex<VecDeque<Reply>>,
}

impl Script {
    pub fn new(replies: Vec<Reply>) -> Arc<Script> {
        Arc::new(Script { replies: Mutex::new(replies.into()), ..Script::default() })
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }
}

impl ListerWatcher<DynamicObject> for Script {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<DynamicObject>>, Error>> {
        self.calls.lock().push(Call::List {
            rv: params.resource_version.clone(),
            limit: params.limit,
            continue_token: params.continue_token.clone(),
        });
        let reply = self.replies.lock().pop_front();
        Box::pin(async move {
            match reply {
                Some(Reply::List(result)) => result.map(|list| list.map_items(Arc::new)),
                None => std::future::pending().await,
                Some(_) => panic!("the script expected a watch, got a list"),
            }
        })
    }

    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<DynamicObject>, Error>> {
        self.calls
            .lock()
            .push(Call::Watch { rv: params.resource_version.clone(), send_initial_events: params.send_initial_events });
        self.watch_params.lock().push(params.clone());
        let reply = self.replies.lock().pop_front();
        Box::pin(async move {
            match reply {
                Some(Reply::Watch(events, hang)) => {
                    let events = futures::stream::iter(events);
                    Ok(if hang { events.chain(futures::stream::pending()).boxed() } else { events.boxed() })
                }
                Some(Reply::WatchFails(e)) => Err(e),
                Some(Reply::Live(receiver)) => Ok(tokio_stream_from(receiver)),
                None => std::future::pending().await,
                Some(_) => panic!("the script expected a list, got a watch"),
            }
        })
    }
}

fn tokio_stream_from(
    mut receiver: tokio::sync::mpsc::UnboundedReceiver<Result<WatchEvent<DynamicObject>, Error>>,
) -> WatchStream<DynamicObject> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)).boxed()
}

type Reports = Arc<Mutex<Vec<(Phase, Recovery, String)>>>;

fn config() -> (ReflectorConfig, Reports) {
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    let config = ReflectorConfig {
        name: "test".into(),
        error_handler: Some(Arc::new(move |r: &ReflectorError| {
            sink.lock().push((r.phase, r.recovery, r.error.to_string()));
        })),
        ..ReflectorConfig::default()
    };
    (config, reports)
}

/// The next event, or `None` if the reflector only waits (the script ran out).
async fn next(reflector: &mut Reflector<DynamicObject>) -> Option<ReflectorEvent<DynamicObject>> {
    tokio::time::timeout(Duration::from_secs(24 * 3600), reflector.next_event()).await.ok()
}

fn replace_rv(event: Option<ReflectorEvent<DynamicObject>>) -> (usize, String, bool) {
    match event {
        Some(ReflectorEvent::Replace { objects, resource_version, streamed }) => {
            (objects.len(), resource_version, streamed)
        }
        other => panic!("expected a replace, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn first_list_at_zero_then_watches_from_the_list_and_rewatches_when_the_stream_ends() {
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![cm("a", "5"), cm("b", "7")], None))),
        Reply::Watch(vec![Ok(WatchEvent::Modified(cm("a", "11"))), Ok(bookmark("12"))], false),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    assert_eq!(replace_rv(next(&mut reflector).await), (2, "10".into(), false));
    assert!(
        matches!(next(&mut reflector).await, Some(ReflectorEvent::Modified(o)) if o.resource_version() == Some("11"))
    );
    assert!(
        matches!(next(&mut reflector).await, Some(ReflectorEvent::Bookmark { resource_version }) if resource_version == "12")
    );
    let before = Instant::now();
    assert!(next(&mut reflector).await.is_none());
    assert_eq!(script.calls(), [l("0", Some(500)), w("10"), w("12")]);
    assert_eq!(reflector.last_sync_resource_version(), "12");
    assert!(reports.lock().is_empty(), "{:?}", reports.lock());

    // Every watch asks for bookmarks and a timeout in [300, 600) s, and has an idle limit just above it.
    for params in script.watch_params.lock().iter() {
        let timeout = params.timeout.unwrap();
        assert!((300..600).contains(&timeout.as_secs()), "{timeout:?}");
        assert!(params.allow_bookmarks);
        assert_eq!(params.idle_timeout, Some(timeout + Duration::from_secs(5)));
    }
    // The re-watch after a normal end is immediate: the only time that passed is the final wait.
    assert!(before.elapsed() >= Duration::from_secs(3600));
}

#[tokio::test(start_paused = true)]
async fn in_stream_410_backs_off_and_relists_at_the_last_rv_without_a_limit() {
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![cm("a", "5")], None))),
        Reply::Watch(
            vec![
                Ok(WatchEvent::Added(cm("c", "11"))),
                Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old")))),
            ],
            false,
        ),
        Reply::List(Ok(list("20", vec![cm("a", "5"), cm("c", "11")], None))),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    assert!(matches!(next(&mut reflector).await, Some(ReflectorEvent::Added(_))));
    let before = Instant::now();
    assert_eq!(replace_rv(next(&mut reflector).await), (2, "20".into(), false));
    let waited = before.elapsed();
    assert!(waited >= Duration::from_millis(800) && waited < Duration::from_millis(1600), "{waited:?}");
    next(&mut reflector).await;
    assert_eq!(script.calls(), [l("0", Some(500)), w("10"), l("11", None), w("20")]);
    assert_eq!(reports.lock()[0].0, Phase::Watching);
    assert_eq!(reports.lock()[0].1, Recovery::Relist);
}

#[tokio::test(start_paused = true)]
async fn list_410_or_too_large_retries_at_once_with_a_consistent_paginated_list() {
    let too_large = Error::from(Status {
        details: Some(crate::error::StatusDetails {
            causes: vec![crate::error::StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            ..Default::default()
        }),
        ..status(504, "Timeout", "Timeout: Too large resource version: 9, current: 5")
    });
    let script = Script::new(vec![
        Reply::List(Err(too_large)),
        Reply::List(Ok(list("10", vec![cm("a", "5")], None))),
        Reply::Watch(vec![Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old"))))], false),
        Reply::List(Err(expired())),
        Reply::List(Ok(list("30", vec![], None))),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    let start = Instant::now();
    assert_eq!(replace_rv(next(&mut reflector).await), (1, "10".into(), false));
    assert_eq!(start.elapsed(), Duration::ZERO, "the retry at \"\" is immediate");
    assert_eq!(replace_rv(next(&mut reflector).await), (0, "30".into(), false));
    next(&mut reflector).await;
    assert_eq!(
        script.calls(),
        [l("0", Some(500)), l("", Some(500)), w("10"), l("10", None), l("", Some(500)), w("30")]
    );
    let recoveries: Vec<Recovery> = reports.lock().iter().map(|r| r.1).collect();
    assert_eq!(recoveries, [Recovery::RetryListConsistent, Recovery::Relist, Recovery::RetryListConsistent]);
}

#[tokio::test(start_paused = true)]
async fn watch_open_429_and_refused_rewatch_while_other_open_errors_relist() {
    let mut throttled = status(429, "TooManyRequests", "slow down");
    throttled.details = Some(crate::error::StatusDetails { retry_after_seconds: Some(5), ..Default::default() });
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![], None))),
        Reply::WatchFails(Error::from(throttled)),
        Reply::WatchFails(refused()),
        Reply::WatchFails(Error::from(status(500, "InternalError", "boom"))),
        Reply::List(Ok(list("10", vec![], None))),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    let before = Instant::now();
    replace_rv(next(&mut reflector).await);
    // 429 waited at least its Retry-After (5 s); refused and 500 waited backoff steps.
    assert!(before.elapsed() >= Duration::from_secs(5) + Duration::from_millis(1600 + 3200), "{:?}", before.elapsed());
    next(&mut reflector).await;
    assert_eq!(script.calls(), [l("0", Some(500)), w("10"), w("10"), w("10"), l("10", None), w("10")]);
    let recoveries: Vec<(Phase, Recovery)> = reports.lock().iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(
        recoveries,
        [
            (Phase::OpeningWatch, Recovery::Rewatch),
            (Phase::OpeningWatch, Recovery::Rewatch),
            (Phase::OpeningWatch, Recovery::Relist)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn in_stream_429_rewatches_and_probable_eof_rewatches_at_once() {
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![], None))),
        Reply::Watch(vec![Ok(WatchEvent::Error(Box::new(status(429, "TooManyRequests", "later"))))], false),
        Reply::Watch(
            vec![
                Ok(WatchEvent::Added(cm("a", "11"))),
                Err(Error::Io { what: "read", source: std::io::ErrorKind::UnexpectedEof.into() }),
            ],
            false,
        ),
        Reply::Watch(
            vec![Ok(bookmark("11")), Err(Error::Timeout { what: "idle", after: Duration::from_secs(1) })],
            false,
        ),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    assert!(matches!(next(&mut reflector).await, Some(ReflectorEvent::Added(_))));
    assert!(matches!(next(&mut reflector).await, Some(ReflectorEvent::Bookmark { .. })));
    let before = Instant::now();
    assert!(next(&mut reflector).await.is_none());
    assert!(before.elapsed() >= Duration::from_secs(3600));
    assert_eq!(script.calls(), [l("0", Some(500)), w("10"), w("10"), w("11"), w("11")]);
    let recoveries: Vec<Recovery> = reports.lock().iter().map(|r| r.1).collect();
    assert_eq!(recoveries, [Recovery::Rewatch, Recovery::RewatchNow, Recovery::RewatchNow]);
}

#[tokio::test(start_paused = true)]
async fn a_very_short_empty_watch_relists() {
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![], None))),
        Reply::Watch(vec![], false),
        Reply::List(Ok(list("10", vec![], None))),
        Reply::Watch(vec![], true),
    ]);
    let (config, reports) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    replace_rv(next(&mut reflector).await);
    assert_eq!(script.calls()[..3], [l("0", Some(500)), w("10"), l("10", None)]);
    assert!(reports.lock()[0].2.contains("very short watch"));
}

#[tokio::test(start_paused = true)]
async fn pages_when_the_server_paged_a_zero_list_and_falls_back_to_a_full_list_on_expired_continue() {
    let page = |token: &str| Call::List { rv: String::new(), limit: Some(500), continue_token: Some(token.into()) };
    let script = Script::new(vec![
        Reply::List(Ok(list("10", vec![cm("a", "1")], Some("t1")))),
        Reply::List(Ok(list("10", vec![], Some("t2")))),
        Reply::List(Ok(list("10", vec![cm("b", "2")], None))),
        Reply::Watch(vec![Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old"))))], false),
        Reply::List(Ok(list("15", vec![cm("a", "1")], Some("t3")))),
        Reply::List(Err(expired())),
        Reply::List(Ok(list("16", vec![cm("a", "1"), cm("b", "2"), cm("c", "3")], None))),
        Reply::Watch(vec![], true),
    ]);
    let (config, _) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    assert_eq!(replace_rv(next(&mut reflector).await), (2, "10".into(), false));
    assert_eq!(replace_rv(next(&mut reflector).await), (3, "16".into(), false));
    next(&mut reflector).await;
    assert_eq!(
        script.calls(),
        [
            l("0", Some(500)),
            page("t1"),
            page("t2"),
            w("10"),
            // The watch cache is off (the "0" list came in pages): keep paging at the last RV.
            l("10", Some(500)),
            page("t3"),
            // The continue token expired: one full list at the RV asked for.
            l("10", None),
            w("16"),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_explicit_page_size_applies_to_every_list() {
    let script = Script::new(vec![Reply::List(Ok(list("10", vec![], None))), Reply::Watch(vec![], true)]);
    let (mut config, _) = config();
    config.page_size = Some(7);
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    assert_eq!(script.calls()[0], l("0", Some(7)));
}

#[tokio::test(start_paused = true)]
async fn backoff_delays_grow_between_failed_lists() {
    let failure = || Reply::List(Err(Error::from(status(500, "InternalError", "down"))));
    let script = Script::new(vec![failure(), failure(), failure(), Reply::List(Ok(list("10", vec![], None)))]);
    let (config, _) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    let start = Instant::now();
    replace_rv(next(&mut reflector).await);
    // [0.8, 1.6) + [1.6, 3.2) + [3.2, 6.4)
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(5600) && waited < Duration::from_millis(11_200), "{waited:?}");
    assert_eq!(script.calls().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn synthetic_added_events_of_a_zero_start_do_not_advance_the_rv() {
    let script = Script::new(vec![
        // A list whose RV is "0" makes the next watch start at "0", like a watch-from-"0".
        Reply::List(Ok(list("0", vec![], None))),
        Reply::Watch(vec![Ok(WatchEvent::Added(cm("a", "5"))), Ok(WatchEvent::Added(cm("b", "3")))], false),
        Reply::Watch(
            vec![
                Ok(WatchEvent::Added(cm("a", "5"))),
                Ok(WatchEvent::Modified(cm("b", "8"))),
                Ok(WatchEvent::Added(cm("c", "9"))),
            ],
            false,
        ),
        Reply::Watch(vec![], true),
    ]);
    let (config, _) = config();
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    for _ in 0..5 {
        next(&mut reflector).await.unwrap();
    }
    next(&mut reflector).await;
    assert_eq!(script.calls(), [l("0", Some(500)), w("0"), w("0"), w("9")]);
}

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_at_the_end_bookmark_and_resumes_without_initial_events() {
    let script = Script::new(vec![
        Reply::Watch(
            vec![
                Ok(WatchEvent::Added(cm("a", "5"))),
                Ok(WatchEvent::Added(cm("b", "3"))),
                Ok(bookmark("7")),
                Ok(end_bookmark("9")),
                Ok(WatchEvent::Modified(cm("a", "10"))),
            ],
            false,
        ),
        Reply::Watch(vec![], true),
    ]);
    let (mut config, reports) = config();
    config.streaming_list = true;
    let mut reflector = Reflector::new(script.clone(), config);
    assert_eq!(replace_rv(next(&mut reflector).await), (2, "9".into(), true));
    assert!(matches!(next(&mut reflector).await, Some(ReflectorEvent::Modified(_))));
    next(&mut reflector).await;
    assert_eq!(
        script.calls(),
        [Call::Watch { rv: String::new(), send_initial_events: Some(true) }, w("10")],
        "first start at \"\" (consistent), resume without sendInitialEvents"
    );
    assert!(reports.lock().is_empty());
}

#[tokio::test(start_paused = true)]
async fn streaming_list_without_its_bookmark_falls_back_to_a_list_after_the_bounded_wait() {
    let script = Script::new(vec![
        Reply::Watch(vec![Ok(WatchEvent::Added(cm("a", "5")))], true),
        Reply::List(Ok(list("9", vec![cm("a", "5")], None))),
        Reply::Watch(vec![], true),
    ]);
    let (mut config, reports) = config();
    config.streaming_list = true;
    config.initial_events_timeout = Duration::from_secs(30);
    let mut reflector = Reflector::new(script.clone(), config);
    let start = Instant::now();
    assert_eq!(replace_rv(next(&mut reflector).await), (1, "9".into(), false));
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    next(&mut reflector).await;
    assert_eq!(
        script.calls(),
        [Call::Watch { rv: String::new(), send_initial_events: Some(true) }, l("0", Some(500)), w("9")]
    );
    assert_eq!(reports.lock()[0].1, Recovery::FallBackToList);
}

#[tokio::test(start_paused = true)]
async fn streaming_list_retries_at_empty_rv_after_410_and_lists_after_other_errors() {
    let initial = |rv: &str| Call::Watch { rv: rv.to_owned(), send_initial_events: Some(true) };
    let script = Script::new(vec![
        Reply::Watch(vec![Ok(end_bookmark("9"))], false),
        // The stream ends; the plain re-watch from 9 expires ...
        Reply::Watch(vec![Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old"))))], false),
        // ... so the next sync streams at 9, which expires too: stream again at "".
        Reply::Watch(vec![Ok(WatchEvent::Error(Box::new(status(410, "Expired", "too old"))))], false),
        // A server without streaming lists: fall back to a LIST at once.
        Reply::Watch(
            vec![Ok(WatchEvent::Error(Box::new(status(500, "InternalError", "RequestWatchProgress is disabled"))))],
            false,
        ),
        Reply::List(Ok(list("12", vec![], None))),
        Reply::Watch(vec![], true),
    ]);
    let (mut config, _) = config();
    config.streaming_list = true;
    let mut reflector = Reflector::new(script.clone(), config);
    assert_eq!(replace_rv(next(&mut reflector).await), (0, "9".into(), true));
    assert_eq!(replace_rv(next(&mut reflector).await), (0, "12".into(), false));
    next(&mut reflector).await;
    assert_eq!(script.calls(), [initial(""), w("9"), initial("9"), initial(""), l("", Some(500)), w("12")]);
}

#[tokio::test(start_paused = true)]
async fn streaming_list_attempts_are_bounded() {
    let initial = Call::Watch { rv: String::new(), send_initial_events: Some(true) };
    let script = Script::new(vec![
        Reply::WatchFails(refused()),
        Reply::WatchFails(refused()),
        Reply::WatchFails(refused()),
        Reply::List(Ok(list("3", vec![], None))),
        Reply::Watch(vec![], true),
    ]);
    let (mut config, _) = config();
    config.streaming_list = true;
    let mut reflector = Reflector::new(script.clone(), config);
    replace_rv(next(&mut reflector).await);
    assert_eq!(script.calls()[..4], [initial.clone(), initial.clone(), initial, l("0", Some(500))]);
}
