//! Reading request bodies: the size limit (413), the content type (415) and the JSON (400).
//!
//! Every JSON body is decoded by [`from_json`], which nests as deep as kube's decoder does
//! (Go's encoding/json: 10,000 levels; serde_json alone stops at 128), growing the stack as
//! it goes, and answers deeper documents with Go's error.

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::BodyExt;
use listwatch_meta::{ApiError, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// How deep Go's JSON scanner lets objects and arrays nest (`maxNestingDepth`).
pub const MAX_JSON_DEPTH: usize = 10_000;

/// Why a body is not JSON kube would decode.
#[derive(Debug)]
pub enum JsonError {
    /// Nested past [`MAX_JSON_DEPTH`]; the `{` or `[` that went one level too deep.
    TooDeep(u8),
    Syntax(serde_json::Error),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Go's scanner error, word for word.
            JsonError::TooDeep(opener) => write!(f, "invalid character '{}' exceeded max depth", *opener as char),
            JsonError::Syntax(e) => e.fmt(f),
        }
    }
}

/// Decodes a JSON request body, nested up to [`MAX_JSON_DEPTH`] levels.
pub fn from_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, JsonError> {
    if let Some(opener) = too_deep(body) {
        return Err(JsonError::TooDeep(opener));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    de.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de)).map_err(JsonError::Syntax)?;
    de.end().map_err(JsonError::Syntax)?;
    Ok(value)
}

/// The first `{` or `[` (outside strings) that opens level `MAX_JSON_DEPTH + 1`, if any.
fn too_deep(body: &[u8]) -> Option<u8> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in body {
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
                if depth > MAX_JSON_DEPTH {
                    return Some(b);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// kube-apiserver's limit on a request body (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reads the whole body, refusing more than `limit` bytes with 413.
pub async fn read<B>(body: B, limit: usize) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut body = std::pin::pin!(body);
    let mut out = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("error reading the request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(ApiError::request_entity_too_large(format!("limit is {limit}")));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

/// The request's media type without parameters, lower-cased (`application/json`).
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Decodes an object body for `resource` (JSON; 415 for other types): it must be a JSON
/// object whose apiVersion and kind, when given, are the resource's.
pub fn decode_object(headers: &HeaderMap, body: &[u8], resource: &Resource) -> Result<Map<String, Value>, ApiError> {
    let ct = content_type(headers);
    if !(ct.is_empty() || ct == "application/json" || ct == "*/*") {
        return Err(ApiError::unsupported_media_type(&ct));
    }
    parse_object(body, resource)
}

/// Parses and checks a JSON object body.
pub fn parse_object(body: &[u8], resource: &Resource) -> Result<Map<String, Value>, ApiError> {
    let value: Value = from_json(body).map_err(|e| {
        // kube ends the message with a summary of the body (its first 30 bytes); the depth
        // error is Go's own, so it gets kube's whole message.
        let summary = match &e {
            JsonError::TooDeep(_) => format!(" ({} ...)", String::from_utf8_lossy(&body[..body.len().min(30)])),
            JsonError::Syntax(_) => String::new(),
        };
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {e}{summary}",
            resource.kind
        ))
    })?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: expected an object",
            resource.kind
        )));
    };
    check_type(&map, resource)?;
    Ok(map)
}

/// A body whose apiVersion or kind names another type is refused with 400, as kube-apiserver
/// does when decoding into the URL's type.
pub fn check_type(map: &Map<String, Value>, resource: &Resource) -> Result<(), ApiError> {
    let expected_version = resource.api_version();
    if let Some(v) = map.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty())
        && v != expected_version
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({expected_version})"
        )));
    }
    if let Some(k) = map.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty())
        && k != resource.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            resource.kind
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    /// On a thread with the server's runtime threads' stack, as a handler runs.
    fn on_a_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let stack = crate::server::REQUEST_THREAD_STACK_BYTES;
        std::thread::Builder::new().stack_size(stack).spawn(f).unwrap().join().unwrap()
    }

    #[test]
    fn nesting_as_deep_as_kubes_decodes() {
        let ok = on_a_worker_stack(|| from_json::<Value>(nested(MAX_JSON_DEPTH).as_bytes()).map(|v| v.is_object()));
        assert!(ok.unwrap());
        let arrays = format!("{}{}", "[".repeat(MAX_JSON_DEPTH), "]".repeat(MAX_JSON_DEPTH));
        assert!(on_a_worker_stack(move || from_json::<Value>(arrays.as_bytes()).is_ok()));
    }

    #[test]
    fn deeper_is_gos_error() {
        let e = from_json::<Value>(nested(MAX_JSON_DEPTH + 1).as_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "invalid character '{' exceeded max depth");
        let e = from_json::<Value>(format!("[{}", "[".repeat(MAX_JSON_DEPTH)).as_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "invalid character '[' exceeded max depth");
        // Brackets inside strings do not nest.
        let text = format!("{{\"a\":\"{}\\\"\"}}", "{".repeat(MAX_JSON_DEPTH + 5));
        assert!(from_json::<Value>(text.as_bytes()).is_ok());
    }

    #[test]
    fn too_deep_objects_get_kubes_message() {
        let cm = listwatch_meta::Registry.find_kind("", "ConfigMap").unwrap();
        let body = nested(MAX_JSON_DEPTH + 1);
        let e = parse_object(body.as_bytes(), cm).unwrap_err();
        assert_eq!(
            e.status().message,
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '{' exceeded max depth ({\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\": ...)"
        );
    }
}
