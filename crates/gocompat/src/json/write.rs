//! JSON text as Go writes it.
//!
//! Go escapes `<`, `>`, `&`, U+2028 and U+2029 (HTML-safe), writes other control characters as
//! `\u00XX`, prints floats its own way and sorts the keys of maps, so `serde_json`'s output would
//! differ in those places. Two of Go's writers reach clients through kube, and they differ in
//! two characters only (see [`Escaping`]). Invalid UTF-8, which Go writes as `\ufffd`, cannot
//! occur in a Rust `str`.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Which of Go's JSON writers: they agree but for backspace and form feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escaping {
    /// `encoding/json` since Go 1.22 (kube 1.32 is built with a later Go): `\b` and `\f`.
    /// kube's continue token is `json.Marshal`ed with it.
    EncodingJson,
    /// json-iterator's `ConfigCompatibleWithStandardLibrary`, which writes as `encoding/json`
    /// did before Go 1.22: `\u0008` and `\u000c`. structured-merge-diff writes the path
    /// elements of FieldsV1 (`k:{"name":"a"}`, `v:"x"`) with it.
    JsonIterator,
}

/// `value` as Go's `json.Marshal` writes a decoded `interface{}`: no spaces, object keys
/// sorted, strings escaped as `escaping` says, numbers as [`number`].
pub fn marshal(value: &Value, escaping: Escaping) -> String {
    let mut out = String::new();
    write_value(&mut out, value, escaping);
    out
}

fn write_value(out: &mut String, value: &Value, escaping: Escaping) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => push_quoted(out, s, escaping),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, escaping);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_quoted(out, key, escaping);
                out.push(':');
                write_value(out, item, escaping);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string literal, as Go writes it.
pub fn quote(s: &str, escaping: Escaping) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quoted(&mut out, s, escaping);
    out
}

/// Appends `s` as a JSON string literal, as Go writes it: `\"`, `\\`, `\n`, `\r`, `\t`, the
/// HTML-safe `\u003c`, `\u003e`, `\u0026`, `\u2028` and `\u2029`, backspace and form feed as
/// `escaping` says, any other control character as `\u00XX`.
pub fn push_quoted(out: &mut String, s: &str, escaping: Escaping) {
    let short = escaping == Escaping::EncodingJson;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' if short => out.push_str("\\b"),
            '\u{c}' if short => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Go writes a decoded JSON number: integers as they are, floats in the shortest
/// form, in exponent form below 1e-6 or from 1e21 (`1e+21`, `1e-7`).
pub fn number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let scientific = format!("{f:e}");
        match scientific.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
            _ => scientific,
        }
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_as_go_does() {
        assert_eq!(
            marshal(
                &json!({"b": 1, "a": "<x>&", "c": [1.5, null, true], "d": 1e21, "e": 1e-7}),
                Escaping::JsonIterator
            ),
            r#"{"a":"\u003cx\u003e\u0026","b":1,"c":[1.5,null,true],"d":1e+21,"e":1e-7}"#
        );
        assert_eq!(quote("a\u{1}\n", Escaping::JsonIterator), r#""a\u0001\n""#);
        assert_eq!(marshal(&json!(3.0), Escaping::EncodingJson), "3");
    }

    #[test]
    fn the_two_writers_differ_in_backspace_and_form_feed_only() {
        let text = "\"\\\n\r\t\u{8}\u{c}\u{0}\u{1f}<>&\u{2028}\u{2029}é😀\u{7f}";
        let common = r#"\"\\\n\r\t"#;
        let rest = r#"\u0000\u001f\u003c\u003e\u0026\u2028\u2029é😀"#;
        assert_eq!(quote(text, Escaping::EncodingJson), format!("\"{common}\\b\\f{rest}\u{7f}\""));
        assert_eq!(quote(text, Escaping::JsonIterator), format!("\"{common}\\u0008\\u000c{rest}\u{7f}\""));
        assert_eq!(marshal(&json!({"\u{8}": "\u{c}"}), Escaping::EncodingJson), r#"{"\b":"\f"}"#);
    }
}
