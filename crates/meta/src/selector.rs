//! Label and field selectors, parsed, validated and matched as kube-apiserver
//! does for the `labelSelector` and `fieldSelector` query parameters.
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

// ---------------------------------------------------------------------------
// Label selector: kube's lexer and parser
// ---------------------------------------------------------------------------

/// A lexer token (`labels.Token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// kube's `string2token`: the literal tokens.
fn literal_token(literal: &str) -> Option<Token> {
    Some(match literal {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// kube's byte-oriented lexer. `read` returns 0 at the end, so a NUL byte in
/// the input behaves like the end of the string, exactly as in kube.
struct Lexer<'a> {
    input: &'a [u8],
    position: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.input.get(self.position) {
            Some(&byte) => {
                self.position += 1;
                byte
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.position -= 1;
    }

    fn scan_identifier_or_keyword(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if is_special_symbol(byte) || is_whitespace(byte) {
                self.unread();
                break;
            }
            buffer.push(byte);
        }
        // Identifiers end at ASCII bytes, so they are whole UTF-8 sequences.
        let literal = String::from_utf8_lossy(&buffer).into_owned();
        match literal_token(&literal) {
            Some(token) => (token, literal),
            None => (Token::Identifier, literal),
        }
    }

    /// The longest run of special symbols that still forms a token.
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut buffer = String::new();
        let mut last: Option<(Token, String)> = None;
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if !is_special_symbol(byte) {
                self.unread();
                break;
            }
            buffer.push(char::from(byte));
            if let Some(token) = literal_token(&buffer) {
                last = Some((token, buffer.clone()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| (Token::Error, format!("error expected: keyword found '{buffer}'")))
    }

    fn lex(&mut self) -> (Token, String) {
        let mut byte = self.read();
        while is_whitespace(byte) {
            byte = self.read();
        }
        if byte == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(byte) { self.scan_special_symbol() } else { self.scan_identifier_or_keyword() }
    }
}

/// Whether `in`/`notin` are read as operators or as plain identifiers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn new(selector: &str) -> Parser {
        let mut lexer = Lexer { input: selector.as_bytes(), position: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let done = item.0 == Token::EndOfString;
            items.push(item);
            if done {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn item(&self, index: usize, context: Context) -> (Token, String) {
        let (token, literal) = self.items.get(index).cloned().unwrap_or((Token::EndOfString, String::new()));
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        self.item(self.position - 1, context)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement =
                        self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!("found '{next_literal}', expected: identifier after ','"));
                            }
                        }
                        _ => {
                            return Err(format!("found '{literal}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!("found '{literal}', expected: !, identifier, or 'end of string'"));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = inferred {
            return new_requirement(key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        // kube validates the key against a nil field path, printed `<nil>`.
        let key_errors = label_key_errors(&literal);
        if !key_errors.is_empty() {
            return Err(invalid_field("<nil>", &literal, &key_errors.join("; ")));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator != Some(Operator::DoesNotExist) {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{literal}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (closing, _) = self.consume(Context::Values);
                if closing != Token::ClosedPar {
                    // kube reports the literal seen before the list here.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    /// A comma-separated list where empty items are empty-string values.
    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        values.insert(String::new());
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        values.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(BTreeSet::from([literal]))
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// kube's `NewRequirement`: validates the operator's arity, `Gt`/`Lt`
/// integers and every value, and aggregates the problems.
fn new_requirement(key: String, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    let key_errors = label_key_errors(&key);
    if !key_errors.is_empty() {
        errors.push(invalid_field("key", &key, &key_errors.join("; ")));
    }
    // The arity checks cannot fail for parsed input; they keep the type honest.
    let arity_problem = match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            Some("for 'in', 'notin' operators, values set can't be empty")
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            Some("exact-match compatibility requires one single value")
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Some("values set must be empty for exists and does not exist")
        }
        Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
            Some("for 'Gt', 'Lt' operators, exactly one value is required")
        }
        _ => None,
    };
    if let Some(problem) = arity_problem {
        errors.push(format!("values: Invalid value: {values:?}: {problem}"));
    }
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(invalid_field(
                    &format!("values[{i}]"),
                    value,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let value_errors = label_value_errors(value);
        if !value_errors.is_empty() {
            errors.push(invalid_field(&format!("values[{i}][{key}]"), value, &value_errors.join("; ")));
        }
    }
    match aggregate(errors) {
        Some(message) => Err(message),
        None => Ok(Requirement { key, operator, values }),
    }
}

// ---------------------------------------------------------------------------
// Field selectors (k8s.io/apimachinery/pkg/fields)
// ---------------------------------------------------------------------------

/// A field selector operator. `==` parses to [`FieldOperator::Equals`], as
/// kube keeps no difference between `=` and `==` for fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`
    Equals,
    /// `field!=value`
    NotEquals,
}

/// One ANDed term of a field selector, with its value unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The literal value to compare with.
    pub value: String,
}

impl FieldRequirement {
    /// Whether the field's value satisfies the term. A field the object does
    /// not have reads as the empty string, as kube's `Fields.Get` does.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let equal = actual.unwrap_or("") == self.value;
        match self.operator {
            FieldOperator::Equals => equal,
            FieldOperator::NotEquals => !equal,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{operator}{}", self.field, escape_field_value(&self.value))
    }
}

/// A parsed field selector: terms ANDed, in kube's order (sorted by their
/// raw text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// kube's `fields.EscapeValue`: `\` to `\\`, then `,` to `\,` and `=` to `\=`.
pub fn escape_field_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// kube's `fields.UnescapeValue`.
pub fn unescape_field_value(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                // kube formats the rune with %v, i.e. as its code point number.
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                )));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err(SelectorError::InvalidFieldSelector(
            "invalid field selector: invalid escape sequence: \\".to_owned(),
        ));
    }
    Ok(out)
}

/// kube's `splitTerms`: split on commas that are not escaped.
fn split_field_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// kube's `splitTerm`: the field, operator and raw value at the first
/// operator; `==` is tried before `=` so it does not leave `=` in the value.
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    const OPERATORS: [(&str, FieldOperator); 3] =
        [("!=", FieldOperator::NotEquals), ("==", FieldOperator::Equals), ("=", FieldOperator::Equals)];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, operator) in OPERATORS {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// Parses a `fieldSelector` value (`fields.ParseSelector`).
    pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_field_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|term| !term.is_empty()) {
            let Some((field, operator, raw_value)) = split_field_term(term) else {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                )));
            };
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                operator,
                value: unescape_field_value(raw_value)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, in kube's order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The field names the selector uses, in term order.
    pub fn fields(&self) -> Vec<&str> {
        self.requirements.iter().map(|r| r.field.as_str()).collect()
    }

    /// Whether an object matches, with `get` mapping a field path to the
    /// object's value for it as kube's per-kind field sets do (`None` when
    /// the object has no such field, which compares as the empty string).
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| r.matches(get(&r.field).as_deref()))
    }

    /// Whether a JSON object matches, reading each field by its dotted path
    /// (`metadata.name` is `object["metadata"]["name"]`). Strings compare as
    /// is, booleans and numbers as their JSON text, anything else as absent.
    /// Fields kube derives rather than reads (a pod's `status.podIP` from
    /// `status.podIPs`, `spec.hostNetwork` defaulting to `false`) need
    /// [`FieldSelector::matches`] with a kind-aware lookup.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches(|path| {
            let value = path.split('.').try_fold(object, |current, segment| current.get(segment))?;
            match value {
                Value::String(s) => Some(s.clone()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        })
    }

    /// The value the selector requires for `field` (`RequiresExactMatch`):
    /// the first `=` / `==` term on that field.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// The object name the selector pins with `metadata.name=X`, which lets a
    /// watch be served from a per-name index.
    pub fn requires_exact_name(&self) -> Option<&str> {
        self.requires_exact_match("metadata.name")
    }

    /// The namespace the selector pins with `metadata.namespace=X`.
    pub fn requires_exact_namespace(&self) -> Option<&str> {
        self.requires_exact_match("metadata.namespace")
    }

    /// Checks every field against what the resource supports and applies
    /// kube's renames (`Selector.Transform` with the kind's field label
    /// conversion). The first unsupported field, in term order, is the error.
    pub fn convert_labels(&self, labels: &FieldLabels) -> Result<FieldSelector, SelectorError> {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for requirement in &self.requirements {
            let field = labels.convert(&requirement.field)?;
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                operator: requirement.operator,
                value: requirement.value.clone(),
            });
        }
        Ok(FieldSelector { requirements })
    }
}

impl fmt::Display for FieldSelector {
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

/// The field labels a resource can be selected by, and how kube words the
/// rejection of any other (its field label conversion function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldLabels {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, used by every built-in
    /// kind that registers no conversion of its own: `metadata.name` and
    /// `metadata.namespace` (also for cluster-scoped kinds), rejecting others
    /// with `"<field>" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    MetadataOnly,
    /// A kind's own conversion function, or a custom resource's: exactly the
    /// listed fields, `aliases` renamed to their canonical field, others
    /// rejected with `field label not supported: <field>`.
    Listed {
        /// The accepted field labels.
        supported: Vec<String>,
        /// Accepted legacy names and the field they stand for.
        aliases: Vec<(String, String)>,
    },
}

impl FieldLabels {
    fn listed(supported: &[&str], aliases: &[(&str, &str)]) -> FieldLabels {
        FieldLabels::Listed {
            supported: supported.iter().map(|s| (*s).to_owned()).collect(),
            aliases: aliases.iter().map(|(alias, field)| ((*alias).to_owned(), (*field).to_owned())).collect(),
        }
    }

    /// The field labels of a built-in kind, from
    /// `k8s.io/kubernetes/pkg/apis/core/v1/conversion.go` (core group, `""`).
    /// Kinds of other groups are answered with [`FieldLabels::MetadataOnly`];
    /// a few of them (e.g. `apps/v1` ReplicaSet, `batch/v1` Job) register
    /// their own conversions in kube that are not reproduced here.
    pub fn builtin(group: &str, kind: &str) -> FieldLabels {
        if !group.is_empty() {
            return FieldLabels::MetadataOnly;
        }
        match kind {
            "Pod" => FieldLabels::listed(
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.podIPs",
                    "status.nominatedNodeName",
                ],
                // Old v1 clients send spec.host.
                &[("spec.host", "spec.nodeName")],
            ),
            "Node" => FieldLabels::listed(&["metadata.name", "spec.unschedulable"], &[]),
            "ReplicationController" => {
                FieldLabels::listed(&["metadata.name", "metadata.namespace", "status.replicas"], &[])
            }
            "Event" => FieldLabels::listed(
                &[
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "source",
                    "type",
                    "metadata.namespace",
                    "metadata.name",
                ],
                &[],
            ),
            "Namespace" => FieldLabels::listed(&["status.phase", "metadata.name"], &[]),
            "Secret" => FieldLabels::listed(&["type", "metadata.namespace", "metadata.name"], &[]),
            "Service" => {
                FieldLabels::listed(&["metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"], &[])
            }
            _ => FieldLabels::MetadataOnly,
        }
    }

    /// The field labels of a custom resource (`crConverter.ConvertFieldLabel`):
    /// `metadata.name`, `metadata.namespace` when namespaced, and the CRD
    /// version's `selectableFields` JSON paths (without the leading dot).
    pub fn custom_resource(namespaced: bool, selectable_fields: &[&str]) -> FieldLabels {
        let mut supported = vec!["metadata.name"];
        if namespaced {
            supported.push("metadata.namespace");
        }
        supported.extend_from_slice(selectable_fields);
        FieldLabels::listed(&supported, &[])
    }

    /// The canonical name of `field`, or kube's rejection of it.
    pub fn convert<'a>(&'a self, field: &'a str) -> Result<&'a str, SelectorError> {
        match self {
            FieldLabels::MetadataOnly => match field {
                "metadata.name" | "metadata.namespace" => Ok(field),
                _ => Err(SelectorError::UnsupportedField(format!(
                    "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                    go_quote(field)
                ))),
            },
            FieldLabels::Listed { supported, aliases } => {
                if supported.iter().any(|s| s == field) {
                    return Ok(field);
                }
                if let Some((_, canonical)) = aliases.iter().find(|(alias, _)| alias == field) {
                    return Ok(canonical);
                }
                Err(SelectorError::UnsupportedField(format!("field label not supported: {field}")))
            }
        }
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
