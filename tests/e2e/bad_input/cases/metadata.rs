//! ObjectMeta: label keys and values, annotation keys and their total size (256 KiB),
//! finalizers, owner references (apimachinery `pkg/api/validation/objectmeta.go`,
//! `pkg/apis/meta/v1/validation`, `pkg/util/validation`).

use serde_json::{Value, json};

use super::{cm, cms, invalid, invalid_cm, ok, post};
use crate::bad_input::kube::{self, config_key, dns_subdomain, label_value, max_len, qualified_name_part};
use crate::bad_input::table::{Case, Expect};

const CLASS: &str = "metadata";

fn with_meta(name: &str, extra: Value) -> Value {
    let mut metadata = json!({"name": name});
    metadata.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    cm(metadata, json!({}))
}

fn label_row(label: &str, name: &str, key: &str, value: &str, bad: &str, details: &[String]) -> Case {
    let errors: Vec<String> = details.iter().map(|d| kube::invalid("metadata.labels", bad, d)).collect();
    Case::new(
        CLASS,
        label,
        post(cms(), &with_meta(name, json!({"labels": {key: value}}))),
        invalid("ConfigMap", "", name, &errors).cause("metadata.labels", "FieldValueInvalid"),
    )
}

pub fn rows() -> Vec<Case> {
    let v64 = "v".repeat(64);
    let qualified_with_prefix = format!(
        "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        qualified_name_part().trim_start_matches("name part ")
    );
    let long_prefix = format!("{}/x", "p".repeat(254));
    let k64 = "k".repeat(64);
    let mut rows = vec![
        label_row("label value of 64 characters", "lv-long", "k", &v64, &v64, &[max_len(63)]),
        label_row("label value with a space", "lv-space", "k", "bad value", "bad value", &[label_value()]),
        label_row("label value with a NUL", "lv-nul", "k", "a\u{0}b", "a\u{0}b", &[label_value()]),
        label_row("label key with a space", "lk-space", "bad key", "v", "bad key", &[qualified_name_part()]),
        label_row(
            "label key with a bad prefix",
            "lk-prefix",
            "Bad_Prefix/x",
            "v",
            "Bad_Prefix/x",
            &[format!("prefix part {}", dns_subdomain())],
        ),
        label_row("label key with two slashes", "lk-slashes", "a/b/c", "v", "a/b/c", &[qualified_with_prefix]),
        label_row("label key with an empty prefix", "lk-empty-prefix", "/x", "v", "/x", &["prefix part must be non-empty".into()]),
        label_row(
            "label key with an empty name part",
            "lk-empty-name",
            "x/",
            "v",
            "x/",
            &["name part must be non-empty".into(), qualified_name_part()],
        ),
        label_row(
            "label key name part of 64 characters",
            "lk-long",
            &k64,
            "v",
            &k64,
            &[format!("name part {}", max_len(63))],
        ),
        label_row(
            "label key prefix of 254 characters",
            "lk-long-prefix",
            &long_prefix,
            "v",
            &long_prefix,
            &[format!("prefix part {}", max_len(253))],
        ),
        Case::new(
            CLASS,
            "annotation key with a space",
            post(cms(), &with_meta("ak-space", json!({"annotations": {"bad key": "v"}}))),
            invalid_cm("ak-space", "metadata.annotations", "bad key", &qualified_name_part()),
        ),
        Case::new(
            CLASS,
            "empty annotation key",
            post(cms(), &with_meta("ak-empty", json!({"annotations": {"": "v"}}))),
            invalid(
                "ConfigMap",
                "",
                "ak-empty",
                &[
                    kube::invalid("metadata.annotations", "", "name part must be non-empty"),
                    kube::invalid("metadata.annotations", "", &qualified_name_part()),
                ],
            ),
        ),
        // Keys plus values over 256 KiB.
        Case::new(
            CLASS,
            "annotations over 256 KiB",
            post(cms(), &with_meta("ann-big", json!({"annotations": {"a": "x".repeat(256 * 1024)}}))),
            invalid("ConfigMap", "", "ann-big", &["metadata.annotations: Too long: may not be more than 262144 bytes".into()])
                .cause("metadata.annotations", "FieldValueTooLong"),
        ),
        Case::new(
            CLASS,
            "annotations of exactly 256 KiB (dry run)",
            post(
                format!("{}?dryRun=All", cms()),
                &with_meta("ann-edge", json!({"annotations": {"a": "x".repeat(256 * 1024 - 1)}})),
            ),
            ok(201),
        ),
        Case::new(
            CLASS,
            "annotation value with a NUL (dry run)",
            post(format!("{}?dryRun=All", cms()), &with_meta("ann-nul", json!({"annotations": {"a": "x\u{0}y"}}))),
            ok(201).json_at("/metadata/annotations/a", json!("x\u{0}y")),
        ),
        // Annotation keys are checked lower-cased.
        Case::new(
            CLASS,
            "upper-case annotation key (dry run)",
            post(format!("{}?dryRun=All", cms()), &with_meta("ann-upper", json!({"annotations": {"Example.COM/Key": "v"}}))),
            ok(201),
        ),
        Case::new(
            CLASS,
            "finalizers orphan and foregroundDeletion together",
            post(cms(), &with_meta("fin-both", json!({"finalizers": ["orphan", "foregroundDeletion"]}))),
            Expect::status(422, "Invalid")
                .msg_has("metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set")
                .kind("ConfigMap")
                .name("fin-both")
                .cause("metadata.finalizers", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "owner reference without uid",
            post(
                cms(),
                &with_meta("owner-nouid", json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm1", "uid": ""}]})),
            ),
            invalid(
                "ConfigMap",
                "",
                "owner-nouid",
                &["metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty".into()],
            )
            .cause("metadata.ownerReferences.uid", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "owner reference without apiVersion",
            post(
                cms(),
                &with_meta(
                    "owner-noversion",
                    json!({"ownerReferences": [{"apiVersion": "", "kind": "ConfigMap", "name": "cm1", "uid": "u-1"}]}),
                ),
            ),
            invalid(
                "ConfigMap",
                "",
                "owner-noversion",
                &["metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty".into()],
            )
            .cause("metadata.ownerReferences.apiVersion", "FieldValueInvalid"),
        ),
    ];
    // Several errors: ObjectMeta's first, then the data's, aggregated in brackets.
    rows.push(Case::new(
        CLASS,
        "bad label value and bad data key together",
        post(cms(), &cm(json!({"name": "two-errors", "labels": {"k": "bad value"}}), json!({"bad key": "v"}))),
        invalid(
            "ConfigMap",
            "",
            "two-errors",
            &[
                kube::invalid("metadata.labels", "bad value", &label_value()),
                kube::invalid("data[bad key]", "bad key", &config_key()),
            ],
        )
        .cause("metadata.labels", "FieldValueInvalid")
        .cause("data[bad key]", "FieldValueInvalid"),
    ));
    rows
}
