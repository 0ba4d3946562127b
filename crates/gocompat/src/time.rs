//! Go's `time` where Kubernetes clients meet it: RFC 3339 as `metav1.Time` and `metav1.MicroTime`
//! write it, the civil calendar under it, and `time.Parse`'s errors for those layouts.
//!
//! * [`days_from_civil`] and [`civil_from_days`]: Howard Hinnant's algorithms between a
//!   proleptic Gregorian date and days since 1970-01-01, valid for every year RFC 3339 can
//!   spell (0000 to 9999) and far beyond; [`days_in_month`].
//! * [`format_rfc3339`] (`Time`: `2006-01-02T15:04:05Z`, UTC, whole seconds) and
//!   [`format_rfc3339_micro`] (`MicroTime`: `2006-01-02T15:04:05.000000Z`).
//! * [`parse_error`]: what `time.Parse(time.RFC3339, value)` (or `RFC3339Micro`) says about a
//!   value it refuses, word for word, as kube's JSON decoder reports it.

/// Days from 1970-01-01 to the proleptic Gregorian date `year`-`month`-`day` (Howard Hinnant's
/// `days_from_civil`; `month` 1 to 12).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date (year, month 1 to 12, day) `days` after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
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

/// The days of `month` (1 to 12; any other month counts 31, as in Go's table) in `year` of the
/// proleptic Gregorian calendar.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `seconds` since the Unix epoch as `metav1.Time` writes it: `2006-01-02T15:04:05Z`.
pub fn format_rfc3339(seconds: i64) -> String {
    let (year, month, day, hour, minute, second) = civil(seconds);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// `seconds` and `nanos` since the Unix epoch as `metav1.MicroTime` writes them:
/// `2006-01-02T15:04:05.000000Z` (nanoseconds truncated to micros).
pub fn format_rfc3339_micro(seconds: i64, nanos: i32) -> String {
    let (year, month, day, hour, minute, second) = civil(seconds);
    let micros = nanos.clamp(0, 999_999_999) / 1000;
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}Z")
}

/// The date and time of day (UTC) `seconds` after the epoch.
fn civil(seconds: i64) -> (i64, i64, i64, i64, i64, i64) {
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    (year, month, day, second_of_day / 3600, second_of_day % 3600 / 60, second_of_day % 60)
}

/// `time.RFC3339`, the layout `metav1.Time` parses with.
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`, the layout of `metav1.MicroTime`.
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// A layout element of the two RFC 3339 layouts (Go's `std` chunks).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Std {
    LongYear,
    ZeroMonth,
    ZeroDay,
    Hour,
    ZeroMinute,
    ZeroSecond,
    /// `.000000`: exactly this many digits after the point.
    FracSecond0(usize),
    ISO8601ColonTz,
}

/// The layout as Go's `nextStdChunk` splits it: the literal before each element, the element,
/// and the element's text.
fn chunks(micro: bool) -> Vec<(&'static str, Std, &'static str)> {
    let mut chunks = vec![
        ("", Std::LongYear, "2006"),
        ("-", Std::ZeroMonth, "01"),
        ("-", Std::ZeroDay, "02"),
        ("T", Std::Hour, "15"),
        (":", Std::ZeroMinute, "04"),
        (":", Std::ZeroSecond, "05"),
    ];
    if micro {
        chunks.push(("", Std::FracSecond0(6), ".000000"));
    }
    chunks.push(("", Std::ISO8601ColonTz, "Z07:00"));
    chunks
}

/// Go's `time.quote`: ASCII as is (with `"` and `\` escaped), every other byte as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// Go's `getnum`: one or two digits (two when `fixed`).
fn getnum(s: &str, fixed: bool) -> Result<(u32, &str), ()> {
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    if !digit(0) {
        return Err(());
    }
    if !digit(1) {
        if fixed {
            return Err(());
        }
        return Ok((u32::from(b[0] - b'0'), &s[1..]));
    }
    Ok((u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'), &s[2..]))
}

/// Go's `atoi`: an optional sign, then only digits (also [`crate::quantity`]'s exponent check).
pub(crate) fn atoi(s: &str) -> Result<i64, ()> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    let n: i64 = digits.parse().map_err(|_| ())?;
    Ok(if s.starts_with('-') { -n } else { n })
}

/// `time.Parse(RFC3339 or RFC3339Micro, value)`'s error (Go's `parse`, reduced to the elements
/// of these two layouts).
pub fn parse_error(value: &str, micro: bool) -> Option<String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let cannot_parse = |value_elem: &str, layout_elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            time_quote(value),
            time_quote(layout),
            time_quote(value_elem),
            time_quote(layout_elem)
        )
    };
    let with_message = |message: &str| format!("parsing time {}{message}", time_quote(value));
    let chunks = chunks(micro);
    let (mut year, mut month, mut day) = (0i64, 1u32, 1u32);
    let mut rest = value;
    for (index, &(prefix, std, std_text)) in chunks.iter().enumerate() {
        for p in prefix.bytes() {
            if rest.as_bytes().first() != Some(&p) {
                return Some(cannot_parse(rest, prefix));
            }
            rest = &rest[1..];
        }
        let hold = rest;
        let mut range = "";
        let mut bad = false;
        match std {
            Std::LongYear => {
                if rest.len() < 4 || !rest.as_bytes()[0].is_ascii_digit() || !rest.is_char_boundary(4) {
                    bad = true;
                } else {
                    match atoi(&rest[..4]) {
                        Ok(y) => year = y,
                        Err(()) => bad = true,
                    }
                    rest = &rest[4..];
                }
            }
            Std::ZeroMonth => match getnum(rest, true) {
                Ok((m, r)) => {
                    (month, rest) = (m, r);
                    if !(1..=12).contains(&m) {
                        range = "month";
                    }
                }
                Err(()) => bad = true,
            },
            Std::ZeroDay => match getnum(rest, true) {
                Ok((d, r)) => (day, rest) = (d, r),
                Err(()) => bad = true,
            },
            Std::Hour | Std::ZeroMinute => match getnum(rest, std == Std::ZeroMinute) {
                Ok((n, r)) => {
                    rest = r;
                    if std == Std::Hour && n >= 24 {
                        range = "hour";
                    } else if std == Std::ZeroMinute && n >= 60 {
                        range = "minute";
                    }
                }
                Err(()) => bad = true,
            },
            Std::ZeroSecond => match getnum(rest, true) {
                Ok((s, r)) => {
                    rest = r;
                    let b = rest.as_bytes();
                    if s >= 60 {
                        range = "second";
                    } else if b.len() >= 2
                        && matches!(b[0], b'.' | b',')
                        && b[1].is_ascii_digit()
                        && !matches!(chunks.get(index + 1), Some((_, Std::FracSecond0(_), _)))
                    {
                        // A fraction the layout does not spell is read anyway.
                        let n = 2 + b[2..].iter().take_while(|c| c.is_ascii_digit()).count();
                        rest = &rest[n..];
                    }
                }
                Err(()) => bad = true,
            },
            Std::FracSecond0(digits) => {
                let n = 1 + digits;
                if rest.len() < n || !rest.is_char_boundary(n) {
                    bad = true;
                } else {
                    if !matches!(rest.as_bytes()[0], b'.' | b',') {
                        bad = true;
                    } else {
                        match atoi(&rest[1..n]) {
                            Ok(ns) if ns < 0 => range = "fractional second",
                            Ok(_) => {}
                            Err(()) => bad = true,
                        }
                    }
                    rest = &rest[n..];
                }
            }
            Std::ISO8601ColonTz => {
                if let Some(r) = rest.strip_prefix('Z') {
                    rest = r;
                } else if rest.len() < 6 || !rest.is_char_boundary(6) || rest.as_bytes()[3] != b':' {
                    bad = true;
                } else {
                    let (sign, hours, minutes) = (rest.as_bytes()[0], &rest[1..3], &rest[4..6]);
                    rest = &rest[6..];
                    match (getnum(hours, true), getnum(minutes, true)) {
                        (Ok((h, _)), Ok((m, _))) => {
                            if h > 24 {
                                range = "time zone offset hour";
                            }
                            if m > 60 {
                                range = "time zone offset minute";
                            }
                        }
                        _ => bad = true,
                    }
                    if !matches!(sign, b'+' | b'-') {
                        bad = true;
                    }
                }
            }
        }
        if !range.is_empty() {
            return Some(with_message(&format!(": {range} out of range")));
        }
        if bad {
            return Some(cannot_parse(hold, std_text));
        }
    }
    if !rest.is_empty() {
        return Some(with_message(&format!(": extra text: {}", time_quote(rest))));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Some(with_message(": day out of range"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        for days in (-800_000..3_000_000).step_by(997) {
            let (year, month, day) = civil_from_days(days);
            assert!((1..=12).contains(&month) && day >= 1 && day <= i64::from(days_in_month(year, month as u32)));
            assert_eq!(days_from_civil(year, month, day), days, "{year}-{month}-{day}");
        }
    }

    #[test]
    fn months_have_their_days() {
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2023, 2), 28);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2023, 4), 30);
        assert_eq!(days_in_month(2023, 12), 31);
    }

    #[test]
    fn formats_as_metav1_does() {
        // 2024-01-02T03:04:05Z = 1704164645
        assert_eq!(format_rfc3339(1_704_164_645), "2024-01-02T03:04:05Z");
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(format_rfc3339(-62_135_596_800), "0001-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_rfc3339_micro(1_704_164_645, 123_456_789), "2024-01-02T03:04:05.123456Z");
        assert_eq!(format_rfc3339_micro(0, 0), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn times_fail_as_gos_parse() {
        for good in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123Z",
            "2024-01-02T03:04:05+01:00",
            "2024-02-29T00:00:00Z",
            "2024-01-02T3:04:05Z",
        ] {
            assert_eq!(parse_error(good, false), None, "{good}");
        }
        assert_eq!(parse_error("2024-01-02T03:04:05.123456Z", true), None);
        let layout = "\"2006-01-02T15:04:05Z07:00\"";
        let cases = [
            ("", format!("parsing time \"\" as {layout}: cannot parse \"\" as \"2006\"")),
            ("yesterday", format!("parsing time \"yesterday\" as {layout}: cannot parse \"yesterday\" as \"2006\"")),
            ("2024-01-02", format!("parsing time \"2024-01-02\" as {layout}: cannot parse \"\" as \"T\"")),
            ("2024-13-02T03:04:05Z", "parsing time \"2024-13-02T03:04:05Z\": month out of range".to_owned()),
            ("2023-02-29T03:04:05Z", "parsing time \"2023-02-29T03:04:05Z\": day out of range".to_owned()),
            (
                "2024-01-02T03:04:05",
                format!("parsing time \"2024-01-02T03:04:05\" as {layout}: cannot parse \"\" as \"Z07:00\""),
            ),
            ("2024-01-02T03:04:05Zjunk", "parsing time \"2024-01-02T03:04:05Zjunk\": extra text: \"junk\"".to_owned()),
            (
                "2024-01-02t03:04:05Z",
                format!("parsing time \"2024-01-02t03:04:05Z\" as {layout}: cannot parse \"t03:04:05Z\" as \"T\""),
            ),
        ];
        for (input, message) in cases {
            assert_eq!(parse_error(input, false).as_deref(), Some(message.as_str()), "{input:?}");
        }
        assert_eq!(
            parse_error("2024-01-02T03:04:05Z", true).as_deref(),
            Some(
                "parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
            )
        );
    }
}
