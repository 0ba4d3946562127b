//! LIST/WATCH protocol conformance checks that run against any Kubernetes apiserver: listwatch,
//! or a real kube-apiserver.
//!
//! The checks turn the assertions of the protocol specification
//! (`shared/spec/apiserver-protocol.md`, §1–§7, §10 and the checklist in §11) into requests
//! against a live server and compare what comes back, exactly where the spec pins the bytes down
//! (headers, Status messages, event shapes). Each check is named by what it asserts and carries the spec
//! section it comes from.
//!
//! * [`Target`] says where the server is (a URL or a kubeconfig), how to authenticate, which
//!   namespace the run may create and delete, and whether listwatch's debug API is there.
//! * [`all_checks`] lists the [`Check`]s; [`run`] runs them and returns a [`Report`] of
//!   [`Outcome`]s: passed, failed (why, with the offending bytes or event), or skipped (why).
//!
//! Besides the JSON watch, the checks cover the other ways the same LIST/WATCH reaches
//! clients: protobuf bodies and frames (decoded with prost-reflect against the upstream
//! descriptors), WebSocket watches (a real WebSocket client), Tables and metadata-only
//! output, and many watches multiplexed on one HTTP/2 connection.
//!
//! The `watch-guarantee-*` checks go further than single rules: under a few hundred writes they
//! record what several list+watch and streaming-list clients received and judge it with the
//! watch simulator's checker (`listwatch_simulator::checker`) for etcd's watch guarantees read
//! for the Kubernetes API: ordered, unique, atomic, reliable, resumable, bookmarkable, and that
//! each client's store converges (see `checks/guarantees`).
//!
//! Every check works on objects of one resource ([`Resource`]) in the run's namespace, with
//! names of its own and a label (`listwatch-conformance/check=<check name>`) that its watches
//! select on, so checks are independent and run concurrently. The few that disturb the whole
//! server (compaction, a watch cache reset) are marked [`Check::exclusive`] and run alone,
//! after the others.
//!
//! The resource is ConfigMaps, or with `--resource custom` ([`Target::with_resource`])
//! `conformanceblobs.conformance.listwatch.dev`, a ConfigMap-shaped custom resource whose CRD
//! the run installs first (or finds) and leaves in place (`--delete-crd` deletes it after the
//! run; see `crd.rs`): custom resources must go through the same LIST/WATCH paths as built-ins.
//! Where kube-apiserver serves a custom resource differently, the checks assert kube's answer
//! for it: `table-list-get` and `table-watch` expect the CRD's printer columns,
//! `update-stale-resource-version` the group resource in the 409, `list-pagination` items that
//! carry their own `kind` and `apiVersion`; CRs have no protobuf, so `protobuf-get-list`,
//! `protobuf-watch-frames` and `websocket-protobuf-messages` expect 406 for a protobuf-only
//! `Accept` (and JSON with a JSON fallback), and `protobuf-create-body` and
//! `protobuf-json-round-trip` are Skipped, saying why (see `checks/protobuf.rs`).
//!
//! From the command line:
//!
//! ```text
//! listwatch-conformance --server http://127.0.0.1:8080 --debug-api     # a listwatch with --enable-debug-api
//! listwatch-conformance --kubeconfig ~/.kube/config --check watch-bookmarks
//! listwatch-conformance --server http://127.0.0.1:8080 --debug-api --resource custom
//! listwatch-conformance --list
//! listwatch-conformance --server http://127.0.0.1:8080 --output junit --output-file conformance.xml
//! ```
//!
//! A [`Report`] prints as text, and renders as JSON or JUnit XML ([`OutputFormat`]).
//!
//! HTTPS servers are verified against the CA given with `--certificate-authority`, the
//! kubeconfig's CA or the public roots; only `--insecure-skip-tls-verify` turns verification off
//! ([`TlsOptions`]).

mod checks;
mod crd;
mod fixture;
mod http;
mod junit;
mod kubeconfig;
mod proto;
mod report;
mod resource;
mod target;
mod tls;
mod watch;
mod ws;

use std::time::{Duration, Instant};

use futures::future::BoxFuture;

pub use checks::all_checks;
pub use kubeconfig::KubeconfigError;
pub use report::{CheckResult, Outcome, OutputFormat, Report};
pub use resource::Resource;
pub use target::{Target, TargetError};
pub use tls::TlsOptions;

/// One conformance check: what it asserts, where the spec says so, and how to run it.
#[derive(Clone, Copy)]
pub struct Check {
    /// Stable, unique name (also the label value that isolates its objects, so ≤ 63 bytes).
    pub name: &'static str,
    /// The spec section it comes from, e.g. `"§11.3"`.
    pub section: &'static str,
    /// One line on what it asserts.
    pub summary: &'static str,
    /// Whether it disturbs the whole server (compaction, cache resets) and so must run alone.
    pub exclusive: bool,
    /// Runs the check against the target.
    pub run: fn(&Target) -> BoxFuture<'_, Result<(), CheckFailure>>,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("name", &self.name).field("section", &self.section).finish_non_exhaustive()
    }
}

/// Why a check did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckFailure {
    /// The server broke the protocol (or could not be talked to): what was expected, and the
    /// offending bytes, event or response as evidence.
    Failed {
        /// What was expected and what happened instead.
        why: String,
        /// The offending bytes, event or response, when there are any.
        evidence: Option<String>,
    },
    /// The check could not be carried out against this server; never a verdict.
    Skipped {
        /// Why the check could not be carried out.
        why: String,
    },
}

impl CheckFailure {
    /// The server broke the protocol; `why` says how.
    pub fn failed(why: impl Into<String>) -> CheckFailure {
        CheckFailure::Failed { why: why.into(), evidence: None }
    }

    /// The server broke the protocol; `evidence` is what it sent.
    pub fn failed_with(why: impl Into<String>, evidence: impl Into<String>) -> CheckFailure {
        CheckFailure::Failed { why: why.into(), evidence: Some(evidence.into()) }
    }

    /// The check cannot be carried out against this server; `why` says why.
    pub fn skipped(why: impl Into<String>) -> CheckFailure {
        CheckFailure::Skipped { why: why.into() }
    }

    /// The failure as one text (for setup problems reported outside a check).
    pub fn describe(&self) -> String {
        match self {
            CheckFailure::Failed { why, evidence: Some(evidence) } => format!("{why}\n{evidence}"),
            CheckFailure::Failed { why, evidence: None } | CheckFailure::Skipped { why } => why.clone(),
        }
    }
}

/// Fails the check with `why` (a format string) unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err($crate::CheckFailure::failed(format!($($why)+)));
        }
    };
}
pub(crate) use ensure;

/// A check that has not finished by then has failed (every read inside it has a shorter
/// timeout of its own; this only bounds the sum).
const CHECK_DEADLINE: Duration = Duration::from_secs(90);

/// Runs the checks named in `only` (every check when empty) against `target`: creates the
/// run's namespace (and, for the custom resource, installs its CRD), runs the concurrent checks
/// together and then the exclusive ones one by one, and deletes the run's objects and namespace
/// (and the CRD when [`Target::delete_crd`]). A name that matches no check is reported as
/// failed.
pub async fn run(target: &Target, only: &[String]) -> Report {
    let target = &target.for_new_run();
    let started = Instant::now();
    let checks = all_checks();
    let mut results = Vec::new();
    for name in only {
        if !checks.iter().any(|c| c.name == name) {
            results.push(CheckResult {
                name: name.clone(),
                section: "",
                outcome: Outcome::Failed { why: "no check has this name".into(), evidence: None },
                elapsed: Duration::ZERO,
            });
        }
    }
    let selected: Vec<Check> =
        checks.into_iter().filter(|c| only.is_empty() || only.iter().any(|n| n == c.name)).collect();
    if let Err((why, failure)) = set_up(target).await {
        let outcome = Outcome::from_failure(CheckFailure::Failed { why, evidence: Some(failure.describe()) });
        for check in &selected {
            results.push(CheckResult {
                name: check.name.to_string(),
                section: check.section,
                outcome: outcome.clone(),
                elapsed: Duration::ZERO,
            });
        }
        return Report { results, elapsed: started.elapsed(), cleanup_problem: None };
    }
    let (exclusive, concurrent): (Vec<Check>, Vec<Check>) = selected.into_iter().partition(|c| c.exclusive);
    results.extend(futures::future::join_all(concurrent.iter().map(|c| run_one(target, c))).await);
    for check in &exclusive {
        results.push(run_one(target, check).await);
    }
    let mut cleanup_problem = fixture::delete_namespace(target).await.err().map(|f| f.describe());
    if target.resource.is_custom() && target.delete_crd && cleanup_problem.is_none() {
        cleanup_problem = crd::delete(target).await.err().map(|f| f.describe());
    }
    Report { results, elapsed: started.elapsed(), cleanup_problem }
}

/// Creates the run's namespace and, for the custom resource, installs its CRD; says what
/// failed.
async fn set_up(target: &Target) -> Result<(), (String, CheckFailure)> {
    fixture::create_namespace(target)
        .await
        .map_err(|failure| (format!("could not create the test namespace {}", target.namespace), failure))?;
    if target.resource.is_custom()
        && let Err(failure) = crd::install(target).await
    {
        // Best effort (there are no objects yet): the report says why the run could not start.
        let _ = target.send(reqwest::Method::DELETE, &format!("/api/v1/namespaces/{}", target.namespace), None).await;
        return Err((
            format!("could not install the CustomResourceDefinition {}", target.resource.qualified()),
            failure,
        ));
    }
    Ok(())
}

async fn run_one(target: &Target, check: &Check) -> CheckResult {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(CHECK_DEADLINE, (check.run)(target)).await {
        Ok(Ok(())) => Outcome::Passed,
        Ok(Err(failure)) => Outcome::from_failure(failure),
        Err(_) => Outcome::Failed {
            why: format!("the check did not finish within {} s", CHECK_DEADLINE.as_secs()),
            evidence: None,
        },
    };
    CheckResult { name: check.name.to_string(), section: check.section, outcome, elapsed: started.elapsed() }
}
