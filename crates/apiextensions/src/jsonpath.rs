//! The JSONPath subset CRDs use in `additionalPrinterColumns`, `selectableFields` and the scale
//! subresource, evaluated like client-go's `jsonpath` with missing keys allowed: `.a.b`,
//! `.a[0]`, `.a[-1]`, `.a[*].b`, and filters `.a[?(@.type=="Ready")].status` comparing a
//! field with a string or number (`==`, `!=`). Anything else fails to parse, which kube reports
//! as `unrecognized column definition`.

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter { field: Vec<String>, equal: bool, literal: Value },
}

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath(Vec<Step>);

/// Why a path does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl JsonPath {
    /// Parses `.spec.replicas`-style paths (the surrounding `{}` optional).
    pub fn parse(text: &str) -> Result<JsonPath, ParseError> {
        let text = text.trim();
        let text = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
        let mut steps = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let name = &after[..end];
                if !name.is_empty() {
                    steps.push(Step::Field(name.to_owned()));
                }
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or_else(|| ParseError(format!("unterminated [ in {text}")))?;
                let inner = &after[..end];
                steps.push(parse_bracket(inner, text)?);
                rest = &after[end + 1..];
            } else {
                return Err(ParseError(format!("unrecognized identifier in {text}")));
            }
        }
        Ok(JsonPath(steps))
    }

    /// Every value the path finds in `object` (none when a key is missing).
    pub fn find<'a>(&self, object: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![object];
        for step in &self.0 {
            let mut next = Vec::new();
            for v in current {
                match (step, v) {
                    (Step::Field(name), Value::Object(map)) => next.extend(map.get(name)),
                    (Step::Index(i), Value::Array(items)) => {
                        let at = if *i < 0 { items.len() as i64 + i } else { *i };
                        if let Ok(at) = usize::try_from(at) {
                            next.extend(items.get(at));
                        }
                    }
                    (Step::All, Value::Array(items)) => next.extend(items),
                    (Step::All, Value::Object(map)) => next.extend(map.values()),
                    (Step::Filter { field, equal, literal }, Value::Array(items)) => {
                        next.extend(items.iter().filter(|item| {
                            let found = field.iter().try_fold(*item, |v, k| v.get(k));
                            found.is_some_and(|f| literal_equal(f, literal) == *equal)
                        }));
                    }
                    _ => {}
                }
            }
            current = next;
        }
        current
    }

    /// The first value found, as kube's table cells take it.
    pub fn first<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.find(object).into_iter().next()
    }
}

fn literal_equal(found: &Value, literal: &Value) -> bool {
    match (found, literal) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => found == literal,
    }
}

fn parse_bracket(inner: &str, text: &str) -> Result<Step, ParseError> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Ok(Step::Index(i));
    }
    if let Some(quoted) = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return Ok(Step::Field(quoted.to_owned()));
    }
    if let Some(expr) = inner.strip_prefix("?(").and_then(|s| s.strip_suffix(')')) {
        let (lhs, rhs, equal) = if let Some((l, r)) = expr.split_once("==") {
            (l, r, true)
        } else if let Some((l, r)) = expr.split_once("!=") {
            (l, r, false)
        } else {
            return Err(ParseError(format!("unsupported filter in {text}")));
        };
        let field = lhs.trim().strip_prefix("@.").ok_or_else(|| ParseError(format!("unsupported filter in {text}")))?;
        let rhs = rhs.trim();
        let literal = if let Some(s) = rhs
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .or_else(|| rhs.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
        {
            Value::String(s.to_owned())
        } else {
            serde_json::from_str(rhs).map_err(|_| ParseError(format!("unsupported filter value in {text}")))?
        };
        return Ok(Step::Filter { field: field.split('.').map(str::to_owned).collect(), equal, literal });
    }
    Err(ParseError(format!("unsupported [{inner}] in {text}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_values() {
        let obj = json!({"spec": {"replicas": 3, "items": [{"n": "a"}, {"n": "b"}]},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        let first = |p: &str| JsonPath::parse(p).unwrap().first(&obj).cloned();
        assert_eq!(first(".spec.replicas"), Some(json!(3)));
        assert_eq!(first(".spec.items[1].n"), Some(json!("b")));
        assert_eq!(first(".spec.items[-1].n"), Some(json!("b")));
        assert_eq!(first("{.spec.items[*].n}"), Some(json!("a")));
        assert_eq!(first(".status.conditions[?(@.type==\"Ready\")].status"), Some(json!("True")));
        assert_eq!(first(".spec.missing.deeper"), None);
        assert!(JsonPath::parse("spec").is_err());
    }
}
