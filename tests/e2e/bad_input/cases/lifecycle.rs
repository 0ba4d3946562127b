//! Namespaces as admission sees them: creating in a namespace that does not exist is 404
//! `namespaces "<ns>" not found` from NamespaceLifecycle, which runs before the object is
//! validated; the namespace in a body must be the URL's; reads and updates in a missing
//! namespace are about the object (its 404), a list there is empty.

use serde_json::json;

use super::{bad_request, cm, get, not_found, post};
use crate::bad_input::fixtures::NS;
use crate::bad_input::table::{Case, Expect};

const CLASS: &str = "namespace lifecycle";

pub fn rows() -> Vec<Case> {
    let missing = "/api/v1/namespaces/nope";
    vec![
        Case::new(
            CLASS,
            "create in a missing namespace",
            post(format!("{missing}/configmaps"), &cm(json!({"name": "x"}), json!({}))),
            not_found("namespaces", "nope"),
        ),
        Case::new(
            CLASS,
            "create an invalid object in a missing namespace",
            post(format!("{missing}/configmaps"), &cm(json!({"name": "Bad_Name"}), json!({"bad key": "v"}))),
            not_found("namespaces", "nope"),
        ),
        Case::new(
            CLASS,
            "create a pod in a missing namespace",
            post(
                format!("{missing}/pods"),
                &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            ),
            not_found("namespaces", "nope"),
        ),
        Case::new(
            CLASS,
            "create with another namespace in the body",
            post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                &cm(json!({"name": "x", "namespace": "default"}), json!({})),
            ),
            bad_request("the namespace of the provided object does not match the namespace sent on the request"),
        ),
        Case::new(
            CLASS,
            "create with a missing namespace in the body",
            post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                &cm(json!({"name": "x", "namespace": "nope"}), json!({})),
            ),
            bad_request("the namespace of the provided object does not match the namespace sent on the request"),
        ),
        Case::new(
            CLASS,
            "get in a missing namespace",
            get(format!("{missing}/configmaps/cm1")),
            not_found("configmaps", "cm1"),
        ),
        Case::new(
            CLASS,
            "list in a missing namespace",
            get(format!("{missing}/configmaps")),
            Expect::code(200).json_at("/items", json!([])),
        ),
    ]
}
