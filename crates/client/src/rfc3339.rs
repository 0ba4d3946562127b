//! RFC 3339 times, as `metav1.Time` writes them (`2024-05-01T12:34:56Z`, with optional fractional
//! seconds and a numeric offset): all an `ExecCredential`'s `expirationTimestamp` and a
//! controller's condition times need, without a date library.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    let (days, second_of_day) = ((seconds / 86_400) as i64, seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (second_of_day / 3600, second_of_day % 3600 / 60, second_of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// The decimal number at `range` of `text`, digits only.
fn number_in(text: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let digits = text.get(range)?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok())?
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
