//! `listwatch simulate SCENARIO.yaml`: runs a scenario (servers on a backend, a workload,
//! in-process reflectors, a schedule of faults), records storage's history and what every
//! client received, and gives a verdict on the watch guarantees. It exits 0 only if every
//! check held.
//!
//! * [`scenario`]: the file, read strictly;
//! * [`workload`]: the writer; [`observe`]: the clients' records; [`history`]: storage's;
//! * [`faults`]: when each fault fires and how it is caused;
//! * the checker itself is `listwatch_simulator::checker`.

mod commands;
mod faults;
mod history;
mod observe;
mod scenario;
mod timeline;
mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use listwatch_client::reflector::{Reflector, ReflectorConfig, ReflectorEvent};
use listwatch_client::{Api, Client, Config, DynamicObject, Object};
use listwatch_simulator::checker::{self, Verdict};
use listwatch_simulator::record::{ClientRecord, Known};
use listwatch_testkit::etcd::{EtcdCluster, EtcdProcessOptions};
use listwatch_testkit::server::{Backend, Server};
use serde_json::json;
use tokio::sync::watch;

use scenario::{BackendKind, ClientMode, Scenario};

/// `listwatch simulate`.
#[derive(Args)]
pub struct SimulateArgs {
    /// The scenario file.
    scenario: PathBuf,
    /// The seed of every random choice (overrides the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Run the scenario this many times, with seeds seed, seed+1, ...
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Write the JSON report here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write what every client saw and storage's history here (JSON lines).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Draw the run (faults, each client's resourceVersion over time, relists) as SVG here.
    #[arg(long)]
    timeline: Option<PathBuf>,
    /// Run on this storage instead of the scenario's (`ephemeral`, `embedded` or `etcd`).
    #[arg(long, value_name = "KIND")]
    backend: Option<String>,
}

/// Runs the scenario; the process's exit code is 0 only if every run passed.
pub async fn run(args: SimulateArgs) -> anyhow::Result<std::process::ExitCode> {
    let file = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario).with_context(|| format!("reading {file}"))?;
    let scenario = match scenario::parse_with_backend(&file, &text, args.backend.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return Ok(std::process::ExitCode::from(2));
        }
    };
    let first_seed = args.seed.or(scenario.seed).unwrap_or(1);
    let mut reports = Vec::new();
    let mut all_passed = true;
    for run in 0..args.runs.max(1) {
        let seed = first_seed.wrapping_add(run);
        let outcome = run_once(&scenario, seed, args.record.is_some()).await?;
        print_summary(&scenario, seed, &outcome);
        all_passed &= outcome.passed;
        if let Some(path) = &args.record {
            write_record(path, &outcome)?;
        }
        if let Some(path) = &args.timeline {
            let faults: Vec<(u64, String)> =
                outcome.faults.iter().map(|(at, note)| (millis(*at), note.clone())).collect();
            timeline::write(
                path,
                &timeline::TimelineData {
                    title: &scenario.name,
                    elapsed_ms: millis(outcome.elapsed),
                    faults: &faults,
                    storage: &outcome.storage_line,
                    clients: &outcome.clients,
                },
            )?;
        }
        reports.push(outcome.report(&scenario, seed));
    }
    if let Some(path) = &args.report {
        let report =
            if reports.len() == 1 { reports.remove(0) } else { json!({"runs": reports, "passed": all_passed}) };
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if all_passed { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE })
}

/// Everything one run produced.
struct Outcome {
    verdict: Verdict,
    passed: bool,
    /// Checks of the runner's own (acknowledged writes kept, relist limits), failed ones only.
    failed_checks: Vec<String>,
    faults: Vec<(Duration, String)>,
    history: Vec<listwatch_simulator::record::HistoryEvent>,
    /// Storage's revision over time (ms, revision).
    storage_line: Vec<(u64, i64)>,
    /// Per fault: how long each client took to deliver a change written after it.
    recoveries: Vec<Recovery>,
    clients: Vec<ClientRecord>,
    writes: usize,
    failed_writes: usize,
    elapsed: Duration,
}

impl Outcome {
    fn report(&self, scenario: &Scenario, seed: u64) -> serde_json::Value {
        json!({
            "scenario": scenario.name,
            "seed": seed,
            "passed": self.passed,
            "violations": self.verdict.violations,
            "checks": self.failed_checks,
            "clients": self.verdict.clients,
            "faults": self.faults.iter().map(|(at, note)| json!({"atMs": at.as_millis() as u64, "what": note})).collect::<Vec<_>>(),
            "recoveries": self.recoveries.iter().map(|r| json!({
                "atMs": r.at_ms,
                "fault": r.fault,
                "clients": r.clients.iter().map(|(id, ms)| json!({"id": id, "recoveryMs": ms})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "writes": {"acknowledged": self.writes, "failed": self.failed_writes},
            "historyEvents": self.history.len(),
            "elapsedMs": self.elapsed.as_millis() as u64,
        })
    }
}

async fn run_once(scenario: &Scenario, seed: u64, record: bool) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let (servers, etcd) = start_servers(scenario).await?;
    let etcd = Arc::new(tokio::sync::Mutex::new(etcd));
    let clients: Vec<Client> = servers.iter().map(client_of).collect::<anyhow::Result<_>>()?;
    let servers = Arc::new(tokio::sync::Mutex::new(servers));
    workload::prepare(&clients[0], &scenario.workload).await?;
    let (stop_tx, stop) = watch::channel(false);

    let history = Arc::new(Mutex::new(history::History::default()));
    let follower = tokio::spawn(history::follow(clients.clone(), history.clone(), started, record, stop.clone()));

    // The clients under test: our reflector, each with a store it keeps from its events.
    let mut reflectors = Vec::new();
    // Each client's "stop reading until" switch (the pauseClient fault).
    let mut pauses = std::collections::HashMap::new();
    for spec in &scenario.clients {
        for i in 0..spec.count {
            let id = format!("{}-{i}", spec.name);
            let server = reflectors.len() % clients.len();
            let apis: Vec<Api<DynamicObject>> = clients
                .iter()
                .map(|c| Api::new(c.clone(), spec.resource.api_resource(), spec.namespace.as_deref()))
                .collect();
            let (observed, log) = observe::Observed::new(apis, server, &id, started);
            let config = ReflectorConfig {
                name: id.clone(),
                label_selector: spec.selector.clone(),
                streaming_list: spec.mode == ClientMode::StreamingList,
                ..ReflectorConfig::default()
            };
            let store = Arc::new(Mutex::new(BTreeMap::new()));
            let (pause_tx, pause) = watch::channel(None);
            pauses.insert(id.clone(), pause_tx);
            let task = tokio::spawn(reflect(Reflector::new(observed, config), store.clone(), pause, stop.clone()));
            reflectors.push((id, spec, log, store, task));
        }
    }

    // The writer stops at the end of the scenario; the readers (clients, history) only after
    // they have had their chance to catch up.
    let (stop_writer_tx, stop_writer) = watch::channel(false);
    let churn = scenario
        .workload
        .deployments
        .clone()
        .map(|churn| tokio::spawn(workload::churn(clients[0].clone(), churn, seed, stop_writer.clone())));
    let writer = tokio::spawn(workload::run(clients[0].clone(), scenario.workload.clone(), seed, stop_writer));
    let kubeconfig = servers.lock().await[0].kubeconfig.clone();
    let programs = commands::start(&scenario.commands, &kubeconfig);

    // The faults, on time.
    let duration = scenario.duration.0;
    let mut known = Known { window_capacity: 100, ..Known::default() };
    // Window resets found after their fault (a storage outage's end), filled by their tasks.
    let later_resets = Arc::new(Mutex::new(Vec::new()));
    let mut fault_log = Vec::new();
    let bar = progress(duration);
    let ticking = {
        let bar = bar.clone();
        tokio::spawn(async move {
            loop {
                bar.set_position(millis(started.elapsed()).min(millis(duration)));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    for firing in faults::schedule(&scenario.faults, duration, seed) {
        let wait = firing.at.saturating_sub(started.elapsed());
        tokio::time::sleep(wait).await;
        let at = started.elapsed();
        let history_revision = history.lock().expect("history").revision();
        match faults::cause(&firing.fault, &servers, &etcd, &clients, &pauses, history_revision).await {
            Ok(caused) => {
                let at_ms = at.as_millis() as u64;
                if let Some(after) = caused.window_reset_after {
                    let (client, resets) = (clients[0].clone(), later_resets.clone());
                    // Dated at the end of the outage; its revision read a little later, when the
                    // caches have relisted (a revision at or above theirs: a 410 below it is
                    // excused, so a late reading can excuse too much, never blame too much).
                    let ends_ms = at_ms + millis(after);
                    tokio::spawn(async move {
                        tokio::time::sleep(after + Duration::from_millis(300)).await;
                        if let Ok(revision) = faults::current_revision(&client).await {
                            resets.lock().expect("resets").push((ends_ms, revision));
                        }
                    });
                }
                if let Some(revision) = caused.compacted {
                    known.compactions.push(listwatch_simulator::record::Compaction { at_ms, revision });
                }
                if let Some(revision) = caused.window_reset {
                    known.cache_resets.push(listwatch_simulator::record::CacheReset {
                        at_ms,
                        resource: caused.reset_resource.clone(),
                        revision,
                    });
                }
                bar.set_message(format!("{:.1} s: {}", at.as_secs_f64(), caused.note));
                fault_log.push((at, caused.note));
            }
            Err(e) => fault_log.push((at, format!("{:?} could not be caused: {e:#}", firing.fault))),
        }
    }
    tokio::time::sleep(duration.saturating_sub(started.elapsed())).await;
    ticking.abort();
    bar.finish_and_clear();

    let mut failed_checks = Vec::new();
    // Quiet: the writer stops; every client must catch up with storage.
    stop_writer_tx.send_replace(true);
    let writes = writer.await.context("the writer")?;
    if let Some(churn) = churn
        && let Err(e) = churn.await.context("the deployment churn")?
    {
        failed_checks.push(format!("the deployment churn failed: {e:#}"));
    }
    let converge = scenario.checks.converge.map_or(Duration::from_secs(10), |d| d.0);
    let final_revision = faults::current_revision(&clients[0]).await.unwrap_or(0);
    let deadline = Instant::now() + converge;
    while Instant::now() < deadline {
        let history_done = history.lock().expect("history").revision() >= final_revision;
        let mut caught_up = history_done;
        for (_, spec, _, store, _) in &reflectors {
            caught_up &= matches_list(&clients[0], spec, store).await;
        }
        if caught_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for program in commands::finish(programs).await {
        if !program.passed {
            failed_checks.push(format!("command {}: {}", program.name, program.outcome));
        }
    }
    // Stop reading: the reflectors and the history follower end with `stop`.
    stop_tx.send_replace(true);
    let _ = follower.await;
    let mut client_records = Vec::new();
    for (id, spec, log, store, task) in reflectors {
        // Stopped (and its streams dropped, which marks their ends) before its records are read.
        task.abort();
        let _ = task.await;
        let log = std::mem::take(&mut *log.lock().expect("log"));
        let final_store = store.lock().expect("store").values().cloned().collect();
        client_records.push(ClientRecord {
            id,
            group: String::new(),
            resource: spec.resource.plural().into(),
            namespace: spec.namespace.clone(),
            label_selector: spec.selector.clone(),
            field_selector: None,
            watches: log.watches,
            lists: log.lists,
            final_store,
        });
    }
    let (history, arrived_ms) = {
        let mut history = history.lock().expect("history");
        (std::mem::take(&mut history.events), std::mem::take(&mut history.arrived_ms))
    };
    for (at_ms, revision) in later_resets.lock().expect("resets").drain(..) {
        // A storage outage resets every cache.
        known.cache_resets.push(listwatch_simulator::record::CacheReset { at_ms, resource: String::new(), revision });
    }
    let verdict = checker::check(&history, &client_records, &known);
    let storage_line: Vec<(u64, i64)> = arrived_ms.iter().copied().zip(history.iter().map(|e| e.revision)).collect();
    let recoveries = recoveries(&fault_log, &storage_line, &client_records);

    let applied: std::collections::HashSet<(String, i64)> =
        history.iter().map(|e| (format!("{}/{}", e.namespace, e.name), e.revision)).collect();
    let lost =
        writes.acknowledged.iter().filter(|w| !w.delete && !applied.contains(&(w.key.clone(), w.revision))).count();
    if lost > 0 {
        failed_checks.push(format!("{lost} acknowledged writes are missing from storage's history"));
    }
    if let Some(max) = scenario.checks.max_relists_per_client {
        for client in &verdict.clients {
            if client.relists > max {
                failed_checks.push(format!("{} relisted {} times (at most {max})", client.id, client.relists));
            }
        }
    }
    let mut servers = servers.lock().await;
    for server in servers.iter_mut() {
        server.stop().await;
    }
    Ok(Outcome {
        passed: verdict.passed && failed_checks.is_empty(),
        verdict,
        failed_checks,
        faults: fault_log,
        history,
        storage_line,
        recoveries,
        clients: client_records,
        writes: writes.acknowledged.len(),
        failed_writes: writes.failed,
        elapsed: started.elapsed(),
    })
}

/// A progress bar over the scenario's duration, with the last fault as its message (drawn only
/// on a terminal).
fn progress(duration: Duration) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(millis(duration));
    let style = indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {msg}")
        .expect("a valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// How long each client took, after one fault, to deliver a change written after it.
struct Recovery {
    at_ms: u64,
    fault: String,
    /// (client, milliseconds; `None` if it never did before the run ended).
    clients: Vec<(String, Option<u64>)>,
}

/// For each fault at T with storage at revision R (as read by T): each client's time until it
/// was delivered an event above R. A client the fault did not touch shows its usual
/// latency; one that had to re-watch or relist shows that too.
fn recoveries(faults: &[(Duration, String)], storage: &[(u64, i64)], clients: &[ClientRecord]) -> Vec<Recovery> {
    faults
        .iter()
        .map(|(at, what)| {
            let at_ms = millis(*at);
            let revision = storage.iter().take_while(|(t, _)| *t <= at_ms).last().map_or(0, |(_, rv)| *rv);
            let clients = clients
                .iter()
                .map(|client| {
                    let first = client
                        .watches
                        .iter()
                        .flat_map(|w| w.deliveries.iter())
                        .filter_map(|d| match d {
                            listwatch_simulator::record::Delivery::Event { at_ms: t, resource_version, .. }
                                if *t >= at_ms && *resource_version > revision =>
                            {
                                Some(*t)
                            }
                            _ => None,
                        })
                        .min();
                    (client.id.clone(), first.map(|t| t - at_ms))
                })
                .collect();
            Recovery { at_ms, fault: what.clone(), clients }
        })
        .collect()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Starts the scenario's storage and servers (with the debug API, and no compactor of their
/// own: the scenario decides when storage is compacted). On etcd the servers share one key
/// prefix, as the kube-apiservers of one cluster do.
async fn start_servers(scenario: &Scenario) -> anyhow::Result<(Vec<Server>, Option<EtcdCluster>)> {
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
    Ok((servers, etcd))
}

fn client_of(server: &Server) -> anyhow::Result<Client> {
    let config = Config::from_kubeconfig(&server.kubeconfig).context("reading the server's kubeconfig")?;
    Ok(Client::new(config)?)
}

/// Runs a reflector until `stop`, keeping a store of what it delivered.
async fn reflect(
    mut reflector: Reflector<DynamicObject>,
    store: Arc<Mutex<BTreeMap<String, listwatch_simulator::record::ObjectState>>>,
    pause: watch::Receiver<Option<Instant>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        // A paused client reads nothing (its stream's bytes wait in the buffers) until then.
        let paused_until = *pause.borrow();
        if let Some(until) = paused_until
            && Instant::now() < until
        {
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let event = tokio::select! {
            event = reflector.next_event() => event,
            _ = stop.wait_for(|s| *s) => return,
        };
        let mut store = store.lock().expect("store");
        match event {
            ReflectorEvent::Replace { objects, .. } => {
                *store = objects.iter().map(|o| (o.key(), observe::object_state(o))).collect();
            }
            ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) => {
                store.insert(o.key(), observe::object_state(&o));
            }
            ReflectorEvent::Deleted(o) => {
                store.remove(&o.key());
            }
            ReflectorEvent::Bookmark { .. } => {}
        }
    }
}

/// Whether a client's store holds exactly what a consistent LIST of its scope returns.
async fn matches_list(
    client: &Client,
    spec: &scenario::ClientSpec,
    store: &Mutex<BTreeMap<String, listwatch_simulator::record::ObjectState>>,
) -> bool {
    let api: Api<DynamicObject> = Api::new(client.clone(), spec.resource.api_resource(), spec.namespace.as_deref());
    let params = listwatch_client::ListParams { label_selector: spec.selector.clone(), ..Default::default() };
    let Ok(list) = api.list(&params).await else { return false };
    let store = store.lock().expect("store");
    list.items.len() == store.len()
        && list.items.iter().all(|o| {
            store.get(&o.key()).is_some_and(|s| Some(s.resource_version.to_string().as_str()) == o.resource_version())
        })
}

fn print_summary(scenario: &Scenario, seed: u64, outcome: &Outcome) {
    println!(
        "{}: {} (seed {seed}, {:.1} s, {} writes acknowledged, {} failed, {} storage changes)",
        scenario.name,
        if outcome.passed { "PASSED" } else { "FAILED" },
        outcome.elapsed.as_secs_f64(),
        outcome.writes,
        outcome.failed_writes,
        outcome.history.len()
    );
    if !scenario.description.is_empty() {
        println!("  {}", scenario.description);
    }
    for recovery in &outcome.recoveries {
        let worst = recovery.clients.iter().map(|(_, ms)| *ms).max().flatten();
        let never = recovery.clients.iter().filter(|(_, ms)| ms.is_none()).count();
        let recovered = match (worst, never) {
            (_, n) if n > 0 => format!("{n} client(s) were delivered no later change"),
            (Some(ms), _) => format!("every client past it within {ms} ms"),
            (None, _) => String::new(),
        };
        println!("  {:>7.2} s  {:<40} {recovered}", recovery.at_ms as f64 / 1000.0, recovery.fault);
    }
    println!("  {:<22} {:>7} {:>8} {:>10}  violations", "client", "watches", "relists", "converged");
    for client in &outcome.verdict.clients {
        let violations: Vec<String> =
            client.violations.iter().take(3).map(|v| format!("{:?}: {}", v.guarantee, v.detail)).collect();
        println!(
            "  {:<22} {:>7} {:>8} {:>10}  {}",
            client.id,
            client.watches,
            client.relists,
            if client.converged { "yes" } else { "NO" },
            if violations.is_empty() { "none".to_string() } else { violations.join("; ") }
        );
    }
    let total: usize = outcome.verdict.violations.values().sum();
    println!(
        "  guarantees: {}",
        if total == 0 { "all held".to_string() } else { format!("{:?}", outcome.verdict.violations) }
    );
    for check in &outcome.failed_checks {
        println!("  check failed: {check}");
    }
}

fn write_record(path: &std::path::Path, outcome: &Outcome) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
    for (event, (at_ms, _)) in outcome.history.iter().zip(&outcome.storage_line) {
        writeln!(out, "{}", json!({"history": event, "atMs": at_ms}))?;
    }
    for client in &outcome.clients {
        writeln!(out, "{}", json!({"client": client}))?;
    }
    Ok(())
}
