//! RFC 3339 timestamps as metav1.Time and metav1.MicroTime write and read them.
//!
//! kube-apiserver formats `Time` as `2006-01-02T15:04:05Z` (UTC, whole seconds) and
//! `MicroTime` as `2006-01-02T15:04:05.000000Z` (UTC, exactly six fractional digits). When
//! reading JSON it accepts any RFC 3339 offset and converts to UTC; `Time` drops the fraction
//! (its protobuf form keeps seconds only). The calendar and the two written forms are
//! listwatch-gocompat's `time`.

use listwatch_gocompat::time::{days_from_civil, days_in_month};

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
        || day > i64::from(days_in_month(year, month as u32))
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

fn digits(bytes: &[u8]) -> Option<i64> {
    bytes.iter().try_fold(0_i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
}

#[cfg(test)]
mod tests {
    use listwatch_gocompat::time::{format_rfc3339, format_rfc3339_micro};

    use super::*;

    #[test]
    fn formats_and_parses_known_instants() {
        // 2024-01-02T03:04:05Z = 1704164645
        assert_eq!(format_rfc3339(1_704_164_645), "2024-01-02T03:04:05Z");
        assert_eq!(parse_rfc3339("2024-01-02T03:04:05Z"), Some(Timestamp { seconds: 1_704_164_645, nanos: 0 }));
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339_micro(1_704_164_645, 123_456_789), "2024-01-02T03:04:05.123456Z");
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05.123456Z"),
            Some(Timestamp { seconds: 1_704_164_645, nanos: 123_456_000 })
        );
        assert_eq!(parse_rfc3339("2024-01-02T05:04:05+02:00").map(|t| t.seconds), Some(1_704_164_645));
        assert_eq!(parse_rfc3339("2023-12-31T23:00:00-01:00").map(|t| t.seconds), Some(1_704_067_200));
        assert_eq!(format_rfc3339(-62_135_596_800), "0001-01-01T00:00:00Z");
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
