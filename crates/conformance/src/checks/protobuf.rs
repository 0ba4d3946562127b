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

use bytes::Bytes;
use listwatch_proto::prost_reflect::prost::Message;
use listwatch_proto::prost_reflect::{DynamicMessage, Value as ProtoValue};
use reqwest::Method;
use serde_json::{Value, json};

use crate::checks::{Expected, expect_sequence};
use crate::fixture::{CHECK_LABEL, Fixture, encode, rv};
use crate::http::ApiResponse;
use crate::proto::{
    self, CONFIG_MAP, CONFIG_MAP_LIST, PROTOBUF, PROTOBUF_STREAM, config_map_json_view, config_map_view, decode,
    message_field, repeated_messages, sorted, unwrap,
};
use crate::watch::{EVENT_TIMEOUT, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

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

    let path = format!("{}/{}", target.configmaps(), fx.name("a"));
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

/// §2.4: a protobuf request body (`Content-Type: application/vnd.kubernetes.protobuf`, an
/// enveloped ConfigMap) creates the object, answering in JSON or in protobuf as asked.
pub async fn create_body(target: &Target) -> Result<(), CheckFailure> {
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
            target.send_as(Method::POST, &target.configmaps(), accept, Some((PROTOBUF, Bytes::from(body)))).await?;
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
        let stored = target.get(&format!("{}/{}", target.configmaps(), fx.name(suffix))).await?;
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
    let response = target.send(Method::POST, &target.configmaps(), Some(&original)).await?;
    let created = response.expect(201)?;

    let path = format!("{}/{}", target.configmaps(), fx.name("original"));
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
        .send_as(Method::POST, &target.configmaps(), "application/json", Some((PROTOBUF, Bytes::from(body))))
        .await?;
    let copy = response.expect(201)?;
    let read_back = target.get(&format!("{}/{}", target.configmaps(), fx.name("copy"))).await?.expect(200)?;
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
