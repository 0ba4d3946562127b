//! Reading request bodies: the size limit (413), the content type (415) and the JSON (400).

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::BodyExt;
use listwatch_meta::{ApiError, Resource};
use serde_json::{Map, Value};

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
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {e}",
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
