//! ConfigMap and Secret contents (pkg/apis/core/validation `ValidateConfigMap`,
//! `ValidateSecret` and their updates): keys are config keys (`IsConfigMapKey`: the regex,
//! 253 characters, not `.`/`..`/`..*`), the data may total 1 MiB (`MaxSecretSize`), and an
//! immutable ConfigMap keeps its data. A ConfigMap reports the size on field `[]`
//! (`field.NewPath("")`), a Secret on `data`.

use serde_json::{Value, json};

use super::{cm, cms, invalid, invalid_cm, merge_patch, ns_path, ok, post};
use crate::bad_input::kube::{self, config_key, max_len};
use crate::bad_input::table::{Case, Expect};

const CLASS: &str = "configmap and secret data";

const MIB: usize = 1024 * 1024;

fn key_row(label: &str, name: &str, key: &str, detail: &str) -> Case {
    Case::new(
        CLASS,
        label,
        post(cms(), &cm(json!({"name": name}), json!({key: "v"}))),
        invalid_cm(name, &format!("data[{key}]"), key, detail),
    )
}

fn secret(name: &str, extra: Value) -> Value {
    let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    secret.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    secret
}

pub fn rows() -> Vec<Case> {
    let k254 = "k".repeat(254);
    let immutable = format!("{}/cm-imm", cms());
    let forbidden = "Forbidden: field is immutable when `immutable` is set";
    vec![
        key_row("data key with a space", "dk-space", "bad key", &config_key()),
        key_row("data key '..'", "dk-dotdot", "..", "must not be '..'"),
        key_row("data key '..x'", "dk-dotdotx", "..x", "must not start with '..'"),
        key_row("data key '.'", "dk-dot", ".", "must not be '.'"),
        key_row("empty data key", "dk-empty", "", &config_key()),
        key_row("data key of 254 characters", "dk-long", &k254, &max_len(253)),
        Case::new(
            CLASS,
            "binaryData key with a space",
            post(cms(), &json!({"metadata": {"name": "bk-space"}, "binaryData": {"bad key": "dg=="}})),
            invalid_cm("bk-space", "binaryData[bad key]", "bad key", &config_key()),
        ),
        Case::new(
            CLASS,
            "key in both data and binaryData",
            post(cms(), &json!({"metadata": {"name": "dk-both"}, "data": {"k": "v"}, "binaryData": {"k": "dg=="}})),
            invalid_cm("dk-both", "data[k]", "k", "duplicate of key present in binaryData"),
        ),
        Case::new(
            CLASS,
            "configmap data over 1 MiB",
            post(cms(), &cm(json!({"name": "cm-big"}), json!({"k": "x".repeat(MIB + 1)}))),
            invalid("ConfigMap", "", "cm-big", &["[]: Too long: may not be more than 1048576 bytes".into()])
                .cause("[]", "FieldValueTooLong"),
        ),
        Case::new(
            CLASS,
            "data and binaryData together over 1 MiB",
            post(
                cms(),
                &json!({"metadata": {"name": "cm-big2"}, "data": {"a": "x".repeat(MIB / 2 + 1)}, "binaryData": {"b": kube::base64(&vec![b'y'; MIB / 2], false)}}),
            ),
            invalid("ConfigMap", "", "cm-big2", &["[]: Too long: may not be more than 1048576 bytes".into()])
                .cause("[]", "FieldValueTooLong"),
        ),
        Case::new(
            CLASS,
            "configmap data of exactly 1 MiB (dry run)",
            post(format!("{}?dryRun=All", cms()), &cm(json!({"name": "cm-edge"}), json!({"k": "x".repeat(MIB)}))),
            ok(201),
        ),
        Case::new(
            CLASS,
            "secret data over 1 MiB",
            post(
                ns_path("secrets"),
                &secret("s-big", json!({"data": {"k": kube::base64(&vec![b'x'; MIB + 1], false)}})),
            ),
            invalid("Secret", "", "s-big", &["data: Too long: may not be more than 1048576 bytes".into()])
                .cause("data", "FieldValueTooLong"),
        ),
        Case::new(
            CLASS,
            "secret data key with a space",
            post(ns_path("secrets"), &secret("s-key", json!({"data": {"bad key": "dg=="}}))),
            invalid("Secret", "", "s-key", &[kube::invalid("data[bad key]", "bad key", &config_key())])
                .cause("data[bad key]", "FieldValueInvalid"),
        ),
        // stringData is folded into data before validation.
        Case::new(
            CLASS,
            "secret stringData key with a space",
            post(ns_path("secrets"), &secret("s-strkey", json!({"stringData": {"bad key": "v"}}))),
            Expect::status(422, "Invalid")
                .msg_has(kube::invalid("data[bad key]", "bad key", &config_key()))
                .kind("Secret")
                .name("s-strkey"),
        ),
        Case::new(
            CLASS,
            "TLS secret without its keys",
            post(ns_path("secrets"), &secret("s-tls", json!({"type": "kubernetes.io/tls", "data": {}}))),
            Expect::status(422, "Invalid")
                .msg_has("data[tls.crt]: Required value")
                .msg_has("data[tls.key]: Required value")
                .kind("Secret")
                .name("s-tls")
                .cause("data[tls.crt]", "FieldValueRequired"),
        ),
        Case::new(
            CLASS,
            "secret type changed",
            merge_patch(format!("{}/s1", ns_path("secrets")), &json!({"type": "Other"})),
            invalid("Secret", "", "s1", &["type: Invalid value: \"Other\": field is immutable".into()])
                .cause("type", "FieldValueInvalid"),
        ),
        Case::new(
            CLASS,
            "immutable configmap: data changed",
            merge_patch(&immutable, &json!({"data": {"k": "changed"}})),
            invalid("ConfigMap", "", "cm-imm", &[format!("data: {forbidden}")]).cause("data", "FieldValueForbidden"),
        ),
        Case::new(
            CLASS,
            "immutable configmap: immutable turned off",
            merge_patch(&immutable, &json!({"immutable": false})),
            invalid("ConfigMap", "", "cm-imm", &[format!("immutable: {forbidden}")])
                .cause("immutable", "FieldValueForbidden"),
        ),
    ]
}
