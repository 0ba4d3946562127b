//! Server-side apply and managedFields as a user sees them: `kubectl apply --server-side`
//! (create, re-apply without a field, a second manager's conflict and `--force-conflicts`,
//! server dry run), client-side `kubectl apply` moved to server-side apply, raw apply patches
//! (JSON bodies, `/status`) and the `Update` entries every other write keeps.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(
    apply_creates_prunes_conflicts_and_forces,
    server_dry_run_stores_nothing,
    client_side_apply_moves_to_server_side,
    raw_apply_with_a_json_body_and_status,
    every_write_keeps_update_entries,
);

const APPLY: &str = "application/apply-patch+yaml";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  labels: {{app: demo}}\ndata: {data}\n")
}

/// A ConfigMap's managedFields as a raw GET (with `--show-managed-fields` kubectl shows the same).
async fn entries(server: &Server, path: &str) -> Vec<Value> {
    let (code, object) = server.get(path).await;
    assert_eq!(code, 200, "{object}");
    object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default()
}

/// `(manager, operation, fieldsV1)` of each entry, in the server's order.
fn owners(entries: &[Value]) -> Vec<(String, String, Value)> {
    entries
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_owned(),
                e["operation"].as_str().unwrap().to_owned(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn owner(manager: &str, operation: &str, fields: Value) -> (String, String, Value) {
    (manager.to_owned(), operation.to_owned(), fields)
}

/// Seconds since the epoch of a time in kube's form (`2026-05-01T10:00:00Z`: UTC, whole
/// seconds).
fn epoch_seconds(time: &str) -> u64 {
    let digits = |range: std::ops::Range<usize>| -> i64 { time[range].parse().unwrap() };
    assert!(time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T', "{time}");
    let (year, month, day) = (digits(0..4), digits(5..7), digits(8..10));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let seconds = days * 86_400 + digits(11..13) * 3600 + digits(14..16) * 60 + digits(17..19);
    u64::try_from(seconds).unwrap()
}

async fn apply_creates_prunes_conflicts_and_forces(backend: Backend) {
    let server = Server::start("ssa-kubectl", backend, &[]).await;
    let k = server.kubectl();
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let out = k.run_with_input(&["apply", "--server-side", "-f", "-"], &configmap("{a: '1', b: '2'}")).await.ok();
    assert_eq!(out.trim(), "configmap/demo serverside-applied");

    // One Apply entry: kube's keys and FieldsV1, a time of now in whole seconds.
    let path = format!("{CMS}/demo");
    let created = entries(&server, &path).await;
    assert_eq!(created.len(), 1, "{created:?}");
    let entry = &created[0];
    let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]);
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}));
    let time = epoch_seconds(entry["time"].as_str().unwrap());
    assert!(time >= before && time <= before + 60, "{entry}");
    let shown = k.run(&["get", "configmap", "demo", "-o", "yaml", "--show-managed-fields"]).await.ok();
    assert!(shown.contains("manager: kubectl") && shown.contains("operation: Apply"), "{shown}");

    // Re-applied without `b`: the applier owned it alone, so it is gone.
    let out = k.run_with_input(&["apply", "--server-side", "-f", "-"], &configmap("{a: '1'}")).await.ok();
    assert_eq!(out.trim(), "configmap/demo serverside-applied");
    let (_, object) = server.get(&path).await;
    assert_eq!(object["data"], json!({"a": "1"}));
    assert_eq!(object["metadata"]["managedFields"][0]["fieldsV1"]["f:data"], json!({"f:a": {}}));

    // A second manager changing `a` conflicts: kubectl prints kube's message and its advice,
    // and nothing changes.
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata: {a: changed, c: '3'}\n";
    let refused = k.run_with_input(&["apply", "--server-side", "--field-manager=other", "-f", "-"], other).await;
    assert!(!refused.success);
    assert!(
        refused.stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "kubectl": .data.a"#)
            && refused.stderr.contains("--force-conflicts"),
        "{}",
        refused.stderr
    );
    // The same over HTTP: 409 with one cause per conflicting field.
    let (code, status) = server.send("PATCH", &format!("{path}?fieldManager=other"), APPLY, other).await;
    assert_eq!((code, &status["reason"]), (409, &json!("Conflict")), "{status}");
    assert_eq!(status["message"], r#"Apply failed with 1 conflict: conflict with "kubectl": .data.a"#);
    assert_eq!(
        status["details"],
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\"", "field": ".data.a"}]})
    );
    let (_, unchanged) = server.get(&path).await;
    assert_eq!(unchanged["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"]);

    // --force-conflicts takes `a` over.
    let out = k
        .run_with_input(&["apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-"], other)
        .await
        .ok();
    assert_eq!(out.trim(), "configmap/demo serverside-applied");
    let (_, forced) = server.get(&path).await;
    assert_eq!(forced["data"], json!({"a": "changed", "c": "3"}));
    assert_eq!(
        owners(forced["metadata"]["managedFields"].as_array().unwrap()),
        [
            owner("kubectl", "Apply", json!({"f:metadata": {"f:labels": {"f:app": {}}}})),
            owner("other", "Apply", json!({"f:data": {"f:a": {}, "f:c": {}}})),
        ]
    );

    // A field two managers applied with one value stays while either still applies it.
    let out = k.run_with_input(&["apply", "--server-side", "-f", "-"], &configmap("{c: '3'}")).await.ok();
    assert_eq!(out.trim(), "configmap/demo serverside-applied");
    let other_without_c = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata: {a: changed}\n";
    k.run_with_input(&["apply", "--server-side", "--field-manager=other", "-f", "-"], other_without_c).await.ok();
    let (_, shared) = server.get(&path).await;
    assert_eq!(shared["data"], json!({"a": "changed", "c": "3"}), "kubectl still owns c");
    k.run_with_input(
        &["apply", "--server-side", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n",
    )
    .await
    .ok();
    let (_, dropped) = server.get(&path).await;
    assert_eq!(dropped["data"], json!({"a": "changed"}), "nobody owns c any more");
    assert_eq!(dropped["metadata"]["labels"], Value::Null, "kubectl dropped its label too");
}

async fn server_dry_run_stores_nothing(backend: Backend) {
    let server = Server::start("ssa-dry-run", backend, &[]).await;
    let k = server.kubectl();
    let out =
        k.run_with_input(&["apply", "--server-side", "--dry-run=server", "-f", "-"], &configmap("{a: '1'}")).await.ok();
    assert_eq!(out.trim(), "configmap/demo serverside-applied (server dry run)");
    assert_eq!(server.get(&format!("{CMS}/demo")).await.0, 404);

    // On an existing object: the answer shows the change, storage keeps the object as it was.
    k.run_with_input(&["apply", "--server-side", "-f", "-"], &configmap("{a: '1'}")).await.ok();
    let (_, stored) = server.get(&format!("{CMS}/demo")).await;
    let (code, answered) = server
        .send("PATCH", &format!("{CMS}/demo?fieldManager=kubectl&dryRun=All"), APPLY, configmap("{a: '2'}"))
        .await;
    assert_eq!(code, 200, "{answered}");
    assert_eq!(answered["data"]["a"], "2");
    let (_, after) = server.get(&format!("{CMS}/demo")).await;
    assert_eq!(after, stored);
}

const DEPLOYMENT_V1: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
      - name: sidecar
        image: busybox:1.36
";

const DEPLOYMENT_V2: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
";

async fn client_side_apply_moves_to_server_side(backend: Backend) {
    let server = Server::start("ssa-upgrade", backend, &[]).await;
    let k = server.kubectl();
    assert_eq!(k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT_V1).await.ok().trim(), "deployment.apps/web created");
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let csa = entries(&server, path).await;
    let managers: Vec<(String, String)> = owners(&csa).into_iter().map(|(m, o, _)| (m, o)).collect();
    assert_eq!(managers, [("kubectl-client-side-apply".to_owned(), "Update".to_owned())]);

    // The server-side apply takes over what client-side apply owned (no conflict), and kubectl
    // moves the client-side entry into its own: the container the new manifest leaves out goes.
    let out = k.run_with_input(&["apply", "--server-side", "-f", "-"], DEPLOYMENT_V2).await.ok();
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let (_, object) = server.get(path).await;
    assert_eq!(object["spec"]["replicas"], 3);
    let containers = object["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "{object}");
    assert_eq!((&containers[0]["name"], &containers[0]["image"]), (&json!("nginx"), &json!("nginx:1.27")));
    let managers: Vec<String> = owners(object["metadata"]["managedFields"].as_array().unwrap())
        .into_iter()
        .map(|(m, o, _)| format!("{m}/{o}"))
        .collect();
    assert!(managers.contains(&"kubectl/Apply".to_owned()), "{managers:?}");
    assert!(!managers.iter().any(|m| m.starts_with("kubectl-client-side-apply")), "{managers:?}");
    // The server keeps the last-applied annotation in step with the server-side apply.
    let last: Value = serde_json::from_str(
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(last["spec"]["replicas"], 3);
    // And client-side apply still works from there.
    let back = DEPLOYMENT_V2.replace("replicas: 3", "replicas: 4");
    assert_eq!(k.run_with_input(&["apply", "-f", "-"], &back).await.ok().trim(), "deployment.apps/web configured");
    assert_eq!(server.get(path).await.1["spec"]["replicas"], 4);
}

async fn raw_apply_with_a_json_body_and_status(backend: Backend) {
    let server = Server::start("ssa-raw", backend, &[]).await;
    let path = "/apis/apps/v1/namespaces/default/deployments/api";
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "api"}},
                 "template": {"metadata": {"labels": {"app": "api"}},
                              "spec": {"containers": [{"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]}]}}}});
    let (code, created) =
        server.send("PATCH", &format!("{path}?fieldManager=deployer"), APPLY, config.to_string()).await;
    assert_eq!(code, 201, "{created}");
    let fields = &created["metadata"]["managedFields"][0]["fieldsV1"];
    // Containers by name, ports by containerPort and the defaulted protocol.
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {},
               "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}})
    );
    // The same configuration again changes nothing: 200, same resourceVersion.
    let (code, again) = server.send("PATCH", &format!("{path}?fieldManager=deployer"), APPLY, config.to_string()).await;
    assert_eq!(code, 200, "{again}");
    assert_eq!(again["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);

    // A controller applies the status through /status; the main resource ignores status.
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
        "status": {"replicas": 1, "readyReplicas": 1}});
    let (code, with_status) =
        server.send("PATCH", &format!("{path}/status?fieldManager=controller"), APPLY, status.to_string()).await;
    assert_eq!(code, 200, "{with_status}");
    assert_eq!(with_status["status"]["readyReplicas"], 1);
    let controller = with_status["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "controller")
        .cloned()
        .expect("the controller's entry");
    assert_eq!(controller["subresource"], "status");
    assert_eq!(controller["fieldsV1"], json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}));
    let (code, ignored) = server
        .send(
            "PATCH",
            &format!("{path}?fieldManager=other"),
            APPLY,
            status.to_string().replace("\"readyReplicas\":1", "\"readyReplicas\":0"),
        )
        .await;
    assert_eq!(code, 200, "{ignored}");
    assert_eq!(ignored["status"]["readyReplicas"], 1);
    assert!(ignored["metadata"]["managedFields"].as_array().unwrap().iter().all(|e| e["manager"] != "other"));

    // An autoscaler applies a Scale: the parent's replicas are the deployer's until forced.
    let scale =
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "api"}, "spec": {"replicas": 3}});
    let scale_path = format!("{path}/scale?fieldManager=autoscaler");
    let (code, status) = server.send("PATCH", &scale_path, APPLY, scale.to_string()).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["message"], r#"Apply failed with 1 conflict: conflict with "deployer": .spec.replicas"#);
    let (code, scaled) = server.send("PATCH", &format!("{scale_path}&force=true"), APPLY, scale.to_string()).await;
    assert_eq!((code, &scaled["kind"], &scaled["spec"]["replicas"]), (200, &json!("Scale"), &json!(3)), "{scaled}");
    let got = entries(&server, path).await;
    let autoscaler = got.iter().find(|e| e["manager"] == "autoscaler").expect("the autoscaler's entry");
    assert_eq!(
        (&autoscaler["operation"], &autoscaler["apiVersion"], &autoscaler["subresource"], &autoscaler["fieldsV1"]),
        (&json!("Apply"), &json!("apps/v1"), &json!("scale"), &json!({"f:spec": {"f:replicas": {}}}))
    );
    let deployer = got.iter().find(|e| e["manager"] == "deployer").unwrap();
    assert!(deployer["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{deployer}");
}

async fn every_write_keeps_update_entries(backend: Backend) {
    let server = Server::start("ssa-updates", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], &configmap("{a: '1'}")).await.ok();
    k.run(&["label", "configmap", "demo", "tier=web"]).await.ok();
    let path = format!("{CMS}/demo");
    let got = entries(&server, &path).await;
    assert_eq!(
        owners(&got),
        [
            owner(
                "kubectl-create",
                "Update",
                json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
            ),
            owner("kubectl-label", "Update", json!({"f:metadata": {"f:labels": {"f:tier": {}}}})),
        ]
    );

    // Without fieldManager the manager is the User-Agent up to its first '/'.
    let response = server
        .http
        .patch(server.api(&path))
        .header("Content-Type", "application/merge-patch+json")
        .header("User-Agent", "my-controller/v2.1 (linux)")
        .body(r#"{"data":{"a":"2"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let got = entries(&server, &path).await;
    let mine = got.iter().find(|e| e["manager"] == "my-controller").expect("an entry for the user agent");
    assert_eq!(mine["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    // kubectl-create lost `a` to it, and keeps the map itself (a member without children).
    let create = got.iter().find(|e| e["manager"] == "kubectl-create").unwrap();
    assert_eq!(create["fieldsV1"]["f:data"], json!({}));

    // Defaults belong to the writer, as kube defaults while decoding, before its field manager.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (code, created) = server.post_json("/api/v1/namespaces/default/pods?fieldManager=creator", &pod).await;
    assert_eq!(code, 201, "{created}");
    let spec = &created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    for defaulted in ["f:dnsPolicy", "f:restartPolicy", "f:schedulerName", "f:terminationGracePeriodSeconds"] {
        assert!(spec.get(defaulted).is_some(), "{defaulted} in {spec}");
    }
    assert!(spec["f:containers"]["k:{\"name\":\"c\"}"].get("f:imagePullPolicy").is_some(), "{spec}");

    // Managed fields a client writes replace the stored ones when they are valid, and are
    // ignored (the stored ones kept) when not.
    let bogus = json!({"metadata": {"managedFields": [{"manager": "x", "operation": "Bogus", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {}}]}, "data": {"a": "3"}});
    let (code, body) = server
        .send("PATCH", &format!("{path}?fieldManager=fixer"), "application/merge-patch+json", bogus.to_string())
        .await;
    assert_eq!(code, 200, "{body}");
    let mut managers: Vec<String> = owners(&entries(&server, &path).await).into_iter().map(|(m, _, _)| m).collect();
    // (Entries of one second are in manager order; these may span two.)
    managers.sort();
    assert_eq!(managers, ["fixer", "kubectl-create", "kubectl-label"], "my-controller lost `a` to fixer");
    let imported = json!({"metadata": {"managedFields": [{"manager": "imported", "operation": "Update", "apiVersion": "v1",
        "time": "2020-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]}});
    let (code, body) = server.send("PATCH", &path, "application/merge-patch+json", imported.to_string()).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(entries(&server, &path).await, imported["metadata"]["managedFields"].as_array().unwrap().clone());

    // At most ten Update entries: the oldest fold into `ancient-changes`.
    for i in 0..11 {
        let patch = json!({"metadata": {"annotations": {format!("n{i}"): "x"}}});
        let (code, body) = server
            .send(
                "PATCH",
                &format!("{path}?fieldManager=writer-{i:02}"),
                "application/merge-patch+json",
                patch.to_string(),
            )
            .await;
        assert_eq!(code, 200, "{body}");
    }
    let got = entries(&server, &path).await;
    assert_eq!(got.len(), 10, "ten Update entries, ancient-changes among them: {got:?}");
    assert!(got.iter().any(|e| e["manager"] == "ancient-changes"), "{got:?}");
    assert!(got.iter().all(|e| e["operation"] == "Update"));

    // `managedFields: []` clears them; an object without any keeps none on later updates.
    let (code, cleared) =
        server.send("PATCH", &path, "application/merge-patch+json", r#"{"metadata":{"managedFields":[]}}"#).await;
    assert_eq!(code, 200, "{cleared}");
    assert_eq!(cleared["metadata"]["managedFields"], Value::Null);
    let (_, later) = server
        .send("PATCH", &format!("{path}?fieldManager=m"), "application/merge-patch+json", r#"{"data":{"b":"1"}}"#)
        .await;
    assert_eq!(later["metadata"]["managedFields"], Value::Null);
    // The next apply first gives every existing field to before-first-apply.
    let (code, status) = server.send("PATCH", &format!("{path}?fieldManager=m"), APPLY, configmap("{a: other}")).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(
        status["message"],
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
}
