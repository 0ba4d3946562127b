//! Go's `base64.RawURLEncoding.DecodeString`, for the continue token.
//!
//! kube-apiserver rejects a token that is not base64url with Go's own error,
//! `illegal base64 data at input byte <n>`, and the offset is visible to
//! clients. Go skips CR and LF anywhere, rejects `=` padding and any other
//! non-alphabet byte at its own offset, and ignores non-zero trailing bits.
//! The `base64` crate does not skip CR and LF nor report Go's offset in every
//! case, so Go's walk over the input finds the error here, and the crate only
//! decodes input Go accepts.

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

/// Decodes like Go's `base64.RawURLEncoding.DecodeString`, or returns the
/// offset Go's `CorruptInputError` reports. Go skips CR and LF anywhere,
/// rejects any other non-alphabet byte (including `=` padding) at its own
/// offset, and rejects a final group of one character at that group's start.
pub(super) fn decode_base64(input: &[u8]) -> Result<Vec<u8>, usize> {
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
