//! Checks of the `default`s in a schema at CRD create (kube's `pkg/apiserver/schema/
//! defaulting/validation.go` `ValidateDefaults`): each default must already be pruned
//! (`Invalid value: ...: must not have unknown fields`) and must itself pass the node's
//! validation, reported under `<node>.default` (kube names the value itself with an empty name,
//! so its sentences start with ` in body`). Defaults inside `metadata`, `apiVersion` and
//! `kind` of embedded resources are not checked here (kube validates them as ObjectMeta).

use listwatch_meta::validation::FieldError;

use super::Schema;
use crate::errors;
use crate::path::FieldPath;

/// The errors of every default below `s` (a root schema at `path`).
pub fn validate_defaults(path: &FieldPath, s: &Schema, require_pruned: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(path, s, false, require_pruned, &mut errs);
    errs
}

fn walk(path: &FieldPath, s: &Schema, inside_meta: bool, require_pruned: bool, errs: &mut Vec<FieldError>) {
    let inside_meta = inside_meta && !s.embedded_resource;
    if let Some(default) = &s.default
        && !inside_meta
    {
        let dpath = path.child("default");
        if require_pruned {
            let mut pruned = default.clone();
            s.prune_value(&mut pruned, s.embedded_resource);
            if &pruned != default {
                errs.push(errors::invalid(&dpath, default, "must not have unknown fields"));
            }
        }
        let found: Vec<FieldError> = s
            .validate(default)
            .into_iter()
            .map(|mut e| {
                e.field = if e.field == "<nil>" || e.field.is_empty() {
                    dpath.to_string()
                } else {
                    format!("{dpath}.{}", e.field)
                };
                e
            })
            .collect();
        errs.extend(found);
    }
    if let Some(items) = &s.items {
        walk(&path.child("items"), items, inside_meta, require_pruned, errs);
    }
    for (k, p) in &s.properties {
        let meta = inside_meta || (s.embedded_resource && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(&path.child("properties").key(k), p, meta, require_pruned, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_must_be_valid_and_pruned() {
        let s = Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "maximum": 10, "default": 20},
            "conf": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}}}}}}))
        .unwrap();
        let errs: Vec<String> = validate_defaults(&FieldPath::new("spec.validation.openAPIV3Schema"), &s, true)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[conf].default: Invalid value: map[string]interface {}{\"a\":\"x\", \"b\":1}: must not have unknown fields",
                "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 20:  in body should be less than or equal to 10",
            ]
        );
    }
}
