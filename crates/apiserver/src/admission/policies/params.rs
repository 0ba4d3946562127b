//! The params a binding evaluates its policy with (kube's `generic.CollectParams`): the object
//! its `paramRef` names, or those its selector picks, of the policy's `paramKind`, read as
//! the policy plugin's informer would (watch cache, else storage).

use listwatch_meta::selector::LabelSelector;
use serde_json::Value;

use super::configuration::{Binding, Policy};
use crate::state::ApiState;

/// Why params could not be collected: the policy's fault (its `paramKind`) or the binding's.
pub(super) enum Misconfigured {
    Policy(String),
    Binding(String),
}

/// The params, each evaluated once: `[None]` when the policy takes none or the binding gives
/// no `paramRef`; empty when none was found and the binding allows that.
pub(super) async fn collect(
    state: &ApiState,
    policy: &Policy,
    binding: &Binding,
    request_namespace: &str,
) -> Result<Vec<Option<Value>>, Misconfigured> {
    let Some(kind) = &policy.param_kind else { return Ok(vec![None]) };
    let (group, version) = kind.api_version.rsplit_once('/').unwrap_or(("", &kind.api_version));
    let store = state
        .stores()
        .into_iter()
        .find(|s| s.resource.group == group && s.resource.version == version && s.resource.kind == kind.kind);
    let Some(store) = store else {
        return Err(Misconfigured::Policy(format!(
            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={}'",
            kind.kind
        )));
    };
    let Some(param_ref) = &binding.param_ref else { return Ok(vec![None]) };
    let given = param_ref.namespace.as_deref().filter(|ns| !ns.is_empty());
    let namespace = match (store.resource.namespaced, given) {
        (false, Some(_)) => {
            return Err(Misconfigured::Binding(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            ));
        }
        (false, None) => None,
        (true, Some(ns)) => Some(ns),
        (true, None) if !request_namespace.is_empty() => Some(request_namespace),
        (true, None) => {
            return Err(Misconfigured::Binding(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into(),
            ));
        }
    };
    let params: Vec<Value> = match (param_ref.name.as_deref().filter(|n| !n.is_empty()), &param_ref.selector) {
        (Some(name), _) => match store.read(namespace, name).await {
            Ok(found) => found.map(|o| o.value()).into_iter().collect(),
            Err(e) => return Err(Misconfigured::Binding(e.to_string())),
        },
        (None, Some(selector)) => {
            let Some(selector) = LabelSelector::from_api(selector) else {
                return Err(Misconfigured::Binding(format!("invalid label selector {selector}")));
            };
            let all = store.list_all_now().await.map_err(|e| Misconfigured::Binding(e.to_string()))?;
            all.iter()
                .filter(|o| namespace.is_none_or(|ns| o.namespace() == ns) && selector.matches(o.labels()))
                .map(|o| o.value())
                .collect()
        }
        (None, None) => return Err(Misconfigured::Binding("one of name or selector must be provided".into())),
    };
    if params.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
        return Err(Misconfigured::Binding(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        ));
    }
    Ok(params.into_iter().map(Some).collect())
}
