//! Walks over JSON objects guided by an [`ApplySchema`]: structured-merge-diff's
//! `typed` package (`merge.go`, `compare.go`, `tofieldset.go`, `remove.go`,
//! `validate.go`) for JSON values.
//!
//! Objects are granular maps unless the schema says atomic; lists are
//! atomic, sets (items by value) or list-maps (items by key fields). Atomic
//! values, scalars and empty containers are leaves. Where a value's JSON
//! type does not match on both sides (a map replaced by a string), the pair
//! is a modified leaf and the right side wins: SMD would also report the
//! removed children, which no schema-valid object produces.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, Path, PathElement, go_quote, path_string, values_equal};
use super::schema::{ApplySchema, MapType};
use crate::schema::ListType;

/// One problem with an object, as SMD's `ValidationError` prints it
/// (`.spec.foo: field not declared in schema`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValidationError {
    path: String,
    message: String,
}

/// SMD's `ValidationErrors.Error()`: one error as `path: message`, several
/// under an `errors:` line.
pub(crate) fn validation_message(errors: &[ValidationError]) -> String {
    let one = |e: &ValidationError| {
        if e.path.is_empty() { e.message.clone() } else { format!("{}: {}", e.path, e.message) }
    };
    match errors {
        [single] => one(single),
        many => {
            let mut lines = vec!["errors:".to_owned()];
            lines.extend(many.iter().map(|e| format!("  {}", one(e))));
            lines.join("\n")
        }
    }
}

/// What changed between two objects: SMD's `Comparison`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub(crate) removed: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) added: FieldSet,
}

impl Comparison {
    /// Drops the paths at or below `ignored` (SMD's exclude filter).
    pub(crate) fn exclude(mut self, ignored: &FieldSet) -> Comparison {
        self.removed.remove_recursive(ignored);
        self.modified.remove_recursive(ignored);
        self.added.remove_recursive(ignored);
        self
    }
}

/// A position in the object: field names for the schema, elements for the
/// field set.
struct Walker<'s> {
    schema: &'s dyn ApplySchema,
    /// The field names down to here are `names[..depth]`; the buffers beyond are kept for reuse
    /// (a walk visits every field, and allocating each name was a good part of its cost).
    names: Vec<String>,
    depth: usize,
    path: Path,
}

/// The two container shapes and everything else.
enum Shape<'a> {
    Map(&'a Map<String, Value>),
    List(&'a [Value]),
    Leaf,
}

fn shape(value: &Value) -> Shape<'_> {
    match value {
        Value::Object(map) => Shape::Map(map),
        Value::Array(items) => Shape::List(items),
        _ => Shape::Leaf,
    }
}

/// How a pair of values is walked: as maps, as lists (one side may be
/// absent or null) or as a leaf.
enum PairShape<'a> {
    Map(Option<&'a Map<String, Value>>, Option<&'a Map<String, Value>>),
    List(Option<&'a [Value]>, Option<&'a [Value]>),
    Leaf,
}

fn pair_shape<'a>(lhs: Option<&'a Value>, rhs: Option<&'a Value>) -> PairShape<'a> {
    let side = |v: Option<&'a Value>| v.map(shape);
    let empty = |v: Option<&Value>| v.is_none_or(Value::is_null);
    match (side(lhs), side(rhs)) {
        (Some(Shape::Map(l)), Some(Shape::Map(r))) => PairShape::Map(Some(l), Some(r)),
        (Some(Shape::Map(l)), _) if empty(rhs) => PairShape::Map(Some(l), None),
        (_, Some(Shape::Map(r))) if empty(lhs) => PairShape::Map(None, Some(r)),
        (Some(Shape::List(l)), Some(Shape::List(r))) => PairShape::List(Some(l), Some(r)),
        (Some(Shape::List(l)), _) if empty(rhs) => PairShape::List(Some(l), None),
        (_, Some(Shape::List(r))) if empty(lhs) => PairShape::List(None, Some(r)),
        _ => PairShape::Leaf,
    }
}

fn map_is_empty(map: Option<&Map<String, Value>>) -> bool {
    map.is_none_or(Map::is_empty)
}

fn list_is_empty(list: Option<&[Value]>) -> bool {
    list.is_none_or(<[Value]>::is_empty)
}

impl<'s> Walker<'s> {
    fn new(schema: &'s dyn ApplySchema) -> Walker<'s> {
        Walker { schema, names: Vec::new(), depth: 0, path: Vec::new() }
    }

    /// Runs `f` on the field names here as the schema takes them, on the stack for the depths
    /// objects have (the schema is asked at every node, so this is on every walk's hot path).
    fn with_names<T>(&self, f: impl FnOnce(&[&str]) -> T) -> T {
        const ON_STACK: usize = 32;
        let here = &self.names[..self.depth];
        if here.len() <= ON_STACK {
            let mut names = [""; ON_STACK];
            for (slot, name) in names.iter_mut().zip(here) {
                *slot = name;
            }
            f(&names[..here.len()])
        } else {
            f(&here.iter().map(String::as_str).collect::<Vec<_>>())
        }
    }

    fn list_type(&self) -> ListType {
        self.with_names(|names| self.schema.list_type(names))
    }

    fn map_atomic(&self) -> bool {
        self.with_names(|names| self.schema.map_type(names)) == MapType::Atomic
    }

    fn is_named(&self, name: &str) -> bool {
        self.with_names(|names| self.schema.is_named_field(names, name))
    }

    /// Runs `f` one field deeper.
    fn field<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        match self.names.get_mut(self.depth) {
            Some(slot) => {
                slot.clear();
                slot.push_str(name);
            }
            None => self.names.push(name.to_owned()),
        }
        self.depth += 1;
        self.path.push(PathElement::field(name));
        let out = f(self);
        self.path.pop();
        self.depth -= 1;
        out
    }

    /// Runs `f` on a list item (same schema path, one element deeper).
    fn item<T>(&mut self, element: &PathElement, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(element.clone());
        let out = f(self);
        self.path.pop();
        out
    }

    /// SMD's `listItemToPathElement` for an item of the list here.
    fn item_element(&self, list_type: &ListType, item: &Value) -> Result<PathElement, String> {
        let keys = match list_type {
            ListType::Map { keys } if !keys.is_empty() => keys,
            ListType::Atomic => return Err("invalid indexing of non-associative list".to_owned()),
            _ => {
                return match item {
                    Value::Object(_) => {
                        Err("associative list without keys has an element that's a map type".to_owned())
                    }
                    Value::Array(_) => Err("not supported: associative list with lists as elements".to_owned()),
                    Value::Null => {
                        Err("associative list without keys has an element that's an explicit null".to_owned())
                    }
                    scalar => Ok(PathElement::Value(scalar.clone())),
                };
            }
        };
        let map = match item {
            Value::Object(map) => map,
            Value::Null => return Err("associative list with keys may not have a null element".to_owned()),
            _ => return Err("associative list with keys may not have non-map elements".to_owned()),
        };
        let mut fields = Vec::with_capacity(keys.len());
        for key in keys {
            let value = match map.get(key) {
                Some(value) => value.clone(),
                None => self.with_names(|names| self.schema.key_default(names, key)).ok_or_else(|| {
                    format!(
                        "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                        go_quote(key)
                    )
                })?,
            };
            fields.push((key.clone(), value));
        }
        Ok(PathElement::key(fields))
    }

    /// The elements of the items of an associative list, skipping items
    /// that have none (they failed validation).
    fn item_elements(&self, list_type: &ListType, items: &[Value]) -> Vec<Option<PathElement>> {
        items.iter().map(|item| self.item_element(list_type, item).ok()).collect()
    }
}

/// Checks `value` against the schema as SMD's `AsTyped` does: associative
/// list items need their keys, keys are unique unless `allow_duplicates`,
/// and objects hold only declared fields. Scalar types are not checked.
pub(crate) fn validate(value: &Value, schema: &dyn ApplySchema, allow_duplicates: bool) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    validate_at(&mut Walker::new(schema), value, allow_duplicates, &mut errors);
    errors
}

fn validate_at(w: &mut Walker<'_>, value: &Value, allow_duplicates: bool, errors: &mut Vec<ValidationError>) {
    match value {
        Value::Object(map) => {
            for (name, child) in map {
                if !w.with_names(|names| w.schema.field_declared(names, name)) {
                    let mut path = w.path.clone();
                    path.push(PathElement::field(name.as_str()));
                    errors.push(ValidationError {
                        path: path_string(&path),
                        message: "field not declared in schema".to_owned(),
                    });
                    return;
                }
                w.field(name, |w| validate_at(w, child, allow_duplicates, errors));
            }
        }
        Value::Array(items) => {
            let list_type = w.list_type();
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let element = if list_type == ListType::Atomic {
                    PathElement::Index(i)
                } else {
                    match w.item_element(&list_type, item) {
                        Ok(element) => element,
                        Err(message) => {
                            errors.push(ValidationError {
                                path: path_string(&w.path),
                                message: format!("element {i}: {message}"),
                            });
                            return;
                        }
                    }
                };
                if !seen.insert(element.clone()) && !allow_duplicates {
                    errors.push(ValidationError {
                        path: path_string(&w.path),
                        message: format!("duplicate entries for key {element}"),
                    });
                }
                w.item(&element, |w| validate_at(w, item, allow_duplicates, errors));
            }
        }
        _ => {}
    }
}

/// The fields `value` sets (SMD's `ToFieldSet`): every leaf, every atomic
/// list or map, every associative list item, and map entries that are
/// null, `{}` or keys of maps with arbitrary keys.
pub(crate) fn to_field_set(value: &Value, schema: &dyn ApplySchema) -> FieldSet {
    let mut set = FieldSet::new();
    field_set_at(&mut Walker::new(schema), value, &mut set);
    set
}

fn field_set_at(w: &mut Walker<'_>, value: &Value, set: &mut FieldSet) {
    match value {
        Value::Object(map) => {
            if w.map_atomic() {
                set.insert(&w.path);
                return;
            }
            for (name, child) in map {
                let own_entry = match child {
                    Value::Null => true,
                    Value::Object(inner) if inner.is_empty() => true,
                    _ => !w.is_named(name),
                };
                w.field(name, |w| {
                    field_set_at(w, child, set);
                    if own_entry {
                        set.insert(&w.path);
                    }
                });
            }
        }
        Value::Array(items) => {
            let list_type = w.list_type();
            if list_type == ListType::Atomic {
                set.insert(&w.path);
                return;
            }
            let elements = w.item_elements(&list_type, items);
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            for element in elements.iter().flatten() {
                if !seen.insert(element) && duplicates.insert(element) {
                    let mut path = w.path.clone();
                    path.push(element.clone());
                    set.insert(&path);
                }
            }
            for (item, element) in items.iter().zip(&elements) {
                let Some(element) = element else { continue };
                if duplicates.contains(element) {
                    continue;
                }
                w.item(element, |w| {
                    field_set_at(w, item, set);
                    set.insert(&w.path);
                });
            }
        }
        _ => set.insert(&w.path),
    }
}

/// What differs between `lhs` and `rhs` (SMD's `Compare`). A container
/// present on one side only is itself added or removed, with its contents.
pub(crate) fn compare(lhs: &Value, rhs: &Value, schema: &dyn ApplySchema) -> Comparison {
    let mut comparison = Comparison::default();
    compare_at(&mut Walker::new(schema), Some(lhs), Some(rhs), &mut comparison);
    comparison
}

fn compare_at(w: &mut Walker<'_>, lhs: Option<&Value>, rhs: Option<&Value>, out: &mut Comparison) {
    let leaf = match pair_shape(lhs, rhs) {
        PairShape::Map(l, r) => {
            if w.map_atomic() || (map_is_empty(l) && map_is_empty(r)) {
                true
            } else {
                let empty = Map::new();
                let (l, r) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
                for (name, lv) in l {
                    w.field(name, |w| compare_at(w, Some(lv), r.get(name), out));
                }
                for (name, rv) in r.iter().filter(|(name, _)| !l.contains_key(*name)) {
                    w.field(name, |w| compare_at(w, None, Some(rv), out));
                }
                false
            }
        }
        PairShape::List(l, r) => {
            let list_type = w.list_type();
            if list_type == ListType::Atomic || (list_is_empty(l) && list_is_empty(r)) {
                true
            } else {
                compare_list_items(w, &list_type, l.unwrap_or_default(), r.unwrap_or_default(), out);
                false
            }
        }
        PairShape::Leaf => true,
    };
    if leaf {
        match (lhs, rhs) {
            (None, Some(_)) => out.added.insert(&w.path),
            (Some(_), None) => out.removed.insert(&w.path),
            (Some(l), Some(r)) if !values_equal(l, r) => out.modified.insert(&w.path),
            _ => {}
        }
    } else if lhs.is_none() {
        out.added.insert(&w.path);
    } else if rhs.is_none() {
        out.removed.insert(&w.path);
    }
}

fn compare_list_items(w: &mut Walker<'_>, list_type: &ListType, lhs: &[Value], rhs: &[Value], out: &mut Comparison) {
    let mut order: Vec<PathElement> = Vec::new();
    let mut left: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    let mut right: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (item, element) in lhs.iter().zip(w.item_elements(list_type, lhs)) {
        let Some(element) = element else { continue };
        let entry = left.entry(element.clone()).or_default();
        if entry.is_empty() {
            order.push(element);
        }
        entry.push(item);
    }
    for (item, element) in rhs.iter().zip(w.item_elements(list_type, rhs)) {
        let Some(element) = element else { continue };
        let entry = right.entry(element.clone()).or_default();
        if entry.is_empty() && !left.contains_key(&element) {
            order.push(element.clone());
        }
        entry.push(item);
    }
    for element in order {
        let l = left.get(&element).map(Vec::as_slice).unwrap_or_default();
        let r = right.get(&element).map(Vec::as_slice).unwrap_or_default();
        let mut path = w.path.clone();
        path.push(element.clone());
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => w.item(&element, |w| compare_at(w, l.first().copied(), r.first().copied(), out)),
            (2.., 2..) => {
                if l.len() != r.len() || l.iter().zip(r).any(|(a, b)| !values_equal(a, b)) {
                    out.modified.insert(&path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    w.item(&element, |w| compare_at(w, None, Some(first), out));
                }
                out.removed.insert(&path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    w.item(&element, |w| compare_at(w, Some(first), None, out));
                }
                out.added.insert(&path);
            }
        }
    }
}

/// `lhs` (the live object) merged with `rhs` (an apply configuration), the
/// configuration winning: SMD's `Merge` with its keep-right rule. Map
/// entries keep the live order with new ones after them; list items follow
/// SMD's `visitListItems` order (shared items in the configuration's order,
/// live-only items where they were).
pub(crate) fn merge(lhs: &Value, rhs: &Value, schema: &dyn ApplySchema) -> Value {
    merge_at(&mut Walker::new(schema), Some(lhs), Some(rhs))
}

fn merge_at(w: &mut Walker<'_>, lhs: Option<&Value>, rhs: Option<&Value>) -> Value {
    let leaf = || rhs.or(lhs).cloned().unwrap_or(Value::Null);
    match pair_shape(lhs, rhs) {
        PairShape::Map(l, r) => {
            if w.map_atomic() || (map_is_empty(l) && map_is_empty(r)) {
                return leaf();
            }
            let empty = Map::new();
            let (l, r) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
            let mut out = Map::new();
            for (name, lv) in l {
                let merged = w.field(name, |w| merge_at(w, Some(lv), r.get(name)));
                out.insert(name.clone(), merged);
            }
            for (name, rv) in r.iter().filter(|(name, _)| !l.contains_key(*name)) {
                let merged = w.field(name, |w| merge_at(w, None, Some(rv)));
                out.insert(name.clone(), merged);
            }
            Value::Object(out)
        }
        PairShape::List(l, r) => {
            let list_type = w.list_type();
            if list_type == ListType::Atomic || (list_is_empty(l) && list_is_empty(r)) {
                return leaf();
            }
            Value::Array(merge_list_items(w, &list_type, l.unwrap_or_default(), r.unwrap_or_default()))
        }
        // A value whose type changed: the configuration's value, merged with nothing.
        PairShape::Leaf if lhs.is_some() && rhs.is_some() && !same_kind(lhs, rhs) => merge_at(w, None, rhs),
        PairShape::Leaf => leaf(),
    }
}

fn same_kind(lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
    let container = |v: Option<&Value>| match v {
        Some(Value::Object(_)) => 1,
        Some(Value::Array(_)) => 2,
        _ => 0,
    };
    container(lhs) == container(rhs)
}

fn merge_list_items(w: &mut Walker<'_>, list_type: &ListType, lhs: &[Value], rhs: &[Value]) -> Vec<Value> {
    let (rhs_elements, observed_rhs) = index_items(w, list_type, rhs);
    let (lhs_elements, observed_lhs) = index_items(w, list_type, lhs);
    let child = |items: &[Value], observed: &BTreeMap<PathElement, Option<usize>>, element: &PathElement| {
        observed.get(element).map(|at| at.map_or(Value::Null, |i| items[i].clone()))
    };

    let mut shared = rhs_elements.iter().map(|(e, _)| e).filter(|e| observed_lhs.contains_key(*e));
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let mut merge_item = |w: &mut Walker<'_>, element: &PathElement, l: Option<Value>, r: Option<Value>| {
        out.push(w.item(element, |w| merge_at(w, l.as_ref(), r.as_ref())));
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs_elements.len() || ri < rhs_elements.len() {
        if li < lhs_elements.len() && ri < rhs_elements.len() {
            let element = &lhs_elements[li].0;
            if *element == rhs_elements[ri].0 {
                merged_rhs.insert(element);
                let (l, r) = (child(lhs, &observed_lhs, element), child(rhs, &observed_rhs, element));
                merge_item(w, element, l, r);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            // A shared item, but not the next one in the configuration's order.
            if observed_rhs.contains_key(element) && next_shared.is_some_and(|next| next != element) {
                li += 1;
                continue;
            }
        }
        if li < lhs_elements.len() {
            let (element, at) = &lhs_elements[li];
            if !observed_rhs.contains_key(element) {
                merge_item(w, element, Some(lhs[*at].clone()), None);
                li += 1;
                continue;
            } else if merged_rhs.contains(element) {
                li += 1;
            }
        }
        if ri < rhs_elements.len() {
            let element = &rhs_elements[ri].0;
            merged_rhs.insert(element);
            let (l, r) = (child(lhs, &observed_lhs, element), child(rhs, &observed_rhs, element));
            merge_item(w, element, l, r);
            ri += 1;
            if next_shared == Some(element) {
                next_shared = shared.next();
            }
        }
    }
    out
}

/// The element and position of each item of a list, and where each
/// element's item is: `None` when several items share it (SMD then merges
/// the element as `null`).
type IndexedItems = (Vec<(PathElement, usize)>, BTreeMap<PathElement, Option<usize>>);

fn index_items(w: &Walker<'_>, list_type: &ListType, items: &[Value]) -> IndexedItems {
    let mut elements = Vec::with_capacity(items.len());
    let mut observed: BTreeMap<PathElement, Option<usize>> = BTreeMap::new();
    for (i, element) in w.item_elements(list_type, items).into_iter().enumerate() {
        let Some(element) = element else { continue };
        observed.entry(element.clone()).and_modify(|at| *at = None).or_insert(Some(i));
        elements.push((element, i));
    }
    (elements, observed)
}

/// `value` without the paths in `to_remove` (SMD's `RemoveItems`). A map
/// or list left with nothing, or one that had to be entered but was empty or
/// atomic, becomes `null`, as in SMD; [`drop_nulls`] cleans those up.
pub(crate) fn remove_items(value: &Value, to_remove: &FieldSet, schema: &dyn ApplySchema) -> Value {
    if to_remove.is_empty() {
        return value.clone();
    }
    remove_at(&mut Walker::new(schema), value, to_remove)
}

fn remove_at(w: &mut Walker<'_>, value: &Value, to_remove: &FieldSet) -> Value {
    match value {
        Value::Object(map) => {
            if map.is_empty() || w.map_atomic() {
                return Value::Null;
            }
            let mut out = Map::new();
            for (name, child) in map {
                let element = PathElement::field(name.as_str());
                if to_remove.members().contains(&element) {
                    continue;
                }
                let below = to_remove.with_prefix(&element);
                let child =
                    if below.is_empty() { child.clone() } else { w.field(name, |w| remove_at(w, child, &below)) };
                out.insert(name.clone(), child);
            }
            if out.is_empty() { Value::Null } else { Value::Object(out) }
        }
        Value::Array(items) => {
            let list_type = w.list_type();
            if items.is_empty() || list_type == ListType::Atomic {
                return Value::Null;
            }
            let mut out = Vec::new();
            for (item, element) in items.iter().zip(w.item_elements(&list_type, items)) {
                let Some(element) = element else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.members().contains(&element) {
                    continue;
                }
                let below = to_remove.with_prefix(&element);
                out.push(if below.is_empty() {
                    item.clone()
                } else {
                    w.item(&element, |w| remove_at(w, item, &below))
                });
            }
            if out.is_empty() { Value::Null } else { Value::Array(out) }
        }
        scalar => scalar.clone(),
    }
}

/// SMD's `EnsureNamedFieldsAreMembers`: `set` plus every declared struct
/// field that has members below it.
pub(crate) fn ensure_named_fields_are_members(set: &FieldSet, schema: &dyn ApplySchema) -> FieldSet {
    ensure_at(&mut Walker::new(schema), set)
}

fn ensure_at(w: &mut Walker<'_>, set: &FieldSet) -> FieldSet {
    let mut out = FieldSet::new();
    for member in set.members() {
        out.insert_member(member.clone());
    }
    for (element, child) in set.children() {
        let child = match element {
            PathElement::Field(name) => {
                if w.is_named(name) {
                    out.insert_member(element.clone());
                }
                w.field(name, |w| ensure_at(w, child))
            }
            PathElement::Key(_) => w.item(element, |w| ensure_at(w, child)),
            _ => child.clone(),
        };
        out.insert_child(element.clone(), child);
    }
    out
}

/// Removes the `null` map entries of `value`: those SMD's removal leaves
/// behind and configured nulls, which kube's decoding into Go types
/// (built-ins) or null pruning (custom resources, unless `nullable`) drops
/// as well.
pub(crate) fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, child| !child.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_schema;
    use serde_json::json;

    fn deployment() -> crate::TableSchema {
        builtin_schema("Deployment").unwrap()
    }

    #[test]
    fn field_set_of_a_pod_spec() {
        let object = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [
                {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}]}},
            "strategy": {}}});
        let set = to_field_set(&object, &deployment());
        assert_eq!(
            super::super::fields_v1::encode_string(&set),
            r#"{"f:spec":{"f:replicas":{},"f:selector":{},"f:strategy":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
        );
    }

    #[test]
    fn merge_orders_list_items_as_smd() {
        let schema = deployment();
        let containers = |names: &[&str]| {
            json!({"spec": {"template": {"spec": {"containers":
            names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}}}})
        };
        let merged = merge(&containers(&["a", "b", "c"]), &containers(&["c", "d", "a"]), &schema);
        assert_eq!(merged, containers(&["b", "c", "d", "a"]));
    }

    #[test]
    fn compare_reports_added_containers() {
        let schema = deployment();
        let old = json!({"spec": {"replicas": 1}});
        let new = json!({"spec": {"replicas": 2, "template": {"metadata": {"labels": {"a": "b"}}}}});
        let comparison = compare(&old, &new, &schema);
        let modified: Vec<String> = comparison.modified.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(modified, [".spec.replicas"]);
        let added: Vec<String> = comparison.added.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            added,
            [
                ".spec.template",
                ".spec.template.metadata",
                ".spec.template.metadata.labels",
                ".spec.template.metadata.labels.a"
            ]
        );
    }

    #[test]
    fn validation_messages_match_smd() {
        let schema = deployment();
        let config = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
        let errors = validate(&config, &schema, false);
        assert_eq!(
            validation_message(&errors),
            r#".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
        );
        let config = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        assert_eq!(
            validation_message(&validate(&config, &schema, false)),
            r#".spec.template.spec.containers: duplicate entries for key [name="a"]"#
        );
        assert!(validate(&config, &schema, true).is_empty());
    }
}
