//! The strategic merge patch algorithm, as kube-apiserver applies it
//! (`k8s.io/apimachinery/pkg/util/strategicpatch`, `StrategicMergeMapPatch`
//! with `MergeParallelList` and `IgnoreUnmatchedNulls`).
//!
//! A strategic merge patch is a JSON merge patch (RFC 7386: objects merge
//! key by key, `null` deletes a key) where lists merge according to the
//! [`PatchSchema`], plus directives:
//!
//! * `"$patch": "replace"` in an object: the object (minus the directive)
//!   replaces the original one as is; in a list item: the list's other patch
//!   items replace the whole list.
//! * `"$patch": "delete"` in an object: the object becomes `{}` (kube keeps
//!   the now empty key when the original had it); in an item of a merging
//!   list: every original item with that merge key is removed.
//! * `"$patch": "merge"`: accepted nowhere (an error in objects and lists).
//! * `"$retainKeys": [..]`: original keys not listed are dropped first; every
//!   non-null key of the patch object must be listed.
//! * `"$deleteFromPrimitiveList/<field>": [..]`: these values are removed from
//!   the scalar list `<field>`.
//! * `"$setElementOrder/<field>": [..]`: the order of the list `<field>` after
//!   merging (merge-key stubs for lists of objects, values for scalars); the
//!   non-deleting patch items must appear in it in the same relative order.
//!
//! Items of a merging list are merged into the original item with the same
//! merge key, new ones are added, then kube orders the result: patch items
//! in patch (or `$setElementOrder`) order, original-only items in their
//! original order, interleaved by their positions in the original list.
//! That interleaving is reproduced exactly, including an effect of Go slice
//! aliasing in kube: when a `$setElementOrder` list is applied, the
//! "original order" it consults is the original list's backing array after
//! the deletions of `$patch: delete` items shifted it and new items were
//! appended into the freed slots ([`SliceMerge::original_backing`]). kube's
//! own test "add map and delete map from merging list" depends on it.
//!
//! Keys starting with `$` that are not directives are ordinary fields here,
//! as in kube (its typed decoding later drops or rejects them), and
//! directives inside a newly added subtree are left as they are except
//! `$patch` objects, which kube strips.
//!
//! kube iterates the patch object in Go's random map order; where that can
//! matter (a key and its `$deleteFromPrimitiveList` twin naming the same
//! value) this follows the patch's own key order.

use listwatch_gocompat::fmt::{go_s, go_type_name, go_v, go_v_lists, is_go_int};
use listwatch_gocompat::sort::slice_stable;
use serde_json::{Map, Value};

use crate::PatchError;
use crate::schema::{ListStrategy, PatchSchema};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// Go type names used in kube's type-assertion errors.
const GO_SLICE: &str = "[]interface {}";
const GO_MAP: &str = "map[string]interface {}";

/// The dynamic Go type kube's JSON decoding gives a value; kube compares
/// these to decide between merging and replacing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

fn go_type(value: &Value) -> GoType {
    match value {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if is_go_int(n) => GoType::Int,
        Value::Number(_) => GoType::Float,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// `mergepatch.ErrBadArgType`.
fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    PatchError::Merge(format!("expected a {expected}, but received a {}", go_type_name(actual)))
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(map: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::Merge(format!("map: {} does not contain declared merge key: {key}", go_v(&Value::Object(map.clone()))))
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::Merge(format!("unknown patch type: {} in map: {}", go_s(directive), go_v(&Value::Object(map.clone()))))
}

/// The result of merging two lists.
#[derive(Debug)]
struct SliceMerge {
    /// The merged list, ordered.
    merged: Vec<Value>,
    /// What kube's original slice (same length as the original list) holds
    /// afterwards, given Go's in-place deletions and appends.
    original_backing: Vec<Value>,
}

/// Applies `patch` to `original` (both JSON objects).
pub(crate) fn merge_objects(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    schema: &dyn PatchSchema,
) -> Result<Map<String, Value>, PatchError> {
    Merger { schema }.merge_map(original, patch, &[])
}

struct Merger<'a> {
    schema: &'a dyn PatchSchema,
}

fn child_path(path: &[String], field: &str) -> Vec<String> {
    let mut child = path.to_vec();
    child.push(field.to_owned());
    child
}

impl Merger<'_> {
    fn list_strategy(&self, path: &[String]) -> ListStrategy {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        self.schema.list_strategy(&path)
    }

    /// kube's `mergeMap`.
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &[String],
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some(REPLACE_DIRECTIVE) => {
                    patch.shift_remove(DIRECTIVE_MARKER);
                    Ok(patch)
                }
                Some(DELETE_DIRECTIVE) => Ok(Map::new()),
                _ => Err(bad_patch_type(directive, &patch)),
            };
        }
        apply_retain_keys_directive(&mut original, &mut patch)?;
        self.merge_set_element_order_lists(&mut original, &mut patch, path)?;

        for (patch_key, patch_value) in patch {
            let (key, is_delete_list) = if patch_key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                (extract_key(&patch_key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
            } else {
                (patch_key, false)
            };
            // null deletes the key, even through a $deleteFromPrimitiveList
            // key; a null for an absent key is dropped (IgnoreUnmatchedNulls).
            if patch_value.is_null() {
                original.shift_remove(&key);
                continue;
            }
            let same_type = match original.get(&key) {
                None => false,
                Some(original_value) => go_type(original_value) == go_type(&patch_value),
            };
            if !same_type {
                if !is_delete_list {
                    insert_new_value(&mut original, key, patch_value);
                }
                continue;
            }
            let Some(original_value) = original.get_mut(&key) else {
                continue;
            };
            let merged = match (original_value.take(), patch_value) {
                (Value::Object(original_map), Value::Object(patch_map)) => {
                    Value::Object(self.merge_map(original_map, patch_map, &child_path(path, &key))?)
                }
                (Value::Array(original_list), Value::Array(patch_list)) => {
                    let list_path = child_path(path, &key);
                    let strategy = self.list_strategy(&list_path);
                    Value::Array(
                        self.merge_list(original_list, patch_list, &strategy, is_delete_list, &list_path)?.merged,
                    )
                }
                (_, scalar) => scalar,
            };
            *original_value = merged;
        }
        Ok(original)
    }

    /// kube's `mergeSliceHandler`: merging strategies (and delete lists)
    /// merge, anything else takes the patch's list.
    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        strategy: &ListStrategy,
        is_delete_list: bool,
        path: &[String],
    ) -> Result<SliceMerge, PatchError> {
        if strategy.is_merge() || is_delete_list {
            self.merge_slice(original, patch, strategy.merge_key(), is_delete_list, path)
        } else {
            Ok(SliceMerge { merged: patch, original_backing: original })
        }
    }

    /// kube's `mergeSlice`.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: &str,
        is_delete_list: bool,
        path: &[String],
    ) -> Result<SliceMerge, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(SliceMerge { merged: Vec::new(), original_backing: original });
        }
        let kind = slice_element_type(&[&original, &patch])?;

        if kind != GoType::Map {
            if is_delete_list {
                let merged = original.iter().filter(|v| !patch.contains(v)).cloned().collect();
                return Ok(SliceMerge { merged, original_backing: original });
            }
            // `append(original, patch...)` reuses the original array only
            // when there is nothing to append; Go's deduplication then swaps
            // elements inside it.
            let aliased = patch.is_empty();
            let mut both = original.clone();
            both.extend(patch.iter().cloned());
            let length = go_deduplicate_scalars(&mut both);
            let backing = if aliased { both.clone() } else { original };
            both.truncate(length);
            let (patch_items, server_only) = if merge_key.is_empty() {
                partition_scalars(&both, &patch)
            } else {
                partition_maps(&both, &patch, merge_key)?
            };
            let merged = normalize_element_order(patch_items, server_only, &patch, &backing, merge_key, kind)?;
            return Ok(SliceMerge { merged, original_backing: backing });
        }

        if merge_key.is_empty() {
            // kube names the Go kind of the list's element type here.
            return Err(PatchError::Merge("cannot merge lists without merge key for struct".to_owned()));
        }

        // mergeSliceWithSpecialElements: deletions shift the original array
        // in place; a replace directive swaps in the other patch items.
        let capacity = original.len();
        let mut backing = original;
        let mut length = capacity;
        let mut replace = false;
        let mut plain_items = Vec::with_capacity(patch.len());
        for item in patch {
            let Value::Object(item_map) = &item else {
                return Err(bad_arg_type(GO_MAP, &item));
            };
            let Some(directive) = item_map.get(DIRECTIVE_MARKER) else {
                plain_items.push(item);
                continue;
            };
            match directive.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let Some(key_value) = item_map.get(merge_key) else {
                        return Err(no_merge_key(item_map, merge_key));
                    };
                    while let Some(index) = find_map_by_key(&backing[..length], merge_key, key_value)? {
                        for i in index..length - 1 {
                            backing[i] = backing[i + 1].clone();
                        }
                        length -= 1;
                    }
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err(PatchError::Merge("merging lists cannot yet be specified in the patch".to_owned()));
                }
                _ => return Err(bad_patch_type(directive, item_map)),
            }
        }
        let (mut list, mut aliased, patch) =
            if replace { (plain_items, false, Vec::new()) } else { (backing[..length].to_vec(), true, plain_items) };
        let server_length = list.len();

        // mergeSliceWithoutSpecialElements: merge by key, append the rest.
        for item in &patch {
            let Value::Object(item_map) = item else {
                return Err(bad_arg_type(GO_MAP, item));
            };
            let Some(key_value) = item_map.get(merge_key) else {
                return Err(no_merge_key(item_map, merge_key));
            };
            match find_map_by_key(&list, merge_key, key_value)? {
                Some(index) => {
                    let Value::Object(original_item) = list[index].take() else {
                        return Err(PatchError::Merge(format!("value for key {index} is not a map.")));
                    };
                    let merged = self.merge_map(original_item, item_map.clone(), path)?;
                    list[index] = Value::Object(merged);
                    if aliased {
                        backing[index] = list[index].clone();
                    }
                }
                None => {
                    if aliased && list.len() < capacity {
                        backing[list.len()] = item.clone();
                    } else {
                        aliased = false;
                    }
                    list.push(item.clone());
                }
            }
        }

        let server_order = list[..server_length].to_vec();
        let (patch_items, server_only) = partition_maps(&list, &patch, merge_key)?;
        let merged = normalize_element_order(patch_items, server_only, &patch, &server_order, merge_key, kind)?;
        Ok(SliceMerge { merged, original_backing: backing })
    }

    /// kube's `mergePatchIntoOriginal`: merges each list that has a
    /// `$setElementOrder` directive, then orders it.
    fn merge_set_element_order_lists(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        path: &[String],
    ) -> Result<(), PatchError> {
        let directive_keys: Vec<String> =
            patch.keys().filter(|key| key.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
        for directive_key in directive_keys {
            let Some(order_value) = patch.shift_remove(&directive_key) else {
                continue;
            };
            let Value::Array(set_order) = order_value else {
                return Err(bad_arg_type(GO_SLICE, &order_value));
            };
            let key = extract_key(&directive_key, SET_ELEMENT_ORDER_PREFIX)?;
            let original_list = match original.get(&key) {
                None => None,
                Some(Value::Array(list)) => Some(list.clone()),
                Some(other) => return Err(bad_arg_type(GO_SLICE, other)),
            };
            let patch_list = match patch.get(&key) {
                None => None,
                Some(Value::Array(list)) => Some(list.clone()),
                Some(other) => return Err(bad_arg_type(GO_SLICE, other)),
            };
            let list_path = child_path(path, &key);
            let strategy = self.list_strategy(&list_path);
            let merge_key = strategy.merge_key();
            validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or_default(), &set_order, merge_key)?;

            let raw_patch = patch_list.clone().unwrap_or_default();
            let (merged, server_order) = match (original_list, patch_list) {
                (Some(original_list), None) => (original_list.clone(), original_list),
                (None, Some(patch_list)) => (remove_directives_in_list(patch_list), Vec::new()),
                (Some(original_list), Some(patch_list)) => {
                    let outcome = self.merge_list(original_list, patch_list, &strategy, false, &list_path)?;
                    (outcome.merged, outcome.original_backing)
                }
                (None, None) => continue,
            };
            let (patch_items, server_only) = if merge_key.is_empty() {
                partition_scalars(&merged, &set_order)
            } else {
                partition_maps(&merged, &set_order, merge_key)?
            };
            let kind = slice_element_type(&[&server_order, &raw_patch])?;
            let ordered =
                normalize_element_order(patch_items, server_only, &set_order, &server_order, merge_key, kind)?;
            original.insert(key.clone(), Value::Array(ordered));
            patch.shift_remove(&key);
        }
        Ok(())
    }
}

/// Takes a patch value for a key the original lacks or holds with another
/// type: nulls inside it are dropped and objects with a `$patch` directive
/// removed (kube's `discardNullValuesFromPatch` and `removeDirectives`).
fn insert_new_value(original: &mut Map<String, Value>, key: String, mut value: Value) {
    discard_null_values(&mut value);
    match remove_directives(value) {
        Some(value) => {
            original.insert(key, value);
        }
        None => {
            original.shift_remove(&key);
        }
    }
}

fn discard_null_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_values);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_values),
        _ => {}
    }
}

/// `None` when the value is an object carrying a `$patch` directive.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            Some(Value::Object(map.into_iter().filter_map(|(k, v)| remove_directives(v).map(|v| (k, v))).collect()))
        }
        Value::Array(items) => Some(Value::Array(remove_directives_in_list(items))),
        scalar => Some(scalar),
    }
}

fn remove_directives_in_list(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().filter_map(remove_directives).collect()
}

/// kube's `applyRetainKeysDirective` (server side).
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadRetainKeysFormat);
    };
    let retained = |key: &str| retain.iter().any(|v| v.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(key) {
            return Err(PatchError::BadRetainKeysFormat);
        }
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// The field a `<prefix>/<field>` directive key names.
fn extract_key(directive_key: &str, prefix: &str) -> Result<String, PatchError> {
    match directive_key.split_once('/') {
        Some((found, field)) if found == prefix => Ok(field.to_owned()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => Err(PatchError::BadPrimitiveListFormat),
        _ => Err(PatchError::BadSetElementOrderFormat),
    }
}

/// kube's `sliceElementType`: the common type of all elements.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType, PatchError> {
    let mut element_type = None;
    for value in lists.iter().flat_map(|list| list.iter()) {
        let current = go_type(value);
        match element_type {
            None => {
                if current == GoType::Nil {
                    // kube dereferences the missing type and panics (a 500).
                    return Err(PatchError::Merge(
                        "runtime error: invalid memory address or nil pointer dereference".to_owned(),
                    ));
                }
                if current == GoType::Slice {
                    return Err(PatchError::ListOfLists);
                }
                element_type = Some(current);
            }
            Some(previous) if previous != current => {
                return Err(PatchError::Merge(format!("list element types are not identical: {}", go_v_lists(lists))));
            }
            Some(_) => {}
        }
    }
    element_type.ok_or_else(|| PatchError::Merge("no elements in any of the given slices".to_owned()))
}

/// Go's in-place "clever" deduplication: a duplicate is overwritten by the
/// last element. Returns the new length; elements past it are stale.
fn go_deduplicate_scalars(values: &mut [Value]) -> usize {
    if values.is_empty() {
        return 0;
    }
    let mut last = values.len() - 1;
    let mut i = 0;
    while i < last {
        let mut j = i + 1;
        while j <= last {
            if values[i] == values[j] {
                values[j] = values[last].clone();
                last -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    last + 1
}

/// kube's `findMapInSliceBasedOnKeyValue`: the first object whose merge key
/// holds `value`.
fn find_map_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, PatchError> {
    for (index, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(PatchError::Merge(format!("value for key {index} is not a map.")));
        };
        if map.get(key) == Some(value) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// Scalars of `list` present in `by`, then the others.
fn partition_scalars(list: &[Value], by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    list.iter().cloned().partition(|v| by.contains(v))
}

/// Objects of `list` whose merge key appears in `by`, then the others.
fn partition_maps(list: &[Value], by: &[Value], key: &str) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::with_capacity(list.len());
    let mut absent = Vec::with_capacity(list.len());
    for item in list {
        let Value::Object(map) = item else {
            return Err(bad_arg_type(GO_MAP, item));
        };
        let Some(key_value) = map.get(key) else {
            return Err(no_merge_key(map, key));
        };
        if find_map_by_key(by, key, key_value)?.is_some() {
            present.push(item.clone());
        } else {
            absent.push(item.clone());
        }
    }
    Ok((present, absent))
}

/// What kube compares items by: the merge key value of objects (absent,
/// `null` and non-objects alike as nil), the value itself for scalars.
fn identity<'v>(item: &'v Value, key: &str, kind: GoType) -> Option<&'v Value> {
    if kind == GoType::Map {
        item.as_object().and_then(|map| map.get(key)).filter(|v| !v.is_null())
    } else {
        Some(item)
    }
}

/// kube's `index`: the position of `item` in `list`.
fn position_in(list: &[Value], item: &Value, key: &str, kind: GoType) -> Option<usize> {
    let target = identity(item, key, kind);
    list.iter().position(|v| identity(v, key, kind) == target)
}

/// kube's `normalizeElementOrder`: patch items in patch order, server-only
/// items in server order, interleaved by server position.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, key, kind)?;
    Ok(merge_sorted_slices(server_only, patch_items, server_order, key, kind))
}

/// kube's `normalizeSliceOrder`: a stable sort by position in `order`,
/// deletion items moved to the end.
fn normalize_slice_order(
    mut items: Vec<Value>,
    order: &[Value],
    key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let mut deletions = Vec::new();
    if kind == GoType::Map {
        validate_merge_key_in_lists(key, &[&items, order])?;
        let (kept, deleted): (Vec<Value>, Vec<Value>) = {
            let (kept, deleted) = extract_deletion_items(&items)?;
            (kept.into_iter().cloned().collect(), deleted.into_iter().cloned().collect())
        };
        items = kept;
        deletions = deleted;
    }
    slice_stable(&mut items, |a, b| {
        match (position_in(order, a, key, kind), position_in(order, b, key, kind)) {
            (Some(ia), Some(ib)) => ia < ib,
            // kube's comparator says "less" whenever either is unknown.
            _ => true,
        }
    });
    items.extend(deletions);
    Ok(items)
}

/// kube's `mergeSortedSlice`: merges two sorted lists, taking the left item
/// first only when both are in `server_order` and the left one comes earlier.
fn merge_sorted_slices(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: &str,
    kind: GoType,
) -> Vec<Value> {
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let left_first = match (position_in(server_order, l, key, kind), position_in(server_order, r, key, kind)) {
            (Some(li), Some(ri)) => li < ri,
            _ => false,
        };
        let next = if left_first { left.next() } else { right.next() };
        merged.extend(next);
    }
    merged.extend(left);
    merged.extend(right);
    merged
}

/// kube's `validateMergeKeyInLists`.
fn validate_merge_key_in_lists(key: &str, lists: &[&[Value]]) -> Result<(), PatchError> {
    for item in lists.iter().flat_map(|list| list.iter()) {
        let Value::Object(map) = item else {
            return Err(bad_arg_type(GO_MAP, item));
        };
        if !map.contains_key(key) {
            return Err(no_merge_key(map, key));
        }
    }
    Ok(())
}

/// kube's `extractToDeleteItems`: items without and with `$patch: delete`.
fn extract_deletion_items(items: &[Value]) -> Result<(Vec<&Value>, Vec<&Value>), PatchError> {
    let mut kept = Vec::new();
    let mut deleted = Vec::new();
    for item in items {
        let Value::Object(map) = item else {
            return Err(bad_arg_type(GO_MAP, item));
        };
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            deleted.push(item);
        } else {
            kept.push(item);
        }
    }
    Ok((kept, deleted))
}

/// kube's `mergeKeyValueEqual`.
fn merge_key_value_equal(left: &Value, right: &Value, key: &str) -> Result<bool, PatchError> {
    if key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(left_map) = left else {
        return Err(bad_arg_type(GO_MAP, left));
    };
    let Value::Object(right_map) = right else {
        return Err(bad_arg_type(GO_MAP, right));
    };
    let Some(left_value) = left_map.get(key) else {
        return Err(no_merge_key(left_map, key));
    };
    let Some(right_value) = right_map.get(key) else {
        return Err(no_merge_key(right_map, key));
    };
    Ok(left_value == right_value)
}

/// kube's `validatePatchWithSetOrderList`: the patch's items (deletions and
/// directive items aside) must appear in the `$setElementOrder` list, in
/// the same relative order.
fn validate_patch_with_set_order_list(patch_list: &[Value], set_order: &[Value], key: &str) -> Result<(), PatchError> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_deleting: Vec<&Value> =
        if key.is_empty() { patch_list.iter().collect() } else { extract_deletion_items(patch_list)?.0 };
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < non_deleting.len() && order_index < set_order.len() {
        let item = non_deleting[patch_index];
        if item.as_object().is_some_and(|map| map.contains_key(DIRECTIVE_MARKER)) {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(item, &set_order[order_index], key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_deleting.len() && order_index >= set_order.len() {
        return Err(PatchError::Merge(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            go_v(&Value::Array(patch_list.to_vec())),
            go_v(&Value::Array(set_order.to_vec()))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_deduplication_overwrites_with_the_last_element() {
        let mut values = vec![json!(1), json!(2), json!(1), json!(3)];
        let length = go_deduplicate_scalars(&mut values);
        assert_eq!(&values[..length], &[json!(1), json!(2), json!(3)]);
        let mut values = vec![json!("a"), json!("b"), json!("c"), json!("b"), json!("d")];
        let length = go_deduplicate_scalars(&mut values);
        assert_eq!(&values[..length], &[json!("a"), json!("b"), json!("c"), json!("d")]);
        let mut values = vec![json!(1), json!(1), json!(1)];
        assert_eq!(go_deduplicate_scalars(&mut values), 1);
        assert_eq!(go_deduplicate_scalars(&mut []), 0);
    }

    #[test]
    fn element_types() {
        assert_eq!(slice_element_type(&[&[json!(1)], &[json!(2)]]).unwrap(), GoType::Int);
        assert_eq!(slice_element_type(&[&[json!([1])]]).unwrap_err(), PatchError::ListOfLists);
        assert_eq!(
            slice_element_type(&[&[json!(1), json!("a")], &[json!(1.5)]]).unwrap_err().to_string(),
            "list element types are not identical: [[1 a] [1.5]]"
        );
        assert_eq!(slice_element_type(&[&[], &[]]).unwrap_err().to_string(), "no elements in any of the given slices");
    }

    #[test]
    fn directive_keys() {
        assert_eq!(extract_key("$setElementOrder/containers", SET_ELEMENT_ORDER_PREFIX).unwrap(), "containers");
        assert_eq!(
            extract_key("$setElementOrder", SET_ELEMENT_ORDER_PREFIX).unwrap_err(),
            PatchError::BadSetElementOrderFormat
        );
        assert_eq!(
            extract_key("$deleteFromPrimitiveListX/a", DELETE_FROM_PRIMITIVE_LIST_PREFIX).unwrap_err(),
            PatchError::BadPrimitiveListFormat
        );
    }
}
