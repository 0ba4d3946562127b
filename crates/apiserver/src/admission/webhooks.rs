//! Admission webhooks (kube's `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`
//! plugins): every write is offered to the webhooks whose rules, namespace selector and object
//! selector match it, as an `admission.k8s.io/v1` AdmissionReview POSTed over HTTPS.
//!
//! Mutating webhooks are called one after another, in the order of their configurations' names
//! and their order inside each; each may answer a JSON patch, applied before the next is
//! called. A webhook with `reinvocationPolicy: IfNeeded` is called once more if a later one
//! changed the object. Validating webhooks are called together and the first refusal (in
//! configuration order) is the answer. A webhook that cannot be called, times out or answers
//! something that is not a valid AdmissionReview fails the request (500) under
//! `failurePolicy: Fail` and is skipped under `Ignore`; a refusal is never skipped.
//!
//! The configurations are read from their watch caches, as kube's plugins read informers: a
//! webhook just registered applies once the cache has it. Webhook configurations themselves
//! are never sent to webhooks (kube's rule, so a broken webhook cannot lock out its own
//! repair). A webhook that names a Service is reached at the URL `serve --webhook-service`
//! maps it to (nothing runs in-cluster here), with TLS checked against the Service's DNS name,
//! as kube checks it.

pub mod configuration;
mod review;

use std::sync::Arc;

use listwatch_meta::ApiError;
use serde_json::{Map, Value};

use super::matching::conditions_hold;
use super::request::Admission;
use configuration::{GROUP, Hooks, MUTATING, VALIDATING, Webhook};

/// The registered webhooks.
async fn hooks(admission: &Admission<'_>) -> Arc<Hooks> {
    let state = admission.state;
    let stores = [MUTATING, VALIDATING].map(|plural| state.store(GROUP, "v1", plural));
    state.webhooks.get(stores, Hooks::from_configurations).await
}

/// Mutating admission (see the module docs).
pub(super) async fn mutate(
    admission: &Admission<'_>,
    name: &str,
    old: Option<&Map<String, Value>>,
    mut new: Option<Map<String, Value>>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    let hooks = hooks(admission).await;
    if hooks.mutating.is_empty() {
        return Ok(new);
    }
    let mut invoked_reinvocable = Vec::new();
    let mut to_reinvoke: Vec<usize> = Vec::new();
    for (i, hook) in hooks.mutating.iter().enumerate() {
        match sees(admission, hook, name, old, new.as_ref()).await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(failure) => return Err(failure.into_error(&hook.spec.name)),
        }
        let changed = call_mutating(admission, hook, name, old, &mut new).await?;
        if changed {
            for j in &invoked_reinvocable {
                if !to_reinvoke.contains(j) {
                    to_reinvoke.push(*j);
                }
            }
        }
        if hook.reinvoked_if_needed() {
            invoked_reinvocable.push(i);
        }
    }
    to_reinvoke.sort_unstable();
    for i in to_reinvoke {
        call_mutating(admission, &hooks.mutating[i], name, old, &mut new).await?;
    }
    Ok(new)
}

/// Calls one mutating webhook and applies its patch to `new`; whether it changed anything.
async fn call_mutating(
    admission: &Admission<'_>,
    hook: &Webhook,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: &mut Option<Map<String, Value>>,
) -> Result<bool, ApiError> {
    let answer = match call_hook(admission, hook, name, old, new.as_ref(), true).await {
        Ok(answer) => answer,
        Err(Failure::Calling(_)) if hook.ignores_failures() => return Ok(false),
        Err(failure) => return Err(failure.into_error(&hook.spec.name)),
    };
    let Some(patch) = answer.patch else { return Ok(false) };
    let operations = match &patch {
        Value::Array(operations) => operations.len(),
        _ => 0,
    };
    if operations == 0 {
        return Ok(false);
    }
    let Some(object) = new.as_mut() else {
        return Err(ApiError::internal(format!(
            "admission webhook {} attempted to modify the object, which is not supported for this operation",
            listwatch_meta::validation::go_quote(&hook.spec.name)
        )));
    };
    let patched = listwatch_patch::json_patch(&Value::Object(object.clone()), &patch)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let Value::Object(patched) = patched else {
        return Err(ApiError::internal(format!(
            "admission webhook {} turned the object into something else",
            listwatch_meta::validation::go_quote(&hook.spec.name)
        )));
    };
    let changed = patched != *object;
    *object = patched;
    Ok(changed)
}

/// Validating admission (see the module docs).
pub(super) async fn validate(
    admission: &Admission<'_>,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
) -> Result<(), ApiError> {
    let hooks = hooks(admission).await;
    let mut relevant = Vec::new();
    for hook in &hooks.validating {
        match sees(admission, hook, name, old, new).await {
            Ok(true) => relevant.push(hook.clone()),
            Ok(false) => {}
            Err(failure) => return Err(failure.into_error(&hook.spec.name)),
        }
    }
    let calls = relevant.iter().map(|hook| async move {
        match call_hook(admission, hook, name, old, new, false).await {
            Ok(_) => Ok(()),
            Err(Failure::Calling(_)) if hook.ignores_failures() => Ok(()),
            Err(failure) => Err(failure.into_error(&hook.spec.name)),
        }
    });
    futures::future::join_all(calls).await.into_iter().collect()
}

/// Whether `hook` sees this write: its rules and selectors, then its match conditions. A
/// condition that cannot be evaluated skips the webhook under `failurePolicy: Ignore` and
/// refuses the request otherwise (kube's 403).
async fn sees(
    admission: &Admission<'_>,
    hook: &Webhook,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
) -> Result<bool, Failure> {
    if !hook.criteria.matches(admission, name, old, new).await.map_err(Failure::Refused)? {
        return Ok(false);
    }
    if hook.spec.match_conditions.is_empty() {
        return Ok(true);
    }
    let activation = admission.activation(name, old, new, None, None);
    match conditions_hold(&hook.spec.match_conditions, &activation) {
        Ok(holds) => Ok(holds),
        Err(_) if hook.ignores_failures() => Ok(false),
        Err(e) => Err(Failure::Refused(ApiError::forbidden(&admission.resource.group_resource(), name, &e))),
    }
}

/// Why a webhook's answer is not an admission.
enum Failure {
    /// It could not be called or answered garbage (its failure policy decides): the reason.
    Calling(String),
    /// It refused the request, or the request may not reach it: the answer as is.
    Refused(ApiError),
}

impl Failure {
    fn into_error(self, hook: &str) -> ApiError {
        match self {
            Failure::Calling(reason) => ApiError::internal(format!(
                "failed calling webhook {}: {reason}",
                listwatch_meta::validation::go_quote(hook)
            )),
            Failure::Refused(error) => error,
        }
    }
}

/// One AdmissionReview round trip: the webhook's verified answer (its warnings already taken).
async fn call_hook(
    admission: &Admission<'_>,
    hook: &Webhook,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
    mutating: bool,
) -> Result<review::Answer, Failure> {
    let quoted = listwatch_meta::validation::go_quote(&hook.spec.name);
    if admission.dry_run && !hook.safe_on_dry_run() {
        return Err(Failure::Refused(ApiError::bad_request(format!(
            "admission webhook {quoted} does not support dry run"
        ))));
    }
    if let Some(error) = &hook.criteria.selector_error {
        return Err(Failure::Calling(error.clone()));
    }
    let (uid, body) = review::request(admission, name, old, new);
    let services = &admission.state.config.webhook_services;
    let injected = admission.state.webhook_faults.failure(&hook.spec.name);
    let reply = crate::webhook_client::post(&hook.spec.client_config, hook.timeout(), services, body, injected)
        .await
        .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
    let answer = review::verify(&uid, mutating, &reply)
        .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))?;
    admission.warn(answer.warnings.iter().cloned());
    if !answer.allowed {
        return Err(Failure::Refused(review::refusal(&hook.spec.name, answer.result.as_ref())));
    }
    Ok(answer)
}
