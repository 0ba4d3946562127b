//! The outcome of a run: one [`CheckResult`] per check, printable for people (text), for
//! programs (JSON) and for CI systems (JUnit XML, `junit.rs`), and assertable in tests.

use std::fmt;
use std::time::Duration;

use crate::CheckFailure;

/// What became of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server did what the check asserts.
    Passed,
    /// The server broke the protocol: why, and the offending bytes, event or response.
    Failed {
        /// What the server did wrong.
        why: String,
        /// The offending bytes, event or response, when there are any.
        evidence: Option<String>,
    },
    /// The check could not be carried out against this server.
    Skipped {
        /// Why it could not be carried out (e.g. the server lacks a feature).
        why: String,
    },
}

impl Outcome {
    pub(crate) fn from_failure(failure: CheckFailure) -> Outcome {
        match failure {
            CheckFailure::Failed { why, evidence } => Outcome::Failed { why, evidence },
            CheckFailure::Skipped { why } => Outcome::Skipped { why },
        }
    }
}

/// One check's result.
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// The check's name.
    pub name: String,
    /// The spec section it comes from (`""` for a name that matched no check).
    pub section: &'static str,
    /// Passed, failed or skipped, and why.
    pub outcome: Outcome,
    /// How long it ran.
    pub elapsed: Duration,
}

/// A whole run: every check's result, in report order.
#[derive(Clone, Debug)]
pub struct Report {
    /// One per check run (and one per `--check` name that matched no check).
    pub results: Vec<CheckResult>,
    /// How long the whole run took.
    pub elapsed: Duration,
    /// Set when the run's namespace could not be deleted afterwards (not a check failure).
    pub cleanup_problem: Option<String>,
}

/// How a report is written out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// For people: a line per check, reasons and evidence indented below.
    #[default]
    Text,
    /// One JSON object: the counts, and every check with its outcome, reason and evidence.
    Json,
    /// JUnit XML: one testsuite, one testcase per check.
    Junit,
}

impl Report {
    /// The report in `format`, ending with a newline.
    pub fn render(&self, format: OutputFormat) -> String {
        match format {
            OutputFormat::Text => format!("{self}\n"),
            OutputFormat::Json => {
                let mut json = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
                json.push('\n');
                json
            }
            OutputFormat::Junit => self.to_junit(),
        }
    }

    /// The report as JSON: `passed` (no check failed), `counts`, `elapsedSeconds`,
    /// `cleanupProblem` (or null) and `results`, each with `name`, `section`, `outcome`
    /// (`passed`, `failed` or `skipped`), `why` and `evidence` (or null) and `elapsedSeconds`.
    pub fn to_json(&self) -> serde_json::Value {
        let results: Vec<serde_json::Value> = self
            .results
            .iter()
            .map(|result| {
                let (outcome, why, evidence) = match &result.outcome {
                    Outcome::Passed => ("passed", None, None),
                    Outcome::Failed { why, evidence } => ("failed", Some(why), evidence.as_ref()),
                    Outcome::Skipped { why } => ("skipped", Some(why), None),
                };
                serde_json::json!({
                    "name": result.name,
                    "section": result.section,
                    "outcome": outcome,
                    "why": why,
                    "evidence": evidence,
                    "elapsedSeconds": result.elapsed.as_secs_f64(),
                })
            })
            .collect();
        serde_json::json!({
            "passed": self.all_passed(),
            "counts": {
                "passed": self.passed().count(),
                "failed": self.failed().count(),
                "skipped": self.skipped().count(),
            },
            "elapsedSeconds": self.elapsed.as_secs_f64(),
            "cleanupProblem": self.cleanup_problem,
            "results": results,
        })
    }

    /// The checks that passed.
    pub fn passed(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().filter(|r| r.outcome == Outcome::Passed)
    }

    /// The checks that failed.
    pub fn failed(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
    }

    /// The checks that were skipped.
    pub fn skipped(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().filter(|r| matches!(r.outcome, Outcome::Skipped { .. }))
    }

    /// Whether no check failed (skipped ones are not failures).
    pub fn all_passed(&self) -> bool {
        self.failed().next().is_none()
    }

    /// The result of the check with this name.
    pub fn get(&self, name: &str) -> Option<&CheckResult> {
        self.results.iter().find(|r| r.name == name)
    }

    /// Panics, printing the whole report, if any check failed.
    pub fn assert_all_passed(&self) {
        assert!(self.all_passed(), "conformance checks failed:\n{self}");
    }

    /// The checks that failed, and those skipped for a reason not in `allowed_skips` (pairs of
    /// a check name and a prefix of its skip reason).
    pub fn problems(&self, allowed_skips: &[(&str, &str)]) -> Vec<&CheckResult> {
        self.results
            .iter()
            .filter(|r| match &r.outcome {
                Outcome::Passed => false,
                Outcome::Failed { .. } => true,
                Outcome::Skipped { why } => {
                    !allowed_skips.iter().any(|(name, prefix)| *name == r.name && why.starts_with(prefix))
                }
            })
            .collect()
    }

    /// Panics, printing the whole report, if any check failed or was skipped for a reason not
    /// in `allowed_skips`.
    pub fn assert_all_passed_allowing_skips(&self, allowed_skips: &[(&str, &str)]) {
        let problems = self.problems(allowed_skips);
        assert!(
            problems.is_empty(),
            "conformance checks failed or were skipped for reasons not allowed here: {:?}\n{self}",
            problems.iter().map(|r| &r.name).collect::<Vec<_>>()
        );
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for result in &self.results {
            let label = match result.outcome {
                Outcome::Passed => "PASS",
                Outcome::Failed { .. } => "FAIL",
                Outcome::Skipped { .. } => "SKIP",
            };
            writeln!(f, "{label}  {:<44} {:<8} {:>6.2}s", result.name, result.section, result.elapsed.as_secs_f64())?;
            match &result.outcome {
                Outcome::Passed => {}
                Outcome::Skipped { why } => writeln!(f, "      why: {why}")?,
                Outcome::Failed { why, evidence } => {
                    writeln!(f, "      why: {why}")?;
                    if let Some(evidence) = evidence {
                        for line in evidence.lines() {
                            writeln!(f, "      | {line}")?;
                        }
                    }
                }
            }
        }
        if let Some(problem) = &self.cleanup_problem {
            writeln!(f, "note: cleaning up the test namespace failed: {problem}")?;
        }
        writeln!(f, "in {:.1} s", self.elapsed.as_secs_f64())?;
        write!(
            f,
            "{} passed, {} failed, {} skipped",
            self.passed().count(),
            self.failed().count(),
            self.skipped().count()
        )
    }
}
