//! The errors of the Go parsers kube's JSON decoder runs on some string values, word for word:
//! `[]byte` fields are standard base64 (`encoding/base64`), `metav1.Time` and `MicroTime` are
//! `time.Parse` with an RFC 3339 layout, `resource.Quantity` is `ParseQuantity`. Each function
//! answers `None` where Go accepts the text.

/// `base64.StdEncoding.Decode`'s error: `illegal base64 data at input byte N`. Go skips `\r`
/// and `\n` anywhere, wants padding to a multiple of four, and reports the offset where it
/// gave up (its `decodeQuantum`, one quantum at a time).
pub(crate) fn base64_error(text: &str) -> Option<String> {
    let src = text.as_bytes();
    let mut si = 0;
    while si < src.len() {
        match base64_quantum(src, si) {
            Ok(next) => si = next,
            Err(offset) => return Some(format!("illegal base64 data at input byte {offset}")),
        }
    }
    None
}

fn is_base64_symbol(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// One quantum (up to four symbols) from `si`: where the next one starts, or the offset Go
/// reports.
fn base64_quantum(src: &[u8], mut si: usize) -> Result<usize, usize> {
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let mut j = 0;
    while j < 4 {
        if si == src.len() {
            // The end inside a quantum: an unpadded tail, which StdEncoding refuses.
            return if j == 0 { Ok(si) } else { Err(si - j) };
        }
        let c = src[si];
        si += 1;
        if is_base64_symbol(c) {
            j += 1;
            continue;
        }
        if is_newline(c) {
            continue;
        }
        if c != b'=' {
            return Err(si - 1);
        }
        // Padding: it must come third or fourth and end the input.
        match j {
            0 | 1 => return Err(si - 1),
            2 => {
                while si < src.len() && is_newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            _ => {}
        }
        while si < src.len() && is_newline(src[si]) {
            si += 1;
        }
        return if si < src.len() { Err(si) } else { Ok(si) };
    }
    Ok(si)
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

/// Go's `atoi`: an optional sign, then only digits.
fn atoi(s: &str) -> Result<i64, ()> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    let n: i64 = digits.parse().map_err(|_| ())?;
    Ok(if s.starts_with('-') { -n } else { n })
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `time.Parse(RFC3339 or RFC3339Micro, value)`'s error (Go's `parse`, reduced to the elements
/// of these two layouts).
pub(crate) fn time_error(value: &str, micro: bool) -> Option<String> {
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
    if day < 1 || day > days_in(month, year) {
        return Some(with_message(": day out of range"));
    }
    None
}

/// `resource.ParseQuantity`'s errors (what `Quantity.UnmarshalJSON` returns for `text`, the
/// string's content or a bare JSON token, spaces trimmed).
pub(crate) fn quantity_error(text: &str) -> Option<&'static str> {
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
    fn base64_offsets_are_gos() {
        for good in ["", "dg==", "Zm9vYmFy", "Zm9v\nYmFy", "Zm8=", "Zm8=\r\n"] {
            assert_eq!(base64_error(good), None, "{good:?}");
        }
        let cases = [
            ("!!!!", 0),
            ("dg=", 3),
            ("dg", 0),
            ("abc", 0),
            ("abcde", 4),
            ("a===", 1),
            ("dg==x", 4),
            ("dg=x", 2),
            ("Zm9v!mFy", 4),
            ("Zm8=Zm8=", 4),
        ];
        for (input, offset) in cases {
            assert_eq!(base64_error(input), Some(format!("illegal base64 data at input byte {offset}")), "{input:?}");
        }
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
            assert_eq!(time_error(good, false), None, "{good}");
        }
        assert_eq!(time_error("2024-01-02T03:04:05.123456Z", true), None);
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
            assert_eq!(time_error(input, false).as_deref(), Some(message.as_str()), "{input:?}");
        }
        assert_eq!(
            time_error("2024-01-02T03:04:05Z", true).as_deref(),
            Some(
                "parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
            )
        );
    }

    #[test]
    fn quantities_fail_as_gos_parse() {
        for good in ["0", "1", "100m", "1.5Gi", "-2", "+3k", "1e3", "1E-2", "5.", ".5", "1Ki", ".", "-", ".k"] {
            assert_eq!(quantity_error(good), None, "{good}");
        }
        assert!(quantity_error("").unwrap().starts_with("quantities must match"));
        assert!(quantity_error("abc").unwrap().starts_with("quantities must match"));
        assert!(quantity_error("true").unwrap().starts_with("quantities must match"));
        assert!(quantity_error("1 Gi").unwrap().starts_with("quantities must match"));
        assert_eq!(
            quantity_error("1Gb"),
            Some("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        );
        assert_eq!(quantity_error("1MM"), Some("unable to parse quantity's suffix"));
        assert_eq!(quantity_error("1e"), Some("unable to parse quantity's suffix"));
        assert_eq!(quantity_error("+-1"), Some("unable to parse quantity's suffix"));
    }
}
