//! Stages: a pod's life as data, in kwok's Stage shape, instead of transitions written in Rust.
//!
//! A stage says which objects it applies to (`spec.selector`: labels, annotations and field
//! requirements on [`path`]s such as `.status.phase`), how long after it is chosen it applies
//! (`spec.delay`, with jitter), and what it then does (`spec.next`: write a status from a
//! [`template`], change finalizers, delete the object, emit an Event). Nothing orders stages:
//! each write makes a watch event, and the stage that selects the object as it now is comes
//! next, so chains like Pending → ContainerCreating → Running, or Running → Error →
//! CrashLoopBackOff → Running, are selectors that match what the previous stage wrote.
//!
//! `listwatch serve` runs [the default set](DEFAULT_STAGES) (`stages/default.yaml`: pod-create,
//! pod-ready, pod-complete, pod-delete, written for `--pod-start-delay=500ms` and scaled to
//! it) unless `--stages FILE` names others, which replace it as kwok's do; `--stages default`
//! names the default set, to extend it. A file that does not read as stages stops `serve`
//! before it listens, with the file, line and column and what was expected there.
//!
//! Where listwatch differs from kwok, on purpose: the status template is YAML with
//! substitutions, not a Go template (see [`template`]); among the stages that select an
//! object the heaviest applies (kwok draws one at random by weight; ties are drawn here too);
//! the Stage API's `weightFrom`, `next.patches` and the newer `jq:` and `steps` forms are not
//! read (refused as unknown fields).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rand::Rng;
use serde::Deserialize;
use serde_json::Value;

mod de;
pub mod model;
pub mod path;
pub mod template;

pub use model::{Operator, Stage};

/// The default stages, as shipped (`src/stages/default.yaml`).
pub const DEFAULT_STAGES: &str = include_str!("stages/default.yaml");

/// The pod start delay the default stages are written for; `--pod-start-delay` scales them.
pub const DEFAULT_START_DELAY: Duration = Duration::from_millis(500);

/// What `--stages` takes to mean the default set.
pub const DEFAULT_NAME: &str = "default";

/// Stages, loaded and checked.
#[derive(Clone, Debug)]
pub struct StageSet {
    stages: Vec<Stage>,
}

impl StageSet {
    /// The default set, its delays scaled from [`DEFAULT_START_DELAY`] to `start_delay`.
    pub fn defaults(start_delay: Duration) -> StageSet {
        let mut set = StageSet::parse("default.yaml", DEFAULT_STAGES).expect("the default stages parse");
        set.scale_delays(start_delay.as_secs_f64() / DEFAULT_START_DELAY.as_secs_f64());
        set
    }

    /// The stages of every file in `sources` ([`DEFAULT_NAME`] for the default set, scaled to
    /// `start_delay`), in order. An error names the file, line and column.
    pub fn load(sources: &[impl AsRef<Path>], start_delay: Duration) -> Result<StageSet, String> {
        let mut stages: Vec<Stage> = Vec::new();
        let mut origin: BTreeMap<String, String> = BTreeMap::new();
        for source in sources {
            let source = source.as_ref();
            let name = source.display().to_string();
            let set = if source == Path::new(DEFAULT_NAME) {
                StageSet::defaults(start_delay)
            } else {
                let text = std::fs::read_to_string(source).map_err(|e| format!("{name}: {e}"))?;
                StageSet::parse(&name, &text)?
            };
            for stage in set.stages {
                if let Some(first) = origin.insert(stage.metadata.name.clone(), name.clone()) {
                    return Err(format!("{name}: stage {:?} is already defined in {first}", stage.metadata.name));
                }
                stages.push(stage);
            }
        }
        Ok(StageSet { stages })
    }

    /// The stages of one YAML text (documents separated by `---`); `name` says where it came
    /// from in errors.
    pub fn parse(name: &str, text: &str) -> Result<StageSet, String> {
        let mut stages = Vec::new();
        for document in serde_yaml_ng::Deserializer::from_str(text) {
            match Option::<Stage>::deserialize(document) {
                Ok(Some(stage)) => stages.push(stage),
                Ok(None) => {}
                Err(e) => return Err(located(name, &e)),
            }
        }
        for stage in &stages {
            if !stage.spec.resource_ref.is_core("Pod") {
                let r = &stage.spec.resource_ref;
                return Err(format!(
                    "{name}: stage {:?}: resourceRef {}/{} is not run by listwatch; expected apiGroup v1, kind Pod",
                    stage.metadata.name, r.api_group, r.kind
                ));
            }
        }
        Ok(StageSet { stages })
    }

    /// The stages, in the order loaded.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// Multiplies every delay by `factor`.
    fn scale_delays(&mut self, factor: f64) {
        let scale = |ms: &mut Option<u64>| {
            if let Some(ms) = ms {
                *ms = (*ms as f64 * factor).round() as u64;
            }
        };
        for stage in &mut self.stages {
            scale(&mut stage.spec.delay.duration_milliseconds);
            scale(&mut stage.spec.delay.jitter_duration_milliseconds);
        }
    }

    /// The stage to apply to `object` next: the heaviest of those that select it, a random
    /// one among equals.
    pub fn choose(&self, object: &Value, rng: &mut impl Rng) -> Option<usize> {
        let matching: Vec<usize> = (0..self.stages.len()).filter(|&i| matches(&self.stages[i], object)).collect();
        let heaviest = matching.iter().map(|&i| self.stages[i].spec.weight).max()?;
        let candidates: Vec<usize> = matching.into_iter().filter(|&i| self.stages[i].spec.weight == heaviest).collect();
        Some(candidates[rng.random_range(0..candidates.len())])
    }
}

/// serde_yaml's error as `FILE:LINE:COLUMN: what was expected`.
fn located(name: &str, error: &serde_yaml_ng::Error) -> String {
    let message = error.to_string();
    // The message ends with " at line L column C" when it has a place; say it in front instead.
    let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
    match error.location() {
        Some(at) => format!("{name}:{}:{}: {message}", at.line(), at.column()),
        None => format!("{name}: {message}"),
    }
}

/// Whether `stage` selects `object`.
pub fn matches(stage: &Stage, object: &Value) -> bool {
    let selector = &stage.spec.selector;
    let meta = |field: &str, key: &str| object.get("metadata")?.get(field)?.get(key)?.as_str();
    selector.match_labels.iter().all(|(k, v)| meta("labels", k) == Some(v))
        && selector.match_annotations.iter().all(|(k, v)| meta("annotations", k) == Some(v))
        && selector.match_expressions.iter().all(|requirement| {
            let values = requirement.key.values(object);
            let is_in = || values.iter().any(|v| requirement.values.iter().any(|want| scalar_text(v) == *want));
            match requirement.operator {
                Operator::Exists => !values.is_empty(),
                Operator::DoesNotExist => values.is_empty(),
                Operator::In => is_in(),
                Operator::NotIn => !is_in(),
            }
        })
}

/// A value as selector `values` spell it: strings bare, numbers and booleans as written.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How long after it is chosen `stage` applies to `object`.
pub fn delay_of(stage: &Stage, object: &Value, now: SystemTime, rng: &mut impl Rng) -> Duration {
    let delay = &stage.spec.delay;
    let from = |expression: &Option<model::ExpressionFrom>| {
        duration_at(expression.as_ref()?.expression_from.first(object)?, now)
    };
    let base =
        from(&delay.duration_from).or(delay.duration_milliseconds.map(Duration::from_millis)).unwrap_or(Duration::ZERO);
    let jitter = from(&delay.jitter_duration_from).or(delay.jitter_duration_milliseconds.map(Duration::from_millis));
    match jitter {
        Some(longest) if longest > base => {
            let spread = (longest - base).as_millis() as u64;
            base + Duration::from_millis(rng.random_range(0..=spread))
        }
        // kwok: a jitter shorter than the duration is the delay.
        Some(longest) => longest,
        None => base,
    }
}

/// A field read as a delay: an RFC 3339 time is the time left until it, a string a duration.
fn duration_at(value: &Value, now: SystemTime) -> Option<Duration> {
    let text = value.as_str()?;
    if let Some(at) = listwatch_client::rfc3339::parse(text) {
        return Some(at.duration_since(now).unwrap_or(Duration::ZERO));
    }
    humantime::parse_duration(text).ok()
}

#[cfg(test)]
mod tests;
