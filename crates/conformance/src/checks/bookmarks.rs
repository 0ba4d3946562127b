//! Bookmarks (spec §3; checklist §11.10). A server may send none (the uncached path of
//! kube-apiserver and listwatch does not), so a run that sees none reports Skipped; the
//! watch is short (`timeoutSeconds`) because the watch cache sends one about 2 s before a
//! watch's deadline, whatever its periodic interval.

use std::time::Duration;

use crate::checks::expect::{Expected, expect_sequence};
use crate::fixture::Fixture;
use crate::watch::{Read, WatchEvent};
use crate::{CheckFailure, Target};

const WATCH_SECONDS: u64 = 5;

/// §11.10 / §3.2: every BOOKMARK is an object of the watched kind and `apiVersion` (a
/// ConfigMap, `v1`, or the custom resource's) whose resourceVersion is ≥
/// every resourceVersion delivered before it, and is not the initial-events-end one (this is
/// not a streaming list); resuming from the last bookmark gives exactly the changes after it.
pub async fn bookmarks(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-bookmarks");
    let start = fx.current_rv().await?;
    let mut watch =
        fx.watch(&format!("resourceVersion={start}&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}")).await?;
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    let b = fx.create("b", "1").await?;

    let mut changes: Vec<WatchEvent> = Vec::new();
    let mut bookmarks: Vec<WatchEvent> = Vec::new();
    let mut delivered = 0;
    let deadline = watch.sent_at + Duration::from_secs(WATCH_SECONDS + 5);
    loop {
        match watch.read_before(deadline).await? {
            Read::Event(event) if event.is_bookmark() => {
                let object = &event.object;
                let (kind, api_version) = (target.resource.kind(), target.resource.api_version());
                if object["kind"] != kind || object["apiVersion"] != api_version.as_str() {
                    return Err(CheckFailure::failed_with(
                        format!(
                            "a BOOKMARK's object must be of the watched kind (kind {kind}, apiVersion {api_version})"
                        ),
                        event.line,
                    ));
                }
                if event.rv() < delivered || event.rv() == 0 {
                    return Err(watch.failure(&format!(
                        "a BOOKMARK has resourceVersion {} but an event at {delivered} was already delivered",
                        event.rv()
                    )));
                }
                if event.is_initial_events_end() {
                    return Err(CheckFailure::failed_with(
                        "a watch from an exact resourceVersion is not a streaming list; it must not get the initial-events-end bookmark",
                        event.line,
                    ));
                }
                delivered = event.rv();
                bookmarks.push(event);
            }
            Read::Event(event) => {
                delivered = delivered.max(event.rv());
                changes.push(event);
            }
            Read::Ended => break,
            Read::TimedOut => {
                return Err(watch.failure(&format!(
                    "timeoutSeconds={WATCH_SECONDS} but the stream had not ended after {} s",
                    WATCH_SECONDS + 5
                )));
            }
        }
    }
    expect_sequence(
        &watch,
        "the changes",
        &changes,
        &[Expected::new("ADDED", &a), Expected::new("MODIFIED", &a2), Expected::new("ADDED", &b)],
        start,
    )?;
    let Some(last) = bookmarks.last() else {
        return Err(CheckFailure::skipped(format!(
            "the server sent no BOOKMARK during a {WATCH_SECONDS} s watch with allowWatchBookmarks=true (allowed: servers may send none, e.g. uncached watches)"
        )));
    };

    // Resume from the bookmark: the changes after it that the first watch saw, then a new one.
    let resume = last.rv();
    let b2 = fx.update(&b, "2").await?;
    let mut expected: Vec<Expected> = changes
        .iter()
        .filter(|e| e.rv() > resume)
        .map(|e| Expected { kind: static_kind(&e.kind), name: e.name().to_string(), rv: Some(e.rv()) })
        .collect();
    expected.push(Expected::new("MODIFIED", &b2));
    let mut resumed = fx.watch(&format!("resourceVersion={resume}")).await?;
    let events = fx.until_sentinel(&mut resumed, "sentinel", &[]).await?;
    expect_sequence(
        &resumed,
        &format!("resumed from the bookmark's resourceVersion {resume}"),
        &events,
        &expected,
        resume,
    )
}

/// The static name of a change event's type.
fn static_kind(kind: &str) -> &'static str {
    match kind {
        "ADDED" => "ADDED",
        "MODIFIED" => "MODIFIED",
        "DELETED" => "DELETED",
        _ => "ERROR",
    }
}
