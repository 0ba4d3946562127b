//! Label selectors, evaluated locally by listers (client-go `labels.Selector`).
//!
//! The syntax is the one the server accepts in `labelSelector`: comma-separated requirements,
//! all of which must hold — `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
//! `key notin (a,b)`, `key` (exists) and `!key` (does not exist). As in Kubernetes, `!=` and
//! `notin` also match objects that lack the key. An empty selector matches everything.

use std::collections::BTreeSet;

use crate::resource::Object;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// The selector text is not valid.
#[derive(Debug, thiserror::Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct SelectorError {
    /// The text that did not parse.
    pub selector: String,
    /// What is wrong with it.
    pub reason: String,
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// Whether the selector has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses kube's selector syntax (`app=web,tier!=db,env in (a,b),!legacy`).
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        let error = |reason: &str| SelectorError { selector: text.to_owned(), reason: reason.to_owned() };
        let mut requirements = Vec::new();
        for part in split_top_level(text).map_err(&error)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(error("empty requirement"));
            }
            requirements.push(parse_requirement(part).map_err(|r| error(&r))?);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether an object with these labels matches.
    pub fn matches_labels<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value.as_str()),
            Requirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Requirement::In(key, values) => label(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => label(key).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
        })
    }

    /// Whether `object`'s labels satisfy every requirement.
    pub fn matches<K: Object>(&self, object: &K) -> bool {
        self.matches_labels(|key| object.label(key))
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(text)
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, &'static str> {
    let mut parts = Vec::new();
    let mut depth = 0_i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced parentheses");
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced parentheses");
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key_of(key)?));
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(key_of(key)?, value_of(value)?));
    }
    if let Some((key, value)) = part.split_once("==") {
        return Ok(Requirement::Equals(key_of(key)?, value_of(value)?));
    }
    if let Some((key, value)) = part.split_once('=') {
        return Ok(Requirement::Equals(key_of(key)?, value_of(value)?));
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or("");
    match words.next().map(str::trim_start) {
        None => Ok(Requirement::Exists(key_of(key)?)),
        Some(rest) => {
            let operator_end = rest.find(|c: char| c.is_whitespace() || c == '(').unwrap_or(rest.len());
            let (operator, set) = rest.split_at(operator_end);
            let set = set.trim();
            let inner = set
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(|| format!("expected a (set) after {operator:?}"))?;
            let values = inner.split(',').map(value_of).collect::<Result<BTreeSet<_>, _>>()?;
            match operator {
                "in" => Ok(Requirement::In(key_of(key)?, values)),
                "notin" => Ok(Requirement::NotIn(key_of(key)?, values)),
                other => Err(format!("unknown operator {other:?}")),
            }
        }
    }
}

fn key_of(key: &str) -> Result<String, String> {
    let key = key.trim();
    let valid = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && key.matches('/').count() <= 1;
    if valid { Ok(key.to_owned()) } else { Err(format!("invalid label key {key:?}")) }
}

fn value_of(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        Ok(value.to_owned())
    } else {
        Err(format!("invalid label value {value:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &str, labels: &[(&str, &str)]) -> bool {
        let selector = LabelSelector::parse(selector).unwrap();
        selector.matches_labels(|key| labels.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
    }

    #[test]
    fn every_operator() {
        let labels = [("app", "web"), ("tier", "front")];
        assert!(matches("", &labels));
        assert!(matches("app=web", &labels));
        assert!(matches("app==web,tier", &labels));
        assert!(!matches("app!=web", &labels));
        assert!(matches("env!=prod", &labels));
        assert!(matches("app in (web, db)", &labels));
        assert!(!matches("app notin (web,db)", &labels));
        assert!(matches("env notin (prod)", &labels));
        assert!(matches("!env", &labels));
        assert!(!matches("!app", &labels));
        assert!(!matches("app in (db),tier=front", &labels));
        assert!(matches("example.com/team in (x),app", &[("example.com/team", "x"), ("app", "")]));
    }

    #[test]
    fn rejects_malformed_selectors() {
        for bad in ["app in web", "app in (web", "a b (c)", "app=w b", ",", "=x", "app inn (a)"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }
}
