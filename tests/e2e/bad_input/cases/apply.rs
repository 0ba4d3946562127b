//! Server-side apply (`PATCH` with `application/apply-patch+yaml`, handlers/patch.go
//! `applyPatcher` with apimachinery's managedfields chain). After the options (422 without
//! `fieldManager`, in `updates.rs`), the body must be YAML (400 `error decoding YAML: ...`) of
//! a mapping; the configuration must name the endpoint's kind (`versioncheck.go`), carry no
//! managedFields (`structuredmerge.go`) and fit the schema; other managers' fields with other
//! values are a 409 with one `FieldManagerConflict` cause per field (`conflict.go`); duplicate
//! keys fail under `fieldValidation=Strict`; then the patcher's checks (uid on a missing
//! object, namespace, name) and the update's (resourceVersion precondition).
//!
//! A configuration that does not fit the schema is a 500 in kube-apiserver 1.32 (the plain
//! error of the typed conversion; kubernetes/kubernetes#122480 asks for 400): this row expects
//! the 400 the house rules ask for, with kube's message.

use serde_json::{Value, json};

use super::{bad_request, cm1, cms, modified, not_found, ok};
use crate::bad_input::fixtures::NS;
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "server-side apply";

fn apply(path: impl Into<String>, body: impl Into<Vec<u8>>) -> Request {
    Request::new("PATCH", path).content_type("application/apply-patch+yaml").body(body)
}

/// An apply configuration of ConfigMap `name` in the fixtures' namespace, with `extra` merged in.
fn config(name: &str, extra: Value) -> Value {
    let mut config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}});
    if let (Value::Object(config), Value::Object(extra)) = (&mut config, extra) {
        for (key, value) in extra {
            match (config.get_mut(&key), value) {
                (Some(Value::Object(into)), Value::Object(value)) => into.extend(value),
                (_, value) => {
                    config.insert(key, value);
                }
            }
        }
    }
    config
}

fn as_m(path: &str) -> String {
    format!("{path}?fieldManager=m")
}

pub fn rows() -> Vec<Case> {
    let cm1_as_m = as_m(&cm1());
    let typed = |detail: &str| {
        bad_request(format!("failed to create typed patch object ({NS}/cm1; /v1, Kind=ConfigMap): {detail}"))
    };
    vec![
        Case::new(
            CLASS,
            "YAML that does not parse",
            apply(&cm1_as_m, "metadata: [\n"),
            Expect::status(400, "BadRequest").msg_has("error decoding YAML: error converting YAML to JSON: yaml: "),
        ),
        Case::new(
            CLASS,
            "a YAML list",
            apply(&cm1_as_m, "- a\n- b\n"),
            bad_request(
                "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
        ),
        Case::new(CLASS, "an empty body", apply(&cm1_as_m, ""), bad_request("invalid object type: /, Kind=")),
        Case::new(
            CLASS,
            "a configuration of another kind",
            apply(&cm1_as_m, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cm1\n"),
            bad_request("invalid object type: /v1, Kind=Secret"),
        ),
        Case::new(
            CLASS,
            "a configuration in another group",
            apply(&cm1_as_m, config("cm1", json!({"apiVersion": "apps/v1"})).to_string()),
            bad_request("invalid object type: apps/v1, Kind=ConfigMap"),
        ),
        Case::new(
            CLASS,
            "managedFields in the configuration, even empty",
            apply(&cm1_as_m, config("cm1", json!({"metadata": {"managedFields": []}})).to_string()),
            bad_request("metadata.managedFields must be nil"),
        ),
        Case::new(
            CLASS,
            "a field the kind does not declare",
            apply(&cm1_as_m, config("cm1", json!({"spec": {"replicas": 1}})).to_string()),
            typed(".spec: field not declared in schema"),
        ),
        Case::new(
            CLASS,
            "another manager's field with another value",
            apply(&cm1_as_m, config("cm1", json!({"data": {"k": "other"}})).to_string()),
            Expect::status(409, "Conflict")
                .msg("Apply failed with 1 conflict: conflict with \"unknown\" using v1: .data.k")
                .cause(".data.k", "FieldManagerConflict"),
        ),
        Case::new(
            CLASS,
            "another manager's field with the same value (shared, dry run)",
            apply(format!("{cm1_as_m}&dryRun=All"), config("cm1", json!({"data": {"k": "v"}})).to_string()),
            ok(200),
        ),
        Case::new(
            CLASS,
            "another manager's field, forced (dry run)",
            apply(format!("{cm1_as_m}&force=true&dryRun=All"), config("cm1", json!({"data": {"k": "w"}})).to_string()),
            ok(200).json_at("/data/k", json!("w")),
        ),
        Case::new(
            CLASS,
            "a duplicate key under fieldValidation=Strict",
            apply(
                format!("{cm1_as_m}&fieldValidation=Strict"),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n  namespace: {NS}\n  name: cm1\n"),
            ),
            bad_request(
                "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"name\" already set in map",
            ),
        ),
        Case::new(
            CLASS,
            "another name than the URL's",
            apply(&cm1_as_m, config("other", json!({})).to_string()),
            bad_request("the name of the object (other) does not match the name on the URL (cm1)"),
        ),
        Case::new(
            CLASS,
            "another namespace than the URL's",
            apply(&cm1_as_m, config("cm1", json!({"metadata": {"namespace": "default"}})).to_string()),
            bad_request("the namespace of the provided object does not match the namespace sent on the request"),
        ),
        Case::new(
            CLASS,
            "a stale resourceVersion",
            apply(&cm1_as_m, config("cm1", json!({"metadata": {"resourceVersion": "1"}})).to_string()),
            modified("configmaps", "cm1"),
        ),
        Case::new(
            CLASS,
            "a uid for an object that does not exist",
            apply(as_m(&format!("{}/apply-missing", cms())), config("apply-missing", json!({"metadata": {"uid": "abc"}})).to_string()),
            Expect::status(409, "Conflict")
                .msg("Operation cannot be fulfilled on configmaps \"apply-missing\": uid mismatch: the provided object specified uid abc, and no existing object was found")
                .name("apply-missing")
                .kind("configmaps"),
        ),
        Case::new(
            CLASS,
            "a configuration without a name, creating",
            apply(as_m(&format!("{}/apply-missing", cms())), "apiVersion: v1\nkind: ConfigMap\n"),
            bad_request("the name of the object () does not match the name on the URL (apply-missing)"),
        ),
        Case::new(
            CLASS,
            "the status of an object that does not exist (no create through /status)",
            apply(
                as_m(&format!("/api/v1/namespaces/{NS}/pods/apply-missing/status")),
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: apply-missing\nstatus:\n  phase: Running\n",
            ),
            not_found("pods", "apply-missing"),
        ),
        Case::new(
            CLASS,
            "creating (dry run)",
            apply(
                format!("{}&dryRun=All", as_m(&format!("{}/apply-missing", cms()))),
                config("apply-missing", json!({"data": {"a": "b"}})).to_string(),
            ),
            ok(201).json_at("/metadata/managedFields/0/operation", json!("Apply")),
        ),
    ]
}
