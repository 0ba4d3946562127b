//! Server-side apply as a client sees it: the spec's examples (§4) and the
//! assertions of its test list (§7).

use listwatch_gocompat::json::{Escaping, marshal};
use serde_json::{Value, json};

use super::*;
use crate::builtin_schema;

const T1: &str = "2024-05-01T10:00:01Z";
const T2: &str = "2024-05-01T10:00:02Z";
const T3: &str = "2024-05-01T10:00:03Z";
const T4: &str = "2024-05-01T10:00:04Z";

fn deployment_schema() -> crate::TableSchema {
    builtin_schema("Deployment").unwrap()
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
}

fn apply_deployment(
    live: Option<&Value>,
    spec: Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    apply(live, &deployment(spec), manager, force, &deployment_schema(), now)
}

/// The managedFields entries as (manager, operation, FieldsV1 text).
fn owners(object: &Value) -> Vec<(String, String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                        serde_json::to_string(&e["fieldsV1"]).unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn owner(manager: &str, operation: &str, fields: &str) -> (String, String, String) {
    (manager.to_owned(), operation.to_owned(), fields.to_owned())
}

#[test]
fn apply_creates_with_one_apply_entry() {
    let created = apply_deployment(None, json!({"replicas": 3}), "m1", false, T1).unwrap();
    assert_eq!(created["spec"]["replicas"], 3);
    assert_eq!(
        created["metadata"]["managedFields"],
        json!([{"manager": "m1", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}])
    );
}

#[test]
fn two_managers_own_different_fields() {
    let one = apply_deployment(None, json!({"replicas": 3}), "m1", false, T1).unwrap();
    let two = apply_deployment(Some(&one), json!({"minReadySeconds": 5}), "m2", false, T2).unwrap();
    assert_eq!(two["spec"], json!({"replicas": 3, "minReadySeconds": 5}));
    assert_eq!(
        owners(&two),
        [
            owner("m1", "Apply", r#"{"f:spec":{"f:replicas":{}}}"#),
            owner("m2", "Apply", r#"{"f:spec":{"f:minReadySeconds":{}}}"#)
        ]
    );
}

#[test]
fn a_changed_field_of_another_applier_conflicts() {
    let one = apply_deployment(None, json!({"replicas": 3}), "m1", false, T1).unwrap();
    let error = apply_deployment(Some(&one), json!({"replicas": 5}), "m2", false, T2).unwrap_err();
    assert_eq!(error.http_status(), 409);
    assert_eq!(error.to_string(), r#"Apply failed with 1 conflict: conflict with "m1": .spec.replicas"#);
    assert_eq!(
        error.causes(),
        [json!({"reason": "FieldManagerConflict", "message": "conflict with \"m1\"", "field": ".spec.replicas"})]
    );
    assert_eq!(error.status()["reason"], "Conflict");
}

#[test]
fn several_conflicts_are_listed_by_manager() {
    let schema = deployment_schema();
    let one = apply_deployment(None, json!({"replicas": 3, "paused": false}), "m1", false, T1).unwrap();
    let labelled = crate::json_merge_patch(&one, &json!({"metadata": {"labels": {"a": "b"}}}));
    let edited = update(&one, &labelled, "kubectl-edit", None, &schema, T2);
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns", "labels": {"a": "c"}},
        "spec": {"replicas": 4, "paused": true}});
    let error = apply(Some(&edited), &config, "m2", false, &schema, T3).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"kubectl-edit\" using apps/v1:\n- .metadata.labels.a\n\
         conflicts with \"m1\":\n- .spec.paused\n- .spec.replicas"
    );
    let fields: Vec<Value> = error.causes().iter().map(|c| c["field"].clone()).collect();
    assert_eq!(fields, [json!(".metadata.labels.a"), json!(".spec.paused"), json!(".spec.replicas")]);
}

#[test]
fn force_takes_ownership_and_a_dropped_field_stays_while_owned() {
    let one = apply_deployment(None, json!({"replicas": 3, "paused": false}), "m1", false, T1).unwrap();
    let forced = apply_deployment(Some(&one), json!({"replicas": 5}), "m2", true, T2).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    assert_eq!(
        owners(&forced),
        [
            owner("m1", "Apply", r#"{"f:spec":{"f:paused":{}}}"#),
            owner("m2", "Apply", r#"{"f:spec":{"f:replicas":{}}}"#)
        ]
    );
    // m1 drops replicas (which it no longer owns) and paused (which it alone owns).
    let dropped = apply_deployment(Some(&forced), json!({"minReadySeconds": 1}), "m1", false, T3).unwrap();
    assert_eq!(dropped["spec"], json!({"replicas": 5, "minReadySeconds": 1}));
}

#[test]
fn a_shared_field_is_removed_when_its_last_applier_drops_it() {
    let one = apply_deployment(None, json!({"replicas": 3, "paused": true}), "m1", false, T1).unwrap();
    // Applying the live value is no conflict: m2 shares the field. The
    // object does not change, so kube records no time for m2.
    let shared = apply_deployment(Some(&one), json!({"replicas": 3}), "m2", false, T2).unwrap();
    assert_eq!(shared["spec"], one["spec"]);
    let entries = read_entries(&shared).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!((entries[0].manager.as_str(), entries[0].time.as_deref()), ("m2", None));
    let m1_dropped = apply_deployment(Some(&shared), json!({"paused": true}), "m1", false, T3).unwrap();
    assert_eq!(m1_dropped["spec"]["replicas"], 3);
    let both_dropped = apply_deployment(Some(&m1_dropped), json!({"minReadySeconds": 2}), "m2", false, T4).unwrap();
    assert_eq!(both_dropped["spec"], json!({"paused": true, "minReadySeconds": 2}));
}

#[test]
fn a_dropped_field_owned_by_an_updater_stays() {
    let schema = deployment_schema();
    let one = apply_deployment(None, json!({"replicas": 3, "paused": true}), "m1", false, T1).unwrap();
    let mut edited = one.clone();
    edited["spec"]["paused"] = json!(false);
    let edited = update(&one, &edited, "kubectl-edit", None, &schema, T2);
    assert_eq!(
        owners(&edited),
        [
            owner("m1", "Apply", r#"{"f:spec":{"f:replicas":{}}}"#),
            owner("kubectl-edit", "Update", r#"{"f:spec":{"f:paused":{}}}"#)
        ]
    );
    let reapplied = apply_deployment(Some(&edited), json!({"replicas": 3}), "m1", false, T3).unwrap();
    assert_eq!(reapplied["spec"], json!({"replicas": 3, "paused": false}));
}

#[test]
fn update_after_apply_moves_ownership() {
    let schema = deployment_schema();
    let one = apply_deployment(None, json!({"replicas": 3}), "m1", false, T1).unwrap();
    let mut scaled = one.clone();
    scaled["spec"]["replicas"] = json!(4);
    let scaled = update(&one, &scaled, "kubectl-edit", None, &schema, T2);
    assert_eq!(owners(&scaled), [owner("kubectl-edit", "Update", r#"{"f:spec":{"f:replicas":{}}}"#)]);
    assert_eq!(scaled["metadata"]["managedFields"][0]["apiVersion"], "apps/v1");
    assert_eq!(scaled["metadata"]["managedFields"][0]["time"], T2);
    let error = apply_deployment(Some(&scaled), json!({"replicas": 3}), "m1", false, T3).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn containers_merge_by_name() {
    let nginx = json!({"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}}});
    let one = apply_deployment(None, nginx, "m1", false, T1).unwrap();
    let sidecar = json!({"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy"}]}}});
    let two = apply_deployment(Some(&one), sidecar, "m2", false, T2).unwrap();
    let upgraded = json!({"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:2"}]}}});
    let three = apply_deployment(Some(&two), upgraded, "m1", false, T3).unwrap();
    assert_eq!(
        three["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:2"}, {"name": "sidecar", "image": "envoy"}])
    );
    let conflicting = json!({"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:3"}]}}});
    let error = apply_deployment(Some(&three), conflicting, "m2", false, T4).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "m1": .spec.template.spec.containers[name="nginx"].image"#
    );
    // m2 drops its container: it goes, m1's stays.
    let gone = apply_deployment(Some(&three), json!({"paused": true}), "m2", false, T4).unwrap();
    assert_eq!(gone["spec"]["template"]["spec"]["containers"], json!([{"name": "nginx", "image": "nginx:2"}]));
}

#[test]
fn fields_v1_of_a_pod_is_kubes() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}});
    let created = apply(None, &pod, "kubectl", false, &builtin_schema("Pod").unwrap(), T1).unwrap();
    assert_eq!(
        serde_json::to_string(&created["metadata"]["managedFields"][0]["fieldsV1"]).unwrap(),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}"#
    );
}

#[test]
fn fields_v1_of_the_docs_config_map() {
    // The ConfigMap of the server-side apply documentation.
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
        "data": {"key": "some value"}});
    let created = apply(None, &config_map, "kubectl", false, &builtin_schema("ConfigMap").unwrap(), T1).unwrap();
    assert_eq!(
        serde_json::to_string(&created["metadata"]["managedFields"]).unwrap(),
        r#"[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-05-01T10:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}}]"#
    );
}

#[test]
fn lists_merge_by_schema() {
    let schema = builtin_schema("Service").unwrap();
    let service = |ports: Value, finalizers: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "finalizers": finalizers}, "spec": {"ports": ports}});
    let one = apply(None, &service(json!([{"port": 80}]), json!(["a/x"])), "m1", false, &schema, T1).unwrap();
    let two =
        apply(Some(&one), &service(json!([{"port": 80, "protocol": "UDP"}]), json!(["b/y"])), "m2", false, &schema, T2)
            .unwrap();
    // Ports are keyed by port and protocol (TCP by default): two items; finalizers are a set.
    assert_eq!(two["spec"]["ports"], json!([{"port": 80}, {"port": 80, "protocol": "UDP"}]));
    assert_eq!(two["metadata"]["finalizers"], json!(["a/x", "b/y"]));
    assert_eq!(
        owners(&two)[1].2,
        r#"{"f:metadata":{"f:finalizers":{"v:\"b/y\"":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"UDP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}"#
    );
}

#[test]
fn maps_merge_and_drop_what_the_applier_dropped() {
    let schema = builtin_schema("ConfigMap").unwrap();
    let config_map =
        |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    let one = apply(None, &config_map(json!({"a": "1", "b": "2"})), "m1", false, &schema, T1).unwrap();
    let two = apply(Some(&one), &config_map(json!({"c": "3"})), "m2", false, &schema, T2).unwrap();
    let three = apply(Some(&two), &config_map(json!({"a": "1"})), "m1", false, &schema, T3).unwrap();
    assert_eq!(three["data"], json!({"a": "1", "c": "3"}));
    let four = apply(Some(&three), &config_map(json!({"a": "1"})), "m2", false, &schema, T4).unwrap();
    assert_eq!(four["data"], json!({"a": "1"}));
}

#[test]
fn an_unchanged_apply_changes_nothing() {
    let one = apply_deployment(None, json!({"replicas": 3}), "m1", false, T1).unwrap();
    let again = apply_deployment(Some(&one), json!({"replicas": 3}), "m1", false, T2).unwrap();
    assert_eq!(again, one);
}

#[test]
fn an_untracked_object_is_owned_before_first_apply() {
    let schema = builtin_schema("ConfigMap").unwrap();
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u1"}, "data": {"a": "1", "b": "2"}});
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "changed"}});
    let error = apply(Some(&live), &config, "m1", false, &schema, T1).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
    let forced = apply(Some(&live), &config, "m1", true, &schema, T1).unwrap();
    assert_eq!(
        owners(&forced),
        [
            owner("m1", "Apply", r#"{"f:data":{"f:a":{}}}"#),
            owner("before-first-apply", "Update", r#"{"f:data":{".":{},"f:b":{}}}"#)
        ]
    );
}

#[test]
fn updates_track_only_tracked_objects() {
    let schema = builtin_schema("ConfigMap").unwrap();
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    let created =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u1"}, "data": {"a": "1"}});
    // A create is tracked.
    let created = update(&empty, &created, "kubectl-create", None, &schema, T1);
    assert_eq!(owners(&created), [owner("kubectl-create", "Update", r#"{"f:data":{".":{},"f:a":{}}}"#)]);
    // A second update by the same manager joins its entry; the time moves.
    let mut edited = created.clone();
    edited["data"]["b"] = json!("2");
    let edited = update(&created, &edited, "kubectl-create", None, &schema, T2);
    assert_eq!(owners(&edited), [owner("kubectl-create", "Update", r#"{"f:data":{".":{},"f:a":{},"f:b":{}}}"#)]);
    assert_eq!(edited["metadata"]["managedFields"][0]["time"], T2);
    // `[]` in the body resets them; an update of an untracked object keeps none.
    let mut reset = edited.clone();
    reset["metadata"]["managedFields"] = json!([]);
    let reset = update(&edited, &reset, "m", None, &schema, T3);
    assert!(reset["metadata"].get("managedFields").is_none());
    let mut again = reset.clone();
    again["data"]["c"] = json!("3");
    assert!(update(&reset, &again, "m", None, &schema, T4)["metadata"].get("managedFields").is_none());
    // A client may write managedFields itself.
    let mut written = edited.clone();
    written["metadata"]["managedFields"][0]["manager"] = json!("someone");
    let written = update(&edited, &written, "m", None, &schema, T4);
    assert_eq!(owners(&written)[0].0, "someone");
}

#[test]
fn update_entries_are_capped() {
    let schema = builtin_schema("ConfigMap").unwrap();
    let mut object = update(
        &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "data": {}}),
        "creator",
        None,
        &schema,
        T1,
    );
    for i in 0..11 {
        let mut next = object.clone();
        next["data"][format!("k{i}")] = json!("v");
        object = update(&object, &next, &format!("writer-{i:02}"), None, &schema, &format!("2024-05-01T11:00:{i:02}Z"));
    }
    let entries = read_entries(&object).unwrap();
    assert_eq!(entries.len(), MAX_UPDATE_MANAGERS);
    let managers: Vec<&str> = entries.iter().map(|e| e.manager.as_str()).collect();
    assert!(managers.contains(&ANCIENT_CHANGES) && !managers.contains(&"creator") && !managers.contains(&"writer-00"));
}

#[test]
fn kubectl_moves_from_client_side_apply_without_conflicts() {
    let schema = deployment_schema();
    let config = |image: &str| {
        deployment(json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}))
    };
    // What client-side `kubectl apply` creates: the configuration plus the annotation.
    let mut created = config("app:1");
    created["metadata"]["uid"] = json!("u1");
    created["metadata"]["annotations"] =
        json!({LAST_APPLIED_ANNOTATION: marshal(&config("app:1"), Escaping::JsonIterator) + "\n"});
    let empty = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
    let live = update(&empty, &created, KUBECTL_CLIENT_SIDE_APPLY, None, &schema, T1);

    // Another manager conflicts with client-side apply's fields…
    let error = apply(Some(&live), &config("app:2"), "other", false, &schema, T2).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.template.spec.containers[name="app"].image"#
    );
    // …kubectl does not, and the annotation follows the new configuration.
    let applied = apply(Some(&live), &config("app:2"), KUBECTL, false, &schema, T2).unwrap();
    assert_eq!(applied["spec"]["template"]["spec"]["containers"][0]["image"], "app:2");
    assert_eq!(
        applied["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\",\"namespace\":\"ns\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"image\":\"app:2\",\"name\":\"app\"}]}}}}\n"
    );
    let entries = read_entries(&applied).unwrap();
    assert_eq!((entries[0].manager.as_str(), entries[0].operation), (KUBECTL, Operation::Apply));
    assert!(!entries[1].fields.has(&[
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::key([("name".to_owned(), json!("app"))]),
        PathElement::field("image"),
    ]));

    // A field changed since the last client-side apply still conflicts.
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(7);
    let edited = update(&live, &edited, "kubectl-edit", None, &schema, T3);
    let error = apply(Some(&edited), &config("app:2"), KUBECTL, false, &schema, T4).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn invalid_configurations_fail_as_in_kube() {
    let schema = deployment_schema();
    let missing_kind = apply(None, &json!({"metadata": {"name": "d"}}), "m", false, &schema, T1).unwrap_err();
    assert_eq!((missing_kind.http_status(), missing_kind.to_string().as_str()), (400, "invalid object type: /, Kind="));
    let manager = FieldManager::new(&schema, "apps/v1", "Deployment");
    let wrong =
        manager.apply(None, &json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}), "m", false, T1).unwrap_err();
    assert_eq!(wrong.to_string(), "invalid object type: apps/v1beta1, Kind=Deployment");

    let mut with_managed = deployment(json!({}));
    with_managed["metadata"]["managedFields"] = json!([]);
    let error = apply(None, &with_managed, "m", false, &schema, T1).unwrap_err();
    assert_eq!((error.http_status(), error.to_string().as_str()), (400, "metadata.managedFields must be nil"));

    let no_name = deployment(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
    let error = apply(None, &no_name, "m", false, &schema, T1).unwrap_err();
    assert_eq!(error.http_status(), 500);
    assert_eq!(error.status_reason(), "");
    assert_eq!(
        error.to_string(),
        r#"failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
    );
    let duplicates = deployment(json!({"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}));
    let error = apply(None, &duplicates, "m", false, &schema, T1).unwrap_err();
    assert!(error.to_string().ends_with(r#".spec.template.spec.containers: duplicate entries for key [name="a"]"#));
}

#[test]
fn custom_resources_use_their_openapi_schema() {
    let schema = OpenApiSchema::new(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "cronSpec": {"type": "string"}, "replicas": {"type": "integer"},
        "args": {"type": "array", "items": {"type": "string"}}}}}}));
    let crontab = |spec: Value| json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c1"}, "spec": spec});
    let created =
        apply(None, &crontab(json!({"cronSpec": "* * * * */5", "args": ["a"]})), "m1", false, &schema, T1).unwrap();
    assert_eq!(owners(&created), [owner("m1", "Apply", r#"{"f:spec":{"f:args":{},"f:cronSpec":{}}}"#)]);
    // Lists without a list type are atomic: one owner, replaced whole.
    let error = apply(Some(&created), &crontab(json!({"args": ["b"]})), "m2", false, &schema, T2).unwrap_err();
    assert_eq!(error.to_string(), r#"Apply failed with 1 conflict: conflict with "m1": .spec.args"#);
    let error = apply(None, &crontab(json!({"foo": 1})), "m1", false, &schema, T1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to create typed patch object (/c1; stable.example.com/v1, Kind=CronTab): .spec.foo: field not declared in schema"
    );
}

#[test]
fn status_subresource_entries_carry_it() {
    let schema = deployment_schema();
    let live = apply_deployment(None, json!({"replicas": 1}), "m1", false, T1).unwrap();
    let status = FieldManager::new(&schema, "apps/v1", "Deployment")
        .with_subresource("status")
        .with_reset_fields(FieldSet::from_dotted(&["spec", "metadata"]));
    let mut config = deployment(json!({"replicas": 9}));
    config["status"] = json!({"readyReplicas": 1});
    let applied = status.apply(Some(&live), &config, "controller", false, T2).unwrap();
    let entries = read_entries(&applied).unwrap();
    let controller = entries.iter().find(|e| e.manager == "controller").unwrap();
    assert_eq!(controller.subresource, "status");
    assert_eq!(
        serde_json::to_string(&controller.fields.to_fields_v1()).unwrap(),
        r#"{"f:status":{"f:readyReplicas":{}}}"#
    );
}

#[test]
fn after_kubectls_upgrade_a_dropped_field_is_pruned() {
    let schema = deployment_schema();
    let config = |spec: Value| deployment(spec);
    let first = json!({"replicas": 2, "paused": true});
    let mut created = config(first.clone());
    created["metadata"]["uid"] = json!("u1");
    created["metadata"]["resourceVersion"] = json!("5");
    created["metadata"]["annotations"] =
        json!({LAST_APPLIED_ANNOTATION: marshal(&config(first.clone()), Escaping::JsonIterator) + "\n"});
    let live = update(
        &json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        &created,
        KUBECTL_CLIENT_SIDE_APPLY,
        None,
        &schema,
        T1,
    );
    let applied = apply(Some(&live), &config(first), KUBECTL, false, &schema, T2).unwrap();
    // Without the upgrade, client-side apply still owns `paused`: dropping it keeps it.
    let kept = apply(Some(&applied), &config(json!({"replicas": 2})), KUBECTL, false, &schema, T3).unwrap();
    assert_eq!(kept["spec"]["paused"], true);

    let patch = upgrade_managed_fields_patch(&applied, &[KUBECTL_CLIENT_SIDE_APPLY], KUBECTL, "").unwrap().unwrap();
    assert_eq!(patch[1], json!({"op": "replace", "path": "/metadata/resourceVersion", "value": "5"}));
    let patched = crate::json_patch(&applied, &patch).unwrap();
    let upgraded = update(&applied, &patched, "kubectl-patch", None, &schema, T3);
    let entries = read_entries(&upgraded).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].manager.as_str(), entries[0].operation), (KUBECTL, Operation::Apply));
    assert!(upgrade_managed_fields_patch(&upgraded, &[KUBECTL_CLIENT_SIDE_APPLY], KUBECTL, "").unwrap().is_none());

    let pruned = apply(Some(&upgraded), &config(json!({"replicas": 2})), KUBECTL, false, &schema, T4).unwrap();
    assert_eq!(pruned["spec"], json!({"replicas": 2}));
}
