//! PUT and CREATE against what exists: the name and namespace in the body must match the URL
//! (`checkName`, `EnsureObjectNamespaceMatchesRequestNamespace`), a uid in the body is a
//! precondition (`defaultUpdatedObjectInfo.Preconditions`; failing, storage's InvalidObj
//! becomes a 409), a resourceVersion must be the current one (`OptimisticLockErrorMsg`), and
//! the write options are validated before the body is decoded (422 `CreateOptions` /
//! `UpdateOptions`, apimachinery `pkg/apis/meta/v1/validation`).

use serde_json::{Value, json};

use super::{bad_request, cm, cm1, cms, invalid, invalid_options, modified, not_found, ok, post, put};
use crate::bad_input::fixtures::{Fixtures, NS, uid};
use crate::bad_input::kube::{self, label_value};
use crate::bad_input::table::{Case, Expect, Request};

const UPDATES: &str = "updates and preconditions";
const OPTIONS: &str = "write options (dryRun, fieldValidation, fieldManager)";

const OTHER_UID: &str = "00000000-0000-0000-0000-000000000000";

/// A fixture with `edit` applied and no resourceVersion (an unconditional update), so that a
/// fixture changed by an earlier row does not turn the row into a conflict.
fn edited(object: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut object = object.clone();
    object["metadata"].as_object_mut().expect("metadata").remove("resourceVersion");
    edit(&mut object);
    object
}

fn dry_run_values(values: &str) -> String {
    format!("dryRun: Unsupported value: []string{{{values}}}: supported values: \"All\"")
}

pub fn rows(fx: &Fixtures) -> Vec<Case> {
    let cm1_uid = uid(&fx.cm);
    let m129 = "m".repeat(129);
    let m128 = "m".repeat(128);
    let body = cm(json!({"name": "opts"}), json!({}));
    let field_validation =
        "fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"";
    let too_long = "fieldManager: Too long: may not be more than 128 bytes";
    vec![
        Case::new(
            UPDATES,
            "PUT with another name in the body",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["name"] = json!("other"))),
            bad_request("the name of the object (other) does not match the name on the URL (cm1)"),
        ),
        Case::new(
            UPDATES,
            "PUT with another namespace in the body",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["namespace"] = json!("default"))),
            bad_request("the namespace of the provided object does not match the namespace sent on the request"),
        ),
        Case::new(
            UPDATES,
            "PUT with another uid",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["uid"] = json!(OTHER_UID))),
            Expect::status(409, "Conflict")
                .msg_has("Operation cannot be fulfilled on configmaps \"cm1\": ")
                .msg_has(format!("Precondition failed: UID in precondition: {OTHER_UID}, UID in object meta: {cm1_uid}"))
                .name("cm1")
                .kind("configmaps"),
        ),
        Case::new(
            UPDATES,
            "PUT with a stale resourceVersion",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["resourceVersion"] = json!("1"))),
            modified("configmaps", "cm1"),
        ),
        // kube's versioner returns strconv's error untyped (a 500); the house rules make it 400.
        Case::new(
            UPDATES,
            "PUT with resourceVersion abc",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["resourceVersion"] = json!("abc"))),
            Expect::status(400, "BadRequest").msg_has("\"abc\""),
        ),
        Case::new(UPDATES, "PUT of a missing object", put(format!("{}/nope", cms()), &cm(json!({"name": "nope"}), json!({}))), not_found("configmaps", "nope")),
        Case::new(
            UPDATES,
            "PUT in a missing namespace",
            put("/api/v1/namespaces/nope/configmaps/cm1", &cm(json!({"name": "cm1"}), json!({}))),
            not_found("configmaps", "cm1"),
        ),
        Case::new(
            UPDATES,
            "PUT with an invalid label",
            put(cm1(), &edited(&fx.cm, |o| o["metadata"]["labels"] = json!({"k": "bad value"}))),
            invalid("ConfigMap", "", "cm1", &[kube::invalid("metadata.labels", "bad value", &label_value())])
                .cause("metadata.labels", "FieldValueInvalid"),
        ),
        Case::new(
            UPDATES,
            "PUT dry run of a change",
            put(format!("{}?dryRun=All", cm1()), &edited(&fx.cm, |o| o["data"]["k"] = json!("changed"))),
            ok(200).json_at("/data/k", json!("changed")),
        ),
        Case::new(
            UPDATES,
            "PUT a namespace under another name",
            put(format!("/api/v1/namespaces/{NS}"), &edited(&fx.namespace, |o| o["metadata"]["name"] = json!("other"))),
            bad_request(format!("the name of the object (other) does not match the name on the URL ({NS})")),
        ),
        Case::new(
            UPDATES,
            "POST an existing name",
            post(cms(), &cm(json!({"name": "cm1"}), json!({}))),
            Expect::status(409, "AlreadyExists").msg("configmaps \"cm1\" already exists").name("cm1").kind("configmaps"),
        ),
        Case::new(
            OPTIONS,
            "create dryRun Bogus",
            post(format!("{}?dryRun=Bogus", cms()), &body),
            invalid_options("CreateOptions", &[dry_run_values("\"Bogus\"")]).cause("dryRun", "FieldValueNotSupported"),
        ),
        Case::new(
            OPTIONS,
            "create dryRun All and Bogus",
            post(format!("{}?dryRun=All&dryRun=Bogus", cms()), &body),
            invalid_options("CreateOptions", &[dry_run_values("\"All\", \"Bogus\"")]),
        ),
        Case::new(
            OPTIONS,
            "create fieldValidation Bogus",
            post(format!("{}?fieldValidation=Bogus", cms()), &body),
            invalid_options("CreateOptions", &[field_validation.into()]).cause("fieldValidation", "FieldValueNotSupported"),
        ),
        Case::new(
            OPTIONS,
            "create fieldValidation strict (lower case)",
            post(format!("{}?fieldValidation=strict", cms()), &body),
            invalid_options(
                "CreateOptions",
                &["fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"".into()],
            ),
        ),
        Case::new(
            OPTIONS,
            "create fieldManager of 129 characters",
            post(format!("{}?fieldManager={m129}", cms()), &body),
            invalid_options("CreateOptions", &[too_long.into()]).cause("fieldManager", "FieldValueTooLong"),
        ),
        Case::new(
            OPTIONS,
            "create fieldManager with a control character",
            post(format!("{}?fieldManager=a%07b", cms()), &body),
            invalid_options("CreateOptions", &["fieldManager: Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)".into()])
                .cause("fieldManager", "FieldValueInvalid"),
        ),
        Case::new(
            OPTIONS,
            "create fieldManager of 128 characters (dry run)",
            post(format!("{}?dryRun=All&fieldManager={m128}", cms()), &body),
            ok(201),
        ),
        Case::new(
            OPTIONS,
            "update dryRun Bogus",
            put(format!("{}?dryRun=Bogus", cm1()), &edited(&fx.cm, |_| {})),
            invalid_options("UpdateOptions", &[dry_run_values("\"Bogus\"")]),
        ),
        Case::new(
            OPTIONS,
            "update fieldManager of 129 characters",
            put(format!("{}?fieldManager={m129}", cm1()), &edited(&fx.cm, |_| {})),
            invalid_options("UpdateOptions", &[too_long.into()]),
        ),
        Case::new(
            OPTIONS,
            "patch dryRun Bogus",
            super::merge_patch(format!("{}?dryRun=Bogus", cm1()), &json!({})),
            invalid_options("PatchOptions", &[dry_run_values("\"Bogus\"")]),
        ),
        Case::new(
            OPTIONS,
            "patch fieldValidation Bogus",
            super::merge_patch(format!("{}?fieldValidation=Bogus", cm1()), &json!({})),
            invalid_options("PatchOptions", &[field_validation.into()]),
        ),
        Case::new(
            OPTIONS,
            "patch fieldManager of 129 characters",
            super::merge_patch(format!("{}?fieldManager={m129}", cm1()), &json!({})),
            invalid_options("PatchOptions", &[too_long.into()]),
        ),
        Case::new(
            OPTIONS,
            "force on a merge patch",
            super::merge_patch(format!("{}?force=true", cm1()), &json!({})),
            invalid_options("PatchOptions", &["force: Forbidden: may not be specified for non-apply patch".into()])
                .cause("force", "FieldValueForbidden"),
        ),
        Case::new(
            OPTIONS,
            "apply patch without fieldManager",
            Request::new("PATCH", cm1()).content_type("application/apply-patch+yaml").body("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n"),
            invalid_options("PatchOptions", &["fieldManager: Required value: is required for apply patch".into()])
                .cause("fieldManager", "FieldValueRequired"),
        ),
    ]
}
