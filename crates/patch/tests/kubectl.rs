//! The strategic merge patches kubectl 1.32 sends for built-in kinds,
//! applied with the built-in schemas to live objects shaped as
//! kube-apiserver returns them (defaults filled in).
//!
//! The patches are written as kubectl computes them: `apply` sends a
//! three-way patch (last-applied configuration, new manifest, live object)
//! whose lists of changed merging lists carry `$setElementOrder/<field>`
//! and whose removed items are `{"$patch": "delete", <key>: ...}` entries
//! after the changed ones; maps of Go are marshalled with sorted keys.

use listwatch_patch::{PatchError, apply, builtin_schema, json_merge_patch, json_patch};
use serde_json::{Value, json};

fn schema(kind: &str) -> listwatch_patch::TableSchema {
    builtin_schema(kind).expect("built-in kind")
}

fn container(name: &str, image: &str, env: Value) -> Value {
    json!({
        "name": name,
        "image": image,
        "env": env,
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    })
}

fn live_deployment(containers: Value, last_applied: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "5d1c2a4e-1111-2222-3333-444455556666",
            "resourceVersion": "1042",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "annotations": {
                "deployment.kubernetes.io/revision": "1",
                "kubectl.kubernetes.io/last-applied-configuration": last_applied
            }
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": containers,
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 2,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
            ]
        }
    })
}

/// Re-applying a deployment manifest that changes one container (new image,
/// env var `A` removed, `B` changed, `C` added) and drops the other.
#[test]
fn kubectl_apply_changes_one_container_and_removes_another() {
    let old_manifest = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A","value":"a"},{"name":"B","value":"b"}],"image":"app:v1","name":"app","ports":[{"containerPort":8080}]},{"image":"sidecar:v1","name":"old"}]}}}}"#;
    let new_manifest = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"B","value":"b2"},{"name":"C","value":"c"}],"image":"app:v2","name":"app","ports":[{"containerPort":8080}]}]}}}}"#;
    let live = live_deployment(
        json!([
            container("app", "app:v1", json!([{"name": "A", "value": "a"}, {"name": "B", "value": "b"}])),
            {
                "name": "old",
                "image": "sidecar:v1",
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"
            }
        ]),
        &format!("{old_manifest}\n"),
    );

    // What `kubectl apply` computes with CreateThreeWayMergePatch.
    let patch: Value = serde_json::from_str(&format!(
        r#"{{"metadata":{{"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":{}}}}},"spec":{{"template":{{"spec":{{"$setElementOrder/containers":[{{"name":"app"}}],"containers":[{{"$setElementOrder/env":[{{"name":"B"}},{{"name":"C"}}],"env":[{{"name":"B","value":"b2"}},{{"name":"C","value":"c"}},{{"$patch":"delete","name":"A"}}],"image":"app:v2","name":"app"}},{{"$patch":"delete","name":"old"}}]}}}}}}}}"#,
        serde_json::to_string(&format!("{new_manifest}\n")).unwrap()
    ))
    .unwrap();

    let result = apply(&live, &patch, &schema("Deployment")).unwrap();

    let mut expected = live_deployment(
        json!([container("app", "app:v2", json!([{"name": "B", "value": "b2"}, {"name": "C", "value": "c"}]))]),
        &format!("{new_manifest}\n"),
    );
    assert_eq!(result, expected);
    // Beyond equality: nothing moved. The live object's key order is kept
    // and the merged container keeps its fields where they were.
    assert_eq!(serde_json::to_string(&result).unwrap(), serde_json::to_string(&expected).unwrap());

    // Applying the same manifest again is a no-op patch (only the
    // annotation, unchanged); the object stays the same.
    let again = json!({"metadata": {"annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": format!("{new_manifest}\n")
    }}});
    assert_eq!(apply(&result, &again, &schema("Deployment")).unwrap(), result);

    // A manifest that adds the sidecar back, before the app container.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "old"}, {"name": "app"}],
        "containers": [{"image": "sidecar:v2", "name": "old"}]
    }}}});
    let result = apply(&result, &patch, &schema("Deployment")).unwrap();
    let names: Vec<&str> = result["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old", "app"]);
    expected["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"image": "sidecar:v2", "name": "old"}));
    assert_eq!(result["spec"]["template"]["spec"]["containers"], expected["spec"]["template"]["spec"]["containers"]);
}

#[test]
fn kubectl_scale_label_annotate_and_set_image() {
    let live = live_deployment(json!([container("app", "app:v1", json!([]))]), "{}");
    let deployment = schema("Deployment");

    // kubectl scale --replicas=5 (scale subresource patches are similar).
    let scaled = apply(&live, &json!({"spec": {"replicas": 5}}), &deployment).unwrap();
    assert_eq!(scaled["spec"]["replicas"], 5);

    // kubectl label deployment web tier=front; then tier- removes it.
    let labelled = apply(&live, &json!({"metadata": {"labels": {"tier": "front"}}}), &deployment).unwrap();
    assert_eq!(labelled["metadata"]["labels"], json!({"app": "web", "tier": "front"}));
    let unlabelled = apply(&labelled, &json!({"metadata": {"labels": {"tier": null}}}), &deployment).unwrap();
    assert_eq!(unlabelled, live);

    // kubectl annotate.
    let annotated = apply(&live, &json!({"metadata": {"annotations": {"note": "x"}}}), &deployment).unwrap();
    assert_eq!(annotated["metadata"]["annotations"]["note"], "x");
    assert_eq!(annotated["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");

    // kubectl set image deployment/web app=app:v3.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{"image": "app:v3", "name": "app"}]
    }}}});
    let updated = apply(&live, &patch, &deployment).unwrap();
    let app = &updated["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(app["image"], "app:v3");
    assert_eq!(app["imagePullPolicy"], "IfNotPresent");
    assert_eq!(app["ports"], json!([{"containerPort": 8080, "protocol": "TCP"}]));

    // kubectl rollout: switching to the Recreate strategy clears rollingUpdate.
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let recreate = apply(&live, &patch, &deployment).unwrap();
    assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn pod_lists_merge_by_their_keys() {
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "finalizers": ["example.com/a"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}]
        },
        "spec": {
            "containers": [{
                "name": "app",
                "image": "app:v1",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]}
    });
    let pod_schema = schema("Pod");

    let patch = json!({
        "metadata": {
            "finalizers": ["example.com/b", "example.com/a"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"}]
        },
        "spec": {
            "containers": [{"name": "app", "ports": [{"containerPort": 443, "name": "https"}]}],
            "tolerations": [{"key": "b", "operator": "Exists"}],
            "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"}, "name": "data"}]
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    });
    let result = apply(&pod, &patch, &pod_schema).unwrap();
    // Finalizers merge as a set; the patch's order comes first where it can.
    assert_eq!(result["metadata"]["finalizers"], json!(["example.com/b", "example.com/a"]));
    assert_eq!(result["metadata"]["ownerReferences"].as_array().unwrap().len(), 2);
    assert_eq!(
        result["spec"]["containers"][0]["ports"],
        json!([
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 443, "protocol": "TCP", "name": "https"}
        ])
    );
    assert_eq!(result["spec"]["containers"][0]["volumeMounts"], pod["spec"]["containers"][0]["volumeMounts"]);
    // Tolerations have no merge key: replaced.
    assert_eq!(result["spec"]["tolerations"], json!([{"key": "b", "operator": "Exists"}]));
    // $retainKeys turned the emptyDir volume into a configMap one.
    assert_eq!(result["spec"]["volumes"], json!([{"name": "data", "configMap": {"name": "cfg"}}]));
    assert_eq!(
        result["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}])
    );

    // Removing a finalizer the way kubectl edit does.
    let patch = json!({"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["example.com/a"],
        "$setElementOrder/finalizers": ["example.com/b"]
    }});
    let result = apply(&result, &patch, &pod_schema).unwrap();
    assert_eq!(result["metadata"]["finalizers"], json!(["example.com/b"]));

    // A container patch without its merge key is kube's 500.
    let error = apply(&pod, &json!({"spec": {"containers": [{"image": "x"}]}}), &pod_schema).unwrap_err();
    assert_eq!(error, PatchError::Merge("map: map[image:x] does not contain declared merge key: name".into()));
    assert_eq!(error.http_status(), 500);
}

#[test]
fn service_ports_merge_by_port() {
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "clusterIP": "10.0.0.10",
            "ports": [
                {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443}
            ],
            "selector": {"app": "web"},
            "type": "ClusterIP"
        }
    });
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let result = apply(&service, &patch, &schema("Service")).unwrap();
    assert_eq!(result["spec"]["ports"][0], json!({"name": "http", "port": 80, "protocol": "TCP", "targetPort": 9090}));
    assert_eq!(result["spec"]["ports"][1], service["spec"]["ports"][1]);
    // The selector is a plain map: merged key by key.
    let result = apply(&service, &json!({"spec": {"selector": {"tier": "front"}}}), &schema("Service")).unwrap();
    assert_eq!(result["spec"]["selector"], json!({"app": "web", "tier": "front"}));
}

#[test]
fn kinds_without_merge_keys_replace_lists() {
    let endpoints = json!({
        "kind": "Endpoints",
        "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]
    });
    let patch = json!({"subsets": [{"addresses": [{"ip": "10.0.0.2"}]}]});
    let result = apply(&endpoints, &patch, &schema("Endpoints")).unwrap();
    assert_eq!(result["subsets"], patch["subsets"]);
    // As for custom resources with a JSON merge patch.
    assert_eq!(result, json_merge_patch(&endpoints, &patch));
    let custom = json!({"spec": {"items": [1, 2], "keep": true}});
    assert_eq!(
        apply(&custom, &json!({"spec": {"items": [3]}}), &listwatch_patch::NoSchema).unwrap(),
        json!({"spec": {"items": [3], "keep": true}})
    );
}

#[test]
fn json_patch_on_an_object() {
    let live = live_deployment(json!([container("app", "app:v1", json!([]))]), "{}");
    let patch = json!([
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": {"name": "X", "value": "1"}},
        {"op": "remove", "path": "/metadata/labels/app"}
    ]);
    let result = json_patch(&live, &patch).unwrap();
    assert_eq!(result["spec"]["replicas"], 3);
    assert_eq!(result["spec"]["template"]["spec"]["containers"][0]["env"], json!([{"name": "X", "value": "1"}]));
    assert_eq!(result["metadata"]["labels"], json!({}));
}
