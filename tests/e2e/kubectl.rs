//! kubectl 1.32 against listwatch: the everyday commands work and print what they print
//! against a real cluster.

use serde_json::Value;

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(
    create_get_label_annotate_delete,
    apply_twice_patches,
    namespaces_come_and_go,
    delete_by_label,
    objects_come_back_with_kubes_defaults,
);

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: demo, tier: web}
data:
  greeting: hello
";

async fn create_get_label_annotate_delete(backend: Backend) {
    let server = Server::start("kubectl-crud", backend, &[]).await;
    let k = server.kubectl();
    let out = k.run_with_input(&["create", "-f", "-"], CONFIGMAP).await.ok();
    assert_eq!(out.trim(), "configmap/demo created");
    // A second create is AlreadyExists, as kubectl shows it.
    let again = k.run_with_input(&["create", "-f", "-"], CONFIGMAP).await;
    assert!(!again.success);
    assert!(
        again.stderr.contains("Error from server (AlreadyExists)")
            && again.stderr.contains("configmaps \"demo\" already exists"),
        "{}",
        again.stderr
    );

    let object = k.get_json(&["configmap", "demo"]).await;
    assert_eq!(object["data"]["greeting"], "hello");
    assert_eq!(object["metadata"]["namespace"], "default");
    assert!(object["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(object["metadata"]["resourceVersion"].as_str().unwrap().parse::<i64>().unwrap() > 0);
    let yaml = k.run(&["get", "configmap", "demo", "-o", "yaml"]).await.ok();
    assert!(yaml.contains("greeting: hello") && yaml.contains("kind: ConfigMap"), "{yaml}");

    // The table as kubectl prints it.
    let table = k.run(&["get", "configmaps"]).await.ok();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "DATA", "AGE"], "{table}");
    assert!(lines[1].starts_with("demo ") && lines[1].split_whitespace().nth(1) == Some("1"), "{table}");

    assert_eq!(k.run(&["label", "configmap", "demo", "stage=prod"]).await.ok().trim(), "configmap/demo labeled");
    assert_eq!(k.run(&["annotate", "configmap", "demo", "owner=team-a"]).await.ok().trim(), "configmap/demo annotated");
    let labeled = k.get_json(&["configmaps", "-l", "stage=prod"]).await;
    assert_eq!(labeled["items"].as_array().unwrap().len(), 1);
    assert_eq!(labeled["items"][0]["metadata"]["annotations"]["owner"], "team-a");
    assert!(k.get_json(&["configmaps", "-l", "stage=dev"]).await["items"].as_array().unwrap().is_empty());
    let shown = k.run(&["get", "configmaps", "--show-labels"]).await.ok();
    assert!(shown.contains("app=demo,stage=prod,tier=web"), "{shown}");

    // -A lists every namespace and prints the NAMESPACE column.
    k.run(&["create", "namespace", "other"]).await.ok();
    k.run_with_input(&["create", "-n", "other", "-f", "-"], CONFIGMAP).await.ok();
    let all = k.run(&["get", "configmaps", "-A"]).await.ok();
    assert!(all.lines().next().unwrap().starts_with("NAMESPACE"), "{all}");
    assert_eq!(all.lines().filter(|l| l.contains(" demo ")).count(), 2, "{all}");

    assert_eq!(k.run(&["delete", "configmap", "demo"]).await.ok().trim(), "configmap \"demo\" deleted");
    let gone = k.run(&["get", "configmap", "demo"]).await;
    assert!(!gone.success && gone.stderr.contains("NotFound"), "{}", gone.stderr);
}

const DEPLOYMENT_V1: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
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
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
        command: [sleep, infinity]
";

const DEPLOYMENT_V2: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
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
        image: nginx:1.27
        ports:
        - containerPort: 80
";

async fn apply_twice_patches(backend: Backend) {
    let server = Server::start("kubectl-apply", backend, &[]).await;
    let k = server.kubectl();
    assert_eq!(k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT_V1).await.ok().trim(), "deployment.apps/web created");
    let first = k.get_json(&["deployment", "web"]).await;
    assert_eq!(first["metadata"]["generation"], 1);
    // Applying the same manifest again changes nothing.
    assert_eq!(
        k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT_V1).await.ok().trim(),
        "deployment.apps/web unchanged"
    );
    // The second apply is a strategic merge patch: one container changed, one removed.
    assert_eq!(
        k.run_with_input(&["apply", "-f", "-"], DEPLOYMENT_V2).await.ok().trim(),
        "deployment.apps/web configured"
    );
    let second = k.get_json(&["deployment", "web"]).await;
    let containers = second["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "{second}");
    assert_eq!(
        containers[0],
        // As kube stores it: the manifest's fields and the scheme's defaults.
        serde_json::json!({"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "imagePullPolicy": "IfNotPresent", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
    );
    assert_eq!(second["metadata"]["generation"], 2);
    // The last-applied annotation follows the manifest.
    let last: Value = serde_json::from_str(
        second["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(last["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(first["metadata"]["uid"], second["metadata"]["uid"]);
}

async fn namespaces_come_and_go(backend: Backend) {
    let server = Server::start("kubectl-ns", backend, &[]).await;
    let k = server.kubectl();
    assert_eq!(k.run(&["create", "namespace", "team-a"]).await.ok().trim(), "namespace/team-a created");
    let ns = k.get_json(&["namespace", "team-a"]).await;
    assert_eq!(ns["status"]["phase"], "Active");
    k.run_with_input(&["create", "-n", "team-a", "-f", "-"], CONFIGMAP).await.ok();
    // kubectl waits until the namespace and its content are gone.
    assert_eq!(k.run(&["delete", "namespace", "team-a"]).await.ok().trim(), "namespace \"team-a\" deleted");
    let gone = k.run(&["get", "namespace", "team-a"]).await;
    assert!(!gone.success && gone.stderr.contains("NotFound"), "{}", gone.stderr);
    let (code, _) = server.get("/api/v1/namespaces/team-a/configmaps/demo").await;
    assert_eq!(code, 404);
    // Creating into a namespace that does not exist is a 404 for the namespace.
    let missing = k.run_with_input(&["create", "-n", "nope", "-f", "-"], CONFIGMAP).await;
    assert!(!missing.success && missing.stderr.contains("namespaces \"nope\" not found"), "{}", missing.stderr);
}

async fn delete_by_label(backend: Backend) {
    let server = Server::start("kubectl-delete-l", backend, &[]).await;
    let k = server.kubectl();
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let manifest =
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{tier: {tier}}}\n");
        k.run_with_input(&["create", "-f", "-"], &manifest).await.ok();
    }
    let out = k.run(&["delete", "configmaps", "-l", "tier=web"]).await.ok();
    assert!(out.contains("configmap \"a\" deleted") && out.contains("configmap \"b\" deleted"), "{out}");
    let left = k.get_json(&["configmaps"]).await;
    let names: Vec<&str> =
        left["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["c"]);
}

/// What kubectl's generators send is stored with kube's scheme defaults, so controllers read
/// the objects a real cluster would return (`kubectl create deployment` leaves the strategy,
/// history limit and deadline to the server; `kubectl run` the pod's policies).
async fn objects_come_back_with_kubes_defaults(backend: Backend) {
    let server = Server::start("kubectl-defaults", backend, &[]).await;
    let k = server.kubectl();
    k.run(&["create", "deployment", "web", "--image=nginx:1.27"]).await.ok();
    let deployment = k.get_json(&["deployment", "web"]).await;
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1, "{deployment}");
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(spec["strategy"]["rollingUpdate"], serde_json::json!({"maxSurge": "25%", "maxUnavailable": "25%"}));
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let template = &spec["template"]["spec"];
    assert_eq!(template["restartPolicy"], "Always");
    assert_eq!(template["dnsPolicy"], "ClusterFirst");
    assert_eq!(template["schedulerName"], "default-scheduler");
    assert_eq!(template["terminationGracePeriodSeconds"], 30);
    assert_eq!(template["containers"][0]["imagePullPolicy"], "IfNotPresent");

    k.run(&["run", "box", "--image=busybox", "--restart=Never"]).await.ok();
    let pod = k.get_json(&["pod", "box"]).await;
    assert_eq!(pod["spec"]["restartPolicy"], "Never", "{pod}");
    assert_eq!(pod["spec"]["enableServiceLinks"], true);
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(pod["spec"]["containers"][0]["terminationMessagePolicy"], "File");

    k.run(&["create", "service", "clusterip", "web", "--tcp=80:8080"]).await.ok();
    let service = k.get_json(&["service", "web"]).await;
    assert_eq!(service["spec"]["sessionAffinity"], "None", "{service}");
    assert_eq!(service["spec"]["ipFamilies"], serde_json::json!(["IPv4"]));
    assert_eq!(service["spec"]["clusterIPs"][0], service["spec"]["clusterIP"]);
}
