//! 410 Expired (spec §4.2, §7.4; checklist §11.9, §11.14). Making a resourceVersion too old
//! on purpose needs listwatch's debug API: `POST /debug/listwatch/compact` compacts storage at
//! its current revision and `POST /debug/listwatch/cache/reset?group=G&resource=R` makes the
//! watch cache of the checks' resource relist, dropping its history (and ending every watch of
//! it, which is why these checks are exclusive). Without the debug API the too-old watch falls back to
//! `resourceVersion=1`, and the expired continue token is Skipped.

use std::time::Duration;

use reqwest::Method;

use crate::fixture::{Fixture, encode, rv};
use crate::http::Status;
use crate::watch::{EVENT_TIMEOUT, Read};
use crate::{CheckFailure, Target};

/// kube's message for a compacted continue token (§7.4).
const EXPIRED_CONTINUE_MESSAGE: &str =
    "The provided continue parameter is too old to display a consistent list result.";

/// Compacts storage at its current revision through the debug API.
async fn compact(target: &Target) -> Result<(), CheckFailure> {
    let response = target.send(Method::POST, "/debug/listwatch/compact", None).await?;
    response.expect(200).map(|_| ())
}

/// Resets the resource's watch cache through the debug API; a server that does not cache it
/// says so with a 400, which is fine (compaction alone makes old RVs too old there).
async fn reset_cache(target: &Target) -> Result<(), CheckFailure> {
    let resource = target.resource;
    let path = format!(
        "/debug/listwatch/cache/reset?group={}&resource={}",
        encode(resource.group()),
        encode(resource.plural())
    );
    let response = target.send(Method::POST, &path, None).await?;
    if response.status == 400 && String::from_utf8_lossy(&response.body).contains("not served from a watch cache") {
        return Ok(());
    }
    response.expect(200).map(|_| ())
}

/// §11.9 / §4.2: a watch from a resourceVersion that is no longer available answers 200, then
/// exactly one ERROR event holding a Status with code 410 and reason Expired (with kube's
/// message of the cache or of the storage path), then the stream ends.
pub async fn too_old_watch(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-too-old-resource-version");
    // Two writes after `a`: compaction at the current revision then lies beyond the revision
    // right after `a`'s, where a watch from `a` would start. (Compacting only up to that
    // revision leaves the watch startable, and its first event then lacks the previous value
    // that a MODIFIED needs: kube and listwatch answer that with a 500 ERROR event instead.)
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.update(&a2, "3").await?;
    let old = if target.debug_api {
        compact(target).await?;
        reset_cache(target).await?;
        rv(&a)
    } else {
        1
    };
    let mut watch = fx.watch(&format!("resourceVersion={old}")).await?;
    // Without the debug API a server that still serves RV 1 shows it by not erroring at once.
    let within = if target.debug_api { EVENT_TIMEOUT } else { Duration::from_secs(3) };
    let first = match watch.read(within).await? {
        Read::Event(event) if event.kind == "ERROR" => event,
        other if !target.debug_api => {
            return Err(CheckFailure::skipped(format!(
                "without the debug API resourceVersion=1 stands for a too-old one, but this server still serves it ({}); pass --debug-api to force compaction",
                match other {
                    Read::Event(event) => format!("first event {}", event.brief()),
                    Read::Ended => "the stream ended without an event".into(),
                    Read::TimedOut => "no event".into(),
                }
            )));
        }
        Read::Event(event) => {
            return Err(watch.failure(&format!(
                "a watch from compacted resourceVersion {old} must get an ERROR event, got {}",
                event.brief()
            )));
        }
        Read::Ended | Read::TimedOut => {
            return Err(watch.failure(&format!("a watch from compacted resourceVersion {old} must get an ERROR event")));
        }
    };
    let status = Status::from_json(&first.object);
    let cache_message = format!("too old resource version: {old} (");
    let storage_message = "The resourceVersion for the provided watch is too old.";
    if status.kind != "Status"
        || first.object["apiVersion"] != "v1"
        || status.status != "Failure"
        || status.code != 410
        || status.reason != "Expired"
    {
        return Err(CheckFailure::failed_with(
            "the ERROR event must hold a Status (apiVersion v1) with status Failure, code 410, reason Expired",
            first.line,
        ));
    }
    if !(status.message.starts_with(&cache_message) && status.message.ends_with(')'))
        && status.message != storage_message
    {
        return Err(CheckFailure::failed_with(
            format!(
                "the 410's message must be kube's: \"{cache_message}<oldest-1>)\" (watch cache) or \"{storage_message}\" (storage)"
            ),
            first.line,
        ));
    }
    watch.expect_end(EVENT_TIMEOUT).await
}

/// §11.14 / §7.4: a continue token whose revision was compacted answers 410 Expired with a
/// new token in `metadata.continue`; that token continues after the same key, at a newer RV.
pub async fn expired_continue(target: &Target) -> Result<(), CheckFailure> {
    if !target.debug_api {
        return Err(CheckFailure::skipped(
            "needs the debug API to compact storage (a kube-apiserver compacts every 5 min and may serve old continues from its cache snapshots)",
        ));
    }
    let fx = Fixture::new(target, "list-expired-continue");
    for suffix in ["p0", "p1", "p2"] {
        fx.create(suffix, "1").await?;
    }
    let selector = format!("labelSelector={}", encode(&fx.selector()));
    let first = target.get(&fx.collection(&format!("{selector}&limit=1"))).await?;
    let page = first.expect(200)?;
    let token = page["metadata"]["continue"].as_str().unwrap_or_default().to_string();
    let first_rv = page["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
    if token.is_empty() || page["items"][0]["metadata"]["name"] != fx.name("p0").as_str() {
        return Err(CheckFailure::failed_with(
            "the first page of 3 objects with limit=1 must hold p0 and a continue token",
            first.describe(),
        ));
    }
    // A write after the page, then compaction past the page's revision.
    fx.create("p3", "1").await?;
    compact(target).await?;

    let expired = target.get(&fx.collection(&format!("{selector}&limit=1&continue={}", encode(&token)))).await?;
    let status = Status::from_json(&expired.expect(410)?);
    if status.kind != "Status" || status.code != 410 || status.reason != "Expired" || status.continue_token.is_empty() {
        return Err(CheckFailure::failed_with(
            "an expired continue must answer a Status with code 410, reason Expired and a new token in metadata.continue",
            expired.describe(),
        ));
    }
    if !status.message.starts_with(EXPIRED_CONTINUE_MESSAGE) {
        return Err(CheckFailure::failed_with(
            format!("the expired continue's message must be kube's (\"{EXPIRED_CONTINUE_MESSAGE} ...\")"),
            expired.describe(),
        ));
    }

    let next =
        target.get(&fx.collection(&format!("{selector}&limit=1&continue={}", encode(&status.continue_token)))).await?;
    let page = next.expect(200)?;
    let next_rv = page["metadata"]["resourceVersion"].as_str().unwrap_or_default();
    let name = page["items"][0]["metadata"]["name"].as_str().unwrap_or_default();
    if next_rv == first_rv || next_rv.is_empty() || name != fx.name("p1") {
        return Err(CheckFailure::failed_with(
            format!(
                "the new token must continue after p0 (with p1) at a resourceVersion other than the first page's {first_rv}"
            ),
            next.describe(),
        ));
    }
    Ok(())
}
