//! CEL rules (`x-kubernetes-validations`) on a CRD's schema, as kube-apiserver enforces them:
//! a rule that does not compile refuses the CRD; a custom resource that breaks a rule gets a
//! 422 naming the node, its type and the rule's message; transition rules (`oldSelf`) hold
//! only on updates; a blocking schema error stops the rules with kube's note.

use serde_json::{Value, json};

use super::{CRDS, install_crd};
use crate::on_both_backends;
use crate::support::{Backend, Server, assert_failure, assert_status};

on_both_backends!(cel_rules_refuse_bad_crds_and_invalid_objects);

const GADGETS: &str = "/apis/cel.example.com/v1/namespaces/default/gadgets";

fn gadget_crd(rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": rules,
                    "properties": {
                        "replicas": {"type": "integer"},
                        "minReplicas": {"type": "integer"},
                        "name": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self.startsWith('g-')", "messageExpression": "'name must start with g-, not ' + self"}
                        ]}
                    }
                }}
            }}}]
        }
    })
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "cel.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

async fn cel_rules_refuse_bad_crds_and_invalid_objects(backend: Backend) {
    let server = Server::start("crd-cel", backend, &[]).await;
    // A rule that does not parse refuses the CRD, on the rule's path.
    let got = server.post_json(CRDS, &gadget_crd(json!([{"rule": "self.replicas >"}]))).await;
    assert_failure(&got, 422, "Invalid");
    let cause = &got.1["details"]["causes"][0];
    assert_eq!(
        cause["field"], "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
        "{}",
        got.1
    );
    assert!(cause["message"].as_str().unwrap().contains("compilation failed: "), "{}", got.1);
    let (code, _) = server.get(&format!("{CRDS}/gadgets.cel.example.com")).await;
    assert_eq!(code, 404, "a refused CRD is not stored");

    install_crd(
        &server,
        &gadget_crd(json!([
            {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be at least minReplicas"},
            {"rule": "self.replicas >= oldSelf.replicas", "reason": "FieldValueForbidden", "message": "cannot scale down"},
        ])),
    )
    .await;

    // Rules that hold: created.
    let (code, created) =
        server.post_json(GADGETS, &gadget("a", json!({"replicas": 3, "minReplicas": 1, "name": "g-a"}))).await;
    assert_eq!(code, 201, "{created}");
    // A false rule: kube's 422 with the node, its type and the message; nothing stored.
    let got = server.post_json(GADGETS, &gadget("b", json!({"replicas": 1, "minReplicas": 2, "name": "x"}))).await;
    assert_status(
        &got,
        422,
        "Invalid",
        "Gadget.cel.example.com \"b\" is invalid: [spec: Invalid value: \"object\": replicas should be at least minReplicas, spec.name: Invalid value: \"string\": name must start with g-, not x]",
    );
    let (code, _) = server.get(&format!("{GADGETS}/b")).await;
    assert_eq!(code, 404);

    // The transition rule: scaling up is an update like any other, scaling down is Forbidden.
    let mut up = created.clone();
    up["spec"]["replicas"] = json!(5);
    let (code, up) = server.send("PUT", &format!("{GADGETS}/a"), "application/json", up.to_string()).await;
    assert_eq!(code, 200, "{up}");
    let mut down = up.clone();
    down["spec"]["replicas"] = json!(4);
    let got = server.send("PUT", &format!("{GADGETS}/a"), "application/json", down.to_string()).await;
    assert_status(&got, 422, "Invalid", "Gadget.cel.example.com \"a\" is invalid: spec: Forbidden: cannot scale down");

    // A blocking schema error (a wrong type) stops the rules, with kube's note.
    let got = server.post_json(GADGETS, &gadget("c", json!({"replicas": "many", "minReplicas": 9}))).await;
    assert_failure(&got, 422, "Invalid");
    let message = got.1["message"].as_str().unwrap();
    assert!(message.contains("spec.replicas: Invalid value: \"string\""), "{message}");
    assert!(message.contains("some validation rules were not checked because the object was invalid"), "{message}");
    assert!(!message.contains("at least minReplicas"), "{message}");
}
