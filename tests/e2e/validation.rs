//! Writes kube-apiserver refuses, refused here with its Status: 422 `Invalid` with kube's
//! causes for metadata, ConfigMap and Secret data, replica counts, write options and patched
//! objects that do not decode; 409 for a uid precondition; 400 for DeleteOptions that do not
//! decode; 413 for oversized JSON patches; and client numbers that never panic. Every refusal
//! also leaves storage as it was.

use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, assert_status};

on_both_backends!(
    metadata_is_validated_on_every_write,
    config_map_and_secret_data_are_validated,
    replicas_may_not_be_negative,
    write_options_are_validated,
    preconditions_and_delete_options,
    json_patches_fail_as_kube,
    grace_periods_never_panic,
);

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const GENERIC_422: &str = "the server rejected our request due to an error in our request";

/// The `(field, reason, message)` of each cause.
fn causes(body: &Value) -> Vec<(String, String, String)> {
    body["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| {
                    let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
                    (text("field"), text("reason"), text("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

async fn put(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    server.send("PUT", path, "application/json", body.to_string()).await
}

async fn patch(server: &Server, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
    server.send("PATCH", path, content_type, body.to_string()).await
}

const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// A Deployment's or ReplicaSet's spec that is valid but for its replica count.
fn workload_spec(replicas: i64) -> Value {
    json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "w"}},
        "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    })
}

async fn resource_version(server: &Server, path: &str) -> String {
    let (code, body) = server.get(path).await;
    assert_eq!(code, 200, "{body}");
    body["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").to_owned()
}

async fn metadata_is_validated_on_every_write(backend: Backend) {
    let server = Server::start("validation-metadata", backend, &[]).await;
    // Create: a bad label key, reported on the map with the key as the value; nothing stored.
    let bad_key = server.post_json(CMS, &json!({"metadata": {"name": "c1", "labels": {"bad key": "v"}}})).await;
    let detail = format!("Invalid value: \"bad key\": {NAME_PART_MSG}");
    assert_status(&bad_key, 422, "Invalid", &format!("ConfigMap \"c1\" is invalid: metadata.labels: {detail}"));
    assert_eq!(bad_key.1["details"]["kind"], "ConfigMap");
    assert_eq!(bad_key.1["details"]["name"], "c1");
    assert_eq!(causes(&bad_key.1), vec![cause("metadata.labels", "FieldValueInvalid", &detail)]);
    assert_eq!(server.get(&format!("{CMS}/c1")).await.0, 404);
    // A label value too long, one with a NUL byte, several problems at once.
    let long = "v".repeat(64);
    let too_long = server.post_json(CMS, &json!({"metadata": {"name": "c1", "labels": {"a": long}}})).await;
    assert_status(
        &too_long,
        422,
        "Invalid",
        &format!(
            "ConfigMap \"c1\" is invalid: metadata.labels: Invalid value: \"{long}\": must be no more than 63 characters"
        ),
    );
    let nul = server.post_json(CMS, &json!({"metadata": {"name": "c1", "labels": {"a": "x\u{0}"}}})).await;
    assert_status(
        &nul,
        422,
        "Invalid",
        &format!("ConfigMap \"c1\" is invalid: metadata.labels: Invalid value: \"x\\x00\": {LABEL_VALUE_MSG}"),
    );
    let several = server
        .post_json(CMS, &json!({"metadata": {"name": "Bad", "labels": {"k": "-v"}, "finalizers": ["a b"]}}))
        .await;
    assert_eq!(several.0, 422, "{}", several.1);
    assert_eq!(
        causes(&several.1).iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["metadata.name", "metadata.labels", "metadata.finalizers"]
    );
    // Annotation keys are qualified names in any case; values may hold anything, NUL included,
    // up to 256 KiB for keys and values together.
    let bad_annotation =
        server.post_json(CMS, &json!({"metadata": {"name": "c1", "annotations": {"a/b/c": "x"}}})).await;
    assert_eq!(bad_annotation.0, 422, "{}", bad_annotation.1);
    assert_eq!(causes(&bad_annotation.1)[0].0, "metadata.annotations");
    assert!(causes(&bad_annotation.1)[0].2.starts_with("Invalid value: \"a/b/c\": a qualified name must consist of"));
    let big = json!({"metadata": {"name": "c1", "annotations": {"k": "v".repeat(256 * 1024)}}});
    let over = server.post_json(CMS, &big).await;
    assert_status(
        &over,
        422,
        "Invalid",
        "ConfigMap \"c1\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes",
    );
    assert_eq!(
        causes(&over.1),
        vec![cause("metadata.annotations", "FieldValueTooLong", "Too long: may not be more than 262144 bytes")]
    );
    let ok =
        json!({"metadata": {"name": "c1", "labels": {"app": "web"}, "annotations": {"Example.COM/Note": "a\u{0}b"}}});
    let created = server.post_json(CMS, &ok).await;
    assert_eq!(created.0, 201, "{}", created.1);
    assert_eq!(created.1["metadata"]["annotations"]["Example.COM/Note"], "a\u{0}b");

    // Update and every patch type: the same rules, and the object stays as it was. kube
    // checks an update's metadata four times for a ConfigMap and lists every finding.
    let path = format!("{CMS}/c1");
    let rv = resource_version(&server, &path).await;
    let bad_label = format!("ConfigMap \"c1\" is invalid: metadata.labels: Invalid value: \"-v\": {LABEL_VALUE_MSG}");
    let updated = put(&server, &path, &json!({"metadata": {"name": "c1", "labels": {"app": "-v"}}})).await;
    assert_status(&updated, 422, "Invalid", &bad_label);
    assert_eq!(causes(&updated.1).len(), 4, "{}", updated.1);
    for content_type in [MERGE, STRATEGIC] {
        let patched = patch(&server, &path, content_type, &json!({"metadata": {"labels": {"app": "-v"}}})).await;
        assert_status(&patched, 422, "Invalid", &bad_label);
    }
    let json_patched =
        patch(&server, &path, JSON_PATCH, &json!([{"op": "replace", "path": "/metadata/labels/app", "value": "-v"}]))
            .await;
    assert_status(&json_patched, 422, "Invalid", &bad_label);
    let annotated =
        patch(&server, &path, MERGE, &json!({"metadata": {"annotations": {"k": "v".repeat(256 * 1024)}}})).await;
    assert_status(
        &annotated,
        422,
        "Invalid",
        "ConfigMap \"c1\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes",
    );
    assert_eq!(resource_version(&server, &path).await, rv);

    // Other kinds too, on their own name: a Deployment's update.
    let deployment =
        server.post_json(DEPLOYMENTS, &json!({"metadata": {"name": "d1"}, "spec": workload_spec(1)})).await;
    assert_eq!(deployment.0, 201, "{}", deployment.1);
    let patched =
        patch(&server, &format!("{DEPLOYMENTS}/d1"), MERGE, &json!({"metadata": {"labels": {"a b": "c"}}})).await;
    assert_status(
        &patched,
        422,
        "Invalid",
        &format!("Deployment.apps \"d1\" is invalid: metadata.labels: Invalid value: \"a b\": {NAME_PART_MSG}"),
    );
    assert_eq!(patched.1["details"]["group"], "apps");
}

async fn config_map_and_secret_data_are_validated(backend: Backend) {
    let server = Server::start("validation-data", backend, &[]).await;
    let shared = &server;
    let create =
        |data: Value| async move { shared.post_json(CMS, &json!({"metadata": {"name": "cm"}, "data": data})).await };
    let bad_key = create(json!({"a b": "1"})).await;
    assert_status(
        &bad_key,
        422,
        "Invalid",
        &format!("ConfigMap \"cm\" is invalid: data[a b]: Invalid value: \"a b\": {CONFIG_KEY_MSG}"),
    );
    assert_eq!(causes(&bad_key.1)[0].0, "data[a b]");
    assert_status(
        &create(json!({"..": "1"})).await,
        422,
        "Invalid",
        "ConfigMap \"cm\" is invalid: data[..]: Invalid value: \"..\": must not be '..'",
    );
    assert_status(
        &create(json!({"..x": "1"})).await,
        422,
        "Invalid",
        "ConfigMap \"cm\" is invalid: data[..x]: Invalid value: \"..x\": must not start with '..'",
    );
    let both = server
        .post_json(CMS, &json!({"metadata": {"name": "cm"}, "data": {"k": "1"}, "binaryData": {"k": "AQ=="}}))
        .await;
    assert_status(
        &both,
        422,
        "Invalid",
        "ConfigMap \"cm\" is invalid: data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
    );
    // Over 1 MiB of data: 422 on the empty path (kube prints it `[]`), not a 413.
    let big = create(json!({"a": "x".repeat(1024 * 1024), "b": "y"})).await;
    assert_status(
        &big,
        422,
        "Invalid",
        "ConfigMap \"cm\" is invalid: []: Too long: may not be more than 1048576 bytes",
    );
    assert_eq!(causes(&big.1), vec![cause("[]", "FieldValueTooLong", "Too long: may not be more than 1048576 bytes")]);
    assert_eq!(server.get(&format!("{CMS}/cm")).await.0, 404);
    // Exactly 1 MiB is fine; one byte more through a patch is not, and changes nothing.
    let at_limit = create(json!({"a": "x".repeat(1024 * 1024)})).await;
    assert_eq!(at_limit.0, 201);
    let rv = resource_version(&server, &format!("{CMS}/cm")).await;
    let grown = patch(&server, &format!("{CMS}/cm"), MERGE, &json!({"data": {"b": "y"}})).await;
    assert_status(
        &grown,
        422,
        "Invalid",
        "ConfigMap \"cm\" is invalid: []: Too long: may not be more than 1048576 bytes",
    );
    let renamed = patch(&server, &format!("{CMS}/cm"), STRATEGIC, &json!({"data": {"a": null, "a/b": "y"}})).await;
    assert_status(
        &renamed,
        422,
        "Invalid",
        &format!("ConfigMap \"cm\" is invalid: data[a/b]: Invalid value: \"a/b\": {CONFIG_KEY_MSG}"),
    );
    assert_eq!(resource_version(&server, &format!("{CMS}/cm")).await, rv);

    // Secrets: `stringData` keys count as `data` keys, and the decoded size counts.
    let secrets = "/api/v1/namespaces/default/secrets";
    let string_data = server.post_json(secrets, &json!({"metadata": {"name": "s"}, "stringData": {"a b": "x"}})).await;
    assert_status(
        &string_data,
        422,
        "Invalid",
        &format!("Secret \"s\" is invalid: data[a b]: Invalid value: \"a b\": {CONFIG_KEY_MSG}"),
    );
    // 1 MiB + 1 zero bytes, base64: three zero bytes are `AAAA`, the last two `AAA=`.
    let encoded = format!("{}AAA=", "AAAA".repeat((1024 * 1024 - 1) / 3));
    let big_secret = server.post_json(secrets, &json!({"metadata": {"name": "s"}, "data": {"k": encoded}})).await;
    assert_status(
        &big_secret,
        422,
        "Invalid",
        "Secret \"s\" is invalid: data: Too long: may not be more than 1048576 bytes",
    );
    assert_eq!(server.get(&format!("{secrets}/s")).await.0, 404);
}

async fn replicas_may_not_be_negative(backend: Backend) {
    let server = Server::start("validation-replicas", backend, &[]).await;
    let negative = server.post_json(DEPLOYMENTS, &json!({"metadata": {"name": "d"}, "spec": workload_spec(-1)})).await;
    let message =
        "Deployment.apps \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0";
    assert_status(&negative, 422, "Invalid", message);
    assert_eq!(
        causes(&negative.1),
        vec![cause("spec.replicas", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]
    );
    let replicasets = "/apis/apps/v1/namespaces/default/replicasets";
    let rs = server.post_json(replicasets, &json!({"metadata": {"name": "r"}, "spec": workload_spec(-3)})).await;
    assert_status(
        &rs,
        422,
        "Invalid",
        "ReplicaSet.apps \"r\" is invalid: spec.replicas: Invalid value: -3: must be greater than or equal to 0",
    );
    assert_eq!(server.get(&format!("{replicasets}/r")).await.0, 404);

    let created = server.post_json(DEPLOYMENTS, &json!({"metadata": {"name": "d"}, "spec": workload_spec(2)})).await;
    assert_eq!(created.0, 201, "{}", created.1);
    let path = format!("{DEPLOYMENTS}/d");
    let rv = resource_version(&server, &path).await;
    assert_status(&patch(&server, &path, MERGE, &json!({"spec": {"replicas": -1}})).await, 422, "Invalid", message);
    // Through the scale subresource: kube validates the Scale.
    let scale_message =
        "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0";
    let scale = format!("{path}/scale");
    let scaled = put(
        &server,
        &scale,
        &json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "d"}, "spec": {"replicas": -1}}),
    )
    .await;
    assert_status(&scaled, 422, "Invalid", scale_message);
    assert_status(
        &patch(&server, &scale, MERGE, &json!({"spec": {"replicas": -1}})).await,
        422,
        "Invalid",
        scale_message,
    );
    // A Scale whose replicas is no int32: 400 for a PUT, kube's 422 on `patch` for a patch.
    let not_int = put(&server, &scale, &json!({"metadata": {"name": "d"}, "spec": {"replicas": "abc"}})).await;
    assert_status(
        &not_int,
        400,
        "BadRequest",
        "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32",
    );
    // A merge patch's result is decoded as JSON: Go's range error, the patched Scale shown.
    let huge = patch(&server, &scale, MERGE, &json!({"spec": {"replicas": 3_000_000_000u64}})).await;
    assert_eq!(huge.0, 422, "{}", huge.1);
    let message = huge.1["message"].as_str().unwrap();
    assert!(message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"), "{message}");
    assert!(
        message.ends_with(
            "\": json: cannot unmarshal number 3000000000 into Go struct field ScaleSpec.spec.replicas of type int32"
        ),
        "{message}"
    );
    // A strategic merge patch's result goes through kube's unstructured converter
    // (apimachinery pkg/runtime/converter.go), which converts an int64 to the int32 field as Go
    // does, wrapping; validation then refuses the negative count.
    let wrapped = patch(&server, &scale, STRATEGIC, &json!({"spec": {"replicas": 3_000_000_000u64}})).await;
    assert_status(
        &wrapped,
        422,
        "Invalid",
        "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1294967296: must be greater than or equal to 0",
    );
    let not_int = patch(&server, &scale, STRATEGIC, &json!({"spec": {"replicas": "abc"}})).await;
    assert_status(
        &not_int,
        422,
        "Invalid",
        " \"\" is invalid: patch: Invalid value: \"map[spec:map[replicas:abc]]\": unrecognized type: int32",
    );
    // A patched Deployment that does not decode: 422 on `patch`, no kind or name in details.
    for body in [json!({"spec": {"replicas": "abc"}}), json!({"metadata": {"labels": 5}})] {
        let undecodable = patch(&server, &path, MERGE, &body).await;
        assert_eq!(undecodable.0, 422, "{}", undecodable.1);
        assert_eq!(undecodable.1["reason"], "Invalid");
        let message = undecodable.1["message"].as_str().unwrap();
        assert!(message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"), "{message}");
        assert_eq!(causes(&undecodable.1)[0].0, "patch");
        assert_eq!(causes(&undecodable.1)[0].1, "FieldValueInvalid");
        assert_eq!(undecodable.1["details"].get("kind"), None);
    }
    let smp = patch(&server, &path, STRATEGIC, &json!({"spec": {"replicas": "abc"}})).await;
    assert_eq!(smp.0, 422, "{}", smp.1);
    assert!(
        smp.1["message"]
            .as_str()
            .unwrap()
            .starts_with(" \"\" is invalid: patch: Invalid value: \"map[spec:map[replicas:abc]]\": "),
        "{}",
        smp.1
    );
    assert_eq!(resource_version(&server, &path).await, rv);
}

async fn write_options_are_validated(backend: Backend) {
    let server = Server::start("validation-options", backend, &[]).await;
    let body = json!({"metadata": {"name": "o"}}).to_string();
    let manager = "m".repeat(129);
    let long_manager =
        server.send("POST", &format!("{CMS}?fieldManager={manager}"), "application/json", body.clone()).await;
    assert_status(
        &long_manager,
        422,
        "Invalid",
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes",
    );
    assert_eq!(
        long_manager.1["details"],
        json!({"group": "meta.k8s.io", "kind": "CreateOptions", "causes": [
            {"reason": "FieldValueTooLong", "message": "Too long: may not be more than 128 bytes", "field": "fieldManager"}
        ]})
    );
    let dry_run = server.send("POST", &format!("{CMS}?dryRun=foo"), "application/json", body.clone()).await;
    assert_status(
        &dry_run,
        422,
        "Invalid",
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"foo\"}: supported values: \"All\"",
    );
    assert_eq!(causes(&dry_run.1)[0].1, "FieldValueNotSupported");
    assert_eq!(server.get(&format!("{CMS}/o")).await.0, 404);
    assert_eq!(
        server.send("POST", &format!("{CMS}?fieldManager={}", "m".repeat(128)), "application/json", body).await.0,
        201
    );

    let path = format!("{CMS}/o");
    let rv = resource_version(&server, &path).await;
    let update = json!({"metadata": {"name": "o"}, "data": {"k": "v"}}).to_string();
    let nul_manager = server.send("PUT", &format!("{path}?fieldManager=a%00b"), "application/json", update).await;
    assert_status(
        &nul_manager,
        422,
        "Invalid",
        "UpdateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\x00b\": invalid character U+0000 (at position 1)",
    );
    let field_validation = server
        .send("PATCH", &format!("{path}?fieldValidation=strict"), MERGE, json!({"data": {"k": "v"}}).to_string())
        .await;
    assert_status(
        &field_validation,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
    );
    let force =
        server.send("PATCH", &format!("{path}?force=true"), MERGE, json!({"data": {"k": "v"}}).to_string()).await;
    assert_status(
        &force,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    );
    assert_eq!(resource_version(&server, &path).await, rv);
    let delete = server.send("DELETE", &format!("{path}?dryRun=foo"), "application/json", "").await;
    assert_status(
        &delete,
        422,
        "Invalid",
        "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"foo\"}: supported values: \"All\"",
    );
    let policy = server.send("DELETE", &format!("{path}?propagationPolicy=foo"), "application/json", "").await;
    assert_status(
        &policy,
        422,
        "Invalid",
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"foo\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
    );
    assert_eq!(resource_version(&server, &path).await, rv);
}

async fn preconditions_and_delete_options(backend: Backend) {
    let server = Server::start("validation-preconditions", backend, &[]).await;
    let created = server.post_json(CMS, &json!({"metadata": {"name": "p"}})).await;
    assert_eq!(created.0, 201);
    let uid = created.1["metadata"]["uid"].as_str().unwrap().to_owned();
    let path = format!("{CMS}/p");
    let rv = resource_version(&server, &path).await;
    // A PUT's uid is a precondition: 409 with the storage error kube embeds.
    let other = put(&server, &path, &json!({"metadata": {"name": "p", "uid": "other"}, "data": {"k": "v"}})).await;
    assert_eq!(other.0, 409, "{}", other.1);
    assert_eq!(other.1["reason"], "Conflict");
    let message = other.1["message"].as_str().unwrap();
    assert!(
        message.starts_with("Operation cannot be fulfilled on configmaps \"p\": StorageError: invalid object, Code: 4, Key: ")
            && message.ends_with(&format!(
                "/configmaps/default/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: {uid}"
            )),
        "{message}"
    );
    // A patch that changes the uid: immutable (listed by both metadata update checks).
    let changed = patch(&server, &path, MERGE, &json!({"metadata": {"uid": "other"}})).await;
    assert_status(
        &changed,
        422,
        "Invalid",
        "ConfigMap \"p\" is invalid: metadata.uid: Invalid value: \"other\": field is immutable",
    );
    assert_eq!(
        causes(&changed.1),
        vec![cause("metadata.uid", "FieldValueInvalid", "Invalid value: \"other\": field is immutable"); 2]
    );
    assert_eq!(resource_version(&server, &path).await, rv);
    assert_eq!(put(&server, &path, &json!({"metadata": {"name": "p", "uid": uid}})).await.0, 200);

    // DELETE bodies that are no DeleteOptions: 400 with the decoder's words, nothing deleted.
    let delete = |body: &'static str| server.send("DELETE", &path, "application/json", body);
    let cases = [
        (
            r#"{"kind":"Pod","apiVersion":"v1"}"#,
            "no kind \"Pod\" is registered for version \"v1\" in scheme \"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:28\"",
        ),
        (
            "[]",
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }",
        ),
        ("{", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
        (
            r#"{"gracePeriodSeconds":"x"}"#,
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
        ),
        (r#"{"kind":"Status","apiVersion":"v1"}"#, "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
    ];
    for (body, message) in cases {
        assert_status(&delete(body).await, 400, "BadRequest", message);
    }
    assert_status(
        &server.send("DELETE", &format!("{path}?gracePeriodSeconds=abc"), "application/json", "").await,
        400,
        "BadRequest",
        "strconv.ParseInt: parsing \"abc\": invalid syntax",
    );
    assert_status(
        &server.send("DELETE", CMS, "application/json", "{\"orphanDependents\":").await,
        400,
        "BadRequest",
        "couldn't get version/kind; json parse error: unexpected end of JSON input",
    );
    assert_eq!(server.get(&path).await.0, 200);
    // A resourceVersion precondition is compared as a string.
    let stale = delete(r#"{"preconditions":{"resourceVersion":"abc"}}"#).await;
    assert_eq!(stale.0, 409, "{}", stale.1);
    let current = resource_version(&server, &path).await;
    assert_eq!(
        stale.1["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"p\": the ResourceVersion in the precondition (abc) does not match the ResourceVersion in record ({current}). The object might have been modified"
        )
    );
    // A DeleteOptions of any group and version is one.
    let deleted = server
        .send(
            "DELETE",
            &path,
            "application/json",
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}).to_string(),
        )
        .await;
    assert_eq!(deleted.0, 200, "{}", deleted.1);
    assert_eq!(server.get(&path).await.0, 404);
}

async fn json_patches_fail_as_kube(backend: Backend) {
    let server = Server::start("validation-json-patch", backend, &[]).await;
    assert_eq!(server.post_json(CMS, &json!({"metadata": {"name": "j"}, "data": {"a": "1"}})).await.0, 201);
    let path = format!("{CMS}/j");
    let rv = resource_version(&server, &path).await;
    // Operations that cannot apply: kube's generic 422, which does not say why.
    for operations in [
        json!([{"op": "frobnicate", "path": "/data/a"}]),
        json!([{"op": "remove", "path": "/data/missing"}]),
        json!([{"op": "test", "path": "/data/a", "value": "2"}]),
        json!([{"op": "add", "value": "x"}]),
        json!([{"op": "replace", "path": "/data/a", "value": "2"}, {"op": "test", "path": "/data/a", "value": "1"}]),
    ] {
        let failed = patch(&server, &path, JSON_PATCH, &operations).await;
        assert_status(&failed, 422, "Invalid", GENERIC_422);
        assert_eq!(failed.1["details"], json!({}), "{operations}");
    }
    // Documents that do not decode: 400 with Go's words.
    assert_status(
        &patch(&server, &path, JSON_PATCH, &json!({"op": "add"})).await,
        400,
        "BadRequest",
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
    );
    assert_status(
        &patch(&server, &path, JSON_PATCH, &json!([{"op": 1, "path": "/data/a"}])).await,
        400,
        "BadRequest",
        "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
    );
    assert_status(
        &server.send("PATCH", &path, MERGE, "{\"data\":").await,
        400,
        "BadRequest",
        "error decoding patch: unexpected end of JSON input",
    );
    assert_status(
        &patch(&server, &path, MERGE, &json!(["x"])).await,
        400,
        "BadRequest",
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
    );
    // More than 10,000 operations: 413.
    let many = Value::Array(vec![json!({"op": "test", "path": "/data/a", "value": "1"}); 10_001]);
    assert_status(
        &patch(&server, &path, JSON_PATCH, &many).await,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
    );
    assert_eq!(resource_version(&server, &path).await, rv);
    let at_limit = Value::Array(vec![json!({"op": "test", "path": "/data/a", "value": "1"}); 10_000]);
    assert_eq!(patch(&server, &path, JSON_PATCH, &at_limit).await.0, 200);
}

/// Polls `path` until it answers 404, for up to `timeout`.
async fn until_gone(server: &Server, path: &str, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if server.get(path).await.0 == 404 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// `YYYY-MM-DDTHH:MM:SSZ`, as kube writes timestamps.
#[track_caller]
fn assert_rfc3339(timestamp: &Value) {
    let text = timestamp.as_str().unwrap_or_else(|| panic!("a timestamp: {timestamp}"));
    let shape: String = text.chars().map(|c| if c.is_ascii_digit() { 'D' } else { c }).collect();
    assert_eq!(shape, "DDDD-DD-DDTDD:DD:DDZ", "{text}");
}

async fn grace_periods_never_panic(backend: Backend) {
    let server = Server::start("validation-grace", backend, &[]).await;
    assert_eq!(server.post_json("/api/v1/namespaces", &json!({"metadata": {"name": "grace"}})).await.0, 201);
    let pods = "/api/v1/namespaces/grace/pods";
    let pod = |name: &str, grace: Option<i64>| {
        let mut spec = json!({"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]});
        if let Some(grace) = grace {
            spec["terminationGracePeriodSeconds"] = json!(grace);
        }
        json!({"metadata": {"name": name}, "spec": spec})
    };
    for name in ["max", "large", "body", "negative"] {
        assert_eq!(server.post_json(pods, &pod(name, None)).await.0, 201);
    }
    // Grace periods up to i64::MAX, from the query or the body: marked, with a valid time.
    for (name, query, body) in [
        ("max", "?gracePeriodSeconds=9223372036854775807", String::new()),
        ("large", "?gracePeriodSeconds=922337203685", String::new()),
        ("body", "", json!({"gracePeriodSeconds": 9_223_372_036_854_775_807i64}).to_string()),
    ] {
        let marked = server.send("DELETE", &format!("{pods}/{name}{query}"), "application/json", body).await;
        assert_eq!(marked.0, 200, "{}", marked.1);
        assert_rfc3339(&marked.1["metadata"]["deletionTimestamp"]);
        assert!(marked.1["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap() >= 922_337_203_685);
    }
    let far = server.get(&format!("{pods}/max")).await.1;
    assert_eq!(far["metadata"]["deletionTimestamp"], "9999-12-31T23:59:59Z");
    // Still deletable at once.
    let now = server
        .send("DELETE", &format!("{pods}/max"), "application/json", json!({"gracePeriodSeconds": 0}).to_string())
        .await;
    assert_eq!(now.0, 200, "{}", now.1);
    assert_eq!(server.get(&format!("{pods}/max")).await.0, 404);
    // A negative grace period is one second, as kube makes it.
    let negative =
        server.send("DELETE", &format!("{pods}/negative?gracePeriodSeconds=-5"), "application/json", "").await;
    assert_eq!(negative.0, 200, "{}", negative.1);
    assert_eq!(negative.1["metadata"]["deletionGracePeriodSeconds"], 1);
    assert!(until_gone(&server, &format!("{pods}/negative"), Duration::from_secs(10)).await);
    // A pod whose own grace period is i64::MAX: created, marked by a plain delete, deleted with
    // the collection and with its namespace.
    assert_eq!(server.post_json(pods, &pod("forever", Some(i64::MAX))).await.0, 201);
    let plain = server.send("DELETE", &format!("{pods}/forever"), "application/json", "").await;
    assert_eq!(plain.0, 200, "{}", plain.1);
    assert_rfc3339(&plain.1["metadata"]["deletionTimestamp"]);
    assert_eq!(server.post_json(pods, &pod("forever-2", Some(i64::MAX))).await.0, 201);
    let collection = server.send("DELETE", pods, "application/json", "").await;
    assert_eq!(collection.0, 200, "{}", collection.1);
    let namespace = server.send("DELETE", "/api/v1/namespaces/grace", "application/json", "").await;
    assert_eq!(namespace.0, 200, "{}", namespace.1);
    assert!(until_gone(&server, "/api/v1/namespaces/grace", Duration::from_secs(30)).await, "{}", server.log());
    assert_eq!(server.get("/readyz").await.0, 200);
    assert!(!server.log().contains("panicked"), "{}", server.log());
}
