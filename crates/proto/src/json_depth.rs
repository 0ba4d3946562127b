//! How deep JSON nests, counted byte by byte without parsing: the one scan both the request
//! decoder (kube's 10,000-level limit on bodies) and the encoder (the nesting a stored object
//! may have) use to refuse input before a recursive parser or reader meets it.

/// The first `{` or `[` (outside strings) that opens a level deeper than `max_depth`, if any.
pub fn opener_past(json: &[u8], max_depth: usize) -> Option<u8> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max_depth {
                    return Some(b);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::opener_past;

    #[test]
    fn counts_objects_and_arrays_outside_strings() {
        assert_eq!(opener_past(b"1", 0), None);
        let three = br#"{"a":[{"b":"[[[{"}]}"#;
        assert_eq!(opener_past(three, 3), None);
        assert_eq!(opener_past(three, 2), Some(b'{'));
        let one = br#"{"a":"\"{{"}"#;
        assert_eq!(opener_past(one, 1), None);
        assert_eq!(opener_past(one, 0), Some(b'{'));
    }
}
