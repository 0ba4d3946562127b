//! Media types. An `Accept` naming no type a route produces is refused by go-restful (406,
//! its own text); one it names but the handler cannot serve is refused by kube's negotiation
//! (`only the following media types are accepted: ...`). A body type the create/update/delete
//! handlers cannot read is 415 with the serializers' list; PATCH routes declare `Consumes`,
//! so go-restful refuses other types first (`415: Unsupported Media Type`).

use serde_json::{Value, json};

use super::{cm, cm1, cms, next_victim, victim_path};
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "media types (406, 415)";

const READABLE: &str = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";

fn unsupported(message: &str) -> Expect {
    Expect::status(415, "UnsupportedMediaType").msg(message)
}

pub fn rows<'a>(victims: &mut impl Iterator<Item = &'a Value>) -> Vec<Case> {
    let body = cm(json!({"name": "x"}), json!({}));
    vec![
        Case::new(
            CLASS,
            "GET accepting text/html",
            Request::new("GET", cm1()).accept("text/html"),
            Expect::status(406, "NotAcceptable").msg_has("application/json"),
        ),
        Case::new(
            CLASS,
            "LIST accepting application/xml",
            Request::new("GET", cms()).accept("application/xml"),
            Expect::status(406, "NotAcceptable").msg_has("application/json"),
        ),
        Case::new(
            CLASS,
            "POST accepting text/html",
            Request::new("POST", cms()).accept("text/html").json(&body),
            Expect::status(406, "NotAcceptable").msg_has("application/json"),
        ),
        // YAML has no stream serializer.
        Case::new(
            CLASS,
            "WATCH accepting only YAML",
            Request::new("GET", format!("{}?watch=true", cms())).accept("application/yaml"),
            Expect::status(406, "NotAcceptable").msg(
                "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
            ),
        ),
        Case::new(
            CLASS,
            "Table of an unknown version",
            Request::new("GET", cm1()).accept("application/json;as=Table;g=meta.k8s.io;v=v9"),
            Expect::status(406, "NotAcceptable").msg(
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ),
        ),
        Case::new(CLASS, "Accept */*", Request::new("GET", cm1()).accept("*/*"), Expect::code(200).json_at("/kind", json!("ConfigMap"))),
        // YAML: the JSON converted, keys sorted, one document.
        Case::new(
            CLASS,
            "GET accepting only YAML",
            Request::new("GET", cm1()).accept("application/yaml"),
            Expect::code(200).header("Content-Type", "application/yaml").body_has("apiVersion: v1\n").body_has("kind: ConfigMap\n"),
        ),
        Case::new(
            CLASS,
            "LIST accepting only YAML",
            Request::new("GET", cms()).accept("application/yaml"),
            Expect::code(200).header("Content-Type", "application/yaml").body_has("kind: ConfigMapList\n"),
        ),
        Case::new(
            CLASS,
            "Accept listing an unserved type first",
            Request::new("GET", cm1()).accept("text/html, application/json"),
            Expect::code(200).json_at("/kind", json!("ConfigMap")),
        ),
        Case::new(
            CLASS,
            "POST a form",
            Request::new("POST", cms()).content_type("application/x-www-form-urlencoded").body("a=b"),
            unsupported(READABLE),
        ),
        Case::new(CLASS, "PUT text/xml", Request::new("PUT", cm1()).content_type("text/xml").body("<a/>"), unsupported(READABLE)),
        Case::new(
            CLASS,
            "POST with a malformed Content-Type",
            Request::new("POST", cms()).content_type("garbage;;;").json(&body),
            unsupported(READABLE),
        ),
        Case::new(
            CLASS,
            "DELETE with a text/plain body",
            Request::new("DELETE", victim_path(next_victim(victims))).content_type("text/plain").body("propagationPolicy=Orphan"),
            unsupported(READABLE),
        ),
        Case::new(
            CLASS,
            "PATCH text/plain",
            Request::new("PATCH", cm1()).content_type("text/plain").body("{}"),
            unsupported("415: Unsupported Media Type"),
        ),
        Case::new(
            CLASS,
            "PATCH application/json",
            Request::new("PATCH", cm1()).content_type("application/json").body("{}"),
            unsupported("415: Unsupported Media Type"),
        ),
        Case::new(
            CLASS,
            "PATCH without Content-Type",
            Request::new("PATCH", cm1()).no_content_type().body("{}"),
            unsupported("415: Unsupported Media Type"),
        ),
        // CBOR apply is behind an alpha gate in 1.32.
        Case::new(
            CLASS,
            "PATCH apply-patch+cbor",
            Request::new("PATCH", format!("{}?fieldManager=t", cm1())).content_type("application/apply-patch+cbor").body("{}"),
            unsupported("415: Unsupported Media Type"),
        ),
    ]
}
