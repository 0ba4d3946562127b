//! Protobuf (spec §2.4): what Go clients (client-go, kube-controller-manager, kubelet) speak
//! to kube-apiserver for built-in kinds. A GET or LIST answers `k8s\0` followed by a
//! `runtime.Unknown` whose typeMeta names the kind and whose `raw` is the object's own
//! message; a watch answers `Content-Type: application/vnd.kubernetes.protobuf;stream=watch`
//! and a sequence of frames, each a 4-byte big-endian length and a `metav1.WatchEvent`
//! (not enveloped) whose `object.raw` is an enveloped object. Bodies are decoded with
//! prost-reflect against the upstream descriptors, field by field (see [`crate::proto`]),
//! and compared with the same objects read as JSON, so a lossy or mis-numbered encoding shows.
//!
//! A server that does not offer protobuf for ConfigMaps (it answers 406) is not broken by
//! that (CRDs and aggregated APIs offer none either): these checks are then Skipped.
//!
//! A custom resource has no protobuf message, and kube-apiserver serves it as JSON and YAML
//! only (`shared/spec/crds-and-apply.md` §3.1, §6.8). With `--resource custom` these checks
//! therefore assert kube's answer for a CR instead of faking one:
//!
//! * `protobuf-get-list`: a GET and a LIST accepting only protobuf answer 406 NotAcceptable
//!   with kube's message; accepting `application/vnd.kubernetes.protobuf, application/json` (as
//!   a client that prefers protobuf must for CRs) they answer `application/json`, the objects as
//!   a plain JSON read has them;
//! * `protobuf-watch-frames`: a watch accepting only protobuf answers 406 NotAcceptable; with
//!   the JSON fallback it is a JSON watch (`application/json`) delivering the change;
//! * `protobuf-create-body` and `protobuf-json-round-trip` are Skipped: with no protobuf
//!   message for a CR there is no protobuf body to send or read back.
//!
//! (`websocket-protobuf-messages` in `websocket.rs` likewise asserts that the handshake is
//! refused with 406.)

use bytes::Bytes;
use listwatch_proto::prost_reflect::prost::Message;
use listwatch_proto::prost_reflect::{DynamicMessage, Value as ProtoValue};
use reqwest::Method;
use serde_json::{Value, json};

use crate::checks::expect::{Expected, expect_sequence};
use crate::fixture::{CHECK_LABEL, Fixture, encode, rv};
use crate::http::ApiResponse;
use crate::proto::{
    self, CONFIG_MAP, CONFIG_MAP_LIST, PROTOBUF, PROTOBUF_STREAM, config_map_json_view, config_map_view, decode,
    message_field, repeated_messages, sorted, unwrap,
};
use crate::watch::{EVENT_TIMEOUT, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

/// kube-apiserver's message when a custom resource is asked for with only protobuf acceptable:
/// the media types of its internal list, protobuf included (crds-and-apply.md §3.1).
const CUSTOM_NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// What a client that prefers protobuf sends for a custom resource: JSON as the fallback.
pub(crate) const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Why the protobuf body checks do not apply to a custom resource.
const NO_CUSTOM_PROTOBUF_BODY: &str = "a custom resource has no protobuf message: kube-apiserver serves and reads custom resources as JSON and YAML only, so there is no protobuf body to send (protobuf-get-list and protobuf-watch-frames assert its 406 instead)";

/// Skipped when the server answered 406 to a protobuf request for ConfigMaps.
pub(crate) fn skip_if_refused(response: &ApiResponse) -> Result<(), CheckFailure> {
    if response.status == 406 {
        return Err(CheckFailure::skipped(format!(
            "the server does not offer protobuf for ConfigMaps ({} {} with Accept: {PROTOBUF} answered 406)",
            response.method, response.path
        )));
    }
    Ok(())
}

/// Fails unless `response` is kube's 406 for a custom resource asked for as protobuf only: a
/// Status with code 406, reason NotAcceptable and (when `exact`) kube's message.
pub(crate) fn expect_not_acceptable(response: &ApiResponse, exact: bool) -> Result<(), CheckFailure> {
    let status = crate::http::Status::from_json(&response.json().unwrap_or_default());
    let message_ok = if exact {
        status.message == CUSTOM_NOT_ACCEPTABLE
    } else {
        status.message.starts_with("only the following media types are accepted: ")
    };
    if response.status != 406
        || status.kind != "Status"
        || status.status != "Failure"
        || status.code != 406
        || status.reason != "NotAcceptable"
        || !message_ok
    {
        return Err(CheckFailure::failed_with(
            format!(
                "{} {} accepting only {PROTOBUF}: a custom resource has no protobuf, so kube answers HTTP 406 with a Status: code 406, reason NotAcceptable, message {:?}",
                response.method,
                response.path,
                if exact { CUSTOM_NOT_ACCEPTABLE } else { "only the following media types are accepted: …" }
            ),
            response.describe(),
        ));
    }
    Ok(())
}

/// Asks for this check's ConfigMaps as protobuf once: Skipped on a 406.
pub(crate) async fn require_protobuf(fx: &Fixture<'_>) -> Result<(), CheckFailure> {
    let response = fx.target.get_as(&fx.collection(&selector(fx)), PROTOBUF).await?;
    skip_if_refused(&response)
}

fn selector(fx: &Fixture<'_>) -> String {
    format!("labelSelector={}", encode(&fx.selector()))
}

/// The enveloped object of a 200 protobuf answer, checked to be `kind` in `v1`.
fn enveloped_body(response: &ApiResponse, kind: &str, message: &str) -> Result<DynamicMessage, CheckFailure> {
    let fail = |why: String| {
        CheckFailure::failed_with(format!("{} {}: {why}", response.method, response.path), response.describe())
    };
    if response.status != 200 && response.status != 201 {
        return Err(fail(format!("expected HTTP 200 or 201, got {}", response.status)));
    }
    if response.content_type() != PROTOBUF {
        return Err(fail(format!("Content-Type must be exactly {PROTOBUF}, got {:?}", response.content_type())));
    }
    let envelope = unwrap(&response.body).map_err(|e| fail(format!("the body is not an enveloped object: {e}")))?;
    envelope.expect("v1", kind).map_err(fail)?;
    decode(message, &envelope.raw).map_err(|e| fail(format!("object.raw: {e}")))
}

/// Fails unless the protobuf view of an object equals the JSON view of the same object.
fn expect_same(what: &str, from_protobuf: Value, json_object: &Value, evidence: &str) -> Result<(), CheckFailure> {
    let from_protobuf = sorted(from_protobuf);
    let from_json = config_map_json_view(json_object);
    if from_protobuf != from_json {
        return Err(CheckFailure::failed_with(
            format!("{what}: the protobuf object differs from the JSON one"),
            format!("protobuf: {from_protobuf}\nJSON:     {from_json}\n{evidence}"),
        ));
    }
    Ok(())
}

/// §2.4: GET and LIST with `Accept: application/vnd.kubernetes.protobuf` answer that
/// Content-Type and an enveloped ConfigMap / ConfigMapList whose fields equal the JSON ones.
pub async fn get_and_list(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "protobuf-get-list");
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "2").await?;
    if target.resource.is_custom() {
        return custom_get_and_list(&fx, &a, &b).await;
    }

    let path = format!("{}/{}", target.collection(), fx.name("a"));
    let response = target.get_as(&path, PROTOBUF).await?;
    skip_if_refused(&response)?;
    let object = enveloped_body(&response, "ConfigMap", CONFIG_MAP)?;
    expect_same(&format!("GET {path}"), config_map_view(&object), &a, &response.describe())?;

    let list_path = fx.collection(&selector(&fx));
    let response = target.get_as(&list_path, PROTOBUF).await?;
    let list = enveloped_body(&response, "ConfigMapList", CONFIG_MAP_LIST)?;
    let items = repeated_messages(&list, "items");
    if items.len() != 2 {
        return Err(CheckFailure::failed_with(
            format!("GET {list_path}: expected 2 items, decoded {}", items.len()),
            response.describe(),
        ));
    }
    for (item, json_object) in items.iter().zip([&a, &b]) {
        expect_same(&format!("GET {list_path}"), config_map_view(item), json_object, &response.describe())?;
    }
    let list_rv: i64 = proto::resource_version(&list).parse().unwrap_or(0);
    if list_rv < rv(&b) {
        return Err(CheckFailure::failed_with(
            format!(
                "GET {list_path}: the list's metadata.resourceVersion ({list_rv}) must be ≥ the newest item's ({})",
                rv(&b)
            ),
            response.describe(),
        ));
    }
    Ok(())
}

/// For a custom resource: GET and LIST accepting only protobuf answer kube's 406; with JSON
/// as the fallback they answer `application/json` holding the objects as written.
async fn custom_get_and_list(fx: &Fixture<'_>, a: &Value, b: &Value) -> Result<(), CheckFailure> {
    let target = fx.target;
    let one = format!("{}/{}", target.collection(), fx.name("a"));
    let list = fx.collection(&selector(fx));
    for path in [&one, &list] {
        expect_not_acceptable(&target.get_as(path, PROTOBUF).await?, true)?;
    }
    let expect_json = |response: &ApiResponse, ok: bool, what: &str| {
        if response.status != 200 || response.content_type() != "application/json" || !ok {
            return Err(CheckFailure::failed_with(
                format!(
                    "GET {} accepting {PROTOBUF_OR_JSON}: a custom resource must come back as application/json (HTTP 200), {what}",
                    response.path
                ),
                response.describe(),
            ));
        }
        Ok(())
    };
    let response = target.get_as(&one, PROTOBUF_OR_JSON).await?;
    let object = response.json().unwrap_or_default();
    expect_json(&response, &object == a, "the object as created")?;
    let response = target.get_as(&list, PROTOBUF_OR_JSON).await?;
    let body = response.json().unwrap_or_default();
    let items_ok = body["kind"] == target.resource.list_kind().as_str()
        && body["items"].as_array().is_some_and(|items| items.len() == 2 && &items[0] == a && &items[1] == b);
    expect_json(&response, items_ok, &format!("a {} holding the 2 objects as created", target.resource.list_kind()))
}

/// Reads one protobuf watch frame and decodes it into an event (its object reduced to the
/// fields [`config_map_view`] reads) and the full view, for comparing with JSON.
async fn next_proto_event(watch: &mut WatchStream) -> Result<(WatchEvent, Value), CheckFailure> {
    let frame = watch.next_frame(EVENT_TIMEOUT).await?;
    let event = proto::decode_watch_event(&frame)
        .map_err(|e| watch.binary_failure(&format!("a frame is not a metav1.WatchEvent: {e}")))?;
    let envelope =
        unwrap(&event.raw).map_err(|e| watch.binary_failure(&format!("a {} event's object.raw: {e}", event.kind)))?;
    envelope.expect("v1", "ConfigMap").map_err(|e| watch.binary_failure(&format!("a {} event: {e}", event.kind)))?;
    let object =
        decode(CONFIG_MAP, &envelope.raw).map_err(|e| watch.binary_failure(&format!("a {} event: {e}", event.kind)))?;
    let view = config_map_view(&object);
    let line = proto::hex(&frame);
    Ok((WatchEvent { kind: event.kind, object: view.clone(), line }, view))
}

/// §2.4: a protobuf watch answers `application/vnd.kubernetes.protobuf;stream=watch` and
/// length-prefixed `WatchEvent` frames whose `object.raw` is an enveloped ConfigMap; the
/// events are the same as a JSON watch's (types, names, resourceVersions, content).
pub async fn watch_frames(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "protobuf-watch-frames");
    if target.resource.is_custom() {
        return custom_watch(&fx).await;
    }
    require_protobuf(&fx).await?;
    let start = fx.current_rv().await?;
    let mut watch = target.watch_accepting(&fx.watch_query(&format!("resourceVersion={start}")), PROTOBUF).await?;
    let content_type: Vec<String> = watch
        .headers
        .get_all(reqwest::header::CONTENT_TYPE)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    if content_type != [PROTOBUF_STREAM] {
        return Err(watch.binary_failure(&format!(
            "a protobuf watch's Content-Type must be exactly {PROTOBUF_STREAM}, got {content_type:?}"
        )));
    }
    let a = fx.create_labelled("a", &[], "1").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.delete(&fx.name("a")).await?;
    let mut events = Vec::new();
    let mut views = Vec::new();
    for _ in 0..3 {
        let (event, view) = next_proto_event(&mut watch).await?;
        events.push(event);
        views.push(view);
    }
    expect_sequence(
        &watch,
        "the protobuf events",
        &events,
        &[Expected::new("ADDED", &a), Expected::new("MODIFIED", &a2), Expected::deleted(fx.name("a"))],
        start,
    )?;
    for (view, json_object) in views.into_iter().zip([&a, &a2]) {
        expect_same(&format!("GET {}", watch.path), view, json_object, &watch.transcript())?;
    }
    Ok(())
}

/// For a custom resource: a watch accepting only protobuf answers 406 NotAcceptable (the
/// message is not pinned: kube's was read from the code for GET and LIST, not captured for a
/// watch); with JSON as the fallback it is a JSON watch that delivers the next change.
async fn custom_watch(fx: &Fixture<'_>) -> Result<(), CheckFailure> {
    let target = fx.target;
    let start = fx.current_rv().await?;
    let query = fx.watch_query(&format!("resourceVersion={start}"));
    match target.open_watch_accepting(&query, PROTOBUF).await? {
        Ok(watch) => {
            return Err(watch.failure(&format!(
                "a custom resource has no protobuf: a watch accepting only {PROTOBUF} must answer 406, it answered 200"
            )));
        }
        Err(response) => expect_not_acceptable(&response, false)?,
    }
    let mut watch = target.watch_accepting(&query, PROTOBUF_OR_JSON).await?;
    crate::checks::stream::check_head(&watch)?;
    let a = fx.create("a", "1").await?;
    let event = watch.next_event(EVENT_TIMEOUT).await?;
    expect_sequence(&watch, "a watch accepting protobuf or JSON", &[event], &[Expected::new("ADDED", &a)], start)
}

/// §2.4: a protobuf request body (`Content-Type: application/vnd.kubernetes.protobuf`, an
/// enveloped ConfigMap) creates the object, answering in JSON or in protobuf as asked.
pub async fn create_body(target: &Target) -> Result<(), CheckFailure> {
    if target.resource.is_custom() {
        return Err(CheckFailure::skipped(NO_CUSTOM_PROTOBUF_BODY));
    }
    let fx = Fixture::new(target, "protobuf-create-body");
    require_protobuf(&fx).await?;
    for (suffix, accept) in [("json-answer", "application/json"), ("protobuf-answer", PROTOBUF)] {
        let view = json!({
            "metadata": {"name": fx.name(suffix), "namespace": target.namespace, "labels": {CHECK_LABEL: fx.check}},
            "data": {"value": format!("sent as protobuf, answered as {accept}")},
        });
        let message = proto::config_map_message(&view).map_err(CheckFailure::failed)?;
        let body = proto::wrap("v1", "ConfigMap", &message.encode_to_vec()).map_err(CheckFailure::failed)?;
        let response =
            target.send_as(Method::POST, &target.collection(), accept, Some((PROTOBUF, Bytes::from(body)))).await?;
        if response.status != 201 {
            return Err(CheckFailure::failed_with(
                format!("POST {} with a protobuf body: expected HTTP 201, got {}", response.path, response.status),
                response.describe(),
            ));
        }
        let created = if accept == PROTOBUF {
            let object = enveloped_body(&response, "ConfigMap", CONFIG_MAP)?;
            sorted(config_map_view(&object))
        } else {
            config_map_json_view(&response.json()?)
        };
        let stored = target.get(&format!("{}/{}", target.collection(), fx.name(suffix))).await?;
        let stored_json = stored.expect(200)?;
        let mut wanted = config_map_json_view(&view);
        wanted["metadata"]["resourceVersion"] = stored_json["metadata"]["resourceVersion"].clone();
        let wanted = sorted(wanted);
        if created != wanted || config_map_json_view(&stored_json) != wanted {
            return Err(CheckFailure::failed_with(
                format!(
                    "POST {} with a protobuf body (Accept: {accept}): the object was not created as sent",
                    response.path
                ),
                format!(
                    "sent:    {wanted}\nanswer:  {created}\nstored:  {}\n{}",
                    config_map_json_view(&stored_json),
                    response.describe()
                ),
            ));
        }
    }
    Ok(())
}

/// §2.4: a ConfigMap created as JSON, read as protobuf (compared field by field), then sent
/// back as those protobuf bytes (renamed, server-set metadata cleared) and read as JSON, keeps
/// every data, binaryData, label and annotation: empty values, non-ASCII text, control
/// characters and arbitrary bytes included.
pub async fn json_round_trip(target: &Target) -> Result<(), CheckFailure> {
    if target.resource.is_custom() {
        return Err(CheckFailure::skipped(NO_CUSTOM_PROTOBUF_BODY));
    }
    let fx = Fixture::new(target, "protobuf-json-round-trip");
    require_protobuf(&fx).await?;
    let original = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": fx.name("original"),
            "namespace": target.namespace,
            "labels": {CHECK_LABEL: fx.check, "app.kubernetes.io/name": "round-trip", "empty": ""},
            "annotations": {
                "example.com/text": "line one\nline two\ttabbed — ünïcödé ✓ 日本語",
                "example.com/json": "{\"k\":[1,2,{\"n\":null}]}",
                "example.com/empty": "",
            },
        },
        "data": {"plain": "v", "empty": "", "unicode": "日本語 ✓ émoji 🎉", "lines": "a\nb\r\n\tc\n", "quote": "\"'\\"},
        "binaryData": {"bytes": "AAECA/8A/v2AgQ==", "empty-bytes": ""},
    });
    let response = target.send(Method::POST, &target.collection(), Some(&original)).await?;
    let created = response.expect(201)?;

    let path = format!("{}/{}", target.collection(), fx.name("original"));
    let response = target.get_as(&path, PROTOBUF).await?;
    skip_if_refused(&response)?;
    let mut message = enveloped_body(&response, "ConfigMap", CONFIG_MAP)?;
    expect_same(&format!("JSON → protobuf: GET {path}"), config_map_view(&message), &created, &response.describe())?;

    let mut meta = message_field(&message, "metadata").ok_or_else(|| {
        CheckFailure::failed_with(format!("GET {path}: the ConfigMap has no metadata"), response.describe())
    })?;
    meta.set_field_by_name("name", ProtoValue::String(fx.name("copy")));
    for server_set in ["resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink"] {
        meta.clear_field_by_name(server_set);
    }
    message.set_field_by_name("metadata", ProtoValue::Message(meta));
    let body = proto::wrap("v1", "ConfigMap", &message.encode_to_vec()).map_err(CheckFailure::failed)?;
    let response = target
        .send_as(Method::POST, &target.collection(), "application/json", Some((PROTOBUF, Bytes::from(body))))
        .await?;
    let copy = response.expect(201)?;
    let read_back = target.get(&format!("{}/{}", target.collection(), fx.name("copy"))).await?.expect(200)?;
    for (what, object) in [("the POST's answer", &copy), ("a GET", &read_back)] {
        let mut got = config_map_json_view(object);
        let mut want = config_map_json_view(&created);
        for view in [&mut got, &mut want] {
            if let Some(metadata) = view["metadata"].as_object_mut() {
                metadata.remove("name");
                metadata.remove("resourceVersion");
            }
        }
        if got != want {
            return Err(CheckFailure::failed_with(
                format!("JSON → protobuf → JSON: {what} of the copy differs from the original"),
                format!("original: {want}\ncopy:     {got}\n{}", response.describe()),
            ));
        }
    }
    Ok(())
}
