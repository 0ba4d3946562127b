//! Framing: cutting a watch body, which arrives in chunks cut at arbitrary points, into one
//! frame per event, before any event is decoded.
//!
//! * [`JsonStreamFramer`]: a JSON watch, by lines while every line is one event, by scanning
//!   value boundaries ([`JsonFramer`]) from the first line that is not;
//! * [`JsonFramer`]: JSON values found by tracking string, escape and nesting state; also what
//!   frames the `items` of a streamed list (`list_decoder.rs`);
//! * [`ProtobufFramer`]: a protobuf watch, 4-byte big-endian length prefixes.
//!
//! The framers know nothing of events: they only bound what they buffer (`max_event_bytes`)
//! and hand out byte slices. Deciding whether a frame is an event is the decoder's job
//! (`event.rs`), which is why the JSON line framer asks its caller whether a candidate line
//! decoded before trusting lines any further.

use std::ops::ControlFlow;

use crate::error::Error;

/// Finds complete JSON values in a byte stream cut at arbitrary points.
///
/// Only the bytes that change the scanner's state are visited: outside strings it jumps
/// (`memchr`) to the next `{`, `}` or `"`, inside strings to the next `"` or `\`. Brackets need
/// no counting: in valid JSON they nest inside the braces, and invalid JSON is the event
/// decoder's to reject. Values that lie wholly inside one pushed chunk are handed out as slices
/// of it; only an event cut by a chunk boundary is copied, into `partial`.
#[derive(Debug)]
pub struct JsonFramer {
    /// The start of the value cut off by the last chunk boundary (empty between values).
    partial: Vec<u8>,
    /// Open braces of the value being scanned (0: between values).
    depth: u32,
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
    max_event_bytes: usize,
}

impl JsonFramer {
    /// A framer that fails on a value larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> JsonFramer {
        JsonFramer { partial: Vec::new(), depth: 0, in_string: false, escaped: false, max_event_bytes }
    }

    /// Adds bytes and calls `each` with every JSON value they complete.
    pub fn push(&mut self, bytes: &[u8], each: impl FnMut(&[u8])) -> Result<(), Error> {
        self.push_values(bytes, each, false).map(|_| ())
    }

    /// Like [`push`](Self::push) for the elements of a JSON array whose `[` came before:
    /// commas between elements are skipped, and the `]` that closes the array ends the scan
    /// (its index in `bytes` is returned).
    pub(crate) fn push_array_elements(
        &mut self,
        bytes: &[u8],
        each: impl FnMut(&[u8]),
    ) -> Result<Option<usize>, Error> {
        self.push_values(bytes, each, true)
    }

    fn push_values(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8]), array: bool) -> Result<Option<usize>, Error> {
        let mut at = 0;
        if self.depth > 0 {
            // Finish the value an earlier chunk began.
            match self.scan(bytes, 0) {
                Some(end) => {
                    self.partial.extend_from_slice(&bytes[..=end]);
                    each(&self.partial);
                    self.partial.clear();
                    at = end + 1;
                }
                None => {
                    self.partial.extend_from_slice(bytes);
                    return self.check_size(self.partial.len()).map(|_| None);
                }
            }
        }
        loop {
            while at < bytes.len() && (matches!(bytes[at], b' ' | b'\n' | b'\r' | b'\t') || array && bytes[at] == b',')
            {
                at += 1;
            }
            if at == bytes.len() {
                return Ok(None);
            }
            if array && bytes[at] == b']' {
                return Ok(Some(at));
            }
            if bytes[at] != b'{' {
                let (what, expected) =
                    if array { ("a JSON list", "an item object") } else { ("a JSON watch stream", "an event object") };
                return Err(Error::decode(what, format!("expected {expected}, found byte {:?}", bytes[at] as char)));
            }
            self.depth = 1;
            match self.scan(bytes, at + 1) {
                Some(end) => {
                    each(&bytes[at..=end]);
                    at = end + 1;
                }
                None => {
                    self.check_size(bytes.len() - at)?;
                    self.partial.extend_from_slice(&bytes[at..]);
                    return Ok(None);
                }
            }
        }
    }

    /// Looks for the end of the value that starts at or after `bytes[at..]` (whitespace
    /// before it is skipped), keeping its state between calls over a growing buffer: the end's
    /// index, `None` while incomplete, `Err` if something other than an object starts.
    fn probe(&mut self, bytes: &[u8], mut at: usize) -> Result<Option<usize>, ()> {
        if self.depth == 0 {
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if at == bytes.len() {
                return Ok(None);
            }
            if bytes[at] != b'{' {
                return Err(());
            }
            self.depth = 1;
            at += 1;
        }
        Ok(self.scan(bytes, at))
    }

    /// Scans `bytes[from..]` inside a value; returns the index of the brace that closes it, or
    /// `None` (the state then describes the end of `bytes`).
    fn scan(&mut self, bytes: &[u8], mut at: usize) -> Option<usize> {
        while at < bytes.len() {
            if self.escaped {
                self.escaped = false;
                at += 1;
            } else if self.in_string {
                let found = at + memchr::memchr2(b'"', b'\\', &bytes[at..])?;
                if bytes[found] == b'"' {
                    self.in_string = false;
                } else {
                    self.escaped = true;
                }
                at = found + 1;
            } else {
                let found = at + memchr::memchr3(b'"', b'{', b'}', &bytes[at..])?;
                match bytes[found] {
                    b'"' => self.in_string = true,
                    b'{' => self.depth += 1,
                    _ => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            return Some(found);
                        }
                    }
                }
                at = found + 1;
            }
        }
        None
    }

    fn check_size(&self, len: usize) -> Result<(), Error> {
        if len > self.max_event_bytes {
            return Err(Error::decode(
                "a JSON watch stream",
                format!("an event is larger than {} bytes", self.max_event_bytes),
            ));
        }
        Ok(())
    }

    /// Whether the stream stopped in the middle of an event.
    pub fn is_mid_event(&self) -> bool {
        self.depth > 0
    }
}

/// Frames a JSON watch stream: by lines while every line is one event, by scanning after.
///
/// `each` gets every frame with a flag saying whether it is only a candidate (a line, or a value
/// that ended without its newline yet). A candidate that `each` rejects (`Break`: it is not one
/// decodable value) switches the stream, from that frame on, to [`JsonFramer`]; frames found by
/// scanning are final, and `each` reports their errors itself.
#[derive(Debug)]
pub struct JsonStreamFramer {
    mode: Mode,
    max_event_bytes: usize,
}

#[derive(Debug)]
enum Mode {
    Lines {
        /// The line cut off by the last chunk boundary.
        partial: Vec<u8>,
        /// Scanner state over `partial[..probed]`: a value that ends before its newline
        /// arrives (or on a server that writes none) is handed out without waiting.
        probe: JsonFramer,
        probed: usize,
    },
    Scan(JsonFramer),
}

impl JsonStreamFramer {
    /// A framer that fails on an event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> JsonStreamFramer {
        let probe = JsonFramer::new(max_event_bytes);
        JsonStreamFramer { mode: Mode::Lines { partial: Vec::new(), probe, probed: 0 }, max_event_bytes }
    }

    /// Adds bytes and calls `each(frame, candidate)` with every frame they complete.
    pub fn push(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8], bool) -> ControlFlow<()>) -> Result<(), Error> {
        let max_event_bytes = self.max_event_bytes;
        let (partial, probe, probed) = match &mut self.mode {
            Mode::Scan(scanner) => {
                return scanner.push(bytes, |frame| {
                    let _ = each(frame, false);
                });
            }
            Mode::Lines { partial, probe, probed } => (partial, probe, probed),
        };
        let is_blank = |line: &[u8]| line.iter().all(u8::is_ascii_whitespace);
        // What to scan instead when a candidate is rejected: the buffered bytes from the rejected
        // frame on, then `bytes[rest..]`.
        let mut rejected: Option<(Vec<u8>, usize)> = None;
        let mut at = 0;
        if !partial.is_empty() {
            match memchr::memchr(b'\n', bytes) {
                None => {
                    partial.extend_from_slice(bytes);
                    at = bytes.len();
                }
                Some(newline) => {
                    partial.extend_from_slice(&bytes[..newline]);
                    at = newline + 1;
                    if !is_blank(partial) && each(partial, true).is_break() {
                        rejected = Some((std::mem::take(partial), at));
                    }
                    partial.clear();
                    *probe = JsonFramer::new(max_event_bytes);
                    *probed = 0;
                }
            }
        }
        if rejected.is_none() && at < bytes.len() {
            while let Some(offset) = memchr::memchr(b'\n', &bytes[at..]) {
                let (line, next) = (&bytes[at..at + offset], at + offset + 1);
                if !is_blank(line) && each(line, true).is_break() {
                    rejected = Some((line.to_vec(), next));
                    break;
                }
                at = next;
            }
            if rejected.is_none() {
                partial.extend_from_slice(&bytes[at..]);
            }
        }
        while rejected.is_none() && !is_blank(partial) {
            match probe.probe(partial, *probed) {
                Ok(Some(end)) => {
                    if each(&partial[..=end], true).is_break() {
                        rejected = Some((std::mem::take(partial), bytes.len()));
                    } else {
                        partial.drain(..=end);
                        *probed = 0;
                    }
                }
                Ok(None) => {
                    *probed = partial.len();
                    probe.check_size(partial.len())?;
                    break;
                }
                // Not JSON: the scanner reports it.
                Err(()) => rejected = Some((std::mem::take(partial), bytes.len())),
            }
        }
        if let Some((buffered, rest)) = rejected {
            let mut scanner = JsonFramer::new(max_event_bytes);
            let mut final_frame = |frame: &[u8]| {
                let _ = each(frame, false);
            };
            scanner.push(&buffered, &mut final_frame)?;
            scanner.push(&bytes[rest..], &mut final_frame)?;
            self.mode = Mode::Scan(scanner);
        }
        Ok(())
    }

    /// Whether the stream stopped in the middle of an event.
    pub fn is_mid_event(&self) -> bool {
        match &self.mode {
            Mode::Lines { partial, .. } => !partial.iter().all(u8::is_ascii_whitespace),
            Mode::Scan(scanner) => scanner.is_mid_event(),
        }
    }
}

/// Cuts a protobuf watch stream into its length-prefixed frames.
#[derive(Debug)]
pub struct ProtobufFramer {
    buf: Vec<u8>,
    start: usize,
    max_event_bytes: usize,
}

impl ProtobufFramer {
    /// A framer that fails on a frame larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> ProtobufFramer {
        ProtobufFramer { buf: Vec::new(), start: 0, max_event_bytes }
    }

    /// Adds bytes and calls `each` with every frame body they complete.
    pub fn push(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8])) -> Result<(), Error> {
        self.buf.extend_from_slice(bytes);
        loop {
            let rest = &self.buf[self.start..];
            if rest.len() < 4 {
                break;
            }
            let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if len > self.max_event_bytes {
                return Err(Error::decode(
                    "a protobuf watch stream",
                    format!("a frame of {len} bytes is larger than {} bytes", self.max_event_bytes),
                ));
            }
            if rest.len() - 4 < len {
                break;
            }
            each(&rest[4..4 + len]);
            self.start += 4 + len;
        }
        self.buf.drain(..self.start);
        self.start = 0;
        Ok(())
    }

    /// Whether bytes of an unfinished frame are held (a stream ending now was cut short).
    pub fn is_mid_event(&self) -> bool {
        !self.buf.is_empty()
    }
}
