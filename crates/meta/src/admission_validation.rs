//! kube's validation of admission webhook configurations (`pkg/apis/admissionregistration/
//! validation`, as for objects written through `admissionregistration.k8s.io/v1`): every
//! webhook has a unique, fully qualified name, one way to be reached (an `https` URL or a
//! service), the AdmissionReview versions it accepts, a side-effect class a dry run can trust,
//! a timeout of 1–30 s, and rules that say which operations on which resources it sees. Run
//! after defaulting (failure and match policies, selectors, timeout, rule scopes, the
//! service's port).

use serde_json::{Map, Value};

use crate::policy_validation::{Compiles, match_conditions};
use crate::validation::{FieldError, go_quote, is_dns1035_label, is_dns1123_subdomain};

const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

pub(crate) fn strings<'a>(object: &'a Map<String, Value>, key: &str) -> Vec<&'a str> {
    object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

pub(crate) fn text<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

pub(crate) fn objects<'a>(object: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Map<String, Value>> {
    object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// Go's `%#v` of a `[]string`.
fn go_strings(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `ValidateValidatingWebhookConfiguration` / `ValidateMutatingWebhookConfiguration`.
pub fn validate_webhook_configuration(
    object: &Map<String, Value>,
    mutating: bool,
    compiles: Compiles<'_>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut names = Vec::new();
    for (i, webhook) in objects(object, "webhooks").enumerate() {
        let path = format!("webhooks[{i}]");
        let name = text(webhook, "name").unwrap_or_default();
        errors.extend(fully_qualified_name(&format!("{path}.name"), name));
        if !name.is_empty() {
            if names.contains(&name) {
                errors.push(FieldError::duplicate(format!("{path}.name"), name));
            }
            names.push(name);
        }
        for (j, rule) in objects(webhook, "rules").enumerate() {
            errors.extend(rule_with_operations(&format!("{path}.rules[{j}]"), rule));
        }
        let one_of = |field: &str, value: Option<&str>, supported: &[&str], errors: &mut Vec<FieldError>| {
            if let Some(value) = value
                && !supported.contains(&value)
            {
                errors.push(FieldError::not_supported(format!("{path}.{field}"), &go_quote(value), supported));
            }
        };
        one_of("failurePolicy", text(webhook, "failurePolicy"), &["Fail", "Ignore"], &mut errors);
        one_of("matchPolicy", text(webhook, "matchPolicy"), &["Equivalent", "Exact"], &mut errors);
        match text(webhook, "sideEffects") {
            None | Some("") => errors
                .push(FieldError::required(format!("{path}.sideEffects"), "must specify one of None, NoneOnDryRun")),
            value => one_of("sideEffects", value, &["None", "NoneOnDryRun"], &mut errors),
        }
        if let Some(timeout) = webhook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&timeout)
        {
            errors.push(FieldError::invalid_raw(
                format!("{path}.timeoutSeconds"),
                &timeout.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        errors.extend(review_versions(
            &format!("{path}.admissionReviewVersions"),
            &strings(webhook, "admissionReviewVersions"),
        ));
        errors.extend(client_config(
            &format!("{path}.clientConfig"),
            webhook.get("clientConfig").and_then(Value::as_object),
        ));
        if mutating {
            one_of("reinvocationPolicy", text(webhook, "reinvocationPolicy"), &["IfNeeded", "Never"], &mut errors);
        }
        errors.extend(match_conditions(&format!("{path}.matchConditions"), webhook, compiles));
    }
    errors
}

/// `IsFullyQualifiedName`: a DNS subdomain of at least three labels.
fn fully_qualified_name(path: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        return vec![FieldError::invalid(path, name, &problems.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// `validateRuleWithOperations` and `validateRule`.
pub(crate) fn rule_with_operations(path: &str, rule: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        errors.push(FieldError::required(format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errors.push(FieldError::invalid_raw(
            format!("{path}.operations"),
            &go_strings(&operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            errors.push(FieldError::not_supported(
                format!("{path}.operations[{i}]"),
                &go_quote(operation),
                &OPERATIONS,
            ));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = strings(rule, key);
        if values.is_empty() {
            errors.push(FieldError::required(format!("{path}.{key}"), ""));
        }
        if values.len() > 1 && values.contains(&"*") {
            errors.push(FieldError::invalid_raw(
                format!("{path}.{key}"),
                &go_strings(&values),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (i, version) in values.iter().enumerate() {
                if version.is_empty() {
                    errors.push(FieldError::required(format!("{path}.apiVersions[{i}]"), "version must not be empty"));
                }
            }
        }
    }
    let resources = strings(rule, "resources");
    if resources.is_empty() {
        errors.push(FieldError::required(format!("{path}.resources"), ""));
    }
    for (i, resource) in resources.iter().enumerate() {
        if resource.is_empty() {
            errors.push(FieldError::required(format!("{path}.resources[{i}]"), ""));
        }
        if resource.split('/').count() > 2 {
            errors.push(FieldError::invalid(
                format!("{path}.resources[{i}]"),
                resource,
                "resource may not have more than one slash",
            ));
        }
    }
    if let Some(scope) = text(rule, "scope")
        && !["Cluster", "Namespaced", "*"].contains(&scope)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.scope"),
            &go_quote(scope),
            &["*", "Cluster", "Namespaced"],
        ));
    }
    errors
}

/// `validateAdmissionReviewVersions`, requiring a version the server sends.
fn review_versions(path: &str, versions: &[&str]) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![FieldError::required(path, "must specify one of v1, v1beta1")];
    }
    let mut errors = Vec::new();
    let mut seen = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        if seen.contains(version) {
            errors.push(FieldError::invalid(format!("{path}[{i}]"), version, "duplicate version"));
            continue;
        }
        seen.push(version);
        for problem in is_dns1035_label(version) {
            errors.push(FieldError::invalid(format!("{path}[{i}]"), version, &problem));
        }
    }
    if !versions.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v)) {
        errors.push(FieldError::invalid_raw(path, &go_strings(versions), "must include at least one of v1, v1beta1"));
    }
    errors
}

/// `validateWebhookClientConfig`: exactly one of an https URL and a service.
fn client_config(path: &str, config: Option<&Map<String, Value>>) -> Vec<FieldError> {
    let url = config.and_then(|c| text(c, "url"));
    let service = config.and_then(|c| c.get("service")).and_then(Value::as_object);
    match (url, service) {
        (Some(url), None) => webhook_url(&format!("{path}.url"), url),
        (None, Some(service)) => webhook_service(&format!("{path}.service"), service),
        _ => vec![FieldError::required(path, "exactly one of url or service is required")],
    }
}

/// `webhook.ValidateWebhookURL` with https required.
fn webhook_url(path: &str, raw: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let parsed = match url::Url::parse(raw) {
        Ok(parsed) => parsed,
        Err(e) => return vec![FieldError::required(path, &format!("url must be a valid URL: {e}{FORM}"))],
    };
    let mut errors = Vec::new();
    if parsed.scheme() != "https" {
        errors.push(FieldError::invalid(
            path,
            parsed.scheme(),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        errors.push(FieldError::invalid(path, "", &format!("host must be specified{FORM}")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        errors.push(FieldError::invalid(path, parsed.username(), "user information is not permitted in the URL"));
    }
    if let Some(fragment) = parsed.fragment().filter(|f| !f.is_empty()) {
        errors.push(FieldError::invalid(path, fragment, "fragments are not permitted in the URL"));
    }
    if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
        errors.push(FieldError::invalid(path, query, "query parameters are not permitted in the URL"));
    }
    errors
}

/// `webhook.ValidateWebhookService`.
fn webhook_service(path: &str, service: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if text(service, "name").is_none_or(str::is_empty) {
        errors.push(FieldError::required(format!("{path}.name"), "service name is required"));
    }
    if text(service, "namespace").is_none_or(str::is_empty) {
        errors.push(FieldError::required(format!("{path}.namespace"), "service namespace is required"));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        errors.push(FieldError::invalid_raw(
            format!("{path}.port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if let Some(webhook_path) = text(service, "path").filter(|p| !p.is_empty()) {
        if !webhook_path.starts_with('/') {
            errors.push(FieldError::invalid(format!("{path}.path"), webhook_path, "must start with a '/'"));
        } else if webhook_path != "/" {
            for (i, segment) in webhook_path[1..].split('/').enumerate() {
                if segment.is_empty() {
                    errors.push(FieldError::invalid(
                        format!("{path}.path"),
                        webhook_path,
                        &format!("segment[{i}] may not be empty"),
                    ));
                }
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors_of(webhook: Value) -> Vec<String> {
        let object = json!({"webhooks": [webhook]});
        validate_webhook_configuration(object.as_object().unwrap(), false, &|_| Ok(()))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn valid() -> Value {
        json!({
            "name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10, "failurePolicy": "Fail",
            "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}],
        })
    }

    #[test]
    fn a_valid_webhook_passes() {
        assert_eq!(errors_of(valid()), Vec::<String>::new());
    }

    #[test]
    fn kube_messages_for_each_broken_field() {
        let mut w = valid();
        w["name"] = json!("check.example");
        w["sideEffects"] = json!("Some");
        w["timeoutSeconds"] = json!(31);
        w["clientConfig"] = json!({"url": "http://x/y"});
        w["rules"][0]["operations"] = json!(["GET"]);
        assert_eq!(
            errors_of(w),
            vec![
                "webhooks[0].name: Invalid value: \"check.example\": should be a domain with at least three segments separated by dots",
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            ]
        );
        let mut w = valid();
        w["clientConfig"] = json!({});
        w.as_object_mut().unwrap().remove("admissionReviewVersions");
        assert_eq!(
            errors_of(w),
            vec![
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ]
        );
    }
}
