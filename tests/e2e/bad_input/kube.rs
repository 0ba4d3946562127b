//! kube-apiserver 1.32's message texts, built the way it builds them, so a row can expect
//! the exact message: validation texts (k8s.io/apimachinery `pkg/util/validation`), field
//! error bodies (`pkg/util/validation/field/errors.go`), `NewInvalid`'s aggregate, and the
//! decode-error summary of `pkg/endpoints/handlers/rest.go`.

/// `RegexError`: the rule, the examples, the regex.
fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{message} (e.g. {}regex used for validation is '{regex}')", examples.join(" or "))
}

pub fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

pub fn dns_subdomain() -> String {
    regex_error(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
        &["example.com"],
    )
}

pub fn dns_label() -> String {
    regex_error(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?",
        &["my-name", "123-abc"],
    )
}

/// The rule for the name part of a qualified name (label keys, annotation keys).
pub fn qualified_name_part() -> String {
    format!(
        "name part {}",
        regex_error(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
            &["MyName", "my.name", "123-abc"],
        )
    )
}

pub fn label_value() -> String {
    regex_error(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
        &["MyValue", "my_value", "12345"],
    )
}

pub fn config_key() -> String {
    regex_error(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
        "[-._a-zA-Z0-9]+",
        &["key.name", "KEY_NAME", "key-name"],
    )
}

/// Go's `%q` of a string (enough for the ASCII and control characters the rows use).
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `field: Invalid value: "<value>": <detail>`.
pub fn invalid(field: &str, value: &str, detail: &str) -> String {
    format!("{field}: Invalid value: {}: {detail}", go_quote(value))
}

/// The message of `NewInvalid(kind, name, errors)`: one error alone, several in brackets.
pub fn is_invalid(qualified_kind: &str, name: &str, errors: &[String]) -> String {
    match errors {
        [] => format!("{qualified_kind} {} is invalid", go_quote(name)),
        [one] => format!("{qualified_kind} {} is invalid: {one}", go_quote(name)),
        many => format!("{qualified_kind} {} is invalid: [{}]", go_quote(name), many.join(", ")),
    }
}

/// `summarizeData(body, 30)`: what a decode error quotes of the body.
pub fn summarize(body: &[u8]) -> String {
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') if body.len() > 30 => format!("{} ...", String::from_utf8_lossy(&body[..30])),
        Some(b'{') => String::from_utf8_lossy(body).into_owned(),
        Some(_) if body.len() > 30 => format!("{} ...", hex(&body[..30])),
        Some(_) => hex(body),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 400 of a body that does not decode and names no kind.
pub fn unrecognized(kind: &str, error: &str, body: &[u8]) -> String {
    format!("the object provided is unrecognized (must be of type {kind}): {error} ({})", summarize(body))
}

/// Standard base64 (Secret data) and unpadded URL-safe base64 (continue tokens).
pub fn base64(bytes: &[u8], url_safe: bool) -> String {
    let alphabet: &[u8; 64] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (*b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
        if !url_safe {
            out.push_str(&"=".repeat(3 - chunk.len()));
        }
    }
    out
}

/// A query value with everything but unreserved characters percent-encoded.
pub fn query_escape(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b"v", false), "dg==");
        assert_eq!(base64(b"foobar", false), "Zm9vYmFy");
        assert_eq!(base64(b"fo", true), "Zm8");
    }
}
