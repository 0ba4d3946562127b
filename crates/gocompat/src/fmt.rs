//! Go's `fmt` rendering of decoded JSON, for error messages.
//!
//! kube's strategic merge patch errors embed the offending values with Go's
//! `%v` and `%s` verbs (`map: map[name:1] does not contain declared merge
//! key: name`) and Go type names (`expected a []interface {}, but received a
//! string`). The apiserver sends these texts to the client, so they are
//! rendered here as Go renders the values kube decodes JSON into: objects
//! as `map[string]interface {}` (keys sorted), arrays as `[]interface {}`,
//! integers as `int64`, other numbers as `float64`, `null` as `nil`.
//!
//! listwatch-apiextensions prints custom resources' values for field errors
//! and OpenAPI messages with its own `go_value` module, which differs in
//! numbers (integers beyond `int64`, the `float64` exponent threshold).

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Whether kube's JSON decoding makes `number` an `int64` (integers that fit)
/// rather than a `float64`.
pub fn is_go_int(number: &Number) -> bool {
    number.is_i64()
}

/// The Go type name of a decoded value, as `reflect.Type.String()` prints it;
/// `null` has no type and prints as `%!s(<nil>)` under `%s`.
pub fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if is_go_int(n) => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A value under Go's `%v`.
pub fn go_v(value: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, value, Verb::V);
    out
}

/// A value under Go's `%s`: strings as is, other scalars as `%!s(type=value)`.
pub fn go_s(value: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, value, Verb::S);
    out
}

/// Several lists under `fmt.Sprint([][]interface{}{...})`.
pub fn go_v_lists(lists: &[&[Value]]) -> String {
    let mut out = String::from("[");
    for (i, list) in lists.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_go_list(&mut out, list, Verb::V);
    }
    out.push(']');
    out
}

#[derive(Clone, Copy)]
enum Verb {
    V,
    S,
}

fn write_go(out: &mut String, value: &Value, verb: Verb) {
    match (value, verb) {
        (Value::String(s), _) => out.push_str(s),
        (Value::Array(items), _) => write_go_list(out, items, verb),
        (Value::Object(map), _) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_go(out, &map[key], verb);
            }
            out.push(']');
        }
        (Value::Null, Verb::V) => out.push_str("<nil>"),
        (Value::Null, Verb::S) => out.push_str("%!s(<nil>)"),
        (scalar, Verb::V) => out.push_str(&go_scalar(scalar)),
        (scalar, Verb::S) => {
            let _ = write!(out, "%!s({}={})", go_type_name(scalar), go_scalar(scalar));
        }
    }
}

fn write_go_list(out: &mut String, items: &[Value], verb: Verb) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_go(out, item, verb);
    }
    out.push(']');
}

fn go_scalar(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if is_go_int(n) => n.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(f64::NAN)),
        _ => String::new(),
    }
}

/// A `float64` under `%v`: the shortest digits that round-trip, in plain
/// notation when the decimal exponent is in [-4, 6) and as `d.ddde±XX`
/// otherwise (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_float(value: f64) -> String {
    if !value.is_finite() {
        return if value.is_nan() {
            "NaN".to_owned()
        } else if value > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, like Go's.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if value.is_sign_negative() && value != 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exponent_sign}{:02}", exponent.abs());
    }
    let point = exponent + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_like_go() {
        assert_eq!(go_v(&json!({"b": 1, "a": "x", "c": [true, null]})), "map[a:x b:1 c:[true <nil>]]");
        assert_eq!(go_v(&json!([{"name": 3, "value": 3}, {"name": 1}])), "[map[name:3 value:3] map[name:1]]");
        assert_eq!(go_s(&json!("merge")), "merge");
        assert_eq!(go_s(&json!(1)), "%!s(int64=1)");
        assert_eq!(go_s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(go_s(&json!(true)), "%!s(bool=true)");
        assert_eq!(go_s(&Value::Null), "%!s(<nil>)");
        assert_eq!(go_v_lists(&[&[json!(1), json!("a")], &[json!("b")]]), "[[1 a] [b]]");
    }

    #[test]
    fn type_names() {
        assert_eq!(go_type_name(&json!("a")), "string");
        assert_eq!(go_type_name(&json!(1)), "int64");
        assert_eq!(go_type_name(&json!(1.0)), "float64");
        assert_eq!(go_type_name(&json!([])), "[]interface {}");
        assert_eq!(go_type_name(&json!({})), "map[string]interface {}");
        assert_eq!(go_type_name(&Value::Null), "%!s(<nil>)");
    }

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(0.0), "0");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float(1e100), "1e+100");
        assert_eq!(go_float(1e21), "1e+21");
    }
}
