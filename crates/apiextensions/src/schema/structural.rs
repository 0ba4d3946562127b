//! Whether a schema is *structural*, checked at CRD create and update (kube's
//! `pkg/apiserver/schema/validation.go` `ValidateStructural` and `complete.go`):
//!
//! * every node has a `type` (`must not be empty at the root` / `for specified object fields` /
//!   `for specified array items`), except under `x-kubernetes-int-or-string` or
//!   `x-kubernetes-preserve-unknown-fields`; arrays have `items`; the root is an `object`;
//! * `allOf`/`anyOf`/`oneOf`/`not` only restrict what is declared outside them: no `type`,
//!   `default`, `description`, `nullable`, `additionalProperties` or `x-kubernetes-*` inside
//!   (`Forbidden: must be empty to be structural`), save the two int-or-string patterns, and
//!   every property or items the root's `allOf`/`anyOf`/`oneOf`/`not` name is declared outside
//!   too (`Required value: because it is defined in ...`; kube checks this at the root only);
//! * root `metadata` names at most `name` and `generateName`; `metadata` below the root only
//!   in embedded resources; `additionalProperties` never at the root.
//!
//! kube sorts these errors by their text; so does this.

use listwatch_meta::validation::FieldError;
use regex::Regex;
use serde_json::Value;

use super::{AdditionalProperties, Schema};
use crate::errors;
use crate::path::FieldPath;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural errors of a root schema at `path` (`spec.validation.openAPIV3Schema`).
pub fn validate_structural(path: &FieldPath, s: &Schema) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness(s, s, path, path, &mut errs);
    errs.sort_by_key(ToString::to_string);
    errs
}

/// `anyOf: [{type: integer}, {type: string}]` and nothing else in either branch.
fn is_int_or_string_any_of(any_of: &[Schema]) -> bool {
    let only_type = |s: &Schema, t: &str| {
        let mut bare = s.clone();
        bare.type_ = String::new();
        s.type_ == t && bare == Schema::default()
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn invariants(s: &Schema, lvl: Level, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.type_ == "array" && s.items.is_none() {
        errs.push(errors::required(&path.child("items"), "must be specified"));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &path.child("items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(v, Level::Field, &path.child("properties").key(k), errs);
    }
    if let Some(additional) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(errors::forbidden(&path.child("additionalProperties"), "must not be used at the root"));
        }
        if let AdditionalProperties::Schema(a) = additional {
            invariants(a, Level::Field, &path.child("additionalProperties"), errs);
        }
    }
    if s.int_or_string && s.preserves_unknown_fields() {
        errs.push(errors::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        errs.push(errors::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s.all_of.first().is_some_and(|a| is_int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let check_metadata = lvl == Level::Root || s.embedded_resource;
    if s.embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_.is_empty() {
            errs.push(errors::required(&path.child("type"), detail));
        } else {
            errs.push(errors::invalid(&path.child("type"), &Value::String(s.type_.clone()), detail));
        }
    } else if s.type_.is_empty() && !s.int_or_string && !s.preserves_unknown_fields() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(errors::required(&path.child("type"), detail));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        errs.push(errors::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(errors::invalid(&path.child("type"), &Value::String(s.type_.clone()), "must be object at the root"));
    }
    for key in ["kind", "apiVersion"] {
        if let Some(p) = s.properties.get(key)
            && check_metadata
            && p.type_ != "string"
        {
            errs.push(errors::invalid(
                &path.child("properties").key(key).child("type"),
                &Value::String(p.type_.clone()),
                "must be string",
            ));
        }
    }
    if let Some(metadata) = s.properties.get("metadata") {
        let mpath = path.child("properties").key("metadata");
        if check_metadata && metadata.type_ != "object" {
            errs.push(errors::invalid(&mpath.child("type"), &Value::String(metadata.type_.clone()), "must be object"));
        }
        if lvl == Level::Root {
            let mut rest = metadata.clone();
            let names = ["name", "generateName"];
            if rest.properties.keys().all(|k| names.contains(&k.as_str())) {
                rest.properties.clear();
            }
            rest.type_ = String::new();
            rest.default = None;
            if rest != Schema::default() {
                errs.push(errors::forbidden(
                    &mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
    }
    if s.embedded_resource && !s.preserves_unknown_fields() && s.properties.is_empty() {
        errs.push(errors::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn value_validation(
    s: &Schema,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, a) in s.any_of.iter().enumerate() {
            nested(a, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, a) in s.all_of.iter().enumerate() {
        nested(a, skip_first_all_of_any_of && i == 0, &path.child("allOf").index(i), errs);
    }
    for (i, a) in s.one_of.iter().enumerate() {
        nested(a, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(n) = &s.not {
        nested(n, false, &path.child("not"), errs);
    }
    if !s.pattern.is_empty()
        && let Err(e) = Regex::new(&s.pattern)
    {
        errs.push(errors::invalid(
            &path.child("pattern"),
            &Value::String(s.pattern.clone()),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn nested(v: &Schema, skip_any_of: bool, path: &FieldPath, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(items) = &v.items {
        nested(items, false, &path.child("items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &path.child("properties").key(k), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, child: &str, detail: &str| {
        errs.push(errors::forbidden(&path.child(child), detail));
    };
    if !v.type_.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.additional_properties.is_some() {
        forbid(errs, "additionalProperties", "must be undefined to be structural");
    }
    if v.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.preserves_unknown_fields() {
        forbid(errs, "x-kubernetes-preserve-unknown-fields", "must be false to be structural");
    }
    if v.embedded_resource {
        forbid(errs, "x-kubernetes-embedded-resource", "must be false to be structural");
    }
    if v.int_or_string {
        forbid(errs, "x-kubernetes-int-or-string", "must be false to be structural");
    }
    if !v.list_map_keys.is_empty() {
        forbid(errs, "x-kubernetes-list-map-keys", "must be empty to be structural");
    }
    if v.list_type.is_some() {
        forbid(errs, "x-kubernetes-list-type", "must be undefined to be structural");
    }
    if v.map_type.is_some() {
        forbid(errs, "x-kubernetes-map-type", "must be undefined to be structural");
    }
    if !v.validations.is_empty() {
        forbid(errs, "x-kubernetes-validations", "must be empty to be structural");
    }
    if v.properties.contains_key("metadata") {
        errs.push(errors::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Everything the value validations of `v` name must be declared in `s`.
fn completeness(v: &Schema, s: &Schema, s_path: &FieldPath, v_path: &FieldPath, errs: &mut Vec<FieldError>) {
    if let Some(n) = &v.not {
        nested_completeness(n, Some(s), s_path, &v_path.child("not"), errs);
    }
    for (name, list) in [("allOf", &v.all_of), ("anyOf", &v.any_of), ("oneOf", &v.one_of)] {
        for (i, a) in list.iter().enumerate() {
            nested_completeness(a, Some(s), s_path, &v_path.child(name).index(i), errs);
        }
    }
}

fn nested_completeness(
    v: &Schema,
    s: Option<&Schema>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(errors::required(s_path, &format!("because it is defined in {v_path}")));
        return;
    };
    completeness(v, s, s_path, v_path, errs);
    if let Some(items) = &v.items {
        nested_completeness(items, s.items.as_deref(), &s_path.child("items"), &v_path.child("items"), errs);
    }
    for (k, p) in &v.properties {
        let sp = s_path.child("properties").key(k);
        let vp = v_path.child("properties").key(k);
        match s.properties.get(k) {
            Some(sf) => nested_completeness(p, Some(sf), &sp, &vp, errs),
            None => errs.push(errors::required(&sp, &format!("because it is defined in {vp}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value) -> Vec<String> {
        let s = Schema::parse(&schema).unwrap();
        validate_structural(&FieldPath::new("spec.validation.openAPIV3Schema"), &s)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn missing_types() {
        assert_eq!(
            check(json!({"properties": {"spec": {"properties": {"x": {"type": "array"}}}}})),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[x].items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
                "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
            ]
        );
        assert_eq!(
            check(json!({"type": "string"})),
            vec!["spec.validation.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"]
        );
    }

    #[test]
    fn composition_rules() {
        assert!(
            check(json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}}}))
            .is_empty()
        );
        assert_eq!(
            check(json!({"type": "object", "properties": {"a": {"type": "string",
            "anyOf": [{"type": "string", "description": "d"}]}}, "oneOf": [{"properties": {"b": {}}}]})),
            vec![
                "spec.validation.openAPIV3Schema.properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[b]: Required value: because it is defined in spec.validation.openAPIV3Schema.oneOf[0].properties[b]",
            ]
        );
    }

    #[test]
    fn metadata_and_root_rules() {
        assert!(
            check(json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}}}}}))
            .is_empty()
        );
        assert_eq!(
            check(json!({"type": "object", "additionalProperties": {"type": "string"},
            "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})),
            vec![
                "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ]
        );
    }
}
