//! Field paths as kube prints them in validation errors (`field.Path`): children joined by
//! dots, list indexes as `[0]`, map keys as `[key]` (`spec.versions[0].schema.openAPIV3Schema
//! .properties[spec].type`). Kept apart so every validator of this crate spells paths alike.

use std::fmt;

/// A path to a field, built child by child.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// The path of a top-level field (`spec`, `metadata`).
    pub fn new(root: &str) -> FieldPath {
        FieldPath(root.to_owned())
    }

    /// The empty path (errors about the whole object).
    pub fn root() -> FieldPath {
        FieldPath(String::new())
    }

    /// `self.name`. `name` may itself hold dots (`scale.specReplicasPath`), as kube's
    /// `Child("a.b")` does.
    pub fn child(&self, name: &str) -> FieldPath {
        if self.0.is_empty() { FieldPath(name.to_owned()) } else { FieldPath(format!("{}.{name}", self.0)) }
    }

    /// `self[index]`.
    pub fn index(&self, index: usize) -> FieldPath {
        FieldPath(format!("{}[{index}]", self.0))
    }

    /// `self[key]` (a map key, printed without quotes).
    pub fn key(&self, key: &str) -> FieldPath {
        FieldPath(format!("{}[{key}]", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&FieldPath> for String {
    fn from(path: &FieldPath) -> String {
        path.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_like_kube() {
        let p = FieldPath::new("spec").child("versions").index(0).child("schema.openAPIV3Schema");
        assert_eq!(
            p.child("properties").key("spec").child("type").as_str(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"
        );
        assert_eq!(FieldPath::root().child("spec").as_str(), "spec");
    }
}
