//! Go's `encoding/json`, where clients see it: the texts of its errors, which kube-apiserver
//! passes on in the 400s of bodies it cannot decode (`couldn't get version/kind; json parse
//! error: invalid character '}' looking for beginning of value`), and the bytes it writes where
//! kube stores or hands out JSON text it wrote itself (continue tokens, FieldsV1 keys, the
//! `last-applied-configuration` annotation).
//!
//! * [`syntax_error`]: Go's `checkValid`, a byte-at-a-time state machine like Go's scanner, so
//!   the first offending byte and the words around it are Go's. It keeps an explicit stack, so
//!   deeply nested input cannot overflow ours; past Go's 10,000 levels it fails as Go does.
//!   [`quote_char`] is how the scanner shows a byte.
//! * [`type_error`]: `UnmarshalTypeError`, for a value of the wrong JSON type
//!   (`json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of
//!   type int64`).
//! * [`JsonKind`] and [`json_kind`]: Go's word for a JSON value's kind in those messages.
//! * [`quote`], [`push_quoted`], [`marshal`] and [`number`]: JSON text as Go writes it, with
//!   [`Escaping`] saying which of Go's two writers (they differ in `\b` and `\f`).

use serde_json::Value;

use crate::quote::go_quote;

mod write;

pub use write::{Escaping, marshal, number, push_quoted, quote};

/// Go's `maxNestingDepth`.
const MAX_NESTING_DEPTH: usize = 10_000;

/// Where the scanner is (Go's `scanner.step` functions).
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    /// After `{`: a key or `}`.
    BeginKeyOrEmpty,
    /// After `,` in an object: a key.
    BeginKey,
    /// After `[`: a value or `]`.
    BeginValueOrEmpty,
    EndValue,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    Zero,
    Digits,
    Dot,
    DotDigits,
    Exp,
    ExpSign,
    ExpDigits,
    Literal(&'static [u8], usize),
    /// Only whitespace may follow the top-level value.
    End,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    ObjectKey,
    ObjectValue,
    Array,
}

/// Go's `quoteChar`: how the scanner shows the offending byte, in single quotes and escaped as
/// `strconv.Quote` would (Go converts the byte to the rune of the same number: 0xC3 is `'Ã'`).
pub fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        _ => {
            let quoted = go_quote(&char::from(c).to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// The message of the `SyntaxError` Go's `json.Unmarshal` returns for `data`, or `None` when
/// `data` is one well-formed JSON value.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut stack: Vec<Container> = Vec::new();
    let mut state = State::BeginValue;
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        // Each arm either consumes `c` (falls through to `i += 1`) or moves to another state
        // and looks at `c` again (`continue`).
        state = match state {
            State::BeginValue | State::BeginValueOrEmpty | State::BeginKeyOrEmpty | State::BeginKey if is_space(c) => {
                state
            }
            State::BeginKeyOrEmpty | State::BeginKey => match c {
                b'}' if state == State::BeginKeyOrEmpty => {
                    stack.pop();
                    State::EndValue
                }
                b'"' => State::InString,
                _ => return Some(invalid(c, "looking for beginning of object key string")),
            },
            State::BeginValueOrEmpty if c == b']' => {
                stack.pop();
                State::EndValue
            }
            State::BeginValue | State::BeginValueOrEmpty => match c {
                b'{' | b'[' => {
                    if stack.len() >= MAX_NESTING_DEPTH {
                        return Some(invalid(c, "exceeded max depth"));
                    }
                    if c == b'{' {
                        stack.push(Container::ObjectKey);
                        State::BeginKeyOrEmpty
                    } else {
                        stack.push(Container::Array);
                        State::BeginValueOrEmpty
                    }
                }
                b'"' => State::InString,
                b'-' => State::Neg,
                b'0' => State::Zero,
                b'1'..=b'9' => State::Digits,
                b't' => State::Literal(b"true", 1),
                b'f' => State::Literal(b"false", 1),
                b'n' => State::Literal(b"null", 1),
                _ => return Some(invalid(c, "looking for beginning of value")),
            },
            State::EndValue => {
                if is_space(c) {
                    i += 1;
                    continue;
                }
                match stack.last_mut() {
                    None => {
                        state = State::End;
                        continue;
                    }
                    Some(top @ Container::ObjectKey) => {
                        if c != b':' {
                            return Some(invalid(c, "after object key"));
                        }
                        *top = Container::ObjectValue;
                        State::BeginValue
                    }
                    Some(top @ Container::ObjectValue) => match c {
                        b',' => {
                            *top = Container::ObjectKey;
                            State::BeginKey
                        }
                        b'}' => {
                            stack.pop();
                            State::EndValue
                        }
                        _ => return Some(invalid(c, "after object key:value pair")),
                    },
                    Some(Container::Array) => match c {
                        b',' => State::BeginValue,
                        b']' => {
                            stack.pop();
                            State::EndValue
                        }
                        _ => return Some(invalid(c, "after array element")),
                    },
                }
            }
            State::End => {
                if !is_space(c) {
                    return Some(invalid(c, "after top-level value"));
                }
                State::End
            }
            State::InString => match c {
                b'"' => State::EndValue,
                b'\\' => State::InStringEsc,
                c if c < 0x20 => return Some(invalid(c, "in string literal")),
                _ => State::InString,
            },
            State::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                b'u' => State::InStringEscU(0),
                _ => return Some(invalid(c, "in string escape code")),
            },
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Some(invalid(c, "in \\u hexadecimal character escape"));
                }
                if n == 3 { State::InString } else { State::InStringEscU(n + 1) }
            }
            State::Neg => match c {
                b'0' => State::Zero,
                b'1'..=b'9' => State::Digits,
                _ => return Some(invalid(c, "in numeric literal")),
            },
            State::Zero | State::Digits => match c {
                b'0'..=b'9' if state == State::Digits => State::Digits,
                b'.' => State::Dot,
                b'e' | b'E' => State::Exp,
                _ => {
                    state = State::EndValue;
                    continue;
                }
            },
            State::Dot => match c {
                b'0'..=b'9' => State::DotDigits,
                _ => return Some(invalid(c, "after decimal point in numeric literal")),
            },
            State::DotDigits => match c {
                b'0'..=b'9' => State::DotDigits,
                b'e' | b'E' => State::Exp,
                _ => {
                    state = State::EndValue;
                    continue;
                }
            },
            State::Exp => match c {
                b'+' | b'-' => State::ExpSign,
                b'0'..=b'9' => State::ExpDigits,
                _ => return Some(invalid(c, "in exponent of numeric literal")),
            },
            State::ExpSign => match c {
                b'0'..=b'9' => State::ExpDigits,
                _ => return Some(invalid(c, "in exponent of numeric literal")),
            },
            State::ExpDigits => match c {
                b'0'..=b'9' => State::ExpDigits,
                _ => {
                    state = State::EndValue;
                    continue;
                }
            },
            State::Literal(word, n) => {
                if c != word[n] {
                    let name = std::str::from_utf8(word).unwrap_or("");
                    return Some(invalid(c, &format!("in literal {name} (expecting {})", quote_char(word[n]))));
                }
                if n + 1 == word.len() { State::EndValue } else { State::Literal(word, n + 1) }
            }
        };
        i += 1;
    }
    // At the end only a finished top-level value (a number may end here) is whole.
    let complete = stack.is_empty()
        && matches!(
            state,
            State::End | State::EndValue | State::Zero | State::Digits | State::DotDigits | State::ExpDigits
        );
    (!complete).then(|| "unexpected end of JSON input".to_owned())
}

/// The kinds of JSON value, as Go's `UnmarshalTypeError` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonKind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

impl JsonKind {
    /// The kind of `value`.
    pub fn of(value: &Value) -> JsonKind {
        match value {
            Value::Null => JsonKind::Null,
            Value::Bool(_) => JsonKind::Bool,
            Value::Number(_) => JsonKind::Number,
            Value::String(_) => JsonKind::String,
            Value::Array(_) => JsonKind::Array,
            Value::Object(_) => JsonKind::Object,
        }
    }

    /// Go's word for the kind (`UnmarshalTypeError.Value`): `object`, `array`, `string`,
    /// `number`, `bool`, `null`.
    pub fn go_name(self) -> &'static str {
        match self {
            JsonKind::Object => "object",
            JsonKind::Array => "array",
            JsonKind::String => "string",
            JsonKind::Number => "number",
            JsonKind::Bool => "bool",
            JsonKind::Null => "null",
        }
    }
}

/// Go's word for the kind of a JSON value in `UnmarshalTypeError`s (`json: cannot unmarshal
/// string into ...`).
pub fn json_kind(value: &Value) -> &'static str {
    JsonKind::of(value).go_name()
}

/// `UnmarshalTypeError.Error()`: `value` is what was found (`string`, or `number 1.5` for a
/// number that does not fit an integer), `go_struct` and `field` where (the innermost Go struct
/// and the dotted JSON path), `go_type` the Go type expected. An empty `go_struct` and `field`
/// give the `Go value of type` form.
pub fn type_error(value: &str, go_struct: &str, field: &str, go_type: &str) -> String {
    if go_struct.is_empty() && field.is_empty() {
        return format!("json: cannot unmarshal {value} into Go value of type {go_type}");
    }
    format!("json: cannot unmarshal {value} into Go struct field {go_struct}.{field} of type {go_type}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_documents() {
        for good in [
            "{}",
            " [ ] ",
            "null",
            "0",
            "-0.5e+10",
            "12",
            "\"a\\u00e9\\n\"",
            "{\"a\":[1,true,false,null,{\"b\":\"c\"}]}",
            "\"é\"",
        ] {
            assert_eq!(syntax_error(good.as_bytes()), None, "{good}");
        }
    }

    #[test]
    fn go_messages() {
        let cases = [
            ("", "unexpected end of JSON input"),
            ("   ", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("{\"a\":1", "unexpected end of JSON input"),
            ("-", "unexpected end of JSON input"),
            ("1.", "unexpected end of JSON input"),
            ("tru", "unexpected end of JSON input"),
            ("{\"a\":}", "invalid character '}' looking for beginning of value"),
            ("[1,]", "invalid character ']' looking for beginning of value"),
            ("{a:1}", "invalid character 'a' looking for beginning of object key string"),
            ("{\"a\":1,}", "invalid character '}' looking for beginning of object key string"),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            ("{\"a\":1 \"b\"}", "invalid character '\"' after object key:value pair"),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("01", "invalid character '1' after top-level value"),
            ("-x", "invalid character 'x' in numeric literal"),
            ("1.x", "invalid character 'x' after decimal point in numeric literal"),
            ("1ex", "invalid character 'x' in exponent of numeric literal"),
            ("1e+x", "invalid character 'x' in exponent of numeric literal"),
            ("trUe", "invalid character 'U' in literal true (expecting 'u')"),
            ("nul1", "invalid character '1' in literal null (expecting 'l')"),
            ("\"a\u{1}\"", "invalid character '\\x01' in string literal"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            ("\"\\u12g4\"", "invalid character 'g' in \\u hexadecimal character escape"),
            ("'a'", "invalid character '\\'' looking for beginning of value"),
            ("\n\t<", "invalid character '<' looking for beginning of value"),
            ("é", "invalid character 'Ã' looking for beginning of value"),
        ];
        for (input, message) in cases {
            assert_eq!(syntax_error(input.as_bytes()).as_deref(), Some(message), "{input:?}");
        }
        let deep = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert_eq!(syntax_error(deep.as_bytes()).as_deref(), Some("invalid character '[' exceeded max depth"));
        assert_eq!(
            syntax_error("[".repeat(3_000_000).as_bytes()).as_deref(),
            Some("invalid character '[' exceeded max depth")
        );
    }

    #[test]
    fn type_errors() {
        assert_eq!(
            type_error("string", "DeleteOptions", "gracePeriodSeconds", "int64"),
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
        );
        assert_eq!(
            type_error("array", "", "", "map[string]interface {}"),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
    }

    #[test]
    fn kinds_have_go_names() {
        use serde_json::json;
        let cases = [
            (json!({}), "object"),
            (json!([1]), "array"),
            (json!("a"), "string"),
            (json!(1.5), "number"),
            (json!(false), "bool"),
            (json!(null), "null"),
        ];
        for (value, name) in cases {
            assert_eq!(json_kind(&value), name, "{value}");
        }
    }

    #[test]
    fn quote_char_is_the_scanners() {
        assert_eq!(quote_char(b'x'), "'x'");
        assert_eq!(quote_char(b'\''), "'\\''");
        assert_eq!(quote_char(b'"'), "'\"'");
        assert_eq!(quote_char(b' '), "' '");
        assert_eq!(quote_char(1), "'\\x01'");
        assert_eq!(quote_char(0xC3), "'Ã'");
    }
}
