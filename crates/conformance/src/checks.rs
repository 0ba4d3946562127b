//! The checks, grouped by the part of the protocol they exercise:
//!
//! * [`stream`] — the watch response itself: headers, framing, `timeoutSeconds`, URL forms;
//! * [`events`] — which events a watch delivers, in which order, from which start point;
//! * [`initial`] — synthetic ADDED events and the initial-events-end bookmark (streaming lists);
//! * [`bookmarks`] — periodic bookmarks and resuming from them;
//! * [`expiry`] — 410 Expired for too-old watches and expired continue tokens;
//! * [`options`] — 422 / 400 for option combinations kube refuses;
//! * [`list`] — pagination;
//! * [`write`] — optimistic concurrency (409);
//! * [`protobuf`] — the protobuf envelope, watch frames and request bodies;
//! * [`websocket`] — watches upgraded to WebSocket;
//! * [`representations`] — Tables, metadata-only output, 406 for a watch without a stream
//!   serializer;
//! * [`http2`] — many watches multiplexed on one HTTP/2 connection;
//! * [`guarantees`] — etcd's watch guarantees (ordered, unique, reliable, bookmarkable, …) under
//!   a few hundred writes, judged by the simulator's checker.

mod bookmarks;
mod events;
mod expect;
mod expiry;
pub(crate) mod guarantees;
mod http2;
pub(crate) mod initial;
mod list;
mod options;
pub(crate) mod protobuf;
mod representations;
pub(crate) mod stream;
mod websocket;
mod write;

use crate::Check;

/// Every check, in report order.
pub fn all_checks() -> Vec<Check> {
    let mut checks = protocol_checks();
    checks.extend(guarantees::checks());
    checks
}

/// The checks of single protocol rules.
fn protocol_checks() -> Vec<Check> {
    vec![
        Check {
            name: "watch-response-head",
            section: "§11.1",
            summary: "watch=1 answers 200 at once (before any event) with Content-Type application/json, chunked, Cache-Control no-cache, private",
            exclusive: false,
            run: |t| Box::pin(stream::response_head(t)),
        },
        Check {
            name: "watch-body-ndjson",
            section: "§11.2",
            summary: "the body is newline-delimited JSON objects with exactly the keys type and object",
            exclusive: false,
            run: |t| Box::pin(stream::body_is_ndjson(t)),
        },
        Check {
            name: "watch-event-types",
            section: "§11.3",
            summary: "create/update/delete give ADDED/MODIFIED/DELETED; DELETED carries the deletion's (newer) resourceVersion",
            exclusive: false,
            run: |t| Box::pin(events::event_types(t)),
        },
        Check {
            name: "watch-from-resource-version",
            section: "§11.4",
            summary: "a watch from RV R delivers exactly the changes with RV > R, in RV order, without synthetic ADDEDs",
            exclusive: false,
            run: |t| Box::pin(events::from_resource_version(t)),
        },
        Check {
            name: "watch-restart-from-last-seen",
            section: "§11.5",
            summary: "restarting from the last RV seen (also a DELETED's) continues without gaps or duplicates",
            exclusive: false,
            run: |t| Box::pin(events::restart_from_last_seen(t)),
        },
        Check {
            name: "watch-label-selector-transitions",
            section: "§11.6",
            summary: "starting to match gives ADDED, stopping gives DELETED with the previous object at the update's RV",
            exclusive: false,
            run: |t| Box::pin(events::label_selector_transitions(t)),
        },
        Check {
            name: "watch-concurrent-same-order",
            section: "§11.7",
            summary: "10 watches started at the same RV see identical sequences",
            exclusive: false,
            run: |t| Box::pin(events::concurrent_watches(t)),
        },
        Check {
            name: "watch-namespace-scoped",
            section: "§1.1",
            summary: "a namespaced watch, live or replaying from an RV, never delivers another namespace's objects",
            exclusive: false,
            run: |t| Box::pin(events::namespace_scoped(t)),
        },
        Check {
            name: "watch-initial-events",
            section: "§11.8",
            summary: "resourceVersion unset or \"0\" starts with a synthetic ADDED per existing object",
            exclusive: false,
            run: |t| Box::pin(initial::initial_events(t)),
        },
        Check {
            name: "watch-initial-events-end-bookmark",
            section: "§1.3",
            summary: "RV unset or \"0\" with allowWatchBookmarks: the ADDEDs end with the k8s.io/initial-events-end bookmark (WatchList on, as kube 1.32, 1.34+)",
            exclusive: false,
            run: |t| Box::pin(initial::initial_events_end_bookmark(t)),
        },
        Check {
            name: "watch-streaming-list",
            section: "§11.11",
            summary: "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true: ADDEDs, the annotated bookmark, then changes",
            exclusive: false,
            run: |t| Box::pin(initial::streaming_list(t)),
        },
        Check {
            name: "watch-bookmarks",
            section: "§11.10",
            summary: "a BOOKMARK is an object of the watched kind whose RV is ≥ every RV delivered before it, and a resume point that misses and repeats nothing",
            exclusive: false,
            run: |t| Box::pin(bookmarks::bookmarks(t)),
        },
        Check {
            name: "watch-timeout-seconds",
            section: "§11.12",
            summary: "timeoutSeconds=2 ends the stream cleanly after about 2 s",
            exclusive: false,
            run: |t| Box::pin(stream::timeout_seconds(t)),
        },
        Check {
            name: "watch-legacy-path",
            section: "§1.1",
            summary: "/api/v1/watch/namespaces/{ns}/configmaps (/apis/{g}/{v}/watch/… for a CR) works like ?watch=1",
            exclusive: false,
            run: |t| Box::pin(stream::legacy_collection_path(t)),
        },
        Check {
            name: "watch-legacy-path-named-object",
            section: "§1.1",
            summary: "/api/v1/watch/namespaces/{ns}/configmaps/{name} (or a CR's) watches that one object",
            exclusive: false,
            run: |t| Box::pin(stream::legacy_object_path(t)),
        },
        Check {
            name: "watch-query-boolean",
            section: "§1.1",
            summary: "a bare ?watch is a watch; watch=false and watch=0 are lists; watch=1 on an item URL is a GET",
            exclusive: false,
            run: |t| Box::pin(stream::watch_query_boolean(t)),
        },
        Check {
            name: "invalid-option-combinations",
            section: "§1.4",
            summary: "option combinations kube refuses answer 422 Invalid with details kind ListOptions, group meta.k8s.io",
            exclusive: false,
            run: |t| Box::pin(options::invalid_combinations(t)),
        },
        Check {
            name: "bad-list-requests",
            section: "§1.4",
            summary: "continue with resourceVersion, a garbage continue token, a non-numeric resourceVersion answer 400",
            exclusive: false,
            run: |t| Box::pin(options::bad_requests(t)),
        },
        Check {
            name: "list-pagination",
            section: "§11.13",
            summary: "pages share one RV, come in key order, count remainingItemCount right, and omit it on the last page; items carry kind and apiVersion only for a CR",
            exclusive: false,
            run: |t| Box::pin(list::pagination(t)),
        },
        Check {
            name: "update-stale-resource-version",
            section: "§11.15",
            summary: "PUT with a stale resourceVersion answers 409 Conflict with kube's message",
            exclusive: false,
            run: |t| Box::pin(write::stale_update_conflicts(t)),
        },
        Check {
            name: "watch-streaming-list-no-bookmarks",
            section: "§6",
            summary: "sendInitialEvents=true&resourceVersionMatch=NotOlderThan without allowWatchBookmarks: the ADDEDs, then no end-marker bookmark",
            exclusive: false,
            run: |t| Box::pin(initial::streaming_list_without_bookmarks(t)),
        },
        Check {
            name: "watch-streaming-list-future-rv",
            section: "§6",
            summary: "a streaming list from a resourceVersion far ahead: 200, then one ERROR event (504, ResourceVersionTooLarge), then the end",
            exclusive: false,
            run: |t| Box::pin(initial::streaming_list_future_resource_version(t)),
        },
        Check {
            name: "watch-send-initial-events-false",
            section: "§6",
            summary: "sendInitialEvents=false&resourceVersionMatch=NotOlderThan (RV unset or 0): no synthetic events, the first event is the next change",
            exclusive: false,
            run: |t| Box::pin(initial::send_initial_events_false(t)),
        },
        Check {
            name: "protobuf-get-list",
            section: "§2.4",
            summary: "GET and LIST accepting protobuf answer k8s\\0 + runtime.Unknown holding a ConfigMap / ConfigMapList equal to the JSON one (a CR: 406, and JSON with a JSON fallback)",
            exclusive: false,
            run: |t| Box::pin(protobuf::get_and_list(t)),
        },
        Check {
            name: "protobuf-watch-frames",
            section: "§2.4",
            summary: "a protobuf watch answers ...protobuf;stream=watch and 4-byte big-endian length-prefixed WatchEvents whose object.raw is enveloped (a CR: 406, and JSON with a JSON fallback)",
            exclusive: false,
            run: |t| Box::pin(protobuf::watch_frames(t)),
        },
        Check {
            name: "protobuf-create-body",
            section: "§2.4",
            summary: "a protobuf request body creates the ConfigMap it holds (answered as JSON or protobuf; Skipped for a CR)",
            exclusive: false,
            run: |t| Box::pin(protobuf::create_body(t)),
        },
        Check {
            name: "protobuf-json-round-trip",
            section: "§2.4",
            summary: "JSON → protobuf → JSON keeps every data, binaryData, label and annotation (Skipped for a CR)",
            exclusive: false,
            run: |t| Box::pin(protobuf::json_round_trip(t)),
        },
        Check {
            name: "websocket-handshake",
            section: "§2.5",
            summary: "no Origin ⇒ 403; two subprotocols ⇒ 400; one ⇒ echoed; a bearer-token subprotocol plus one other ⇒ 101 echoing the other",
            exclusive: false,
            run: |t| Box::pin(websocket::handshake(t)),
        },
        Check {
            name: "websocket-json-messages",
            section: "§2.5",
            summary: "a WebSocket watch sends one event per text message: the JSON line with its newline",
            exclusive: false,
            run: |t| Box::pin(websocket::json_messages(t)),
        },
        Check {
            name: "websocket-protobuf-messages",
            section: "§2.5",
            summary: "a protobuf WebSocket watch sends binary messages, each one WatchEvent without a length prefix (a CR: 406)",
            exclusive: false,
            run: |t| Box::pin(websocket::protobuf_messages(t)),
        },
        Check {
            name: "websocket-timeout-closes",
            section: "§2.5",
            summary: "at timeoutSeconds=2 the server closes the WebSocket (Close frame, then the end) after about 2 s",
            exclusive: false,
            run: |t| Box::pin(websocket::timeout_closes(t)),
        },
        Check {
            name: "websocket-client-close",
            section: "§2.5",
            summary: "the client's Close ends the watch: the server answers Close and ends the connection; a new watch works",
            exclusive: false,
            run: |t| Box::pin(websocket::client_close(t)),
        },
        Check {
            name: "websocket-close-unregisters",
            section: "§2.5",
            summary: "after the client's Close, apiserver_registered_watchers drops back (Skipped without the metric)",
            exclusive: false,
            run: |t| Box::pin(websocket::close_unregisters(t)),
        },
        Check {
            name: "table-list-get",
            section: "§10.2",
            summary: "LIST and GET as=Table: columns Name, Data, Age (a CR: Name, its printer columns); rows with PartialObjectMetadata, includeObject=Object|None; v1beta1 too",
            exclusive: false,
            run: |t| Box::pin(representations::tables(t)),
        },
        Check {
            name: "table-watch",
            section: "§2.3",
            summary: "a Table watch sends one-row Tables; only the first event carries columnDefinitions",
            exclusive: false,
            run: |t| Box::pin(representations::table_watch(t)),
        },
        Check {
            name: "metadata-only",
            section: "§2.2",
            summary: "as=PartialObjectMetadata (GET, WATCH) and as=PartialObjectMetadataList (LIST): meta.k8s.io/v1 kinds with metadata only",
            exclusive: false,
            run: |t| Box::pin(representations::metadata_only_output(t)),
        },
        Check {
            name: "watch-yaml-not-acceptable",
            section: "§2.2",
            summary: "a watch accepting only application/yaml (no stream serializer) answers 406 NotAcceptable with a Status",
            exclusive: false,
            run: |t| Box::pin(representations::yaml_watch_not_acceptable(t)),
        },
        Check {
            name: "http2-many-watches",
            section: "§2.1",
            summary: "50 watches on one HTTP/2 connection (h2c with prior knowledge, or h2 over TLS) each get the event",
            exclusive: false,
            run: |t| Box::pin(http2::many_watches_one_connection(t)),
        },
        Check {
            name: "watch-too-old-resource-version",
            section: "§11.9",
            summary: "a watch from a compacted RV answers 200, one ERROR event (410 Expired), then ends",
            exclusive: true,
            run: |t| Box::pin(expiry::too_old_watch(t)),
        },
        Check {
            name: "list-expired-continue",
            section: "§11.14",
            summary: "a compacted continue token answers 410 Expired with a new token that continues at a new RV",
            exclusive: true,
            run: |t| Box::pin(expiry::expired_continue(t)),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_label_values() {
        let checks = all_checks();
        let mut names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), checks.len(), "duplicate check names");
        for name in names {
            // A label value: ≤ 63 bytes of [a-z0-9-], starting and ending alphanumeric.
            let valid = name.len() <= 63
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.starts_with('-')
                && !name.ends_with('-');
            assert!(valid, "{name} cannot be a label value");
        }
    }
}
