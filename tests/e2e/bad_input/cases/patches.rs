//! PATCH (handlers/patch.go). The patch is first read strictly (the default directive is Warn):
//! undecodable JSON is 400 `error decoding patch: ...`. A JSON patch may hold at most 10000
//! operations (413); one that does not apply is a bare 422 whose message is the generic
//! `NewGenericServerResponse` text (kube drops json-patch's own). A result that does not
//! decode into the kind is 422 on field `patch`; a result naming another object is 400; a
//! resourceVersion in the patch is a precondition (409); validation of the result is the
//! kind's update validation. A patch that changes nothing writes nothing.

use serde_json::{Value, json};

use super::{bad_request, cm1, cms, invalid, json_patch, merge_patch, modified, not_found};
use crate::bad_input::kube::{self, label_value};
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "patches";

fn unapplicable() -> Expect {
    Expect::status(422, "Invalid").msg("the server rejected our request due to an error in our request")
}

fn test_ops(n: usize) -> Value {
    Value::Array((0..n).map(|_| json!({"op": "test", "path": "/metadata/name", "value": "cm1"})).collect())
}

fn uid_immutable(value: &str) -> Expect {
    invalid(
        "ConfigMap",
        "",
        "cm1",
        &[format!("metadata.uid: Invalid value: {}: field is immutable", kube::go_quote(value))],
    )
    .cause("metadata.uid", "FieldValueInvalid")
}

pub fn rows() -> Vec<Case> {
    let smp = |body: &str| {
        Request::new("PATCH", cm1()).content_type("application/strategic-merge-patch+json").body(body.to_string())
    };
    vec![
        Case::new(
            CLASS,
            "json patch: unknown op",
            json_patch(cm1(), &json!([{"op": "frob", "path": "/data/k"}])),
            unapplicable(),
        ),
        Case::new(
            CLASS,
            "json patch: op without path",
            json_patch(cm1(), &json!([{"op": "add", "value": "x"}])),
            unapplicable(),
        ),
        Case::new(
            CLASS,
            "json patch: failing test",
            json_patch(cm1(), &json!([{"op": "test", "path": "/data/k", "value": "not-v"}])),
            unapplicable(),
        ),
        Case::new(
            CLASS,
            "json patch: remove a missing path",
            json_patch(cm1(), &json!([{"op": "remove", "path": "/data/missing"}])),
            unapplicable(),
        ),
        Case::new(
            CLASS,
            "json patch: an object, not a list",
            json_patch(cm1(), &json!({"op": "add", "path": "/data/x", "value": "1"})),
            Expect::status(400, "BadRequest")
                .msg_has("error decoding patch: json: cannot unmarshal object into Go value of type"),
        ),
        Case::new(
            CLASS,
            "json patch: truncated",
            Request::new("PATCH", cm1()).content_type("application/json-patch+json").body("[{"),
            bad_request("error decoding patch: unexpected end of JSON input"),
        ),
        Case::new(
            CLASS,
            "json patch: 10001 operations",
            json_patch(cm1(), &test_ops(10_001)),
            Expect::status(413, "RequestEntityTooLarge")
                .msg("Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"),
        ),
        Case::new(
            CLASS,
            "json patch: 10000 operations that change nothing",
            json_patch(cm1(), &test_ops(10_000)),
            Expect::code(200),
        ),
        Case::new(
            CLASS,
            "json patch: empty",
            json_patch(cm1(), &json!([])),
            Expect::code(200).json_at("/metadata/name", json!("cm1")),
        ),
        Case::new(
            CLASS,
            "json patch: replace the uid",
            json_patch(cm1(), &json!([{"op": "replace", "path": "/metadata/uid", "value": "other-uid"}])),
            uid_immutable("other-uid"),
        ),
        Case::new(
            CLASS,
            "json patch: data value a number",
            json_patch(cm1(), &json!([{"op": "add", "path": "/data/n", "value": 5}])),
            Expect::status(422, "Invalid")
                .msg_has("patch: Invalid value: ")
                .msg_has("cannot unmarshal number into Go struct field ConfigMap.data of type string")
                .cause("patch", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "merge patch: data a string",
            merge_patch(cm1(), &json!({"data": "flat"})),
            Expect::status(422, "Invalid")
                .msg_has("patch: Invalid value: ")
                .msg_has("cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string")
                .cause("patch", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "merge patch: truncated",
            Request::new("PATCH", cm1()).content_type("application/merge-patch+json").body("{"),
            bad_request("error decoding patch: unexpected end of JSON input"),
        ),
        Case::new(
            CLASS,
            "merge patch: a list",
            merge_patch(cm1(), &json!([1])),
            Expect::status(400, "BadRequest").msg_has(
                "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
        ),
        Case::new(
            CLASS,
            "merge patch: rename",
            merge_patch(cm1(), &json!({"metadata": {"name": "other"}})),
            bad_request("the name of the object (other) does not match the name on the URL (cm1)"),
        ),
        Case::new(
            CLASS,
            "merge patch: move to another namespace",
            merge_patch(cm1(), &json!({"metadata": {"namespace": "default"}})),
            bad_request("the namespace of the provided object does not match the namespace sent on the request"),
        ),
        Case::new(
            CLASS,
            "merge patch: stale resourceVersion",
            merge_patch(cm1(), &json!({"metadata": {"resourceVersion": "1"}})),
            modified("configmaps", "cm1"),
        ),
        Case::new(
            CLASS,
            "merge patch: change the uid",
            merge_patch(cm1(), &json!({"metadata": {"uid": "other-uid"}})),
            uid_immutable("other-uid"),
        ),
        Case::new(
            CLASS,
            "merge patch: invalid label",
            merge_patch(cm1(), &json!({"metadata": {"labels": {"k": "bad value"}}})),
            invalid("ConfigMap", "", "cm1", &[kube::invalid("metadata.labels", "bad value", &label_value())])
                .cause("metadata.labels", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "merge patch: empty",
            merge_patch(cm1(), &json!({})),
            Expect::code(200).json_at("/data/k", json!("v")),
        ),
        Case::new(
            CLASS,
            "merge patch: missing object",
            merge_patch(format!("{}/nope", cms()), &json!({})),
            not_found("configmaps", "nope"),
        ),
        Case::new(
            CLASS,
            "merge patch: object in a missing namespace",
            merge_patch("/api/v1/namespaces/nope/configmaps/cm1", &json!({})),
            not_found("configmaps", "cm1"),
        ),
        Case::new(
            CLASS,
            "json patch: missing object",
            json_patch(format!("{}/nope", cms()), &json!([])),
            not_found("configmaps", "nope"),
        ),
        Case::new(CLASS, "strategic merge patch: truncated", smp("{"), bad_request("unexpected end of JSON input")),
        // The result goes through the unstructured converter, whose words these are
        // (apimachinery runtime/converter.go); the patch is shown as Go's %+v of its map.
        Case::new(
            CLASS,
            "strategic merge patch: data a string",
            smp(r#"{"data":"flat"}"#),
            Expect::status(422, "Invalid")
                .msg(" \"\" is invalid: patch: Invalid value: \"map[data:flat]\": cannot restore map from string")
                .cause("patch", "FieldValueInvalid"),
        ),
        // The converter sets the Go type's fields; the kind the map names is not looked at.
        Case::new(
            CLASS,
            "strategic merge patch: kind Secret is ignored",
            smp(r#"{"kind":"Secret"}"#),
            Expect::code(200).json_at("/kind", json!("ConfigMap")),
        ),
        // A JSON or merge patch's result is decoded as a body is.
        Case::new(
            CLASS,
            "merge patch: kind Widget",
            merge_patch(cm1(), &json!({"kind": "Widget"})),
            Expect::status(422, "Invalid")
                .msg_has("patch: Invalid value: ")
                .msg_has(": no kind \"Widget\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"")
                .cause("patch", "FieldValueInvalid"),
        ),
    ]
}
