//! Object names. Most kinds take a DNS-1123 subdomain (`NameIsDNSSubdomain`), namespaces a
//! DNS-1123 label, services a DNS-1035 label (pkg/apis/core/validation); `generateName` is
//! checked as a prefix (a trailing dash allowed) and the generated name as a name
//! (apimachinery `pkg/api/validation/objectmeta.go`).

use serde_json::json;

use super::{cm, cms, deployments, invalid, invalid_cm, ns_path, ok, post};
use crate::bad_input::kube::{self, dns_label, dns_subdomain, label_value, max_len};
use crate::bad_input::table::{Case, Expect};

const CLASS: &str = "names";

fn bad_cm_name(label: &str, name: &str) -> Case {
    Case::new(
        CLASS,
        format!("configmap named {label}"),
        post(cms(), &cm(json!({"name": name}), json!({}))),
        invalid_cm(name, "metadata.name", name, &dns_subdomain()),
    )
}

pub fn rows() -> Vec<Case> {
    let long = "a".repeat(254);
    let mut rows: Vec<Case> = [
        ("'.'", "."),
        ("'..'", ".."),
        ("a..b", "a..b"),
        ("-a", "-a"),
        ("a-", "a-"),
        ("UPPER", "UPPER"),
        ("a_b", "a_b"),
        ("café", "café"),
        ("a/b", "a/b"),
        ("a%b", "a%b"),
        ("'a b'", "a b"),
        ("with a NUL", "a\u{0}b"),
    ]
    .into_iter()
    .map(|(label, name)| bad_cm_name(label, name))
    .collect();
    let longest_valid = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    rows.extend([
        Case::new(
            CLASS,
            "configmap name of 254 characters",
            post(cms(), &cm(json!({"name": long}), json!({}))),
            invalid_cm(&long, "metadata.name", &long, &max_len(253)),
        ),
        Case::new(
            CLASS,
            "configmap name of 253 characters (dry run)",
            post(format!("{}?dryRun=All", cms()), &cm(json!({"name": longest_valid}), json!({}))),
            ok(201).json_at("/metadata/name", json!(longest_valid)),
        ),
        Case::new(
            CLASS,
            "empty name, no generateName",
            post(cms(), &cm(json!({"name": ""}), json!({}))),
            invalid("ConfigMap", "", "", &["metadata.name: Required value: name or generateName is required".into()])
                .cause("metadata.name", "FieldValueRequired"),
        ),
        // Both the prefix and the generated name fail.
        Case::new(
            CLASS,
            "generateName Bad_",
            post(cms(), &cm(json!({"generateName": "Bad_"}), json!({}))),
            Expect::status(422, "Invalid")
                .msg_has(kube::invalid("metadata.generateName", "Bad_", &dns_subdomain()))
                .kind("ConfigMap")
                .cause("metadata.generateName", "FieldValueInvalid")
                .cause("metadata.name", "FieldValueInvalid"),
        ),
        // The generated name is cut to fit; the prefix itself is too long.
        Case::new(
            CLASS,
            "generateName of 300 characters",
            post(cms(), &cm(json!({"generateName": "a".repeat(300)}), json!({}))),
            Expect::status(422, "Invalid")
                .msg_has(kube::invalid("metadata.generateName", &"a".repeat(300), &max_len(253)))
                .kind("ConfigMap")
                .cause("metadata.generateName", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "generateName only (dry run)",
            post(format!("{}?dryRun=All", cms()), &cm(json!({"generateName": "gen-"}), json!({}))),
            ok(201),
        ),
        // The decoder's defaulting (`SetDefaults_Namespace`, pkg/apis/core/v1/defaults.go) has
        // already set the `kubernetes.io/metadata.name` label to the name when
        // `ValidateObjectMetaAccessor` (apimachinery pkg/api/validation/objectmeta.go) runs, so
        // the label value fails too, on `metadata.labels`, after the name.
        Case::new(
            CLASS,
            "namespace named -ns",
            post("/api/v1/namespaces", &json!({"metadata": {"name": "-ns"}})),
            invalid(
                "Namespace",
                "",
                "-ns",
                &[kube::invalid("metadata.name", "-ns", &dns_label()), kube::invalid("metadata.labels", "-ns", &label_value())],
            )
            .cause("metadata.name", "FieldValueInvalid")
            .cause("metadata.labels", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "namespace name of 64 characters",
            post("/api/v1/namespaces", &json!({"metadata": {"name": "n".repeat(64)}})),
            invalid(
                "Namespace",
                "",
                &"n".repeat(64),
                &[
                    kube::invalid("metadata.name", &"n".repeat(64), &max_len(63)),
                    kube::invalid("metadata.labels", &"n".repeat(64), &max_len(63)),
                ],
            ),
        ),
        Case::new(
            CLASS,
            "service named 1svc (DNS-1035)",
            post(ns_path("services"), &json!({"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}})),
            Expect::status(422, "Invalid")
                .msg_has("Service \"1svc\" is invalid: ")
                .msg_has("metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character")
                .kind("Service")
                .name("1svc")
                .cause("metadata.name", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "node named Bad_Node",
            post("/api/v1/nodes", &json!({"metadata": {"name": "Bad_Node"}})),
            Expect::status(422, "Invalid")
                .msg_has(format!("Node \"Bad_Node\" is invalid: {}", kube::invalid("metadata.name", "Bad_Node", &dns_subdomain())))
                .kind("Node")
                .name("Bad_Node")
                .cause("metadata.name", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "deployment named Bad",
            post(
                deployments(),
                &json!({
                    "metadata": {"name": "Bad"},
                    "spec": {
                        "selector": {"matchLabels": {"app": "x"}},
                        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
                    }
                }),
            ),
            Expect::status(422, "Invalid")
                .msg_has(format!("Deployment.apps \"Bad\" is invalid: {}", kube::invalid("metadata.name", "Bad", &dns_subdomain())))
                .kind("Deployment")
                .group("apps")
                .name("Bad")
                .cause("metadata.name", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "pod named p..1",
            post(ns_path("pods"), &json!({"metadata": {"name": "p..1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})),
            Expect::status(422, "Invalid")
                .msg_has(format!("Pod \"p..1\" is invalid: {}", kube::invalid("metadata.name", "p..1", &dns_subdomain())))
                .kind("Pod")
                .name("p..1"),
        ),
        Case::new(
            CLASS,
            "secret named Bad",
            post(ns_path("secrets"), &json!({"metadata": {"name": "Bad"}})),
            invalid("Secret", "", "Bad", &[kube::invalid("metadata.name", "Bad", &dns_subdomain())])
                .cause("metadata.name", "FieldValueInvalid"),
        ),
    ]);
    rows
}
