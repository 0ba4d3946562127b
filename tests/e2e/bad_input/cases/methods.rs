//! Methods a path does not take. go-restful matches the path, then the method, and answers
//! 405 with an `Allow` list of the path's routes (`RouterJSR311.detectRoute`); kube's
//! `serviceErrorHandler` turns it into a Status with the generic message. (kube 1.32 drops the
//! `Allow` header on the way; RFC 9110 requires it on a 405, and the project sends it.)
//! Routes per path follow the installer's order: collection GET, POST, DELETE; object GET,
//! PUT, PATCH, DELETE; `/status` and `/scale` GET, PUT, PATCH; discovery GET.

use serde_json::json;

use super::{cm1, cms, deployments, not_allowed, ns_path, post};
use crate::bad_input::fixtures::{NODE, NS};
use crate::bad_input::table::{Case, Request};

const CLASS: &str = "methods (405)";

const COLLECTION: &[&str] = &["GET", "POST", "DELETE"];
const OBJECT: &[&str] = &["GET", "PUT", "PATCH", "DELETE"];
const SUBRESOURCE: &[&str] = &["GET", "PUT", "PATCH"];

fn row(name: &str, request: Request, allow: &[&'static str]) -> Case {
    Case::new(CLASS, name, request, not_allowed(allow))
}

pub fn rows() -> Vec<Case> {
    vec![
        row("DELETE /api/v1", Request::new("DELETE", "/api/v1"), &["GET"]),
        row("DELETE /api", Request::new("DELETE", "/api"), &["GET"]),
        row("PUT /apis/apps/v1", Request::new("PUT", "/apis/apps/v1").json(&json!({})), &["GET"]),
        row("DELETE /version", Request::new("DELETE", "/version"), &["GET"]),
        row("OPTIONS /version", Request::new("OPTIONS", "/version"), &["GET"]),
        row("lower-case get /version", Request::new("get", "/version"), &["GET"]),
        row("FROB a collection", Request::new("FROB", cms()), COLLECTION),
        row("OPTIONS a collection", Request::new("OPTIONS", cms()), COLLECTION),
        row("TRACE an object", Request::new("TRACE", cm1()), OBJECT),
        row("PUT a collection", Request::new("PUT", cms()).json(&json!({})), COLLECTION),
        row(
            "PATCH a collection",
            Request::new("PATCH", cms()).content_type("application/merge-patch+json").json(&json!({})),
            COLLECTION,
        ),
        row("POST to an object", post(cm1(), &json!({"metadata": {"name": "cm1"}})), OBJECT),
        row("POST to a namespace", post(format!("/api/v1/namespaces/{NS}"), &json!({})), OBJECT),
        row("POST across namespaces", post("/api/v1/configmaps", &json!({"metadata": {"name": "x"}})), &["GET"]),
        row("DELETE across namespaces", Request::new("DELETE", "/api/v1/configmaps"), &["GET"]),
        row("DELETE all namespaces", Request::new("DELETE", "/api/v1/namespaces"), &["GET", "POST"]),
        row("POST to pods/status", post(format!("{}/p1/status", ns_path("pods")), &json!({})), SUBRESOURCE),
        row("DELETE nodes/status", Request::new("DELETE", format!("/api/v1/nodes/{NODE}/status")), SUBRESOURCE),
        row("DELETE deployments/scale", Request::new("DELETE", format!("{}/d1/scale", deployments())), SUBRESOURCE),
    ]
}
