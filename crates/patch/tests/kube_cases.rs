//! kube's own strategic merge patch test cases, applied with this crate.
//!
//! The cases are from `k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go`
//! (apimachinery v0.36), YAML turned into JSON: each applies a two-way patch
//! to `original` (expecting `modified`) and/or a three-way patch to
//! `current` (expecting `result`). kube's tests compare the results byte for
//! byte, so list order is checked exactly here too.
//!
//! The schema is kube's test type `MergeItem`: `mergingList`,
//! `retainKeysMergingList` and `mergeItemPtr` merge by `name`,
//! `mergingIntList` merges as a set of scalars, everything else is atomic;
//! items are `MergeItem`s again, so the strategy depends on the last field
//! name only.

use listwatch_patch::{ListStrategy, PatchError, PatchSchema, apply};
use serde_json::{Value, json};

struct MergeItemSchema;

impl PatchSchema for MergeItemSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match path.last() {
            Some(&("mergingList" | "retainKeysMergingList" | "mergeItemPtr")) => ListStrategy::merge("name"),
            Some(&"mergingIntList") => ListStrategy::MergePrimitives,
            _ => ListStrategy::Replace,
        }
    }
}

#[track_caller]
fn check(description: &str, original: Value, patch: Value, expected: Value) {
    let result =
        apply(&original, &patch, &MergeItemSchema).unwrap_or_else(|e| panic!("{description}: unexpected error {e}"));
    assert_eq!(result, expected, "{description}");
}

#[track_caller]
fn check_error(description: &str, original: Value, patch: Value, expected: PatchError) {
    let error = apply(&original, &patch, &MergeItemSchema).expect_err(description);
    assert_eq!(error, expected, "{description}");
}

#[test]
fn custom_cases() {
    check(
        "unique scalars when merging lists",
        json!({"mergingIntList": [1, 2]}),
        json!({"mergingIntList": [2, 3]}),
        json!({"mergingIntList": [1, 2, 3]}),
    );
    check(
        "delete map from nested map",
        json!({"simpleMap": {"key1": 1, "key2": 1}}),
        json!({"simpleMap": {"$patch": "delete"}}),
        json!({"simpleMap": {}}),
    );
    check(
        "delete all items from merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2}]}),
        json!({"mergingList": [{"$patch": "replace"}]}),
        json!({"mergingList": []}),
    );
    check(
        "merge empty merging lists",
        json!({"mergingList": []}),
        json!({"mergingList": []}),
        json!({"mergingList": []}),
    );
    check("delete all keys from map", json!({"name": 1, "value": 1}), json!({"$patch": "replace"}), json!({}));
    check(
        "add key and delete all keys from map",
        json!({"name": 1, "value": 1}),
        json!({"other": "a", "$patch": "replace"}),
        json!({"other": "a"}),
    );
    check(
        "delete all duplicate entries in a merging list",
        json!({"mergingList": [{"name": 1}, {"name": 1}, {"name": 2, "value": "a"}, {"name": 3}, {"name": 3}]}),
        json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 3, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2, "value": "a"}]}),
    );
    check(
        "retainKeys map can add a field when no retainKeys directive present",
        json!({"retainKeysMap": {"name": "foo"}}),
        json!({"retainKeysMap": {"value": "bar"}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar"}}),
    );
    check(
        "retainKeys map can delete a field when no retainKeys directive present",
        json!({"retainKeysMap": {"name": "foo", "value": "a"}}),
        json!({"retainKeysMap": {"value": null}}),
        json!({"retainKeysMap": {"name": "foo"}}),
    );
    check(
        "retainKeys map merge an empty map",
        json!({"retainKeysMap": {"name": "foo", "value": "a"}}),
        json!({"retainKeysMap": {}}),
        json!({"retainKeysMap": {"name": "foo", "value": "a"}}),
    );
    check(
        "retainKeys list can add a field when no retainKeys directive present",
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]}),
        json!({"retainKeysMergingList": [{"name": "foo", "value": "a"}]}),
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}),
    );
    check(
        "retainKeys list can delete a field when no retainKeys directive present",
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}),
        json!({"retainKeysMergingList": [{"name": "foo", "value": null}]}),
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]}),
    );
    check(
        "preserve the order from the patch in a merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}),
        json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}, {"name": 2, "other": "x"}]}),
        json!({"mergingList": [
            {"name": 3, "value": "c"},
            {"name": 1, "value": "a"},
            {"name": 2, "value": "b", "other": "x"}
        ]}),
    );
    check(
        "preserve the order from the patch in a merging list 2",
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}),
        json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}),
        json!({"mergingList": [{"name": 2, "value": "b"}, {"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}),
    );
    check(
        "preserve the order from the patch in a merging int list",
        json!({"mergingIntList": [1, 2, 3]}),
        json!({"mergingIntList": [3, 1, 2]}),
        json!({"mergingIntList": [3, 1, 2]}),
    );
    check(
        "preserve the order from the patch in a merging int list 2",
        json!({"mergingIntList": [1, 2, 3]}),
        json!({"mergingIntList": [3, 1]}),
        json!({"mergingIntList": [2, 3, 1]}),
    );
}

#[test]
fn custom_raw_cases() {
    check(
        "$setElementOrder contains item that is not present in the list to be merged",
        json!({"mergingList": [{"name": 1}, {"name": 3}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 3}, {"name": 2}, {"name": 1}],
            "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]
        }),
        json!({"mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}),
    );
    check(
        "$setElementOrder contains item that is not present in the int list to be merged",
        json!({"mergingIntList": [1, 3]}),
        json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
        json!({"mergingIntList": [3, 1]}),
    );
    check_error(
        "should check if order in $setElementOrder and patch list match",
        json!({"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]
        }),
        PatchError::Merge(
            "The order in patch list:\n[map[name:3 value:3] map[name:1 value:1]]\n doesn't match $setElementOrder list:\n[map[name:1] map[name:2] map[name:3]]\n"
                .to_owned(),
        ),
    );
    check_error(
        "int list order in $setElementOrder and patch list must match",
        json!({"mergingIntList": [1, 3, 2]}),
        json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]}),
        PatchError::Merge(
            "The order in patch list:\n[3 1]\n doesn't match $setElementOrder list:\n[1 2 3]\n".to_owned(),
        ),
    );
    check_error(
        "missing merge key should error out",
        json!({"mergingList": [{"name": 1, "value": "a"}]}),
        json!({"mergingList": [{"value": "b"}]}),
        PatchError::Merge("map: map[value:b] does not contain declared merge key: name".to_owned()),
    );
    check(
        "$deleteFromPrimitiveList of nonexistent item in primitive list should not add the item to the list",
        json!({"mergingIntList": [1, 2]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2]}),
    );
    check(
        "$deleteFromPrimitiveList on empty primitive list should not add the item to the list",
        json!({"mergingIntList": null}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": null}),
    );
    check(
        "$deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list",
        json!({"foo": ["bar"]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"foo": ["bar"]}),
    );
    check(
        "$deleteFromPrimitiveList should delete item from a list with merge patch strategy",
        json!({"mergingIntList": [1, 2, 3]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [2]}),
        json!({"mergingIntList": [1, 3]}),
    );
    check(
        "$deleteFromPrimitiveList should delete item from a list without merge patch strategy",
        json!({"nonMergingIntList": [1, 2, 3]}),
        json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]}),
        json!({"nonMergingIntList": [1, 3]}),
    );
}

#[test]
fn three_way_cases() {
    check(
        "nil original: three-way patch on current",
        json!({"name": 1, "other": "a"}),
        json!({"value": 1}),
        json!({"name": 1, "value": 1, "other": "a"}),
    );
    check(
        "add field and delete all fields from map with conflict",
        json!({"name": 1, "value": 1, "other": "b"}),
        json!({"name": null, "value": null, "other": "a"}),
        json!({"other": "a"}),
    );
    check(
        "defined null values should propagate overwrite current fields (with conflict)",
        json!({"name": "a", "other": "a"}),
        json!({"name": 1, "value": 1, "other": null}),
        json!({"name": 1, "value": 1}),
    );
    check(
        "delete all maps from merging list with conflict",
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "other": "b"}]}),
        json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "$patch": "delete"}]}),
        json!({"mergingList": []}),
    );
    check(
        "delete all maps from empty merging list",
        json!({"mergingList": []}),
        json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "$patch": "delete"}]}),
        json!({"mergingList": []}),
    );
    check(
        "delete items in lists of scalars",
        json!({"mergingIntList": [1, 2, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2, 4]}),
    );
    check(
        "delete all duplicate items in lists of scalars",
        json!({"mergingIntList": [1, 2, 3, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2, 4]}),
    );
    check(
        "add and delete items in lists of scalars (two-way)",
        json!({"mergingIntList": [1, 2, 3]}),
        json!({
            "$setElementOrder/mergingIntList": [1, 2, 4],
            "$deleteFromPrimitiveList/mergingIntList": [3],
            "mergingIntList": [4]
        }),
        json!({"mergingIntList": [1, 2, 4]}),
    );
    check(
        "merge lists of maps",
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]
        }),
        json!({"mergingList": [
            {"name": 4, "value": 4},
            {"name": 1, "other": "a"},
            {"name": 2, "value": 2, "other": "b"},
            {"name": 3, "value": 3}
        ]}),
    );
    check(
        "merge lists of maps with conflict",
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 3, "other": "b"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 2, "value": 2}, {"name": 3, "value": 3}]
        }),
        json!({"mergingList": [
            {"name": 1, "other": "a"},
            {"name": 2, "value": 2, "other": "b"},
            {"name": 3, "value": 3}
        ]}),
    );
    check(
        "add field to map in merging list with conflict",
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 3, "value": 2, "other": "b"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}]
        }),
        json!({"mergingList": [
            {"name": 1, "value": 1, "other": "a"},
            {"name": 2, "value": 2},
            {"name": 3, "value": 2, "other": "b"}
        ]}),
    );
    check(
        "de-duplicate field in merging list",
        json!({"mergingList": [{"name": 1}, {"name": 1}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}], "mergingList": [{"$patch": "delete", "name": 1}]}),
        json!({"mergingList": []}),
    );
    check(
        "delete duplicate field in merging list",
        json!({"mergingList": [{"name": 1}, {"name": 1}]}),
        json!({"mergingList": {}}),
        json!({"mergingList": {}}),
    );
    check(
        "delete map from merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2, "other": "b"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}], "mergingList": [{"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2, "other": "b"}]}),
    );
    check(
        "delete missing map from merging list with conflict",
        json!({"mergingList": [{"name": 3, "other": "a"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 2}],
            "mergingList": [{"name": 2}, {"name": 1, "$patch": "delete"}]
        }),
        json!({"mergingList": [{"name": 2}, {"name": 3, "other": "a"}]}),
    );
    check(
        "delete field from map in merging list with conflict",
        json!({"mergingList": [{"name": 1, "value": "a", "other": "a"}, {"name": 2, "value": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}], "mergingList": [{"name": 1, "value": null}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2}]}),
    );
    check(
        "replace non merging list nested in merging list with deletion conflict",
        json!({"mergingList": [
            {"name": 1, "other": "a", "nonMergingList": [{"name": 2, "value": 2}]},
            {"name": 2, "other": "b"}
        ]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}]
        }),
        json!({"mergingList": [
            {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
            {"name": 2, "other": "b"}
        ]}),
    );
}

/// kube's results here depend on Go reusing the original slice when items
/// are deleted and appended; see the `strategic` module.
#[test]
fn set_element_order_sees_the_reused_original_slice() {
    check(
        "add map and delete map from merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
            "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]
        }),
        json!({"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]}),
    );
    check(
        "add map and delete map from merging list with conflict",
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 4, "other": "c"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
            "mergingList": [{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}]
        }),
        json!({"mergingList": [{"name": 4, "other": "c"}, {"name": 2}, {"name": 3}]}),
    );
}

#[test]
fn retain_keys_cases() {
    let patch =
        json!({"retainKeysMap": {"$retainKeys": ["name", "simpleMap", "value"], "simpleMap": {"key1": "modified"}}});
    check(
        "retainKeys map changes a field in a nested map with conflict",
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "simpleMap": {"key1": "new", "key2": "b", "key3": "c"}}}),
        patch,
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "simpleMap": {"key1": "modified", "key2": "b", "key3": "c"}}}),
    );
    check(
        "retainKeys map nested non-merging list with no change with conflict",
        json!({"retainKeysMap": {"name": "foo", "nonMergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["name", "nonMergingList", "value"],
            "value": "bar",
            "nonMergingList": [{"name": "a"}, {"name": "b"}]
        }}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "nonMergingList": [{"name": "a"}, {"name": "b"}]}}),
    );
    check(
        "retainKeys map delete nested non-merging list with conflict",
        json!({"retainKeysMap": {"name": "foo", "nonMergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
        json!({"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "bar", "nonMergingList": null}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar"}}),
    );
    check(
        "retainKeys map nested merging int list with no change",
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["mergingIntList", "name", "value"],
            "$setElementOrder/mergingIntList": [1, 2],
            "value": "bar"
        }}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "mergingIntList": [1, 2, 3]}}),
    );
    check(
        "retainKeys map adds an item in nested merging int list",
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}}),
        json!({"retainKeysMap": {
            "$setElementOrder/mergingIntList": [1, 2, 4],
            "$retainKeys": ["mergingIntList", "name"],
            "mergingIntList": [4]
        }}),
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 4, 3]}}),
    );
    check(
        "retainKeys map deletes an item in nested merging int list",
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3, 4]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["mergingIntList", "name"],
            "$deleteFromPrimitiveList/mergingIntList": [2],
            "$setElementOrder/mergingIntList": [1, 3]
        }}),
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 3, 4]}}),
    );
    check(
        "retainKeys map adds an item and deletes an item in nested merging int list",
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3, 4]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["mergingIntList", "name"],
            "mergingIntList": [5],
            "$deleteFromPrimitiveList/mergingIntList": [2],
            "$setElementOrder/mergingIntList": [1, 3, 5]
        }}),
        json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 3, 5, 4]}}),
    );
    check(
        "retainKeys map adds an item in nested merging list",
        json!({"retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "x"}]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["mergingList", "name"],
            "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "mergingList": [{"name": "c"}]
        }}),
        json!({"retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "x"}]}}),
    );
    check(
        "retainKeys map deletes an item in nested merging list",
        json!({"retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "x"}]}}),
        json!({"retainKeysMap": {
            "$retainKeys": ["mergingList", "name"],
            "$setElementOrder/mergingList": [{"name": "a"}],
            "mergingList": [{"name": "b", "$patch": "delete"}]
        }}),
        json!({"retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "x"}]}}),
    );
    check(
        "retainKeys list of maps clears a field",
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]}),
        json!({
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [{"$retainKeys": ["name", "value"], "name": "foo"}]
        }),
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}),
    );
    check(
        "retainKeys list of maps deletes a field and clear a field",
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]}),
        json!({
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [{"$retainKeys": ["name"], "name": "foo", "value": null}]
        }),
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]}),
    );
    check(
        "delete and reorder in one list, reorder in another",
        json!({
            "mergingList": [{"name": "a", "value": "a"}, {"name": "b", "value": "b"}],
            "mergeItemPtr": [{"name": "c", "value": "c"}, {"name": "d", "value": "d"}]
        }),
        json!({
            "$setElementOrder/mergingList": [{"name": "b"}],
            "$setElementOrder/mergeItemPtr": [{"name": "d"}, {"name": "c"}],
            "mergingList": [{"$patch": "delete", "name": "a"}]
        }),
        json!({
            "mergingList": [{"name": "b", "value": "b"}],
            "mergeItemPtr": [{"name": "d", "value": "d"}, {"name": "c", "value": "c"}]
        }),
    );
}

#[test]
fn nested_set_element_order() {
    check(
        "add field to map in merging list nested in merging list",
        json!({"mergingList": [
            {"name": 1, "other": "a", "mergingList": [{"name": 1}, {"name": 2, "value": 2}]},
            {"name": 2, "other": "b"}
        ]}),
        json!({
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                "name": 1,
                "mergingList": [{"name": 1, "value": 1}]
            }]
        }),
        json!({"mergingList": [
            {"name": 1, "other": "a", "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}]},
            {"name": 2, "other": "b"}
        ]}),
    );
}

#[test]
fn directive_errors_and_statuses() {
    let original = json!({"mergingList": [{"name": 1}], "simpleMap": {"a": "b"}, "mergingIntList": [1]});
    let cases = [
        (
            json!({"simpleMap": {"$patch": "merge"}}),
            PatchError::Merge("unknown patch type: merge in map: map[$patch:merge]".into()),
        ),
        (
            json!({"simpleMap": {"$patch": 5, "x": "y"}}),
            PatchError::Merge("unknown patch type: %!s(int64=5) in map: map[$patch:5 x:y]".into()),
        ),
        (
            json!({"mergingList": [{"$patch": "merge", "name": 1}]}),
            PatchError::Merge("merging lists cannot yet be specified in the patch".into()),
        ),
        (
            json!({"mergingList": [{"$patch": "foo", "name": 1}]}),
            PatchError::Merge("unknown patch type: foo in map: map[$patch:foo name:1]".into()),
        ),
        (
            json!({"mergingList": [{"$patch": "delete"}]}),
            PatchError::Merge("map: map[$patch:delete] does not contain declared merge key: name".into()),
        ),
        (json!({"$retainKeys": "name"}), PatchError::BadRetainKeysFormat),
        (json!({"$retainKeys": ["name"], "simpleMap": {}}), PatchError::BadRetainKeysFormat),
        (json!({"$setElementOrder": [1]}), PatchError::BadSetElementOrderFormat),
        (json!({"$setElementOrderX/mergingList": []}), PatchError::BadSetElementOrderFormat),
        (json!({"$deleteFromPrimitiveList": [1]}), PatchError::BadPrimitiveListFormat),
        (
            json!({"$setElementOrder/mergingList": "x"}),
            PatchError::Merge("expected a []interface {}, but received a string".into()),
        ),
        (
            json!({"$setElementOrder/simpleMap": []}),
            PatchError::Merge("expected a []interface {}, but received a map[string]interface {}".into()),
        ),
        (
            json!({"mergingIntList": [[1]]}),
            PatchError::Merge("list element types are not identical: [[1] [[1]]]".into()),
        ),
        (json!({"mergingIntList": ["a"]}), PatchError::Merge("list element types are not identical: [[1] [a]]".into())),
        (
            json!({"mergingList": ["a"]}),
            PatchError::Merge("list element types are not identical: [[map[name:1]] [a]]".into()),
        ),
    ];
    for (patch, expected) in cases {
        let error = apply(&original, &patch, &MergeItemSchema).expect_err(&patch.to_string());
        assert_eq!(error, expected, "{patch}");
    }
    check_error(
        "a list of lists",
        json!({"mergingList": [[{"name": 1}]]}),
        json!({"mergingList": [[{"name": 2}]]}),
        PatchError::ListOfLists,
    );
    assert_eq!(PatchError::BadRetainKeysFormat.to_string(), "invalid patch format of retainKeys");
    assert_eq!(PatchError::BadSetElementOrderFormat.http_status(), 400);
    assert_eq!(PatchError::ListOfLists.to_string(), "lists of lists are not supported");
}

#[test]
fn new_values_lose_nulls_and_patch_directives() {
    check(
        "added subtree",
        json!({"a": 1}),
        json!({"b": {"x": null, "y": {"$patch": "delete"}, "z": [{"$patch": "replace"}, 1, {"k": null}], "w": 2}}),
        json!({"a": 1, "b": {"z": [1, {}], "w": 2}}),
    );
    check(
        "a value replacing another type is cleaned the same way",
        json!({"a": "scalar"}),
        json!({"a": {"x": null, "y": 1}}),
        json!({"a": {"y": 1}}),
    );
    check("a removed value that was absent", json!({"a": 1}), json!({"b": null}), json!({"a": 1}));
    check(
        "a $patch: delete object for an absent key adds nothing",
        json!({"a": 1}),
        json!({"b": {"$patch": "delete"}}),
        json!({"a": 1}),
    );
    check(
        "$deleteFromPrimitiveList with null removes the list",
        json!({"mergingIntList": [1, 2]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": null}),
        json!({}),
    );
    check(
        "replace keeps the patch as is",
        json!({"simpleMap": {"a": 1}}),
        json!({"simpleMap": {"$patch": "replace", "b": null, "c": {"$patch": "delete"}}}),
        json!({"simpleMap": {"b": null, "c": {"$patch": "delete"}}}),
    );
    check("unknown dollar keys are plain fields", json!({"a": 1}), json!({"$foo": 2}), json!({"a": 1, "$foo": 2}));
    check("top-level delete", json!({"a": 1}), json!({"$patch": "delete"}), json!({}));
}

#[test]
fn key_order_is_preserved() {
    let original = json!({"z": 1, "a": {"m": 1, "b": 2}, "k": [1]});
    let result = apply(&original, &json!({"a": {"b": null, "c": 3}, "new": true, "z": 9}), &MergeItemSchema).unwrap();
    assert_eq!(serde_json::to_string(&result).unwrap(), r#"{"z":9,"a":{"m":1,"c":3},"k":[1],"new":true}"#);
}
