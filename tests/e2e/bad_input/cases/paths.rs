//! Paths: percent-encoding (Go decodes the path before routing, so `%2F` splits a segment and
//! `%2e%2e` is `..`), names that are not path segments (`NamespaceKeyFunc`:
//! `Name parameter invalid: "..": may not be '..'`), and paths no route serves. go-restful
//! answers those with a Status 404 (`serviceErrorHandler`, generic message); paths outside
//! every API group reach Go's `http.NotFound` (plain text), so those rows check the code only.

use serde_json::json;

use super::{bad_request, cm1, cms, get, no_route, not_found, ns_path};
use crate::bad_input::fixtures::{NODE, NS};
use crate::bad_input::table::{Case, Expect};

const PATHS: &str = "paths and percent-encoding";
const UNKNOWN: &str = "unknown resources, groups, versions";

pub fn rows() -> Vec<Case> {
    let list = |pointer: &'static str, value| Expect::code(200).json_at(pointer, value);
    vec![
        Case::new(
            PATHS,
            "name ..",
            get(format!("{}/..", cms())),
            bad_request("Name parameter invalid: \"..\": may not be '..'"),
        ),
        Case::new(
            PATHS,
            "name .",
            get(format!("{}/.", cms())),
            bad_request("Name parameter invalid: \".\": may not be '.'"),
        ),
        Case::new(
            PATHS,
            "name %2e%2e",
            get(format!("{}/%2e%2e", cms())),
            bad_request("Name parameter invalid: \"..\": may not be '..'"),
        ),
        Case::new(
            PATHS,
            "name with %25",
            get(format!("{}/a%25b", cms())),
            bad_request("Name parameter invalid: \"a%b\": may not contain '%'"),
        ),
        Case::new(PATHS, "name with %2F", get(format!("{}/a%2Fb", cms())), no_route()),
        Case::new(
            PATHS,
            "name %-encoded",
            get(format!("{}/cm%31", cms())),
            Expect::code(200).json_at("/metadata/name", json!("cm1")),
        ),
        Case::new(
            PATHS,
            "namespace %-encoded",
            get("/api/v1/namespaces/bad%2Dinput/configmaps/cm1"),
            Expect::code(200).json_at("/metadata/name", json!("cm1")),
        ),
        Case::new(
            PATHS,
            "resource %-encoded",
            get(format!("/api/v1/namespaces/{NS}/config%6Daps")),
            list("/kind", json!("ConfigMapList")),
        ),
        Case::new(PATHS, "trailing slash", get(format!("{}/", cms())), list("/kind", json!("ConfigMapList"))),
        // The namespace is a key segment, not a path: nothing is found above it.
        Case::new(PATHS, "namespace ..", get("/api/v1/namespaces/../configmaps"), list("/items", json!([]))),
        Case::new(
            PATHS,
            "GET an invalid name",
            get(format!("{}/Bad_Name", cms())),
            not_found("configmaps", "Bad_Name"),
        ),
        Case::new(
            PATHS,
            "name with %00",
            get(format!("{}/cm1%00", cms())),
            Expect::status(404, "NotFound").msg("configmaps \"cm1\\x00\" not found"),
        ),
        Case::new(UNKNOWN, "subresource configmaps lack", get(format!("{}/status", cm1())), no_route()),
        Case::new(UNKNOWN, "two segments past the name", get(format!("{}/a/b", cm1())), no_route()),
        Case::new(UNKNOWN, "cluster-scoped kind under a namespace", get(ns_path("nodes")), no_route()),
        Case::new(UNKNOWN, "namespaced object without a namespace", get("/api/v1/configmaps/cm1"), no_route()),
        Case::new(UNKNOWN, "namespaces under a namespace", get(ns_path("namespaces")), no_route()),
        Case::new(UNKNOWN, "scale of a node", get(format!("/api/v1/nodes/{NODE}/scale")), no_route()),
        Case::new(UNKNOWN, "unknown core resource", get(ns_path("widgets")), no_route()),
        Case::new(
            UNKNOWN,
            "unknown resource in apps/v1",
            get(format!("/apis/apps/v1/namespaces/{NS}/widgets")),
            no_route(),
        ),
        Case::new(UNKNOWN, "unknown version of apps", get("/apis/apps/v2/deployments"), no_route()),
        Case::new(UNKNOWN, "unknown core version", get("/api/v2/pods"), no_route()),
        // kube-apiserver fails to build a RequestInfo here and answers 500; a client's path
        // mistake is a 404 by the house rules.
        Case::new(UNKNOWN, "bare /watch", get("/api/v1/watch"), no_route()),
        Case::new(UNKNOWN, "unknown group", get("/apis/nope.example.com/v1/widgets"), Expect::code(404)),
        Case::new(UNKNOWN, "unknown group discovery", get("/apis/nope.example.com"), Expect::code(404)),
        Case::new(UNKNOWN, "path outside the API", get("/nope"), Expect::code(404)),
    ]
}
