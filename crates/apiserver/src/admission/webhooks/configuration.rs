//! The webhook configurations as the webhooks read them: each configuration's webhooks parsed
//! once (selectors included), in kube's calling order (cached by
//! [`crate::admission::configurations`]).

use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::Object;
use serde::Deserialize;
use serde_json::Value;

use crate::admission::criteria::{Criteria, MatchCondition, Rule};
use crate::webhook_client::ClientConfig;

/// The group of webhook configurations.
pub const GROUP: &str = "admissionregistration.k8s.io";
pub(super) const MUTATING: &str = "mutatingwebhookconfigurations";
pub(super) const VALIDATING: &str = "validatingwebhookconfigurations";

/// One webhook of a configuration, as written (after defaulting).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WebhookSpec {
    pub(super) name: String,
    #[serde(default)]
    pub(super) client_config: ClientConfig,
    #[serde(default)]
    pub(super) rules: Vec<Rule>,
    #[serde(default)]
    pub(super) failure_policy: Option<String>,
    #[serde(default)]
    pub(super) namespace_selector: Option<Value>,
    #[serde(default)]
    pub(super) object_selector: Option<Value>,
    #[serde(default)]
    pub(super) side_effects: Option<String>,
    #[serde(default)]
    pub(super) timeout_seconds: Option<u64>,
    #[serde(default)]
    pub(super) reinvocation_policy: Option<String>,
    #[serde(default)]
    pub(super) match_conditions: Vec<MatchCondition>,
}

/// A webhook ready to be matched and called.
#[derive(Debug)]
pub(super) struct Webhook {
    pub(super) spec: WebhookSpec,
    /// Its rules and selectors.
    pub(super) criteria: Criteria,
}

impl Webhook {
    pub(super) fn parse(value: &Value) -> Option<Webhook> {
        let spec: WebhookSpec = serde_json::from_value(value.clone()).ok()?;
        let criteria = Criteria::new(
            spec.rules.clone(),
            Vec::new(),
            spec.namespace_selector.as_ref(),
            spec.object_selector.as_ref(),
        );
        Some(Webhook { spec, criteria })
    }

    pub(super) fn ignores_failures(&self) -> bool {
        self.spec.failure_policy.as_deref() == Some("Ignore")
    }

    pub(super) fn timeout(&self) -> Duration {
        Duration::from_secs(self.spec.timeout_seconds.unwrap_or(10).clamp(1, 30))
    }

    /// Whether a dry run may call it (`sideEffects` None or NoneOnDryRun).
    pub(super) fn safe_on_dry_run(&self) -> bool {
        matches!(self.spec.side_effects.as_deref(), Some("None" | "NoneOnDryRun"))
    }

    pub(super) fn reinvoked_if_needed(&self) -> bool {
        self.spec.reinvocation_policy.as_deref() == Some("IfNeeded")
    }
}

/// Every registered webhook, mutating and validating, in the order kube calls them.
#[derive(Debug, Default)]
pub struct Hooks {
    pub(super) mutating: Vec<Arc<Webhook>>,
    pub(super) validating: Vec<Arc<Webhook>>,
}

impl Hooks {
    pub fn from_configurations(mutating: &[Arc<Object>], validating: &[Arc<Object>]) -> Hooks {
        let hooks = |configurations: &[Arc<Object>]| {
            let mut sorted: Vec<&Arc<Object>> = configurations.iter().collect();
            sorted.sort_by(|a, b| a.name().cmp(b.name()));
            sorted
                .into_iter()
                .flat_map(|c| c.value().get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default())
                .filter_map(|w| Webhook::parse(&w).map(Arc::new))
                .collect()
        };
        Hooks { mutating: hooks(mutating), validating: hooks(validating) }
    }
}
