//! A Stage document, in kwok's shape (`kwok.x-k8s.io/v1alpha1`, `kind: Stage`), read with
//! `deny_unknown_fields` so a misspelt field is refused rather than ignored. What each field
//! means is in [`super`]'s documentation.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::path::JsonPath;
use super::template::StatusTemplate;

/// One stage.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Stage {
    /// Always `kwok.x-k8s.io/v1alpha1`.
    #[allow(dead_code)]
    api_version: ApiVersion,
    /// Always `Stage`.
    #[allow(dead_code)]
    kind: Kind,
    /// Its name.
    pub metadata: Metadata,
    /// What it does.
    pub spec: StageSpec,
}

#[derive(Clone, Copy, Debug, Deserialize)]
enum ApiVersion {
    #[serde(rename = "kwok.x-k8s.io/v1alpha1")]
    V1alpha1,
}

#[derive(Clone, Copy, Debug, Deserialize)]
enum Kind {
    Stage,
}

/// A stage's metadata: a name (unique among the stages loaded), maybe labels and annotations.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The stage's name.
    pub name: String,
    /// Ignored, as kwok does.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Ignored, as kwok does.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// `spec`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StageSpec {
    /// The kind the stage applies to.
    pub resource_ref: ResourceRef,
    /// Which objects it applies to; none (or an empty one) selects every object.
    #[serde(default)]
    pub selector: Selector,
    /// Among the stages that select an object, the heaviest is applied.
    #[serde(default)]
    pub weight: i64,
    /// How long after it is chosen the stage is applied.
    #[serde(default)]
    pub delay: Delay,
    /// What applying it does.
    pub next: Next,
    /// Choose the next stage from the object this stage wrote, not waiting for its watch event.
    #[serde(default)]
    pub immediate_next_stage: bool,
}

/// `spec.resourceRef`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceRef {
    /// `v1` (or empty) for the core group, as kwok writes it.
    #[serde(default)]
    pub api_group: String,
    /// The kind, e.g. `Pod`.
    pub kind: String,
}

impl ResourceRef {
    /// Whether it names core/v1 `kind`.
    pub fn is_core(&self, kind: &str) -> bool {
        matches!(self.api_group.as_str(), "" | "v1") && self.kind == kind
    }
}

/// `spec.selector`: every part must hold.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    /// Labels that must have these values.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Annotations that must have these values.
    #[serde(default)]
    pub match_annotations: BTreeMap<String, String>,
    /// Requirements on any field.
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

/// One `matchExpressions` entry: a path, an operator and its values.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawRequirement")]
pub struct Requirement {
    /// Where to look, e.g. `.status.phase`.
    pub key: JsonPath,
    /// How to compare.
    pub operator: Operator,
    /// What to compare with (In and NotIn only).
    pub values: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    key: JsonPath,
    operator: Operator,
    #[serde(default)]
    values: Vec<String>,
}

impl TryFrom<RawRequirement> for Requirement {
    type Error = String;

    fn try_from(raw: RawRequirement) -> Result<Self, String> {
        let key = raw.key.as_str();
        match raw.operator {
            Operator::In | Operator::NotIn if raw.values.is_empty() => {
                Err(format!("{key}: operator {:?} expects a non-empty `values`", raw.operator))
            }
            Operator::Exists | Operator::DoesNotExist if !raw.values.is_empty() => {
                Err(format!("{key}: operator {:?} expects no `values`", raw.operator))
            }
            _ => Ok(Requirement { key: raw.key, operator: raw.operator, values: raw.values }),
        }
    }
}

/// A requirement's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Operator {
    /// Some value the path reaches is one of `values`.
    In,
    /// No value the path reaches is one of `values` (a missing field passes).
    NotIn,
    /// The path reaches a non-null value.
    Exists,
    /// The path reaches nothing (or only null).
    DoesNotExist,
}

/// `spec.delay`; the delay is drawn from [duration, jitter] when jitter is longer.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Delay {
    /// The shortest delay.
    pub duration_milliseconds: Option<u64>,
    /// Where the object says its delay, preferred when it does.
    pub duration_from: Option<ExpressionFrom>,
    /// The longest delay.
    pub jitter_duration_milliseconds: Option<u64>,
    /// Where the object says its longest delay, preferred when it does.
    pub jitter_duration_from: Option<ExpressionFrom>,
}

/// `{expressionFrom: PATH}`: a field holding an RFC 3339 time (the delay lasts until then)
/// or a duration (`1.5s`, `300ms`, `2m`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpressionFrom {
    /// The path.
    pub expression_from: JsonPath,
}

/// `spec.next`: what applying the stage does, in this order: finalizers, then the delete or
/// the status, then the event.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Next {
    /// The status to write ([`super::template`]).
    pub status_template: Option<StatusTemplate>,
    /// Delete the object (a pod with grace period 0), instead of writing a status.
    #[serde(default)]
    pub delete: bool,
    /// Changes to `metadata.finalizers`.
    pub finalizers: Option<Finalizers>,
    /// An Event about the object.
    pub event: Option<EventSpec>,
}

/// `next.finalizers`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finalizers {
    /// Finalizers to add.
    #[serde(default)]
    pub add: Vec<FinalizerItem>,
    /// Finalizers to remove.
    #[serde(default)]
    pub remove: Vec<FinalizerItem>,
    /// Remove them all (before adding).
    #[serde(default)]
    pub empty: bool,
}

/// One finalizer, as kwok writes it (`{value: NAME}`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalizerItem {
    /// The finalizer.
    pub value: String,
}

/// `next.event`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// A CamelCase reason (`BackOff`, `Killing`).
    pub reason: String,
    /// What happened, for people.
    #[serde(default)]
    pub message: String,
}

/// An Event's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum EventType {
    /// Nothing wrong.
    Normal,
    /// Something to look at.
    Warning,
}

impl EventType {
    /// The name kube writes.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}
