//! The `format` keyword on strings. kube keeps only the formats kube-openapi's registry knows
//! (`pkg/apiserver/validation/formats.go`, names compared without `-`); any other format,
//! `int32`, `int64`, `float` and `double` among them, is dropped before validation, so it never
//! fails. A string that does not parse gives `<path> in body must be of type <format>: "<value>"`.
//!
//! Each check follows the parser kube-openapi uses (Go's `net`, `encoding/base64`, `time`
//! layouts, the strfmt regular expressions); `email`, `uri`, `isbn` and `creditcard` are
//! approximations of Go's parsers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use listwatch_gocompat::time::days_in_month;
use regex::Regex;

/// The formats kube validates (normalized: no `-`).
const SUPPORTED: [&str; 24] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// Whether kube validates values of `format` at all.
pub fn is_supported(format: &str) -> bool {
    SUPPORTED.contains(&format.replace('-', "").as_str())
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a fixed pattern compiles")
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$")
});
static DATE: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})$"));
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([+-]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[0-9]+\s*(ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)$|^0$",
    )
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{L}]([a-zA-Z0-9\p{L}-]{0,61}[a-zA-Z0-9\p{L}])?\.)*[a-zA-Z0-9\p{L}]([a-zA-Z0-9\p{L}-]{0,61}[a-zA-Z0-9\p{L}])?\.?$",
    )
});
static EMAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^[^@\s<>]+@[^@\s<>]+$"));
static URI: LazyLock<Regex> = LazyLock::new(|| re(r"^([a-zA-Z][a-zA-Z0-9+.-]*:\S*|/\S*)$"));
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){9})$",
    )
});
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static ISBN10: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:[0-9]{9}X|[0-9]{10})$"));
static ISBN13: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:[0-9]{13})$"));
static BSON_OBJECT_ID: LazyLock<Regex> = LazyLock::new(|| re(r"^[0-9a-fA-F]{24}$"));
static BASE64: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"));

fn valid_date(year: &str, month: &str, day: &str) -> bool {
    let (Ok(y), Ok(m), Ok(d)) = (year.parse::<u32>(), month.parse::<u32>(), day.parse::<u32>()) else { return false };
    (1..=12).contains(&m) && (1..=days_in_month(i64::from(y), m)).contains(&d)
}

fn valid_date_time(value: &str) -> bool {
    let Some(c) = DATE_TIME.captures(value) else { return false };
    let hour: u32 = c[4].parse().unwrap_or(99);
    let minute: u32 = c[5].parse().unwrap_or(99);
    let second: u32 = c.get(7).map_or(0, |s| s.as_str().parse().unwrap_or(99));
    valid_date(&c[1], &c[2], &c[3]) && hour < 24 && minute < 60 && second < 61
}

fn digits_only(value: &str) -> String {
    value.chars().filter(char::is_ascii_digit).collect()
}

/// Whether `value` is a valid `format` string (true for formats kube does not check).
pub fn is_valid(format: &str, value: &str) -> bool {
    match format.replace('-', "").as_str() {
        "bsonobjectid" => BSON_OBJECT_ID.is_match(value),
        "uri" => URI.is_match(value),
        "email" => EMAIL.is_match(value),
        "hostname" => value.len() <= 255 && HOSTNAME.is_match(value),
        "ipv4" => value.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => value.split_once('/').is_some_and(|(ip, bits)| match (ip.parse::<IpAddr>(), bits.parse::<u8>()) {
            (Ok(IpAddr::V4(_)), Ok(b)) => b <= 32,
            (Ok(IpAddr::V6(_)), Ok(b)) => b <= 128,
            _ => false,
        }),
        "mac" => MAC.is_match(value),
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "isbn" => {
            let d: String = value.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
            ISBN10.is_match(&d) || ISBN13.is_match(&d)
        }
        "isbn10" => ISBN10.is_match(&value.replace(['-', ' '], "")),
        "isbn13" => ISBN13.is_match(&value.replace(['-', ' '], "")),
        "creditcard" => (13..=19).contains(&digits_only(value).len()),
        "ssn" => SSN.is_match(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "rgbcolor" => RGB_COLOR.is_match(value),
        "byte" => BASE64.is_match(value),
        "date" => DATE.captures(value).is_some_and(|c| valid_date(&c[1], &c[2], &c[3])),
        "duration" => DURATION.is_match(value),
        "datetime" => valid_date_time(value),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_formats_follow_kube() {
        assert!(is_supported("date-time") && is_supported("datetime") && is_supported("byte"));
        assert!(!is_supported("int32") && !is_supported("int64") && !is_supported("double"));
    }

    #[test]
    fn checks_common_formats() {
        assert!(is_valid("date-time", "2024-01-02T03:04:05Z"));
        assert!(is_valid("date-time", "2024-01-02T03:04:05.123+02:00"));
        assert!(!is_valid("date-time", "yesterday"));
        assert!(!is_valid("date-time", "2024-13-02T03:04:05Z"));
        assert!(is_valid("date", "2024-02-29") && !is_valid("date", "2023-02-29"));
        assert!(is_valid("byte", "aGVsbG8=") && !is_valid("byte", "not base64!"));
        assert!(is_valid("uuid", "123e4567-e89b-12d3-a456-426614174000") && !is_valid("uuid", "x"));
        assert!(is_valid("ipv4", "10.0.0.1") && !is_valid("ipv4", "10.0.0.256"));
        assert!(is_valid("ipv6", "::1") && is_valid("cidr", "10.0.0.0/8") && !is_valid("cidr", "10.0.0.0/33"));
        assert!(is_valid("duration", "1h30m") && is_valid("duration", "3 days") && !is_valid("duration", "soon"));
        assert!(is_valid("hostname", "example.com") && !is_valid("hostname", "-bad-.com"));
        assert!(is_valid("int32", "anything"));
    }
}
