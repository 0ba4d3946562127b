//! The bad-input table: some two hundred requests a client can get wrong (malformed bodies,
//! names, paths, methods, HTTP framing, query values, metadata, data sizes, preconditions,
//! patches, namespaces, limits, media types, nesting depth, WebSocket handshakes), each with
//! the answer kube-apiserver 1.32 gives it: code, reason, message and details.
//!
//! Every row runs against one server per backend, over raw TCP so that nothing is tidied on
//! the way. All failing rows are reported together, grouped by class, so one run shows every
//! difference. Afterwards every object the server holds must be as it was: a refused request
//! writes nothing (the rows that succeed are reads, dry runs and no-op patches).
//!
//! A row whose answer knowingly differs from kube-apiserver's says why and asserts ours
//! (`Case::known_difference`); the run lists those rows, and a row that starts answering as
//! kube does fails until its difference is dropped.
//!
//! Where kube-apiserver itself answers 500 for a client's mistake (a DELETE body that is not
//! DeleteOptions, a non-numeric resourceVersion reaching the watch cache), the row expects the
//! 400 the house rules ask for instead; those rows say so.

mod cases;
mod fixtures;
mod kube;
mod raw;
mod table;

use std::time::Duration;

use crate::on_both_backends;
use crate::support::{Backend, Server};

on_both_backends!(bad_input_table);

/// Longer than the 3 s a too-large resourceVersion waits for the watch cache.
const ROW_DEADLINE: Duration = Duration::from_secs(15);

async fn bad_input_table(backend: Backend) {
    let server = Server::start("bad-input", backend, &[]).await;
    let fixtures = fixtures::Fixtures::create(&server).await;
    let rows = cases::all(&fixtures);
    assert!(rows.len() >= 150, "the table has {} rows", rows.len());
    let addr = server.url.trim_start_matches("http://").to_string();
    // Rows are grouped by class; what each class wrote is found by comparing every object's
    // uid and resourceVersion before and after it.
    let mut classes: Vec<&'static str> = Vec::new();
    for row in &rows {
        if !classes.contains(&row.class) {
            classes.push(row.class);
        }
    }
    let mut report = String::new();
    let mut failed_rows = 0;
    let mut written = 0;
    let mut known_differences = Vec::new();
    let mut before = fixtures::snapshot(&server).await;
    for class in &classes {
        let mut failures = Vec::new();
        let in_class: Vec<&table::Case> = rows.iter().filter(|r| r.class == *class).collect();
        for row in &in_class {
            let request = row.request.to_bytes(&addr);
            let asserted = row.asserted();
            let problems = match raw::exchange(&addr, request, asserted.read, ROW_DEADLINE).await {
                Ok(response) => {
                    let mut problems = asserted.check(&response);
                    if let Some(known) = &row.known {
                        if problems.is_empty() && row.expect.check(&response).is_empty() {
                            problems.push(format!(
                                "now answers as kube-apiserver: drop the known difference ({})",
                                known.why
                            ));
                        }
                        known_differences.push(format!("{class}: {} ({})", row.name, known.why));
                    }
                    problems
                }
                Err(e) => vec![e],
            };
            if !problems.is_empty() {
                failures.push(format!("{} [{}]: {}", row.name, row.request.summary(), problems.join("; ")));
            }
        }
        let after = fixtures::snapshot(&server).await;
        let changes = fixtures::differences(&before, &after);
        before = after;
        if !failures.is_empty() || !changes.is_empty() {
            report.push_str(&format!("\n== {class}: {} of {} rows differ\n", failures.len(), in_class.len()));
            for f in &failures {
                report.push_str(&format!("  - {f}\n"));
            }
            for change in &changes {
                report.push_str(&format!("  ! written: {change}\n"));
            }
        }
        failed_rows += failures.len();
        written += changes.len();
    }
    eprintln!(
        "bad-input table on {backend:?}: {} of {} rows as expected ({} of them known differences from kube-apiserver); {written} objects written",
        rows.len() - failed_rows,
        rows.len(),
        known_differences.len(),
    );
    for known in &known_differences {
        eprintln!("  known difference: {known}");
    }
    assert!(
        failed_rows == 0 && written == 0,
        "{failed_rows} of {} rows differ from kube-apiserver on {backend:?}, {written} objects written by refused requests:{report}",
        rows.len()
    );
}
