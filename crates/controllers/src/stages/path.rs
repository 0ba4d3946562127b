//! The field paths stages read objects with: the small part of jq (gojq, which kwok runs)
//! that kwok's stage files use, so their selector keys and `durationFrom` expressions read here
//! as they do there.
//!
//! Supported: `.a.b` fields, `.["key"]` and `["key"]` (keys with dots or slashes, as labels
//! and annotations have), `.[]` and `[]` (every element of a list or every value of a map),
//! `[n]` (one element), `|` pipes and `select(PATH == LITERAL)` / `select(PATH != LITERAL)`
//! with a JSON literal. Anything else is refused when the stage is loaded, with what was
//! expected.
//!
//! A path yields a stream of values, as in jq; a field that is missing (or `null`) yields
//! nothing, which is what `Exists` and `DoesNotExist` test.

use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A parsed path, with the text it came from.
#[derive(Clone, PartialEq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    Each,
    Select { path: Vec<Step>, equal: bool, literal: Value },
}

impl JsonPath {
    /// Parses `text`; the error says where and what was expected.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let mut parser = Parser { text, at: 0 };
        let steps = parser.pipeline()?;
        parser.skip_spaces();
        if parser.at < text.len() {
            return Err(parser.unexpected("`.field`, `[\"key\"]`, `[]`, `|` or `select(...)`"));
        }
        Ok(JsonPath { text: text.to_string(), steps })
    }

    /// The text it was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every non-null value the path reaches in `root`.
    pub fn values<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        walk(&self.steps, root)
    }

    /// The first non-null value the path reaches, if any.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.values(root).into_iter().next()
    }
}

impl fmt::Debug for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text)
    }
}

impl<'de> Deserialize<'de> for JsonPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::de::parse_str(deserializer, "a path such as .status.phase", |text| {
            JsonPath::parse(text).map_err(|e| format!("path {text:?}: {e}"))
        })
    }
}

fn walk<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => next.extend(value.get(name.as_str())),
                Step::Index(i) => next.extend(value.get(*i)),
                Step::Each => match value {
                    Value::Array(items) => next.extend(items),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Select { path, equal, literal } => {
                    // A missing .x is not equal to anything: `select(.x != v)` keeps it, as jq.
                    let found = walk(path, value).into_iter().any(|v| v == literal);
                    if found == *equal {
                        next.push(value);
                    }
                }
            }
        }
        current = next.into_iter().filter(|v| !v.is_null()).collect();
    }
    current
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn skip_spaces(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn unexpected(&self, expected: &str) -> String {
        match self.rest().chars().next() {
            Some(c) => format!("unexpected {c:?} at column {}, expected {expected}", self.at + 1),
            None => format!("unexpected end at column {}, expected {expected}", self.at + 1),
        }
    }

    /// Terms separated by `|`.
    fn pipeline(&mut self) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        loop {
            self.skip_spaces();
            if self.eat("select(") {
                steps.push(self.select()?);
            } else if self.rest().starts_with(['.', '[']) {
                steps.extend(self.path()?);
            } else {
                return Err(self.unexpected("a path starting with `.` or `select(`"));
            }
            self.skip_spaces();
            if !self.eat("|") {
                return Ok(steps);
            }
        }
    }

    /// `.a.b["c"].[][0]`: stops at a space, `|`, `)`, `=` or `!`.
    fn path(&mut self) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        loop {
            if self.eat(".") {
                let name: String = self.rest().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                self.at += name.len();
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            } else if self.eat("[") {
                self.skip_spaces();
                if self.eat("]") {
                    steps.push(Step::Each);
                    continue;
                }
                if self.rest().starts_with('"') {
                    steps.push(Step::Field(self.string()?));
                } else {
                    let digits: String = self.rest().chars().take_while(char::is_ascii_digit).collect();
                    if digits.is_empty() {
                        return Err(self.unexpected("`]`, a quoted key or an index"));
                    }
                    self.at += digits.len();
                    steps.push(Step::Index(digits.parse().map_err(|_| format!("index {digits} is too large"))?));
                }
                self.skip_spaces();
                if !self.eat("]") {
                    return Err(self.unexpected("`]`"));
                }
            } else if self.rest().is_empty() || self.rest().starts_with([' ', '|', ')', '=', '!']) {
                return Ok(steps);
            } else {
                return Err(self.unexpected("`.field`, `[\"key\"]` or `[]`"));
            }
        }
    }

    /// A JSON string literal at the cursor.
    fn string(&mut self) -> Result<String, String> {
        let mut stream = serde_json::Deserializer::from_str(self.rest()).into_iter::<String>();
        match stream.next() {
            Some(Ok(s)) => {
                self.at += stream.byte_offset();
                Ok(s)
            }
            _ => Err(self.unexpected("a quoted string")),
        }
    }

    /// After `select(`: `PATH == LITERAL)` or `PATH != LITERAL)`.
    fn select(&mut self) -> Result<Step, String> {
        self.skip_spaces();
        let path = self.path()?;
        self.skip_spaces();
        let equal = if self.eat("==") {
            true
        } else if self.eat("!=") {
            false
        } else {
            return Err(self.unexpected("`==` or `!=`"));
        };
        self.skip_spaces();
        let mut stream = serde_json::Deserializer::from_str(self.rest()).into_iter::<Value>();
        let Some(Ok(literal)) = stream.next() else {
            return Err(self.unexpected("a JSON literal (\"text\", 1, true, null)"));
        };
        self.at += stream.byte_offset();
        self.skip_spaces();
        if !self.eat(")") {
            return Err(self.unexpected("`)`"));
        }
        Ok(Step::Select { path, equal, literal })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(path: &str, root: &Value) -> Vec<String> {
        JsonPath::parse(path).unwrap().values(root).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn paths_reach_fields_keys_elements_and_selected_items() {
        let pod = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}, "deletionTimestamp": null},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "False"}],
                "containerStatuses": [{"state": {"running": {}}}, {"state": {"waiting": {"reason": "X"}}}],
            },
        });
        assert_eq!(strings(".metadata.labels[\"app.kubernetes.io/name\"]", &pod), ["\"web\""]);
        assert_eq!(strings(".metadata.labels.[\"app.kubernetes.io/name\"]", &pod), ["\"web\""]);
        assert!(strings(".metadata.deletionTimestamp", &pod).is_empty(), "null is absent");
        assert!(strings(".spec.nodeName", &pod).is_empty());
        assert_eq!(strings(".status.containerStatuses.[].state.waiting.reason", &pod), ["\"X\""]);
        assert_eq!(strings(".status.containerStatuses[1].state.waiting.reason", &pod), ["\"X\""]);
        assert_eq!(strings(".status.conditions.[] | select( .type == \"Ready\" ) | .status", &pod), ["\"True\""]);
        assert_eq!(strings(".status.conditions[] | select(.type != \"Ready\") | .type", &pod), ["\"Initialized\""]);
    }

    #[test]
    fn malformed_paths_say_what_was_expected() {
        assert_eq!(
            JsonPath::parse("status.phase").unwrap_err(),
            "unexpected 's' at column 1, expected a path starting with `.` or `select(`"
        );
        assert!(JsonPath::parse(".a[\"b\"").unwrap_err().contains("expected `]`"));
        assert!(JsonPath::parse(".a | select(.b = 1)").unwrap_err().contains("`==` or `!=`"));
        assert!(JsonPath::parse(".a ^").unwrap_err().contains("column 4"));
    }
}
