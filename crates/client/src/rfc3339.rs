//! RFC 3339 times, as `metav1.Time` writes them (`2024-05-01T12:34:56Z`, with optional fractional
//! seconds and a numeric offset): all an `ExecCredential`'s `expirationTimestamp` and a
//! controller's condition times need, without a date library (the calendar is
//! listwatch-gocompat's).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use listwatch_gocompat::time::{days_from_civil, format_rfc3339};

/// The instant `text` names, or `None` if it is not an RFC 3339 date-time.
pub fn parse(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let number = |range| number_in(text, range);
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|(at, separator)| bytes[*at] != *separator) {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let scaled: String = fraction[..digits].chars().chain(std::iter::repeat('0')).take(9).collect();
        nanos = scaled.parse().ok()?;
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (number_in(rest, 1..3)?, number_in(rest, 4..6)?);
            let offset = hours * 3600 + minutes * 60;
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
}

/// `time` as `metav1.Time` writes it: UTC, whole seconds (`2024-05-01T12:34:56Z`).
pub fn format(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format_rfc3339(i64::try_from(seconds).unwrap_or(i64::MAX))
}

/// The decimal number at `range` of `text`, digits only.
fn number_in(text: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let digits = text.get(range)?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_writes_what_parse_reads() {
        for text in ["2024-02-29T13:45:07Z", "1970-01-01T00:00:00Z", "2100-12-31T23:59:59Z"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
    }

    fn seconds(text: &str) -> Option<u64> {
        parse(text).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs())
    }

    #[test]
    fn utc_offsets_and_fractions() {
        assert_eq!(seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(seconds("2024-02-29T12:34:56Z"), Some(1_709_210_096));
        assert_eq!(seconds("2024-02-29T14:34:56+02:00"), Some(1_709_210_096));
        assert_eq!(seconds("2024-02-29T07:04:56-05:30"), Some(1_709_210_096));
        let fractional = parse("2024-02-29T12:34:56.25Z").unwrap().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!((fractional.as_secs(), fractional.subsec_millis()), (1_709_210_096, 250));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "2024-02-29",
            "2024-02-29T12:34:56",
            "2024-13-01T00:00:00Z",
            "2024-02-29T12:34:56.Z",
            "2024/02/29T12:34:56Z",
            "1960-01-01T00:00:00Z",
            "2024-02-29T12:34:56+0200",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
