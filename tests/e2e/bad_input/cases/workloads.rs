//! Pods and Deployments: the basic spec rules (pkg/apis/core/validation `ValidatePod*`,
//! pkg/apis/apps/validation `ValidateDeployment*`), replicas that may not be negative on the
//! object, through a patch, and through `/scale` (`Scale.autoscaling`, apps' ScaleREST), and
//! numbers that do not fit an int32 (a decode error, 400).

use serde_json::{Value, json};

use super::{deployments, invalid, merge_patch, ns_path, post, put};
use crate::bad_input::fixtures::{Fixtures, NS};
use crate::bad_input::kube::{self, dns_label};
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "pods and deployments";

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn deployment(name: &str, replicas: Value, selector: Value, template_labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": template_labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    })
}

const NEGATIVE: &str = "spec.replicas: Invalid value: -1: must be greater than or equal to 0";

pub fn rows(fx: &Fixtures) -> Vec<Case> {
    let d1 = format!("{}/d1", deployments());
    let p1 = format!("{}/p1", ns_path("pods"));
    let app = json!({"app": "x"});
    // Unconditional updates (no resourceVersion): what an earlier row did does not matter.
    let mut moved = fx.pod.clone();
    moved["metadata"].as_object_mut().expect("metadata").remove("resourceVersion");
    moved["spec"]["nodeName"] = json!("elsewhere");
    let mut negative = fx.deployment.clone();
    negative["metadata"].as_object_mut().expect("metadata").remove("resourceVersion");
    negative["spec"]["replicas"] = json!(-1);
    vec![
        Case::new(
            CLASS,
            "pod without containers",
            post(ns_path("pods"), &pod("p-empty", json!({"containers": []}))),
            invalid("Pod", "", "p-empty", &["spec.containers: Required value".into()])
                .cause("spec.containers", "FieldValueRequired"),
        ),
        Case::new(
            CLASS,
            "pod container without image",
            post(ns_path("pods"), &pod("p-noimage", json!({"containers": [{"name": "c"}]}))),
            Expect::status(422, "Invalid")
                .msg_has("spec.containers[0].image: Required value")
                .kind("Pod")
                .name("p-noimage")
                .cause("spec.containers[0].image", "FieldValueRequired"),
        ),
        Case::new(
            CLASS,
            "pod container named Bad_Name",
            post(ns_path("pods"), &pod("p-badc", json!({"containers": [{"name": "Bad_Name", "image": "nginx"}]}))),
            Expect::status(422, "Invalid")
                .msg_has(kube::invalid("spec.containers[0].name", "Bad_Name", &dns_label()))
                .kind("Pod")
                .cause("spec.containers[0].name", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "pod restartPolicy Sometimes",
            post(
                ns_path("pods"),
                &pod("p-restart", json!({"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "nginx"}]})),
            ),
            Expect::status(422, "Invalid")
                .msg_has("spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"")
                .kind("Pod")
                .cause("spec.restartPolicy", "FieldValueNotSupported"),
        ),
        Case::new(
            CLASS,
            "pod with two containers named alike",
            post(
                ns_path("pods"),
                &pod("p-dup", json!({"containers": [{"name": "c", "image": "nginx"}, {"name": "c", "image": "nginx"}]})),
            ),
            Expect::status(422, "Invalid")
                .msg_has("spec.containers[1].name: Duplicate value: \"c\"")
                .kind("Pod")
                .cause("spec.containers[1].name", "FieldValueDuplicate"),
        ),
        Case::new(
            CLASS,
            "bound pod moved to another node (PUT)",
            put(&p1, &moved),
            Expect::status(422, "Invalid").msg_has("pod updates may not change fields other than").kind("Pod").name("p1"),
        ),
        Case::new(
            CLASS,
            "bound pod moved to another node (merge patch)",
            merge_patch(&p1, &json!({"spec": {"nodeName": "elsewhere"}})),
            Expect::status(422, "Invalid").msg_has("pod updates may not change fields other than").kind("Pod").name("p1"),
        ),
        Case::new(
            CLASS,
            "deployment created with replicas -1",
            post(deployments(), &deployment("d-neg", json!(-1), app.clone(), app.clone())),
            invalid("Deployment", "apps", "d-neg", &[NEGATIVE.into()]).cause("spec.replicas", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment replicas -1 (PUT)",
            put(&d1, &negative),
            invalid("Deployment", "apps", "d1", &[NEGATIVE.into()]).cause("spec.replicas", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment replicas -1 (merge patch)",
            merge_patch(&d1, &json!({"spec": {"replicas": -1}})),
            invalid("Deployment", "apps", "d1", &[NEGATIVE.into()]).cause("spec.replicas", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment replicas -1 (strategic merge patch)",
            Request::new("PATCH", &d1)
                .content_type("application/strategic-merge-patch+json")
                .json(&json!({"spec": {"replicas": -1}})),
            invalid("Deployment", "apps", "d1", &[NEGATIVE.into()]).cause("spec.replicas", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "scale replicas -1",
            put(
                format!("{d1}/scale"),
                &json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d1", "namespace": NS}, "spec": {"replicas": -1}}),
            ),
            invalid("Scale", "autoscaling", "d1", &[NEGATIVE.into()]).cause("spec.replicas", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment replicas as a string",
            post(deployments(), &deployment("d-str", json!("3"), app.clone(), app.clone())),
            Expect::status(400, "BadRequest")
                .msg_has("Deployment in version \"v1\" cannot be handled as a Deployment:")
                .msg_has("cannot unmarshal string into Go struct field"),
        ),
        Case::new(
            CLASS,
            "deployment replicas beyond int32",
            post(deployments(), &deployment("d-huge", json!(3_000_000_000u64), app.clone(), app.clone())),
            Expect::status(400, "BadRequest").msg_has("cannot unmarshal number 3000000000 into Go struct field"),
        ),
        Case::new(
            CLASS,
            "deployment selector not matching its template",
            post(deployments(), &deployment("d-mismatch", json!(1), app.clone(), json!({"app": "other"}))),
            Expect::status(422, "Invalid")
                .msg_has("`selector` does not match template `labels`")
                .kind("Deployment")
                .group("apps")
                .cause("spec.template.metadata.labels", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment selector changed",
            merge_patch(
                &d1,
                &json!({"spec": {"selector": {"matchLabels": {"app": "d2"}}, "template": {"metadata": {"labels": {"app": "d2"}}}}}),
            ),
            Expect::status(422, "Invalid")
                .msg_has("field is immutable")
                .kind("Deployment")
                .name("d1")
                .cause("spec.selector", "FieldValueInvalid"),
        ),
    ]
}
