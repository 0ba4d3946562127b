//! kube-controller-manager's ClusterRole aggregation controller: a ClusterRole with an
//! `aggregationRule` holds the rules of every other ClusterRole its selectors pick, in name
//! order, each once. So a CRD's author extends `admin`, `edit` and `view` with a ClusterRole
//! labelled `rbac.authorization.k8s.io/aggregate-to-edit: "true"`, and `kubectl get
//! clusterrole edit -o yaml` shows it, as on a real cluster. (The authorizer does not wait for
//! this: it resolves aggregation itself, `authz::rbac`.)

use std::sync::{Arc, Weak};

use listwatch_meta::selector::LabelSelector;
use listwatch_meta::{ApiError, Object, WatchEvent};
use serde_json::Value;

use super::follow::{Follower, follow};
use crate::registry::update::Step;
use crate::registry::{ResourceStore, editable};
use crate::state::ApiState;

/// Reconciles every aggregated ClusterRole, then follows ClusterRoles' changes.
pub async fn start(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let store = state.store_of(crate::authz::rbac::resource("clusterroles")).clone();
    let from = state.storage.current_revision().await.map_err(crate::registry::storage_error)?;
    let mut aggregator = Aggregator { state: Arc::downgrade(state), store: store.clone() };
    aggregator.reconcile().await;
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move { follow(&store, from, shutdown, &mut aggregator).await });
    Ok(())
}

struct Aggregator {
    state: Weak<ApiState>,
    store: Arc<ResourceStore>,
}

impl Follower for Aggregator {
    fn wanted(&self) -> bool {
        self.state.strong_count() > 0
    }

    async fn change(&mut self, _event: &WatchEvent) {
        self.reconcile().await;
    }

    async fn expired(&mut self) -> Option<i64> {
        let now = self.state.upgrade()?.storage.current_revision().await.ok()?;
        self.reconcile().await;
        Some(now)
    }
}

impl Aggregator {
    /// Gives each aggregated ClusterRole the rules its selectors pick, where they differ.
    async fn reconcile(&self) {
        let Ok(mut roles) = self.store.list_all_now().await else { return };
        roles.sort_by(|a, b| a.name().cmp(b.name()));
        for role in &roles {
            let Some(rule) = role.value().get("aggregationRule").filter(|r| !r.is_null()).cloned() else { continue };
            let rules = aggregated_rules(role, &rule, &roles);
            if role.value().get("rules").and_then(Value::as_array) == Some(&rules) {
                continue;
            }
            let written = self
                .store
                .guaranteed_update(None, role.name(), None, false, |existing| {
                    let mut updated = editable(existing);
                    updated.insert("rules".into(), Value::Array(rules.clone()));
                    Ok(Step::Write(updated))
                })
                .await;
            if let Err(e) = written {
                tracing::debug!(role = role.name(), error = %e, "could not aggregate a ClusterRole");
            }
        }
    }
}

/// The rules of every ClusterRole (but `role`) a selector of `rule` picks, by name, each once.
fn aggregated_rules(role: &Object, rule: &Value, roles: &[Arc<Object>]) -> Vec<Value> {
    let selectors: Vec<LabelSelector> = rule
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(LabelSelector::from_api)
        .collect();
    let mut rules: Vec<Value> = Vec::new();
    for other in roles {
        if other.name() == role.name() || !selectors.iter().any(|s| s.matches(other.labels())) {
            continue;
        }
        for r in other.value().get("rules").and_then(Value::as_array).into_iter().flatten() {
            if !rules.contains(r) {
                rules.push(r.clone());
            }
        }
    }
    rules
}
