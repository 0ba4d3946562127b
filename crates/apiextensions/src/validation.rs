//! CRD create/update validation with kube's field paths and messages (kube's
//! `pkg/apis/apiextensions/validation/validation.go`), answered as a 422
//! `CustomResourceDefinition.apiextensions.k8s.io "<name>" is invalid: ...` by
//! [`invalid_error`].
//!
//! kube validates its *internal* form of the CRD, into which the v1 object is converted
//! first: when every version has the same schema (always so with one version), the schema
//! moves to `spec.validation`, and likewise subresources, printer columns and selectable
//! fields move to `spec.subresources`, `spec.additionalPrinterColumns` and
//! `spec.selectableFields`. Errors inside them are therefore reported under those paths
//! (`spec.validation.openAPIV3Schema.properties[spec].type`), not under `spec.versions[0]`;
//! [`InternalSpec`] reproduces that move. (shared/spec/crds-and-apply.md §1.2 and §7 #2 give
//! the per-version paths, which kube only uses when the versions differ.)
//!
//! Not reproduced: the "ratcheting" that lets an update keep a problem the old object already
//! had (kube relaxes some schema rules when the old CRD broke them), CEL compilation and cost
//! checks of `x-kubernetes-validations` rules, and webhook URL/CA bundle checks.

use listwatch_meta::ApiError;
use listwatch_meta::validation::{
    FieldError, invalid_error as meta_invalid_error, is_dns1035_label, is_dns1123_subdomain,
};
use serde_json::Value;

use crate::crd::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionVersion, CustomResourceSubresources, CustomResourceValidation, GROUP, KIND,
    SelectableField,
};
use crate::errors;
use crate::path::FieldPath;

mod schema_props;

/// The annotation protected groups (`*.k8s.io`, `*.kubernetes.io`) need.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";
/// The most selectable fields per version.
pub const MAX_SELECTABLE_FIELDS: usize = 8;

/// The 422 kube answers for `errors`: `CustomResourceDefinition.apiextensions.k8s.io "<name>"
/// is invalid: ...`, one cause per error.
pub fn invalid_error(crd: &CustomResourceDefinition, errs: &[FieldError]) -> ApiError {
    meta_invalid_error(GROUP, KIND, crd.name(), errs)
}

/// The per-version parts kube hoists to the spec when they are the same in every version.
#[derive(Debug, Default)]
pub struct InternalSpec<'a> {
    /// `spec.validation`: the common schema.
    pub validation: Option<&'a CustomResourceValidation>,
    /// Whether `validation` was hoisted (then per-version schemas count as absent).
    pub validation_hoisted: bool,
    /// `spec.subresources`.
    pub subresources: Option<&'a CustomResourceSubresources>,
    /// Whether subresources were hoisted.
    pub subresources_hoisted: bool,
    /// `spec.additionalPrinterColumns`.
    pub columns: Option<&'a [CustomResourceColumnDefinition]>,
    /// `spec.selectableFields`.
    pub selectable_fields: Option<&'a [SelectableField]>,
}

impl<'a> InternalSpec<'a> {
    /// kube's `Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_...`.
    pub fn of(versions: &'a [CustomResourceDefinitionVersion]) -> InternalSpec<'a> {
        let Some(first) = versions.first() else { return InternalSpec::default() };
        let same = |f: &dyn Fn(&CustomResourceDefinitionVersion, &CustomResourceDefinitionVersion) -> bool| {
            versions.iter().all(|v| f(v, first))
        };
        let validation_hoisted = same(&|v, f| v.schema == f.schema);
        let subresources_hoisted = same(&|v, f| v.subresources == f.subresources);
        let columns_hoisted = same(&|v, f| v.additional_printer_columns == f.additional_printer_columns);
        let selectable_hoisted = same(&|v, f| v.selectable_fields == f.selectable_fields);
        InternalSpec {
            validation: if validation_hoisted { first.schema.as_ref() } else { None },
            validation_hoisted,
            subresources: if subresources_hoisted { first.subresources.as_ref() } else { None },
            subresources_hoisted,
            columns: (columns_hoisted && !first.additional_printer_columns.is_empty())
                .then_some(first.additional_printer_columns.as_slice()),
            selectable_fields: (selectable_hoisted && !first.selectable_fields.is_empty())
                .then_some(first.selectable_fields.as_slice()),
        }
    }
}

/// Everything kube checks on create.
pub fn validate_create(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let mut errs = validate_name(crd);
    errs.extend(validate_spec(crd));
    errs.extend(validate_status(crd));
    errs.extend(validate_api_approval(crd, None));
    errs.extend(validate_preserve_unknown_fields(crd));
    errs
}

/// What [`validate_create`] checks besides the generic ObjectMeta rules an apiserver applies to
/// every kind (the name as a DNS-1123 subdomain, labels, annotations...): that the name is
/// `<plural>.<group>`, then the spec, the status and the annotations.
pub fn validate_create_spec(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let name = crd.name();
    let mut errs = Vec::new();
    if !name.is_empty() && name != format!("{}.{}", crd.spec.names.plural, crd.spec.group) {
        errs.push(FieldError::invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
    }
    errs.extend(validate_spec(crd));
    errs.extend(validate_status(crd));
    errs.extend(validate_api_approval(crd, None));
    errs.extend(validate_preserve_unknown_fields(crd));
    errs
}

/// Everything kube checks on an update of the main resource: the create checks, then the
/// immutable fields (`spec.group`, `spec.names.plural` always; `spec.scope` and
/// `spec.names.kind` once the old CRD is Established).
pub fn validate_update(crd: &CustomResourceDefinition, old: &CustomResourceDefinition) -> Vec<FieldError> {
    let mut errs = validate_spec(crd);
    let spec = FieldPath::new("spec");
    let mut immutable = |path: FieldPath, new: &str, old: &str| {
        if new != old {
            errs.push(FieldError::invalid(path.to_string(), new, "field is immutable"));
        }
    };
    if old.is_condition_true("Established") {
        immutable(spec.child("scope"), &crd.spec.scope, &old.spec.scope);
        immutable(spec.child("names").child("kind"), &crd.spec.names.kind, &old.spec.names.kind);
    }
    immutable(spec.child("group"), &crd.spec.group, &old.spec.group);
    immutable(spec.child("names").child("plural"), &crd.spec.names.plural, &old.spec.names.plural);
    errs.extend(validate_status(crd));
    if old.annotation(API_APPROVED_ANNOTATION) != crd.annotation(API_APPROVED_ANNOTATION) {
        errs.extend(validate_api_approval(crd, Some(old)));
    }
    if !old.spec.preserve_unknown_fields {
        errs.extend(validate_preserve_unknown_fields(crd));
    }
    errs
}

/// What kube checks on a write to `/status`: the accepted names.
pub fn validate_status_update(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    validate_names(&crd.status.accepted_names, &FieldPath::new("status").child("acceptedNames"))
}

fn validate_name(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let name = crd.name();
    if name.is_empty() {
        return vec![FieldError::required("metadata.name", "name or generateName is required")];
    }
    let mut problems = is_dns1123_subdomain(name);
    if name != format!("{}.{}", crd.spec.names.plural, crd.spec.group) {
        problems.push("must be spec.names.plural+\".\"+spec.group".into());
    }
    problems.iter().map(|p| FieldError::invalid("metadata.name", name, p)).collect()
}

/// Go's `%#v` of `[]apiextensions.CustomResourceDefinitionVersion`, shortened to the fields
/// that say which version is which (kube's full rendering includes pointer addresses).
fn go_versions(versions: &[CustomResourceDefinitionVersion]) -> String {
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}}}",
                listwatch_meta::validation::go_quote(&v.name),
                v.served,
                v.storage,
                v.deprecated
            )
        })
        .collect();
    format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", items.join(", "))
}

fn validate_spec(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let spec = &crd.spec;
    let path = FieldPath::new("spec");
    let mut errs = Vec::new();
    if spec.group.is_empty() {
        errs.push(errors::required(&path.child("group"), ""));
    } else {
        let problems = is_dns1123_subdomain(&spec.group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(path.child("group").to_string(), &spec.group, &problems.join(",")));
        } else if !spec.group.contains('.') {
            errs.push(FieldError::invalid(
                path.child("group").to_string(),
                &spec.group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec.scope.as_str() {
        "" => errs.push(errors::required(&path.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            path.child("scope").to_string(),
            &listwatch_meta::validation::go_quote(other),
            &["Cluster", "Namespaced"],
        )),
    }
    let internal = InternalSpec::of(&spec.versions);
    let has_top_schema = internal.validation.is_some_and(|v| v.open_api_v3_schema.is_some());
    if !has_top_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            if v.open_api_schema().is_none() {
                errs.push(errors::required(
                    &path.child("versions").index(i).child("schema").child("openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let any_status = spec.versions.iter().any(CustomResourceDefinitionVersion::has_status_subresource);
    let mut storage = 0;
    let mut unique = true;
    for (i, version) in spec.versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        if version.storage {
            storage += 1;
        }
        if spec.versions[..i].iter().any(|v| v.name == version.name) {
            unique = false;
        }
        let problems = is_dns1035_label(&version.name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(vpath.child("name").to_string(), &version.name, &problems.join(",")));
        }
        errs.extend(validate_version(version, &vpath, &internal));
    }
    if !unique {
        errs.push(errors::invalid_raw(
            &path.child("versions"),
            &go_versions(&spec.versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(errors::invalid_raw(
            &path.child("versions"),
            &go_versions(&spec.versions),
            "must have exactly one version marked as storage version",
        ));
    }
    let names = path.child("names");
    for (value, field) in [
        (&spec.names.plural, "plural"),
        (&spec.names.singular, "singular"),
        (&spec.names.kind, "kind"),
        (&spec.names.list_kind, "listKind"),
    ] {
        if value.is_empty() {
            errs.push(errors::required(&names.child(field), ""));
        }
    }
    errs.extend(validate_names(&spec.names, &names));
    if let Some(validation) = internal.validation {
        errs.extend(schema_props::validate_validation(validation, any_status, &path.child("validation")));
    }
    if let Some(subresources) = internal.subresources {
        errs.extend(validate_subresources(subresources, &path.child("subresources")));
    }
    for (i, column) in internal.columns.unwrap_or_default().iter().enumerate() {
        errs.extend(validate_column(column, &path.child("additionalPrinterColumns").index(i)));
    }
    if let Some(fields) = internal.selectable_fields {
        // kube 1.32 hoists identical selectable fields even when the schemas differ, and then
        // finds no common schema for them.
        match internal.validation {
            None => errs.push(FieldError::invalid(
                path.child("selectableFields").to_string(),
                "",
                "selectableFields may only be set when validations.schema is included",
            )),
            Some(v) => errs.extend(validate_selectable_fields(
                fields,
                v.open_api_v3_schema.as_ref(),
                &path.child("selectableFields"),
            )),
        }
    }
    if let Some(conversion) = &spec.conversion {
        errs.extend(validate_conversion(conversion, &path.child("conversion")));
    }
    errs
}

fn validate_version(
    version: &CustomResourceDefinitionVersion,
    path: &FieldPath,
    internal: &InternalSpec,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let warning_path = path.child("deprecationWarning");
    if let Some(warning) = &version.deprecation_warning {
        let mut problems = Vec::new();
        if !version.deprecated {
            problems.push("can only be set for deprecated versions".to_string());
        } else {
            if warning.len() > 256 {
                problems.push("must be <= 256 characters long".into());
            }
            if warning.is_empty() {
                problems.push("must not be an empty string".into());
            }
            if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
                problems.push(format!(
                    "must only contain printable UTF-8 characters; control character found at index {i}"
                ));
            }
        }
        for p in problems {
            errs.push(FieldError::invalid(warning_path.to_string(), warning, &p));
        }
    }
    if !internal.validation_hoisted
        && let Some(schema) = &version.schema
    {
        errs.extend(schema_props::validate_validation(schema, version.has_status_subresource(), &path.child("schema")));
    }
    if !internal.subresources_hoisted
        && let Some(subresources) = &version.subresources
    {
        errs.extend(validate_subresources(subresources, &path.child("subresources")));
    }
    if internal.columns.is_none() {
        for (i, column) in version.additional_printer_columns.iter().enumerate() {
            errs.extend(validate_column(column, &path.child("additionalPrinterColumns").index(i)));
        }
    }
    if internal.selectable_fields.is_none() && !version.selectable_fields.is_empty() {
        match version.open_api_schema() {
            None => errs.push(FieldError::invalid(
                path.child("selectableFields").to_string(),
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(schema) => {
                errs.extend(validate_selectable_fields(
                    &version.selectable_fields,
                    Some(schema),
                    &path.child("selectableFields"),
                ));
            }
        }
    }
    errs
}

/// kube's `ValidateCustomResourceDefinitionNames`.
pub fn validate_names(names: &CustomResourceDefinitionNames, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut label = |field: FieldPath, value: &str, lower: bool, prefix: &str| {
        let checked = if lower { value.to_lowercase() } else { value.to_string() };
        let problems = is_dns1035_label(&checked);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(field.to_string(), value, &format!("{prefix}{}", problems.join(","))));
        }
    };
    label(path.child("plural"), &names.plural, false, "");
    label(path.child("singular"), &names.singular, false, "");
    label(path.child("kind"), &names.kind, true, "may have mixed case, but should otherwise match: ");
    label(path.child("listKind"), &names.list_kind, true, "may have mixed case, but should otherwise match: ");
    for (i, short) in names.short_names.iter().enumerate() {
        let problems = is_dns1035_label(short);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(path.child("shortNames").index(i).to_string(), short, &problems.join(",")));
        }
    }
    if !names.kind.is_empty() && names.kind == names.list_kind {
        errs.push(FieldError::invalid(
            path.child("listKind").to_string(),
            &names.list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in names.categories.iter().enumerate() {
        let problems = is_dns1035_label(category);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                path.child("categories").index(i).to_string(),
                category,
                &problems.join(","),
            ));
        }
    }
    errs
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: [&str; 8] = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];

fn validate_column(column: &CustomResourceColumnDefinition, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if column.name.is_empty() {
        errs.push(errors::required(&path.child("name"), ""));
    }
    let types_detail = format!("must be one of {COLUMN_TYPES}");
    if column.type_.is_empty() {
        errs.push(errors::required(&path.child("type"), &types_detail));
    } else if !COLUMN_TYPES.split(',').any(|t| t == column.type_) {
        errs.push(FieldError::invalid(path.child("type").to_string(), &column.type_, &types_detail));
    }
    if !column.format.is_empty() && !COLUMN_FORMATS.contains(&column.format.as_str()) {
        errs.push(FieldError::invalid(
            path.child("format").to_string(),
            &column.format,
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    // kube names this child `JSONPath`, not the JSON field name.
    if column.json_path.is_empty() {
        errs.push(errors::required(&path.child("JSONPath"), ""));
    } else {
        errs.extend(validate_simple_json_path(&column.json_path, &path.child("JSONPath")));
    }
    errs
}

fn validate_simple_json_path(s: &str, path: &FieldPath) -> Vec<FieldError> {
    if s.is_empty() {
        vec![FieldError::invalid(path.to_string(), s, "must not be empty")]
    } else if !s.starts_with('.') {
        vec![FieldError::invalid(path.to_string(), s, "must be a simple json path starting with .")]
    } else {
        Vec::new()
    }
}

fn validate_subresources(subresources: &CustomResourceSubresources, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = &subresources.scale else { return errs };
    let check = |errs: &mut Vec<FieldError>, field: &str, value: &str, prefixes: &[&str], detail: &str| {
        let p = path.child(field);
        let found = validate_simple_json_path(value, &p);
        if !found.is_empty() {
            errs.extend(found);
        } else if !prefixes.iter().any(|pre| value.starts_with(pre)) {
            errs.push(FieldError::invalid(p.to_string(), value, detail));
        }
    };
    if scale.spec_replicas_path.is_empty() {
        errs.push(errors::required(&path.child("scale.specReplicasPath"), ""));
    } else {
        check(
            &mut errs,
            "scale.specReplicasPath",
            &scale.spec_replicas_path,
            &[".spec."],
            "should be a json path under .spec",
        );
    }
    if scale.status_replicas_path.is_empty() {
        errs.push(errors::required(&path.child("scale.statusReplicasPath"), ""));
    } else {
        check(
            &mut errs,
            "scale.statusReplicasPath",
            &scale.status_replicas_path,
            &[".status."],
            "should be a json path under .status",
        );
    }
    if let Some(selector) = scale.label_selector_path.as_deref().filter(|s| !s.is_empty()) {
        check(
            &mut errs,
            "scale.labelSelectorPath",
            selector,
            &[".spec.", ".status."],
            "should be a json path under either .spec or .status",
        );
    }
    errs
}

fn validate_selectable_fields(fields: &[SelectableField], schema: Option<&Value>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let schema = schema.and_then(|s| crate::schema::Schema::parse(s).ok());
    let mut seen: Vec<&str> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let jpath = path.index(i).child("jsonPath");
        if field.json_path.is_empty() {
            errs.push(errors::required(&jpath, ""));
            continue;
        }
        let steps: Vec<&str> = field.json_path.trim_start_matches('.').split('.').collect();
        let mut node = schema.as_ref();
        for step in &steps {
            node = node.and_then(|n| n.field(step));
        }
        let Some(node) = node.filter(|_| field.json_path.starts_with('.') && steps.iter().all(|s| !s.is_empty()))
        else {
            errs.push(FieldError::invalid(
                jpath.to_string(),
                &field.json_path,
                &format!("is an invalid path: does not refer to a valid field: {}", field.json_path),
            ));
            continue;
        };
        if steps[0] == "metadata" {
            errs.push(FieldError::invalid(jpath.to_string(), &field.json_path, "must not point to fields in metadata"));
        }
        if !matches!(node.type_.as_str(), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                jpath.to_string(),
                &field.json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let normalized = field.json_path.trim_start_matches('.');
        if seen.contains(&normalized) {
            errs.push(FieldError::duplicate(jpath.to_string(), &field.json_path));
        } else {
            seen.push(normalized);
        }
    }
    if seen.len() > MAX_SELECTABLE_FIELDS {
        errs.push(errors::too_many(path, seen.len() as i64, MAX_SELECTABLE_FIELDS as i64));
    }
    errs
}

fn validate_conversion(conversion: &CustomResourceConversion, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match conversion.strategy.as_str() {
        "" => errs.push(errors::required(&path.child("strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            path.child("strategy").to_string(),
            &listwatch_meta::validation::go_quote(other),
            &["None", "Webhook"],
        )),
    }
    let webhook = conversion.webhook.as_ref();
    if conversion.strategy == "Webhook" {
        // kube's internal type names the client config `webhookClientConfig`.
        match webhook.and_then(|w| w.client_config.as_ref()) {
            None => errs
                .push(errors::required(&path.child("webhookClientConfig"), "required when strategy is set to Webhook")),
            Some(cc) if cc.url.is_some() == cc.service.is_some() => {
                errs.push(errors::required(
                    &path.child("webhookClientConfig"),
                    "exactly one of url or service is required",
                ));
            }
            Some(_) => {}
        }
        let versions = webhook.map(|w| w.conversion_review_versions.as_slice()).unwrap_or_default();
        let vpath = path.child("conversionReviewVersions");
        if versions.is_empty() {
            errs.push(errors::required(&vpath, ""));
        } else {
            for (i, v) in versions.iter().enumerate() {
                if versions[..i].contains(v) {
                    errs.push(FieldError::invalid(vpath.index(i).to_string(), v, "duplicate version"));
                    continue;
                }
                for p in is_dns1035_label(v) {
                    errs.push(FieldError::invalid(vpath.index(i).to_string(), v, &p));
                }
            }
            if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
                let shown: Vec<String> = versions.iter().map(|v| listwatch_meta::validation::go_quote(v)).collect();
                errs.push(errors::invalid_raw(
                    &vpath,
                    &format!("[]string{{{}}}", shown.join(", ")),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else if let Some(w) = webhook {
        if w.client_config.is_some() {
            errs.push(errors::forbidden(
                &path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !w.conversion_review_versions.is_empty() {
            errs.push(errors::forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn go_strings(values: &[String]) -> String {
    let shown: Vec<String> = values.iter().map(|v| listwatch_meta::validation::go_quote(v)).collect();
    format!("[]string{{{}}}", shown.join(", "))
}

fn validate_status(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let path = FieldPath::new("status");
    let mut errs = validate_names(&crd.status.accepted_names, &path.child("acceptedNames"));
    let stored = crd.status.stored_versions.clone().unwrap_or_default();
    let spath = path.child("storedVersions");
    if stored.is_empty() {
        errs.push(errors::invalid_raw(&spath, &go_strings(&stored), "must have at least one stored version"));
        return errs;
    }
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in &crd.spec.versions {
        let found = remaining.iter().position(|(_, s)| **s == v.name);
        if v.storage && found.is_none() {
            errs.push(errors::invalid_raw(
                &spath,
                &go_strings(&stored),
                &format!("must have the storage version {}", v.name),
            ));
        }
        if let Some(at) = found {
            remaining.remove(at);
        }
    }
    for (i, v) in remaining {
        errs.push(FieldError::invalid(spath.index(i).to_string(), v, "must appear in spec.versions"));
    }
    errs
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io" || group.ends_with(".k8s.io") || group == "kubernetes.io" || group.ends_with(".kubernetes.io")
}

fn validate_api_approval(crd: &CustomResourceDefinition, _old: Option<&CustomResourceDefinition>) -> Vec<FieldError> {
    if !is_protected_group(&crd.spec.group) {
        return Vec::new();
    }
    let path = FieldPath::new("metadata").child("annotations").key(API_APPROVED_ANNOTATION);
    let value = crd.annotation(API_APPROVED_ANNOTATION).unwrap_or("");
    let quoted = listwatch_meta::validation::go_quote(API_APPROVED_ANNOTATION);
    if value.is_empty() {
        return vec![errors::required(
            &path,
            &format!(
                "protected groups must have approval annotation {quoted}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )];
    }
    let is_url = value
        .split_once("://")
        .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/'));
    if value.starts_with("unapproved") || is_url {
        return Vec::new();
    }
    vec![FieldError::invalid(
        path.to_string(),
        value,
        &format!(
            "protected groups must have approval annotation {quoted} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )]
}

fn validate_preserve_unknown_fields(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    if !crd.spec.preserve_unknown_fields {
        return Vec::new();
    }
    vec![errors::invalid(
        &FieldPath::new("spec").child("preserveUnknownFields"),
        &Value::Bool(true),
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}

#[cfg(test)]
mod tests;
