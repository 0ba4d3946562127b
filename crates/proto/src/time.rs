//! RFC 3339 timestamps as metav1.Time and metav1.MicroTime write and read them.
//!
//! kube-apiserver formats `Time` as `2006-01-02T15:04:05Z` (UTC, whole seconds) and
//! `MicroTime` as `2006-01-02T15:04:05.000000Z` (UTC, exactly six fractional digits). When
//! reading JSON it accepts any RFC 3339 offset and converts to UTC; `Time` drops the fraction
//! (its protobuf form keeps seconds only). The civil-date arithmetic is Howard Hinnant's
//! days-from-civil algorithm, valid for the whole range RFC 3339 can spell (years 0000–9999).

/// A point in time as protobuf `{seconds, nanos}` since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timestamp {
    pub(crate) seconds: i64,
    pub(crate) nanos: i32,
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `None` if it is not that.
pub(crate) fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }

    let mut rest = &b[19..];
    let mut nanos: i64 = 0;
    if rest.first() == Some(&b'.') {
        let count = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if count == 0 || count > 9 {
            return None;
        }
        nanos = digits(&rest[1..=count])? * 10_i64.pow(9 - count as u32);
        rest = &rest[1 + count..];
    }
    let offset_seconds = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = digits(&[*h1, *h2])?;
            let minutes = digits(&[*m1, *m2])?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let magnitude = hours * 3600 + minutes * 60;
            if *sign == b'+' { magnitude } else { -magnitude }
        }
        _ => return None,
    };

    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(Timestamp { seconds, nanos: nanos as i32 })
}

/// `2006-01-02T15:04:05Z`: metav1.Time's JSON form.
pub(crate) fn format_seconds(seconds: i64) -> String {
    let (year, month, day, hour, minute, second) = civil(seconds);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// `2006-01-02T15:04:05.000000Z`: metav1.MicroTime's JSON form (nanoseconds truncated).
pub(crate) fn format_micros(seconds: i64, nanos: i32) -> String {
    let (year, month, day, hour, minute, second) = civil(seconds);
    let micros = nanos.clamp(0, 999_999_999) / 1000;
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}Z")
}

fn digits(bytes: &[u8]) -> Option<i64> {
    bytes.iter().try_fold(0_i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil(seconds: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_known_instants() {
        // 2024-01-02T03:04:05Z = 1704164645
        assert_eq!(format_seconds(1_704_164_645), "2024-01-02T03:04:05Z");
        assert_eq!(parse_rfc3339("2024-01-02T03:04:05Z"), Some(Timestamp { seconds: 1_704_164_645, nanos: 0 }));
        assert_eq!(format_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_micros(1_704_164_645, 123_456_789), "2024-01-02T03:04:05.123456Z");
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05.123456Z"),
            Some(Timestamp { seconds: 1_704_164_645, nanos: 123_456_000 })
        );
        assert_eq!(parse_rfc3339("2024-01-02T05:04:05+02:00").map(|t| t.seconds), Some(1_704_164_645));
        assert_eq!(parse_rfc3339("2023-12-31T23:00:00-01:00").map(|t| t.seconds), Some(1_704_067_200));
        assert_eq!(format_seconds(-62_135_596_800), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for text in ["", "2024-01-02", "2024-01-02 03:04:05Z", "2024-13-02T03:04:05Z", "2024-02-30T03:04:05Z"] {
            assert_eq!(parse_rfc3339(text), None, "{text}");
        }
        assert_eq!(parse_rfc3339("2024-01-02T03:04:05"), None);
        assert_eq!(parse_rfc3339("2024-01-02T03:04:05.Z"), None);
    }
}
