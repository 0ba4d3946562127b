//! Request size and nesting. Every body is read up to 3 MiB (`limitedReadBody`, exactly
//! 3145728 bytes pass, one more is 413 `Request entity too large: limit is 3145728`), whatever
//! the verb. JSON may nest 10000 levels (encoding/json's scanner, also in the strict patch
//! decode); deeper is refused where it is decoded.

use serde_json::{Value, json};

use super::bodies::nested;
use super::{MAX_BODY, cm, cm1, cms, next_victim, ns_path, ok, too_large, victim_path};
use crate::bad_input::table::{Case, Expect, Request};

const CLASS: &str = "size limits and nesting";

/// A ConfigMap body padded with spaces to exactly `size` bytes.
fn padded(size: usize) -> Vec<u8> {
    let mut body = cm(json!({"name": "padded"}), json!({"k": "v"})).to_string().into_bytes();
    body.resize(size, b' ');
    body
}

/// A merge patch `{"x": [[...]]}` whose depth is `depth`.
fn nested_patch(depth: usize) -> Vec<u8> {
    let arrays = depth - 1;
    format!(r#"{{"x":{}{}}}"#, "[".repeat(arrays), "]".repeat(arrays)).into_bytes()
}

pub fn rows<'a>(victims: &mut impl Iterator<Item = &'a Value>) -> Vec<Case> {
    let big = vec![b' '; MAX_BODY + 1];
    vec![
        Case::new(
            CLASS,
            "create body of exactly 3 MiB (dry run)",
            Request::new("POST", format!("{}?dryRun=All", cms())).body(padded(MAX_BODY)),
            ok(201),
        ),
        Case::new(
            CLASS,
            "create body of 3 MiB + 1",
            Request::new("POST", cms()).body(padded(MAX_BODY + 1)),
            too_large(),
        ),
        Case::new(
            CLASS,
            "secret body over 3 MiB",
            Request::new("POST", ns_path("secrets")).body(big.clone()),
            too_large(),
        ),
        Case::new(CLASS, "update body over 3 MiB", Request::new("PUT", cm1()).body(big.clone()), too_large()),
        Case::new(
            CLASS,
            "patch body over 3 MiB",
            Request::new("PATCH", cm1()).content_type("application/merge-patch+json").body(big.clone()),
            too_large(),
        ),
        Case::new(
            CLASS,
            "delete body over 3 MiB",
            Request::new("DELETE", victim_path(next_victim(victims))).body(big),
            too_large(),
        ),
        Case::new(
            CLASS,
            "update nested 10001 levels",
            Request::new("PUT", cm1()).body(nested(10_001)),
            Expect::status(400, "BadRequest").msg_has("exceeded max depth"),
        ),
        // The unknown field is dropped: nothing changes, nothing is written.
        Case::new(
            CLASS,
            "merge patch nested 10000 levels",
            Request::new("PATCH", cm1()).content_type("application/merge-patch+json").body(nested_patch(10_000)),
            Expect::code(200).json_at("/metadata/name", json!("cm1")),
        ),
        Case::new(
            CLASS,
            "merge patch nested 10001 levels",
            Request::new("PATCH", cm1()).content_type("application/merge-patch+json").body(nested_patch(10_001)),
            Expect::status(400, "BadRequest").msg_has("error decoding patch: ").msg_has("exceeded max depth"),
        ),
        Case::new(
            CLASS,
            "json patch value nested 10001 levels",
            Request::new("PATCH", cm1()).content_type("application/json-patch+json").body(format!(
                r#"[{{"op":"add","path":"/x","value":{}{}}}]"#,
                "[".repeat(9_999),
                "]".repeat(9_999)
            )),
            Expect::status(400, "BadRequest").msg_has("error decoding patch: ").msg_has("exceeded max depth"),
        ),
    ]
}
