//! JSON text as Go's `encoding/json` (and json-iterator's standard-library
//! configuration) writes it.
//!
//! Bytes that kube stores inside strings are written by Go: the list-map
//! keys and set values inside FieldsV1 keys (`k:{"name":"a"}`), manager
//! identifiers, and the `last-applied-configuration` annotation. Go escapes
//! `<`, `>`, `&`, U+2028 and U+2029, prints floats its own way and sorts the
//! keys of maps, so `serde_json`'s output would differ in those places.

use serde_json::{Number, Value};

/// `value` as Go's `json.Marshal` writes a decoded `interface{}`: no spaces,
/// object keys sorted, HTML characters escaped.
pub(crate) fn marshal(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
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
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal with Go's escaping.
pub(crate) fn string(s: &str) -> String {
    let mut out = String::new();
    write_string(&mut out, s);
    out
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Go writes a decoded JSON number: integers as they are,
/// floats in the shortest form, in exponent form below 1e-6 or from 1e21
/// (`1e+21`, `1e-7`).
pub(crate) fn number(n: &Number) -> String {
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
            marshal(&json!({"b": 1, "a": "<x>&", "c": [1.5, null, true], "d": 1e21, "e": 1e-7})),
            r#"{"a":"\u003cx\u003e\u0026","b":1,"c":[1.5,null,true],"d":1e+21,"e":1e-7}"#
        );
        assert_eq!(string("a\u{1}\n"), r#""a\u0001\n""#);
        assert_eq!(marshal(&json!(3.0)), "3");
    }
}
