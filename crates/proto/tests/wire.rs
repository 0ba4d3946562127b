//! Byte-level checks against hand-assembled encodings (which pin the field numbers and the
//! order Go writes fields in), the envelope, list and watch layouts read back independently
//! with prost-reflect, the JSON shape of a Go client's protobuf body, and unknown-field reports.

use listwatch_proto::prost_reflect::{DynamicMessage, MessageDescriptor, Value as ProtoValue};
use listwatch_proto::{
    ListMeta, MAGIC, ProtoError, check_json_fields, decode_object, descriptor_pool, encode_list, encode_object,
    encode_status, encode_watch_event, frame, message_for, unwrap_unknown, watch_event_prefix, wrap_unknown,
};
use prost::Message as _;
use serde_json::{Value, json};

fn descriptor(name: &str) -> MessageDescriptor {
    descriptor_pool().get_message_by_name(name).unwrap_or_else(|| panic!("{name} is compiled in"))
}

fn field<'a>(message: &'a DynamicMessage, name: &str) -> std::borrow::Cow<'a, ProtoValue> {
    message.get_field_by_name(name).unwrap_or_else(|| panic!("{name} is a field"))
}

#[test]
fn tiny_config_map_matches_a_hand_assembled_encoding() {
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "b", "creationTimestamp": "2024-01-02T03:04:05Z"},
        "immutable": true,
        "data": {"k": "v"},
        "binaryData": {"b": "AAE="}
    });
    let expected: Vec<u8> = [
        // 1 metadata: ObjectMeta{1 name "a", 3 namespace "b", 8 creationTimestamp Time{1 seconds, 2 nanos 0}}
        &[0x0a, 0x10, 0x0a, 0x01, b'a', 0x1a, 0x01, b'b'][..],
        &[0x42, 0x08, 0x08, 0xa5, 0xfa, 0xcd, 0xac, 0x06, 0x10, 0x00],
        // 2 data: entry{1 key "k", 2 value "v"}
        &[0x12, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v'],
        // 3 binaryData: entry{1 key "b", 2 value 00 01}
        &[0x1a, 0x07, 0x0a, 0x01, b'b', 0x12, 0x02, 0x00, 0x01],
        // 4 immutable: true
        &[0x20, 0x01],
    ]
    .concat();
    let bytes = encode_object("", "v1", "ConfigMap", &object).unwrap();
    assert_eq!(bytes, expected);

    let mut envelope = MAGIC.to_vec();
    // runtime.Unknown{1 typeMeta{1 "v1", 2 "ConfigMap"}, 2 raw, 3 "", 4 ""}
    envelope.extend_from_slice(&[0x0a, 0x0f, 0x0a, 0x02, b'v', b'1', 0x12, 0x09]);
    envelope.extend_from_slice(b"ConfigMap");
    envelope.extend_from_slice(&[0x12, expected.len() as u8]);
    envelope.extend_from_slice(&expected);
    envelope.extend_from_slice(&[0x1a, 0x00, 0x22, 0x00]);
    assert_eq!(wrap_unknown("v1", "ConfigMap", &bytes), envelope);
}

#[test]
fn int_or_string_and_quantity_encode_as_go_writes_them() {
    let probe = json!({"metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "c",
        "resources": {"limits": {"cpu": "1"}},
        "readinessProbe": {"httpGet": {"port": 8080}},
        "livenessProbe": {"httpGet": {"port": "web"}}
    }]}});
    let bytes = encode_object("", "v1", "Pod", &probe).unwrap();
    let pod = DynamicMessage::decode(descriptor("k8s.io.api.core.v1.Pod"), bytes.as_slice()).unwrap();
    let spec = field(&pod, "spec");
    let containers = field(spec.as_message().unwrap(), "containers");
    let container = containers.as_list().unwrap()[0].as_message().unwrap();

    let port_of = |probe: &str| {
        let probe = field(container, probe).as_message().unwrap().clone();
        let handler = field(&probe, "handler").as_message().unwrap().clone();
        let http_get = field(&handler, "httpGet").as_message().unwrap().clone();
        field(&http_get, "port").as_message().unwrap().encode_to_vec()
    };
    // IntOrString{1 type, 2 intVal, 3 strVal}, every field written.
    assert_eq!(port_of("readinessProbe"), [0x08, 0x00, 0x10, 0x90, 0x3f, 0x1a, 0x00]);
    assert_eq!(port_of("livenessProbe"), [0x08, 0x01, 0x10, 0x00, 0x1a, 0x03, b'w', b'e', b'b']);

    let resources = field(container, "resources").as_message().unwrap().clone();
    let limits = field(&resources, "limits");
    let cpu = limits.as_map().unwrap().values().next().unwrap().as_message().unwrap().encode_to_vec();
    assert_eq!(cpu, [0x0a, 0x01, b'1']);
}

#[test]
fn envelope_round_trips_and_requires_the_magic() {
    let object = json!({"metadata": {"name": "n"}});
    let raw = encode_object("", "v1", "Namespace", &object).unwrap();
    let wrapped = wrap_unknown("v1", "Namespace", &raw);

    // Independently: the bytes after the magic are a runtime.Unknown.
    let unknown = DynamicMessage::decode(descriptor("k8s.io.apimachinery.pkg.runtime.Unknown"), &wrapped[4..]).unwrap();
    let type_meta = field(&unknown, "typeMeta").as_message().unwrap().clone();
    assert_eq!(field(&type_meta, "apiVersion").as_str(), Some("v1"));
    assert_eq!(field(&type_meta, "kind").as_str(), Some("Namespace"));
    assert_eq!(field(&unknown, "raw").as_bytes().map(|b| b.to_vec()), Some(raw.clone()));

    let envelope = unwrap_unknown(&wrapped).unwrap();
    assert_eq!((envelope.api_version, envelope.kind, envelope.raw), ("v1", "Namespace", raw.as_slice()));
    assert_eq!((envelope.content_encoding, envelope.content_type), ("", ""));

    assert!(matches!(unwrap_unknown(&raw), Err(ProtoError::MissingMagic)));
    assert!(matches!(unwrap_unknown(b"k8s"), Err(ProtoError::MissingMagic)));
    assert!(matches!(unwrap_unknown(b"k8s\0\x0a\x05ab"), Err(ProtoError::Malformed(_))));
}

#[test]
fn watch_frames_decode_independently() {
    let object = json!({"metadata": {"name": "cm", "resourceVersion": "42"}, "data": {"a": "b"}});
    let enveloped = wrap_unknown("v1", "ConfigMap", &encode_object("", "v1", "ConfigMap", &object).unwrap());

    for event_type in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] {
        let event = encode_watch_event(event_type, &enveloped);
        let framed = frame(&event);
        assert_eq!(framed[..4], (event.len() as u32).to_be_bytes());
        assert_eq!(framed[4..], event[..]);

        let prefix = watch_event_prefix(event_type, enveloped.len());
        assert_eq!([prefix.as_slice(), enveloped.as_slice()].concat(), framed);

        let decoded =
            DynamicMessage::decode(descriptor("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"), &framed[4..])
                .unwrap();
        assert_eq!(field(&decoded, "type").as_str(), Some(event_type));
        let raw_extension = field(&decoded, "object").as_message().unwrap().clone();
        let raw = field(&raw_extension, "raw").as_bytes().unwrap().to_vec();
        assert_eq!(raw, enveloped);

        let inner = unwrap_unknown(&raw).unwrap();
        let back = decode_object("", "v1", inner.kind, inner.raw).unwrap().object;
        assert_eq!(back["data"]["a"], "b");
        assert_eq!(back["metadata"]["resourceVersion"], "42");
    }

    // An object large enough for multi-byte lengths everywhere.
    let big = vec![7_u8; 70_000];
    let prefix = watch_event_prefix("MODIFIED", big.len());
    assert_eq!([prefix.as_slice(), big.as_slice()].concat(), frame(&encode_watch_event("MODIFIED", &big)));
}

#[test]
fn error_event_carries_an_enveloped_status() {
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 5 (10)", "reason": "Expired", "code": 410
    });
    let enveloped = encode_status(&status);
    let envelope = unwrap_unknown(&enveloped).unwrap();
    assert_eq!((envelope.api_version, envelope.kind), ("v1", "Status"));
    let decoded =
        DynamicMessage::decode(descriptor("k8s.io.apimachinery.pkg.apis.meta.v1.Status"), envelope.raw).unwrap();
    assert_eq!(field(&decoded, "code").as_i32(), Some(410));
    assert_eq!(field(&decoded, "reason").as_str(), Some("Expired"));
    assert_eq!(decode_object("", "v1", "Status", envelope.raw).unwrap().object, status);

    // A malformed status still yields a usable one.
    let odd = encode_status(&json!({"status": "Failure", "message": "boom", "code": 500, "details": "not an object"}));
    let back = decode_object("", "v1", "Status", unwrap_unknown(&odd).unwrap().raw).unwrap().object;
    assert_eq!(
        back,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "boom", "code": 500})
    );

    let event = encode_watch_event("ERROR", &enveloped);
    let decoded =
        DynamicMessage::decode(descriptor("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"), event.as_slice())
            .unwrap();
    assert_eq!(field(&decoded, "type").as_str(), Some("ERROR"));
}

#[test]
fn lists_reuse_item_bytes() {
    let items: Vec<Vec<u8>> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            encode_object("", "v1", "ConfigMap", &json!({"metadata": {"name": name}, "data": {"x": name}})).unwrap()
        })
        .collect();
    let meta = ListMeta { resource_version: "900", continue_token: "next", remaining_item_count: Some(12) };
    let body = encode_list("", "v1", "ConfigMap", &meta, &items).unwrap();

    let list = DynamicMessage::decode(descriptor("k8s.io.api.core.v1.ConfigMapList"), body.as_slice()).unwrap();
    let list_meta = field(&list, "metadata").as_message().unwrap().clone();
    assert_eq!(field(&list_meta, "resourceVersion").as_str(), Some("900"));
    assert_eq!(field(&list_meta, "continue").as_str(), Some("next"));
    assert_eq!(field(&list_meta, "remainingItemCount").as_i64(), Some(12));
    let decoded_items = field(&list, "items");
    let decoded_items = decoded_items.as_list().unwrap();
    assert_eq!(decoded_items.len(), 3);
    assert_eq!(decoded_items[1].as_message().unwrap().encode_to_vec(), items[1]);

    let json = decode_object("", "v1", "ConfigMapList", &body).unwrap().object;
    assert_eq!(json["metadata"], json!({"resourceVersion": "900", "continue": "next", "remainingItemCount": 12}));
    assert_eq!(json["items"][2], json!({"metadata": {"name": "c"}, "data": {"x": "c"}}));

    let empty = encode_list::<Vec<u8>>("apps", "v1", "Deployment", &ListMeta::default(), &[]).unwrap();
    assert_eq!(
        decode_object("apps", "v1", "DeploymentList", &empty).unwrap().object,
        json!({"kind": "DeploymentList", "apiVersion": "apps/v1", "metadata": {}, "items": []})
    );
    assert!(matches!(
        encode_list::<Vec<u8>>("", "v1", "Nope", &ListMeta::default(), &[]),
        Err(ProtoError::UnknownKind(_))
    ));
}

/// What `kubectl create deployment web --image=nginx --replicas=0` sends: Go writes every
/// value field, zero or not, so the body is full of empty strings and zeros that the JSON form
/// of the same object does not have.
#[test]
fn a_go_clients_body_decodes_to_the_json_it_would_have_sent() {
    let set = |message: &mut DynamicMessage, name: &str, value: ProtoValue| message.set_field_by_name(name, value);
    let text = |s: &str| ProtoValue::String(s.to_owned());
    let empty = |name: &str| DynamicMessage::new(descriptor(name));

    let object_meta = |name: &str, labels: bool| {
        let mut meta = empty("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        for (field, value) in [
            ("name", name),
            ("generateName", ""),
            ("namespace", ""),
            ("selfLink", ""),
            ("uid", ""),
            ("resourceVersion", ""),
        ] {
            set(&mut meta, field, text(value));
        }
        set(&mut meta, "generation", ProtoValue::I64(0));
        set(&mut meta, "creationTimestamp", ProtoValue::Message(empty("k8s.io.apimachinery.pkg.apis.meta.v1.Time")));
        if labels {
            let labels =
                [(listwatch_proto::prost_reflect::MapKey::String("app".into()), text("web"))].into_iter().collect();
            set(&mut meta, "labels", ProtoValue::Map(labels));
        }
        meta
    };

    let mut container = empty("k8s.io.api.core.v1.Container");
    for (field, value) in [
        ("name", "nginx"),
        ("image", "nginx"),
        ("workingDir", ""),
        ("terminationMessagePath", ""),
        ("imagePullPolicy", ""),
    ] {
        set(&mut container, field, text(value));
    }
    set(&mut container, "resources", ProtoValue::Message(empty("k8s.io.api.core.v1.ResourceRequirements")));
    for flag in ["stdin", "stdinOnce", "tty"] {
        set(&mut container, flag, ProtoValue::Bool(false));
    }

    let mut pod_spec = empty("k8s.io.api.core.v1.PodSpec");
    set(&mut pod_spec, "containers", ProtoValue::List(vec![ProtoValue::Message(container)]));
    for (field, value) in
        [("restartPolicy", ""), ("dnsPolicy", ""), ("serviceAccountName", ""), ("nodeName", ""), ("schedulerName", "")]
    {
        set(&mut pod_spec, field, text(value));
    }
    set(&mut pod_spec, "hostNetwork", ProtoValue::Bool(false));

    let mut template = empty("k8s.io.api.core.v1.PodTemplateSpec");
    set(&mut template, "metadata", ProtoValue::Message(object_meta("", true)));
    set(&mut template, "spec", ProtoValue::Message(pod_spec));

    let mut selector = empty("k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector");
    let labels = [(listwatch_proto::prost_reflect::MapKey::String("app".into()), text("web"))].into_iter().collect();
    set(&mut selector, "matchLabels", ProtoValue::Map(labels));

    let mut spec = empty("k8s.io.api.apps.v1.DeploymentSpec");
    set(&mut spec, "replicas", ProtoValue::I32(0));
    set(&mut spec, "selector", ProtoValue::Message(selector));
    set(&mut spec, "template", ProtoValue::Message(template));
    set(&mut spec, "strategy", ProtoValue::Message(empty("k8s.io.api.apps.v1.DeploymentStrategy")));
    set(&mut spec, "minReadySeconds", ProtoValue::I32(0));
    set(&mut spec, "paused", ProtoValue::Bool(false));

    let mut status = empty("k8s.io.api.apps.v1.DeploymentStatus");
    for field in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"] {
        set(&mut status, field, ProtoValue::I32(0));
    }
    set(&mut status, "observedGeneration", ProtoValue::I64(0));

    let mut deployment = empty("k8s.io.api.apps.v1.Deployment");
    set(&mut deployment, "metadata", ProtoValue::Message(object_meta("web", true)));
    set(&mut deployment, "spec", ProtoValue::Message(spec));
    set(&mut deployment, "status", ProtoValue::Message(status));
    let body = wrap_unknown("apps/v1", "Deployment", &deployment.encode_to_vec());

    let envelope = unwrap_unknown(&body).unwrap();
    let decoded = decode_object("apps", "v1", envelope.kind, envelope.raw).unwrap();
    assert_eq!(decoded.unknown_fields, Vec::<String>::new());
    let expected = r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","creationTimestamp":null,"labels":{"app":"web"}},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx","resources":{}}]}},"strategy":{}},"status":{}}"#;
    assert_eq!(serde_json::to_string(&decoded.object).unwrap(), expected);
}

/// `kubectl auth can-i list pods` and `kubectl create token builder` as protobuf: every value
/// field written (empty strings, `false`, an empty Time), nil pointers and slices not.
#[test]
fn kubectls_review_and_token_request_bodies_decode_to_the_json_it_would_have_sent() {
    let set = |message: &mut DynamicMessage, name: &str, value: ProtoValue| message.set_field_by_name(name, value);
    let text = |s: &str| ProtoValue::String(s.to_owned());
    let empty = |name: &str| DynamicMessage::new(descriptor(name));
    let object_meta = || {
        let mut meta = empty("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        for field in ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion"] {
            set(&mut meta, field, text(""));
        }
        set(&mut meta, "generation", ProtoValue::I64(0));
        set(&mut meta, "creationTimestamp", ProtoValue::Message(empty("k8s.io.apimachinery.pkg.apis.meta.v1.Time")));
        meta
    };
    let decode = |group: &str, kind: &str, message: &DynamicMessage| {
        let decoded = decode_object(group, "v1", kind, &message.encode_to_vec()).unwrap();
        assert_eq!(decoded.unknown_fields, Vec::<String>::new());
        serde_json::to_string(&decoded.object).unwrap()
    };

    let mut attributes = empty("k8s.io.api.authorization.v1.ResourceAttributes");
    for (field, value) in [
        ("namespace", "default"),
        ("verb", "list"),
        ("group", ""),
        ("version", ""),
        ("resource", "pods"),
        ("subresource", ""),
        ("name", ""),
    ] {
        set(&mut attributes, field, text(value));
    }
    let mut spec = empty("k8s.io.api.authorization.v1.SelfSubjectAccessReviewSpec");
    set(&mut spec, "resourceAttributes", ProtoValue::Message(attributes));
    let mut status = empty("k8s.io.api.authorization.v1.SubjectAccessReviewStatus");
    set(&mut status, "allowed", ProtoValue::Bool(false));
    set(&mut status, "reason", text(""));
    set(&mut status, "evaluationError", text(""));
    set(&mut status, "denied", ProtoValue::Bool(false));
    let mut review = empty("k8s.io.api.authorization.v1.SelfSubjectAccessReview");
    set(&mut review, "metadata", ProtoValue::Message(object_meta()));
    set(&mut review, "spec", ProtoValue::Message(spec));
    set(&mut review, "status", ProtoValue::Message(status));
    assert_eq!(
        decode("authorization.k8s.io", "SelfSubjectAccessReview", &review),
        r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}},"status":{"allowed":false}}"#
    );

    let mut status = empty("k8s.io.api.authentication.v1.TokenRequestStatus");
    set(&mut status, "token", text(""));
    set(&mut status, "expirationTimestamp", ProtoValue::Message(empty("k8s.io.apimachinery.pkg.apis.meta.v1.Time")));
    let mut request = empty("k8s.io.api.authentication.v1.TokenRequest");
    set(&mut request, "metadata", ProtoValue::Message(object_meta()));
    set(&mut request, "spec", ProtoValue::Message(empty("k8s.io.api.authentication.v1.TokenRequestSpec")));
    set(&mut request, "status", ProtoValue::Message(status));
    assert_eq!(
        decode("authentication.k8s.io", "TokenRequest", &request),
        r#"{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"audiences":null,"expirationSeconds":null,"boundObjectRef":null},"status":{"token":"","expirationTimestamp":null}}"#
    );

    // A map's ExtraValue with no items is `[]`: Go fills it from `&ExtraValue{}`.
    let mut user = empty("k8s.io.api.authentication.v1.UserInfo");
    let extra = [(
        listwatch_proto::prost_reflect::MapKey::String("scopes".into()),
        ProtoValue::Message(empty("k8s.io.api.authentication.v1.ExtraValue")),
    )];
    set(&mut user, "extra", ProtoValue::Map(extra.into_iter().collect()));
    let mut status = empty("k8s.io.api.authentication.v1.SelfSubjectReviewStatus");
    set(&mut status, "userInfo", ProtoValue::Message(user));
    let mut review = empty("k8s.io.api.authentication.v1.SelfSubjectReview");
    set(&mut review, "status", ProtoValue::Message(status));
    assert_eq!(
        decode("authentication.k8s.io", "SelfSubjectReview", &review),
        r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"extra":{"scopes":[]}}}}"#
    );
}

/// ExtraValue's wire form is a message of `repeated string items = 1`, BoundObjectReference's
/// `uid` is proto field `uID` (4).
#[test]
fn extra_values_and_json_names_on_the_wire() {
    let body = json!({"spec": {"extra": {"k": ["a", "b"]}}});
    let bytes = encode_object("authorization.k8s.io", "v1", "SubjectAccessReview", &body).unwrap();
    // 2 spec: SubjectAccessReviewSpec{5 extra: entry{1 key "k", 2 value ExtraValue{1 "a", 1 "b"}}}
    assert_eq!(bytes, [0x12, 0x0d, 0x2a, 0x0b, 0x0a, 0x01, b'k', 0x12, 0x06, 0x0a, 0x01, b'a', 0x0a, 0x01, b'b']);
    let err =
        encode_object("authorization.k8s.io", "v1", "SubjectAccessReview", &json!({"spec": {"extra": {"k": "a"}}}))
            .unwrap_err();
    assert_eq!(err.to_string(), "spec.extra[k]: expected an array");

    let body = json!({"spec": {"boundObjectRef": {"uid": "u"}}});
    let bytes = encode_object("authentication.k8s.io", "v1", "TokenRequest", &body).unwrap();
    // 2 spec: TokenRequestSpec{3 boundObjectRef: BoundObjectReference{4 uID "u"}}
    assert_eq!(bytes, [0x12, 0x05, 0x1a, 0x03, 0x22, 0x01, b'u']);
    assert_eq!(check_json_fields("authentication.k8s.io", "v1", "TokenRequest", &body).unwrap(), Vec::<String>::new());
    assert_eq!(
        check_json_fields(
            "authentication.k8s.io",
            "v1",
            "TokenRequest",
            &json!({"spec": {"boundObjectRef": {"uID": "u"}}})
        )
        .unwrap(),
        ["spec.boundObjectRef.uID"]
    );
}

#[test]
fn unknown_protobuf_fields_are_reported_with_their_numbers() {
    let mut bytes = encode_object("", "v1", "ConfigMap", &json!({"metadata": {"name": "x"}})).unwrap();
    // A field 99 (varint) at the top level, and metadata replaced by one with a field 98 in it.
    bytes.extend_from_slice(&[0x98, 0x06, 0x01]);
    bytes.extend_from_slice(&[0x0a, 0x03, 0x90, 0x06, 0x01]);
    let decoded = decode_object("", "v1", "ConfigMap", &bytes).unwrap();
    assert_eq!(decoded.unknown_fields, vec!["metadata.#98".to_owned(), "#99".to_owned()]);
    assert_eq!(decoded.object["metadata"], json!({"name": "x"}));
}

#[test]
fn unknown_json_fields_are_reported_in_document_order() {
    let body: Value = serde_json::from_str(
        r#"{
          "apiVersion": "apps/v1",
          "kind": "Deployment",
          "metadata": {"name": "web", "labelz": {"a": "b"}},
          "spec": {
            "replica": 2,
            "template": {
              "spec": {
                "containers": [{"name": "c", "imagee": "nginx", "ports": [{"containerPorts": 80}], "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "extra": 1}}}]}],
                "volumes": [{"name": "v", "configMap": {"name": "cm"}, "bogusSource": {}}]
              }
            }
          },
          "extra": true
        }"#,
    )
    .unwrap();
    assert_eq!(
        check_json_fields("apps", "v1", "Deployment", &body).unwrap(),
        [
            "metadata.labelz",
            "spec.replica",
            "spec.template.spec.containers[0].imagee",
            "spec.template.spec.containers[0].ports[0].containerPorts",
            "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.extra",
            "spec.template.spec.volumes[0].bogusSource",
            "extra",
        ]
    );
    // Unknown fields are dropped when encoding, not an error.
    let bytes = encode_object("apps", "v1", "Deployment", &body).unwrap();
    let back = decode_object("apps", "v1", "Deployment", &bytes).unwrap().object;
    assert_eq!(back["spec"]["template"]["spec"]["volumes"][0], json!({"name": "v", "configMap": {"name": "cm"}}));
    assert!(back.get("extra").is_none());
}

#[test]
fn schema_lookup_and_errors() {
    assert_eq!(message_for("", "v1", "ConfigMap").unwrap().full_name(), "k8s.io.api.core.v1.ConfigMap");
    assert_eq!(message_for("apps", "v1", "Deployment").unwrap().full_name(), "k8s.io.api.apps.v1.Deployment");
    assert_eq!(
        message_for("coordination.k8s.io", "v1", "Lease").unwrap().full_name(),
        "k8s.io.api.coordination.v1.Lease"
    );
    assert_eq!(
        message_for("apps", "v1", "DeleteOptions").unwrap().full_name(),
        "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    );
    assert_eq!(
        message_for("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding").unwrap().full_name(),
        "k8s.io.api.rbac.v1.ClusterRoleBinding"
    );
    assert_eq!(
        message_for("authorization.k8s.io", "v1", "SelfSubjectAccessReview").unwrap().full_name(),
        "k8s.io.api.authorization.v1.SelfSubjectAccessReview"
    );
    assert_eq!(
        message_for("authentication.k8s.io", "v1", "TokenRequest").unwrap().full_name(),
        "k8s.io.api.authentication.v1.TokenRequest"
    );
    assert!(message_for("", "v1", "Widget").is_none());
    assert!(message_for("example.com", "v1", "ConfigMap").is_none());

    let err = encode_object("", "v1", "ConfigMap", &json!({"data": {"k": 1}})).unwrap_err();
    assert_eq!(err.to_string(), "data[k]: expected a string");
    let err = encode_object("", "v1", "Secret", &json!({"data": {"k": "%%%"}})).unwrap_err();
    assert!(err.to_string().starts_with("data[k]: invalid base64"), "{err}");
    let err = encode_object("apps", "v1", "Deployment", &json!({"spec": {"replicas": "3"}})).unwrap_err();
    assert_eq!(err.to_string(), "spec.replicas: expected an integer");
    let err = encode_object("", "v1", "Event", &json!({"eventTime": "yesterday"})).unwrap_err();
    assert_eq!(err.to_string(), "eventTime: expected an RFC 3339 time string");
    assert!(matches!(decode_object("", "v1", "ConfigMap", &[0x0a, 0x05, 0x01]), Err(ProtoError::Malformed(_))));
}

#[test]
fn times_accept_offsets_and_keep_kubes_precision() {
    let lease = json!({"spec": {"acquireTime": "2024-01-02T05:04:05.123456789+02:00"}, "metadata": {"creationTimestamp": "2024-01-02T03:04:05.999Z"}});
    let bytes = encode_object("coordination.k8s.io", "v1", "Lease", &lease).unwrap();
    let back = decode_object("coordination.k8s.io", "v1", "Lease", &bytes).unwrap().object;
    assert_eq!(back["spec"]["acquireTime"], "2024-01-02T03:04:05.123456Z");
    assert_eq!(back["metadata"]["creationTimestamp"], "2024-01-02T03:04:05Z");
}
