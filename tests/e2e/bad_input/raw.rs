//! A bare HTTP/1.1 client over TCP: the bad-input table needs requests no well-behaved
//! client will send (no Host, two Hosts, odd Transfer-Encodings, paths with `..` or `%2F`
//! kept as written), and needs to see the answer byte for byte.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What came back: the status code, the headers (names lower-cased) and the body (de-chunked).
#[derive(Debug, Default)]
pub struct Response {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body ended (Content-Length reached, last chunk, or the connection closed) rather
    /// than reading stopped after the headers or at the deadline.
    pub complete: bool,
}

impl Response {
    /// The values of a header, in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_values(name).into_iter().next()
    }
}

/// How much of the answer to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The whole body.
    Body,
    /// Only the status line and headers (a watch stream, a protocol switch).
    Head,
}

/// Sends `request` (bytes as they go on the wire) to `addr` and reads the answer, within
/// `deadline` overall. The request is written from its own task so that a server answering
/// before it has read a large body (413) is still heard.
pub async fn exchange(addr: &str, request: Vec<u8>, read: Read, deadline: Duration) -> Result<Response, String> {
    let work = async {
        let stream = TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
        let (mut reader, mut writer) = stream.into_split();
        let writing = tokio::spawn(async move {
            // A server may close early (a refused body): that is its answer, not our error.
            let _ = writer.write_all(&request).await;
            let _ = writer.flush().await;
            writer
        });
        let response = read_response(&mut reader, read).await;
        writing.abort();
        response
    };
    match tokio::time::timeout(deadline, work).await {
        Ok(result) => result,
        Err(_) => Err(format!("no complete answer within {deadline:?}")),
    }
}

async fn read_response(reader: &mut tokio::net::tcp::OwnedReadHalf, read: Read) -> Result<Response, String> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        if !fill(reader, &mut buffer).await? {
            return Err(if buffer.is_empty() {
                "the connection closed without an answer".to_string()
            } else {
                format!("the connection closed inside the headers: {:?}", String::from_utf8_lossy(&buffer))
            });
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let code = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not an HTTP status line: {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let mut response = Response { code, headers, body: Vec::new(), complete: false };
    let mut rest = buffer.split_off(head_end + 4);
    if read == Read::Head || code == 101 || code == 204 || code == 304 {
        return Ok(response);
    }
    let chunked = response.header("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked"));
    let length = response.header("content-length").and_then(|l| l.parse::<usize>().ok());
    if chunked {
        let mut body = Vec::new();
        loop {
            let Some(line_end) = find(&rest, b"\r\n") else {
                if !fill(reader, &mut rest).await? {
                    break;
                }
                continue;
            };
            let size_text = String::from_utf8_lossy(&rest[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| format!("a bad chunk size line: {size_text:?}"))?;
            if size == 0 {
                response.complete = true;
                break;
            }
            while rest.len() < line_end + 2 + size + 2 {
                if !fill(reader, &mut rest).await? {
                    return Err("the connection closed inside a chunk".into());
                }
            }
            body.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
            rest.drain(..line_end + 2 + size + 2);
        }
        response.body = body;
    } else if let Some(length) = length {
        while rest.len() < length {
            if !fill(reader, &mut rest).await? {
                break;
            }
        }
        rest.truncate(length);
        response.complete = rest.len() == length;
        response.body = rest;
    } else {
        while fill(reader, &mut rest).await? {}
        response.complete = true;
        response.body = rest;
    }
    Ok(response)
}

/// Reads more into `buffer`; false at the end of the stream (a reset after some data counts
/// as the end: a server refusing a body may reset the connection behind its answer).
async fn fill(reader: &mut tokio::net::tcp::OwnedReadHalf, buffer: &mut Vec<u8>) -> Result<bool, String> {
    let mut chunk = [0u8; 16 * 1024];
    match reader.read(&mut chunk).await {
        Ok(0) => Ok(false),
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !buffer.is_empty() => Ok(false),
        Err(e) => Err(format!("read: {e}")),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
