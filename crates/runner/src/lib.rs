//! The simulator's runner: `listwatch simulate SCENARIO.yaml` runs a scenario (servers on a
//! backend, a workload, in-process reflectors and the user's commands, a schedule of faults),
//! records storage's history and what every client received, and hands both to the checker
//! (`listwatch_simulator::checker`), which gives the verdict. It exits 0 only if every check
//! held. It lives in a crate of its own so that more than the binary can run a scenario.
//!
//! * [`scenario`]: the file, read strictly;
//! * [`run`](mod@run): one run, step by step;
//! * [`workload`]: the writers; [`reflectors`] and [`observe`]: the in-process clients and their
//!   records; [`commands`]: the user's programs; [`history`]: storage's change log;
//! * [`audit`]: every client's credential and the servers' records of them, judged by the
//!   client audit; [`ends`]: what the programs ended up with (their caches, their work);
//! * [`faults`]: when each fault fires and how it is caused;
//! * [`report`] and [`timeline`]: what a run leaves (summary, JSON report, record, SVG);
//! * [`replay`]: `serve --replay`, a recorded history served again.
#![allow(rustdoc::private_intra_doc_links)]

mod audit;
mod commands;
mod ends;
mod faults;
mod history;
mod observe;
mod reflectors;
mod report;
mod run;
mod scenario;
mod timeline;
mod workload;

pub mod replay;

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::json;

use report::millis;

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
        let outcome = run::run_once(&scenario, seed, args.record.is_some()).await?;
        outcome.print_summary(&scenario, seed);
        all_passed &= outcome.passed;
        if let Some(path) = &args.record {
            outcome.write_record(path)?;
        }
        if let Some(path) = &args.timeline {
            let faults: Vec<(u64, String)> =
                outcome.faults.iter().map(|(at, note)| (millis(*at), note.clone())).collect();
            let findings: Vec<(u64, String)> = outcome
                .audit
                .findings
                .iter()
                .map(|f| {
                    let client = f.client.strip_prefix("simulate:").unwrap_or(&f.client);
                    (f.at_ms.saturating_sub(outcome.epoch_ms), format!("{client}: {}", f.rule))
                })
                .collect();
            timeline::write(
                path,
                &timeline::TimelineData {
                    title: &scenario.name,
                    elapsed_ms: millis(outcome.elapsed),
                    faults: &faults,
                    storage: &outcome.storage_line,
                    clients: &outcome.clients,
                    findings: &findings,
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
