//! Go's `encoding/json` errors for the continue token's JSON.
//!
//! kube-apiserver unmarshals the decoded token into its `continueToken`
//! struct with `json.Unmarshal` and hands the error text to the client
//! (`invalid character 'x' looking for beginning of value`, `json: cannot
//! unmarshal string into Go struct field continueToken.rv of type int64`).
//! To say the same words, this checks the syntax as Go's scanner does (the
//! first offending byte, the end of input fed as one space) and then matches
//! fields as Go does (exact name first, else case-insensitive; the first type
//! error wins; `null` leaves a field alone).

use listwatch_gocompat::json::{JsonKind, quote_char, syntax_error};

/// The token's fields as Go decodes them; `None` when absent or `null`.
#[derive(Default)]
pub(super) struct TokenFields {
    pub(super) version: Option<String>,
    pub(super) resource_version: Option<i64>,
    pub(super) start: Option<String>,
}

/// A value's kind and its raw bytes.
struct RawValue<'a> {
    kind: JsonKind,
    raw: &'a [u8],
}

/// A recursive-descent JSON checker that reports the first error exactly as
/// Go's `encoding/json` scanner does. Go checks the whole input before
/// decoding, and at the end of the input feeds its state machine one space,
/// so an input cut inside a number or literal reports that space.
struct JsonChecker<'a> {
    data: &'a [u8],
    position: usize,
}

const UNEXPECTED_END: &str = "unexpected end of JSON input";

impl<'a> JsonChecker<'a> {
    fn syntax_error(byte: Option<u8>, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(byte.unwrap_or(b' ')))
    }

    fn peek(&self) -> Option<u8> {
        self.data.get(self.position).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.position += 1;
        }
    }

    /// One value, starting after optional whitespace.
    fn value(&mut self) -> Result<RawValue<'a>, String> {
        self.skip_space();
        let start = self.position;
        let kind = match self.peek() {
            None => return Err(UNEXPECTED_END.to_owned()),
            Some(b'{') => {
                self.position += 1;
                self.object_members(|_, _| {})?;
                JsonKind::Object
            }
            Some(b'[') => {
                self.position += 1;
                self.array()?;
                JsonKind::Array
            }
            Some(b'"') => {
                self.string()?;
                JsonKind::String
            }
            Some(b'-' | b'0'..=b'9') => {
                self.number()?;
                JsonKind::Number
            }
            Some(b't') => {
                self.literal(b"true")?;
                JsonKind::Bool
            }
            Some(b'f') => {
                self.literal(b"false")?;
                JsonKind::Bool
            }
            Some(b'n') => {
                self.literal(b"null")?;
                JsonKind::Null
            }
            byte => return Err(Self::syntax_error(byte, "looking for beginning of value")),
        };
        Ok(RawValue { kind, raw: &self.data[start..self.position] })
    }

    /// The members of an object whose `{` was consumed, handed to `member`.
    fn object_members(&mut self, mut member: impl FnMut(&'a [u8], RawValue<'a>)) -> Result<(), String> {
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.position += 1;
            return Ok(());
        }
        loop {
            self.skip_space();
            let key_start = self.position;
            match self.peek() {
                Some(b'"') => self.string()?,
                None => return Err(UNEXPECTED_END.to_owned()),
                byte => {
                    return Err(Self::syntax_error(byte, "looking for beginning of object key string"));
                }
            }
            let key = &self.data[key_start..self.position];
            self.skip_space();
            match self.peek() {
                Some(b':') => self.position += 1,
                None => return Err(UNEXPECTED_END.to_owned()),
                byte => return Err(Self::syntax_error(byte, "after object key")),
            }
            let value = self.value()?;
            member(key, value);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    return Ok(());
                }
                None => return Err(UNEXPECTED_END.to_owned()),
                byte => return Err(Self::syntax_error(byte, "after object key:value pair")),
            }
        }
    }

    /// The rest of an array whose `[` was consumed.
    fn array(&mut self) -> Result<(), String> {
        self.skip_space();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(());
                }
                None => return Err(UNEXPECTED_END.to_owned()),
                byte => return Err(Self::syntax_error(byte, "after array element")),
            }
        }
    }

    /// A string, starting at its opening quote.
    fn string(&mut self) -> Result<(), String> {
        self.position += 1;
        loop {
            let Some(byte) = self.peek() else {
                return Err(UNEXPECTED_END.to_owned());
            };
            self.position += 1;
            match byte {
                b'"' => return Ok(()),
                b'\\' => match self.peek() {
                    Some(b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"') => self.position += 1,
                    Some(b'u') => {
                        self.position += 1;
                        for _ in 0..4 {
                            match self.peek() {
                                Some(b) if b.is_ascii_hexdigit() => self.position += 1,
                                byte => {
                                    return Err(Self::syntax_error(byte, "in \\u hexadecimal character escape"));
                                }
                            }
                        }
                    }
                    byte => return Err(Self::syntax_error(byte, "in string escape code")),
                },
                byte if byte < 0x20 => return Err(Self::syntax_error(Some(byte), "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
    }

    /// A number; it ends at the first byte that cannot continue it.
    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => self.digits(),
            byte => return Err(Self::syntax_error(byte, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.position += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Self::syntax_error(self.peek(), "after decimal point in numeric literal"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.position += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Self::syntax_error(self.peek(), "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), String> {
        self.position += 1;
        for &expected in &word[1..] {
            let byte = self.peek();
            if byte != Some(expected) {
                let context =
                    format!("in literal {} (expecting {})", String::from_utf8_lossy(word), quote_char(expected));
                return Err(Self::syntax_error(byte, &context));
            }
            self.position += 1;
        }
        Ok(())
    }
}

/// Decodes a JSON string literal the way Go does (invalid UTF-8 and lone
/// surrogates become U+FFFD). The literal was already checked.
fn unquote_json_string(raw: &[u8]) -> String {
    let inner = &raw[1..raw.len() - 1];
    let mut bytes = Vec::with_capacity(inner.len());
    let mut i = 0;
    let hex_at = |at: usize| -> u32 {
        u32::from_str_radix(std::str::from_utf8(&inner[at..at + 4]).unwrap_or("fffd"), 16).unwrap_or(0xFFFD)
    };
    while i < inner.len() {
        if inner[i] != b'\\' {
            bytes.push(inner[i]);
            i += 1;
            continue;
        }
        let escaped = inner[i + 1];
        i += 2;
        let c = match escaped {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = hex_at(i);
                i += 4;
                let is_high = (0xD800..0xDC00).contains(&first);
                let low = (is_high && inner.get(i..i + 2) == Some(b"\\u".as_slice()))
                    .then(|| hex_at(i + 2))
                    .filter(|low| (0xDC00..0xE000).contains(low));
                match low {
                    Some(low) => {
                        i += 6;
                        char::from_u32(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)).unwrap_or('\u{fffd}')
                    }
                    None => char::from_u32(first).unwrap_or('\u{fffd}'),
                }
            }
            other => char::from(other),
        };
        let mut buffer = [0; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Go's field matching: the exact name, else a case-insensitive match.
fn token_field(key: &str) -> Option<&'static str> {
    const FIELDS: [&str; 3] = ["v", "rv", "start"];
    if let Some(field) = FIELDS.iter().find(|f| **f == key) {
        return Some(field);
    }
    let folded: String = key
        .chars()
        .map(|c| match c {
            '\u{212A}' => 'k', // KELVIN SIGN folds to k in Go
            '\u{17F}' => 's',  // LATIN SMALL LETTER LONG S folds to s
            c => c.to_ascii_lowercase(),
        })
        .collect();
    FIELDS.iter().find(|f| **f == folded).copied()
}

/// Unmarshals the token JSON into its fields as Go's `json.Unmarshal` into
/// `continueToken` would, with Go's error text.
pub(super) fn decode_token_json(data: &[u8]) -> Result<TokenFields, String> {
    // Go's Unmarshal scans the whole input for syntax first, refusing nesting past 10,000
    // levels. The checker below recurses once per level, and a token is client input: deeper
    // nesting overflowed the stack. The iterative scan finds the first error; when it is the
    // depth, that is Go's answer, otherwise the checker stops at the same byte, no deeper.
    if let Some(error) = syntax_error(data)
        && error.ends_with("exceeded max depth")
    {
        return Err(error);
    }
    let mut checker = JsonChecker { data, position: 0 };
    checker.skip_space();
    let mut members: Vec<(&[u8], RawValue<'_>)> = Vec::new();
    let top_kind = if checker.peek() == Some(b'{') {
        checker.position += 1;
        checker.object_members(|key, value| members.push((key, value)))?;
        JsonKind::Object
    } else {
        checker.value()?.kind
    };
    checker.skip_space();
    if let Some(byte) = checker.peek() {
        return Err(JsonChecker::syntax_error(Some(byte), "after top-level value"));
    }
    match top_kind {
        JsonKind::Object => {}
        JsonKind::Null => return Ok(TokenFields::default()),
        kind => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type storage.continueToken",
                kind.go_name()
            ));
        }
    }

    let mut fields = TokenFields::default();
    let mut first_error: Option<String> = None;
    for (raw_key, value) in members {
        let key = unquote_json_string(raw_key);
        let Some(field) = token_field(&key) else {
            continue;
        };
        let type_error = |found: String, go_type: &str| {
            format!("json: cannot unmarshal {found} into Go struct field continueToken.{field} of type {go_type}")
        };
        let error = match (field, value.kind) {
            (_, JsonKind::Null) => None,
            ("rv", JsonKind::Number) => {
                let literal = String::from_utf8_lossy(value.raw);
                match literal.parse::<i64>() {
                    Ok(rv) => {
                        fields.resource_version = Some(rv);
                        None
                    }
                    Err(_) => Some(type_error(format!("number {literal}"), "int64")),
                }
            }
            ("rv", kind) => Some(type_error(kind.go_name().to_owned(), "int64")),
            (_, JsonKind::String) => {
                let text = unquote_json_string(value.raw);
                if field == "v" {
                    fields.version = Some(text);
                } else {
                    fields.start = Some(text);
                }
                None
            }
            (_, kind) => Some(type_error(kind.go_name().to_owned(), "string")),
        };
        if first_error.is_none() {
            first_error = error;
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(fields),
    }
}
