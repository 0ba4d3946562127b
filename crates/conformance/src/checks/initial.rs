//! Watches that start with the current state (spec §1.3, §6; checklist §11.8, §11.11): a
//! synthetic ADDED per existing object (each with its own resourceVersion, in no particular
//! order), for a streaming list ended by the `k8s.io/initial-events-end` bookmark, then the
//! changes.
//!
//! The streaming-list options also have edges that client-go's reflector meets: the end
//! marker only when bookmarks were asked for, a required resourceVersion the server cannot
//! reach (an ERROR event, 504 with the `ResourceVersionTooLarge` cause, after waiting up to
//! ~3 s), and `sendInitialEvents=false`, which sends no synthetic events at all. A server
//! whose storage cannot serve streaming lists (500 "RequestWatchProgress ... disabled"), or
//! with the WatchList gate off (422), is Skipped by these checks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, rv};
use crate::http::Status;
use crate::watch::{EVENT_TIMEOUT, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

/// A streaming list's first event when the server's storage cannot serve one (§6: one 500
/// ERROR event, e.g. kube or listwatch on an etcd without progress requests): a Skipped.
pub(crate) fn streaming_lists_unsupported(first: &WatchEvent) -> Option<CheckFailure> {
    if first.kind != "ERROR" {
        return None;
    }
    let status = Status::from_json(&first.object);
    let says_so = status.message.contains("RequestWatchProgress") || status.message.contains("storage feature");
    (status.code == 500 && says_so).then(|| {
        CheckFailure::skipped(format!("the server cannot serve streaming lists with its storage: {}", status.message))
    })
}

/// Checks that `initial` are exactly one ADDED per object of `objects` (any order), each at
/// the object's current resourceVersion.
fn expect_initial(
    watch: &WatchStream,
    what: &str,
    initial: &[WatchEvent],
    objects: &[&Value],
) -> Result<(), CheckFailure> {
    let want: BTreeMap<&str, i64> =
        objects.iter().map(|o| (o["metadata"]["name"].as_str().unwrap_or_default(), rv(o))).collect();
    let got: BTreeMap<&str, i64> = initial.iter().map(|e| (e.name(), e.rv())).collect();
    let all_added = initial.iter().all(|e| e.kind == "ADDED");
    if !all_added || got.len() != initial.len() || got != want {
        return Err(CheckFailure::failed_with(
            format!(
                "GET {}: {what}: expected one synthetic ADDED per existing object (name@resourceVersion) {want:?}",
                watch.path
            ),
            format!(
                "got: [{}]\n{}",
                initial.iter().map(WatchEvent::brief).collect::<Vec<_>>().join(", "),
                watch.transcript()
            ),
        ));
    }
    Ok(())
}

/// Fails unless `event` is a MODIFIED of `object` at its resourceVersion, after `after`.
fn expect_modified(
    watch: &WatchStream,
    what: &str,
    event: &WatchEvent,
    object: &Value,
    after: i64,
) -> Result<(), CheckFailure> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if event.kind != "MODIFIED" || event.name() != name || event.rv() != rv(object) || event.rv() <= after {
        return Err(watch.failure(&format!(
            "{what}: expected MODIFIED {name}@{} (after {after}), got {}",
            rv(object),
            event.brief()
        )));
    }
    Ok(())
}

/// §11.8 / §1.3: `resourceVersion` unset (most recent) and `"0"` (any) start with a synthetic
/// ADDED for every existing object, then changes; no BOOKMARK since none was asked for.
pub async fn initial_events(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-initial-events");
    let a = fx.create("a", "1").await?;
    let mut b = fx.create("b", "1").await?;
    let a = fx.update(&a, "2").await?;
    for (round, query) in ["", "resourceVersion=0"].into_iter().enumerate() {
        if !query.is_empty() {
            // "Any" may be served from a lagging cache; let it reach this check's writes first.
            fx.wait_for_rv(rv(&b).max(rv(&a))).await?;
        }
        let mut watch = fx.watch(query).await?;
        let initial = vec![watch.next_event(EVENT_TIMEOUT).await?, watch.next_event(EVENT_TIMEOUT).await?];
        let what = if query.is_empty() { "resourceVersion unset" } else { "resourceVersion=0" };
        expect_initial(&watch, what, &initial, &[&a, &b])?;
        b = fx.update(&b, &format!("r{round}")).await?;
        let next = watch.next_event(EVENT_TIMEOUT).await?;
        let newest = initial.iter().map(WatchEvent::rv).max().unwrap_or(0);
        expect_modified(&watch, &format!("{what}: the first change after the initial events"), &next, &b, newest)?;
    }
    Ok(())
}

/// Reads synthetic ADDEDs (starting with `first`, if already read) up to the
/// initial-events-end bookmark (an object of `kind`), within [`EVENT_TIMEOUT`] in all, and
/// checks both; plain bookmarks before it are tolerated. Returns the bookmark.
async fn initial_then_end_bookmark(
    kind: &str,
    watch: &mut WatchStream,
    what: &str,
    objects: &[&Value],
    mut first: Option<WatchEvent>,
) -> Result<WatchEvent, CheckFailure> {
    let mut initial = Vec::new();
    // One deadline for the whole wait: periodic bookmarks must not keep it alive forever.
    let deadline = Instant::now() + EVENT_TIMEOUT;
    let bookmark = loop {
        let event = match first.take() {
            Some(event) => event,
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                watch.next_event(left).await.map_err(|failure| match failure {
                    CheckFailure::Failed { why, evidence } => CheckFailure::Failed {
                        why: format!("{what}: waiting for the k8s.io/initial-events-end bookmark: {why}"),
                        evidence,
                    },
                    skipped => skipped,
                })?
            }
        };
        if event.is_initial_events_end() {
            break event;
        }
        if event.kind == "ADDED" {
            initial.push(event);
        } else if !event.is_bookmark() {
            return Err(watch.failure(&format!(
                "{what}: expected synthetic ADDEDs then the k8s.io/initial-events-end bookmark, got {} first",
                event.brief()
            )));
        }
    };
    expect_initial(watch, what, &initial, objects)?;
    let newest = initial.iter().map(WatchEvent::rv).max().unwrap_or(0);
    if bookmark.object["kind"] != kind || bookmark.rv() < newest {
        return Err(CheckFailure::failed_with(
            format!(
                "{what}: the initial-events-end bookmark must be a {kind} with a resourceVersion ≥ every initial event's ({newest})"
            ),
            bookmark.line,
        ));
    }
    Ok(bookmark)
}

/// §1.3: with the WatchList defaulting of kube-apiserver 1.32 and 1.34+, a watch from `""` or
/// `"0"` with `allowWatchBookmarks=true` is a streaming list: its ADDEDs end with the
/// initial-events-end bookmark even though `sendInitialEvents` was not sent.
pub async fn initial_events_end_bookmark(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-initial-events-end-bookmark");
    // The implicit streaming list needs what an explicit one needs: ask for one first (nothing
    // matches yet, so the answer is the bookmark alone, or the ERROR of a storage without it).
    let mut probe =
        fx.watch("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").await?;
    if let Some(skip) = streaming_lists_unsupported(&probe.next_event(EVENT_TIMEOUT).await?) {
        return Err(skip);
    }
    drop(probe);
    let mut a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    for (round, query) in
        ["allowWatchBookmarks=true", "resourceVersion=0&allowWatchBookmarks=true"].into_iter().enumerate()
    {
        if query.starts_with("resourceVersion=0") {
            fx.wait_for_rv(rv(&a).max(rv(&b))).await?;
        }
        let mut watch = fx.watch(query).await?;
        let what =
            format!("{query} (a server with the WatchList gate off, like kube 1.33 or ≤1.31, sends no such bookmark)");
        let bookmark = initial_then_end_bookmark(target.resource.kind(), &mut watch, &what, &[&a, &b], None).await?;
        a = fx.update(&a, &format!("r{round}")).await?;
        let next = watch.next_change(EVENT_TIMEOUT).await?;
        expect_modified(&watch, &format!("{query}: the first change after the bookmark"), &next, &a, bookmark.rv())?;
    }
    Ok(())
}

/// §11.11 / §6: a streaming list (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan&
/// allowWatchBookmarks=true`, from "most recent" and from an RV) gives the ADDEDs, the
/// annotated bookmark, then the changes. A server whose storage cannot serve it answers one
/// 500 ERROR event; that is reported as Skipped.
pub async fn streaming_list(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-streaming-list");
    let mut a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let streaming = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    for (round, from) in [String::new(), format!("&resourceVersion={}", rv(&b))].into_iter().enumerate() {
        let query = format!("{streaming}{from}");
        let mut watch = fx.watch(&query).await?;
        let first = watch.next_event(EVENT_TIMEOUT).await?;
        if let Some(skip) = streaming_lists_unsupported(&first) {
            return Err(skip);
        }
        if first.kind == "ERROR" {
            return Err(watch.failure(&format!("{query}: a streaming list must not start with an ERROR event")));
        }
        let bookmark =
            initial_then_end_bookmark(target.resource.kind(), &mut watch, &query, &[&a, &b], Some(first)).await?;
        if bookmark.rv() < rv(&b) {
            return Err(CheckFailure::failed_with(
                format!(
                    "{query}: the initial-events-end bookmark must be at a resourceVersion ≥ the requested {}",
                    rv(&b)
                ),
                bookmark.line,
            ));
        }
        a = fx.update(&a, &format!("r{round}")).await?;
        let next = watch.next_change(EVENT_TIMEOUT).await?;
        expect_modified(&watch, &format!("{query}: the first change after the bookmark"), &next, &a, bookmark.rv())?;
    }
    Ok(())
}

/// Opens a watch with streaming-list options: Skipped when the server refuses them because
/// its storage cannot serve them (500) or its WatchList gate is off (422); any other non-200
/// answer fails the check.
async fn open_streaming(fx: &Fixture<'_>, query: &str) -> Result<WatchStream, CheckFailure> {
    open_streaming_path(fx.target, &fx.watch_query(query)).await
}

/// [`open_streaming`] for a whole watch path and query.
pub(crate) async fn open_streaming_path(target: &Target, path: &str) -> Result<WatchStream, CheckFailure> {
    match target.open_watch(path).await? {
        Ok(watch) => Ok(watch),
        Err(response) => {
            let status = response.json().map(|v| Status::from_json(&v)).unwrap_or_default();
            if response.status == 500
                && (status.message.contains("RequestWatchProgress") || status.message.contains("storage feature"))
            {
                return Err(CheckFailure::skipped(format!(
                    "the server cannot serve streaming lists with its storage: {}",
                    status.message
                )));
            }
            if response.status == 422 && status.message.contains("WatchList") {
                return Err(CheckFailure::skipped(format!("the server's WatchList gate is off: {}", status.message)));
            }
            Err(CheckFailure::failed_with(
                format!("GET {path}: a watch with streaming-list options must answer 200, got {}", response.status),
                response.describe(),
            ))
        }
    }
}

/// §6: `sendInitialEvents=true&resourceVersionMatch=NotOlderThan` without
/// `allowWatchBookmarks` sends the synthetic ADDEDs but no end marker (no bookmark at all):
/// the next event after them is the next change.
pub async fn streaming_list_without_bookmarks(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-streaming-list-no-bookmarks");
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let mut watch = open_streaming(&fx, query).await?;
    let first = watch.next_event(EVENT_TIMEOUT).await?;
    if let Some(skip) = streaming_lists_unsupported(&first) {
        return Err(skip);
    }
    let second = watch.next_event(EVENT_TIMEOUT).await?;
    expect_initial(&watch, query, &[first, second], &[&a, &b])?;
    let after = fx.until_sentinel(&mut watch, "sentinel", &[]).await?;
    if !after.is_empty() {
        return Err(watch.failure(&format!(
            "{query} (no allowWatchBookmarks): after the initial ADDEDs the next event must be the next change, with no end-marker bookmark; got [{}] first",
            after.iter().map(WatchEvent::brief).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
}

/// §6 / §8.6: a streaming list that requires a resourceVersion far beyond the server's
/// answers 200, then (after waiting up to ~3 s for it) one ERROR event: Status 504 Timeout,
/// `Timeout: Too large resource version: <requested>, current: <current>`, the
/// `ResourceVersionTooLarge` cause; then the stream ends.
pub async fn streaming_list_future_resource_version(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-streaming-list-future-rv");
    let far = fx.current_rv().await? + 1_000_000;
    let query = format!(
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={far}"
    );
    let mut watch = open_streaming(&fx, &query).await?;
    let event = watch.next_event(Duration::from_secs(10)).await?;
    if let Some(skip) = streaming_lists_unsupported(&event) {
        return Err(skip);
    }
    let status = Status::from_json(&event.object);
    let prefix = format!("Timeout: Too large resource version: {far}, current: ");
    let causes = status.details["causes"].as_array().cloned().unwrap_or_default();
    let has_cause = causes.iter().any(|c| c["reason"] == "ResourceVersionTooLarge");
    if event.kind != "ERROR"
        || status.kind != "Status"
        || status.code != 504
        || status.reason != "Timeout"
        || !status.message.starts_with(&prefix)
        || !has_cause
    {
        return Err(watch.failure(&format!(
            "{query}: expected one ERROR event with a Status of code 504, reason Timeout, a message starting {prefix:?} and a details.causes entry with reason ResourceVersionTooLarge; got {}",
            event.brief()
        )));
    }
    watch.expect_end(Duration::from_secs(5)).await
}

/// §6: `sendInitialEvents=false&resourceVersionMatch=NotOlderThan` (from "most recent" and
/// from `resourceVersion=0`) sends no synthetic events: the first event is the next change.
pub async fn send_initial_events_false(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-send-initial-events-false");
    let mut a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let base = "sendInitialEvents=false&resourceVersionMatch=NotOlderThan";
    for (round, query) in [base.to_string(), format!("{base}&resourceVersion=0")].into_iter().enumerate() {
        let newest = rv(&a).max(rv(&b));
        if query.ends_with("resourceVersion=0") {
            // "Any" starts at the cache's current revision; let it reach this check's writes.
            fx.wait_for_rv(newest).await?;
        }
        let mut watch = open_streaming(&fx, &query).await?;
        a = fx.update(&a, &format!("r{round}")).await?;
        let next = watch.next_event(EVENT_TIMEOUT).await?;
        if let Some(skip) = streaming_lists_unsupported(&next) {
            return Err(skip);
        }
        expect_modified(&watch, &format!("{query}: no synthetic events, so the first event"), &next, &a, newest)?;
    }
    Ok(())
}
