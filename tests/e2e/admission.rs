//! Admission webhooks end to end: configurations written with kubectl, a webhook server in the
//! test (HTTPS, a CA of its own), and what a client sees: refusals with kube's messages, the
//! webhook's warnings, mutations stored, kube's order (mutating, then validating), failure
//! policies on a slow, garbled or lying webhook with nothing written, a Service reached
//! through `--webhook-service`, match conditions, kube's 422s for broken configurations, and
//! webhook configurations never sent to webhooks. ValidatingAdmissionPolicies are in
//! [`policies`].

mod kopf;
mod policies;
pub(crate) mod webhook_server;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Backend, Kubectl, Server, answer_until, assert_failure};
use webhook_server::WebhookServer;

/// A webhook configuration of `kind` with one webhook `name` reached at `client_config`, for
/// `operations` on configmaps, with `extra` fields merged into the webhook.
fn configuration(
    kind: &str,
    name: &str,
    client_config: Value,
    ca_bundle: &str,
    operations: &[&str],
    extra: Value,
) -> Value {
    let mut client_config = client_config;
    client_config["caBundle"] = json!(ca_bundle);
    let mut webhook = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        webhook[k] = v.clone();
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name.split('.').next().unwrap()},
        "webhooks": [webhook],
    })
}

async fn apply(k: &Kubectl, object: &Value) {
    k.run_with_input(&["apply", "-f", "-"], &object.to_string()).await.ok();
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

/// Creates `object` in `default` as a dry run until the answer's code is `code`: a webhook
/// applies once the server's cache has its configuration (as kube's informers do).
async fn await_dry_run(server: &Server, object: &Value, code: u16) -> (u16, Value) {
    let path = "/api/v1/namespaces/default/configmaps?dryRun=All";
    answer_until(|| server.post_json(path, object), |got| got.0 == code).await
}

#[tokio::test]
async fn webhooks_refuse_mutate_and_fail_as_kube_says() {
    let hooks = WebhookServer::start().await;
    let service = format!("system/hook=https://{}", hooks.addr);
    let server = Server::start("admission-webhooks", Backend::Memory, &["--webhook-service", &service]).await;
    let k = server.kubectl();

    // A validating webhook refusing configmaps labelled foo=bar, on create and update.
    let deny = configuration(
        "ValidatingWebhookConfiguration",
        "deny.example.com",
        json!({"url": hooks.url("/deny")}),
        &hooks.ca_bundle,
        &["CREATE", "UPDATE"],
        json!({"matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}]}),
    );
    apply(&k, &deny).await;
    let refused = await_dry_run(&server, &configmap("probe", json!({"foo": "bar"})), 400).await;
    assert_eq!(refused.1["message"], "admission webhook \"deny.example.com\" denied the request: no foo allowed");
    // Its match condition keeps it from the objects labelled exempt.
    let exempt = configmap("exempt-probe", json!({"foo": "bar", "exempt": "yes"}));
    assert_eq!(server.post_json("/api/v1/namespaces/default/configmaps?dryRun=All", &exempt).await.0, 201);
    assert!(hooks.reviews_to("/deny").iter().all(|r| r["name"] != "exempt-probe"));
    // kubectl shows the refusal, and nothing is written.
    let out = k.run_with_input(&["create", "-f", "-"], &configmap("refused", json!({"foo": "bar"})).to_string()).await;
    assert!(!out.success);
    assert!(
        out.stderr.contains("admission webhook \"deny.example.com\" denied the request: no foo allowed"),
        "{out:?}"
    );
    assert!(!k.run(&["get", "configmap", "refused"]).await.success);
    // An allowed write carries the webhook's warning.
    let out = k.run_with_input(&["create", "-f", "-"], &configmap("allowed", json!({"a": "b"})).to_string()).await;
    assert!(out.success, "{out:?}");
    assert!(out.stderr.contains("Warning: checked by deny"), "{out:?}");
    let sent = hooks.reviews_to("/deny");
    let create = sent.iter().find(|r| r["name"] == "allowed").expect("the create was reviewed");
    assert_eq!(create["operation"], "CREATE");
    assert_eq!(create["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(create["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(create["namespace"], "default");
    assert_eq!(create["dryRun"], false);
    assert_eq!(create["oldObject"], Value::Null);
    assert_eq!(create["options"]["kind"], "CreateOptions");
    assert!(create["userInfo"]["username"].is_string(), "{create}");
    // An update is reviewed with the old object, and refused the same way.
    let out = k.run(&["label", "configmap", "allowed", "foo=bar"]).await;
    assert!(!out.success && out.stderr.contains("no foo allowed"), "{out:?}");
    let update = hooks.reviews_to("/deny").into_iter().rev().find(|r| r["operation"] == "UPDATE").unwrap();
    assert_eq!(update["oldObject"]["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(update["object"]["metadata"]["labels"], json!({"a": "b", "foo": "bar"}));

    // A mutating webhook reached as a Service: its annotation is stored, and the validating
    // webhook (called after it) sees it.
    let mutate = configuration(
        "MutatingWebhookConfiguration",
        "mutate.example.com",
        json!({"service": {"namespace": "system", "name": "hook", "path": "/mutate"}}),
        &hooks.ca_bundle,
        &["CREATE"],
        json!({}),
    );
    apply(&k, &mutate).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, dry) = await_dry_run(&server, &configmap("mutated-probe", json!({})), 201).await;
        if dry["metadata"]["annotations"]["mutated"] == "yes" {
            break;
        }
        assert!(Instant::now() < deadline, "never mutated: {dry}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    k.run_with_input(&["create", "-f", "-"], &configmap("m1", json!({})).to_string()).await.ok();
    let stored = k.get_json(&["configmap", "m1"]).await;
    assert_eq!(stored["metadata"]["annotations"]["mutated"], "yes");
    let validated = hooks.reviews_to("/deny").into_iter().rev().find(|r| r["name"] == "m1").unwrap();
    assert_eq!(validated["object"]["metadata"]["annotations"]["mutated"], "yes");
    let mutated = hooks.reviews_to("/mutate");
    assert!(mutated.iter().any(|r| r["name"] == "m1" && r["object"]["metadata"].get("annotations").is_none()));

    // Failure policies: a webhook slower than its timeout fails the write (Fail), or is
    // skipped (Ignore); an object selector keeps it to the objects that ask for it.
    let slow = |policy: &str| {
        configuration(
            "ValidatingWebhookConfiguration",
            "slow.example.com",
            json!({"url": hooks.url("/slow")}),
            &hooks.ca_bundle,
            &["CREATE"],
            json!({"timeoutSeconds": 1, "failurePolicy": policy, "objectSelector": {"matchLabels": {"slow": "yes"}}}),
        )
    };
    apply(&k, &slow("Fail")).await;
    let failed = await_dry_run(&server, &configmap("slow-probe", json!({"slow": "yes"})), 500).await;
    assert_failure(&failed, 500, "InternalError");
    assert_eq!(
        failed.1["message"],
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            hooks.url("/slow")
        )
    );
    let (code, _) =
        server.post_json("/api/v1/namespaces/default/configmaps", &configmap("slow-1", json!({"slow": "yes"}))).await;
    assert_eq!(code, 500);
    assert_eq!(server.get("/api/v1/namespaces/default/configmaps/slow-1").await.0, 404, "nothing written");
    apply(&k, &slow("Ignore")).await;
    await_dry_run(&server, &configmap("slow-probe", json!({"slow": "yes"})), 201).await;

    // Webhooks that answer garbage, another request's uid, or a patch that does not apply.
    for (name, path, mutating, reason) in [
        (
            "garbage.example.com",
            "/garbage",
            false,
            "received invalid webhook response: couldn't get version/kind; json parse error: ",
        ),
        ("wrong-uid.example.com", "/wrong-uid", false, "received invalid webhook response: expected response.uid="),
        ("bad-patch.example.com", "/bad-patch", true, ""),
    ] {
        let kind = if mutating { "MutatingWebhookConfiguration" } else { "ValidatingWebhookConfiguration" };
        let label = path.trim_start_matches('/');
        let config = configuration(
            kind,
            name,
            json!({"url": hooks.url(path)}),
            &hooks.ca_bundle,
            &["CREATE"],
            json!({"objectSelector": {"matchLabels": {"answer": label}}}),
        );
        apply(&k, &config).await;
        let failed = await_dry_run(&server, &configmap("broken-probe", json!({"answer": label})), 500).await;
        assert_failure(&failed, 500, "InternalError");
        let message = failed.1["message"].as_str().unwrap();
        if !reason.is_empty() {
            let expected = format!("Internal error occurred: failed calling webhook \"{name}\": {reason}");
            assert!(message.starts_with(&expected), "{message}");
        }
        let object = configmap(&format!("broken-{label}"), json!({"answer": label}));
        assert_eq!(server.post_json("/api/v1/namespaces/default/configmaps", &object).await.0, 500);
        let path = format!("/api/v1/namespaces/default/configmaps/broken-{label}");
        assert_eq!(server.get(&path).await.0, 404, "nothing written for {name}");
    }
    assert!(hooks.reviews_to("/wrong-uid").iter().all(|r| r["uid"] != "nope"));

    // A delete is reviewed with the object being deleted, and can be refused.
    let protect = configuration(
        "ValidatingWebhookConfiguration",
        "protect.example.com",
        json!({"url": hooks.url("/deny")}),
        &hooks.ca_bundle,
        &["DELETE"],
        json!({}),
    );
    apply(&k, &protect).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = hooks.reviews_to("/deny");
        k.run(&["delete", "configmap", "m1", "--dry-run=server"]).await.ok();
        if hooks.reviews_to("/deny").len() > sent.len() {
            break;
        }
        assert!(Instant::now() < deadline, "the delete was never reviewed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let delete = hooks.reviews_to("/deny").into_iter().rev().find(|r| r["operation"] == "DELETE").unwrap();
    assert_eq!(delete["oldObject"]["metadata"]["name"], "m1");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["dryRun"], true);
    assert_eq!(delete["options"]["kind"], "DeleteOptions");

    // Webhook configurations never go to webhooks: one refusing every write to every
    // resource does not keep itself from being deleted.
    let mut deny_all = configuration(
        "ValidatingWebhookConfiguration",
        "deny-all.example.com",
        json!({"url": hooks.url("/deny")}),
        &hooks.ca_bundle,
        &["*"],
        json!({"objectSelector": {"matchLabels": {"foo": "bar"}}}),
    );
    deny_all["webhooks"][0]["rules"] =
        json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
    deny_all["metadata"]["labels"] = json!({"foo": "bar"});
    apply(&k, &deny_all).await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"foo": "bar"}}});
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.post_json("/api/v1/namespaces/default/secrets?dryRun=All", &secret).await.0 != 400 {
        assert!(Instant::now() < deadline, "deny-all never applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An update of it (still labelled foo=bar, which /deny refuses) and its delete go through.
    k.run(&["label", "validatingwebhookconfiguration", "deny-all", "touched=yes"]).await.ok();
    k.run(&["delete", "validatingwebhookconfiguration", "deny-all"]).await.ok();
    assert!(hooks.reviews_to("/deny").iter().all(|r| r["kind"]["group"] != "admissionregistration.k8s.io"));
}

#[tokio::test]
async fn broken_webhook_configurations_get_kube_422s() {
    let server = Server::start("admission-422", Backend::Memory, &[]).await;
    let k = server.kubectl();
    let mut broken = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "broken"},
        "webhooks": [{
            "name": "broken.example",
            "clientConfig": {"url": "http://127.0.0.1:1/x"},
            "rules": [{"operations": ["GET"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "Some",
            "timeoutSeconds": 31,
            "admissionReviewVersions": ["v1"],
        }],
    });
    broken["webhooks"][0]["matchConditions"] = json!([{"name": "bad", "expression": "object.metadata.name =="}]);
    let out = k.run_with_input(&["create", "-f", "-"], &broken.to_string()).await;
    assert!(!out.success);
    assert!(
        out.stderr.contains("webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: "),
        "{}",
        out.stderr
    );
    for expected in [
        "The ValidatingWebhookConfiguration \"broken\" is invalid: ",
        "webhooks[0].name: Invalid value: \"broken.example\": should be a domain with at least three segments separated by dots",
        "webhooks[0].rules[0].operations[0]: Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    ] {
        assert!(out.stderr.contains(expected), "{expected}\n{}", out.stderr);
    }
    // Defaults are filled in, and kubectl prints the count of webhooks.
    let good = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "good"},
        "webhooks": [{
            "name": "good.example.com",
            "clientConfig": {"service": {"namespace": "system", "name": "hook"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    });
    k.run_with_input(&["create", "-f", "-"], &good.to_string()).await.ok();
    let stored = k.get_json(&["mutatingwebhookconfiguration", "good"]).await;
    let webhook = &stored["webhooks"][0];
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["matchPolicy"], "Equivalent");
    assert_eq!(webhook["timeoutSeconds"], 10);
    assert_eq!(webhook["reinvocationPolicy"], "Never");
    assert_eq!(webhook["namespaceSelector"], json!({}));
    assert_eq!(webhook["rules"][0]["scope"], "*");
    assert_eq!(webhook["clientConfig"]["service"]["port"], 443);
    let table = k.run(&["get", "mutatingwebhookconfigurations"]).await.ok();
    assert!(table.lines().next().unwrap().split_whitespace().eq(["NAME", "WEBHOOKS", "AGE"]), "{table}");
    assert!(table.lines().nth(1).unwrap().split_whitespace().take(2).eq(["good", "1"]), "{table}");
    // A write a Service webhook sees while no address is known for the Service fails as a
    // call failure (failurePolicy Fail).
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = server.post_json("/api/v1/namespaces/default/pods?dryRun=All", &pod).await;
        if got.0 == 500 {
            let message = got.1["message"].as_str().unwrap();
            assert!(
                message.starts_with("Internal error occurred: failed calling webhook \"good.example.com\": failed to call webhook: Post \"https://hook.system.svc:443/?timeout=10s\": service \"hook\" not found"),
                "{message}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the webhook never applied: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The simulator's webhook outage (`webhookOutage`, the debug API's `webhooks`): for its
/// time, calls fail as to a webhook down, broken or slow, without reaching it, and the
/// webhook's failure policy decides; it ends on time, or when ended.
#[tokio::test]
async fn webhook_outages_fail_calls_and_the_failure_policy_decides() {
    let hooks = WebhookServer::start().await;
    let server = Server::start("admission-outage", Backend::Memory, &[]).await;
    let k = server.kubectl();
    let hook = |policy: &str| {
        configuration(
            "ValidatingWebhookConfiguration",
            "guard.example.com",
            json!({"url": hooks.url("/deny")}),
            &hooks.ca_bundle,
            &["CREATE"],
            json!({"failurePolicy": policy, "timeoutSeconds": 1}),
        )
    };
    apply(&k, &hook("Fail")).await;
    let probe = configmap("probe", json!({}));
    await_dry_run(&server, &probe, 201).await;
    let calls = hooks.reviews_to("/deny").len();
    let outage = |query: &str| {
        let server = &server;
        let path = format!("/debug/listwatch/webhooks?{query}");
        async move { assert_eq!(server.post_json(&path, &json!({})).await.0, 200, "{path}") }
    };
    let failed = |reason: String| {
        format!(
            "Internal error occurred: failed calling webhook \"guard.example.com\": failed to call webhook: {reason}"
        )
    };
    let address = hooks.addr.to_string();
    let shown = format!("Post \"{}?timeout=1s\"", hooks.url("/deny"));
    for (mode, reason) in [
        ("down", format!("{shown}: dial tcp {address}: connect: connection refused")),
        ("error", "an error on the server (\"the webhook failed (a simulated outage)\") has prevented the request from succeeding".to_string()),
        ("slow", format!("{shown}: context deadline exceeded")),
    ] {
        outage(&format!("mode={mode}&for=60s")).await;
        let got = server.post_json("/api/v1/namespaces/default/configmaps?dryRun=All", &probe).await;
        assert_failure(&got, 500, "InternalError");
        assert_eq!(got.1["message"], failed(reason), "{mode}");
    }
    assert_eq!(hooks.reviews_to("/deny").len(), calls, "no call reached the webhook during the outage");
    // An outage of another webhook leaves this one alone; under Ignore an outage lets writes
    // through; ended, the webhook is called again.
    outage("mode=down&for=60s&name=other.example.com").await;
    assert_eq!(server.post_json("/api/v1/namespaces/default/configmaps?dryRun=All", &probe).await.0, 201);
    assert_eq!(hooks.reviews_to("/deny").len(), calls + 1);
    outage("mode=down&for=60s").await;
    apply(&k, &hook("Ignore")).await;
    await_dry_run(&server, &probe, 201).await;
    assert_eq!(hooks.reviews_to("/deny").len(), calls + 1, "ignored, not called");
    apply(&k, &hook("Fail")).await;
    await_dry_run(&server, &probe, 500).await;
    outage("mode=down&for=0s").await;
    assert_eq!(server.post_json("/api/v1/namespaces/default/configmaps?dryRun=All", &probe).await.0, 201);
    assert_eq!(hooks.reviews_to("/deny").len(), calls + 2);
    let bad = server.post_json("/debug/listwatch/webhooks?mode=sideways&for=1s", &json!({})).await;
    assert_failure(&bad, 400, "BadRequest");
}
