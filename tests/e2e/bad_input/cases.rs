//! The rows, one file per class of mistake. Each row names where its expected answer comes
//! from when that is not plain from the handler order in k8s.io/apiserver
//! `pkg/endpoints/handlers/{create,update,patch,delete,get}.go` (release-1.32).

mod apply;
mod bodies;
mod data;
mod deletes;
mod framing;
mod lifecycle;
mod limits;
mod metadata;
mod methods;
mod names;
mod negotiation;
mod patches;
mod paths;
mod query;
mod updates;
mod workloads;

use serde_json::{Value, json};

use super::fixtures::{Fixtures, NS};
use super::kube;
use super::table::{Case, Expect, Request};

/// Every row. Reads and creates first; then the rows that would change a fixture if wrongly
/// accepted; deletes and the methods (`DELETE /api/v1/configmaps`) last.
pub fn all(fx: &Fixtures) -> Vec<Case> {
    let mut victims = fx.victims.iter();
    let mut rows = Vec::new();
    rows.extend(bodies::rows());
    rows.extend(names::rows());
    rows.extend(metadata::rows());
    rows.extend(paths::rows());
    rows.extend(negotiation::rows(&mut victims));
    rows.extend(query::rows(fx));
    rows.extend(lifecycle::rows());
    rows.extend(limits::rows(&mut victims));
    rows.extend(framing::rows());
    rows.extend(data::rows());
    rows.extend(workloads::rows(fx));
    rows.extend(updates::rows(fx));
    rows.extend(patches::rows());
    rows.extend(apply::rows());
    rows.extend(deletes::rows(fx, &mut victims));
    rows.extend(methods::rows());
    rows
}

/// The path of a victim ConfigMap (one per DELETE row).
pub fn victim_path(victim: &Value) -> String {
    format!("{}/{}", cms(), victim["metadata"]["name"].as_str().expect("a victim has a name"))
}

/// The next unused victim.
pub fn next_victim<'a>(victims: &mut impl Iterator<Item = &'a Value>) -> &'a Value {
    victims.next().expect("enough victims (fixtures::VICTIMS)")
}

pub fn cms() -> String {
    format!("/api/v1/namespaces/{NS}/configmaps")
}

pub fn cm1() -> String {
    format!("{}/cm1", cms())
}

pub fn ns_path(resource: &str) -> String {
    format!("/api/v1/namespaces/{NS}/{resource}")
}

pub fn deployments() -> String {
    format!("/apis/apps/v1/namespaces/{NS}/deployments")
}

/// A ConfigMap body with this metadata and data.
pub fn cm(metadata: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
}

pub fn post(path: impl Into<String>, body: &Value) -> Request {
    Request::new("POST", path).json(body)
}

pub fn put(path: impl Into<String>, body: &Value) -> Request {
    Request::new("PUT", path).json(body)
}

pub fn get(path: impl Into<String>) -> Request {
    Request::new("GET", path)
}

pub fn merge_patch(path: impl Into<String>, body: &Value) -> Request {
    Request::new("PATCH", path).json(body).content_type("application/merge-patch+json")
}

pub fn json_patch(path: impl Into<String>, body: &Value) -> Request {
    Request::new("PATCH", path).json(body).content_type("application/json-patch+json")
}

/// 422 `<Kind> "<name>" is invalid: <errors>` with the details kube sets.
pub fn invalid(kind: &str, group: &str, name: &str, errors: &[String]) -> Expect {
    let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
    let mut expect = Expect::status(422, "Invalid").msg(kube::is_invalid(&qualified, name, errors)).kind(kind);
    if !name.is_empty() {
        expect = expect.name(name);
    }
    if !group.is_empty() {
        expect = expect.group(group);
    }
    expect
}

/// 422 for a ConfigMap, one `Invalid value` on `field`.
pub fn invalid_cm(name: &str, field: &str, value: &str, detail: &str) -> Expect {
    invalid("ConfigMap", "", name, &[kube::invalid(field, value, detail)]).cause(field, "FieldValueInvalid")
}

/// 422 for invalid request options (`CreateOptions`, `ListOptions`...), group meta.k8s.io.
pub fn invalid_options(kind: &str, errors: &[String]) -> Expect {
    invalid(kind, "meta.k8s.io", "", errors)
}

/// 400 with this exact message.
pub fn bad_request(message: impl Into<String>) -> Expect {
    Expect::status(400, "BadRequest").msg(message)
}

/// 404 `<resource> "<name>" not found`.
pub fn not_found(resource: &str, name: &str) -> Expect {
    Expect::status(404, "NotFound")
        .msg(format!("{resource} {} not found", kube::go_quote(name)))
        .name(name)
        .kind(resource)
}

/// go-restful's 404 for a path no route serves.
pub fn no_route() -> Expect {
    Expect::status(404, "NotFound").msg("the server could not find the requested resource")
}

/// go-restful's 405, with the methods the path has.
pub fn not_allowed(methods: &[&'static str]) -> Expect {
    Expect::status(405, "MethodNotAllowed")
        .msg("the server does not allow this method on the requested resource")
        .allow(methods)
}

/// The 409 of an update or delete from an older resourceVersion.
pub fn modified(resource: &str, name: &str) -> Expect {
    Expect::status(409, "Conflict")
        .msg(format!(
            "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
        ))
        .name(name)
        .kind(resource)
}

pub const MAX_BODY: usize = 3 * 1024 * 1024;

pub fn too_large() -> Expect {
    Expect::status(413, "RequestEntityTooLarge").msg(format!("Request entity too large: limit is {MAX_BODY}"))
}

/// The answer to a dry run or a read that succeeds.
pub fn ok(code: u16) -> Expect {
    Expect::code(code)
}
