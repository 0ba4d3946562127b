//! The PATCH body types of kube-apiserver, applied to JSON objects, and
//! server-side apply's tracking of field ownership.
//!
//! * `application/strategic-merge-patch+json` ([`apply()`]): what kubectl sends
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
//! * `application/apply-patch+yaml`: server-side apply, and the tracking of
//!   field ownership (`metadata.managedFields`) for every write, in
//!   [`mod@apply`].
//!
//! Errors are [`PatchError`]s, which know the HTTP status kube-apiserver
//! answers them with ([`PatchError::http_status`]).
//!
//! kube-apiserver does not accept strategic merge patches for custom
//! resources (415 `UnsupportedMediaType`); with [`NoSchema`] this crate
//! applies one like a JSON merge patch for lists, for callers that want that.

pub mod apply;
mod schema;
mod strategic;

use listwatch_gocompat::json::json_kind;
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
    /// A JSON patch document that does not decode as kube decodes it (400), e.g. `error
    /// decoding patch: json: cannot unmarshal object into Go value of type
    /// []handlers.jsonPatchOp`.
    #[error("{0}")]
    InvalidJsonPatch(String),
    /// A JSON patch of more operations than kube-apiserver applies (413).
    #[error("The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}")]
    TooManyOperations(usize),
    /// A JSON patch operation that failed or is not one (an unknown `op`, a missing `path`, a
    /// failed `test`): 422 `Invalid`.
    #[error("{0}")]
    JsonPatchFailed(String),
}

/// The most operations kube-apiserver applies from one JSON patch (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

impl PatchError {
    /// The HTTP status kube-apiserver answers this error with.
    ///
    /// For 422 kube builds the Status with `NewGenericServerResponse`:
    /// reason `Invalid`, message `the server rejected our request due to an
    /// error in our request`, empty details: this error's text is not sent.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::InvalidBody(_)
            | PatchError::BadPrimitiveListFormat
            | PatchError::BadRetainKeysFormat
            | PatchError::BadSetElementOrderFormat
            | PatchError::InvalidJsonPatch(_) => 400,
            PatchError::TooManyOperations(_) => 413,
            PatchError::ListOfLists | PatchError::JsonPatchFailed(_) => 422,
            PatchError::Merge(_) => 500,
        }
    }

    /// The Status `reason`: `BadRequest`, `Invalid`, or empty for the 500s
    /// (kube's `StatusReasonUnknown`).
    pub fn status_reason(&self) -> &'static str {
        match self.http_status() {
            400 => "BadRequest",
            413 => "RequestEntityTooLarge",
            422 => "Invalid",
            _ => "",
        }
    }
}

/// The patch as an object; `null` is an empty patch, as for kube's decoder.
fn patch_object(patch: &Value) -> Result<Map<String, Value>, PatchError> {
    match patch {
        Value::Object(map) => Ok(map.clone()),
        Value::Null => Ok(Map::new()),
        other => Err(PatchError::InvalidBody(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(other)
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

/// How kube-apiserver decodes a JSON patch before applying it; the Go types it decodes into
/// are named in its 400s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonPatchDecoding {
    /// `fieldValidation` `Warn` (the default) or `Strict`: the patch handler's own
    /// `[]handlers.jsonPatchOp`, errors prefixed `error decoding patch: `.
    Handler,
    /// `fieldValidation=Ignore`: only the JSON patch library's `jsonpatch.Patch`.
    Library,
}

/// Checks a JSON patch document as kube-apiserver decodes it (an array of objects whose
/// `op`, `path` and `from` are strings) and returns how many operations it has: 400 for a
/// document that does not decode, 413 past [`MAX_JSON_PATCH_OPERATIONS`]. `null` is an empty
/// patch. Whether each operation makes sense is only found when it is applied
/// ([`json_patch()`]), as in kube.
pub fn decode_json_patch(patch: &Value, decoding: JsonPatchDecoding) -> Result<usize, PatchError> {
    let (prefix, list_type, item_type) = match decoding {
        JsonPatchDecoding::Handler => ("error decoding patch: ", "[]handlers.jsonPatchOp", "handlers.jsonPatchOp"),
        JsonPatchDecoding::Library => ("", "jsonpatch.Patch", "jsonpatch.Operation"),
    };
    let cannot = |what: &Value, into: &str| {
        PatchError::InvalidJsonPatch(format!(
            "{prefix}json: cannot unmarshal {} into Go value of type {into}",
            json_kind(what)
        ))
    };
    let operations = match patch {
        Value::Null => return Ok(0),
        Value::Array(operations) => operations,
        other => return Err(cannot(other, list_type)),
    };
    for operation in operations {
        match operation {
            Value::Null => {}
            Value::Object(fields) if decoding == JsonPatchDecoding::Handler => {
                for name in ["op", "path", "from"] {
                    match fields.get(name) {
                        None | Some(Value::Null | Value::String(_)) => {}
                        Some(other) => {
                            return Err(PatchError::InvalidJsonPatch(format!(
                                "{prefix}json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                                json_kind(other)
                            )));
                        }
                    }
                }
            }
            Value::Object(_) => {}
            other => return Err(cannot(other, item_type)),
        }
    }
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(operations.len()));
    }
    Ok(operations.len())
}

/// Applies an RFC 6902 JSON patch (a list of operations, checked with [`decode_json_patch`]).
/// The document is left unchanged if any operation fails.
///
/// Every failure is a [`PatchError::JsonPatchFailed`] (422), as kube answers every error of
/// its JSON patch library's `Apply`, among them an unknown `op` and a missing `path` or
/// `value`. The error texts are the `json-patch` crate's; kube does not send its library's
/// texts to the client. A `remove` or `replace` of an object key moves the keys after it,
/// as the crate does.
pub fn json_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    if patch.is_null() {
        return Ok(original.clone());
    }
    // Parsed whole first: a malformed operation anywhere fails the patch before any applies.
    let _: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| PatchError::JsonPatchFailed(e.to_string()))?;
    let mut result = original.clone();
    for raw in patch.as_array().into_iter().flatten() {
        // evanphx/json-patch, which kube uses: a `test` of null passes where the path is
        // missing (kube-runtime's finalizer helper tests `/metadata/finalizers` for null before
        // adding the first finalizer). RFC 6902 would fail it.
        if raw["op"] == "test"
            && raw.get("value").is_some_and(Value::is_null)
            && raw["path"].as_str().is_some_and(|path| result.pointer(path).is_none())
        {
            continue;
        }
        let operation: json_patch::Patch = serde_json::from_value(Value::Array(vec![raw.clone()]))
            .map_err(|e| PatchError::JsonPatchFailed(e.to_string()))?;
        json_patch::patch(&mut result, &operation).map_err(|e| PatchError::JsonPatchFailed(e.to_string()))?;
    }
    Ok(result)
}

/// A decoded JSON value as Go's `%v` prints it (`map[spec:map[replicas:abc]]`), which kube
/// uses to show a strategic merge patch in its errors.
pub fn go_value(value: &Value) -> String {
    listwatch_gocompat::fmt::go_v(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_test_of_null_passes_on_a_missing_path_as_in_kube() {
        let original = json!({"metadata": {"name": "w"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
        ]);
        assert_eq!(json_patch(&original, &patch).unwrap()["metadata"]["finalizers"], json!(["f"]));
        // Present, the path must hold null for the test to pass.
        let present = json!({"metadata": {"finalizers": ["g"]}});
        assert!(json_patch(&present, &patch).is_err());
        // A test of another value on a missing path still fails.
        let other = json!([{"op": "test", "path": "/metadata/finalizers", "value": []}]);
        assert!(json_patch(&original, &other).is_err());
    }

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
        // An unknown op or a missing path only fails when applied: 422, as in kube.
        let unknown = json_patch(&original, &json!([{"op": "frobnicate", "path": "/a"}])).unwrap_err();
        assert_eq!(unknown.http_status(), 422);
        let no_path = json_patch(&original, &json!([{"op": "add", "value": 1}])).unwrap_err();
        assert_eq!(no_path.status_reason(), "Invalid");
        assert_eq!(json_patch(&original, &Value::Null).unwrap(), original);
    }

    #[test]
    fn json_patch_documents_decode_as_kube() {
        use JsonPatchDecoding::{Handler, Library};
        assert_eq!(decode_json_patch(&json!([{"op": "add", "path": "/a", "value": 1}, null]), Handler), Ok(2));
        assert_eq!(decode_json_patch(&Value::Null, Handler), Ok(0));
        let error = |patch: Value, decoding| decode_json_patch(&patch, decoding).unwrap_err().to_string();
        assert_eq!(
            error(json!({"op": "add"}), Handler),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(
            error(json!({"op": "add"}), Library),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        assert_eq!(
            error(json!([1]), Handler),
            "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"
        );
        assert_eq!(
            error(json!(["x"]), Library),
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
        );
        assert_eq!(
            error(json!([{"op": 1, "path": "/a"}]), Handler),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
        );
        assert_eq!(decode_json_patch(&json!([{"op": 1}]), Library), Ok(1));
        let many = Value::Array(vec![json!({"op": "test", "path": "/a", "value": 1}); MAX_JSON_PATCH_OPERATIONS + 1]);
        let too_many = decode_json_patch(&many, Handler).unwrap_err();
        assert_eq!(too_many.http_status(), 413);
        assert_eq!(too_many.to_string(), "The allowed maximum operations in a JSON patch is 10000, got 10001");
        let at_limit = Value::Array(vec![json!({"op": "test", "path": "/a", "value": 1}); MAX_JSON_PATCH_OPERATIONS]);
        assert_eq!(decode_json_patch(&at_limit, Handler), Ok(MAX_JSON_PATCH_OPERATIONS));
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
