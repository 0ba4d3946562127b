//! What a pod and a Deployment may become after they are created, as kube-apiserver 1.32
//! decides it: a pod keeps its spec but for its images (and a few other fields), a Deployment
//! keeps its selector while its template changes freely; an immutable ConfigMap keeps its data.
//! The allowed updates succeed, the others are kube's 422 and change nothing.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(pods_keep_their_spec, deployments_keep_their_selector, immutable_config_maps_keep_their_data);

const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

async fn patch(server: &Server, path: &str, content_type: &str, body: Value) -> (u16, Value) {
    server.send("PATCH", path, content_type, body.to_string()).await
}

fn resource_version(object: &Value) -> &str {
    object["metadata"]["resourceVersion"].as_str().expect("a resourceVersion")
}

#[track_caller]
fn assert_invalid(got: &(u16, Value), message: &str, field: &str, reason: &str) {
    let (code, body) = got;
    assert_eq!(*code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert!(body["message"].as_str().unwrap_or("").starts_with(message), "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], field, "{body}");
    assert_eq!(body["details"]["causes"][0]["reason"], reason, "{body}");
}

async fn pods_keep_their_spec(backend: Backend) {
    let server = Server::start("workloads-pods", backend, &[]).await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx:1"}]}});
    let (code, created) = server.post_json(PODS, &pod).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{PODS}/p");
    // Images and labels may change.
    let image =
        patch(&server, &path, STRATEGIC, json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}})).await;
    assert_eq!(image.0, 200, "{}", image.1);
    assert_eq!(image.1["spec"]["containers"][0]["image"], "nginx:2");
    let labelled = patch(&server, &path, MERGE, json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(labelled.0, 200, "{}", labelled.1);
    // A PUT of what was read back changes nothing it may not.
    let (code, current) = server.get(&path).await;
    assert_eq!(code, 200);
    let same = server.send("PUT", &path, "application/json", current.to_string()).await;
    assert_eq!(same.0, 200, "{}", same.1);
    // The node, the containers: kube's Forbidden, nothing written.
    let moved = patch(&server, &path, MERGE, json!({"spec": {"nodeName": "node-2"}})).await;
    assert_invalid(
        &moved,
        "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n",
        "spec",
        "FieldValueForbidden",
    );
    let added = patch(
        &server,
        &path,
        MERGE,
        json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}, {"name": "d", "image": "busybox"}]}}),
    )
    .await;
    assert_eq!(
        added.1["message"],
        "Pod \"p\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );
    let (_, after) = server.get(&path).await;
    assert_eq!(resource_version(&after), resource_version(&same.1));
    assert_eq!(after["spec"]["nodeName"], "node-1");
}

fn deployment(app: &str, image: &str) -> Value {
    json!({
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": image}]}}
        }
    })
}

async fn deployments_keep_their_selector(backend: Backend) {
    let server = Server::start("workloads-deployments", backend, &[]).await;
    let (code, created) = server.post_json(DEPLOYMENTS, &deployment("web", "nginx:1")).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{DEPLOYMENTS}/d");
    // The template may change, within the selector.
    let image = server.send("PUT", &path, "application/json", deployment("web", "nginx:2").to_string()).await;
    assert_eq!(image.0, 200, "{}", image.1);
    let labelled =
        patch(&server, &path, MERGE, json!({"spec": {"template": {"metadata": {"labels": {"tier": "a"}}}}})).await;
    assert_eq!(labelled.0, 200, "{}", labelled.1);
    // Out of the selector, or another selector: 422.
    let outside =
        patch(&server, &path, MERGE, json!({"spec": {"template": {"metadata": {"labels": {"app": "other"}}}}})).await;
    assert_eq!(
        outside.1["message"],
        "Deployment.apps \"d\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\", \"tier\":\"a\"}: `selector` does not match template `labels`"
    );
    let moved = server.send("PUT", &path, "application/json", deployment("api", "nginx:2").to_string()).await;
    assert_eq!(
        moved.1["message"],
        "Deployment.apps \"d\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"api\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
    let (_, after) = server.get(&path).await;
    assert_eq!(resource_version(&after), resource_version(&labelled.1));
}

async fn immutable_config_maps_keep_their_data(backend: Backend) {
    let server = Server::start("workloads-immutable", backend, &[]).await;
    let cm = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"k": "v"}});
    let (code, created) = server.post_json(CMS, &cm).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{CMS}/c");
    // Metadata may change; the data, the flag and binaryData may not.
    let labelled = patch(&server, &path, MERGE, json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(labelled.0, 200, "{}", labelled.1);
    let changed = patch(&server, &path, MERGE, json!({"immutable": null, "binaryData": {"b": "AA=="}})).await;
    assert_eq!(
        changed.1["message"],
        "ConfigMap \"c\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, binaryData: Forbidden: field is immutable when `immutable` is set]"
    );
    let (_, after) = server.get(&path).await;
    assert_eq!(resource_version(&after), resource_version(&labelled.1));
    // Deleting it is fine.
    assert_eq!(server.send("DELETE", &path, "application/json", "").await.0, 200);
}
