//! `GET /debug/listwatch/history`: storage's own history, which the simulator's checker
//! compares clients' events with. Objects are written over HTTP; the stream must describe each
//! write (revision, kind, creation, resource, namespace, name, uid, labels, content
//! fingerprint) exactly as the API answered it, and refuse a compacted start with 410.

use listwatch_meta::fingerprint::object_fingerprint;
use serde_json::{Value, json};

use super::{CMS, RawStream, SECONDS, create, rv_of};
use crate::on_both_backends;
use crate::support::{Backend, Server, assert_failure};

on_both_backends!(history_streams_every_write_after_a_revision, history_refuses_what_it_cannot_serve);

/// The next line about a configmap (other resources' writes, by controllers, are skipped).
async fn next_configmap_line(history: &mut RawStream) -> Value {
    loop {
        let line = history.line(SECONDS).await;
        assert!(line.get("error").is_none(), "the history failed: {line}");
        if line["resource"] == "configmaps" {
            return line;
        }
    }
}

/// Asserts that `line` describes `object` written as `kind` at the object's resourceVersion.
#[track_caller]
fn assert_describes(line: &Value, kind: &str, created: bool, object: &Value, revision: i64) {
    let metadata = &object["metadata"];
    let expected = json!({
        "revision": revision,
        "kind": kind,
        "created": created,
        "group": "",
        "resource": "configmaps",
        "namespace": metadata["namespace"],
        "name": metadata["name"],
        "uid": metadata["uid"],
        "labels": metadata.get("labels").cloned().unwrap_or(json!({})),
        "fingerprint": object_fingerprint(object),
    });
    assert_eq!(line, &expected);
}

async fn history_streams_every_write_after_a_revision(backend: Backend) {
    let server = Server::start("history", backend, &[]).await;
    let before = create(&server, "before", json!({})).await;
    let start = rv_of(&before);
    let mut history = RawStream::open(&server, &format!("/debug/listwatch/history?resourceVersion={start}")).await;

    let created = create(&server, "a", json!({"app": "one"})).await;
    let (code, updated) = server
        .send(
            "PATCH",
            &format!("{CMS}/a"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"app":"two"}},"data":{"k":"w"}}"#,
        )
        .await;
    assert_eq!(code, 200, "{updated}");
    let (code, deleted) = server.send("DELETE", &format!("{CMS}/a"), "application/json", "").await;
    assert_eq!(code, 200, "{deleted}");

    assert_describes(&next_configmap_line(&mut history).await, "Put", true, &created, rv_of(&created));
    assert_describes(&next_configmap_line(&mut history).await, "Put", false, &updated, rv_of(&updated));
    // A delete describes the last stored state, at the deletion's revision.
    let line = next_configmap_line(&mut history).await;
    let deleted_at = line["revision"].as_i64().expect("a revision");
    assert!(deleted_at > rv_of(&updated), "{line}");
    assert_describes(&line, "Delete", false, &updated, deleted_at);

    // Another reader from the same revision sees the same history, from storage, with the
    // write before its start left out.
    let mut again = RawStream::open(&server, &format!("/debug/listwatch/history?resourceVersion={start}")).await;
    let first = next_configmap_line(&mut again).await;
    assert_eq!((first["name"].as_str(), first["revision"].as_i64()), (Some("a"), Some(rv_of(&created))));
    // From before the first write, the first write is there too.
    let mut earlier =
        RawStream::open(&server, &format!("/debug/listwatch/history?resourceVersion={}", start - 1)).await;
    assert_describes(&next_configmap_line(&mut earlier).await, "Put", true, &before, start);
}

async fn history_refuses_what_it_cannot_serve(backend: Backend) {
    // Compaction is global in etcd: an etcd of its own, so no other test's history is cut.
    let backend = if backend == Backend::Etcd { Backend::PrivateEtcd } else { backend };
    let server = Server::start("history-errors", backend, &[]).await;
    let server = &server;
    let history = |query: &str| {
        let path = format!("/debug/listwatch/history{query}");
        async move { server.get(&path).await }
    };
    assert_failure(&history("").await, 400, "BadRequest");
    assert_failure(&history("?resourceVersion=abc").await, 400, "BadRequest");
    assert_failure(&history("?resourceVersion=-1").await, 400, "BadRequest");
    let posted = server.send("POST", "/debug/listwatch/history?resourceVersion=1", "application/json", "").await;
    assert_failure(&posted, 405, "MethodNotAllowed");

    // A start whose next revision was compacted away is refused before any streaming.
    let first = rv_of(&create(server, "one", json!({})).await);
    create(server, "two", json!({})).await;
    let third = rv_of(&create(server, "three", json!({})).await);
    server.debug(&format!("compact?revision={third}")).await;
    assert_failure(&history(&format!("?resourceVersion={first}")).await, 410, "Expired");
    // The compaction revision itself is still there.
    let mut from_compaction =
        RawStream::open(server, &format!("/debug/listwatch/history?resourceVersion={}", third - 1)).await;
    let line = from_compaction.line(SECONDS).await;
    assert_eq!((line["name"].as_str(), line["revision"].as_i64()), (Some("three"), Some(third)), "{line}");
}
