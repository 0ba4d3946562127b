//! Go's `encoding/base64`, where its error is visible to clients: `illegal base64 data at input
//! byte <n>` ([`corrupt_input`]), with Go's offset.
//!
//! * [`decode_raw_url`]: `base64.RawURLEncoding.DecodeString`, for kube's continue token. Go
//!   skips CR and LF anywhere, rejects `=` padding and any other non-alphabet byte at its own
//!   offset, and ignores non-zero trailing bits. The `base64` crate does not skip CR and LF nor
//!   report Go's offset in every case, so Go's walk over the input finds the error here, and the
//!   crate only decodes input Go accepts.
//! * [`std_error`]: `base64.StdEncoding`'s error for a `[]byte` field's string (a Secret's
//!   `data`), which kube's JSON decoder reports.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};

/// The base64url alphabet value of `byte`.
fn base64url_value(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// `CorruptInputError.Error()`: `illegal base64 data at input byte <offset>`.
pub fn corrupt_input(offset: usize) -> String {
    format!("illegal base64 data at input byte {offset}")
}

/// Decodes like Go's `base64.RawURLEncoding.DecodeString`, or returns the
/// offset Go's `CorruptInputError` reports. Go skips CR and LF anywhere,
/// rejects any other non-alphabet byte (including `=` padding) at its own
/// offset, and rejects a final group of one character at that group's start.
pub fn decode_raw_url(input: &[u8]) -> Result<Vec<u8>, usize> {
    // Find Go's error first, walking its 4-character groups.
    let mut position = 0;
    'groups: loop {
        let mut in_group = 0;
        while in_group < 4 {
            let Some(&byte) = input.get(position) else {
                if in_group == 1 {
                    return Err(position - 1);
                }
                break 'groups;
            };
            position += 1;
            if base64url_value(byte).is_some() {
                in_group += 1;
            } else if byte != b'\n' && byte != b'\r' {
                return Err(position - 1);
            }
        }
    }
    let cleaned: Vec<u8> = input.iter().copied().filter(|&b| b != b'\n' && b != b'\r').collect();
    // Go accepts non-zero bits left over in the last character.
    const GO_RAW_URL: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    GO_RAW_URL.decode(cleaned).map_err(|_| 0)
}

/// `base64.StdEncoding.Decode`'s error: `illegal base64 data at input byte N`. Go skips `\r`
/// and `\n` anywhere, wants padding to a multiple of four, and reports the offset where it
/// gave up (its `decodeQuantum`, one quantum at a time).
pub fn std_error(text: &str) -> Option<String> {
    let src = text.as_bytes();
    let mut si = 0;
    while si < src.len() {
        match base64_quantum(src, si) {
            Ok(next) => si = next,
            Err(offset) => return Some(corrupt_input(offset)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_url_decodes_what_go_decodes() {
        assert_eq!(decode_raw_url(b"eyJ2IjoxfQ"), Ok(b"{\"v\":1}".to_vec()));
        assert_eq!(decode_raw_url(b"eyJ2Ij\r\noxfQ"), Ok(b"{\"v\":1}".to_vec()));
        // Non-zero bits left over in the last character are ignored, as by Go.
        assert_eq!(decode_raw_url(b"YR"), Ok(b"a".to_vec()));
        assert_eq!(decode_raw_url(b""), Ok(Vec::new()));
    }

    #[test]
    fn raw_url_offsets_are_gos() {
        let cases: [(&[u8], usize); 6] =
            [(b"abc!", 3), (b"eyJ2IjoibWV0YS==", 14), (b"a+b/", 1), (b"abcde", 4), (b"abcd\ne", 5), (b" ", 0)];
        for (input, offset) in cases {
            assert_eq!(decode_raw_url(input), Err(offset), "{:?}", String::from_utf8_lossy(input));
        }
        assert_eq!(corrupt_input(4), "illegal base64 data at input byte 4");
    }

    #[test]
    fn std_offsets_are_gos() {
        for good in ["", "dg==", "Zm9vYmFy", "Zm9v\nYmFy", "Zm8=", "Zm8=\r\n"] {
            assert_eq!(std_error(good), None, "{good:?}");
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
            assert_eq!(std_error(input), Some(format!("illegal base64 data at input byte {offset}")), "{input:?}");
        }
    }
}
