//! The fault schedule: when each scenario step fires (seeded jitter for repeated steps), and
//! how each fault is caused. Almost every fault is one debug-API call on a server, the same
//! call a user's own test can make; a server restart goes through the harness.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use listwatch_client::Client;
use listwatch_testkit::etcd::EtcdCluster;
use listwatch_testkit::server::Server;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio::sync::Mutex;

use super::scenario::{Fault, FaultStep, StreamFault, When};

/// One firing of a fault step.
#[derive(Debug, Clone)]
pub struct Firing {
    /// When, from the start of the run.
    pub at: Duration,
    /// The fault.
    pub fault: Fault,
}

/// Every firing of `steps` within `duration`, in time order.
pub fn schedule(steps: &[FaultStep], duration: Duration, seed: u64) -> Vec<Firing> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_fa17);
    let mut firings = Vec::new();
    for step in steps {
        match step.when {
            When::At(at) if at <= duration => firings.push(Firing { at, fault: step.fault.clone() }),
            When::At(_) => {}
            When::Every { period, from, until, jitter } => {
                let end = until.unwrap_or(duration).min(duration);
                let mut t = from;
                while t <= end {
                    let shift = if jitter.is_zero() { Duration::ZERO } else { jitter.mul_f64(rng.random()) };
                    firings.push(Firing { at: (t + shift).min(end), fault: step.fault.clone() });
                    t += period;
                }
            }
        }
    }
    firings.sort_by_key(|f| f.at);
    firings
}

/// What a fault left behind that the checker must know.
#[derive(Debug, Default)]
pub struct Caused {
    /// The revision storage was compacted to.
    pub compacted: Option<i64>,
    /// The revision before which watches may now get 410 (a cache reset, a restart).
    pub window_reset: Option<i64>,
    /// The resource whose cache was reset (empty: every resource, as after a restart).
    pub reset_resource: String,
    /// A window reset that happens this long after the fault (once storage is back), at
    /// storage's revision then.
    pub window_reset_after: Option<Duration>,
    /// What happened, for the report.
    pub note: String,
}

/// Causes `fault` on `servers` (the first one unless the fault names another).
/// `history_revision` is how far storage's history has been read: a compaction goes no
/// further, or the history could not be read on after a break (its start would be gone).
pub async fn cause(
    fault: &Fault,
    servers: &Arc<Mutex<Vec<Server>>>,
    etcd: &Arc<Mutex<Option<EtcdCluster>>>,
    clients: &[Client],
    pauses: &std::collections::HashMap<String, tokio::sync::watch::Sender<Option<std::time::Instant>>>,
    history_revision: i64,
) -> anyhow::Result<Caused> {
    let debug = |path: String| {
        let client = clients[0].clone();
        async move {
            let (_, body) = client.request(Method::POST, &path, "application/json", None).await?;
            Ok::<Value, anyhow::Error>(serde_json::from_slice(&body).unwrap_or(Value::Null))
        }
    };
    let current = || async { current_revision(&clients[0]).await };
    Ok(match fault {
        Fault::Compact {} => {
            let answer = debug(format!("/debug/listwatch/compact?revision={}", history_revision.max(1))).await?;
            let revision = answer["compacted"].as_i64();
            Caused {
                compacted: revision,
                note: format!("compacted to {}", revision.unwrap_or(-1)),
                ..Default::default()
            }
        }
        Fault::DropWatches { resource } => {
            let query = resource.as_ref().map(|r| format!("?resource={r}")).unwrap_or_default();
            debug(format!("/debug/listwatch/watchers/drop{query}")).await?;
            Caused { note: "dropped every watch".into(), ..Default::default() }
        }
        Fault::ResetCache { resource } => {
            let before = current().await.ok();
            let resource = resource.as_deref().unwrap_or("configmaps");
            debug(format!("/debug/listwatch/cache/reset?resource={resource}")).await?;
            let after = current().await.ok();
            Caused {
                window_reset: after.or(before),
                reset_resource: resource.to_string(),
                note: format!("reset the {resource} cache"),
                ..Default::default()
            }
        }
        Fault::Throttle { count, retry_after } => {
            let retry = retry_after.unwrap_or(1);
            debug(format!("/debug/listwatch/throttle?count={count}&retryAfterSeconds={retry}")).await?;
            Caused { note: format!("throttled {count} requests"), ..Default::default() }
        }
        Fault::StorageOutage { duration } => {
            let secs = duration.0.as_secs_f64();
            debug(format!("/debug/listwatch/storage/outage?for={secs}s")).await?;
            // The watch caches lost their storage watches and relist once storage is back:
            // their windows restart at storage's revision then.
            Caused {
                note: format!("storage out for {secs}s"),
                window_reset_after: Some(duration.0),
                ..Default::default()
            }
        }
        Fault::Streams(stream) => {
            let query = match stream {
                StreamFault::Cut {} => "fault=cut".to_string(),
                StreamFault::Latency { ms, jitter, duration } => {
                    format!("fault=latency&ms={ms}&jitter={jitter}&for={}ms", duration.0.as_millis())
                }
                StreamFault::Blackhole { duration } => format!("fault=blackhole&for={}ms", duration.0.as_millis()),
                StreamFault::Goaway {} => "fault=goaway".to_string(),
            };
            debug(format!("/debug/listwatch/streams?{query}")).await?;
            Caused { note: format!("streams: {query}"), ..Default::default() }
        }
        Fault::RestartServer { server, kill } => {
            let mut servers = servers.lock().await;
            let target = servers.get_mut(*server).ok_or_else(|| anyhow::anyhow!("no server {server}"))?;
            if *kill {
                target.kill();
            }
            target.restart().await;
            // The restarted server's caches start from a list at storage's revision now.
            drop(servers);
            let after = current().await.ok();
            Caused {
                window_reset: after,
                note: format!("{} server {server}", if *kill { "killed and restarted" } else { "restarted" }),
                ..Default::default()
            }
        }
        Fault::BookmarkInterval { interval } => {
            let ms = interval.0.as_millis();
            debug(format!("/debug/listwatch/bookmarks?interval={ms}ms")).await?;
            let note = if ms == 0 {
                "bookmarks at the configured interval again".to_string()
            } else {
                format!("bookmarks every {ms} ms")
            };
            Caused { note, ..Default::default() }
        }
        Fault::PauseClient { client, duration } => {
            let pause = pauses.get(client).ok_or_else(|| anyhow::anyhow!("no client {client}"))?;
            pause.send_replace(Some(std::time::Instant::now() + duration.0));
            Caused { note: format!("{client} stopped reading for {} ms", duration.0.as_millis()), ..Default::default() }
        }
        Fault::EtcdKill { member, restart_after } => {
            let mut guard = etcd.lock().await;
            let cluster = guard.as_mut().ok_or_else(|| anyhow::anyhow!("no etcd cluster"))?;
            let killed = match member {
                Some(m) => {
                    cluster.kill(*m).await;
                    *m
                }
                None => cluster.kill_leader().await,
            };
            drop(guard);
            let (etcd, after) = (etcd.clone(), restart_after.0);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                if let Some(cluster) = etcd.lock().await.as_mut() {
                    cluster.restart(killed).await;
                }
            });
            Caused {
                note: format!("killed etcd member {killed} (back after {} ms)", after.as_millis()),
                ..Default::default()
            }
        }
        Fault::EtcdLeaderChange {} => {
            let guard = etcd.lock().await;
            let cluster = guard.as_ref().ok_or_else(|| anyhow::anyhow!("no etcd cluster"))?;
            let leader = cluster.leader().await.ok_or_else(|| anyhow::anyhow!("the etcd cluster has no leader"))?;
            let to = (leader + 1) % cluster.members().len();
            cluster.move_leader(to).await;
            Caused { note: format!("moved etcd leadership from member {leader} to {to}"), ..Default::default() }
        }
        Fault::BreakWatch { kind } => {
            debug(format!("/debug/listwatch/break?kind={kind}")).await?;
            Caused { note: format!("server breaks watches: {kind}"), ..Default::default() }
        }
    })
}

/// Storage's revision now (a consistent LIST's resourceVersion).
pub async fn current_revision(client: &Client) -> anyhow::Result<i64> {
    let (_, body) = client.request(Method::GET, "/api/v1/namespaces?limit=1", "application/json", None).await?;
    let list: Value = serde_json::from_slice(&body)?;
    list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("a list without a resourceVersion"))
}
