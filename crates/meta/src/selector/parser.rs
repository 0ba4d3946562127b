//! kube's label selector lexer and parser (`labels.Parse` in k8s.io/apimachinery), byte for
//! byte, so that every selector kube refuses is refused here with the same message.

use super::*;

// ---------------------------------------------------------------------------
// Label selector: kube's lexer and parser
// ---------------------------------------------------------------------------

/// A lexer token (`labels.Token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
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
pub(super) fn literal_token(literal: &str) -> Option<Token> {
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

pub(super) fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

pub(super) fn is_special_symbol(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// kube's byte-oriented lexer. `read` returns 0 at the end, so a NUL byte in
/// the input behaves like the end of the string, exactly as in kube.
pub(super) struct Lexer<'a> {
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
pub(super) enum Context {
    KeyAndOperator,
    Values,
}

pub(super) struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

pub(super) const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    pub(super) fn new(selector: &str) -> Parser {
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

    pub(super) fn parse(&mut self) -> Result<Vec<Requirement>, String> {
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
pub(super) fn new_requirement(key: String, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
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
