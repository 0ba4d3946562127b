//! The watch response as such (spec §1.1, §2.1, §2.3, §5): the head that answers at once, the
//! newline-delimited JSON body, the end at `timeoutSeconds`, and the URL forms that make (or
//! do not make) a request a watch.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::checks::expect::{Expected, expect_sequence};
use crate::fixture::{Fixture, encode};
use crate::http::truncate;
use crate::watch::{EVENT_TIMEOUT, Read, WatchStream};
use crate::{CheckFailure, Target, ensure};

/// §2.1: `Content-Type: application/json` exactly (no `;stream=watch`), chunked framing on
/// HTTP/1.1 (HTTP/2 frames the body itself), `Cache-Control: no-cache, private`.
pub(crate) fn check_head(watch: &WatchStream) -> Result<(), CheckFailure> {
    let header = |name: &str| {
        watch
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
    };
    let head = || {
        let mut text = format!("GET {}\n{:?} {}\n", watch.path, watch.version, watch.status);
        for (name, value) in &watch.headers {
            text.push_str(&format!("{name}: {}\n", String::from_utf8_lossy(value.as_bytes())));
        }
        text
    };
    let content_type = header("content-type");
    if content_type != ["application/json"] {
        return Err(CheckFailure::failed_with(
            format!("Content-Type must be exactly application/json, got {content_type:?}"),
            head(),
        ));
    }
    let cache_control = header("cache-control");
    if cache_control != ["no-cache, private"] {
        return Err(CheckFailure::failed_with(
            format!("Cache-Control must be \"no-cache, private\", got {cache_control:?}"),
            head(),
        ));
    }
    if watch.version == reqwest::Version::HTTP_11 {
        let chunked = header("transfer-encoding").iter().any(|v| v.to_ascii_lowercase().contains("chunked"));
        let has_length = watch.headers.contains_key("content-length");
        if !chunked || has_length {
            return Err(CheckFailure::failed_with("an HTTP/1.1 watch must use Transfer-Encoding: chunked", head()));
        }
    }
    Ok(())
}

/// §11.1: the head arrives while nothing changes (so before any event), and says what §2.1
/// says; the first change then arrives as an event.
pub async fn response_head(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-response-head");
    // Nothing matches yet: both the "most recent" start (initial events: none) and a start at
    // the current RV have nothing to send, so the head must come on its own.
    let mut from_now = fx.watch("").await?;
    check_head(&from_now)?;
    let rv = fx.current_rv().await?;
    let mut from_rv = fx.watch(&format!("resourceVersion={rv}")).await?;
    check_head(&from_rv)?;
    let created = fx.create("a", "1").await?;
    for watch in [&mut from_now, &mut from_rv] {
        let event = watch.next_event(EVENT_TIMEOUT).await?;
        expect_sequence(watch, "the first event", &[event], &[Expected::new("ADDED", &created)], 0)?;
    }
    Ok(())
}

/// §11.2: every line is one compact JSON object with exactly `type` and `object`, `type` is
/// one of the five event types, and the body ends with a newline.
pub async fn body_is_ndjson(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-body-ndjson");
    let start = fx.current_rv().await?;
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.delete(&fx.name("b")).await?;
    // Watched after the writes, from before them: the changes come from the server's history
    // at once, however long the writes took (a watch opened first, with its 3 s deadline,
    // could end before slow writes were done).
    let mut watch = fx.watch(&format!("resourceVersion={start}&allowWatchBookmarks=true&timeoutSeconds=3")).await?;
    let mut changes = Vec::new();
    let deadline = watch.sent_at + Duration::from_secs(8);
    loop {
        match watch.read_before(deadline).await? {
            Read::Event(event) if event.is_bookmark() => {}
            Read::Event(event) => changes.push(event),
            Read::Ended => break,
            Read::TimedOut => return Err(watch.failure("timeoutSeconds=3 but the stream had not ended after 8 s")),
        }
    }
    expect_sequence(
        &watch,
        "the changes",
        &changes,
        &[
            Expected::new("ADDED", &a),
            Expected::new("ADDED", &b),
            Expected::new("MODIFIED", &a2),
            Expected::deleted(fx.name("b")),
        ],
        start,
    )?;

    check_ndjson(&watch.path, watch.received(), target.resource.kind())
}

/// §2.3: `body` is newline-terminated lines, each one JSON object with exactly the keys `type`
/// (one of the five event types) and `object` (a JSON object; of the watched `kind` unless an
/// ERROR).
pub(crate) fn check_ndjson(path: &str, body: &[u8], kind: &str) -> Result<(), CheckFailure> {
    ensure!(
        body.ends_with(b"\n"),
        "GET {path}: the body must end with a newline; it ends with {:?}",
        truncate(&body[body.len().saturating_sub(40)..])
    );
    let types: BTreeSet<&str> = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"].into();
    for line in body[..body.len() - 1].split(|b| *b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let bad = |why: &str| CheckFailure::failed_with(format!("GET {path}: {why}"), text.to_string());
        if text.trim() != text || text.is_empty() {
            return Err(bad("a line is empty or has whitespace around the JSON object"));
        }
        let value: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| bad(&format!("a line is not JSON: {e}")))?;
        let Some(fields) = value.as_object() else { return Err(bad("a line is not a JSON object")) };
        let keys: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        if sorted != ["object", "type"] {
            return Err(bad(&format!("an event must have exactly the keys type and object, it has {keys:?}")));
        }
        let event_type = fields["type"].as_str().unwrap_or_default();
        if !types.contains(event_type) {
            return Err(bad(&format!("unknown event type {:?}", fields["type"])));
        }
        if !fields["object"].is_object() {
            return Err(bad("object must be a JSON object"));
        }
        if event_type != "ERROR" && fields["object"]["kind"] != kind {
            return Err(bad(&format!("the object of a {kind} watch event must have kind {kind}")));
        }
    }
    Ok(())
}

/// §11.12 / §5: `timeoutSeconds=2` ends the body cleanly (no ERROR event, no broken
/// connection) after about 2 s.
pub async fn timeout_seconds(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-timeout-seconds");
    let rv = fx.current_rv().await?;
    let mut watch = fx.watch(&format!("resourceVersion={rv}&timeoutSeconds=2")).await?;
    watch.expect_end(Duration::from_secs(6)).await?;
    let lasted = watch.sent_at.elapsed().as_secs_f64();
    if !(1.5..=5.0).contains(&lasted) {
        return Err(watch.failure(&format!("timeoutSeconds=2 but the stream lasted {lasted:.2} s (accepted: 1.5–5 s)")));
    }
    Ok(())
}

/// §1.1: the deprecated `/api/v1/watch/...` (`/apis/<group>/<version>/watch/...`) collection
/// path is a watch with the same options.
pub async fn legacy_collection_path(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-legacy-path");
    let start = fx.current_rv().await?;
    let path = format!(
        "{}?labelSelector={}&resourceVersion={start}",
        target.resource.legacy_watch_collection(&target.namespace),
        encode(&fx.selector())
    );
    let mut watch = target.watch(&path).await?;
    check_head(&watch)?;
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    let events = fx.until_sentinel(&mut watch, "sentinel", &[]).await?;
    expect_sequence(
        &watch,
        "the legacy watch",
        &events,
        &[Expected::new("ADDED", &a), Expected::new("MODIFIED", &a2)],
        start,
    )
}

/// §1.1: `/api/v1/watch/namespaces/{ns}/configmaps/{name}` watches that one object (the name
/// becomes `metadata.name=<name>`), and a fieldSelector naming another object is a 400.
pub async fn legacy_object_path(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-legacy-path-named-object");
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let start = crate::fixture::rv(&b);
    let legacy = target.resource.legacy_watch_collection(&target.namespace);
    let path = format!("{legacy}/{}?resourceVersion={start}", fx.name("a"));
    let mut watch = target.watch(&path).await?;
    check_head(&watch)?;
    // b's changes come between a's, so a's second event proves they were filtered out.
    let b2 = fx.update(&b, "2").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.update(&b2, "3").await?;
    fx.delete(&fx.name("b")).await?;
    fx.delete(&fx.name("a")).await?;
    let events = vec![watch.next_event(EVENT_TIMEOUT).await?, watch.next_event(EVENT_TIMEOUT).await?];
    expect_sequence(
        &watch,
        "the single-object watch",
        &events,
        &[Expected::new("MODIFIED", &a2), Expected::deleted(fx.name("a"))],
        start,
    )?;

    let mismatched =
        format!("{legacy}/{}?fieldSelector={}", fx.name("a"), encode(&format!("metadata.name={}", fx.name("b"))));
    let response = target.get(&mismatched).await?;
    let status = crate::http::Status::from_json(&response.expect(400)?);
    if !status.message.contains("fieldSelector metadata.name doesn't match requested name") {
        return Err(CheckFailure::failed_with(
            "a fieldSelector naming another object must say \"fieldSelector metadata.name doesn't match requested name\"",
            response.describe(),
        ));
    }
    Ok(())
}

/// §1.1: `watch` is a kube boolean: a bare `?watch` is true, `false`/`0` (any case) are
/// false; and `watch=1` on an item URL is a plain GET.
pub async fn watch_query_boolean(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-query-boolean");
    let start = fx.current_rv().await?;
    let a = fx.create("a", "1").await?;
    let selector = format!("labelSelector={}", encode(&fx.selector()));

    let mut watch = target.watch(&fx.collection(&format!("watch&{selector}&resourceVersion={start}"))).await?;
    check_head(&watch)?;
    let first = watch.next_event(EVENT_TIMEOUT).await?;
    expect_sequence(&watch, "a bare ?watch", &[first], &[Expected::new("ADDED", &a)], start)?;

    for value in ["false", "0", "FALSE"] {
        let response = target.get(&fx.collection(&format!("watch={value}&{selector}"))).await?;
        let list = response.expect(200)?;
        let names: Vec<&str> =
            list["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["name"].as_str()).collect();
        let list_kind = target.resource.list_kind();
        if list["kind"] != list_kind.as_str() || names != [fx.name("a")] {
            return Err(CheckFailure::failed_with(
                format!("watch={value} must be a LIST (a {list_kind} holding {})", fx.name("a")),
                response.describe(),
            ));
        }
    }

    let item = format!("{}/{}?watch=1", target.collection(), fx.name("a"));
    let response = target.get(&item).await?;
    let object = response.expect(200)?;
    if object["kind"] != target.resource.kind() || object["metadata"]["name"] != fx.name("a").as_str() {
        return Err(CheckFailure::failed_with(
            "GET on an item URL with watch=1 must be a plain GET of the object",
            response.describe(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDED: &str = r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}"#;

    #[test]
    fn ndjson_accepts_kube_lines_and_rejects_the_rest() {
        let bookmark =
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}"#;
        assert!(check_ndjson("/w", format!("{ADDED}\n{bookmark}\n").as_bytes(), "ConfigMap").is_ok());
        for bad in [
            ADDED.to_string(),
            format!("{ADDED}\n\n"),
            format!(" {ADDED}\n"),
            format!("{ADDED}\r\n"),
            r#"{"type":"ADDED","object":{"kind":"ConfigMap"},"kind":"WatchEvent"}"#.to_string() + "\n",
            r#"{"type":"ADDED"}"#.to_string() + "\n",
            r#"{"type":"CHANGED","object":{"kind":"ConfigMap"}}"#.to_string() + "\n",
            r#"{"type":"ADDED","object":"x"}"#.to_string() + "\n",
            r#"{"type":"ADDED","object":{"kind":"Secret"}}"#.to_string() + "\n",
            format!("{ADDED}{ADDED}\n"),
        ] {
            assert!(check_ndjson("/w", bad.as_bytes(), "ConfigMap").is_err(), "accepted {bad:?}");
        }
    }

    fn head(pairs: &[(&'static str, &'static str)], version: reqwest::Version) -> WatchStream {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, reqwest::header::HeaderValue::from_static(value));
        }
        WatchStream::with_head_for_tests(headers, version)
    }

    #[test]
    fn head_must_be_kube_s() {
        use reqwest::Version;
        let good = [
            ("content-type", "application/json"),
            ("cache-control", "no-cache, private"),
            ("transfer-encoding", "chunked"),
        ];
        assert!(check_head(&head(&good, Version::HTTP_11)).is_ok());
        assert!(check_head(&head(&good[..2], Version::HTTP_2)).is_ok());
        assert!(check_head(&head(&good[..2], Version::HTTP_11)).is_err());
        let stream_type = [("content-type", "application/json;stream=watch"), good[1], good[2]];
        assert!(check_head(&head(&stream_type, Version::HTTP_11)).is_err());
        let cacheable = [good[0], ("cache-control", "no-cache"), good[2]];
        assert!(check_head(&head(&cacheable, Version::HTTP_11)).is_err());
        let with_length = [good[0], good[1], good[2], ("content-length", "10")];
        assert!(check_head(&head(&with_length, Version::HTTP_11)).is_err());
    }
}
