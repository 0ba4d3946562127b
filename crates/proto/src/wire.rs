//! Protobuf wire format primitives: varints, field keys, length-delimited fields.
//!
//! The encoder writes bytes itself instead of building prost-reflect `DynamicMessage`s
//! because it has to control the byte order (fields by ascending number and map entries by
//! ascending key, as Go's generated marshallers write them, so output is deterministic and
//! comparable with kube-apiserver's) and because the envelope and watch helpers splice
//! already-encoded objects without re-encoding them. The reader is only for the small fixed
//! messages (runtime.Unknown) whose payload must be borrowed, not copied.

pub(crate) const VARINT: u32 = 0;
pub(crate) const FIXED64: u32 = 1;
pub(crate) const LENGTH_DELIMITED: u32 = 2;
pub(crate) const FIXED32: u32 = 5;

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn varint_len(value: u64) -> usize {
    // One byte per started group of seven bits; zero still takes one byte.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u32) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, LENGTH_DELIMITED);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The size of a length-delimited field holding `len` bytes, key included (keys here are one
/// byte: field numbers below 16).
pub(crate) fn delimited_len(number: u32, len: usize) -> usize {
    varint_len(u64::from(number) << 3) + varint_len(len as u64) + len
}

/// Reads the fields of one message, borrowing length-delimited payloads.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

pub(crate) enum FieldValue<'a> {
    Bytes(&'a [u8]),
    /// A varint or fixed-width value; the envelope has none it needs.
    Other,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// The next `(field number, value)`, `None` at the end, `Err` on malformed input.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, FieldValue<'a>)>, &'static str> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        if number == 0 {
            return Err("field number 0");
        }
        let value = match (key & 7) as u32 {
            VARINT => {
                self.varint()?;
                FieldValue::Other
            }
            FIXED64 => {
                self.take(8)?;
                FieldValue::Other
            }
            LENGTH_DELIMITED => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                FieldValue::Bytes(self.take(len)?)
            }
            FIXED32 => {
                self.take(4)?;
                FieldValue::Other
            }
            _ => return Err("unsupported wire type"),
        };
        Ok(Some((number, value)))
    }

    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut value = 0_u64;
        for (i, &byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err("truncated or overlong varint")
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], &'static str> {
        if self.rest.len() < len {
            return Err("truncated field");
        }
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_match_encodings() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            let mut reader = Reader::new(&out);
            assert_eq!(reader.varint(), Ok(value));
        }
    }
}
