//! ValidatingAdmissionPolicies and their bindings as the policy plugin reads them: each policy
//! parsed once with the bindings that name it (in name order, as kube's plugin sorts them), and
//! only those policies that have a binding (a policy without one is never evaluated).

use std::sync::Arc;

use listwatch_meta::Object;
use serde::Deserialize;
use serde_json::Value;

use crate::admission::criteria::{Criteria, MatchCondition, Rule};

/// The group's resource names.
pub(crate) const POLICIES: &str = "validatingadmissionpolicies";
pub(crate) const BINDINGS: &str = "validatingadmissionpolicybindings";

/// `MatchResources`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MatchResources {
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    #[serde(default)]
    resource_rules: Vec<Rule>,
    #[serde(default)]
    exclude_resource_rules: Vec<Rule>,
}

impl MatchResources {
    fn criteria(self) -> Criteria {
        Criteria::new(
            self.resource_rules,
            self.exclude_resource_rules,
            self.namespace_selector.as_ref(),
            self.object_selector.as_ref(),
        )
    }
}

/// `ParamKind`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ParamKind {
    pub api_version: String,
    pub kind: String,
}

/// One `Validation`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Validation {
    pub expression: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<String>,
}

/// One `Variable`.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct Variable {
    pub name: String,
    pub expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec {
    param_kind: Option<ParamKind>,
    match_constraints: Option<MatchResources>,
    #[serde(default)]
    validations: Vec<Validation>,
    failure_policy: Option<String>,
    #[serde(default)]
    match_conditions: Vec<MatchCondition>,
    #[serde(default)]
    variables: Vec<Variable>,
}

/// `ParamRef`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ParamRef {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub selector: Option<Value>,
    pub parameter_not_found_action: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingSpec {
    #[serde(default)]
    policy_name: String,
    param_ref: Option<ParamRef>,
    match_resources: Option<MatchResources>,
    #[serde(default)]
    validation_actions: Vec<String>,
}

/// A policy ready to be matched and evaluated.
#[derive(Debug)]
pub(super) struct Policy {
    pub name: String,
    pub param_kind: Option<ParamKind>,
    pub criteria: Criteria,
    pub validations: Vec<Validation>,
    /// `failurePolicy: Ignore`: errors admit instead of deny.
    pub ignores_failures: bool,
    pub match_conditions: Vec<MatchCondition>,
    pub variables: Vec<Variable>,
    pub bindings: Vec<Binding>,
}

/// A binding of a policy.
#[derive(Debug)]
pub(super) struct Binding {
    pub name: String,
    pub param_ref: Option<ParamRef>,
    /// `None` when the binding narrows nothing.
    pub criteria: Option<Criteria>,
    pub actions: Vec<String>,
}

/// The bound policies, in policy name order.
#[derive(Debug, Default)]
pub struct Policies {
    pub(super) policies: Vec<Policy>,
}

impl Policies {
    /// From the stored policies and bindings.
    pub fn from_objects(policies: &[Arc<Object>], bindings: &[Arc<Object>]) -> Policies {
        let spec = |o: &Object| o.value().get("spec").cloned().unwrap_or(Value::Null);
        let mut bindings: Vec<(String, BindingSpec)> = bindings
            .iter()
            .filter_map(|b| Some((b.name().to_owned(), serde_json::from_value(spec(b)).ok()?)))
            .collect();
        bindings.sort_by(|a, b| a.0.cmp(&b.0));
        let mut parsed: Vec<Policy> = policies
            .iter()
            .filter_map(|p| {
                let spec: PolicySpec = serde_json::from_value(spec(p)).ok()?;
                let bound: Vec<Binding> = bindings
                    .iter()
                    .filter(|(_, b)| b.policy_name == p.name())
                    .map(|(name, b)| Binding {
                        name: name.clone(),
                        param_ref: b.param_ref.clone(),
                        criteria: b.match_resources.clone().map(MatchResources::criteria),
                        actions: b.validation_actions.clone(),
                    })
                    .collect();
                if bound.is_empty() {
                    return None;
                }
                Some(Policy {
                    name: p.name().to_owned(),
                    param_kind: spec.param_kind,
                    criteria: spec.match_constraints.unwrap_or_default().criteria(),
                    validations: spec.validations,
                    ignores_failures: spec.failure_policy.as_deref() == Some("Ignore"),
                    match_conditions: spec.match_conditions,
                    variables: spec.variables,
                    bindings: bound,
                })
            })
            .collect();
        parsed.sort_by(|a, b| a.name.cmp(&b.name));
        Policies { policies: parsed }
    }
}
