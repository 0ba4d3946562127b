//! DELETE (handlers/delete.go). Options come from the body when there is one, else from the
//! query; they are validated (422 `DeleteOptions.meta.k8s.io`, apimachinery
//! `ValidateDeleteOptions`); preconditions that do not hold are a 409 from `rest.BeforeDelete` (registry/rest/delete.go),
//! which names the kind and both values. A body that does not
//! decode to DeleteOptions is a plain error in kube-apiserver (a 500); the house rules make it
//! a 400, and nothing is deleted. The immortal namespaces are protected by NamespaceLifecycle.
//! These rows run last: a wrongly accepted one deletes a fixture.

use serde_json::{Value, json};

use super::{bad_request, cms, invalid_options, next_victim, not_found, ns_path, victim_path};
use crate::bad_input::fixtures::{Fixtures, rv, uid};
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "deletes";

fn delete(path: impl Into<String>) -> Request {
    Request::new("DELETE", path)
}

fn delete_with(path: impl Into<String>, body: &str) -> Request {
    Request::new("DELETE", path).body(body.to_string())
}

/// rest.BeforeDelete checks preconditions before storage does, and names the kind (not the
/// resource) in its Conflict.
fn precondition_failed(kind: &str, name: &str, detail: String) -> Expect {
    Expect::status(409, "Conflict")
        .msg(format!("Operation cannot be fulfilled on {kind} \"{name}\": {detail}"))
        .name(name)
        .kind(kind)
}

fn name(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap_or_default().to_string()
}

fn uid_mismatch(uid: &str) -> String {
    format!(
        "the UID in the precondition (wrong) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
}

const POLICY: &str = "propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"";
const DRY_RUN: &str = "dryRun: Unsupported value: []string{\"Bogus\"}: supported values: \"All\"";

pub fn rows<'a>(fx: &Fixtures, victims: &mut impl Iterator<Item = &'a Value>) -> Vec<Case> {
    let pod_uid = uid(&fx.pod);
    let p1 = format!("{}/p1", ns_path("pods"));
    let by_uid = next_victim(victims);
    let by_rv = next_victim(victims);
    let dry = next_victim(victims);
    let mut next = || victim_path(next_victim(victims));
    vec![
        Case::new(
            CLASS,
            "precondition on another uid",
            delete_with(victim_path(by_uid), r#"{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"wrong"}}"#),
            precondition_failed("ConfigMap", &name(by_uid), uid_mismatch(&uid(by_uid))),
        ),
        Case::new(
            CLASS,
            "precondition on an old resourceVersion",
            delete_with(victim_path(by_rv), r#"{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"resourceVersion":"1"}}"#),
            precondition_failed(
                "ConfigMap",
                &name(by_rv),
                format!(
                    "the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified",
                    rv(by_rv)
                ),
            ),
        ),
        Case::new(
            CLASS,
            "precondition on another uid (bound pod)",
            delete_with(&p1, r#"{"preconditions":{"uid":"wrong"}}"#),
            precondition_failed("Pod", "p1", uid_mismatch(&pod_uid)),
        ),
        Case::new(CLASS, "body is a ConfigMap", delete_with(next(), r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm1"}}"#), Expect::status(400, "BadRequest")),
        Case::new(CLASS, "body is not JSON", delete_with(next(), "{"), Expect::status(400, "BadRequest")),
        Case::new(
            CLASS,
            "body with gracePeriodSeconds a string",
            delete_with(next(), r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":"soon"}"#),
            Expect::status(400, "BadRequest"),
        ),
        Case::new(
            CLASS,
            "propagationPolicy Bogus (query)",
            delete(format!("{}?propagationPolicy=Bogus", next())),
            invalid_options("DeleteOptions", &[POLICY.into()]).cause("propagationPolicy", "FieldValueNotSupported"),
        ),
        Case::new(
            CLASS,
            "propagationPolicy Bogus (body)",
            delete_with(next(), r#"{"propagationPolicy":"Bogus"}"#),
            invalid_options("DeleteOptions", &[POLICY.into()]),
        ),
        Case::new(
            CLASS,
            "dryRun Bogus (query)",
            delete(format!("{}?dryRun=Bogus", next())),
            invalid_options("DeleteOptions", &[DRY_RUN.into()]).cause("dryRun", "FieldValueNotSupported"),
        ),
        Case::new(CLASS, "dryRun Bogus (body)", delete_with(next(), r#"{"dryRun":["Bogus"]}"#), invalid_options("DeleteOptions", &[DRY_RUN.into()])),
        Case::new(
            CLASS,
            "orphanDependents with propagationPolicy",
            delete(format!("{}?orphanDependents=true&propagationPolicy=Background", next())),
            invalid_options(
                "DeleteOptions",
                &["propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set".into()],
            ),
        ),
        Case::new(
            CLASS,
            "gracePeriodSeconds abc",
            delete(format!("{}?gracePeriodSeconds=abc", next())),
            bad_request("strconv.ParseInt: parsing \"abc\": invalid syntax"),
        ),
        Case::new(
            CLASS,
            "gracePeriodSeconds beyond int64",
            delete(format!("{}?gracePeriodSeconds=99999999999999999999", next())),
            bad_request("strconv.ParseInt: parsing \"99999999999999999999\": value out of range"),
        ),
        Case::new(
            CLASS,
            "gracePeriodSeconds max int64 on a missing object",
            delete(format!("{}/nope?gracePeriodSeconds=9223372036854775807", cms())),
            not_found("configmaps", "nope"),
        ),
        Case::new(CLASS, "missing object", delete(format!("{}/nope", cms())), not_found("configmaps", "nope")),
        Case::new(
            CLASS,
            "dry run",
            delete(format!("{}?dryRun=All", victim_path(dry))),
            Expect::code(200).json_at("/status", json!("Success")).json_at("/details/name", json!(name(dry))),
        ),
        Case::new(
            CLASS,
            "namespace default (dry run)",
            delete("/api/v1/namespaces/default?dryRun=All"),
            Expect::status(403, "Forbidden")
                .msg("namespaces \"default\" is forbidden: this namespace may not be deleted")
                .name("default")
                .kind("namespaces"),
        ),
        Case::new(
            CLASS,
            "namespace kube-system (dry run)",
            delete("/api/v1/namespaces/kube-system?dryRun=All"),
            Expect::status(403, "Forbidden").msg("namespaces \"kube-system\" is forbidden: this namespace may not be deleted"),
        ),
        Case::new(
            CLASS,
            "collection with a bad labelSelector",
            delete(format!("{}?labelSelector=a%20in%20%28", cms())),
            bad_request("unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ),
        Case::new(
            CLASS,
            "collection with a bad fieldSelector",
            delete(format!("{}?fieldSelector=bogus", cms())),
            bad_request("invalid selector: 'bogus'; can't understand 'bogus'"),
        ),
        Case::new(
            CLASS,
            "collection with dryRun Bogus",
            delete(format!("{}?dryRun=Bogus", cms())),
            invalid_options("DeleteOptions", &[DRY_RUN.into()]),
        ),
    ]
}
