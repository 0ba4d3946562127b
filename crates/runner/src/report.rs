//! What one run produced ([`Outcome`]) and the three ways it leaves the runner: the summary on
//! stdout, the JSON report (`--report`) and the record (`--record`, JSON lines that
//! `serve --replay` and the checker read again).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use listwatch_simulator::audit::Report;
use listwatch_simulator::checker::Verdict;
use listwatch_simulator::record::{ClientRecord, Delivery, HistoryEvent};
use serde_json::json;

use crate::ends::EndCheck;
use crate::scenario::Scenario;

/// Everything one run produced.
pub struct Outcome {
    /// The checker's verdict on the watch guarantees.
    pub verdict: Verdict,
    /// The client audit's findings on every client (commands and in-process clients).
    pub audit: Report,
    /// The run's start, in ms since the epoch (the audit's times count from it).
    pub epoch_ms: u64,
    /// The programs' end states: their caches and their work.
    pub ends: Vec<EndCheck>,
    /// What the servers saw of every client, as the audit judged it.
    pub requests: Vec<listwatch_simulator::audit::Request>,
    /// Whether every guarantee and every check held.
    pub passed: bool,
    /// The run's own checks (acknowledged writes kept, relist limits, commands), failed ones only.
    pub failed_checks: Vec<String>,
    /// Each fault as it was caused: when, and what happened.
    pub faults: Vec<(Duration, String)>,
    /// Storage's change log.
    pub history: Vec<HistoryEvent>,
    /// Storage's revision over time (ms, revision).
    pub storage_line: Vec<(u64, i64)>,
    /// Per fault: how long each client took to deliver a change written after it.
    pub recoveries: Vec<Recovery>,
    /// What every client observed.
    pub clients: Vec<ClientRecord>,
    /// Writes acknowledged and failed.
    pub writes: usize,
    /// Writes that failed.
    pub failed_writes: usize,
    /// How long the run took.
    pub elapsed: Duration,
}

impl Outcome {
    /// The JSON report of this run.
    pub fn report(&self, scenario: &Scenario, seed: u64) -> serde_json::Value {
        json!({
            "scenario": scenario.name,
            "seed": seed,
            "passed": self.passed,
            "violations": self.verdict.violations,
            "checks": self.failed_checks,
            "clients": self.verdict.clients,
            "audit": {
                "clients": self.audit.clients,
                "findings": self.audit.findings.iter().map(|f| {
                    let mut finding = serde_json::to_value(f).unwrap_or_default();
                    finding["atMs"] = json!(f.at_ms.saturating_sub(self.epoch_ms));
                    finding
                }).collect::<Vec<_>>(),
                "unchecked": self.audit.unchecked,
            },
            "ends": self.ends.iter().map(|e| json!({"command": e.command, "check": e.kind, "passed": e.passed, "outcome": e.outcome})).collect::<Vec<_>>(),
            "faults": self.faults.iter().map(|(at, note)| json!({"atMs": millis(*at), "what": note})).collect::<Vec<_>>(),
            "recoveries": self.recoveries.iter().map(|r| json!({
                "atMs": r.at_ms,
                "fault": r.fault,
                "clients": r.clients.iter().map(|(id, ms)| json!({"id": id, "recoveryMs": ms})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "writes": {"acknowledged": self.writes, "failed": self.failed_writes},
            "historyEvents": self.history.len(),
            "elapsedMs": millis(self.elapsed),
        })
    }

    /// Prints the summary a person reads.
    pub fn print_summary(&self, scenario: &Scenario, seed: u64) {
        println!(
            "{}: {} (seed {seed}, {:.1} s, {} writes acknowledged, {} failed, {} storage changes)",
            scenario.name,
            if self.passed { "PASSED" } else { "FAILED" },
            self.elapsed.as_secs_f64(),
            self.writes,
            self.failed_writes,
            self.history.len()
        );
        if !scenario.description.is_empty() {
            println!("  {}", scenario.description);
        }
        for recovery in &self.recoveries {
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
        for client in &self.verdict.clients {
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
        self.print_audit();
        let total: usize = self.verdict.violations.values().sum();
        println!(
            "  guarantees: {}",
            if total == 0 { "all held".to_string() } else { format!("{:?}", self.verdict.violations) }
        );
        for check in &self.failed_checks {
            println!("  check failed: {check}");
        }
    }

    /// The client audit's table: a row per client (its findings by rule, its cache and work
    /// checks), then each finding with its evidence.
    fn print_audit(&self) {
        println!("  client audit: {:<28} findings", "client");
        for (client, rules) in &self.audit.clients {
            let found: Vec<String> =
                rules.iter().filter(|(_, n)| **n > 0).map(|(rule, n)| format!("{rule} {n}")).collect();
            let name = client.strip_prefix("simulate:").unwrap_or(client);
            let ends: Vec<String> = self
                .ends
                .iter()
                .filter(|e| e.command == name)
                .map(|e| format!("{} {}", e.kind, if e.passed { "ok" } else { "FAILED" }))
                .collect();
            let found = if found.is_empty() { "none".to_string() } else { found.join(", ") };
            let ends = if ends.is_empty() { String::new() } else { format!("  [{}]", ends.join(", ")) };
            println!("                {name:<28} {found}{ends}");
        }
        for finding in &self.audit.findings {
            let at = finding.at_ms.saturating_sub(self.epoch_ms) as f64 / 1000.0;
            let name = finding.client.strip_prefix("simulate:").unwrap_or(&finding.client);
            println!("  {at:>7.2} s  {name}: {}: {} ({})", finding.rule, finding.summary, finding.scope);
            for line in &finding.evidence {
                println!("              {line}");
            }
        }
        for end in self.ends.iter().filter(|e| !e.passed) {
            println!("  {}: {}", end.command, end.outcome);
        }
        for unchecked in self.audit.unchecked.iter().take(5) {
            println!("  not judged: {unchecked}");
        }
    }

    /// Writes storage's history and every client's record, one JSON value a line.
    pub fn write_record(&self, path: &Path) -> anyhow::Result<()> {
        let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        for (event, (at_ms, _)) in self.history.iter().zip(&self.storage_line) {
            writeln!(out, "{}", json!({"history": event, "atMs": at_ms}))?;
        }
        for client in &self.clients {
            writeln!(out, "{}", json!({"client": client}))?;
        }
        for request in &self.requests {
            writeln!(out, "{}", json!({"request": request}))?;
        }
        Ok(())
    }
}

/// How long each client took, after one fault, to deliver a change written after it.
pub struct Recovery {
    at_ms: u64,
    fault: String,
    /// (client, milliseconds; `None` if it never did before the run ended).
    clients: Vec<(String, Option<u64>)>,
}

/// For each fault at T with storage at revision R (as read by T): each client's time until it
/// was delivered an event above R. A client the fault did not touch shows its usual
/// latency; one that had to re-watch or relist shows that too.
pub fn recoveries(faults: &[(Duration, String)], storage: &[(u64, i64)], clients: &[ClientRecord]) -> Vec<Recovery> {
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
                            Delivery::Event { at_ms: t, resource_version, .. }
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

/// Milliseconds, saturated.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
