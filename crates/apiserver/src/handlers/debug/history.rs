//! `GET /debug/listwatch/history?resourceVersion=N`: storage's own history after revision N,
//! streamed as JSON lines until the client goes away. It is what was really written, which the
//! watch simulator's checker compares every client's events with, so it comes from a storage
//! watch of the whole storage root (through the `Storage` trait, the same on the embedded store
//! and on etcd), never from the watch caches that serve the clients under test.
//!
//! One line per change of an object of a registered resource (other keys, such as the
//! compactor's `compact_rev_key`, are skipped):
//!
//! ```json
//! {"revision":7,"kind":"Put","created":true,"group":"","resource":"configmaps",
//!  "namespace":"default","name":"a","uid":"…","labels":{"x":"y"},"fingerprint":123}
//! ```
//!
//! `uid`, `labels` and `fingerprint` ([`object_fingerprint`]) describe the stored object: the
//! new value of a Put, the previous value of a Delete (etcd may not have it any more when its
//! revision was compacted: then `uid` is `""`, `labels` `{}` and `fingerprint` 0). A start
//! that was compacted is answered 410 before the stream; when the storage watch fails later
//! (compaction overtook it, storage became unavailable), one last line `{"error": <Status>}`
//! says why and the stream ends: the reader resumes after the last revision it saw.

use std::time::Duration;

use bytes::Bytes;
use listwatch_meta::ApiError;
use listwatch_simulator::record::Change;
use listwatch_storage::{Event, EventKind, KeyRange, StorageError, Watch, WatchRequest, WatchResponse};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::client_audit::changes::change_of;
use crate::registry::storage_error;
use crate::request::Query;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;
use crate::transport::body::{Body, Chunk};

/// How long the start waits for storage's first answer (events, progress, or "compacted")
/// before streaming anyway (an etcd that answers no progress request).
const FIRST_ANSWER_WAIT: Duration = Duration::from_secs(3);

/// Starts the stream, or answers 410 when revision N+1 was compacted.
pub async fn respond(state: &ApiState, query: &Query) -> Result<HttpResponse, ApiError> {
    let after = super::params::int_param(query, "resourceVersion")?
        .ok_or_else(|| ApiError::bad_request("resourceVersion is required"))?;
    if after < 0 {
        return Err(ApiError::bad_request("resourceVersion must not be negative"));
    }
    // `objects=true` adds each Put's stored object, for a record that can be replayed.
    let objects = query.get("objects") == Some("true");
    let root = state.config.storage_root.trim_end_matches('/').to_string();
    let range = KeyRange::prefix(format!("{root}/"));
    let mut watch =
        state.storage.watch(WatchRequest::new(range, after.saturating_add(1))).await.map_err(storage_error)?;
    // Storage tells a compacted start only in its first answer: ask for progress so that
    // answer comes now even when nothing has been written since N.
    watch.progress_requester().request();
    let first = match tokio::time::timeout(FIRST_ANSWER_WAIT, watch.next()).await {
        Ok(Some(Ok(WatchResponse::Compacted(compacted)))) => {
            return Err(ApiError::expired(format!("too old resource version: {after} ({compacted})")));
        }
        Ok(Some(Err(e))) => return Err(storage_error(e)),
        Ok(None) => return Err(ApiError::service_unavailable("the storage watch ended at once")),
        Ok(Some(Ok(answer))) => Some(Ok(answer)),
        Err(_) => None,
    };
    let stream =
        History { watch, pending: first, root, objects, shutdown: state.shutdown.clone(), ended: false }.lines();
    Ok(response::with_body(200, "application/json", Body::stream(stream)))
}

/// A running history stream.
struct History {
    watch: Watch,
    /// The answer read while checking the start, sent first.
    pending: Option<Result<WatchResponse, StorageError>>,
    /// The storage root, without a trailing `/`.
    root: String,
    /// Whether each Put's line carries the stored object.
    objects: bool,
    shutdown: watch::Receiver<bool>,
    ended: bool,
}

impl History {
    /// One chunk per storage answer that changed a registered resource's object.
    fn lines(self) -> impl futures::Stream<Item = Chunk> + Send + 'static {
        futures::stream::unfold(self, |mut h| async move {
            let chunk = h.next_chunk().await?;
            Some((chunk, h))
        })
    }

    async fn next_chunk(&mut self) -> Option<Chunk> {
        loop {
            if self.ended {
                return None;
            }
            let answer = match self.pending.take() {
                Some(answer) => answer,
                None => tokio::select! {
                    biased;
                    _ = self.shutdown.wait_for(|down| *down) => return None,
                    answer = self.watch.next() => answer?,
                },
            };
            let failure = match answer {
                Ok(WatchResponse::Events(events)) => {
                    let mut lines = Vec::new();
                    for event in &events {
                        if let Some(mut line) = describe(&self.root, event) {
                            if self.objects
                                && event.kind == EventKind::Put
                                && let Ok(object) = serde_json::from_slice::<Value>(&event.kv.value)
                            {
                                line["object"] = object;
                            }
                            serde_json::to_writer(&mut lines, &line).expect("JSON values serialize");
                            lines.push(b'\n');
                        }
                    }
                    if lines.is_empty() {
                        continue;
                    }
                    return Some(Chunk::from(Bytes::from(lines)));
                }
                Ok(WatchResponse::Progress(_)) => continue,
                Ok(WatchResponse::Compacted(compacted)) => {
                    ApiError::expired(format!("the history was compacted at revision {compacted}"))
                }
                Err(e) => storage_error(e),
            };
            self.ended = true;
            let mut line = serde_json::to_vec(&json!({"error": failure.status()})).expect("a Status serializes");
            line.push(b'\n');
            return Some(Chunk::from(Bytes::from(line)));
        }
    }
}

/// The line of one change, or `None` for a key of no resource.
fn describe(root: &str, event: &Event) -> Option<Value> {
    let change = change_of(root, event)?;
    Some(json!({
        "revision": change.revision,
        "kind": match change.kind { Change::Put => "Put", Change::Delete => "Delete" },
        "created": change.created,
        "group": change.group,
        "resource": change.resource,
        "namespace": change.namespace,
        "name": change.name,
        "uid": change.uid,
        "labels": change.labels,
        "fingerprint": change.fingerprint,
    }))
}

#[cfg(test)]
mod tests {
    use listwatch_storage::KeyValue;

    use listwatch_meta::fingerprint::object_fingerprint;

    use super::*;

    fn kv(key: &str, value: &str, created: i64, modified: i64) -> KeyValue {
        KeyValue {
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::copy_from_slice(value.as_bytes()),
            create_revision: created,
            mod_revision: modified,
            version: 1,
        }
    }

    #[test]
    fn lines_name_the_resource_and_describe_the_stored_object() {
        let stored = r#"{"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","labels":{"x":"y"}},"data":{"k":"v"}}"#;
        let put = Event { kind: EventKind::Put, kv: kv("/r/configmaps/ns/a", stored, 5, 5), prev: None };
        let line = describe("/r", &put).expect("a configmap");
        assert_eq!(line["revision"], 5);
        assert_eq!((line["kind"].as_str(), line["created"].as_bool()), (Some("Put"), Some(true)));
        assert_eq!((line["group"].as_str(), line["resource"].as_str()), (Some(""), Some("configmaps")));
        assert_eq!((line["namespace"].as_str(), line["name"].as_str()), (Some("ns"), Some("a")));
        assert_eq!(line["uid"], "u1");
        assert_eq!(line["labels"], json!({"x": "y"}));
        let fingerprint = object_fingerprint(&serde_json::from_str(stored).unwrap());
        assert_eq!(line["fingerprint"], fingerprint);

        // A delete describes the previous value.
        let tombstone = kv("/r/configmaps/ns/a", "", 0, 9);
        let delete =
            Event { kind: EventKind::Delete, kv: tombstone, prev: Some(kv("/r/configmaps/ns/a", stored, 5, 5)) };
        let line = describe("/r", &delete).unwrap();
        assert_eq!(
            (line["kind"].as_str(), line["created"].as_bool(), line["revision"].as_i64()),
            (Some("Delete"), Some(false), Some(9))
        );
        assert_eq!((line["uid"].as_str(), line["fingerprint"].as_u64()), (Some("u1"), Some(fingerprint)));

        // Cluster-scoped objects have no namespace; keys of no resource are skipped.
        let ns = Event {
            kind: EventKind::Put,
            kv: kv("/r/namespaces/team", r#"{"metadata":{"name":"team"}}"#, 3, 4),
            prev: None,
        };
        let line = describe("/r", &ns).unwrap();
        assert_eq!(
            (line["namespace"].as_str(), line["name"].as_str(), line["created"].as_bool()),
            (Some(""), Some("team"), Some(false))
        );
        let other = Event { kind: EventKind::Put, kv: kv("/r/compact_rev_key", "1", 2, 2), prev: None };
        assert!(describe("/r", &other).is_none());

        // Custom resources are found by kube's key layout for them.
        let cr = Event {
            kind: EventKind::Put,
            kv: kv("/r/stable.example.com/crontabs/ns/c", r#"{"metadata":{"name":"c"}}"#, 7, 7),
            prev: None,
        };
        let line = describe("/r", &cr).unwrap();
        assert_eq!(
            (line["group"].as_str(), line["resource"].as_str(), line["namespace"].as_str(), line["name"].as_str()),
            (Some("stable.example.com"), Some("crontabs"), Some("ns"), Some("c"))
        );
        let crd = Event {
            kind: EventKind::Put,
            kv: kv("/r/apiextensions.k8s.io/customresourcedefinitions/crontabs.stable.example.com", "{}", 6, 6),
            prev: None,
        };
        let line = describe("/r", &crd).unwrap();
        assert_eq!(
            (line["resource"].as_str(), line["namespace"].as_str()),
            (Some("customresourcedefinitions"), Some(""))
        );
    }
}
