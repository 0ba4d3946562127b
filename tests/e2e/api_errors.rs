//! Every client error is a Status with kube-apiserver's code, reason and message; nothing a
//! client sends gets a 500.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, assert_failure};

on_both_backends!(status_codes, body_limits, invalid_names_are_422_with_causes, throttled_requests_get_429);

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn status_codes(backend: Backend) {
    let server = Server::start("api-status-codes", backend, &[]).await;
    // 404: an unknown resource, an unknown object.
    assert_failure(&server.get("/api/v1/widgets").await, 404, "NotFound");
    let missing = server.get(&format!("{CMS}/nope")).await;
    assert_failure(&missing, 404, "NotFound");
    assert_eq!(missing.1["message"], "configmaps \"nope\" not found");
    assert_eq!(missing.1["details"], json!({"name": "nope", "kind": "configmaps"}));
    // 405: a verb the kind does not have, PUT on a collection.
    assert_failure(&server.send("DELETE", "/api/v1/namespaces", "application/json", "").await, 405, "MethodNotAllowed");
    assert_failure(&server.send("PUT", CMS, "application/json", "{}").await, 405, "MethodNotAllowed");
    // 406: a watch that only accepts YAML; a GET that accepts nothing we serve.
    let r = server
        .http
        .get(server.api(&format!("{CMS}?watch=1")))
        .header("Accept", "application/yaml")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 406);
    let r = server.http.get(server.api(CMS)).header("Accept", "text/html").send().await.unwrap();
    assert_eq!(r.status(), 406);
    assert_eq!(r.json::<Value>().await.unwrap()["reason"], "NotAcceptable");
    // 415: a body type the server does not read.
    assert_failure(&server.send("POST", CMS, "text/plain", "hello").await, 415, "UnsupportedMediaType");
    assert_failure(
        &server.send("PATCH", &format!("{CMS}/x"), "application/json", "{}").await,
        415,
        "UnsupportedMediaType",
    );
    // 400: malformed JSON, a kind or apiVersion that does not match the URL, bad selectors.
    assert_failure(&server.send("POST", CMS, "application/json", "{\"metadata\":").await, 400, "BadRequest");
    let wrong_kind =
        server.post_json(CMS, &json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "a"}})).await;
    assert_failure(&wrong_kind, 400, "BadRequest");
    let wrong_version =
        server.post_json(CMS, &json!({"kind": "ConfigMap", "apiVersion": "apps/v1", "metadata": {"name": "a"}})).await;
    assert_failure(&wrong_version, 400, "BadRequest");
    assert_failure(&server.get(&format!("{CMS}?labelSelector=a%20in%20(")).await, 400, "BadRequest");
    let unknown_field = server.get(&format!("{CMS}?fieldSelector=spec.nope%3Dx")).await;
    assert_failure(&unknown_field, 400, "BadRequest");
    assert_eq!(
        unknown_field.1["message"],
        "\"spec.nope\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    assert_failure(&server.get("/api/v1/pods?fieldSelector=status.nope%3Dx").await, 400, "BadRequest");
    assert_eq!(server.get("/api/v1/pods?fieldSelector=status.phase%3DRunning").await.0, 200);
    // 409: already exists; a stale resourceVersion.
    let created = server.post_json(CMS, &json!({"metadata": {"name": "c"}, "data": {"k": "1"}})).await;
    assert_eq!(created.0, 201, "{}", created.1);
    let rv = created.1["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let exists = server.post_json(CMS, &json!({"metadata": {"name": "c"}})).await;
    assert_failure(&exists, 409, "AlreadyExists");
    assert_eq!(exists.1["message"], "configmaps \"c\" already exists");
    let updated = server
        .send(
            "PUT",
            &format!("{CMS}/c"),
            "application/json",
            json!({"metadata": {"name": "c", "resourceVersion": rv}, "data": {"k": "2"}}).to_string(),
        )
        .await;
    assert_eq!(updated.0, 200);
    let stale = server
        .send(
            "PUT",
            &format!("{CMS}/c"),
            "application/json",
            json!({"metadata": {"name": "c", "resourceVersion": rv}, "data": {"k": "3"}}).to_string(),
        )
        .await;
    assert_failure(&stale, 409, "Conflict");
    assert_eq!(
        stale.1["message"],
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // A delete precondition that does not hold.
    let precondition = server
        .send(
            "DELETE",
            &format!("{CMS}/c"),
            "application/json",
            json!({"preconditions": {"uid": "not-the-uid"}}).to_string(),
        )
        .await;
    assert_failure(&precondition, 409, "Conflict");
    // rest.BeforeDelete names the kind, not the resource.
    let uid = created.1["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        precondition.1["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"c\": the UID in the precondition (not-the-uid) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    assert_eq!(precondition.1["details"]["kind"], "ConfigMap");
    // 504: a resourceVersion storage has not reached (from storage: no Retry-After).
    let future = server.get(&format!("{CMS}?resourceVersion=99999999&limit=10")).await;
    assert_failure(&future, 504, "Timeout");
    assert_eq!(future.1["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    // From the cache it waits (3 s), then 504 with Retry-After: 1.
    let r = server.http.get(server.api(&format!("{CMS}?resourceVersion=99999999"))).send().await.unwrap();
    assert_eq!(r.status(), 504);
    assert_eq!(r.headers()["retry-after"], "1");
}

async fn body_limits(backend: Backend) {
    let server = Server::start("api-body-limits", backend, &[]).await;
    // Over 3 MiB: refused before it is decoded.
    let huge = json!({"metadata": {"name": "huge"}, "data": {"k": "x".repeat(3 * 1024 * 1024 + 10)}});
    assert_failure(&server.post_json(CMS, &huge).await, 413, "RequestEntityTooLarge");
    // Under 3 MiB but over what storage takes (etcd's 1.5 MiB): also 413, and nothing written.
    // (A pod: a ConfigMap that big is refused sooner, by validation's 1 MiB data limit.)
    let pods = "/api/v1/namespaces/default/pods";
    let args = vec![json!("x".repeat(2 * 1024 * 1024))];
    let big = json!({"metadata": {"name": "big"}, "spec": {"containers": [{"name": "c", "image": "i", "args": args}]}});
    assert_failure(&server.post_json(pods, &big).await, 413, "RequestEntityTooLarge");
    assert_eq!(server.get(&format!("{pods}/big")).await.0, 404);
}

async fn invalid_names_are_422_with_causes(backend: Backend) {
    let server = Server::start("api-names", backend, &[]).await;
    let bad = server.post_json(CMS, &json!({"metadata": {"name": "Bad_Name"}})).await;
    assert_failure(&bad, 422, "Invalid");
    assert_eq!(bad.1["details"]["kind"], "ConfigMap");
    assert_eq!(bad.1["details"]["name"], "Bad_Name");
    let cause = &bad.1["details"]["causes"][0];
    assert_eq!(cause["field"], "metadata.name");
    assert_eq!(cause["reason"], "FieldValueInvalid");
    assert!(bad.1["message"].as_str().unwrap().starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", bad.1);
    // Namespaces are DNS labels: no dots.
    let ns = server.post_json("/api/v1/namespaces", &json!({"metadata": {"name": "a.b"}})).await;
    assert_failure(&ns, 422, "Invalid");
    // No name at all.
    let none = server.post_json(CMS, &json!({"metadata": {}})).await;
    assert_failure(&none, 422, "Invalid");
    assert_eq!(none.1["details"]["causes"][0]["message"], "Required value: name or generateName is required");
    // generateName gets a random suffix.
    let generated = server.post_json(CMS, &json!({"metadata": {"generateName": "gen-"}})).await;
    assert_eq!(generated.0, 201);
    let name = generated.1["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    // A namespace in the body that differs from the URL's.
    let other_ns = server.post_json(CMS, &json!({"metadata": {"name": "x", "namespace": "kube-system"}})).await;
    assert_failure(&other_ns, 400, "BadRequest");
}

async fn throttled_requests_get_429(backend: Backend) {
    let server = Server::start("api-throttle", backend, &[]).await;
    server.debug("throttle?count=2&retryAfterSeconds=7").await;
    for _ in 0..2 {
        let r = server.http.get(server.api(CMS)).send().await.unwrap();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "7");
        assert_eq!(r.json::<Value>().await.unwrap()["reason"], "TooManyRequests");
    }
    assert_eq!(server.get(CMS).await.0, 200);
}

mod undecodable {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stored_value_that_cannot_be_decoded_is_skipped() {
        super::undecodable_values_are_skipped().await;
    }
}

/// Someone else's data under our prefix in a shared etcd: LISTs skip it (with a metric),
/// never fail or wedge.
async fn undecodable_values_are_skipped() {
    use listwatch_storage::Storage;
    let endpoints = listwatch_testkit::etcd::shared_endpoints().await;
    let prefix = format!("{}registry", listwatch_testkit::etcd::unique_prefix("undecodable"));
    let storage = vec!["--etcd".to_string(), endpoints.join(","), "--etcd-prefix".to_string(), prefix.clone()];
    let etcd = listwatch_storage::etcd::EtcdStore::connect(&endpoints, Default::default()).await.unwrap();
    for watch_cache in ["true", "false"] {
        let server = Server::start_with_storage(
            tempfile::tempdir().unwrap(),
            storage.clone(),
            None,
            &["--watch-cache", watch_cache],
        )
        .await;
        let (code, _) = server.post_json(CMS, &json!({"metadata": {"name": "good"}})).await;
        assert!(code == 201 || code == 409);
        let key = format!("{prefix}/configmaps/default/garbage-{watch_cache}");
        etcd.create(key.as_bytes(), bytes::Bytes::from_static(b"\x00not json at all")).await.unwrap();
        // The cache learns of it by its watch, the uncached path reads it now: either way the
        // list answers, without it.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (code, list) = server.get(&format!("{CMS}?limit=100")).await;
            assert_eq!(code, 200, "{list}");
            let names: Vec<&str> =
                list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
            assert!(names.contains(&"good") && !names.iter().any(|n| n.starts_with("garbage")), "{names:?}");
            let (code, _) = server.get(CMS).await;
            assert_eq!(code, 200);
            if crate::support::metric(&server, "listwatch_storage_undecodable_objects_total", "resource=\"configmaps\"")
                .await
                >= 1.0
            {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the undecodable value was never counted");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
