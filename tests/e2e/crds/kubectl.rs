//! kubectl 1.32 against CRDs: creating one, applying a file with a CRD and its instances (the
//! first run fails on the instances, as against kube), printer columns, `get -w`, `explain`,
//! pruning and validation as kubectl shows them, deleting a CRD and a restart.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::{CRD_NAME, CRD_YAML, CRDS, CRONTABS, crontab_yaml, established, wait_until};
use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(
    kubectl_creates_a_crd_and_gets_its_resources,
    kubectl_apply_of_a_crd_with_instances_needs_two_runs,
    kubectl_watch_sees_an_update,
    kubectl_explain_reads_the_schema,
    kubectl_sees_pruning_and_validation,
    kubectl_delete_crd_deletes_its_instances,
    a_restart_serves_stored_crds,
    kubectl_server_side_apply_merges_by_the_crds_list_map_keys,
);

/// Awaits the CRD's Established condition. Not `kubectl wait --for condition=established`:
/// right after a create it can fail with "status.conditions accessor error: <nil>", as against
/// kube, since a new CRD's conditions are null until the controller writes them.
async fn await_established(server: &Server) {
    let path = format!("{CRDS}/{CRD_NAME}");
    wait_until(Duration::from_secs(30), || async {
        let (code, crd) = server.get(&path).await;
        (code == 200 && established(&crd)).then_some(())
    })
    .await;
}

/// Columns of a `kubectl get` table, line by line.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

async fn kubectl_creates_a_crd_and_gets_its_resources(backend: Backend) {
    let server = Server::start("crd-kubectl-create", backend, &[]).await;
    let k = server.kubectl();
    let out = k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    assert_eq!(out.trim(), format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created"));
    // What clients wait for is there (kubectl's wait itself would fail on the null conditions
    // of a CRD the controller has not reached yet, as against kube).
    await_established(&server).await;
    let waited = k.run(&["wait", "--for", "condition=established", "--timeout=10s", &format!("crd/{CRD_NAME}")]).await;
    assert_eq!(waited.ok().trim(), format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} condition met"));
    let crds = rows(&k.run(&["get", "crds"]).await.ok());
    assert_eq!(crds[0], ["NAME", "CREATED", "AT"]);
    assert_eq!(crds[1][0], CRD_NAME);

    let out = k.run_with_input(&["create", "-f", "-"], &crontab_yaml("nightly", "0 3 * * *", 3)).await.ok();
    assert_eq!(out.trim(), "crontab.stable.example.com/nightly created");
    let table = rows(&k.run(&["get", "crontabs"]).await.ok());
    assert_eq!(table[0], ["NAME", "SCHEDULE", "REPLICAS", "READY", "AGE"]);
    assert_eq!(table[1][..7], ["nightly", "0", "3", "*", "*", "*", "3"], "{table:?}");
    // The short name, the category, `-o wide` (priority 1 columns) and the status column.
    k.run(&[
        "patch",
        "ct",
        "nightly",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ])
    .await
    .ok();
    let wide = rows(&k.run(&["get", "ct", "-o", "wide"]).await.ok());
    assert_eq!(wide[0], ["NAME", "SCHEDULE", "REPLICAS", "READY", "IMAGE", "AGE"]);
    assert_eq!(wide[1][7..9], ["True", "img-nightly"], "{wide:?}");
    let all = k.run(&["get", "all"]).await.ok();
    assert!(all.contains("crontab.stable.example.com/nightly"), "{all}");
    let object = k.get_json(&["crontab", "nightly"]).await;
    assert_eq!(object["spec"]["mode"], "a", "defaulted: {object}");
    assert_eq!(object["metadata"]["generation"], 1);
    // kubectl scale goes through the scale subresource.
    assert_eq!(
        k.run(&["scale", "ct", "nightly", "--replicas=5"]).await.ok().trim(),
        "crontab.stable.example.com/nightly scaled"
    );
    assert_eq!(k.get_json(&["ct", "nightly"]).await["spec"]["replicas"], 5);
}

async fn kubectl_apply_of_a_crd_with_instances_needs_two_runs(backend: Backend) {
    let server = Server::start("crd-kubectl-apply", backend, &[]).await;
    let k = server.kubectl();
    let file = server.dir.path().join("crontabs.yaml");
    let manifest =
        format!("{CRD_YAML}---\n{}---\n{}", crontab_yaml("a", "* * * * *", 1), crontab_yaml("b", "1 * * * *", 2));
    std::fs::write(&file, manifest).unwrap();
    let file = file.to_str().unwrap();

    // kubectl maps every object before sending any: the instances' kind is unknown yet.
    let first = k.run(&["apply", "-f", file]).await;
    assert!(!first.success, "{first:?}");
    assert_eq!(first.stdout.trim(), format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created"));
    assert!(
        first.stderr.contains(&format!(
            "resource mapping not found for name: \"a\" namespace: \"\" from \"{file}\": no matches for kind \"CronTab\" in version \"stable.example.com/v1\"\nensure CRDs are installed first"
        )),
        "{}",
        first.stderr
    );
    // Nothing of the instances was created.
    await_established(&server).await;
    let (code, list) = server.get(CRONTABS).await;
    assert_eq!(code, 200, "{list}");
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");

    let second = k.run(&["apply", "-f", file]).await.ok();
    assert_eq!(
        second.lines().collect::<Vec<_>>(),
        [
            format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} unchanged").as_str(),
            "crontab.stable.example.com/a created",
            "crontab.stable.example.com/b created"
        ]
    );
    let third = k.run(&["apply", "-f", file]).await.ok();
    assert!(third.contains("crontab.stable.example.com/a unchanged"), "{third}");
    let names: Vec<String> =
        rows(&k.run(&["get", "crontabs", "--no-headers"]).await.ok()).iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["a", "b"]);
}

async fn kubectl_watch_sees_an_update(backend: Backend) {
    let server = Server::start("crd-kubectl-watch", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    k.run_with_input(&["create", "-f", "-"], &crontab_yaml("w", "* * * * *", 1)).await.ok();

    let mut watch = k.command(&["get", "crontabs", "-w"]);
    watch.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = watch.spawn().expect("kubectl runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .unwrap()
    };
    assert_eq!(rows(&next().await)[0], ["NAME", "SCHEDULE", "REPLICAS", "READY", "AGE"]);
    assert_eq!(rows(&next().await)[0][0], "w");
    k.run(&["patch", "ct", "w", "--type=merge", "-p", r#"{"spec":{"replicas":7}}"#]).await.ok();
    let updated = rows(&next().await)[0].clone();
    assert_eq!((updated[0].as_str(), updated[6].as_str()), ("w", "7"), "{updated:?}");
    child.kill().await.ok();
}

async fn kubectl_explain_reads_the_schema(backend: Backend) {
    let server = Server::start("crd-kubectl-explain", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    let out = k.run(&["explain", "crontab.spec"]).await.ok();
    for expected in [
        "GROUP:      stable.example.com",
        "KIND:       CronTab",
        "VERSION:    v1",
        "FIELD: spec <Object>",
        "CronTabSpec defines the desired state of CronTab",
        "cronSpec\t<string> -required-",
        "The schedule in cron format.",
        "ports\t<[]Object>",
    ] {
        assert!(out.contains(expected), "{expected:?} missing from:\n{out}");
    }
    let kind = k.run(&["explain", "ct"]).await.ok();
    assert!(kind.contains("CronTab is the Schema for the crontabs API"), "{kind}");
}

async fn kubectl_sees_pruning_and_validation(backend: Backend) {
    let server = Server::start("crd-kubectl-validate", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    let unknown = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: u}\nspec: {cronSpec: x, image: i, color: red}\n";
    // kubectl validates on the server (fieldValidation=Strict).
    let strict = k.run_with_input(&["create", "-f", "-"], unknown).await;
    assert!(
        strict.stderr.contains(
            "CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: unknown field \"spec.color\""
        ),
        "{}",
        strict.stderr
    );
    // Without validation the field is pruned.
    k.run_with_input(&["create", "--validate=false", "-f", "-"], unknown).await.ok();
    let stored = k.get_json(&["ct", "u"]).await;
    assert_eq!(stored["spec"], serde_json::json!({"cronSpec": "x", "image": "i", "replicas": 1, "mode": "a"}));

    let invalid = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: v}\nspec: {cronSpec: x, image: i, replicas: 15, mode: c, ports: [{name: a}, {name: a}]}\n";
    let refused = k.run_with_input(&["create", "-f", "-"], invalid).await;
    assert!(!refused.success);
    assert_eq!(
        refused.stderr.trim(),
        "The CronTab \"v\" is invalid: \n* spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"\n* spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10\n* spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"
    );
    let (code, _) = server.get(&format!("{CRONTABS}/v")).await;
    assert_eq!(code, 404, "a refused create stores nothing");
}

async fn kubectl_delete_crd_deletes_its_instances(backend: Backend) {
    let server = Server::start("crd-kubectl-delete", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    k.run(&["create", "namespace", "other"]).await.ok();
    k.run_with_input(&["create", "-f", "-"], &crontab_yaml("one", "* * * * *", 1)).await.ok();
    k.run_with_input(&["create", "-n", "other", "-f", "-"], &crontab_yaml("two", "* * * * *", 1)).await.ok();
    // kubectl waits until the CRD is gone, which is after its instances.
    let out = k.run(&["delete", "crd", CRD_NAME]).await.ok();
    assert_eq!(out.trim(), format!("customresourcedefinition.apiextensions.k8s.io \"{CRD_NAME}\" deleted"));
    for path in
        [format!("{CRONTABS}/one"), "/apis/stable.example.com/v1/namespaces/other/crontabs/two".into(), CRONTABS.into()]
    {
        let (code, body) = server.get(&path).await;
        assert_eq!(code, 404, "{path}: {body}");
    }
    let (_, groups) = server.get("/apis").await;
    assert!(!groups.to_string().contains("stable.example.com"), "{groups}");
    // kubectl's discovery cache still knows the kind: its list finds nothing to serve it.
    let gone = k.run(&["get", "crontabs"]).await;
    assert!(
        !gone.success && gone.stderr.contains("the server could not find the requested resource"),
        "{}",
        gone.stderr
    );

    // Created again, it starts empty.
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    let (code, list) = server.get("/apis/stable.example.com/v1/crontabs").await;
    assert_eq!(code, 200, "{list}");
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");
}

async fn a_restart_serves_stored_crds(backend: Backend) {
    let mut server = Server::start("crd-restart", backend, &[]).await;
    let k = server.kubectl();
    k.run_with_input(&["create", "-f", "-"], CRD_YAML).await.ok();
    await_established(&server).await;
    k.run_with_input(&["create", "-f", "-"], &crontab_yaml("kept", "* * * * *", 4)).await.ok();
    server.restart().await;
    // Served as soon as the server answers, with discovery.
    let (code, crd) = server.get(&format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")).await;
    assert!(code == 200 && established(&crd), "{crd}");
    let table = rows(&k.run(&["get", "crontabs"]).await.ok());
    assert_eq!(table[1][..7], ["kept", "*", "*", "*", "*", "*", "4"], "{table:?}");
    k.run_with_input(&["create", "-f", "-"], &crontab_yaml("after", "* * * * *", 1)).await.ok();
    let names = wait_until(Duration::from_secs(5), || async {
        let (_, list) = server.get(CRONTABS).await;
        let names: Vec<String> =
            list["items"].as_array()?.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()).collect();
        (names.len() == 2).then_some(names)
    })
    .await;
    assert_eq!(names, ["after", "kept"]);
}

/// `kubectl apply --server-side` on a custom resource: its `ports` list merges by the CRD's
/// `x-kubernetes-list-map-keys` (each manager owns its own entries, named by key in FieldsV1),
/// a second manager changing the first one's field gets the 409 and `--force-conflicts` takes
/// it over.
async fn kubectl_server_side_apply_merges_by_the_crds_list_map_keys(backend: Backend) {
    let server = Server::start("crd-kubectl-ssa", backend, &[]).await;
    super::install(&server).await;
    let k = server.kubectl();
    let out = k
        .run_with_input(
            &["apply", "--server-side", "--field-manager=team-a", "-f", "-"],
            &crontab_yaml("ssa", "0 1 * * *", 2),
        )
        .await
        .ok();
    assert_eq!(out.trim(), "crontab.stable.example.com/ssa serverside-applied");
    // Another manager adds a port of its own: the list is a map, so both entries stay.
    let other = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: ssa\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n";
    let out = k.run_with_input(&["apply", "--server-side", "--field-manager=team-b", "-f", "-"], other).await.ok();
    assert_eq!(out.trim(), "crontab.stable.example.com/ssa serverside-applied");
    let object = k.get_json(&["ct", "ssa", "--show-managed-fields"]).await;
    let names: Vec<&str> =
        object["spec"]["ports"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["http", "metrics"], "{object}");
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    let team_b = entries.iter().find(|e| e["manager"] == "team-b").expect("team-b's entry");
    assert_eq!(team_b["operation"], "Apply");
    assert!(
        team_b["fieldsV1"]["f:spec"]["f:ports"].get("k:{\"name\":\"metrics\"}").is_some(),
        "ports are keyed by name: {team_b}"
    );
    // team-b changing team-a's schedule conflicts; forced, it takes the field.
    let takeover =
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: ssa\nspec:\n  cronSpec: \"0 2 * * *\"\n";
    let refused = k.run_with_input(&["apply", "--server-side", "--field-manager=team-b", "-f", "-"], takeover).await;
    assert!(!refused.success, "{refused:?}");
    let message = refused.stderr;
    assert!(message.contains("conflict") && message.contains(".spec.cronSpec"), "{message}");
    let out = k
        .run_with_input(&["apply", "--server-side", "--force-conflicts", "--field-manager=team-b", "-f", "-"], takeover)
        .await
        .ok();
    assert_eq!(out.trim(), "crontab.stable.example.com/ssa serverside-applied");
    assert_eq!(k.get_json(&["ct", "ssa"]).await["spec"]["cronSpec"], "0 2 * * *");
}
