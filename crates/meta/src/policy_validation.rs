//! kube's validation of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
//! (`pkg/apis/admissionregistration/validation`, after defaulting): a policy says what it
//! matches (at least one resource rule), how failures count, and what it checks (validations
//! or audit annotations, each a CEL expression that compiles); a binding names its policy, how
//! a failed validation is enforced (Deny, Warn, Audit; not Deny with Warn), and where its
//! params are.
//!
//! Compiling CEL is not this crate's: the caller passes `compiles`, which says why an
//! expression does not compile.

use serde_json::{Map, Value};

use crate::admission_validation::{objects, rule_with_operations, strings, text};
use crate::apps_validation::validate_label_selector;
use crate::validation::{FieldError, go_quote, is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment_name};
use crate::write_validation::is_qualified_name;

/// Why an expression does not compile, or `Ok`.
pub type Compiles<'a> = &'a dyn Fn(&str) -> Result<(), String>;

const REASONS: [&str; 4] = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"];
const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

fn object<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    object.get(key).and_then(Value::as_object)
}

/// `ValidateValidatingAdmissionPolicy` (the spec; metadata is checked by the caller).
pub fn validate_policy(policy: &Map<String, Value>, compiles: Compiles<'_>) -> Vec<FieldError> {
    let empty = Map::new();
    let spec = object(policy, "spec").unwrap_or(&empty);
    let mut errors = Vec::new();
    match text(spec, "failurePolicy") {
        None => errors.push(FieldError::required("spec.failurePolicy", "")),
        Some(policy) if !["Fail", "Ignore"].contains(&policy) => {
            errors.push(FieldError::not_supported("spec.failurePolicy", &go_quote(policy), &["Fail", "Ignore"]));
        }
        Some(_) => {}
    }
    if let Some(kind) = object(spec, "paramKind") {
        errors.extend(param_kind(kind));
    }
    match object(spec, "matchConstraints") {
        None => errors.push(FieldError::required("spec.matchConstraints", "")),
        Some(constraints) => {
            errors.extend(match_resources("spec.matchConstraints", constraints));
            if objects(constraints, "resourceRules").next().is_none() {
                errors.push(FieldError::required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    errors.extend(match_conditions("spec.matchConditions", spec, compiles));
    for (i, variable) in objects(spec, "variables").enumerate() {
        let path = format!("spec.variables[{i}]");
        let name = text(variable, "name").unwrap_or_default();
        if name.trim().is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            errors.push(FieldError::invalid(format!("{path}.name"), name, "name is not a valid CEL identifier"));
        }
        errors.extend(expression(&format!("{path}.expression"), variable, compiles));
    }
    let validations: Vec<_> = objects(spec, "validations").collect();
    let annotations: Vec<_> = objects(spec, "auditAnnotations").collect();
    if validations.is_empty() && annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errors.push(FieldError::required("spec.validations", detail));
        errors.push(FieldError::required("spec.auditAnnotations", detail));
    }
    for (i, validation) in validations.into_iter().enumerate() {
        let path = format!("spec.validations[{i}]");
        errors.extend(expression(&format!("{path}.expression"), validation, compiles));
        if let Some(message_expression) = text(validation, "messageExpression") {
            if message_expression.trim().is_empty() {
                errors.push(FieldError::invalid(
                    format!("{path}.messageExpression"),
                    message_expression,
                    "must be non-empty if specified",
                ));
            } else if let Err(why) = compiles(message_expression) {
                errors.push(compile_error(&format!("{path}.messageExpression"), message_expression, &why));
            }
        }
        if let Some(message) = text(validation, "message") {
            if !message.is_empty() && message.trim().is_empty() {
                errors.push(FieldError::invalid(
                    format!("{path}.message"),
                    message,
                    "message must be non-empty if specified",
                ));
            } else if message.trim().contains(['\n', '\r']) {
                errors.push(FieldError::invalid(
                    format!("{path}.message"),
                    message,
                    "message must not contain line breaks",
                ));
            }
        }
        if let Some(reason) = text(validation, "reason")
            && !REASONS.contains(&reason)
        {
            errors.push(FieldError::not_supported(format!("{path}.reason"), &go_quote(reason), &REASONS));
        }
    }
    let mut keys = Vec::new();
    for (i, annotation) in annotations.into_iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        let key = text(annotation, "key").unwrap_or_default();
        if keys.contains(&key) {
            errors.push(FieldError::duplicate(format!("{path}.key"), key));
        }
        keys.push(key);
        match text(annotation, "valueExpression").map(str::trim) {
            None | Some("") => {
                errors
                    .push(FieldError::required(format!("{path}.valueExpression"), "valueExpression is not specified"));
            }
            Some(value) => {
                if let Err(why) = compiles(value) {
                    errors.push(compile_error(&format!("{path}.valueExpression"), value, &why));
                }
            }
        }
    }
    errors
}

/// `ValidateValidatingAdmissionPolicyBinding` (the spec).
pub fn validate_policy_binding(binding: &Map<String, Value>) -> Vec<FieldError> {
    let empty = Map::new();
    let spec = object(binding, "spec").unwrap_or(&empty);
    let mut errors = Vec::new();
    match text(spec, "policyName").unwrap_or_default() {
        "" => errors.push(FieldError::required("spec.policyName", "")),
        name => {
            for problem in is_dns1123_subdomain(name) {
                errors.push(FieldError::invalid("spec.policyName", name, &problem));
            }
        }
    }
    if let Some(param_ref) = object(spec, "paramRef") {
        errors.extend(param_ref_errors(param_ref));
    }
    if let Some(resources) = object(spec, "matchResources") {
        errors.extend(match_resources("spec.matchResources", resources));
    }
    errors.extend(validation_actions(&strings(spec, "validationActions")));
    errors
}

fn param_kind(kind: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match text(kind, "apiVersion").unwrap_or_default() {
        "" => errors.push(FieldError::required("spec.paramKind.apiVersion", "")),
        api_version => {
            let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
                [version] => ("", version),
                [group, version] => (group, version),
                _ => {
                    let detail = format!("unexpected GroupVersion string: {api_version}");
                    errors.push(FieldError::invalid("spec.paramKind.apiVersion", api_version, &detail));
                    ("", "v")
                }
            };
            if !group.is_empty() {
                let problems = is_dns1123_subdomain(group);
                if !problems.is_empty() {
                    errors.push(FieldError::invalid("spec.paramKind.apiVersion", group, &problems.join(",")));
                }
            }
            if version.is_empty() {
                errors.push(FieldError::invalid("spec.paramKind.apiVersion", api_version, "version must be specified"));
            } else {
                let problems = is_dns1035_label(version);
                if !problems.is_empty() {
                    errors.push(FieldError::invalid("spec.paramKind.apiVersion", version, &problems.join(",")));
                }
            }
        }
    }
    match text(kind, "kind").unwrap_or_default() {
        "" => errors.push(FieldError::required("spec.paramKind.kind", "")),
        name => {
            let problems = is_dns1035_label(&name.to_lowercase());
            if !problems.is_empty() {
                let detail = format!("may have mixed case, but should otherwise match: {}", problems.join(","));
                errors.push(FieldError::invalid("spec.paramKind.kind", name, &detail));
            }
        }
    }
    errors
}

/// `validateMatchResources`.
fn match_resources(path: &str, resources: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match text(resources, "matchPolicy") {
        None => errors.push(FieldError::required(format!("{path}.matchPolicy"), "")),
        Some(policy) if !["Equivalent", "Exact"].contains(&policy) => errors.push(FieldError::not_supported(
            format!("{path}.matchPolicy"),
            &go_quote(policy),
            &["Equivalent", "Exact"],
        )),
        Some(_) => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match object(resources, key) {
            None => errors.push(FieldError::required(format!("{path}.{key}"), "")),
            Some(selector) => errors.extend(validate_label_selector(selector, &format!("{path}.{key}"))),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in objects(resources, key).enumerate() {
            let at = format!("{path}.{key}[{i}]");
            let mut names = Vec::new();
            for (j, name) in strings(rule, "resourceNames").into_iter().enumerate() {
                for problem in is_valid_path_segment_name(name) {
                    errors.push(FieldError::invalid(format!("{at}.resourceNames[{j}]"), name, &problem));
                }
                if names.contains(&name) {
                    errors.push(FieldError::duplicate(format!("{at}.resourceNames[{j}]"), name));
                }
                names.push(name);
            }
            errors.extend(rule_with_operations(&at, rule));
        }
    }
    errors
}

/// `validateMatchConditions`: at most 64, each named (a qualified name, unique) with an
/// expression that compiles.
pub fn match_conditions(path: &str, spec: &Map<String, Value>, compiles: Compiles<'_>) -> Vec<FieldError> {
    let conditions: Vec<_> = objects(spec, "matchConditions").collect();
    let mut errors = Vec::new();
    if conditions.len() > 64 {
        errors.push(FieldError::invalid_raw(path, &conditions.len().to_string(), "must have at most 64 items"));
    }
    let mut names = Vec::new();
    for (i, condition) in conditions.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        errors.extend(expression(&format!("{at}.expression"), condition, compiles));
        match text(condition, "name").unwrap_or_default() {
            "" => errors.push(FieldError::required(format!("{at}.name"), "")),
            name => {
                for problem in is_qualified_name(name) {
                    errors.push(FieldError::invalid(format!("{at}.name"), name, &problem));
                }
                if names.contains(&name) {
                    errors.push(FieldError::duplicate(format!("{at}.name"), name));
                }
                names.push(name);
            }
        }
    }
    errors
}

/// An `expression` field: required, and it must compile.
fn expression(path: &str, holder: &Map<String, Value>, compiles: Compiles<'_>) -> Vec<FieldError> {
    match text(holder, "expression").map(str::trim) {
        None | Some("") => vec![FieldError::required(path, "expression is not specified")],
        Some(source) => match compiles(source) {
            Ok(()) => Vec::new(),
            Err(why) => vec![compile_error(path, source, &why)],
        },
    }
}

fn compile_error(path: &str, source: &str, why: &str) -> FieldError {
    FieldError::invalid(path, source, &format!("compilation failed: {why}"))
}

/// `validateValidationActions`.
fn validation_actions(actions: &[&str]) -> Vec<FieldError> {
    let supported = ["Audit", "Deny", "Warn"];
    let mut errors = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, &action) in actions.iter().enumerate() {
        let at = format!("spec.validationActions[{i}]");
        if !supported.contains(&action) {
            errors.push(FieldError::not_supported(&at, &go_quote(action), &supported));
        }
        if seen.contains(&action) {
            errors.push(FieldError::duplicate(&at, action));
        }
        seen.push(action);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        let quoted: Vec<String> = actions.iter().map(|a| go_quote(a)).collect();
        errors.push(FieldError::invalid_raw(
            "spec.validationActions",
            &format!("[]admissionregistration.ValidationAction{{{}}}", quoted.join(", ")),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errors.push(FieldError::required("spec.validationActions", "at least one validation action is required"));
    }
    errors
}

fn param_ref_errors(param_ref: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = text(param_ref, "name").unwrap_or_default();
    let selector = object(param_ref, "selector");
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for problem in is_valid_path_segment_name(name) {
            errors.push(FieldError::invalid("spec.paramRef.name", name, &problem));
        }
        if selector.is_some() {
            errors.push(FieldError::forbidden("spec.paramRef.name", exclusive));
        }
    }
    if let Some(selector) = selector {
        errors.extend(validate_label_selector(selector, "spec.paramRef.selector"));
        if !name.is_empty() {
            errors.push(FieldError::forbidden("spec.paramRef.selector", exclusive));
        }
    }
    if name.is_empty() && selector.is_none() {
        errors.push(FieldError::required("spec.paramRef", "one of name or selector must be specified"));
    }
    match text(param_ref, "parameterNotFoundAction").unwrap_or_default() {
        "" => errors.push(FieldError::required("spec.paramRef.parameterNotFoundAction", "")),
        "Allow" | "Deny" => {}
        other => errors.push(FieldError::not_supported(
            "spec.paramRef.parameterNotFoundAction",
            &go_quote(other),
            &["Deny", "Allow"],
        )),
    }
    errors
}

/// CEL's `IDENT`: a letter or `_`, then letters, digits and `_`, and not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !CEL_RESERVED.contains(&name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(errors: Vec<FieldError>) -> Vec<String> {
        errors.into_iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
    }

    fn compiles(source: &str) -> Result<(), String> {
        if source.contains("((") { Err("Syntax error".into()) } else { Ok(()) }
    }

    #[test]
    fn a_policy_needs_rules_checks_and_expressions_that_compile() {
        let policy = json!({"spec": {"failurePolicy": "Sometimes", "matchConstraints": {
            "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}},
            "variables": [{"name": "in", "expression": "1"}],
            "validations": [{"expression": "((", "reason": "Teapot", "message": "a\nb"}]}});
        assert_eq!(
            messages(validate_policy(policy.as_object().unwrap(), &compiles)),
            [
                "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
                "spec.matchConstraints.resourceRules: Required value",
                "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier",
                "spec.validations[0].expression: Invalid value: \"((\": compilation failed: Syntax error",
                "spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks",
                "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
            ]
        );
        let empty = json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {"matchPolicy": "Exact",
            "namespaceSelector": {}, "objectSelector": {}, "resourceRules": [{"operations": ["CREATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}]}}});
        assert_eq!(
            messages(validate_policy(empty.as_object().unwrap(), &compiles)),
            [
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn a_binding_names_its_policy_actions_and_params() {
        let binding = json!({"spec": {"validationActions": ["Deny", "Warn", "Deny"],
            "paramRef": {"name": "p", "selector": {}}}});
        assert_eq!(
            messages(validate_policy_binding(binding.as_object().unwrap())),
            [
                "spec.policyName: Required value",
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Required value",
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
        let none = json!({"spec": {"policyName": "p"}});
        assert_eq!(
            messages(validate_policy_binding(none.as_object().unwrap())),
            ["spec.validationActions: Required value: at least one validation action is required"]
        );
    }
}
