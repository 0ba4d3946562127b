//! One run of a scenario, step by step: start the servers ([`Cluster`]), the history follower,
//! the in-process clients, the writers and the user's commands; cause the faults on time
//! ([`FaultDriver`]); stop writing and give every client the converge deadline to catch up;
//! stop everything and hand the records to the checker. The runner judges nothing itself:
//! the watch guarantees and the run's own checks are the checker's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use listwatch_client::{Client, Config};
use listwatch_simulator::checker::{self, RunLimits};
use listwatch_simulator::record::{CacheReset, Compaction, Known};
use listwatch_testkit::etcd::{EtcdCluster, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::faults::{self, FaultTarget};
use crate::history::{self, History};
use crate::reflectors::Reflectors;
use crate::report::{Outcome, millis, recoveries};
use crate::scenario::{BackendKind, Scenario};
use crate::{commands, workload};

/// Runs the scenario once with `seed`; `record` keeps each Put's object in the history (for
/// a record that can be replayed).
pub async fn run_once(scenario: &Scenario, seed: u64, record: bool) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let cluster = Cluster::start(scenario).await?;
    workload::prepare(&cluster.clients[0], &scenario.workload).await?;
    let (stop_readers, readers_stop) = watch::channel(false);
    let history = Arc::new(Mutex::new(History::default()));
    let follower =
        tokio::spawn(history::follow(cluster.clients.clone(), history.clone(), started, record, readers_stop.clone()));
    let reflectors = Reflectors::start(&scenario.clients, &cluster.clients, started, &readers_stop);
    let writers = Writers::start(scenario, &cluster.clients[0], seed);
    let programs = commands::start(&scenario.commands, &cluster.kubeconfig().await);

    let target = FaultTarget {
        servers: cluster.servers.clone(),
        etcd: cluster.etcd.clone(),
        clients: cluster.clients.clone(),
        pauses: reflectors.pauses.clone(),
    };
    let faults = FaultDriver::new(started).run(scenario, seed, &target, &history).await;

    // Quiet: the writers stop; every client must catch up with storage.
    let mut failed_checks = Vec::new();
    let writes = writers.stop(&mut failed_checks).await?;
    let converge = scenario.checks.converge.map_or(Duration::from_secs(10), |d| d.0);
    wait_until_caught_up(&cluster.clients[0], &history, &reflectors, converge).await;
    for program in commands::finish(programs).await {
        if !program.passed {
            failed_checks.push(format!("command {}: {}", program.name, program.outcome));
        }
    }

    // Stop reading, then judge what was read.
    stop_readers.send_replace(true);
    let _ = follower.await;
    let clients = reflectors.finish().await;
    let (history, arrived_ms) = {
        let mut history = history.lock().expect("history");
        (std::mem::take(&mut history.events), std::mem::take(&mut history.arrived_ms))
    };
    let known = faults.known();
    let verdict = checker::check(&history, &clients, &known);
    let limits = RunLimits { max_relists_per_client: scenario.checks.max_relists_per_client };
    failed_checks.extend(checker::run_checks(&history, &writes.acknowledged, &verdict, &limits));
    let storage_line: Vec<(u64, i64)> = arrived_ms.iter().copied().zip(history.iter().map(|e| e.revision)).collect();
    let recoveries = recoveries(&faults.log, &storage_line, &clients);
    cluster.stop().await;
    Ok(Outcome {
        passed: verdict.passed && failed_checks.is_empty(),
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
    /// Starts the scenario's storage and servers (with the debug API, and no compactor of their
    /// own: the scenario decides when storage is compacted). On etcd the servers share one key
    /// prefix, as the kube-apiservers of one cluster do.
    async fn start(scenario: &Scenario) -> anyhow::Result<Cluster> {
        let binary = std::env::current_exe().context("finding the listwatch binary")?;
        let builder = |i: usize| {
            Server::builder()
                .name(&format!("simulate-{i}"))
                .fallback_binary(binary.clone())
                .debug_api(true)
                .args(["--compaction-interval=0"])
                // The controllers make the deployments' pods (the harness runs servers bare).
                .args(scenario.workload.deployments.is_some().then_some("--controllers=all"))
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
        let clients = servers.iter().map(client_of).collect::<anyhow::Result<_>>()?;
        Ok(Cluster {
            servers: Arc::new(tokio::sync::Mutex::new(servers)),
            etcd: Arc::new(tokio::sync::Mutex::new(etcd)),
            clients,
        })
    }

    /// The first server's kubeconfig (the one the commands get).
    async fn kubeconfig(&self) -> std::path::PathBuf {
        self.servers.lock().await[0].kubeconfig.clone()
    }

    async fn stop(self) {
        for server in self.servers.lock().await.iter_mut() {
            server.stop().await;
        }
    }
}

fn client_of(server: &Server) -> anyhow::Result<Client> {
    let config = Config::from_kubeconfig(&server.kubeconfig).context("reading the server's kubeconfig")?;
    Ok(Client::new(config)?)
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
    /// Each fault as caused: when, and what happened.
    log: Vec<(Duration, String)>,
    compactions: Vec<Compaction>,
    cache_resets: Vec<CacheReset>,
    /// Window resets found after their fault (a storage outage's end), filled by their tasks.
    later_resets: Arc<Mutex<Vec<(u64, i64)>>>,
}

impl FaultDriver {
    fn new(started: Instant) -> FaultDriver {
        FaultDriver {
            started,
            log: Vec::new(),
            compactions: Vec::new(),
            cache_resets: Vec::new(),
            later_resets: Arc::default(),
        }
    }

    /// Fires every fault of the schedule at its time, then waits out the scenario's duration.
    async fn run(mut self, scenario: &Scenario, seed: u64, target: &FaultTarget, history: &Mutex<History>) -> Self {
        let duration = scenario.duration.0;
        let progress = Progress::start(duration, self.started);
        for firing in faults::schedule(&scenario.faults, duration, seed) {
            tokio::time::sleep(firing.at.saturating_sub(self.started.elapsed())).await;
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
        tokio::time::sleep(duration.saturating_sub(self.started.elapsed())).await;
        progress.finish();
        self
    }

    /// Keeps what a caused fault means for the checker.
    fn remember(&mut self, at: Duration, caused: faults::Caused, server: &Client) {
        let at_ms = millis(at);
        if let Some(after) = caused.window_reset_after {
            // Dated at the end of the outage; its revision read a little later, when the caches
            // have relisted (a revision at or above theirs: a 410 below it is excused, so a late
            // reading can excuse too much, never blame too much).
            let (server, resets) = (server.clone(), self.later_resets.clone());
            let ends_ms = at_ms + millis(after);
            tokio::spawn(async move {
                tokio::time::sleep(after + Duration::from_millis(300)).await;
                if let Ok(revision) = faults::current_revision(&server).await {
                    resets.lock().expect("resets").push((ends_ms, revision));
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
