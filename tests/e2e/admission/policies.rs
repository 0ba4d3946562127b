//! ValidatingAdmissionPolicy end to end, written with kubectl: a policy with params, variables
//! and a message expression refuses a Deployment with kube's Status; a Warn binding warns and
//! lets the write through; a missing param under `parameterNotFoundAction: Deny`, and an
//! expression that fails under `failurePolicy: Fail`, refuse with kube's messages (and are
//! ignored under `Ignore`); match conditions skip what they exclude; kube's 422s for broken
//! policies and bindings; kubectl's columns.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Backend, Kubectl, Server, answer_until, assert_failure};

fn policy(name: &str, resources: Value, spec: Value) -> Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [resources]});
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, policy: &str, actions: &[&str], extra: Value) -> Value {
    let mut spec = json!({"policyName": policy, "validationActions": actions});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": spec})
}

async fn apply(k: &Kubectl, object: &Value) {
    k.run_with_input(&["apply", "-f", "-"], &object.to_string()).await.ok();
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
}

/// POSTs `object` to `path` as a dry run until the answer is `code` (a policy applies once
/// the server's caches have it and its binding, as kube's informers do), and returns it.
async fn await_answer(server: &Server, path: &str, object: &Value, code: u16) -> (u16, Value) {
    let path = format!("{path}?dryRun=All");
    answer_until(|| server.post_json(&path, object), |got| got.0 == code).await
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

#[tokio::test]
async fn policies_refuse_warn_and_take_params_as_kube_says() {
    let server = Server::start("admission-policies", Backend::Memory, &[]).await;
    let k = server.kubectl();
    k.run(&["create", "configmap", "limits", "--from-literal=max=3"]).await.ok();
    let rules = json!({"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]});
    apply(
        &k,
        &policy(
            "replica-limit.example.com",
            rules,
            json!({
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
                "validations": [{
                    "expression": "variables.replicas <= int(params.data.max)",
                    "messageExpression": "'replicas must be no greater than ' + params.data.max",
                    "reason": "Forbidden",
                }],
            }),
        ),
    )
    .await;
    let param = json!({"paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}});
    apply(&k, &binding("replica-limit-binding", "replica-limit.example.com", &["Deny"], param)).await;

    let refused = await_answer(&server, DEPLOYMENTS, &deployment("web", 5), 403).await;
    assert_failure(&refused, 403, "Forbidden");
    let denial = "ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-binding' denied request: replicas must be no greater than 3";
    assert_eq!(refused.1["message"], format!("deployments.apps \"web\" is forbidden: {denial}"));
    assert_eq!(
        refused.1["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments", "causes": [{"message": denial}]})
    );
    // kubectl shows it, nothing is written; within the limit it is created, and an update
    // past it is refused.
    let out = k.run_with_input(&["create", "-f", "-"], &deployment("web", 5).to_string()).await;
    assert!(!out.success && out.stderr.contains(denial), "{out:?}");
    assert!(!k.run(&["get", "deployment", "web"]).await.success);
    k.run_with_input(&["create", "-f", "-"], &deployment("web", 2).to_string()).await.ok();
    let out = k.run(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":4}}"#]).await;
    assert!(!out.success && out.stderr.contains(denial), "{out:?}");

    // A Warn binding: the write goes through with kube's warning.
    let labels = json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"]});
    apply(
        &k,
        &policy(
            "team-label.example.com",
            labels,
            json!({
                "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
                "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                    "message": "every secret needs a team label"}],
            }),
        ),
    )
    .await;
    apply(&k, &binding("team-label-warn", "team-label.example.com", &["Warn"], json!({}))).await;
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'team-label.example.com' with binding 'team-label-warn': every secret needs a team label";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 0;
    loop {
        n += 1;
        let out = k.run(&["create", "secret", "generic", &format!("s{n}"), "--from-literal=a=b"]).await;
        assert!(out.success, "{out:?}");
        if out.stderr.contains(warning) {
            break;
        }
        assert!(Instant::now() < deadline, "never warned: {out:?}");
    }
    // A match condition skips what it excludes: no warning.
    let exempt =
        k.run(&["create", "secret", "generic", "exempt", "--from-literal=a=b", "--dry-run=server", "-o", "name"]).await;
    assert!(exempt.success && exempt.stderr.contains(warning), "without the label the condition matches: {exempt:?}");
    let labelled =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "labels": {"exempt": "yes"}}});
    let out = k.run_with_input(&["create", "-f", "-", "--dry-run=server"], &labelled.to_string()).await;
    assert!(out.success && !out.stderr.contains("Warning"), "{out:?}");

    // The param gone, the Deny binding refuses every deployment (422, kube's message).
    k.run(&["delete", "configmap", "limits"]).await.ok();
    let refused = await_answer(&server, DEPLOYMENTS, &deployment("small", 1), 422).await;
    assert_failure(&refused, 422, "Invalid");
    assert_eq!(
        refused.1["message"],
        "deployments.apps \"small\" is forbidden: ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );

    // An expression that cannot be evaluated: refused under Fail, ignored under Ignore.
    let secrets = json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"]});
    let broken = |failure: &str| {
        policy(
            "broken.example.com",
            secrets.clone(),
            json!({"failurePolicy": failure, "validations": [{"expression": "object.spec.replicas > 1"}]}),
        )
    };
    apply(&k, &broken("Fail")).await;
    apply(&k, &binding("broken-binding", "broken.example.com", &["Deny"], json!({}))).await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe", "labels": {"team": "a"}}});
    let refused = await_answer(&server, SECRETS, &secret, 422).await;
    let message = refused.1["message"].as_str().unwrap();
    assert!(
        message.starts_with("secrets \"probe\" is forbidden: ValidatingAdmissionPolicy 'broken.example.com' with binding 'broken-binding' denied request: expression 'object.spec.replicas > 1' resulted in error: "),
        "{message}"
    );
    apply(&k, &broken("Ignore")).await;
    await_answer(&server, SECRETS, &secret, 201).await;

    // kubectl's columns.
    let table = k.run(&["get", "validatingadmissionpolicies"]).await.ok();
    assert!(
        table.lines().next().unwrap().split_whitespace().eq(["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]),
        "{table}"
    );
    assert!(
        table.lines().any(|l| l.split_whitespace().take(3).eq(["replica-limit.example.com", "1", "v1/ConfigMap"])),
        "{table}"
    );
    assert!(
        table.lines().any(|l| l.split_whitespace().take(3).eq(["team-label.example.com", "1", "<unset>"])),
        "{table}"
    );
    let table = k.run(&["get", "validatingadmissionpolicybindings"]).await.ok();
    assert!(table.lines().next().unwrap().split_whitespace().eq(["NAME", "POLICYNAME", "PARAMREF", "AGE"]), "{table}");
    assert!(
        table.lines().any(|l| l.split_whitespace().take(3).eq([
            "replica-limit-binding",
            "replica-limit.example.com",
            "default/limits"
        ])),
        "{table}"
    );
}

#[tokio::test]
async fn broken_policies_and_bindings_get_kube_422s() {
    let server = Server::start("admission-policies-422", Backend::Memory, &[]).await;
    let k = server.kubectl();
    let broken = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "broken"},
        "spec": {"matchConstraints": {"resourceRules": [{"operations": ["GET"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "validations": [{"expression": "object.spec ==", "reason": "Teapot"}, {"expression": " "}]}});
    let out = k.run_with_input(&["create", "-f", "-"], &broken.to_string()).await;
    assert!(!out.success);
    for expected in [
        "The ValidatingAdmissionPolicy \"broken\" is invalid: ",
        "spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        "spec.validations[0].expression: Invalid value: \"object.spec ==\": compilation failed: ",
        "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
        "spec.validations[1].expression: Required value: expression is not specified",
    ] {
        assert!(out.stderr.contains(expected), "{expected}\n{}", out.stderr);
    }
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "broken"},
        "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"], "paramRef": {"name": "x"}}});
    let got =
        server.post_json("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", &binding).await;
    assert_failure(&got, 422, "Invalid");
    let causes: Vec<String> = got.1["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}: {}", c["field"], c["message"]))
        .collect();
    assert_eq!(
        causes,
        [
            "\"spec.paramRef.parameterNotFoundAction\": \"Required value\"",
            "\"spec.validationActions\": \"Invalid value: []admissionregistration.ValidationAction{\\\"Deny\\\", \\\"Warn\\\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)\"",
        ]
    );
    // Defaults are kube's.
    let good = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "good"},
        "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "validations": [{"expression": "true"}]}});
    k.run_with_input(&["create", "-f", "-"], &good.to_string()).await.ok();
    let stored = k.get_json(&["validatingadmissionpolicy", "good"]).await;
    assert_eq!(stored["spec"]["failurePolicy"], "Fail");
    let constraints = &stored["spec"]["matchConstraints"];
    assert_eq!(
        (&constraints["matchPolicy"], &constraints["namespaceSelector"], &constraints["objectSelector"]),
        (&json!("Equivalent"), &json!({}), &json!({}))
    );
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");
}
