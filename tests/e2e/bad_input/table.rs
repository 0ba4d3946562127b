//! One row of the bad-input table: a request as it goes on the wire and the answer
//! kube-apiserver 1.32 gives it, with the checks that compare an answer against that.

use serde_json::Value;

use super::raw::{Read, Response};

/// A row.
pub struct Case {
    /// The class the row belongs to (how failures are grouped in the report).
    pub class: &'static str,
    pub name: String,
    pub request: Request,
    pub expect: Expect,
    /// Where listwatch knowingly answers otherwise: why, and the answer it gives instead.
    pub known: Option<KnownDifference>,
}

/// A difference from kube-apiserver that is known and stated (docs/differences.md lists them). The
/// row then asserts listwatch's own answer, so it still catches a 500, a hang or a write,
/// and it reports when the answer has become kube's (time to drop the difference).
pub struct KnownDifference {
    pub why: &'static str,
    pub ours: Expect,
}

impl Case {
    pub fn new(class: &'static str, name: impl Into<String>, request: Request, expect: Expect) -> Case {
        Case { class, name: name.into(), request, expect, known: None }
    }

    /// Marks the row as a known difference: listwatch answers `ours`, for the reason `why`.
    pub fn known_difference(mut self, why: &'static str, ours: Expect) -> Case {
        self.known = Some(KnownDifference { why, ours });
        self
    }

    /// The answer this row asserts: kube-apiserver's, or ours where the difference is known.
    pub fn asserted(&self) -> &Expect {
        self.known.as_ref().map_or(&self.expect, |k| &k.ours)
    }
}

/// A request. `Host`, `Content-Length` and `Connection: close` are added unless the row
/// writes its own bytes (`raw`).
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Bytes sent verbatim; `{HOST}` is replaced by the server's address.
    pub raw: Option<Vec<u8>>,
    /// Send no `Content-Type` even with a body.
    pub no_content_type: bool,
}

impl Request {
    pub fn new(method: &str, target: impl Into<String>) -> Request {
        Request {
            method: method.into(),
            target: target.into(),
            headers: Vec::new(),
            body: Vec::new(),
            raw: None,
            no_content_type: false,
        }
    }

    /// Exactly these bytes.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Request {
        let mut request = Request::new("RAW", "");
        request.raw = Some(bytes.into());
        request
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    pub fn json(self, body: &Value) -> Request {
        self.body(body.to_string())
    }

    pub fn content_type(self, value: &str) -> Request {
        self.header("Content-Type", value)
    }

    pub fn no_content_type(mut self) -> Request {
        self.no_content_type = true;
        self
    }

    pub fn accept(self, value: &str) -> Request {
        self.header("Accept", value)
    }

    /// `METHOD target` for the report.
    pub fn summary(&self) -> String {
        match &self.raw {
            Some(raw) => {
                let text = String::from_utf8_lossy(raw);
                format!("raw {:?}", text.lines().next().unwrap_or(""))
            }
            None => {
                let target = if self.target.len() > 120 {
                    format!("{}...", cut(&self.target, 120))
                } else {
                    self.target.clone()
                };
                format!("{} {}", self.method, target)
            }
        }
    }

    /// The bytes to send to `host`.
    pub fn to_bytes(&self, host: &str) -> Vec<u8> {
        if let Some(raw) = &self.raw {
            let text = raw.clone();
            return replace(&text, b"{HOST}", host.as_bytes());
        }
        let mut head =
            format!("{} {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: bad-input-table\r\n", self.method, self.target);
        let has = |name: &str| self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.body.is_empty() && !self.no_content_type && !has("Content-Type") {
            head.push_str("Content-Type: application/json\r\n");
        }
        if !self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// What the message of a Status must be.
#[derive(Clone, Debug)]
pub enum Message {
    Any,
    Exact(String),
    Contains(Vec<String>),
}

/// The answer kube-apiserver gives.
#[derive(Clone, Debug)]
pub struct Expect {
    pub code: u16,
    /// For a Status answer: its `reason`.
    pub reason: Option<String>,
    pub message: Message,
    /// `details.name`, `details.kind`, `details.group` that must be as given.
    pub details: Vec<(&'static str, String)>,
    /// `(field, reason)` each of which some `details.causes` entry must carry.
    pub causes: Vec<(String, String)>,
    /// Headers that must be present with this value.
    pub headers: Vec<(&'static str, String)>,
    /// `Allow` must list exactly these methods (in any order).
    pub allow: Option<Vec<&'static str>>,
    /// Values at JSON pointers of the body (answers that are not a Status).
    pub json: Vec<(&'static str, Value)>,
    /// JSON pointers the body must not have.
    pub absent: Vec<&'static str>,
    /// Text the body must contain (plain-text answers).
    pub body_contains: Vec<String>,
    /// Read only the head (watch streams, protocol switches).
    pub read: Read,
}

impl Expect {
    /// A Status with this code and reason.
    pub fn status(code: u16, reason: &str) -> Expect {
        Expect {
            code,
            reason: Some(reason.into()),
            message: Message::Any,
            details: Vec::new(),
            causes: Vec::new(),
            headers: Vec::new(),
            allow: None,
            json: Vec::new(),
            absent: Vec::new(),
            body_contains: Vec::new(),
            read: Read::Body,
        }
    }

    /// Only the HTTP code (plain-text answers from Go's HTTP server, or success bodies).
    pub fn code(code: u16) -> Expect {
        Expect { reason: None, ..Expect::status(code, "") }
    }

    /// A successful watch: the head only.
    pub fn stream(code: u16) -> Expect {
        Expect { read: Read::Head, ..Expect::code(code) }
    }

    pub fn msg(mut self, message: impl Into<String>) -> Expect {
        self.message = Message::Exact(message.into());
        self
    }

    pub fn msg_has(mut self, part: impl Into<String>) -> Expect {
        match &mut self.message {
            Message::Contains(parts) => parts.push(part.into()),
            _ => self.message = Message::Contains(vec![part.into()]),
        }
        self
    }

    pub fn name(mut self, name: impl Into<String>) -> Expect {
        self.details.push(("name", name.into()));
        self
    }

    pub fn kind(mut self, kind: impl Into<String>) -> Expect {
        self.details.push(("kind", kind.into()));
        self
    }

    pub fn group(mut self, group: impl Into<String>) -> Expect {
        self.details.push(("group", group.into()));
        self
    }

    pub fn cause(mut self, field: impl Into<String>, reason: &str) -> Expect {
        self.causes.push((field.into(), reason.into()));
        self
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Expect {
        self.headers.push((name, value.into()));
        self
    }

    pub fn allow(mut self, methods: &[&'static str]) -> Expect {
        self.allow = Some(methods.to_vec());
        self
    }

    pub fn json_at(mut self, pointer: &'static str, value: Value) -> Expect {
        self.json.push((pointer, value));
        self
    }

    pub fn json_absent(mut self, pointer: &'static str) -> Expect {
        self.absent.push(pointer);
        self
    }

    pub fn body_has(mut self, text: impl Into<String>) -> Expect {
        self.body_contains.push(text.into());
        self
    }

    /// Every difference between `got` and this expectation.
    pub fn check(&self, got: &Response) -> Vec<String> {
        let mut problems = Vec::new();
        if got.code != self.code {
            problems.push(format!("code {} (want {})", got.code, self.code));
        }
        let body: Option<Value> = serde_json::from_slice(&got.body).ok();
        if let Some(reason) = &self.reason {
            match &body {
                Some(status) if status["kind"] == "Status" => {
                    self.check_status(status, got.code, reason, &mut problems);
                }
                _ => problems.push(format!("not a Status: {}", preview(&got.body))),
            }
        }
        for (name, value) in &self.headers {
            match got.header(name) {
                Some(v) if v == value => {}
                other => problems.push(format!("header {name}: {other:?} (want {value:?})")),
            }
        }
        if let Some(methods) = &self.allow {
            let mut got_methods: Vec<String> = got
                .header_values("allow")
                .iter()
                .flat_map(|v| v.split(','))
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty())
                .collect();
            got_methods.sort();
            let mut want: Vec<String> = methods.iter().map(std::string::ToString::to_string).collect();
            want.sort();
            if got_methods != want {
                problems.push(format!("Allow {got_methods:?} (want {want:?})"));
            }
        }
        for (pointer, value) in &self.json {
            let found = body.as_ref().and_then(|b| b.pointer(pointer));
            if found != Some(value) {
                problems.push(format!("{pointer} = {found:?} (want {value})"));
            }
        }
        for pointer in &self.absent {
            if let Some(found) = body.as_ref().and_then(|b| b.pointer(pointer)) {
                problems.push(format!("{pointer} = {found} (want none)"));
            }
        }
        let text = String::from_utf8_lossy(&got.body);
        for part in &self.body_contains {
            if !text.contains(part.as_str()) {
                problems.push(format!("body lacks {part:?}: {}", preview(&got.body)));
            }
        }
        problems
    }

    fn check_status(&self, status: &Value, http_code: u16, reason: &str, problems: &mut Vec<String>) {
        let same = |key: &str, want: Value| {
            if status[key] != want { Some(format!("{key} {} (want {want})", status[key])) } else { None }
        };
        problems.extend(same("apiVersion", "v1".into()));
        problems.extend(same("status", "Failure".into()));
        // The Status carries the code the response has (the HTTP code is compared above).
        problems.extend(same("code", http_code.into()));
        problems.extend(same("reason", reason.into()));
        let message = status["message"].as_str().unwrap_or("");
        match &self.message {
            Message::Any => {}
            Message::Exact(want) if message == want => {}
            Message::Exact(want) => problems.push(format!("message {} (want {})", quote(message), quote(want))),
            Message::Contains(parts) => {
                for part in parts.iter().filter(|p| !message.contains(p.as_str())) {
                    problems.push(format!("message {} (want it to contain {})", quote(message), quote(part)));
                }
            }
        }
        for (key, want) in &self.details {
            let got = status["details"][key].as_str().unwrap_or("");
            if got != want {
                problems.push(format!("details.{key} {got:?} (want {want:?})"));
            }
        }
        let causes = status["details"]["causes"].as_array().cloned().unwrap_or_default();
        for (field, reason) in &self.causes {
            let present = causes.iter().any(|c| {
                c["field"].as_str().unwrap_or("") == field.as_str()
                    && c["reason"].as_str().unwrap_or("") == reason.as_str()
            });
            if !present {
                let got: Vec<String> = causes.iter().map(|c| format!("{}/{}", c["field"], c["reason"])).collect();
                problems.push(format!("no cause {field}/{reason} (got {got:?})"));
            }
        }
    }
}

/// A message for the report: long ones cut.
fn quote(text: &str) -> String {
    if text.len() > 400 { format!("{:?}...", cut(text, 400)) } else { format!("{text:?}") }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub fn preview(body: &[u8]) -> String {
    quote(&String::from_utf8_lossy(body))
}
