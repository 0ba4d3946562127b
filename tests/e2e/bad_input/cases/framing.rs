//! HTTP/1.1 framing as Go's net/http server judges it before any handler runs
//! (net/http `readRequest`, `transfer.go`): plain-text answers, not Statuses, so these rows
//! check the code and Go's text. And the WebSocket handshake of a watch (x/net/websocket as
//! vendored by the apiserver: no `Origin` is 403, a bad version, a missing key or more than
//! one subprotocol is 400).

use super::cms;
use crate::bad_input::table::{Case, Expect, Request};

const FRAMING: &str = "HTTP framing";
const WEBSOCKET: &str = "WebSocket handshake";

fn raw(text: &str) -> Request {
    Request::raw(text.as_bytes().to_vec())
}

/// A POST of `{}` to the configmaps with these extra header lines.
fn post_with(headers: &str, body: &str) -> Request {
    raw(&format!(
        "POST {}?dryRun=All HTTP/1.1\r\nHost: {{HOST}}\r\nContent-Type: application/json\r\n{headers}Connection: close\r\n\r\n{body}",
        cms()
    ))
}

fn websocket(headers: &str) -> Request {
    raw(&format!(
        "GET {}?watch=true HTTP/1.1\r\nHost: {{HOST}}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{headers}\r\n",
        cms()
    ))
}

const KEY: &str = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
const VERSION: &str = "Sec-WebSocket-Version: 13\r\n";
const ORIGIN: &str = "Origin: http://localhost\r\n";

/// hyper parses Transfer-Encoding before our code sees the request, and answers a coding it
/// does not know with a bare 400 where Go answers 501.
const HYPER_TE: &str = "hyper refuses unknown transfer codings with 400 before the handler runs";

pub fn rows() -> Vec<Case> {
    let (first, second) = r#"{"metadata":{"name":"chunked"}}"#.split_at(7);
    let chunked_body = format!("{:x}\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n", first.len(), second.len());
    // hyper checks its 1 MiB + 4 KiB limit between reads, so a header just past it can slip in
    // with one large read; 2 MiB is past it whatever the reads.
    let huge_header = format!("X-Big: {}\r\n", "h".repeat(2 * 1024 * 1024));
    vec![
        Case::new(
            FRAMING,
            "no Host",
            raw("GET /version HTTP/1.1\r\nConnection: close\r\n\r\n"),
            Expect::code(400).body_has("missing required Host header"),
        ),
        Case::new(
            FRAMING,
            "two Hosts",
            raw("GET /version HTTP/1.1\r\nHost: {HOST}\r\nHost: other\r\nConnection: close\r\n\r\n"),
            Expect::code(400).body_has("too many Host headers"),
        ),
        Case::new(
            FRAMING,
            "Host with a space",
            raw("GET /version HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n"),
            Expect::code(400).body_has("malformed Host header"),
        ),
        // HTTP/1.0 needs no Host.
        Case::new(FRAMING, "HTTP/1.0 without Host", raw("GET /version HTTP/1.0\r\n\r\n"), Expect::code(200)),
        Case::new(
            FRAMING,
            "Transfer-Encoding gzip",
            post_with("Transfer-Encoding: gzip\r\n", ""),
            Expect::code(501).body_has("Unsupported transfer encoding"),
        )
        .known_difference(HYPER_TE, Expect::code(400)),
        Case::new(
            FRAMING,
            "Transfer-Encoding chunked, gzip",
            post_with("Transfer-Encoding: chunked, gzip\r\n", ""),
            Expect::code(501).body_has("Unsupported transfer encoding"),
        )
        .known_difference(HYPER_TE, Expect::code(400)),
        Case::new(
            FRAMING,
            "Transfer-Encoding identity",
            post_with("Transfer-Encoding: identity\r\n", ""),
            Expect::code(501).body_has("Unsupported transfer encoding"),
        )
        .known_difference(HYPER_TE, Expect::code(400)),
        Case::new(
            FRAMING,
            "two Transfer-Encoding headers",
            post_with("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", ""),
            Expect::code(501).body_has("Unsupported transfer encoding"),
        ),
        Case::new(
            FRAMING,
            "chunked body (dry run)",
            post_with("Transfer-Encoding: chunked\r\n", &chunked_body),
            Expect::code(201),
        ),
        Case::new(FRAMING, "Content-Length abc", post_with("Content-Length: abc\r\n", "{}"), Expect::code(400)),
        Case::new(
            FRAMING,
            "two different Content-Lengths",
            post_with("Content-Length: 2\r\nContent-Length: 3\r\n", "{} "),
            Expect::code(400),
        ),
        Case::new(
            FRAMING,
            "header line without a colon",
            raw("GET /version HTTP/1.1\r\nHost: {HOST}\r\nno colon here\r\nConnection: close\r\n\r\n"),
            Expect::code(400),
        ),
        Case::new(
            FRAMING,
            "NUL in a header value",
            raw("GET /version HTTP/1.1\r\nHost: {HOST}\r\nX-Bad: a\0b\r\nConnection: close\r\n\r\n"),
            Expect::code(400),
        ),
        Case::new(
            FRAMING,
            "space in the request target",
            raw("GET /a b HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n"),
            Expect::code(400),
        ),
        Case::new(
            FRAMING,
            "bad percent-encoding in the path",
            raw(&format!("GET {}/%zz HTTP/1.1\r\nHost: {{HOST}}\r\nConnection: close\r\n\r\n", cms())),
            Expect::code(400),
        ),
        // Go's limit is 1 MiB of header (plus 4096 bytes of slack).
        Case::new(
            FRAMING,
            "header over 1 MiB",
            raw(&format!("GET /version HTTP/1.1\r\nHost: {{HOST}}\r\n{huge_header}Connection: close\r\n\r\n")),
            Expect::code(431),
        ),
        Case::new(WEBSOCKET, "watch upgrade without Origin", websocket(&format!("{KEY}{VERSION}")), Expect::code(403)),
        Case::new(
            WEBSOCKET,
            "watch upgrade with version 12",
            websocket(&format!("{KEY}Sec-WebSocket-Version: 12\r\n{ORIGIN}")),
            Expect::code(400),
        ),
        Case::new(
            WEBSOCKET,
            "watch upgrade without a key",
            websocket(&format!("{VERSION}{ORIGIN}")),
            Expect::code(400),
        ),
        Case::new(
            WEBSOCKET,
            "watch upgrade offering two subprotocols",
            websocket(&format!("{KEY}{VERSION}{ORIGIN}Sec-WebSocket-Protocol: a, b\r\n")),
            Expect::code(400),
        ),
        Case::new(WEBSOCKET, "watch upgrade", websocket(&format!("{KEY}{VERSION}{ORIGIN}")), Expect::stream(101)),
    ]
}
