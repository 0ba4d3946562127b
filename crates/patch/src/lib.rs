//! The three PATCH body types of kube-apiserver, applied to JSON objects.
//!
//! * `application/strategic-merge-patch+json` ([`apply`]): what kubectl sends
//!   for `apply` (client side), `edit`, `label`, `annotate`, `scale`, `set`
//!   and `patch` on built-in kinds. Lists merge by the per-kind metadata of a
//!   [`PatchSchema`] ([`builtin_schema`] for the built-in kinds), and the
//!   patch may carry kube's directives. The algorithm, its quirks and its
//!   error texts follow `k8s.io/apimachinery/pkg/util/strategicpatch`; see
//!   the `strategic` module.
//! * `application/merge-patch+json` ([`json_merge_patch`]): RFC 7386; what
//!   kubectl sends for custom resources.
//! * `application/json-patch+json` ([`json_patch()`]): RFC 6902 operations,
//!   applied by the `json-patch` crate.
//!
//! Errors are [`PatchError`]s, which know the HTTP status kube-apiserver
//! answers them with ([`PatchError::http_status`]).
//!
//! kube-apiserver does not accept strategic merge patches for custom
//! resources (415 `UnsupportedMediaType`); with [`NoSchema`] this crate
//! applies one like a JSON merge patch for lists, for callers that want that.

mod gofmt;
mod schema;
mod strategic;

use serde_json::{Map, Value};

pub use schema::{ListStrategy, NoSchema, PatchSchema, TableSchema, builtin_schema};

/// Why a patch could not be applied. `Display` is the text kube-apiserver
/// puts in the Status it answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch document at all (400 `BadRequest`), e.g.
    /// `json: cannot unmarshal array into Go value of type map[string]interface {}`.
    #[error("{0}")]
    InvalidBody(String),
    /// A malformed `$deleteFromPrimitiveList/<field>` key (400).
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListFormat,
    /// A `$retainKeys` that is not a list, or a patch key missing from it (400).
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysFormat,
    /// A malformed `$setElementOrder/<field>` key (400).
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderFormat,
    /// A list of lists in a merging list (422 `Invalid`).
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// Any other strategic merge failure: kube returns the plain error, which
    /// becomes a 500 Status with an empty reason, e.g. `map: map[image:x]
    /// does not contain declared merge key: name` or `unknown patch type:
    /// merge in map: map[$patch:merge]`.
    #[error("{0}")]
    Merge(String),
    /// A JSON patch document that does not decode (400).
    #[error("{0}")]
    InvalidJsonPatch(String),
    /// A JSON patch operation that failed (422 `Invalid`).
    #[error("{0}")]
    JsonPatchFailed(String),
}

impl PatchError {
    /// The HTTP status kube-apiserver answers this error with.
    ///
    /// For 422 kube builds the Status with `NewGenericServerResponse`:
    /// reason `Invalid`, message `the server rejected our request due to an
    /// error in our request`, and this error's text as the message of a
    /// `details.causes` entry of type `UnexpectedServerResponse`.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::InvalidBody(_)
            | PatchError::BadPrimitiveListFormat
            | PatchError::BadRetainKeysFormat
            | PatchError::BadSetElementOrderFormat
            | PatchError::InvalidJsonPatch(_) => 400,
            PatchError::ListOfLists | PatchError::JsonPatchFailed(_) => 422,
            PatchError::Merge(_) => 500,
        }
    }

    /// The Status `reason`: `BadRequest`, `Invalid`, or empty for the 500s
    /// (kube's `StatusReasonUnknown`).
    pub fn status_reason(&self) -> &'static str {
        match self.http_status() {
            400 => "BadRequest",
            422 => "Invalid",
            _ => "",
        }
    }
}

/// Go's name for the JSON kind of a value that is not an object.
fn go_json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The patch as an object; `null` is an empty patch, as for kube's decoder.
fn patch_object(patch: &Value) -> Result<Map<String, Value>, PatchError> {
    match patch {
        Value::Object(map) => Ok(map.clone()),
        Value::Null => Ok(Map::new()),
        other => Err(PatchError::InvalidBody(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(other)
        ))),
    }
}

/// Applies a strategic merge patch to `original`, as kube-apiserver does.
///
/// `original` should be an object (anything else is treated as `{}`); the
/// result is the patched object before kube's typed decoding, so keys keep
/// their order, new keys come last, and an object-level `$patch: delete`
/// leaves `{}`.
pub fn apply(original: &Value, patch: &Value, schema: &dyn PatchSchema) -> Result<Value, PatchError> {
    let patch = patch_object(patch)?;
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    strategic::merge_objects(original, patch, schema).map(Value::Object)
}

/// Applies an RFC 7386 JSON merge patch: objects merge key by key, `null`
/// removes a key, anything else (arrays included) replaces. Unlike the
/// `json-patch` crate's `merge`, removing a key keeps the order of the
/// others, so an unchanged object reads back unchanged.
pub fn json_merge_patch(original: &Value, patch: &Value) -> Value {
    let mut result = original.clone();
    merge_into(&mut result, patch);
    result
}

fn merge_into(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            target.shift_remove(key);
        } else {
            merge_into(target.entry(key.as_str()).or_insert(Value::Null), value);
        }
    }
}

/// Applies an RFC 6902 JSON patch (a list of operations). The document is
/// left unchanged if any operation fails.
///
/// The error texts are the `json-patch` crate's (e.g. `operation '/0'
/// failed at path '/spec/x': path is invalid`), not those of the Go library
/// kube uses; the HTTP statuses (400 for an undecodable patch, 422 for a
/// failed operation) are kube's. A `remove` or `replace` of an object key
/// moves the keys after it, as the crate does.
pub fn json_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| PatchError::InvalidJsonPatch(e.to_string()))?;
    let mut result = original.clone();
    json_patch::patch(&mut result, &operations).map_err(|e| PatchError::JsonPatchFailed(e.to_string()))?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc7386() {
        // RFC 7386 appendix A.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (json!({"a": {"b": "c"}}), json!({"a": {"b": "d", "c": null}}), json!({"a": {"b": "d"}})),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ];
        for (original, patch, expected) in cases {
            assert_eq!(json_merge_patch(&original, &patch), expected, "{original} + {patch}");
        }
    }

    #[test]
    fn merge_patch_keeps_key_order() {
        let original = json!({"a": 1, "b": 2, "c": 3});
        let patched = json_merge_patch(&original, &json!({"a": null, "d": 4}));
        let keys: Vec<&String> = patched.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "c", "d"]);
    }

    #[test]
    fn json_patch_applies_operations() {
        let original = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1, "list": [1, 2]}});
        let patch = json!([
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "remove", "path": "/spec/list/0"},
            {"op": "test", "path": "/spec/list/0", "value": 2}
        ]);
        assert_eq!(
            json_patch(&original, &patch).unwrap(),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 3, "list": [2]}})
        );
        let failed = json_patch(&original, &json!([{"op": "remove", "path": "/spec/missing"}])).unwrap_err();
        assert_eq!(failed.http_status(), 422);
        assert_eq!(failed.status_reason(), "Invalid");
        let failed = json_patch(&original, &json!([{"op": "test", "path": "/spec/replicas", "value": 2}])).unwrap_err();
        assert_eq!(failed.http_status(), 422);
        let invalid = json_patch(&original, &json!({"op": "add"})).unwrap_err();
        assert_eq!(invalid.http_status(), 400);
        let invalid = json_patch(&original, &json!([{"op": "frobnicate", "path": "/a"}])).unwrap_err();
        assert_eq!(invalid.status_reason(), "BadRequest");
    }

    #[test]
    fn error_statuses() {
        assert_eq!(PatchError::BadRetainKeysFormat.http_status(), 400);
        assert_eq!(PatchError::ListOfLists.http_status(), 422);
        assert_eq!(PatchError::Merge("x".into()).http_status(), 500);
        assert_eq!(PatchError::Merge("x".into()).status_reason(), "");
        assert_eq!(
            apply(&json!({}), &json!([1]), &NoSchema).unwrap_err(),
            PatchError::InvalidBody(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            )
        );
        assert_eq!(apply(&json!({"a": 1}), &Value::Null, &NoSchema).unwrap(), json!({"a": 1}));
    }
}
