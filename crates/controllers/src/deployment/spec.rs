//! A Deployment's spec as the controller reads it, with kube's defaults filled in (listwatch's
//! server, unlike kube-apiserver, stores what it was sent without defaulting): 1 replica, the
//! RollingUpdate strategy with 25% surge and 25% unavailable, 10 old ReplicaSets kept, a
//! 600-second progress deadline.

use listwatch_client::{DynamicObject, LabelSelector, Object as _};
use serde_json::Value;

use crate::common;

/// Annotations of the ReplicaSets (and the Deployment) that kube's controller keeps.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The Deployment's replicas when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// The Deployment's replicas plus its surge then.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// How a Deployment replaces its pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Old pods go only as new ones become available.
    RollingUpdate {
        /// Pods above `replicas` allowed during a rollout.
        max_surge: i64,
        /// Pods below `replicas` allowed during a rollout.
        max_unavailable: i64,
    },
    /// Every old pod goes before a new one is made.
    Recreate,
}

/// What the controller needs of one Deployment.
pub struct Spec {
    /// The wanted pod count.
    pub replicas: i64,
    /// Its pod selector.
    pub selector: LabelSelector,
    /// The pod template.
    pub template: Value,
    /// How it rolls out.
    pub strategy: Strategy,
    /// Old ReplicaSets kept for rollbacks.
    pub revision_history_limit: i64,
    /// Seconds without progress before Progressing turns False.
    pub progress_deadline: Option<i64>,
    /// Seconds a ready pod must stay ready to count as available.
    pub min_ready_seconds: i64,
    /// Whether the rollout is paused.
    pub paused: bool,
}

impl Spec {
    /// Reads `deployment`'s spec; `None` if its selector is missing or malformed.
    pub fn of(deployment: &DynamicObject) -> Option<Spec> {
        let spec = deployment.pointer("/spec")?;
        let replicas = common::int(spec, "/replicas", 1);
        let strategy = match spec.pointer("/strategy/type").and_then(Value::as_str) {
            Some("Recreate") => Strategy::Recreate,
            _ => {
                let surge = spec.pointer("/strategy/rollingUpdate/maxSurge");
                let unavailable = spec.pointer("/strategy/rollingUpdate/maxUnavailable");
                let max_surge = int_or_percent(surge, replicas, true);
                let mut max_unavailable = int_or_percent(unavailable, replicas, false);
                // Both zero would never make progress: kube allows one unavailable then.
                if max_surge == 0 && max_unavailable == 0 {
                    max_unavailable = 1;
                }
                Strategy::RollingUpdate { max_surge, max_unavailable: max_unavailable.min(replicas) }
            }
        };
        let progress_deadline = match spec.get("progressDeadlineSeconds") {
            Some(Value::Number(n)) => n.as_i64().filter(|&d| d != i64::from(i32::MAX)),
            _ => Some(600),
        };
        Some(Spec {
            replicas,
            selector: common::selector(spec.get("selector"))?,
            template: spec.get("template").cloned().unwrap_or_default(),
            strategy,
            revision_history_limit: common::int(spec, "/revisionHistoryLimit", 10),
            progress_deadline,
            min_ready_seconds: common::int(spec, "/minReadySeconds", 0),
            paused: spec.get("paused").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// The surge allowed (0 for Recreate).
    pub fn max_surge(&self) -> i64 {
        match self.strategy {
            Strategy::RollingUpdate { max_surge, .. } => max_surge,
            Strategy::Recreate => 0,
        }
    }

    /// Pods that may be unavailable while Available stays True (0 for Recreate).
    pub fn max_unavailable(&self) -> i64 {
        match self.strategy {
            Strategy::RollingUpdate { max_unavailable, .. } => max_unavailable,
            Strategy::Recreate => 0,
        }
    }
}

/// An `IntOrString` of a rolling update: a count, or a percentage of `replicas` rounded up
/// (surge) or down (unavailable); 25% when absent. A malformed value counts as 0 (kube-apiserver
/// refuses it at validation).
fn int_or_percent(value: Option<&Value>, replicas: i64, round_up: bool) -> i64 {
    let percent = match value {
        Some(Value::Number(n)) => return n.as_i64().unwrap_or(0).max(0),
        Some(Value::String(s)) => s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()).unwrap_or(0),
        _ => 25,
    };
    let scaled = percent * replicas;
    if round_up { (scaled + 99) / 100 } else { scaled / 100 }
}

/// The revision annotation of a ReplicaSet (0 if absent or malformed).
pub fn revision(rs: &DynamicObject) -> i64 {
    rs.annotation(REVISION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn percentages_round_as_kube_rounds_them() {
        assert_eq!(int_or_percent(None, 10, true), 3);
        assert_eq!(int_or_percent(None, 10, false), 2);
        assert_eq!(int_or_percent(Some(&json!("50%")), 3, true), 2);
        assert_eq!(int_or_percent(Some(&json!(2)), 3, false), 2);
    }

    #[test]
    fn defaults_fill_what_was_not_sent() {
        let d = DynamicObject::new(json!({"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}}, "template": {}}}));
        let spec = Spec::of(&d).unwrap();
        assert_eq!(spec.replicas, 1);
        assert_eq!(spec.strategy, Strategy::RollingUpdate { max_surge: 1, max_unavailable: 0 });
        assert_eq!((spec.revision_history_limit, spec.progress_deadline), (10, Some(600)));
    }
}
