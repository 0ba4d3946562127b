//! How Go prints JSON values inside kube's messages. Custom resources are decoded into Go
//! `interface{}` values (`int64`, `float64`, `string`, `bool`, `map[string]interface{}`,
//! `[]interface{}`), and kube's field errors print a bad value with `%v` for numbers and
//! booleans, `%q` for strings and `%#v` for everything else
//! (`k8s.io/apimachinery/pkg/util/validation/field/errors.go` `ErrorBody`); kube-openapi's
//! messages print bounds with `%v`. The same value must read the same here.

use listwatch_meta::validation::go_quote;
use serde_json::Value;

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)` with `%v`'s exponent
/// threshold of 21): `10`, `1.5`, `1e+21`, `1e-05`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        // Rust writes `1e21` / `1.5e-5`; Go writes a sign and at least two exponent digits.
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e').expect("{:e} always has an exponent");
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exponent),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    format!("{f}")
}

/// Go's `%v` of a JSON number as kube decodes it (integers as int64, others as float64).
pub fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// The value as kube's `field.Error` shows it after `Invalid value: ` (`15`, `true`,
/// `"text"`, `null`, `map[string]interface {}{"name":"a"}`).
pub fn bad_value(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        _ => go_sharp_v(value),
    }
}

/// Go's `%#v` of a decoded JSON value. Map keys come out sorted, as Go's fmt sorts them.
pub fn go_sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys.iter().map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&map[*k]))).collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// Go's `%v` of a decoded JSON value, used where kube formats a value with `%v` or `fmt.Sprint`
/// (strings unquoted, maps as `map[a:1]`, lists as `[a b]`).
pub fn go_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            format!("map[{}]", keys.iter().map(|k| format!("{k}:{}", go_v(&map[*k]))).collect::<Vec<_>>().join(" "))
        }
    }
}

/// The OpenAPI type name kube-openapi reports for a value (`string`, `integer`, `number`,
/// `boolean`, `array`, `object`, `null`).
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float(123456789.0), "123456789");
    }

    #[test]
    fn bad_values_print_like_field_errors() {
        assert_eq!(bad_value(&json!(15)), "15");
        assert_eq!(bad_value(&json!("c")), "\"c\"");
        assert_eq!(bad_value(&json!(null)), "null");
        assert_eq!(
            bad_value(&json!({"port": 80, "name": "a"})),
            "map[string]interface {}{\"name\":\"a\", \"port\":80}"
        );
        assert_eq!(bad_value(&json!([1, "x", null])), "[]interface {}{1, \"x\", interface {}(nil)}");
        assert_eq!(go_v(&json!({"b": [1, 2], "a": "x"})), "map[a:x b:[1 2]]");
    }
}
