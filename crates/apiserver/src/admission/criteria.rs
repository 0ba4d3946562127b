//! What admission webhooks and policies match on, as their configurations declare it: rules,
//! exclusions, selectors and CEL match conditions, parsed once per configuration. How a
//! request is matched against them is [`super::matching`]'s.

use listwatch_meta::selector::LabelSelector;
use serde::Deserialize;
use serde_json::Value;

/// `RuleWithOperations` / `NamedRuleWithOperations`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(default)]
    pub(super) operations: Vec<String>,
    #[serde(default)]
    pub(super) api_groups: Vec<String>,
    #[serde(default)]
    pub(super) api_versions: Vec<String>,
    #[serde(default)]
    pub(super) resources: Vec<String>,
    #[serde(default)]
    pub(super) resource_names: Vec<String>,
    pub(super) scope: Option<String>,
}

/// A CEL condition a request must meet (one of `matchConditions`; its name only names it).
#[derive(Clone, Debug, Deserialize)]
pub struct MatchCondition {
    pub expression: String,
}

/// What a webhook or a policy's constraints (or a binding's) match, parsed once.
#[derive(Debug, Default)]
pub struct Criteria {
    pub(super) rules: Vec<Rule>,
    pub(super) exclude: Vec<Rule>,
    /// `None` when the selector is empty or absent: every namespace, without reading it.
    pub(super) namespace_selector: Option<LabelSelector>,
    pub(super) object_selector: Option<LabelSelector>,
    /// Why a selector does not parse; matching then fails, as kube's does.
    pub selector_error: Option<String>,
}

impl Criteria {
    pub fn new(rules: Vec<Rule>, exclude: Vec<Rule>, namespace: Option<&Value>, object: Option<&Value>) -> Criteria {
        let mut selector_error = None;
        let mut selector = |v: Option<&Value>| match v {
            None => None,
            Some(v) if is_empty_selector(v) => None,
            Some(v) => {
                let parsed = LabelSelector::from_api(v);
                if parsed.is_none() {
                    selector_error = Some(format!("invalid label selector {v}"));
                }
                parsed
            }
        };
        let namespace_selector = selector(namespace);
        let object_selector = selector(object);
        Criteria { rules, exclude, namespace_selector, object_selector, selector_error }
    }
}

/// Whether a selector is `{}` (or only empty parts), which matches everything.
fn is_empty_selector(selector: &Value) -> bool {
    match selector {
        Value::Null => true,
        Value::Object(map) => map.values().all(|v| match v {
            Value::Object(m) => m.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Null => true,
            _ => false,
        }),
        _ => false,
    }
}
