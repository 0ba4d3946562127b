//! Bodies that do not decode, or decode to the wrong kind. kube decodes in two steps: the
//! JSON serializer first reads `apiVersion`/`kind` with encoding/json (errors wrapped as
//! `couldn't get version/kind; json parse error: ...`), then the object; `transformDecodeError`
//! (handlers/rest.go) turns failures into 400 — `<Kind> in version "<v>" cannot be handled as a
//! <Kind>: ...` when a kind was read, else `the object provided is unrecognized (must be of
//! type <Kind>): ... (<first 30 bytes or hex>)`.

use serde_json::json;

use super::{bad_request, cm, cms, deployments, ok, post, put};
use crate::bad_input::fixtures::NS;
use crate::bad_input::kube;
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "malformed bodies and wrong kinds";

fn unrecognized(body: &[u8], error: &str) -> Expect {
    bad_request(kube::unrecognized("ConfigMap", error, body))
}

fn raw_post(body: &[u8]) -> Request {
    Request::new("POST", cms()).body(body.to_vec())
}

pub fn rows() -> Vec<Case> {
    let dry = format!("{}?dryRun=All", cms());
    let mut rows = vec![
        Case::new(
            CLASS,
            "empty body",
            Request::new("POST", cms()).content_type("application/json"),
            unrecognized(b"", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
        ),
        // `null` decodes to an empty ConfigMap: validation then wants a name.
        Case::new(
            CLASS,
            "body null",
            raw_post(b"null"),
            super::invalid("ConfigMap", "", "", &["metadata.name: Required value: name or generateName is required".into()])
                .cause("metadata.name", "FieldValueRequired"),
        ),
        Case::new(
            CLASS,
            "not JSON",
            raw_post(b"{bad}"),
            unrecognized(
                b"{bad}",
                "couldn't get version/kind; json parse error: invalid character 'b' looking for beginning of object key string",
            ),
        ),
        Case::new(
            CLASS,
            "truncated object",
            raw_post(br#"{"metadata":{"name":"x"}"#),
            unrecognized(br#"{"metadata":{"name":"x"}"#, "couldn't get version/kind; json parse error: unexpected end of JSON input"),
        ),
        Case::new(
            CLASS,
            "trailing garbage",
            raw_post(br#"{"metadata":{"name":"x"}} x"#),
            unrecognized(
                br#"{"metadata":{"name":"x"}} x"#,
                "couldn't get version/kind; json parse error: invalid character 'x' after top-level value",
            ),
        ),
        Case::new(
            CLASS,
            "array body",
            raw_post(b"[]"),
            Expect::status(400, "BadRequest")
                .msg_has("couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct"),
        ),
        Case::new(
            CLASS,
            "string body",
            raw_post(br#""configmap""#),
            Expect::status(400, "BadRequest").msg_has("json: cannot unmarshal string into Go value of type struct"),
        ),
        Case::new(
            CLASS,
            "number body",
            raw_post(b"42"),
            Expect::status(400, "BadRequest").msg_has("json: cannot unmarshal number into Go value of type struct"),
        ),
        Case::new(
            CLASS,
            "kind is a number",
            raw_post(br#"{"kind":1}"#),
            Expect::status(400, "BadRequest")
                .msg_has("couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field"),
        ),
        // schema.ParseGroupVersion: more than one slash.
        Case::new(
            CLASS,
            "apiVersion a/b/c",
            raw_post(br#"{"apiVersion":"a/b/c","kind":"ConfigMap"}"#),
            unrecognized(br#"{"apiVersion":"a/b/c","kind":"ConfigMap"}"#, "unexpected GroupVersion string: a/b/c"),
        ),
        // The codec decodes a Secret, then cannot convert it to a ConfigMap.
        Case::new(
            CLASS,
            "kind Secret sent to configmaps",
            post(cms(), &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has("Secret in version \"v1\" cannot be handled as a ConfigMap"),
        ),
        Case::new(
            CLASS,
            "unknown kind",
            post(cms(), &json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has(
                "Widget in version \"v1\" cannot be handled as a ConfigMap: no kind \"Widget\" is registered for version \"v1\"",
            ),
        ),
        Case::new(
            CLASS,
            "apiVersion v2",
            post(cms(), &json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has(
                "ConfigMap in version \"v2\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"v2\"",
            ),
        ),
        Case::new(
            CLASS,
            "ConfigMap in apps/v1",
            post(cms(), &json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has(
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"apps/v1\"",
            ),
        ),
        Case::new(
            CLASS,
            "ReplicaSet sent to deployments",
            post(deployments(), &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has("ReplicaSet in version \"v1\" cannot be handled as a Deployment"),
        ),
        Case::new(
            CLASS,
            "Deployment in core v1",
            post(deployments(), &json!({"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "x"}})),
            Expect::status(400, "BadRequest").msg_has(
                "Deployment in version \"v1\" cannot be handled as a Deployment: no kind \"Deployment\" is registered for version \"v1\"",
            ),
        ),
        Case::new(
            CLASS,
            "labels is a string",
            post(cms(), &json!({"metadata": {"name": "x", "labels": "app"}})),
            Expect::status(400, "BadRequest")
                .msg_has("ConfigMap in version \"v1\" cannot be handled as a ConfigMap:")
                .msg_has("cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
        ),
        Case::new(
            CLASS,
            "data value is a number",
            post(cms(), &json!({"metadata": {"name": "x"}, "data": {"k": 5}})),
            Expect::status(400, "BadRequest").msg_has("cannot unmarshal number into Go struct field ConfigMap.data of type string"),
        ),
        Case::new(
            CLASS,
            "raw NUL inside a string",
            raw_post(b"{\"metadata\":{\"name\":\"a\x00b\"}}"),
            Expect::status(400, "BadRequest").msg_has("invalid character '\\x00' in string literal"),
        ),
        Case::new(
            CLASS,
            "bad string escape",
            raw_post(br#"{"metadata":{"name":"a\qb"}}"#),
            Expect::status(400, "BadRequest").msg_has("invalid character 'q' in string escape code"),
        ),
        Case::new(
            CLASS,
            "unknown field with fieldValidation=Strict",
            post(format!("{}?fieldValidation=Strict", cms()), &json!({"metadata": {"name": "x"}, "spec": {}})),
            bad_request("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"spec\""),
        ),
        Case::new(
            CLASS,
            "duplicate field with fieldValidation=Strict",
            Request::new("POST", format!("{}?fieldValidation=Strict", cms()))
                .body(r#"{"metadata":{"name":"x"},"data":{"a":"1"},"data":{"b":"2"}}"#),
            Expect::status(400, "BadRequest").msg_has("strict decoding error:").msg_has("duplicate field \"data\""),
        ),
        // The default directive is Warn: accepted, with a Warning header.
        Case::new(
            CLASS,
            "unknown field, default fieldValidation (dry run)",
            post(&dry, &json!({"metadata": {"name": "x"}, "spec": {}})),
            ok(201).header("warning", "299 - \"unknown field \\\"spec\\\"\""),
        ),
        Case::new(
            CLASS,
            "protobuf Content-Type, not protobuf",
            Request::new("POST", cms()).content_type("application/vnd.kubernetes.protobuf").body("garbage"),
            bad_request(kube::unrecognized(
                "ConfigMap",
                "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
                b"garbage",
            )),
        ),
        Case::new(
            CLASS,
            "YAML body (dry run)",
            Request::new("POST", &dry).content_type("application/yaml").body("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n"),
            ok(201).json_at("/metadata/name", json!("from-yaml")),
        ),
        Case::new(
            CLASS,
            "malformed YAML",
            Request::new("POST", cms()).content_type("application/yaml").body("a: b: c"),
            Expect::status(400, "BadRequest").msg_has("error converting YAML to JSON"),
        ),
        // No Content-Type: the first serializer (JSON) is used.
        Case::new(
            CLASS,
            "no Content-Type (dry run)",
            Request::new("POST", &dry).no_content_type().json(&cm(json!({"name": "no-type"}), json!({}))),
            ok(201).json_at("/metadata/name", json!("no-type")),
        ),
        Case::new(
            CLASS,
            "Content-Type with charset (dry run)",
            Request::new("POST", &dry)
                .content_type("application/json; charset=utf-8")
                .json(&cm(json!({"name": "charset"}), json!({}))),
            ok(201),
        ),
        // The project answers 400 where kube's storage layer returns a plain error (a 500).
        Case::new(
            CLASS,
            "resourceVersion set on create",
            post(cms(), &cm(json!({"name": "with-rv", "resourceVersion": "5"}), json!({}))),
            bad_request("resourceVersion should not be set on objects to be created"),
        ),
        Case::new(
            CLASS,
            "PUT with an empty body",
            Request::new("PUT", super::cm1()).content_type("application/json"),
            unrecognized(b"", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
        ),
        Case::new(
            CLASS,
            "PUT a Secret to a configmap",
            put(super::cm1(), &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm1"}})),
            Expect::status(400, "BadRequest").msg_has("Secret in version \"v1\" cannot be handled as a ConfigMap"),
        ),
        // encoding/json's base64 error for []byte fields.
        Case::new(
            CLASS,
            "Secret data not base64",
            post(format!("/api/v1/namespaces/{NS}/secrets"), &json!({"metadata": {"name": "x"}, "data": {"k": "!!!!"}})),
            Expect::status(400, "BadRequest")
                .msg_has("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 0"),
        ),
        Case::new(
            CLASS,
            "ConfigMap binaryData not base64",
            post(cms(), &json!({"metadata": {"name": "x"}, "binaryData": {"k": "!!!!"}})),
            Expect::status(400, "BadRequest").msg_has("illegal base64 data at input byte 0"),
        ),
    ];
    // Nesting: encoding/json allows 10000 levels (the object itself is one) and refuses more
    // with `invalid character '[' exceeded max depth`, in kube's first (kind-reading) pass.
    rows.push(Case::new(
        CLASS,
        "JSON nested 10000 levels (dry run)",
        Request::new("POST", &dry).body(nested(10_000)),
        ok(201),
    ));
    rows.push(Case::new(
        CLASS,
        "JSON nested 10001 levels",
        Request::new("POST", cms()).body(nested(10_001)),
        Expect::status(400, "BadRequest").msg_has("invalid character '[' exceeded max depth"),
    ));
    rows
}

/// A ConfigMap whose unknown field `x` is nested so that the whole body is `depth` deep.
pub fn nested(depth: usize) -> Vec<u8> {
    let arrays = depth - 1;
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"x":{}{}}}"#,
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
    .into_bytes()
}
