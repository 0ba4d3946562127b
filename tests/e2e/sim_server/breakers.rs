//! The deliberate guarantee breakers (`--break-watch`, `POST /debug/listwatch/break`): with
//! each kind set, a raw watch shows exactly that broken guarantee on its 3rd change after its
//! initial events; with `none`, the same writes arrive whole, once, in order. Both the watch
//! cache's streams and uncached ones (a storage watch of their own) go through the one pump.

use serde_json::{Value, json};

use super::{CMS, RawStream, Read, SECONDS, create, event_rv, list_rv, rv_of};
use crate::support::{Backend, Server, assert_failure};

mod cached {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_breaker_breaks_its_guarantee() {
        super::each_breaker_breaks_its_guarantee(&[]).await;
    }
}

mod uncached {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_breaker_breaks_its_guarantee() {
        super::each_breaker_breaks_its_guarantee(&["--watch-cache=false"]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_breaks_streams_from_the_start_and_mistakes_are_400() {
    let server = Server::start("break-flag", Backend::Ephemeral, &["--break-watch=duplicate-event"]).await;
    let (summary, _) = watch_four_writes(&server, "dup").await;
    assert_eq!(names(&summary), ["dup-0", "dup-1", "dup-2", "dup-2", "dup-3"]);

    let refused = server.send("POST", "/debug/listwatch/break", "application/json", "").await;
    assert_failure(&refused, 400, "BadRequest");
    let refused = server.send("POST", "/debug/listwatch/break?kind=drop-all", "application/json", "").await;
    assert_failure(&refused, 400, "BadRequest");
    assert!(refused.1["message"].as_str().unwrap().contains("skip-event"), "{}", refused.1);
    // A refusal changes nothing: streams still duplicate.
    let (summary, _) = watch_four_writes(&server, "again").await;
    assert_eq!(names(&summary), ["again-0", "again-1", "again-2", "again-2", "again-3"]);
}

/// What a test compares of an event: its type, name, resourceVersion, and whether its object
/// carries the label `alter-object` adds.
type Summary = (String, String, i64, bool);

fn summarize(event: &Value) -> Summary {
    let altered = event["object"]["metadata"]["labels"]["listwatch.dev/altered"] == "true";
    let name = event["object"]["metadata"]["name"].as_str().unwrap_or("").to_string();
    (event["type"].as_str().unwrap_or("").to_string(), name, event_rv(event), altered)
}

fn names(summary: &[Summary]) -> Vec<&str> {
    summary.iter().filter(|(kind, ..)| kind != "BOOKMARK").map(|(_, name, ..)| name.as_str()).collect()
}

/// Events of `watch` up to and including the first change at `last`.
async fn until(watch: &mut RawStream, last: i64) -> Vec<Summary> {
    let mut seen = Vec::new();
    loop {
        let event = summarize(&watch.line(SECONDS).await);
        let done = event.0 != "BOOKMARK" && event.2 == last;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Opens a watch from the current resourceVersion, writes `<prefix>-0` to `<prefix>-3`, and
/// returns what the watch saw up to the last write, with the writes' resourceVersions.
async fn watch_four_writes(server: &Server, prefix: &str) -> (Vec<Summary>, Vec<i64>) {
    let from = list_rv(server).await;
    let mut watch = RawStream::open(server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    let mut rvs = Vec::new();
    for i in 0..4 {
        rvs.push(rv_of(&create(server, &format!("{prefix}-{i}"), json!({})).await));
    }
    (until(&mut watch, rvs[3]).await, rvs)
}

async fn each_breaker_breaks_its_guarantee(flags: &[&str]) {
    let server = Server::start("breakers", Backend::Ephemeral, flags).await;
    let set = |kind: &'static str| {
        let server = &server;
        async move { assert_eq!(server.debug(&format!("break?kind={kind}")).await, json!({"breakWatch": kind})) }
    };
    let added = |name: String, rv: i64| ("ADDED".to_string(), name, rv, false);

    // None: every write, once, in order, untouched.
    set("none").await;
    let (seen, rvs) = watch_four_writes(&server, "none").await;
    assert_eq!(seen, (0..4).map(|i| added(format!("none-{i}"), rvs[i])).collect::<Vec<_>>());

    set("skip-event").await;
    // A watch from "" starts with the current objects (its initial events, not counted).
    let mut from_now = RawStream::open(&server, &format!("{CMS}?watch=1")).await;
    let (seen, rvs) = watch_four_writes(&server, "skip").await;
    assert_eq!(seen, [0, 1, 3].map(|i| added(format!("skip-{i}"), rvs[i])));
    let seen = until(&mut from_now, rvs[3]).await;
    let initial: Vec<&str> = seen.iter().filter(|e| e.2 < rvs[0]).map(|e| e.1.as_str()).collect();
    assert_eq!(initial, ["none-0", "none-1", "none-2", "none-3"], "{seen:?}");
    let changes: Vec<&str> = seen.iter().filter(|e| e.2 >= rvs[0]).map(|e| e.1.as_str()).collect();
    assert_eq!(changes, ["skip-0", "skip-1", "skip-3"]);

    set("duplicate-event").await;
    let (seen, rvs) = watch_four_writes(&server, "dup").await;
    assert_eq!(seen, [0, 1, 2, 2, 3].map(|i| added(format!("dup-{i}"), rvs[i])));

    set("bookmark-ahead").await;
    let (seen, rvs) = watch_four_writes(&server, "ahead").await;
    let bookmark = ("BOOKMARK".to_string(), String::new(), rvs[2], false);
    let expected = [added("ahead-0".into(), rvs[0]), added("ahead-1".into(), rvs[1]), bookmark]
        .into_iter()
        .chain([2, 3].map(|i| added(format!("ahead-{i}"), rvs[i])));
    assert_eq!(seen, expected.collect::<Vec<_>>());

    set("alter-object").await;
    let (seen, rvs) = watch_four_writes(&server, "alter").await;
    let mut expected: Vec<Summary> = (0..4).map(|i| added(format!("alter-{i}"), rvs[i])).collect();
    expected[2].3 = true;
    assert_eq!(seen, expected);
    // Storage holds no such label: only the stream lied.
    let (_, stored) = server.get(&format!("{CMS}/alter-2")).await;
    assert!(stored["metadata"].get("labels").is_none(), "{stored}");

    set("spurious-expired").await;
    let from = list_rv(&server).await;
    let mut refused = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    let error = refused.line(SECONDS).await;
    assert_eq!(error["type"], "ERROR", "{error}");
    assert_eq!((error["object"]["code"].as_u64(), error["object"]["reason"].as_str()), (Some(410), Some("Expired")));
    assert_eq!(error["object"]["message"], format!("too old resource version: {from} ({from})"));
    assert!(matches!(refused.next(SECONDS).await, Read::Clean));
    // Only numeric starts above 0 are refused: "0" starts from the current objects.
    let mut from_zero = RawStream::open(&server, &format!("{CMS}?watch=1&resourceVersion=0")).await;
    assert_eq!(from_zero.line(SECONDS).await["type"], "ADDED");

    // Back to none: the same watch works again.
    set("none").await;
    let (seen, rvs) = watch_four_writes(&server, "fixed").await;
    assert_eq!(seen, (0..4).map(|i| added(format!("fixed-{i}"), rvs[i])).collect::<Vec<_>>());
}
