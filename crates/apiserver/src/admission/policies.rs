//! ValidatingAdmissionPolicy (kube's `ValidatingAdmissionPolicy` plugin, GA in 1.30): CEL
//! validations a policy declares, applied to the writes it and a binding match, with the
//! binding's params, before the validating webhooks are called.
//!
//! For each bound policy whose match constraints match the write, each of its bindings that
//! matches too is evaluated once per param: the policy's match conditions (one that is false
//! skips it), its variables, then its validations. A validation that is false is enforced as
//! the binding says: `Deny` refuses the write (the first refusal is the answer, after every
//! policy has run), `Warn` adds a `Warning` header, `Audit` is accepted and dropped (there is
//! no audit log). An expression that cannot be evaluated, a param that is missing under
//! `parameterNotFoundAction: Deny`, or a `paramKind` that is not served is a refusal under
//! `failurePolicy: Fail` and is ignored under `Ignore`. Refusals are kube's: `<resource>
//! "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
//! request: <message>`, with the validation's reason (422 Invalid unless it says otherwise).

pub mod configuration;
mod params;

use listwatch_meta::ApiError;
use listwatch_meta::status::StatusCause;
use serde_json::{Map, Value};

use super::matching::conditions_hold;
use super::request::Admission;
use configuration::{BINDINGS, Binding, POLICIES, Policies, Policy};
use params::Misconfigured;

/// A refusal, before it becomes the request's answer.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// Validating admission by the bound policies (see the module docs).
pub(super) async fn validate(
    admission: &Admission<'_>,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
) -> Result<(), ApiError> {
    let state = admission.state;
    let stores = [POLICIES, BINDINGS].map(|plural| state.store(super::webhooks::configuration::GROUP, "v1", plural));
    let policies = state.policies.get(stores, Policies::from_objects).await;
    let mut denials = Vec::new();
    for policy in &policies.policies {
        evaluate_policy(admission, policy, name, old, new, &mut denials).await?;
    }
    match denials.into_iter().next() {
        None => Ok(()),
        Some(denial) => Err(refusal(admission, name, denial)),
    }
}

async fn evaluate_policy(
    admission: &Admission<'_>,
    policy: &Policy,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
    denials: &mut Vec<Denial>,
) -> Result<(), ApiError> {
    let misconfigured = |binding: Option<&Binding>, why: String, denials: &mut Vec<Denial>| {
        if !policy.ignores_failures {
            let message = match binding {
                Some(_) => format!("failed to configure binding: {why}"),
                None => format!("failed to configure policy: {why}"),
            };
            denials.push(Denial {
                policy: policy.name.clone(),
                binding: binding.map(|b| b.name.clone()),
                message,
                reason: None,
            });
        }
    };
    match policy.criteria.matches(admission, name, old, new).await {
        Ok(true) if policy.criteria.selector_error.is_none() => {}
        Ok(true) => {
            misconfigured(None, policy.criteria.selector_error.clone().unwrap_or_default(), denials);
            return Ok(());
        }
        Ok(false) => return Ok(()),
        Err(e) => {
            misconfigured(None, e.status().message.clone(), denials);
            return Ok(());
        }
    }
    let request_namespace = admission.namespace.unwrap_or_default();
    // The namespace the object is in, for `namespaceObject` (a namespace itself has none).
    let is_namespace = admission.resource.group.is_empty() && admission.resource.kind == "Namespace";
    let namespace = match request_namespace {
        "" => None,
        _ if is_namespace => None,
        ns => super::lifecycle::namespace_object(admission.state, ns).await?.map(|n| n.value()),
    };
    for binding in &policy.bindings {
        if let Some(criteria) = &binding.criteria {
            match criteria.matches(admission, name, old, new).await {
                Ok(true) if criteria.selector_error.is_none() => {}
                Ok(true) => {
                    misconfigured(Some(binding), criteria.selector_error.clone().unwrap_or_default(), denials);
                    continue;
                }
                Ok(false) => continue,
                Err(e) => {
                    misconfigured(Some(binding), e.status().message.clone(), denials);
                    continue;
                }
            }
        }
        let params = match params::collect(admission.state, policy, binding, request_namespace).await {
            Ok(params) => params,
            Err(Misconfigured::Policy(why)) => {
                misconfigured(None, why, denials);
                // A policy's own fault fails every binding the same way: said once.
                return Ok(());
            }
            Err(Misconfigured::Binding(why)) => {
                misconfigured(Some(binding), why, denials);
                continue;
            }
        };
        for param in &params {
            for (message, reason) in
                failed_validations(admission, policy, name, old, new, param.as_ref(), namespace.as_ref())
            {
                for action in &binding.actions {
                    match action.as_str() {
                        "Deny" => denials.push(Denial {
                            policy: policy.name.clone(),
                            binding: Some(binding.name.clone()),
                            message: message.clone(),
                            reason: reason.clone(),
                        }),
                        "Warn" => admission.warn([format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                            policy.name, binding.name
                        )]),
                        // Audit: there is no audit log to publish it to.
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(())
}

/// The validations of `policy` that fail for one param: each message and reason (kube's
/// validator). Match conditions that do not hold leave nothing to fail.
fn failed_validations(
    admission: &Admission<'_>,
    policy: &Policy,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
    param: Option<&Value>,
    namespace: Option<&Value>,
) -> Vec<(String, Option<String>)> {
    let mut activation = admission.activation(name, old, new, param, namespace);
    match conditions_hold(&policy.match_conditions, &activation) {
        Ok(true) => {}
        Ok(false) => return Vec::new(),
        Err(_) if policy.ignores_failures => return Vec::new(),
        Err(e) => return vec![(e, None)],
    }
    for variable in &policy.variables {
        // A variable that fails fails the expressions that use it, when they run.
        let _ = activation.define(&variable.name, &variable.expression);
    }
    let mut failed = Vec::new();
    for validation in &policy.validations {
        match activation.holds(&validation.expression) {
            Ok(true) => {}
            Ok(false) => {
                let from_expression = validation
                    .message_expression
                    .as_deref()
                    .and_then(|e| activation.string(e).ok().flatten())
                    .map(|m| m.trim().to_owned())
                    .filter(|m| !m.is_empty() && m.len() <= 5 * 1024 && !m.contains('\n'));
                let message = from_expression
                    .or_else(|| {
                        validation.message.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(String::from)
                    })
                    .unwrap_or_else(|| format!("failed expression: {}", validation.expression.trim()));
                let reason = Some(validation.reason.clone().unwrap_or_else(|| "Invalid".into()));
                failed.push((message, reason));
            }
            Err(_) if policy.ignores_failures => {}
            Err(e) => failed.push((e, None)),
        }
    }
    failed
}

/// The first denial as the request's answer: `admission.NewForbidden` with the denial's reason
/// and its code (`reasonToCode`), and the message once more as a cause.
fn refusal(admission: &Admission<'_>, name: &str, denial: Denial) -> ApiError {
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denial.policy, denial.message
        ),
        None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", denial.policy, denial.message),
    };
    let mut error = ApiError::forbidden(&admission.resource.group_resource(), name, &message);
    let reason = denial.reason.unwrap_or_else(|| "Invalid".into());
    let status = &mut error.0;
    status.code = match reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    status.reason = reason;
    if let Some(details) = status.details.as_mut() {
        details.causes.push(StatusCause { reason: String::new(), message, field: String::new() });
    }
    error
}
