//! One run of a scenario, step by step: start the servers ([`Cluster`]), the history follower,
//! the in-process clients, the writers and the user's commands; cause the faults on time
//! ([`FaultDriver`]); stop writing and give every client the converge deadline to catch up;
//! stop everything and hand the records to the checker. The runner judges nothing itself:
//! the watch guarantees and the run's own checks are the checker's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use listwatch_apiserver::client_audit::now_ms;
use listwatch_client::Client;
use listwatch_simulator::checker::{self, RunLimits};
use listwatch_simulator::record::{CacheReset, Compaction, Known};
use listwatch_testkit::etcd::{EtcdCluster, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::audit::{self, Identities, Records};
use crate::faults::{self, FaultTarget};
use crate::history::{self, History};
use crate::reflectors::Reflectors;
use crate::report::{Outcome, millis, recoveries};
use crate::scenario::{BackendKind, Readiness, Scenario};
use crate::{commands, ends, workload};

/// How long a command that must be `ready` before the faults has to open its watch.
const READY_DEADLINE: Duration = Duration::from_secs(60);

/// Runs the scenario once with `seed`; `record` keeps each Put's object in the history (for
/// a record that can be replayed).
pub async fn run_once(scenario: &Scenario, seed: u64, record: bool) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let epoch_ms = now_ms();
    let dir = tempfile::Builder::new().prefix("listwatch-simulate-").tempdir().context("a directory for the run")?;
    let names = Reflectors::ids(&scenario.clients).into_iter().chain(scenario.commands.iter().map(|c| c.name.clone()));
    let identities = Identities::new(dir.path(), names)?;
    let cluster = Cluster::start(scenario, &identities).await?;
    workload::prepare(&cluster.clients[0], &scenario.workload).await?;
    let (stop_readers, readers_stop) = watch::channel(false);
    let history = Arc::new(Mutex::new(History::default()));
    let follower =
        tokio::spawn(history::follow(cluster.clients.clone(), history.clone(), started, record, readers_stop.clone()));
    let kubeconfigs = cluster.kubeconfigs().await;
    let servers_as = |id: &str| kubeconfigs.iter().map(|k| identities.client(k, id)).collect();
    let reflectors = Reflectors::start(&scenario.clients, servers_as, started, &readers_stop)?;
    let writers = Writers::start(scenario, &cluster.clients[0], seed);
    let command_kubeconfigs = scenario
        .commands
        .iter()
        .map(|c| identities.kubeconfig(&kubeconfigs[0], &c.name, dir.path()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let programs = commands::start(&scenario.commands, &command_kubeconfigs);

    let records = Records::default();
    let target = FaultTarget {
        servers: cluster.servers.clone(),
        etcd: cluster.etcd.clone(),
        clients: cluster.clients.clone(),
        pauses: reflectors.pauses.clone(),
        records: records.clone(),
    };
    // The fault clock starts when every command that asks for it is ready (watching): a
    // program slow to start must still meet the faults planned for it.
    let mut failed_checks = Vec::new();
    let gated: Vec<String> = scenario
        .commands
        .iter()
        .filter(|c| c.ready == Some(Readiness::Watching))
        .map(|c| Identities::user(&c.name))
        .collect();
    if !gated.is_empty() {
        for user in Records::wait_watching(&cluster.clients, &gated, READY_DEADLINE).await {
            failed_checks.push(format!(
                "command {user}: no watch opened within {} s (ready: watching)",
                READY_DEADLINE.as_secs()
            ));
        }
    }
    let faults = FaultDriver::new(started, started.elapsed()).run(scenario, seed, &target, &history).await;

    // Quiet: the writers stop; every client must catch up with storage.
    let writes = writers.stop(&mut failed_checks).await?;
    let converge = scenario.checks.converge.map_or(Duration::from_secs(10), |d| d.0);
    wait_until_caught_up(&cluster.clients[0], &history, &reflectors, converge).await;
    let work = ends::work(&cluster.clients[0], &scenario.commands, converge).await;
    let caches = ends::caches(&programs, &records, &cluster.clients, converge).await;
    let mut stopped = BTreeMap::new();
    for program in commands::finish(programs).await {
        if !program.passed {
            failed_checks.push(format!("command {}: {}", program.name, program.outcome));
        }
        if let Some(at) = program.exited_ms {
            stopped.insert(Identities::user(&program.name), at);
        }
    }

    // Stop reading, then judge what was read.
    stop_readers.send_replace(true);
    let _ = follower.await;
    let clients = reflectors.finish().await;
    let requests = records.all(&cluster.clients).await;
    let (history, arrived_ms) = {
        let mut history = history.lock().expect("history");
        (std::mem::take(&mut history.events), std::mem::take(&mut history.arrived_ms))
    };
    let audit = audit::judge(&requests, &history, epoch_ms, stopped, records.blind(), &scenario.audit);
    let known = faults.known();
    let verdict = checker::check(&history, &clients, &known);
    let limits = RunLimits { max_relists_per_client: scenario.checks.max_relists_per_client };
    failed_checks.extend(checker::run_checks(&history, &writes.acknowledged, &verdict, &limits));
    failed_checks
        .extend(caches.iter().chain(&work).filter(|c| !c.passed).map(|c| format!("{}: {}", c.command, c.outcome)));
    let storage_line: Vec<(u64, i64)> = arrived_ms.iter().copied().zip(history.iter().map(|e| e.revision)).collect();
    let recoveries = recoveries(&faults.log, &storage_line, &clients);
    cluster.stop().await;
    Ok(Outcome {
        passed: verdict.passed && failed_checks.is_empty() && audit.clean(),
        audit,
        epoch_ms,
        requests,
        ends: caches.into_iter().chain(work).collect(),
        verdict,
        failed_checks,
        faults: faults.log,
        history,
        storage_line,
        recoveries,
        clients,
        writes: writes.acknowledged.len(),
        failed_writes: writes.failed,
        elapsed: started.elapsed(),
    })
}

/// The scenario's storage and servers, and a client of each server.
struct Cluster {
    servers: Arc<tokio::sync::Mutex<Vec<Server>>>,
    etcd: Arc<tokio::sync::Mutex<Option<EtcdCluster>>>,
    clients: Vec<Client>,
}

impl Cluster {
    /// Starts the scenario's storage and servers (with the debug API, the client audit, the
    /// run's tokens, and no compactor of their own: the scenario decides when storage is
    /// compacted). With commands they serve HTTPS: kubectl sends a token over HTTPS only. On
    /// etcd the servers share one key prefix, as the kube-apiservers of one cluster do.
    async fn start(scenario: &Scenario, identities: &Identities) -> anyhow::Result<Cluster> {
        let binary = std::env::current_exe().context("finding the listwatch binary")?;
        let token_file = identities.token_file.display().to_string();
        let tls = !scenario.commands.is_empty();
        // With the controllers, no fake nodes unless the scenario asks for some (`serve`'s
        // default is one): the deployments' pods run unbound, as they did before nodes.
        let asks_nodes = scenario.backend.server_args.iter().any(|a| a == "--nodes" || a.starts_with("--nodes="));
        let no_nodes = (scenario.workload.deployments.is_some() && !asks_nodes).then_some("--nodes=0");
        let builder = |i: usize| {
            Server::builder()
                .name(&format!("simulate-{i}"))
                .fallback_binary(binary.clone())
                .debug_api(true)
                .args(["--compaction-interval=0", "--audit-clients", "--token-auth-file", &token_file])
                .args(tls.then_some("--tls-generate"))
                .args(scenario.backend.server_args.iter())
                // The controllers make the deployments' pods (the harness runs servers bare).
                .args(scenario.workload.deployments.is_some().then_some("--controllers=all"))
                .args(no_nodes)
        };
        let (etcd, backend) = match scenario.backend.kind {
            BackendKind::Ephemeral => (None, Backend::Ephemeral),
            BackendKind::Embedded => (None, Backend::Memory),
            BackendKind::Etcd => {
                let members = usize::from(scenario.backend.members);
                (Some(EtcdCluster::start(members, EtcdProcessOptions::default()).await), Backend::Etcd)
            }
        };
        let mut servers = Vec::new();
        for i in 0..usize::from(scenario.backend.servers) {
            let builder = match &etcd {
                Some(cluster) => builder(i).etcd_endpoints(cluster.endpoints(), "/registry"),
                None => builder(i).backend(backend),
            };
            servers.push(builder.try_start().await.map_err(|e| anyhow::anyhow!("starting server {i}: {e}"))?);
        }
        let clients =
            servers.iter().map(|s| identities.client(&s.kubeconfig, "runner")).collect::<anyhow::Result<_>>()?;
        Ok(Cluster {
            servers: Arc::new(tokio::sync::Mutex::new(servers)),
            etcd: Arc::new(tokio::sync::Mutex::new(etcd)),
            clients,
        })
    }

    /// Every server's kubeconfig.
    async fn kubeconfigs(&self) -> Vec<std::path::PathBuf> {
        self.servers.lock().await.iter().map(|s| s.kubeconfig.clone()).collect()
    }

    async fn stop(self) {
        for server in self.servers.lock().await.iter_mut() {
            server.stop().await;
        }
    }
}

/// The workload's writers: the object writer and, when asked, the deployment churn.
struct Writers {
    stop: watch::Sender<bool>,
    writer: JoinHandle<workload::WriterReport>,
    churn: Option<JoinHandle<anyhow::Result<u64>>>,
}

impl Writers {
    fn start(scenario: &Scenario, client: &Client, seed: u64) -> Writers {
        let (stop, stopped) = watch::channel(false);
        let churn = scenario
            .workload
            .deployments
            .clone()
            .map(|churn| tokio::spawn(workload::churn(client.clone(), churn, seed, stopped.clone())));
        let writer = tokio::spawn(workload::run(client.clone(), scenario.workload.clone(), seed, stopped));
        Writers { stop, writer, churn }
    }

    /// Stops writing; what the writer did (a failed churn is a failed check).
    async fn stop(self, failed_checks: &mut Vec<String>) -> anyhow::Result<workload::WriterReport> {
        self.stop.send_replace(true);
        let writes = self.writer.await.context("the writer")?;
        if let Some(churn) = self.churn
            && let Err(e) = churn.await.context("the deployment churn")?
        {
            failed_checks.push(format!("the deployment churn failed: {e:#}"));
        }
        Ok(writes)
    }
}

/// Waits (at most `converge`) until the history follower has read storage's last revision and
/// every client's store equals a LIST of its scope.
async fn wait_until_caught_up(server: &Client, history: &Mutex<History>, reflectors: &Reflectors, converge: Duration) {
    let final_revision = faults::current_revision(server).await.unwrap_or(0);
    let deadline = Instant::now() + converge;
    while Instant::now() < deadline {
        let history_done = history.lock().expect("history").revision() >= final_revision;
        if history_done && reflectors.caught_up(server).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Causes the scenario's faults on time and keeps what the checker must know of them.
struct FaultDriver {
    started: Instant,
    /// When (after `started`) the schedule's clock starts.
    offset: Duration,
    /// Each fault as caused: when, and what happened.
    log: Vec<(Duration, String)>,
    compactions: Vec<Compaction>,
    cache_resets: Vec<CacheReset>,
    /// Window resets found after their fault (a storage outage's end), filled by their tasks.
    later_resets: Arc<Mutex<Vec<(u64, i64)>>>,
}

impl FaultDriver {
    fn new(started: Instant, offset: Duration) -> FaultDriver {
        FaultDriver {
            started,
            offset,
            log: Vec::new(),
            compactions: Vec::new(),
            cache_resets: Vec::new(),
            later_resets: Arc::default(),
        }
    }

    /// Fires every fault of the schedule at its time, then waits out the scenario's duration.
    async fn run(mut self, scenario: &Scenario, seed: u64, target: &FaultTarget, history: &Mutex<History>) -> Self {
        let duration = scenario.duration.0;
        let progress = Progress::start(duration, self.started + self.offset);
        for firing in faults::schedule(&scenario.faults, duration, seed) {
            tokio::time::sleep((self.offset + firing.at).saturating_sub(self.started.elapsed())).await;
            let at = self.started.elapsed();
            let history_revision = history.lock().expect("history").revision();
            match target.cause(&firing.fault, history_revision).await {
                Ok(caused) => {
                    progress.bar.set_message(format!("{:.1} s: {}", at.as_secs_f64(), caused.note));
                    self.remember(at, caused, &target.clients[0]);
                }
                Err(e) => self.log.push((at, format!("{:?} could not be caused: {e:#}", firing.fault))),
            }
        }
        tokio::time::sleep((self.offset + duration).saturating_sub(self.started.elapsed())).await;
        progress.finish();
        self
    }

    /// Keeps what a caused fault means for the checker.
    fn remember(&mut self, at: Duration, caused: faults::Caused, server: &Client) {
        let at_ms = millis(at);
        if let Some(after) = caused.window_reset_after {
            // Dated at the start of the outage: the caches lose their storage watches at once
            // and their windows with them (a watch that comes back during the outage may be
            // told 410 by a cache that has not relisted; proof run zoo chaos, a streaming
            // client 30 ms into an outage). Its revision is read a little after the end, when
            // the caches have relisted (a revision at or above theirs: a 410 below it is
            // excused, so a late reading can excuse too much, never blame too much).
            let (server, resets) = (server.clone(), self.later_resets.clone());
            tokio::spawn(async move {
                tokio::time::sleep(after + Duration::from_millis(300)).await;
                if let Ok(revision) = faults::current_revision(&server).await {
                    resets.lock().expect("resets").push((at_ms, revision));
                }
            });
        }
        if let Some(revision) = caused.compacted {
            self.compactions.push(Compaction { at_ms, revision });
        }
        if let Some(revision) = caused.window_reset {
            self.cache_resets.push(CacheReset { at_ms, resource: caused.reset_resource.clone(), revision });
        }
        self.log.push((at, caused.note));
    }

    /// What the checker must know: compactions and window resets (a storage outage resets
    /// every cache).
    fn known(&self) -> Known {
        let mut cache_resets = self.cache_resets.clone();
        for (at_ms, revision) in self.later_resets.lock().expect("resets").iter().copied() {
            cache_resets.push(CacheReset { at_ms, resource: String::new(), revision });
        }
        Known { compactions: self.compactions.clone(), cache_resets, window_capacity: 100 }
    }
}

/// A progress bar over the scenario's duration, with the last fault as its message (drawn only
/// on a terminal).
struct Progress {
    bar: indicatif::ProgressBar,
    ticking: JoinHandle<()>,
}

impl Progress {
    fn start(duration: Duration, started: Instant) -> Progress {
        let bar = indicatif::ProgressBar::new(millis(duration));
        let style = indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {msg}")
            .expect("a valid template")
            .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(200));
        let ticking = {
            let bar = bar.clone();
            tokio::spawn(async move {
                loop {
                    bar.set_position(millis(started.elapsed()).min(millis(duration)));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        Progress { bar, ticking }
    }

    fn finish(self) {
        self.ticking.abort();
        self.bar.finish_and_clear();
    }
}
