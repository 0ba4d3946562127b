//! The checks of a whole run beside the watch guarantees: no acknowledged write is missing from
//! storage's history (durability, judged on the history the clients are judged on), and no
//! client relisted more often than the scenario allows.

use std::collections::HashSet;

use super::Verdict;
use crate::record::{Acknowledged, HistoryEvent};

/// Limits a scenario sets on a run (`checks:` in its file).
#[derive(Debug, Clone, Default)]
pub struct RunLimits {
    /// At most this many relists (LISTs after the first) per client.
    pub max_relists_per_client: Option<usize>,
}

/// What failed of the run's own checks, one line each; empty when all held.
pub fn run_checks(
    history: &[HistoryEvent],
    acknowledged: &[Acknowledged],
    verdict: &Verdict,
    limits: &RunLimits,
) -> Vec<String> {
    let mut failed = Vec::new();
    let lost = lost_writes(history, acknowledged);
    if lost > 0 {
        failed.push(format!("{lost} acknowledged writes are missing from storage's history"));
    }
    if let Some(max) = limits.max_relists_per_client {
        for client in verdict.clients.iter().filter(|c| c.relists > max) {
            failed.push(format!("{} relisted {} times (at most {max})", client.id, client.relists));
        }
    }
    failed
}

/// Acknowledged creates and updates whose `(key, revision)` storage never wrote. (A delete's
/// answer carries the object's revision before it, which names no write of the delete itself.)
fn lost_writes(history: &[HistoryEvent], acknowledged: &[Acknowledged]) -> usize {
    let applied: HashSet<(String, i64)> =
        history.iter().map(|e| (format!("{}/{}", e.namespace, e.name), e.revision)).collect();
    acknowledged.iter().filter(|w| !w.delete && !applied.contains(&(w.key.clone(), w.revision))).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Change;

    fn put(revision: i64, name: &str) -> HistoryEvent {
        HistoryEvent {
            revision,
            kind: Change::Put,
            created: true,
            group: String::new(),
            resource: "configmaps".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: String::new(),
            labels: Default::default(),
            fingerprint: 0,
            object: None,
        }
    }

    #[test]
    fn a_write_storage_never_made_is_lost() {
        let history = [put(5, "a")];
        let kept = Acknowledged { key: "ns/a".into(), revision: 5, delete: false };
        let lost = Acknowledged { key: "ns/b".into(), revision: 6, delete: false };
        let verdict = Verdict { passed: true, violations: Default::default(), clients: Vec::new() };
        assert!(run_checks(&history, std::slice::from_ref(&kept), &verdict, &RunLimits::default()).is_empty());
        let failed = run_checks(&history, &[kept, lost], &verdict, &RunLimits::default());
        assert_eq!(failed, ["1 acknowledged writes are missing from storage's history"]);
    }
}
