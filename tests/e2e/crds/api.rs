//! The API's answers for CRDs and custom resources as kube-apiserver gives them
//! (shared/spec/crds-and-apply.md §7): CRD validation, the status a create answers with,
//! discovery and OpenAPI, `fieldValidation`, media types and patch types, the status
//! subresource's generation rules, field selectors, and list/watch through the watch cache.

use std::time::Duration;

use serde_json::{Value, json};

use super::{CRDS, CRONTABS, condition, crd_json, crontab, install, post_for_headers, wait_until};
use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, assert_failure, assert_status, summary};

on_both_backends!(
    crd_writes_are_validated_and_answered_as_kube,
    discovery_and_openapi_list_a_crd_once_established,
    field_validation_media_and_patch_types,
    status_subresource_and_generation,
    field_selectors_lists_and_watches,
);

async fn crd_writes_are_validated_and_answered_as_kube(backend: Backend) {
    let server = Server::start("crd-api-validate", backend, &[]).await;
    // §7 #1: the name must be plural.group.
    let mut misnamed = crd_json();
    misnamed["metadata"]["name"] = json!("foo.stable.example.com");
    let got = server.post_json(CRDS, &misnamed).await;
    assert_status(
        &got,
        422,
        "Invalid",
        "CustomResourceDefinition.apiextensions.k8s.io \"foo.stable.example.com\" is invalid: metadata.name: Invalid value: \"foo.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
    );
    assert_eq!(got.1["details"]["group"], "apiextensions.k8s.io");
    assert_eq!(got.1["details"]["kind"], "CustomResourceDefinition");
    // §7 #2: a property without a type (kube reports the hoisted path of a single version).
    let mut untyped = crd_json();
    untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("type");
    let got = server.post_json(CRDS, &untyped).await;
    assert_failure(&got, 422, "Invalid");
    let causes = got.1["details"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["field"] == "spec.validation.openAPIV3Schema.properties[spec].type"
            && c["message"] == "Required value: must not be empty for specified object fields"),
        "{}",
        got.1
    );
    // An unknown field of the CRD type is a strict decoding error.
    let mut unknown = crd_json();
    unknown["spec"]["color"] = json!("red");
    let got =
        server.send("POST", &format!("{CRDS}?fieldValidation=Strict"), "application/json", unknown.to_string()).await;
    assert_status(
        &got,
        400,
        "BadRequest",
        "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: strict decoding error: unknown field \"spec.color\"",
    );
    let (code, _) = server.get(&format!("{CRDS}/crontabs.stable.example.com")).await;
    assert_eq!(code, 404, "refused creates store nothing");

    // §7 #3: a create answers with an empty status, then the conditions follow.
    let (code, created) = server.post_json(CRDS, &crd_json()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"]["conversion"], json!({"strategy": "None"}));
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let mut watch = Watch::open(&server, &format!("{CRDS}?watch=1&resourceVersion={rv}")).await;
    let event = watch.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(event["type"], "MODIFIED");
    let crd = &event["object"];
    let accepted = condition(crd, "NamesAccepted").unwrap();
    assert_eq!(
        (&accepted["status"], &accepted["reason"], &accepted["message"]),
        (&json!("True"), &json!("NoConflicts"), &json!("no conflicts found"))
    );
    let established = condition(crd, "Established").unwrap();
    assert_eq!(
        (&established["status"], &established["reason"], &established["message"]),
        (&json!("True"), &json!("InitialNamesAccepted"), &json!("the initial names have been accepted"))
    );
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "CronTabList");
    // The URLs answer at once.
    let (code, list) = server.get(CRONTABS).await;
    assert_eq!((code, &list["kind"]), (200, &json!("CronTabList")), "{list}");
    // An update may not change the group.
    let mut moved = crd.clone();
    moved["spec"]["group"] = json!("other.example.com");
    let got =
        server.send("PUT", &format!("{CRDS}/crontabs.stable.example.com"), "application/json", moved.to_string()).await;
    assert_failure(&got, 422, "Invalid");
    assert!(
        got.1["message"]
            .as_str()
            .unwrap()
            .contains("spec.group: Invalid value: \"other.example.com\": field is immutable"),
        "{}",
        got.1
    );
}

async fn discovery_and_openapi_list_a_crd_once_established(backend: Backend) {
    let server = Server::start("crd-api-discovery", backend, &[]).await;
    let (_, before) = server.get("/apis").await;
    assert!(!before.to_string().contains("stable.example.com"));
    install(&server).await;
    // §7 #4.
    let (code, list) = server.get("/apis/stable.example.com/v1").await;
    assert_eq!(code, 200, "{list}");
    let resources = list["resources"].as_array().unwrap();
    let names: Vec<&str> = resources.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["crontabs", "crontabs/scale", "crontabs/status"]);
    let main = &resources[0];
    assert_eq!(
        main["verbs"],
        json!(["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"])
    );
    assert_eq!(
        (&main["kind"], &main["namespaced"], &main["singularName"]),
        (&json!("CronTab"), &json!(true), &json!("crontab"))
    );
    assert_eq!((&main["shortNames"], &main["categories"]), (&json!(["ct"]), &json!(["all"])));
    // base64(sha256("stable.example.com/v1/CronTab")[..8]).
    assert_eq!(main["storageVersionHash"].as_str().map(str::len), Some(12));
    assert_eq!(resources[1]["kind"], "Scale");
    assert_eq!(resources[1]["group"], "autoscaling");
    let (_, groups) = server.get("/apis").await;
    let groups = groups["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    // Built-ins by kube-aggregator's priority, then CRD groups.
    assert_eq!(
        names,
        [
            "apps",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "rbac.authorization.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "stable.example.com"
        ]
    );
    let (code, group) = server.get("/apis/stable.example.com").await;
    assert_eq!(code, 200);
    assert_eq!(group["preferredVersion"], json!({"groupVersion": "stable.example.com/v1", "version": "v1"}));
    // OpenAPI v3 lists the group-version; its document has the kind's schema and the PATCH
    // operation kubectl's validation probe looks for.
    let (_, index) = server.get("/openapi/v3").await;
    let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str().unwrap().to_owned();
    let (code, doc) = server.get(&url).await;
    assert_eq!(code, 200);
    let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    let patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"];
    let params: Vec<&str> = patch["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
}

async fn field_validation_media_and_patch_types(backend: Backend) {
    let server = Server::start("crd-api-fields", backend, &[]).await;
    install(&server).await;
    let mut body = crontab("c1");
    body["spec"]["foo"] = json!(1);
    // §7 #5.
    let got =
        server.send("POST", &format!("{CRONTABS}?fieldValidation=Strict"), "application/json", body.to_string()).await;
    assert_status(
        &got,
        400,
        "BadRequest",
        "CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: unknown field \"spec.foo\"",
    );
    // §7 #6: the server's default is Warn.
    let response = post_for_headers(&server, CRONTABS, &body).await;
    assert_eq!(response.status(), 201);
    let warnings: Vec<&str> = response.headers().get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(warnings, [r#"299 - "unknown field \"spec.foo\"""#]);
    let (_, stored) = server.get(&format!("{CRONTABS}/c1")).await;
    assert!(stored["spec"].get("foo").is_none(), "{stored}");
    // §7 #7.
    let mut big = crontab("c2");
    big["spec"]["replicas"] = json!(15);
    let got = server.post_json(CRONTABS, &big).await;
    assert_status(
        &got,
        422,
        "Invalid",
        "CronTab.stable.example.com \"c2\" is invalid: spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
    );
    assert_eq!(
        got.1["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: 15: spec.replicas in body should be less than or equal to 10", "field": "spec.replicas"}])
    );
    // A kind other than the URL's.
    let mut other = crontab("c3");
    other["kind"] = json!("CronJob");
    let got = server.post_json(CRONTABS, &other).await;
    assert_status(
        &got,
        422,
        "Invalid",
        "CronTab.stable.example.com \"c3\" is invalid: kind: Invalid value: \"CronJob\": must be CronTab",
    );
    // §7 #8: JSON only.
    let protobuf_only = server
        .http
        .get(server.api(&format!("{CRONTABS}/c1")))
        .header("Accept", "application/vnd.kubernetes.protobuf")
        .send()
        .await
        .unwrap();
    assert_eq!(protobuf_only.status(), 406);
    let fallback = server
        .http
        .get(server.api(&format!("{CRONTABS}/c1")))
        .header("Accept", "application/vnd.kubernetes.protobuf, application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(fallback.status(), 200);
    assert_eq!(fallback.headers()["content-type"], "application/json");
    // §7 #9: no strategic merge patch.
    let got = server.send("PATCH", &format!("{CRONTABS}/c1"), "application/strategic-merge-patch+json", "{}").await;
    assert_status(
        &got,
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );
    // A merge patch whose result has an unknown field: 422 on `patch` under Strict.
    let got = server
        .send(
            "PATCH",
            &format!("{CRONTABS}/c1?fieldValidation=Strict"),
            "application/merge-patch+json",
            r#"{"spec":{"bar":1}}"#,
        )
        .await;
    assert_failure(&got, 422, "Invalid");
    assert!(
        got.1["message"].as_str().unwrap().contains("strict decoding error: unknown field \"spec.bar\""),
        "{}",
        got.1
    );
    // A PUT must say which version it replaces.
    let got = server.send("PUT", &format!("{CRONTABS}/c1"), "application/json", crontab("c1").to_string()).await;
    assert_status(
        &got,
        422,
        "Invalid",
        "crontabs.stable.example.com \"c1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
    );
    // An unknown subresource is the CR handler's JSON 404.
    let (code, body) = server.get(&format!("{CRONTABS}/c1/logs")).await;
    assert_eq!((code, &body["reason"]), (404, &json!("NotFound")), "{body}");
}

async fn status_subresource_and_generation(backend: Backend) {
    let server = Server::start("crd-api-status", backend, &[]).await;
    install(&server).await;
    let mut body = crontab("s");
    body["status"] = json!({"replicas": 9});
    let (code, created) = server.post_json(CRONTABS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert!(created.get("status").is_none(), "status is dropped on create: {created}");
    // §7 #10: the main resource ignores status and counts spec changes.
    let mut update = created.clone();
    update["spec"]["replicas"] = json!(4);
    update["status"] = json!({"replicas": 4});
    let (code, updated) = server.send("PUT", &format!("{CRONTABS}/s"), "application/json", update.to_string()).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(
        (&updated["spec"]["replicas"], updated.get("status"), &updated["metadata"]["generation"]),
        (&json!(4), None, &json!(2))
    );
    // /status changes only status (not labels), and not the generation.
    let mut status = updated.clone();
    status["status"] = json!({"replicas": 3, "selector": "app=s"});
    status["metadata"]["labels"] = json!({"changed": "yes"});
    let (code, written) =
        server.send("PUT", &format!("{CRONTABS}/s/status"), "application/json", status.to_string()).await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(
        (&written["status"]["replicas"], written["metadata"].get("labels"), &written["metadata"]["generation"]),
        (&json!(3), None, &json!(2))
    );
    // Status is validated against its schema.
    let got = server
        .send(
            "PATCH",
            &format!("{CRONTABS}/s/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":"three"}}"#,
        )
        .await;
    assert_failure(&got, 422, "Invalid");
    assert_eq!(got.1["details"]["causes"][0]["field"], "status.replicas");
    // The scale subresource reads the CRD's paths.
    let (code, scale) = server.get(&format!("{CRONTABS}/s/scale")).await;
    assert_eq!(code, 200);
    assert_eq!(
        (&scale["spec"], &scale["status"]),
        (&json!({"replicas": 4}), &json!({"replicas": 3, "selector": "app=s"}))
    );
}

async fn field_selectors_lists_and_watches(backend: Backend) {
    let server = Server::start("crd-api-lists", backend, &[]).await;
    install(&server).await;
    let (_, first) = server.post_json(CRONTABS, &crontab("a")).await;
    let mut b = crontab("b");
    b["spec"]["mode"] = json!("b");
    server.post_json(CRONTABS, &b).await;
    let rv = first["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    // selectableFields.
    let (code, list) = server.get(&format!("{CRONTABS}?fieldSelector=spec.mode%3Db")).await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["b"]);
    let got = server.get(&format!("{CRONTABS}?fieldSelector=spec.image%3Dx")).await;
    assert_status(&got, 400, "BadRequest", "field label not supported: spec.image");
    // Paging with continue tokens, from storage.
    let (_, page) = server.get(&format!("{CRONTABS}?limit=1")).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (_, rest) = server.get(&format!("{CRONTABS}?limit=1&continue={token}")).await;
    assert_eq!(rest["items"][0]["metadata"]["name"], "b");
    // A watch from the first create's resourceVersion, with bookmarks, through the cache.
    let mut watch =
        Watch::open(&server, &format!("{CRONTABS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true")).await;
    assert_eq!(watch.status, 200);
    let (_, patched) = server
        .send("PATCH", &format!("{CRONTABS}/a"), "application/merge-patch+json", r#"{"spec":{"replicas":6}}"#)
        .await;
    let until: i64 = patched["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let events: Vec<(String, String, i64)> =
        watch.until_rv(until, Duration::from_secs(10)).await.iter().map(summary).collect();
    assert_eq!(
        events.iter().map(|(t, n, _)| (t.as_str(), n.as_str())).collect::<Vec<_>>(),
        [("ADDED", "b"), ("MODIFIED", "a")]
    );
    // Bookmarks, as the watch asked for them.
    server.debug("bookmarks?interval=1s").await;
    let bookmark = watch.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!((&bookmark["type"], &bookmark["object"]["kind"]), (&json!("BOOKMARK"), &json!("CronTab")), "{bookmark}");
    // A resourceVersion the cache no longer has is 410, as for built-ins.
    server.debug("compact").await;
    server.debug("cache/reset?group=stable.example.com&resource=crontabs").await;
    let got: Value = wait_until(Duration::from_secs(5), || async {
        let mut watch = Watch::open(&server, &format!("{CRONTABS}?watch=1&resourceVersion={rv}")).await;
        if watch.status != 200 {
            return None;
        }
        watch.next(Duration::from_secs(5)).await
    })
    .await;
    assert_eq!((&got["type"], &got["object"]["code"]), (&json!("ERROR"), &json!(410)), "{got}");
}
