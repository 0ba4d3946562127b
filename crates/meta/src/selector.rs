//! Label and field selectors, parsed, validated and matched as kube-apiserver
//! does for the `labelSelector` and `fieldSelector` query parameters.
//!
//! This file holds the errors and the label selector's model; `parser.rs` the
//! label selector's lexer and parser; `fields.rs` field selectors (re-exported
//! here, so `selector::FieldSelector` is where callers find it).
//!
//! # Label selectors (`k8s.io/apimachinery/pkg/labels`)
//!
//! [`LabelSelector::parse`] implements kube's lexer and recursive-descent
//! parser token for token, because clients see the parser's own words in the
//! 400 `BadRequest` Status when a selector does not parse. The grammar:
//!
//! ```text
//! selector    := requirement ( "," requirement )*
//! requirement := [ "!" ] KEY
//!              | KEY ( "=" | "==" | "!=" | ">" | "<" ) VALUE
//!              | KEY ( "in" | "notin" ) "(" VALUE ( "," VALUE )* ")"
//! ```
//!
//! Whitespace (space, tab, CR, LF) separates tokens and is otherwise ignored;
//! `in`/`notin` are keywords only where an operator is expected, so `in` can
//! be a key or a value; values may be empty (`a=`, `a in (,b)`). A NUL byte
//! where a token would start ends the input, and inside a token ends that
//! token, because kube's lexer reads NUL as its end-of-input marker. Keys must be
//! label keys (an optional DNS-1123 subdomain prefix of at most 253 characters
//! and `/`, then a name of at most 63 characters matching
//! `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`); values must be label values
//! (at most 63 characters, same character set, may be empty); `>` and `<` need a
//! base-10 `int64`. Requirements are ANDed and kept sorted by key, and
//! [`LabelSelector`]'s `Display` is kube's canonical `String()` (sets printed
//! sorted, `in`/`notin` with spaces around them).
//!
//! The 400 messages are the parser's errors as is; kube-apiserver puts the
//! conversion error of the query parameter straight into
//! `errors.NewBadRequest(err.Error())`. They read, for example:
//!
//! * `unable to parse requirement: <nil>: Invalid value: "-app": name part must consist of alphanumeric characters, ...`
//!   (a bad key; `<nil>` is how kube prints the absent field path),
//! * `unable to parse requirement: values[0][app]: Invalid value: "-x": a valid label must be an empty string or consist of ...`,
//! * `unable to parse requirement: found '', expected: identifier`,
//! * `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt`,
//! * `found ',', expected: !, identifier, or 'end of string'`,
//! * `found 'c', expected: ',' or 'end of string'`,
//! * `found '', expected: identifier after ','`.
//!
//! The key and value texts are those of `k8s.io/apimachinery/pkg/util/validation` in
//! Kubernetes 1.32 (`IsQualifiedName`, `IsValidLabelValue`): `a qualified name ...` and
//! `must be no more than 63 characters` (1.34 reworded them to `a valid label key ...` and
//! `... 63 bytes`).
//!
//! # Field selectors (`k8s.io/apimachinery/pkg/fields`)
//!
//! [`FieldSelector::parse`] splits on unescaped commas, then each term at its
//! first `!=`, `==` or `=`; values are unescaped with kube's `UnescapeValue`
//! (`\\`, `\,` and `\=` are the only escapes; a bare `,` or `=` in a value is
//! an error). There is no whitespace trimming: `a = b` names the field `a `.
//! Parse errors read `invalid selector: '<selector>'; can't understand '<term>'`,
//! `invalid field selector: invalid escape sequence: \x` and
//! `invalid field selector: unescaped character in value: 61` (kube prints the
//! offending character as its code point number).
//!
//! Parsing accepts any field name; which names a resource supports is checked
//! afterwards by the per-kind field label conversion ([`FieldLabels`]), whose
//! error kube also returns as a 400 `BadRequest`:
//!
//! * kinds without their own conversion (`DefaultMetaV1FieldSelectorConversion`,
//!   e.g. ConfigMap, Deployment): `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`;
//! * kinds with their own conversion (Pod, Node, Namespace, Secret, Service,
//!   Event, ReplicationController in `pkg/apis/core/v1/conversion.go`) and
//!   custom resources (`crConverter.ConvertFieldLabel`, with the CRD's
//!   `selectableFields`): `field label not supported: spec.foo`.
//!
//! # Errors
//!
//! [`SelectorError`]'s `Display` is exactly the Status `message` of the 400
//! response; the HTTP layer only wraps it.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::validation::go_quote;

mod fields;
mod parser;

pub use fields::*;
use parser::*;

/// Why a selector was rejected; `Display` is the 400 Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The `labelSelector` parameter does not parse or breaks a label rule.
    #[error("{0}")]
    InvalidLabelSelector(String),
    /// The `fieldSelector` parameter does not parse.
    #[error("{0}")]
    InvalidFieldSelector(String),
    /// The field selector names a field the resource cannot be selected by.
    #[error("{0}")]
    UnsupportedField(String),
}

impl SelectorError {
    /// The Status message (the same as `to_string()`).
    pub fn message(&self) -> &str {
        match self {
            SelectorError::InvalidLabelSelector(m)
            | SelectorError::InvalidFieldSelector(m)
            | SelectorError::UnsupportedField(m) => m,
        }
    }
}

// ---------------------------------------------------------------------------
// Label keys and values (k8s.io/apimachinery/pkg/util/validation, 1.32): the same rules as
// for an object's labels, kept in one place.
// ---------------------------------------------------------------------------

pub use crate::write_validation::LABEL_VALUE_MAX_LENGTH;

/// Problems with `key` as a label key (`validation.IsQualifiedName`).
pub fn label_key_errors(key: &str) -> Vec<String> {
    crate::write_validation::is_qualified_name(key)
}

/// Problems with `value` as a label value (`validation.IsValidLabelValue`).
pub fn label_value_errors(value: &str) -> Vec<String> {
    crate::write_validation::is_valid_label_value(value)
}

/// kube's `field.Invalid(path, value, detail).Error()` for a string value.
fn invalid_field(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// kube's `ErrorList.ToAggregate().Error()`: one error as is, several as `[a, b]`.
fn aggregate(errors: Vec<String>) -> Option<String> {
    let mut unique: Vec<String> = Vec::new();
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

// ---------------------------------------------------------------------------
// Label selector: model and matching
// ---------------------------------------------------------------------------

/// A label selector operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`: also true when the label is absent.
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`: also true when the label is absent.
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>n`: the label's value parsed as `int64` is greater than `n`.
    GreaterThan,
    /// `key<n`
    LessThan,
}

/// One ANDed condition of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated, as kube stores the parsed set.
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted; empty for `Exists` / `DoesNotExist`.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set, seen through `lookup`, satisfies this requirement
    /// (`Requirement.Matches`).
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        let has_value = |value: &str| self.values.iter().any(|v| v == value);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => lookup(&self.key).is_some_and(has_value),
            Operator::NotIn | Operator::NotEquals => !lookup(&self.key).is_some_and(has_value),
            Operator::Exists => lookup(&self.key).is_some(),
            Operator::DoesNotExist => lookup(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(actual)) = lookup(&self.key).map(str::parse::<i64>) else {
                    return false;
                };
                let [bound] = self.values.as_slice() else {
                    return false;
                };
                let Ok(bound) = bound.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan { actual > bound } else { actual < bound }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (operator, parenthesised) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
        };
        f.write_str(operator)?;
        if parenthesised {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if parenthesised {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: requirements ANDed, sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches everything (the empty string).
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// Parses a `labelSelector` value (`labels.Parse`).
    pub fn parse(selector: &str) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Parser::new(selector).parse().map_err(SelectorError::InvalidLabelSelector)?;
        // kube sorts by key with sort.Sort, which is an insertion sort (and so
        // stable) for the handful of requirements real selectors have.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`) as a selector, as
    /// kube's `LabelSelectorAsSelector` makes it: an empty one matches everything. `None`
    /// when it is malformed (an unknown operator, a key or value that does not parse).
    pub fn from_api(selector: &Value) -> Option<LabelSelector> {
        let mut requirements: Vec<String> = selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .map(|labels| labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect())
            .unwrap_or_default();
        for expression in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let key = expression.get("key")?.as_str()?;
            let values: Vec<&str> = expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let values = values.join(",");
            requirements.push(match expression.get("operator")?.as_str()? {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                _ => return None,
            });
        }
        LabelSelector::parse(&requirements.join(",")).ok()
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether an object with these `metadata.labels` matches. Labels whose
    /// value is not a string count as absent (valid objects have none).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches_with(|key| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str))
    }

    /// Whether the object's `metadata.labels` match.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches(object.get("metadata").and_then(|metadata| metadata.get("labels")).and_then(Value::as_object))
    }

    /// Whether a label set, seen through `lookup`, matches.
    pub fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&lookup))
    }

    /// The single value the selector requires for `key`, if it pins one
    /// (`RequiresExactMatch`): the first requirement on `key` decides, and it
    /// must be `=`, `==` or an `in` with one value.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|r| r.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn parse_err(selector: &str) -> String {
        LabelSelector::parse(selector).unwrap_err().to_string()
    }

    fn canonical(selector: &str) -> String {
        LabelSelector::parse(selector).unwrap().to_string()
    }

    #[test]
    fn parses_kube_good_selectors() {
        // From kube's TestSelectorParse (labels/selector_test.go).
        for selector in [
            "",
            "x=a",
            "x=a,y=b,z=c",
            "x = a",
            "x=a,y!=b",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
            "x in (a)",
            "x in (a,,b)",
            "x notin ()",
            "x in (a, b ,c)",
            "x=a  ,   y != b",
            "x=a, y=b",
            "in in (in)",
            "x=in",
            "a-b.c/e-f_g.h=i",
            "example.com/x-y_z.w=v",
            "  x  ",
            "x==a",
            "x<5",
        ] {
            assert!(LabelSelector::parse(selector).is_ok(), "{selector:?}");
        }
    }

    #[test]
    fn canonical_strings_match_kube() {
        assert_eq!(canonical(""), "");
        assert_eq!(canonical("x=a"), "x=a");
        assert_eq!(canonical("z=c, x=a,y=b"), "x=a,y=b,z=c");
        assert_eq!(canonical("x = a"), "x=a");
        assert_eq!(canonical("x==a"), "x==a");
        assert_eq!(canonical("x!=a"), "x!=a");
        assert_eq!(canonical("!x"), "!x");
        assert_eq!(canonical("x"), "x");
        assert_eq!(canonical("x>1,z<5"), "x>1,z<5");
        assert_eq!(canonical("x in (c,a,b,a)"), "x in (a,b,c)");
        assert_eq!(canonical("x notin ()"), "x notin ()");
        assert_eq!(canonical("x in (a,,b)"), "x in (,a,b)");
        assert_eq!(canonical("x in (,)"), "x in ()");
        assert_eq!(canonical("x="), "x=");
        assert_eq!(canonical("in in (in), notin notin (notin)"), "in in (in),notin notin (notin)");
    }

    #[test]
    fn parser_errors_are_kubes() {
        // "|" is not a symbol, so "a||y" is one (invalid) value.
        assert_eq!(
            parse_err("x=a||y=b"),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_MSG}")
        );
        assert_eq!(parse_err("x==a==b"), "found '==', expected: ',' or 'end of string'");
        assert_eq!(parse_err("!x=a"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(parse_err("x=a,"), "found '', expected: identifier after ','");
        assert_eq!(parse_err("x=a,,y=b"), "found ',', expected: identifier after ','");
        assert_eq!(parse_err(",x=a"), "found ',', expected: !, identifier, or 'end of string'");
        assert_eq!(parse_err("=a"), "found '=', expected: !, identifier, or 'end of string'");
        assert_eq!(parse_err("x y"), "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt");
        assert_eq!(parse_err("!"), "unable to parse requirement: found '', expected: identifier");
        assert_eq!(parse_err("!=a"), "found '!=', expected: !, identifier, or 'end of string'");
        assert_eq!(parse_err("x in"), "unable to parse requirement: found '' expected: '('");
        assert_eq!(parse_err("x in (a"), "unable to parse requirement: found '', expected: ',' or ')'");
        assert_eq!(parse_err("x in (a b)"), "unable to parse requirement: found 'b', expected: ',' or ')'");
        assert_eq!(parse_err("x in (,"), "unable to parse requirement: found '', expected: ',', or identifier");
        assert_eq!(parse_err("x in (=)"), "unable to parse requirement: found '=', expected: ',', ')' or identifier");
        assert_eq!(parse_err("x=("), "unable to parse requirement: found '(', expected: identifier");
        assert_eq!(parse_err("x=a b"), "found 'b', expected: ',' or 'end of string'");
        assert_eq!(parse_err("x in (a) y"), "found 'y', expected: ',' or 'end of string'");
        assert_eq!(
            parse_err("x>"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn key_and_value_errors_use_kube_field_paths() {
        assert_eq!(
            parse_err("Foo Bar=1"),
            "unable to parse requirement: found 'Bar', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            parse_err("-x=1"),
            format!("unable to parse requirement: <nil>: Invalid value: \"-x\": {NAME_PART_MSG}")
        );
        assert_eq!(
            parse_err("a/b/c=1"),
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert_eq!(
            parse_err("/x"),
            "unable to parse requirement: <nil>: Invalid value: \"/x\": prefix part must be non-empty"
        );
        assert_eq!(
            parse_err("x/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"x/\": name part must be non-empty; {NAME_PART_MSG}"
            )
        );
        assert_eq!(
            parse_err("Ex.com/x"),
            "unable to parse requirement: <nil>: Invalid value: \"Ex.com/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let long_key = "k".repeat(64);
        assert_eq!(
            parse_err(&long_key),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long_key}\": name part must be no more than 63 characters"
            )
        );
        let long_prefix = format!("{}/x", "p".repeat(254));
        assert_eq!(
            parse_err(&long_prefix),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long_prefix}\": prefix part must be no more than 253 characters"
            )
        );
        assert_eq!(
            parse_err("app=-x"),
            format!("unable to parse requirement: values[0][app]: Invalid value: \"-x\": {VALUE_MSG}")
        );
        let long_value = "v".repeat(64);
        assert_eq!(
            parse_err(&format!("app={long_value}")),
            format!(
                "unable to parse requirement: values[0][app]: Invalid value: \"{long_value}\": must be no more than 63 characters"
            )
        );
        assert_eq!(
            parse_err("app in (ok,-y,-x)"),
            format!(
                "unable to parse requirement: [values[0][app]: Invalid value: \"-x\": {VALUE_MSG}, values[1][app]: Invalid value: \"-y\": {VALUE_MSG}]"
            )
        );
        assert_eq!(
            parse_err("x>a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            parse_err("x>1.5"),
            "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            parse_err("x<-a"),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_MSG}]"
            )
        );
        // An integer that is not a valid label value passes the integer check only.
        assert_eq!(
            parse_err("x>-1"),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_MSG}")
        );
        assert_eq!(
            parse_err("x>99999999999999999999"),
            "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn nul_where_a_token_starts_ends_the_input() {
        assert_eq!(canonical("a=b \u{0}garbage"), "a=b");
        assert_eq!(canonical("\u{0}x"), "");
        assert_eq!(parse_err("a=b, \u{0}x"), "found '', expected: identifier after ','");
        // A NUL read while scanning a symbol is swallowed with it.
        assert_eq!(canonical("a=b,\u{0}x"), "a=b,x");
        // Inside a token, NUL only ends that token.
        assert_eq!(parse_err("a=b\u{0}x"), "found 'x', expected: ',' or 'end of string'");
    }

    #[test]
    fn matching_follows_kube() {
        let labels = json!({"app": "web", "tier": "front", "n": "10", "empty": ""});
        let labels = labels.as_object();
        let matches = |s: &str| LabelSelector::parse(s).unwrap().matches(labels);
        assert!(matches(""));
        assert!(matches("app=web"));
        assert!(matches("app==web"));
        assert!(!matches("app=db"));
        assert!(matches("app!=db"));
        assert!(matches("missing!=x"));
        assert!(!matches("app!=web"));
        assert!(matches("app in (db,web)"));
        assert!(!matches("missing in (db,web)"));
        assert!(matches("app notin (db)"));
        assert!(matches("missing notin (db)"));
        assert!(!matches("app notin (web)"));
        assert!(matches("app"));
        assert!(!matches("missing"));
        assert!(matches("!missing"));
        assert!(!matches("!app"));
        assert!(matches("n>9"));
        assert!(!matches("n>10"));
        assert!(matches("n<11"));
        assert!(!matches("app>1"));
        assert!(!matches("missing<5"));
        assert!(matches("empty="));
        assert!(matches("empty in (,x)"));
        assert!(!matches("app=web,tier=back"));
        assert!(matches("app=web, tier in (front)"));
        assert!(!LabelSelector::parse("x").unwrap().matches(None));
        assert!(LabelSelector::parse("!x").unwrap().matches(None));
        let object = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(LabelSelector::parse("app=web").unwrap().matches_object(&object));
        assert!(!LabelSelector::parse("app=web").unwrap().matches_object(&json!({})));
        // Non-string label values count as absent.
        let odd = json!({"n": 5});
        assert!(!LabelSelector::parse("n").unwrap().matches(odd.as_object()));
    }

    #[test]
    fn exact_label_matches() {
        let selector = LabelSelector::parse("b in (x), a=1, c in (x,y), d!=1").unwrap();
        assert_eq!(selector.requires_exact_match("a"), Some("1"));
        assert_eq!(selector.requires_exact_match("b"), Some("x"));
        assert_eq!(selector.requires_exact_match("c"), None);
        assert_eq!(selector.requires_exact_match("d"), None);
        assert_eq!(selector.requires_exact_match("e"), None);
        assert!(!selector.is_empty());
        assert!(LabelSelector::everything().is_empty());
        assert_eq!(selector.requirements()[0].key(), "a");
        assert_eq!(selector.requirements()[2].values(), ["x", "y"]);
        assert_eq!(selector.requirements()[3].operator(), Operator::NotEquals);
    }

    #[test]
    fn field_selectors_parse_like_kube() {
        let selector = FieldSelector::parse("metadata.name=foo,status.phase!=Running").unwrap();
        assert_eq!(selector.fields(), vec!["metadata.name", "status.phase"]);
        assert_eq!(selector.to_string(), "metadata.name=foo,status.phase!=Running");
        assert_eq!(selector.requires_exact_name(), Some("foo"));
        assert_eq!(selector.requires_exact_namespace(), None);

        // Terms are sorted by their raw text; "==" reads as "=".
        let selector = FieldSelector::parse("b==2,a=1").unwrap();
        assert_eq!(selector.to_string(), "a=1,b=2");
        assert!(FieldSelector::parse("").unwrap().is_empty());
        assert!(FieldSelector::parse(",,").unwrap().is_empty());
        assert_eq!(FieldSelector::parse("a=").unwrap().requirements()[0].value, "");
        assert_eq!(FieldSelector::parse("=a").unwrap().requirements()[0].field, "");
        // No trimming.
        assert_eq!(FieldSelector::parse("a = b").unwrap().requirements()[0].field, "a ");
        // The first operator splits: "a!==b" is a != "=b", which needs escaping.
        assert_eq!(
            FieldSelector::parse("a!==b").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn field_selector_escaping() {
        let selector = FieldSelector::parse(r"a=x\,y\=z\\w,b=2").unwrap();
        assert_eq!(selector.requirements()[0].value, r"x,y=z\w");
        assert_eq!(selector.to_string(), r"a=x\,y\=z\\w,b=2");
        assert_eq!(escape_field_value(r"a\b,c=d"), r"a\\b\,c\=d");
        assert_eq!(unescape_field_value(r"a\\b\,c\=d").unwrap(), r"a\b,c=d");
        assert_eq!(
            FieldSelector::parse(r"a=x\y").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \y"
        );
        assert_eq!(
            FieldSelector::parse(r"a=x\").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            FieldSelector::parse("abc").unwrap_err().to_string(),
            "invalid selector: 'abc'; can't understand 'abc'"
        );
        assert_eq!(
            FieldSelector::parse("x=1,abc").unwrap_err(),
            SelectorError::InvalidFieldSelector("invalid selector: 'x=1,abc'; can't understand 'abc'".to_owned())
        );
    }

    #[test]
    fn field_matching() {
        let object = json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"hostNetwork": true, "replicas": 3},
            "status": {"phase": "Running"}
        });
        let matches = |s: &str| FieldSelector::parse(s).unwrap().matches_object(&object);
        assert!(matches("metadata.name=web"));
        assert!(matches("metadata.name=web,metadata.namespace=default"));
        assert!(!matches("metadata.name=db"));
        assert!(matches("status.phase!=Pending"));
        assert!(matches("spec.hostNetwork=true"));
        assert!(matches("spec.replicas=3"));
        assert!(matches("spec.nodeName="));
        assert!(!matches("spec.nodeName!="));
        let selector = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(selector.matches(|f| (f == "spec.nodeName").then(|| "n1".to_owned())));
        assert!(!selector.matches(|_| None));
    }

    #[test]
    fn field_label_conversion_messages() {
        let selector = FieldSelector::parse("spec.foo=1,metadata.name=x").unwrap();
        assert_eq!(
            selector.convert_labels(&FieldLabels::builtin("", "ConfigMap")).unwrap_err().to_string(),
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        assert_eq!(
            selector.convert_labels(&FieldLabels::builtin("", "Pod")).unwrap_err().to_string(),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            FieldSelector::parse("metadata.namespace=x")
                .unwrap()
                .convert_labels(&FieldLabels::builtin("", "Node"))
                .unwrap_err()
                .to_string(),
            "field label not supported: metadata.namespace"
        );
        let pods = FieldSelector::parse("spec.host=n1,status.phase=Running")
            .unwrap()
            .convert_labels(&FieldLabels::builtin("", "Pod"))
            .unwrap();
        assert_eq!(pods.to_string(), "spec.nodeName=n1,status.phase=Running");
        assert!(
            FieldSelector::parse("metadata.namespace=a")
                .unwrap()
                .convert_labels(&FieldLabels::builtin("apps", "Deployment"))
                .is_ok()
        );
        let cr = FieldLabels::custom_resource(false, &["spec.color"]);
        assert!(cr.convert("spec.color").is_ok());
        assert_eq!(
            cr.convert("metadata.namespace").unwrap_err().to_string(),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            FieldLabels::MetadataOnly.convert("a\"b").unwrap_err().to_string(),
            r#""a\"b" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
    }
}
