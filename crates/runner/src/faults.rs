//! The fault schedule: when each scenario step fires (seeded jitter for repeated steps), and
//! how each fault is caused. Almost every fault is one debug-API call on a server, the same
//! call a user's own test can make; a server restart goes through the harness.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use listwatch_client::Client;
use listwatch_testkit::etcd::EtcdCluster;
use listwatch_testkit::server::Server;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::audit::Records;
use crate::reflectors::Pauses;
use crate::scenario::{ContinueExpiry, Fault, FaultStep, StreamFault, When};

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

impl Caused {
    /// A fault that leaves nothing for the checker, only its note.
    fn note(note: impl Into<String>) -> Caused {
        Caused { note: note.into(), ..Caused::default() }
    }
}

/// What faults act on: the servers (a restart goes through the harness), the etcd cluster, a
/// client of each server (for the debug API), and the in-process clients' pause switches.
pub struct FaultTarget {
    /// The scenario's servers.
    pub servers: Arc<Mutex<Vec<Server>>>,
    /// The etcd cluster, on the etcd backend.
    pub etcd: Arc<Mutex<Option<EtcdCluster>>>,
    /// A client of each server.
    pub clients: Vec<Client>,
    /// The in-process clients' "stop reading until" switches.
    pub pauses: Pauses,
    /// The client records, read from a server before it is restarted.
    pub records: Records,
}

impl FaultTarget {
    /// Causes `fault` (on the first server unless the fault names another). `history_revision`
    /// is how far storage's history has been read: a compaction goes no further, or the history
    /// could not be read on after a break (its start would be gone).
    pub async fn cause(&self, fault: &Fault, history_revision: i64) -> anyhow::Result<Caused> {
        match fault {
            Fault::Compact {} => self.compact(history_revision).await,
            Fault::DropWatches { resource } => {
                let query = resource.as_ref().map(|r| format!("?resource={r}")).unwrap_or_default();
                self.debug(&format!("/debug/listwatch/watchers/drop{query}")).await?;
                Ok(Caused::note("dropped every watch"))
            }
            Fault::ResetCache { resource } => self.reset_cache(resource.as_deref().unwrap_or("configmaps")).await,
            Fault::Throttle { count, retry_after, plain } => {
                let retry = retry_after.unwrap_or(1);
                self.debug(&format!("/debug/listwatch/throttle?count={count}&retryAfterSeconds={retry}&plain={plain}"))
                    .await?;
                Ok(Caused::note(format!("throttled {count} requests{}", if *plain { " (plain text)" } else { "" })))
            }
            Fault::StorageOutage { duration } => {
                let secs = duration.0.as_secs_f64();
                self.debug(&format!("/debug/listwatch/storage/outage?for={secs}s")).await?;
                // The watch caches lost their storage watches and relist once storage is back:
                // their windows restart at storage's revision then.
                Ok(Caused { window_reset_after: Some(duration.0), ..Caused::note(format!("storage out for {secs}s")) })
            }
            Fault::Streams(stream) => {
                let query = stream_query(stream);
                self.debug(&format!("/debug/listwatch/streams?{query}")).await?;
                Ok(Caused::note(format!("streams: {query}")))
            }
            Fault::RestartServer { server, kill } => self.restart_server(*server, *kill).await,
            Fault::BookmarkInterval { interval } => {
                let ms = interval.0.as_millis();
                self.debug(&format!("/debug/listwatch/bookmarks?interval={ms}ms")).await?;
                Ok(Caused::note(match ms {
                    0 => "bookmarks at the configured interval again".to_string(),
                    ms => format!("bookmarks every {ms} ms"),
                }))
            }
            Fault::PauseClient { client, duration, until_closed } => {
                self.pause_client(client, duration.0, *until_closed).await
            }
            Fault::EtcdKill { member, restart_after } => self.kill_etcd_member(*member, restart_after.0).await,
            Fault::EtcdLeaderChange {} => self.move_etcd_leader().await,
            Fault::ExpireContinue(ContinueExpiry::For(duration)) => {
                let ms = duration.0.as_millis();
                self.debug(&format!("/debug/listwatch/continue/expire?for={ms}ms")).await?;
                Ok(Caused::note(format!("continue tokens expire for {ms} ms")))
            }
            Fault::ExpireContinue(ContinueExpiry::Next(count)) => {
                self.debug(&format!("/debug/listwatch/continue/expire?count={count}")).await?;
                Ok(Caused::note(format!("the next {count} continue tokens expire")))
            }
            Fault::TooLargeResourceVersion { duration, behind } => {
                let ms = duration.0.as_millis();
                let answer = self.debug(&format!("/debug/listwatch/toolarge?for={ms}ms&behind={behind}")).await?;
                let ceiling = answer["ceiling"].as_i64().unwrap_or(-1);
                Ok(Caused::note(format!("reads above {ceiling} are too large for {ms} ms")))
            }
            Fault::LaggingCache { server, lag, duration } => {
                let client = self.clients.get(*server).ok_or_else(|| anyhow::anyhow!("no server {server}"))?;
                let (lag, ms) = (lag.0.as_millis(), duration.0.as_millis());
                client
                    .request(
                        Method::POST,
                        &format!("/debug/listwatch/cache/lag?lag={lag}ms&for={ms}ms"),
                        "application/json",
                        None,
                    )
                    .await?;
                Ok(Caused::note(format!("server {server}'s caches {lag} ms behind for {ms} ms")))
            }
            Fault::WebhookOutage { mode, webhook, duration } => {
                let ms = duration.0.as_millis();
                let name = webhook.as_deref().unwrap_or_default();
                self.debug(&format!("/debug/listwatch/webhooks?mode={mode}&for={ms}ms&name={name}")).await?;
                let which = webhook.as_deref().map_or("every webhook".to_string(), |w| format!("webhook {w}"));
                Ok(Caused::note(format!("{which} {mode} for {ms} ms")))
            }
            Fault::BreakWatch { kind } => {
                self.debug(&format!("/debug/listwatch/break?kind={kind}")).await?;
                Ok(Caused::note(format!("server breaks watches: {kind}")))
            }
        }
    }

    /// A debug-API call on the first server; its JSON answer.
    async fn debug(&self, path: &str) -> anyhow::Result<Value> {
        let (_, body) = self.clients[0].request(Method::POST, path, "application/json", None).await?;
        Ok(serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn compact(&self, history_revision: i64) -> anyhow::Result<Caused> {
        let answer = self.debug(&format!("/debug/listwatch/compact?revision={}", history_revision.max(1))).await?;
        let revision = answer["compacted"].as_i64();
        Ok(Caused { compacted: revision, ..Caused::note(format!("compacted to {}", revision.unwrap_or(-1))) })
    }

    async fn reset_cache(&self, resource: &str) -> anyhow::Result<Caused> {
        let before = current_revision(&self.clients[0]).await.ok();
        self.debug(&format!("/debug/listwatch/cache/reset?resource={resource}")).await?;
        let after = current_revision(&self.clients[0]).await.ok();
        Ok(Caused {
            window_reset: after.or(before),
            reset_resource: resource.to_string(),
            ..Caused::note(format!("reset the {resource} cache"))
        })
    }

    async fn restart_server(&self, server: usize, kill: bool) -> anyhow::Result<Caused> {
        // Its client records die with it: read them first.
        let read_ms = match self.clients.get(server) {
            Some(client) => Some(self.records.keep_before_restart(client).await),
            None => None,
        };
        {
            let mut servers = self.servers.lock().await;
            let target = servers.get_mut(server).ok_or_else(|| anyhow::anyhow!("no server {server}"))?;
            if kill {
                target.kill();
            }
            // Gone: at once when killed, once drained when restarted.
            let gone = |records: &crate::audit::Records| read_ms.map(|read| records.lost_since(read));
            if kill {
                gone(&self.records);
            }
            target.restart().await;
            if !kill {
                gone(&self.records);
            }
        }
        // The restarted server's caches start from a list at storage's revision now.
        let after = current_revision(&self.clients[0]).await.ok();
        let what = if kill { "killed and restarted" } else { "restarted" };
        Ok(Caused { window_reset: after, ..Caused::note(format!("{what} server {server}")) })
    }

    /// Stops a client reading for `duration`; with `until_closed`, on until a server has closed
    /// a watch as too slow (at most [`UNTIL_CLOSED_LIMIT`] more), which this waits for.
    async fn pause_client(&self, client: &str, duration: Duration, until_closed: bool) -> anyhow::Result<Caused> {
        let pause = self.pauses.get(client).ok_or_else(|| anyhow::anyhow!("no client {client}"))?;
        let paused_at = Instant::now();
        if !until_closed {
            pause.send_replace(Some(paused_at + duration));
            return Ok(Caused::note(format!("{client} stopped reading for {} ms", duration.as_millis())));
        }
        let closed_before = self.terminated_watchers().await?;
        pause.send_replace(Some(paused_at + duration + UNTIL_CLOSED_LIMIT));
        tokio::time::sleep(duration).await;
        let deadline = Instant::now() + UNTIL_CLOSED_LIMIT;
        let closed = loop {
            if self.terminated_watchers().await? > closed_before {
                break true;
            }
            if Instant::now() >= deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        pause.send_replace(None);
        let paused_ms = paused_at.elapsed().as_millis();
        if !closed {
            anyhow::bail!("{client} stopped reading for {paused_ms} ms and no server closed its watch");
        }
        Ok(Caused::note(format!("{client} stopped reading for {paused_ms} ms, until a server closed its watch")))
    }

    /// Watches the servers closed as too slow, in all (`apiserver_terminated_watchers_total`).
    async fn terminated_watchers(&self) -> anyhow::Result<f64> {
        let mut total = 0.0;
        for client in &self.clients {
            let (_, body) = client.request(Method::GET, "/metrics", "text/plain", None).await?;
            total += String::from_utf8_lossy(&body)
                .lines()
                .filter(|line| line.starts_with("apiserver_terminated_watchers_total"))
                .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>();
        }
        Ok(total)
    }

    async fn kill_etcd_member(&self, member: Option<usize>, restart_after: Duration) -> anyhow::Result<Caused> {
        let killed = {
            let mut guard = self.etcd.lock().await;
            let cluster = guard.as_mut().ok_or_else(|| anyhow::anyhow!("no etcd cluster"))?;
            match member {
                Some(m) => {
                    cluster.kill(m).await;
                    m
                }
                None => cluster.kill_leader().await,
            }
        };
        let etcd = self.etcd.clone();
        tokio::spawn(async move {
            tokio::time::sleep(restart_after).await;
            if let Some(cluster) = etcd.lock().await.as_mut() {
                cluster.restart(killed).await;
            }
        });
        Ok(Caused::note(format!("killed etcd member {killed} (back after {} ms)", restart_after.as_millis())))
    }

    async fn move_etcd_leader(&self) -> anyhow::Result<Caused> {
        let guard = self.etcd.lock().await;
        let cluster = guard.as_ref().ok_or_else(|| anyhow::anyhow!("no etcd cluster"))?;
        let leader = cluster.leader().await.ok_or_else(|| anyhow::anyhow!("the etcd cluster has no leader"))?;
        let to = (leader + 1) % cluster.members().len();
        cluster.move_leader(to).await;
        Ok(Caused::note(format!("moved etcd leadership from member {leader} to {to}")))
    }
}

/// How much longer than its `for` an `untilClosed` pause may last.
const UNTIL_CLOSED_LIMIT: Duration = Duration::from_secs(60);

/// The debug API's query for a stream fault.
fn stream_query(stream: &StreamFault) -> String {
    match stream {
        StreamFault::Cut {} => "fault=cut".to_string(),
        StreamFault::Latency { ms, jitter, duration } => {
            format!("fault=latency&ms={ms}&jitter={jitter}&for={}ms", duration.0.as_millis())
        }
        StreamFault::Blackhole { duration } => format!("fault=blackhole&for={}ms", duration.0.as_millis()),
        StreamFault::Goaway {} => "fault=goaway".to_string(),
        StreamFault::Stall { duration } => {
            format!("fault=stall&for={}ms", duration.map_or(0, |d| d.0.as_millis()))
        }
    }
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
