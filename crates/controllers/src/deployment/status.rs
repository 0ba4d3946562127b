//! A Deployment's status, as kube's `calculateStatus` and `syncRolloutStatus` write it: counts
//! summed over its ReplicaSets, the Available condition (at least `replicas - maxUnavailable`
//! available), and the Progressing condition, whose reasons `kubectl rollout status` and
//! `kubectl describe` show (NewReplicaSetCreated, ReplicaSetUpdated, NewReplicaSetAvailable,
//! ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed).

use std::time::Duration;

use listwatch_client::{DynamicObject, Object as _};
use serde_json::{Value, json};

use super::replicasets::Sync;
use crate::common;

/// The counts of a Deployment's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    replicas: i64,
    updated: i64,
    ready: i64,
    available: i64,
    unavailable: i64,
}

fn counts(sync: &Sync<'_>) -> Counts {
    let sum = |pointer: &str| sync.replicasets.iter().map(|rs| common::int(&rs.0, pointer, 0)).sum::<i64>();
    let wanted: i64 = sync.replicasets.iter().map(|rs| common::int(&rs.0, "/spec/replicas", 1)).sum();
    let available = sum("/status/availableReplicas");
    Counts {
        replicas: sum("/status/replicas"),
        updated: sync.new_rs().map_or(0, |rs| common::int(&rs.0, "/status/replicas", 0)),
        ready: sum("/status/readyReplicas"),
        available,
        unavailable: (wanted - available).max(0),
    }
}

fn counts_of(d: &DynamicObject) -> Counts {
    let get = |field: &str| common::int(&d.0, &format!("/status/{field}"), 0);
    Counts {
        replicas: get("replicas"),
        updated: get("updatedReplicas"),
        ready: get("readyReplicas"),
        available: get("availableReplicas"),
        unavailable: get("unavailableReplicas"),
    }
}

/// Whether every replica is updated and available (kube's `DeploymentComplete`).
pub fn is_complete(sync: &Sync<'_>) -> bool {
    let c = counts(sync);
    let r = sync.spec.replicas;
    c.updated == r && c.replicas == r && c.available == r
}

/// Whether the rollout moved since the status was last written (kube's
/// `DeploymentProgressing`).
fn progressed(old: Counts, new: Counts) -> bool {
    new.updated > old.updated
        || (new.replicas - new.updated) < (old.replicas - old.updated)
        || new.ready > old.ready
        || new.available > old.available
}

fn condition(status: &str, type_: &str, reason: &str, message: String, now: &str) -> Value {
    json!({
        "type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    })
}

/// kube's `SetDeploymentCondition`: a condition with the same status and reason is left as it
/// is; otherwise it is replaced (moved to the end), keeping its transition time when only the
/// reason changed.
fn set_condition(conditions: &mut Vec<Value>, mut new: Value) {
    let type_ = new["type"].clone();
    if let Some(current) = conditions.iter().find(|c| c["type"] == type_) {
        if current["status"] == new["status"] && current["reason"] == new["reason"] {
            return;
        }
        if current["status"] == new["status"] {
            new["lastTransitionTime"] = current["lastTransitionTime"].clone();
        }
    }
    conditions.retain(|c| c["type"] != type_);
    conditions.push(new);
}

impl Sync<'_> {
    /// Computes the status and writes it if it changed; asks for a sync again when the
    /// progress deadline would pass before anything else happens.
    pub async fn update_status(&mut self) -> anyhow::Result<Option<Duration>> {
        let now = common::now_rfc3339();
        let new = counts(self);
        let old = counts_of(&self.d);
        let rs_name = self.new_rs().map(|rs| rs.name().to_string()).unwrap_or_default();
        let mut conditions: Vec<Value> =
            self.d.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let (available, reason, message) = if new.available >= self.spec.replicas - self.spec.max_unavailable() {
            ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        } else {
            ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
        };
        set_condition(&mut conditions, condition(available, "Available", reason, message.into(), &now));
        let progressing = conditions.iter().find(|c| c["type"] == "Progressing").cloned();
        let reason_now = progressing.as_ref().and_then(|c| c["reason"].as_str()).unwrap_or("").to_string();
        let mut again = None;
        if self.spec.paused {
            if reason_now != "DeploymentPaused" {
                let paused =
                    condition("Unknown", "Progressing", "DeploymentPaused", "Deployment is paused".into(), &now);
                set_condition(&mut conditions, paused);
            }
        } else if reason_now == "DeploymentPaused" {
            let resumed =
                condition("Unknown", "Progressing", "DeploymentResumed", "Deployment is resumed".into(), &now);
            set_condition(&mut conditions, resumed);
        }
        if !self.spec.paused && self.spec.progress_deadline.is_some() {
            let complete = is_complete(self);
            if complete {
                let message = format!("ReplicaSet \"{rs_name}\" has successfully progressed.");
                set_condition(
                    &mut conditions,
                    condition("True", "Progressing", "NewReplicaSetAvailable", message, &now),
                );
            } else if progressed(old, new) || reason_now == "DeploymentResumed" {
                let mut updated = condition(
                    "True",
                    "Progressing",
                    "ReplicaSetUpdated",
                    format!("ReplicaSet \"{rs_name}\" is progressing."),
                    &now,
                );
                if let Some(current) = progressing.as_ref().filter(|c| c["status"] == "True") {
                    updated["lastTransitionTime"] = current["lastTransitionTime"].clone();
                }
                conditions.retain(|c| c["type"] != "Progressing");
                conditions.push(updated);
            } else if let Some(name) = &self.created {
                let message = format!("Created new replica set \"{name}\"");
                set_condition(&mut conditions, condition("True", "Progressing", "NewReplicaSetCreated", message, &now));
            } else {
                again = self.check_deadline(&mut conditions, &rs_name, &now);
            }
            if !complete && again.is_none() {
                again = self.spec.progress_deadline.map(|d| Duration::from_secs(d.max(0) as u64 + 1));
            }
        }
        let or_null = |n: i64| if n == 0 { Value::Null } else { json!(n) };
        let mut status = json!({
            "observedGeneration": common::generation(&self.d),
            "replicas": or_null(new.replicas),
            "updatedReplicas": or_null(new.updated),
            "readyReplicas": or_null(new.ready),
            "availableReplicas": or_null(new.available),
            "unavailableReplicas": or_null(new.unavailable),
            "conditions": conditions,
        });
        if let Some(count) = self.d.pointer("/status/collisionCount") {
            status["collisionCount"] = count.clone();
        }
        if !same_status(self.d.pointer("/status"), &status) {
            self.write_status(status).await?;
        }
        Ok(again)
    }

    /// Turns Progressing False (ProgressDeadlineExceeded) once it has not been updated for
    /// `progressDeadlineSeconds`; else the time left until then.
    fn check_deadline(&self, conditions: &mut Vec<Value>, rs_name: &str, now: &str) -> Option<Duration> {
        let deadline = self.spec.progress_deadline?;
        let current = conditions.iter().find(|c| c["type"] == "Progressing")?;
        if current["reason"] == "NewReplicaSetAvailable" || current["reason"] == "ProgressDeadlineExceeded" {
            return None;
        }
        let updated = common::parse_rfc3339(current["lastUpdateTime"].as_str()?)?;
        let now_secs = common::parse_rfc3339(now)?;
        let due = updated + deadline.max(0) as u64;
        if now_secs >= due {
            let message = format!("ReplicaSet \"{rs_name}\" has timed out progressing.");
            set_condition(conditions, condition("False", "Progressing", "ProgressDeadlineExceeded", message, now));
            None
        } else {
            Some(Duration::from_secs(due - now_secs + 1))
        }
    }
}

/// Whether the written status equals the computed one (nulls in the computed one are fields
/// left out).
fn same_status(current: Option<&Value>, computed: &Value) -> bool {
    let empty = serde_json::Map::new();
    let current = current.and_then(Value::as_object).unwrap_or(&empty);
    let computed = computed.as_object().unwrap_or(&empty);
    let keys = current.keys().chain(computed.keys());
    keys.into_iter().all(|k| {
        let (a, b) = (current.get(k).unwrap_or(&Value::Null), computed.get(k).unwrap_or(&Value::Null));
        a == b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_with_the_same_reason_is_kept() {
        let mut conditions = vec![condition("True", "Available", "A", "m".into(), "t1")];
        set_condition(&mut conditions, condition("True", "Available", "A", "m".into(), "t2"));
        assert_eq!(conditions[0]["lastUpdateTime"], "t1");
        set_condition(&mut conditions, condition("True", "Available", "B", "m".into(), "t3"));
        assert_eq!(
            (&conditions[0]["lastTransitionTime"], &conditions[0]["lastUpdateTime"]),
            (&json!("t1"), &json!("t3"))
        );
    }

    #[test]
    fn progress_is_more_updated_fewer_old_or_more_available() {
        let c = |replicas, updated, ready, available| Counts { replicas, updated, ready, available, unavailable: 0 };
        assert!(progressed(c(2, 1, 1, 1), c(2, 2, 1, 1)));
        assert!(progressed(c(3, 1, 2, 2), c(2, 1, 2, 2)));
        assert!(!progressed(c(2, 2, 2, 2), c(2, 2, 2, 2)));
    }
}
