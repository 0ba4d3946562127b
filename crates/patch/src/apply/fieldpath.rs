//! Field paths and sets of them, as structured-merge-diff's `fieldpath`
//! package defines them.
//!
//! Ownership is a [`FieldSet`]: a trie of [`PathElement`]s whose members are
//! the owned fields. Siblings are ordered as SMD orders them (field names,
//! then list-map keys, then set values, then indices), because FieldsV1, the
//! order of conflicts and the texts of paths all follow that order.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

/// One step of a path into an object.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A struct field or map key (`f:name`, printed `.name`).
    Field(String),
    /// An item of an associative list, by its key fields sorted by name
    /// (`k:{"name":"x"}`, printed `[name="x"]`).
    Key(Vec<(String, Value)>),
    /// An item of a set list, by value (`v:"x"`, printed `[="x"]`).
    Value(Value),
    /// A list item by position (`i:0`, printed `[0]`); kube writes these
    /// only for lists that are neither atomic nor associative, which the
    /// schemas here never declare.
    Index(usize),
}

impl PathElement {
    /// A field name element.
    pub fn field(name: impl Into<String>) -> PathElement {
        PathElement::Field(name.into())
    }

    /// A list-map key element; the fields are sorted by name, as SMD keeps them.
    pub fn key(fields: impl IntoIterator<Item = (String, Value)>) -> PathElement {
        let mut fields: Vec<(String, Value)> = fields.into_iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

impl Ord for PathElement {
    /// SMD's `PathElement.Compare`: by kind, then field name, key fields
    /// (name, then value), value, or index.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for (x, y) in a.iter().zip(b) {
                    let order = x.0.cmp(&y.0).then_with(|| compare_values(&x.1, &y.1));
                    if order != Ordering::Equal {
                        return order;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// SMD's `PathElement.String`, used in conflict messages and errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(name, value)| format!("{name}={}", value_to_string(value))).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", value_to_string(value)),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path from the object root.
pub type Path = Vec<PathElement>;

/// A path as SMD prints it: `.spec.containers[name="nginx"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// SMD's `value.Compare`: a total order over JSON values, numbers compared
/// numerically across integers and floats, then strings, booleans, lists,
/// maps and null.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let order = compare_values(p, q);
                if order != Ordering::Equal {
                    return order;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for (p, q) in xs.iter().zip(&ys) {
                let order = p.0.cmp(q.0).then_with(|| compare_values(p.1, q.1));
                if order != Ordering::Equal {
                    return order;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// SMD's `value.Equals`: deep equality, numbers compared numerically, maps
/// regardless of key order.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => compare_values(a, b) == Ordering::Equal,
    }
}

/// SMD's `value.ToString`: strings quoted as Go's `%q`, numbers and
/// booleans as Go's `%v`.
pub(crate) fn value_to_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64().or_else(|| n.as_u64().and_then(|u| i64::try_from(u).ok())) {
            Some(i) => i.to_string(),
            None => go_float_v(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(value_to_string).collect::<Vec<_>>().join(",")),
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}={}", value_to_string(v))).collect(),
    }
}

/// Go's `%v` of a float64: the shortest digits, in exponent form when the
/// exponent is below -4 or at least 6 (`1e+06`).
fn go_float_v(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{f}")
    }
}

pub(crate) use listwatch_gocompat::quote::{go_quote, is_go_printable};

/// A set of field paths: SMD's `fieldpath.Set`, a trie whose members are
/// the paths in the set. A path's parents are not members unless inserted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    /// Never holds an empty set.
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> FieldSet {
        let mut set = FieldSet::new();
        for path in paths {
            set.insert(path);
        }
        set
    }

    /// Adds `path`; the empty path (the whole object) is never tracked.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            // Descends without cloning the elements already there (every leaf of an object is
            // inserted, mostly below parents that exist).
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => self.children.entry(first.clone()).or_default().insert(rest),
            },
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|child| child.has(rest)),
        }
    }

    /// Whether the set has no member (children are never empty, so this looks at one level).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// The members at this level (paths of one element).
    pub(crate) fn members(&self) -> &BTreeSet<PathElement> {
        &self.members
    }

    /// The sub-sets below this level, by their first element.
    pub(crate) fn children(&self) -> &BTreeMap<PathElement, FieldSet> {
        &self.children
    }

    pub(crate) fn insert_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    pub(crate) fn insert_child(&mut self, element: PathElement, child: FieldSet) {
        if !child.is_empty() {
            self.children.insert(element, child);
        }
    }

    /// The paths below `element`, without it.
    pub fn with_prefix(&self, element: &PathElement) -> FieldSet {
        self.children.get(element).cloned().unwrap_or_default()
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        let mut out = FieldSet { members: self.members.union(&other.members).cloned().collect(), ..FieldSet::new() };
        for (element, child) in &self.children {
            let merged = match other.children.get(element) {
                Some(theirs) => child.union(theirs),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        for (element, child) in &other.children {
            if !self.children.contains_key(element) {
                out.children.insert(element.clone(), child.clone());
            }
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                out.insert_child(element.clone(), child.intersection(theirs));
            }
        }
        out
    }

    /// The paths of `self` not in `other`. Members of `other` do not remove
    /// the paths below them (SMD's `Difference`: parent - child = parent,
    /// child - parent = child).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let mut out = FieldSet::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            out.insert_child(element.clone(), rest);
        }
        out
    }

    /// Like [`FieldSet::difference`], but a member of `other` also removes
    /// every path below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let mut out = FieldSet::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (element, child) in &self.children {
            if other.members.contains(element) {
                continue;
            }
            let rest = match other.children.get(element) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            out.insert_child(element.clone(), rest);
        }
        out
    }

    /// [`FieldSet::difference`] in place.
    pub(crate) fn remove(&mut self, other: &FieldSet) {
        self.remove_where(other, false);
    }

    /// [`FieldSet::recursive_difference`] in place.
    pub(crate) fn remove_recursive(&mut self, other: &FieldSet) {
        self.remove_where(other, true);
    }

    fn remove_where(&mut self, other: &FieldSet, recursive: bool) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        for member in &other.members {
            self.members.remove(member);
            if recursive {
                self.children.remove(member);
            }
        }
        for (element, theirs) in &other.children {
            if let Some(child) = self.children.get_mut(element) {
                child.remove_where(theirs, recursive);
                if child.is_empty() {
                    self.children.remove(element);
                }
            }
        }
    }

    /// Every path, in SMD's iteration order: at each level the members
    /// first, then the children's paths.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }
}

impl fmt::Display for FieldSet {
    /// One path per line, as SMD's `Set.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.paths().iter().map(|p| path_string(p)).collect();
        f.write_str(&lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::field(name)
    }

    #[test]
    fn in_place_removal_is_the_difference() {
        let set = |paths: &[&[&str]]| {
            let mut out = FieldSet::new();
            for path in paths {
                out.insert(&path.iter().map(|n| f(n)).collect::<Vec<_>>());
            }
            out
        };
        let a = set(&[
            &["spec"],
            &["spec", "replicas"],
            &["spec", "x", "y"],
            &["status", "a"],
            &["metadata", "labels", "l"],
        ]);
        let others = [
            set(&[&["spec"]]),
            set(&[&["spec", "x"]]),
            set(&[&["spec", "x", "y"], &["status"]]),
            set(&[&["metadata"], &["status", "a"]]),
            FieldSet::new(),
        ];
        for other in &others {
            let mut plain = a.clone();
            plain.remove(other);
            assert_eq!(plain, a.difference(other), "{other:?}");
            let mut recursive = a.clone();
            recursive.remove_recursive(other);
            assert_eq!(recursive, a.recursive_difference(other), "{other:?}");
            assert_eq!(a.union(other), other.union(&a));
        }
    }

    #[test]
    fn paths_print_as_smd_prints_them() {
        let path = vec![
            f("spec"),
            f("containers"),
            PathElement::key([("name".to_owned(), json!("nginx"))]),
            f("ports"),
            PathElement::key([("protocol".to_owned(), json!("TCP")), ("containerPort".to_owned(), json!(80))]),
        ];
        assert_eq!(path_string(&path), r#".spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"]"#);
        assert_eq!(PathElement::Value(json!("a\"b")).to_string(), r#"[="a\"b"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
        assert_eq!(value_to_string(&json!(1.5)), "1.5");
        assert_eq!(value_to_string(&json!(1e6)), "1e+06");
        assert_eq!(value_to_string(&json!(true)), "true");
    }

    #[test]
    fn elements_order_as_smd() {
        let mut elements = [
            PathElement::Index(10),
            PathElement::Value(json!("b")),
            PathElement::key([("name".to_owned(), json!("a"))]),
            PathElement::Index(2),
            f("b"),
            PathElement::Value(json!(3)),
            f("a"),
        ];
        elements.sort();
        let printed: Vec<String> = elements.iter().map(ToString::to_string).collect();
        assert_eq!(printed, [".a", ".b", r#"[name="a"]"#, "[=3]", r#"[="b"]"#, "[2]", "[10]"]);
        assert_eq!(PathElement::Value(json!(80)), PathElement::Value(json!(80.0)));
    }

    #[test]
    fn set_operations_follow_smd() {
        let a_b = [f("a"), f("b")];
        let a_c = [f("a"), f("c")];
        let set = FieldSet::from_paths([&a_b[..], &a_c[..]]);
        assert!(set.has(&a_b) && !set.has(&[f("a")]));
        let parent = FieldSet::from_paths([&[f("a")][..]]);
        // parent - child = parent; child - parent = child.
        assert_eq!(parent.difference(&set), parent);
        assert_eq!(set.difference(&parent), set);
        assert!(set.recursive_difference(&parent).is_empty());
        let only_b = FieldSet::from_paths([&a_b[..]]);
        assert_eq!(set.difference(&only_b), FieldSet::from_paths([&a_c[..]]));
        assert_eq!(set.intersection(&only_b), only_b);
        assert_eq!(only_b.union(&parent).len(), 2);
        let mixed = FieldSet::from_paths([&[f("z")][..], &a_b[..]]);
        let order: Vec<String> = mixed.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(order, [".z", ".a.b"]);
    }
}
