//! Which writes a webhook or a policy sees (kube's `rules.Matcher`, `namespace.Matcher`,
//! `object.Matcher` and `matchconditions.Matcher`, shared by the webhook and policy plugins): a
//! rule covering the operation, group, version, resource (with its subresource), name and
//! scope, and no exclusion rule covering it; a namespace whose labels the namespace selector
//! matches; an object (new or old) whose labels the object selector matches; match conditions
//! that hold.

use listwatch_apiextensions::schema::cel::Activation;
use listwatch_meta::ApiError;
use listwatch_meta::selector::LabelSelector;
use serde_json::{Map, Value};

use crate::admission::criteria::{Criteria, MatchCondition, Rule};
use crate::admission::lifecycle;
use crate::admission::request::{Admission, Operation};

/// kube's `matchconditions.Matcher`: a condition that is false means no match, whatever the
/// others did; otherwise the conditions that failed to evaluate are the answer (`Err`), and
/// the caller's failure policy decides.
pub fn conditions_hold(conditions: &[MatchCondition], activation: &Activation) -> Result<bool, String> {
    let mut errors = Vec::new();
    for condition in conditions {
        match activation.holds(&condition.expression) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

impl Criteria {
    /// Whether the write is matched. A namespace the selector needs that does not exist is
    /// kube's 404.
    pub async fn matches(
        &self,
        admission: &Admission<'_>,
        name: &str,
        old: Option<&Map<String, Value>>,
        new: Option<&Map<String, Value>>,
    ) -> Result<bool, ApiError> {
        let subresource = admission.subresource.unwrap_or_default();
        if !self.rules.iter().any(|rule| rule_matches(rule, admission, name, subresource))
            || self.exclude.iter().any(|rule| rule_matches(rule, admission, name, subresource))
        {
            return Ok(false);
        }
        if let Some(selector) = &self.object_selector
            && !(labels_match(selector, new) || labels_match(selector, old))
        {
            return Ok(false);
        }
        let Some(selector) = &self.namespace_selector else { return Ok(true) };
        let is_namespace = admission.resource.group.is_empty() && admission.resource.plural == "namespaces";
        let namespace = admission.namespace.unwrap_or_default();
        if namespace.is_empty() && !is_namespace {
            // Cluster-scoped objects other than namespaces are never exempted by namespace.
            return Ok(true);
        }
        if is_namespace
            && subresource.is_empty()
            && matches!(admission.operation, Operation::Create | Operation::Update)
        {
            return Ok(labels_match(selector, new));
        }
        // A namespace's own delete, or an object in a namespace: the namespace's labels.
        let name = if is_namespace { name } else { namespace };
        match lifecycle::namespace_object(admission.state, name).await? {
            Some(ns) => Ok(selector.matches(ns.labels())),
            None => Err(ApiError::not_found(&admission.state.namespaces().resource.group_resource(), name)),
        }
    }
}

/// kube's `Matcher.Matches` of one rule.
fn rule_matches(rule: &Rule, admission: &Admission<'_>, name: &str, subresource: &str) -> bool {
    let any = |values: &[String], value: &str| values.iter().any(|v| v == "*" || v == value);
    let resource = admission.resource;
    any(&rule.operations, admission.operation.as_str())
        && any(&rule.api_groups, resource.group)
        && any(&rule.api_versions, resource.version)
        && rule.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == resource.plural) && (sub == "*" || sub == subresource)
        })
        && (rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name))
        && scope_matches(rule.scope.as_deref(), admission, subresource)
}

/// A rule's scope: `*` (or none) matches all; a namespace's own requests are cluster-scoped.
fn scope_matches(scope: Option<&str>, admission: &Admission<'_>, subresource: &str) -> bool {
    let resource = admission.resource;
    let namespaced = admission.namespace.is_some_and(|ns| !ns.is_empty())
        && !(resource.group.is_empty() && resource.plural == "namespaces" && subresource.is_empty());
    match scope {
        None | Some("*") => true,
        Some("Namespaced") => namespaced,
        Some("Cluster") => !namespaced,
        Some(_) => false,
    }
}

fn labels_match(selector: &LabelSelector, object: Option<&Map<String, Value>>) -> bool {
    let Some(object) = object else { return false };
    selector.matches(object.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object))
}
