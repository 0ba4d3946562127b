//! `GET /debug/listwatch/clients` (with `--audit-clients`, whether the debug API is on or
//! not): every client's findings, and with `?records=true` every request recorded, for a runner
//! that judges the records of several servers together.

use crate::client_audit::ClientAudit;
use crate::response::{self, HttpResponse};

/// `GET /debug/listwatch/clients`: every client's findings (and, with `records`, every request
/// recorded, for a runner that judges the records of several servers together).
pub fn respond(audit: &ClientAudit, records: bool) -> HttpResponse {
    let report = audit.report();
    let mut answer = serde_json::json!({
        "server": audit.server,
        "startedMs": audit.started_ms,
        "clients": report.clients,
        "findings": report.findings,
        "unchecked": report.unchecked,
    });
    if records {
        answer["requests"] = serde_json::to_value(audit.requests()).unwrap_or_default();
    }
    response::json(200, serde_json::to_vec(&answer).unwrap_or_default())
}
