//! The checks of one `openAPIV3Schema` inside a CRD (kube's
//! `validateCustomResourceDefinitionValidation` and `ValidateCustomResourceDefinitionOpenAPISchema`):
//! the root restrictions when the status subresource is on, the structural rules
//! ([`crate::schema::structural`]) and defaults ([`crate::schema::default_checks`]), then
//! keyword by keyword: unsupported keywords, `uniqueItems`, `additionalProperties` with
//! `properties`, defaults in top-level metadata, the `x-kubernetes-*` extensions and the shape
//! of `x-kubernetes-validations` rules (their CEL is not compiled here).

use listwatch_meta::validation::FieldError;
use serde_json::Value;

use crate::crd::CustomResourceValidation;
use crate::errors;
use crate::path::FieldPath;
use crate::schema::default_checks::validate_defaults;
use crate::schema::structural::validate_structural;
use crate::schema::{AdditionalProperties, Schema};

/// `JSONSchemaProps` fields in Go order, with their JSON names, for the root check.
const GO_FIELDS: [(&str, &str); 39] = [
    ("ID", "id"),
    ("Schema", "$schema"),
    ("Ref", "$ref"),
    ("Description", "description"),
    ("Type", "type"),
    ("Format", "format"),
    ("Title", "title"),
    ("Default", "default"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Enum", "enum"),
    ("MaxProperties", "maxProperties"),
    ("MinProperties", "minProperties"),
    ("Required", "required"),
    ("Items", "items"),
    ("AllOf", "allOf"),
    ("OneOf", "oneOf"),
    ("AnyOf", "anyOf"),
    ("Not", "not"),
    ("Properties", "properties"),
    ("AdditionalProperties", "additionalProperties"),
    ("PatternProperties", "patternProperties"),
    ("Dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems"),
    ("Definitions", "definitions"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    ("Nullable", "nullable"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
];

const ALLOWED_AT_ROOT: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

const EXTENSION_FIELDS: [(&str, &str); 5] = [
    ("XIntOrString", "x-kubernetes-int-or-string"),
    ("XListMapKeys", "x-kubernetes-list-map-keys"),
    ("XListType", "x-kubernetes-list-type"),
    ("XMapType", "x-kubernetes-map-type"),
    ("XValidations", "x-kubernetes-validations"),
];

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// The errors of one `schema` (a `CustomResourceValidation`) at `path`
/// (`spec.validation` or `spec.versions[i].schema`).
pub(super) fn validate_validation(
    validation: &CustomResourceValidation,
    status_enabled: bool,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(raw) = &validation.open_api_v3_schema else { return errs };
    let root_path = path.child("openAPIV3Schema");
    let schema = match Schema::parse(raw) {
        Ok(s) => s,
        Err(e) => return vec![FieldError::invalid(root_path.to_string(), "", &e.0)],
    };
    if status_enabled && let Some(obj) = raw.as_object() {
        let present =
            GO_FIELDS.iter().chain(&EXTENSION_FIELDS).filter(|(_, json)| obj.get(*json).is_some_and(|v| !is_zero(v)));
        for (go, _) in present {
            if *go == "Type" {
                if schema.type_ != "object" {
                    errs.push(FieldError::invalid(
                        path.child("openAPIV3Schema.type").to_string(),
                        &schema.type_,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(go) {
                errs.push(errors::invalid_raw(
                    &root_path,
                    &format!("apiextensions.JSONSchemaProps{raw}"),
                    &format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.nullable {
        errs.push(errors::forbidden(&path.child("openAPIV3Schema.nullable"), "nullable cannot be true at the root"));
    }
    let structural = validate_structural(&root_path, &schema);
    if !structural.is_empty() {
        errs.extend(structural);
    } else {
        errs.extend(validate_defaults(&root_path, &schema, true));
        // CEL rules compile only against a structural schema, as in kube.
        crate::schema::cel::compile_errors(&schema, &root_path, &mut errs);
    }
    let mut props = Vec::new();
    Props { allow_defaults: true, forbidden_reason: String::new(), inside_meta: false }
        .check(&schema, &root_path, true, &mut props);
    errs.extend(props);
    errs
}

#[derive(Clone)]
struct Props {
    allow_defaults: bool,
    forbidden_reason: String,
    inside_meta: bool,
}

impl Props {
    fn without_defaults(&self, reason: &str) -> Props {
        Props { allow_defaults: false, forbidden_reason: reason.into(), ..self.clone() }
    }

    fn check(&self, s: &Schema, path: &FieldPath, is_root: bool, errs: &mut Vec<FieldError>) {
        const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
        if !s.type_.is_empty() && !TYPES.contains(&s.type_.as_str()) {
            errs.push(FieldError::not_supported(
                path.child("type").to_string(),
                &listwatch_meta::validation::go_quote(&s.type_),
                &TYPES,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let detail = if self.forbidden_reason.is_empty() {
                "must not be set".to_string()
            } else {
                format!("must not be set {}", self.forbidden_reason)
            };
            errs.push(errors::forbidden(&path.child("default"), &detail));
        }
        for keyword in &s.unsupported {
            errs.push(errors::forbidden(&path.child(keyword), &format!("{keyword} is not supported")));
        }
        if s.type_ == "null" {
            errs.push(errors::forbidden(
                &path.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if s.items_is_array {
            errs.push(errors::forbidden(&path.child("items"), "items must be a schema object and not an array"));
        }
        if self.inside_meta && s.embedded_resource {
            errs.push(errors::forbidden(
                &path.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
        if s.unique_items {
            errs.push(errors::forbidden(
                &path.child("uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ));
        }
        if let Some(additional) = &s.additional_properties {
            if !s.properties.is_empty() && !matches!(additional, AdditionalProperties::Allows(true)) {
                errs.push(errors::forbidden(
                    &path.child("additionalProperties"),
                    "additionalProperties and properties are mutual exclusive",
                ));
            }
            if let AdditionalProperties::Schema(a) = additional {
                let sub = if self.inside_meta {
                    self.without_defaults("inside additionalProperties applying to object metadata")
                } else {
                    self.clone()
                };
                sub.check(a, &path.child("additionalProperties"), false, errs);
            }
        }
        for (name, prop) in &s.properties {
            let mut sub = self.clone();
            if (is_root || s.embedded_resource) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion") {
                sub.inside_meta = true;
                if is_root {
                    sub = sub.without_defaults(&format!("in top-level {name}"));
                }
            }
            sub.check(prop, &path.child("properties").key(name), false, errs);
        }
        if let Some(not) = &s.not {
            self.check(not, &path.child("not"), false, errs);
        }
        for (name, list) in [("allOf", &s.all_of), ("oneOf", &s.one_of), ("anyOf", &s.any_of)] {
            for (i, sub) in list.iter().enumerate() {
                self.check(sub, &path.child(name).index(i), false, errs);
            }
        }
        if let Some(items) = &s.items {
            self.check(items, &path.child("items"), false, errs);
        }
        extensions(s, path, errs);
    }
}

fn extensions(s: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.preserve_unknown_fields == Some(false) {
        errs.push(errors::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    let type_value = Value::String(s.type_.clone());
    if s.map_type.is_some() && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-map-type is specified";
        errs.push(if s.type_.is_empty() {
            errors::required(&path.child("type"), detail)
        } else {
            errors::invalid(&path.child("type"), &type_value, detail)
        });
    }
    if let Some(map_type) = s.map_type.as_deref().filter(|t| !matches!(*t, "atomic" | "granular")) {
        errs.push(FieldError::not_supported(
            path.child("x-kubernetes-map-type").to_string(),
            &listwatch_meta::validation::go_quote(map_type),
            &["atomic", "granular"],
        ));
    }
    let list_type = s.list_type.as_deref();
    if list_type.is_some() && s.type_ != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        errs.push(if s.type_.is_empty() {
            errors::required(&path.child("type"), detail)
        } else {
            errors::invalid(&path.child("type"), &type_value, detail)
        });
    } else if list_type == Some("set")
        && let Some(items) = &s.items
    {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        match items.type_.as_str() {
            "array" if items.list_type.as_deref().is_some_and(|t| t != "atomic") => {
                errs.push(errors::invalid(
                    &path.child("items").child("x-kubernetes-list-type"),
                    &Value::from(items.list_type.clone()),
                    detail,
                ));
            }
            // kube shows the items' list type here, a nil pointer for objects: `null`.
            "object" if items.map_type.as_deref() != Some("atomic") => {
                errs.push(errors::invalid(
                    &path.child("items").child("x-kubernetes-map-type"),
                    &Value::from(items.list_type.clone()),
                    detail,
                ));
            }
            _ => {}
        }
    }
    if let Some(t) = list_type.filter(|t| !matches!(*t, "atomic" | "set" | "map")) {
        errs.push(FieldError::not_supported(
            path.child("x-kubernetes-list-type").to_string(),
            &listwatch_meta::validation::go_quote(t),
            &["atomic", "set", "map"],
        ));
    }
    if !s.list_map_keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(errors::required(&path.child("x-kubernetes-list-type"), detail)),
            Some("map") => {}
            Some(t) => errs.push(FieldError::invalid(path.child("x-kubernetes-list-type").to_string(), t, detail)),
        }
    }
    let keys_value = || Value::from(s.list_map_keys.clone());
    if list_type == Some("map") {
        if s.list_map_keys.is_empty() {
            errs.push(errors::required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => {
                errs.push(errors::required(
                    &path.child("items"),
                    "must have a schema if x-kubernetes-list-type is map",
                ));
            }
            Some(items) if items.type_ != "object" => errs.push(errors::invalid(
                &path.child("items").child("type"),
                &Value::String(items.type_.clone()),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(items) => {
                for (i, key) in s.list_map_keys.iter().enumerate() {
                    match items.properties.get(key) {
                        Some(p) if p.type_ == "array" || p.type_ == "object" => errs.push(errors::invalid(
                            &path.child("items").child("properties").key(key).child("type"),
                            &Value::String(items.type_.clone()),
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )),
                        Some(_) => {}
                        None => errs.push(errors::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if s.list_map_keys[..i].contains(key) {
                        errs.push(errors::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    if let (Some(items), Some(t @ ("set" | "map"))) = (&s.items, list_type) {
        if items.nullable {
            errs.push(errors::forbidden(
                &path.child("items").child("nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {t}"),
            ));
        }
        if t == "map" {
            for key in &s.list_map_keys {
                let Some(p) = items.properties.get(key) else { continue };
                let kpath = path.child("items").child("properties").key(key);
                if !items.required.contains(key) && p.default.is_none() {
                    errs.push(errors::required(
                        &kpath.child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if p.nullable {
                    errs.push(errors::forbidden(
                        &kpath.child("nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    for (i, rule) in s.validations.iter().enumerate() {
        let rpath = path.child("x-kubernetes-validations").index(i);
        let trimmed_rule = rule.rule.trim();
        let trimmed_message = rule.message.trim();
        if trimmed_rule.is_empty() {
            errs.push(errors::required(&rpath.child("rule"), "rule is not specified"));
        } else if !rule.message.is_empty() && trimmed_message.is_empty() {
            errs.push(FieldError::invalid(
                rpath.child("message").to_string(),
                &rule.message,
                "message must be non-empty if specified",
            ));
        } else if trimmed_message.contains(['\n', '\r']) {
            errs.push(FieldError::invalid(
                rpath.child("message").to_string(),
                &rule.message,
                "message must not contain line breaks",
            ));
        } else if trimmed_rule.contains(['\n', '\r']) && trimmed_message.is_empty() {
            errs.push(errors::required(
                &rpath.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            errs.push(errors::required(
                &rpath.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        const REASONS: [&str; 4] =
            ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];
        if let Some(reason) = rule.reason.as_deref().filter(|r| !REASONS.contains(r)) {
            errs.push(FieldError::not_supported(
                rpath.child("reason").to_string(),
                &listwatch_meta::validation::go_quote(reason),
                &REASONS,
            ));
        }
        if !rule.field_path.is_empty() && rule.field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                rpath.child("fieldPath").to_string(),
                &rule.field_path,
                "fieldPath must be non-empty if specified",
            ));
        }
        if rule.field_path.contains(['\n', '\r']) {
            errs.push(FieldError::invalid(
                rpath.child("fieldPath").to_string(),
                &rule.field_path,
                "fieldPath must not contain line breaks",
            ));
        }
    }
}
