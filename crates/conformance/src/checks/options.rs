//! Requests kube-apiserver refuses before serving (spec §1.4): option combinations that fail
//! `ListOptions` validation answer 422 `Invalid` (kind `ListOptions`, group `meta.k8s.io`,
//! one cause per problem); the storage layer's own checks answer 400 `BadRequest`.

use crate::fixture::{Fixture, encode};
use crate::http::{ApiResponse, Status};
use crate::{CheckFailure, Target};

/// Collects every case's problem so one run shows them all.
fn report(problems: Vec<String>, evidence: Vec<String>) -> Result<(), CheckFailure> {
    if problems.is_empty() {
        return Ok(());
    }
    Err(CheckFailure::failed_with(problems.join("; "), evidence.join("\n---\n")))
}

/// What is wrong with a 422 answer that should carry `detail` (empty when it is right).
fn invalid_problem(response: &ApiResponse, field: &str, detail: &str) -> Option<String> {
    if response.status != 422 {
        return Some(format!("expected HTTP 422, got {}", response.status));
    }
    let Ok(body) = response.json() else { return Some("the body is not JSON".into()) };
    let status = Status::from_json(&body);
    let details = &status.details;
    if status.kind != "Status" || status.status != "Failure" || status.code != 422 || status.reason != "Invalid" {
        return Some("expected a Status with status Failure, code 422, reason Invalid".into());
    }
    if details["kind"] != "ListOptions" || details["group"] != "meta.k8s.io" {
        return Some("details must name kind ListOptions and group meta.k8s.io".into());
    }
    let prefix = "ListOptions.meta.k8s.io \"\" is invalid: ";
    if !status.message.starts_with(prefix) {
        return Some(format!("the message must start with {prefix:?}"));
    }
    let causes = details["causes"].as_array().cloned().unwrap_or_default();
    let has_cause = causes.iter().any(|c| {
        c["field"] == field && c["message"].as_str().is_some_and(|m| m.contains(detail)) && c["reason"].is_string()
    });
    if !has_cause {
        return Some(format!("details.causes must hold field {field:?} with a message containing {detail:?}"));
    }
    None
}

/// §1.4 / §11.11: the four option combinations kube's validation forbids, on a list and on a
/// watch.
pub async fn invalid_combinations(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "invalid-option-combinations");
    let cases = [
        ("sendInitialEvents=true", "sendInitialEvents", "sendInitialEvents is forbidden for list"),
        (
            "resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "watch=1&sendInitialEvents=true",
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            "watch=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
    ];
    let mut problems = Vec::new();
    let mut evidence = Vec::new();
    for (query, field, detail) in cases {
        // A watch that is wrongly accepted would never end: send() bounds it.
        let response = target.get(&fx.collection(query)).await?;
        if let Some(problem) = invalid_problem(&response, field, detail) {
            problems.push(format!("?{query}: {problem}"));
            evidence.push(response.describe());
        }
    }
    report(problems, evidence)
}

/// What is wrong with a 400 answer whose message should contain `detail`.
fn bad_request_problem(response: &ApiResponse, detail: &str) -> Option<String> {
    if response.status != 400 {
        return Some(format!("expected HTTP 400, got {}", response.status));
    }
    let Ok(body) = response.json() else { return Some("the body is not JSON".into()) };
    let status = Status::from_json(&body);
    if status.kind != "Status" || status.status != "Failure" || status.code != 400 || status.reason != "BadRequest" {
        return Some("expected a Status with status Failure, code 400, reason BadRequest".into());
    }
    if !status.message.contains(detail) {
        return Some(format!("the message must contain {detail:?}"));
    }
    None
}

/// §1.4: `continue` with a resourceVersion, an undecodable continue token, and a non-numeric
/// resourceVersion on a list are 400 BadRequest with kube's messages.
pub async fn bad_requests(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "bad-list-requests");
    fx.create("a", "1").await?;
    fx.create("b", "1").await?;
    let selector = format!("labelSelector={}", encode(&fx.selector()));
    let page = fx.list("limit=1").await?;
    let token = page["metadata"]["continue"].as_str().unwrap_or_default();
    let page_rv = page["metadata"]["resourceVersion"].as_str().unwrap_or_default();
    if token.is_empty() {
        return Err(CheckFailure::failed_with(
            "a list of 2 objects with limit=1 must return a continue token",
            page.to_string(),
        ));
    }
    let cases = [
        (
            format!("{selector}&limit=1&continue={}&resourceVersion={page_rv}", encode(token)),
            "specifying resource version is not allowed when using continue",
        ),
        (format!("{selector}&limit=1&continue=garbage%21%21"), "invalid continue token"),
        (format!("{selector}&resourceVersion=abc"), "invalid resource version"),
    ];
    let mut problems = Vec::new();
    let mut evidence = Vec::new();
    for (query, detail) in cases {
        let response = target.get(&fx.collection(&query)).await?;
        if let Some(problem) = bad_request_problem(&response, detail) {
            problems.push(format!("?{query}: {problem}"));
            evidence.push(response.describe());
        }
    }
    report(problems, evidence)
}
