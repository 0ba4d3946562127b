//! The strategies, as kube's `rolling.go`, `recreate.go` and `sync.go` run them: each sync
//! takes one step (scale the new ReplicaSet up, or the old ones down, as far as the strategy
//! allows) and reports status; the ReplicaSets' status changes bring the next sync.

use std::time::Duration;

use listwatch_client::{DynamicObject, Object as _};
use serde_json::Value;

use super::replicasets::Sync;
use super::status;
use crate::common;

fn replicas_of(rs: &DynamicObject) -> i64 {
    common::int(&rs.0, "/spec/replicas", 1)
}

fn available_of(rs: &DynamicObject) -> i64 {
    common::int(&rs.0, "/status/availableReplicas", 0)
}

fn created_of(rs: &DynamicObject) -> String {
    rs.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("").to_string()
}

/// The old ReplicaSets oldest first, as (name, replicas, available).
fn olds_oldest_first(sync: &Sync<'_>) -> Vec<(String, i64, i64)> {
    let mut olds = sync.old_rses();
    olds.sort_by_key(|rs| (created_of(rs), rs.name().to_string()));
    olds.into_iter().map(|rs| (rs.name().to_string(), replicas_of(rs), available_of(rs))).collect()
}

/// What the new ReplicaSet may be scaled to now (kube's `NewRSNewReplicas` for RollingUpdate).
fn new_rs_new_replicas(sync: &Sync<'_>) -> i64 {
    let current = sync.new_rs().map_or(0, replicas_of);
    let total: i64 = sync.replicasets.iter().map(replicas_of).sum();
    let max_total = sync.spec.replicas + sync.spec.max_surge();
    if total >= max_total {
        return current;
    }
    current + (max_total - total).min(sync.spec.replicas - current).max(0)
}

/// One step of a RollingUpdate.
pub async fn rolling(sync: &mut Sync<'_>) -> anyhow::Result<Option<Duration>> {
    let initial = new_rs_new_replicas(sync);
    sync.sync_new_rs(true, initial).await?;
    if reconcile_new(sync).await? || reconcile_old(sync).await? {
        return sync.update_status().await;
    }
    if status::is_complete(sync) {
        sync.cleanup().await?;
    }
    sync.update_status().await
}

/// Scales the new ReplicaSet towards `replicas` within the surge; whether it scaled.
async fn reconcile_new(sync: &mut Sync<'_>) -> anyhow::Result<bool> {
    let Some(new) = sync.new_rs() else { return Ok(false) };
    let (name, current) = (new.name().to_string(), replicas_of(new));
    if current == sync.spec.replicas {
        return Ok(false);
    }
    let target = if current > sync.spec.replicas { sync.spec.replicas } else { new_rs_new_replicas(sync) };
    sync.scale(&name, target).await
}

/// Scales old ReplicaSets down as far as `maxUnavailable` allows, unhealthy ones first;
/// whether any scaled.
async fn reconcile_old(sync: &mut Sync<'_>) -> anyhow::Result<bool> {
    let olds = olds_oldest_first(sync);
    if olds.iter().map(|(_, replicas, _)| replicas).sum::<i64>() == 0 {
        return Ok(false);
    }
    let all: i64 = sync.replicasets.iter().map(replicas_of).sum();
    let min_available = sync.spec.replicas - sync.spec.max_unavailable();
    let new_unavailable = sync.new_rs().map_or(0, |rs| (replicas_of(rs) - available_of(rs)).max(0));
    let max_scaled_down = all - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Ok(false);
    }
    // Unhealthy old pods first: they do not count towards availability anyway.
    let mut cleaned = 0;
    for (name, replicas, available) in &olds {
        if cleaned >= max_scaled_down {
            break;
        }
        let unhealthy = replicas - available;
        if *replicas == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (max_scaled_down - cleaned).min(unhealthy);
        sync.scale(name, replicas - down).await?;
        cleaned += down;
    }
    // Then healthy ones, as far as availability allows.
    let available: i64 = sync.replicasets.iter().map(available_of).sum();
    let mut budget = available - min_available;
    let mut scaled = 0;
    for (name, _, _) in olds_oldest_first(sync) {
        if budget <= 0 {
            break;
        }
        let replicas = sync.replicasets.iter().find(|rs| rs.name() == name).map_or(0, replicas_of);
        if replicas == 0 {
            continue;
        }
        let down = replicas.min(budget);
        sync.scale(&name, replicas - down).await?;
        budget -= down;
        scaled += down;
    }
    Ok(cleaned + scaled > 0)
}

/// One step of a Recreate: every old pod goes, then the new ReplicaSet is scaled up.
pub async fn recreate(sync: &mut Sync<'_>) -> anyhow::Result<Option<Duration>> {
    sync.sync_new_rs(false, 0).await?;
    let mut scaled_down = false;
    for (name, replicas, _) in olds_oldest_first(sync) {
        if replicas > 0 {
            scaled_down |= sync.scale(&name, 0).await?;
        }
    }
    let old_pods_left = sync.old_rses().iter().any(|rs| common::int(&rs.0, "/status/replicas", 0) > 0);
    if scaled_down || old_pods_left {
        return sync.update_status().await;
    }
    sync.sync_new_rs(true, sync.spec.replicas).await?;
    if let Some(name) = sync.new_rs().map(|rs| rs.name().to_string()) {
        sync.scale(&name, sync.spec.replicas).await?;
    }
    if status::is_complete(sync) {
        sync.cleanup().await?;
    }
    sync.update_status().await
}

/// A paused Deployment: no rollout, but scaling, history cleanup and status go on (kube's
/// `sync`). Scaling moves the one active ReplicaSet (or the newest); with several active, kube
/// scales them proportionally, which this does not do (they keep their sizes).
pub async fn paused(sync: &mut Sync<'_>) -> anyhow::Result<Option<Duration>> {
    sync.sync_new_rs(false, 0).await?;
    let active: Vec<String> =
        sync.replicasets.iter().filter(|rs| replicas_of(rs) > 0).map(|rs| rs.name().to_string()).collect();
    let target = match active.as_slice() {
        [one] => Some(one.clone()),
        [] => sync
            .new_rs()
            .or_else(|| sync.replicasets.iter().max_by_key(|rs| super::spec::revision(rs)))
            .map(|rs| rs.name().to_string()),
        _ => None,
    };
    if let Some(name) = target {
        sync.scale(&name, sync.spec.replicas).await?;
    }
    sync.cleanup().await?;
    sync.update_status().await
}
