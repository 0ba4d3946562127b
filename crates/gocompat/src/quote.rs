//! Go's `strconv.Quote` (the `%q` verb) and its printability test, which kube uses to show a
//! value inside an error message (listwatch-meta's field errors re-export [`go_quote`]).

/// Go's `strconv.Quote`, i.e. the `%q` verb kube uses to show values in
/// messages: double quotes, `\"` and `\\`, the short escapes `\a \b \f \n \r
/// \t \v`, `\xHH` for other control bytes, `\uHHHH` / `\UHHHHHHHH` for other
/// unprintable characters, and every printable character as is.
///
/// Go decides printability with Unicode tables (`strconv.IsPrint`); this uses
/// an approximation that agrees for ASCII, control and format characters,
/// non-ASCII spaces and private-use characters, and treats unassigned code
/// points as printable where Go would escape them.
pub fn go_quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        push_go_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

/// Appends `c` as `strconv.Quote` writes it inside a literal delimited by `quote`.
pub fn push_go_escaped(out: &mut String, c: char, quote: char) {
    use std::fmt::Write as _;
    match c {
        '\\' => out.push_str("\\\\"),
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        c if is_go_printable(c) => out.push(c),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// An approximation of Go's `strconv.IsPrint` (see [`go_quote`]).
pub fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let code = c as u32;
    let is_format = matches!(
        code,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
    );
    let is_private_or_noncharacter = matches!(
        code,
        0xE000..=0xF8FF | 0xF0000..=0x10FFFF | 0xFDD0..=0xFDEF
    ) || (code & 0xFFFE) == 0xFFFE;
    !is_format && !is_private_or_noncharacter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quote_matches_strconv_quote() {
        assert_eq!(go_quote("Foo"), "\"Foo\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("\n\t\r\u{7}\u{8}\u{c}\u{b}"), "\"\\n\\t\\r\\a\\b\\f\\v\"");
        assert_eq!(go_quote("\u{0}\u{1f}\u{7f}"), "\"\\x00\\x1f\\x7f\"");
        assert_eq!(go_quote("héllo 世界"), "\"héllo 世界\"");
        assert_eq!(go_quote("\u{a0}\u{200b}\u{feff}"), "\"\\u00a0\\u200b\\ufeff\"");
        assert_eq!(go_quote("\u{85}"), "\"\\u0085\"");
        assert_eq!(go_quote("\u{10ffff}"), "\"\\U0010ffff\"");
        assert_eq!(go_quote("'"), "\"'\"");
    }
}
