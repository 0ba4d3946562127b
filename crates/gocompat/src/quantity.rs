//! `k8s.io/apimachinery/pkg/api/resource.ParseQuantity`'s errors, which `Quantity.UnmarshalJSON`
//! returns and kube's JSON decoder reports for a resource quantity it cannot read.

use crate::time::atoi;

/// `resource.ParseQuantity`'s errors (what `Quantity.UnmarshalJSON` returns for `text`, the
/// string's content or a bare JSON token, spaces trimmed).
pub fn parse_error(text: &str) -> Option<&'static str> {
    const FORMAT_WRONG: &str =
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const SUFFIX: &str = "unable to parse quantity's suffix";
    let s = text.as_bytes();
    if s.is_empty() {
        return Some(FORMAT_WRONG);
    }
    if text == "0" {
        return None;
    }
    let digits_from = |i: usize| i + s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    // A sign, digits, a point and digits (all optional: an empty number is 0), then the suffix.
    let mut pos = digits_from(usize::from(matches!(s[0], b'-' | b'+')));
    if pos < s.len() && s[pos] == b'.' {
        pos = digits_from(pos + 1);
    }
    let suffix_start = pos;
    while pos < s.len() && b"eEinumkKMGTP".contains(&s[pos]) {
        pos += 1;
    }
    if pos < s.len() && matches!(s[pos], b'-' | b'+') {
        pos += 1;
    }
    if digits_from(pos) != s.len() {
        return Some(FORMAT_WRONG);
    }
    let suffix = &text[suffix_start..];
    let known = matches!(suffix, "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E")
        || matches!(suffix, "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei")
        || (suffix.len() > 1 && matches!(suffix.as_bytes()[0], b'e' | b'E') && atoi(&suffix[1..]).is_ok());
    // Go's `unable to parse numeric part of quantity` needs more than 18 digits or an
    // exponent below -9 on a number without digits; such values pass here.
    (!known).then_some(SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_fail_as_gos_parse() {
        for good in ["0", "1", "100m", "1.5Gi", "-2", "+3k", "1e3", "1E-2", "5.", ".5", "1Ki", ".", "-", ".k"] {
            assert_eq!(parse_error(good), None, "{good}");
        }
        assert!(parse_error("").unwrap().starts_with("quantities must match"));
        assert!(parse_error("abc").unwrap().starts_with("quantities must match"));
        assert!(parse_error("true").unwrap().starts_with("quantities must match"));
        assert!(parse_error("1 Gi").unwrap().starts_with("quantities must match"));
        assert_eq!(
            parse_error("1Gb"),
            Some("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        );
        assert_eq!(parse_error("1MM"), Some("unable to parse quantity's suffix"));
        assert_eq!(parse_error("1e"), Some("unable to parse quantity's suffix"));
        assert_eq!(parse_error("+-1"), Some("unable to parse quantity's suffix"));
    }
}
