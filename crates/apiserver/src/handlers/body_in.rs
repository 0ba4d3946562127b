//! Reading request bodies: the size limit (413), the content type (415) and the JSON (400).
//!
//! Every JSON body is decoded by [`from_json`], which nests as deep as kube's decoder does
//! (Go's encoding/json: 10,000 levels; serde_json alone stops at 128), growing the stack as
//! it goes, and answers deeper documents with Go's error.

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::BodyExt;
use listwatch_gocompat::json as go_json;
use listwatch_meta::{ApiError, Resource};
use serde::de::DeserializeOwned;

use crate::handlers::kinds;
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
    if let Some(opener) = listwatch_proto::json_depth::opener_past(body, MAX_JSON_DEPTH) {
        return Err(JsonError::TooDeep(opener));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    de.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de)).map_err(JsonError::Syntax)?;
    de.end().map_err(JsonError::Syntax)?;
    Ok(value)
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

/// The media types kube-apiserver's serializers read (`SupportedMediaTypes`).
const READABLE: &[&str] = &["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];

/// kube's `NegotiateInputSerializer`: the body's media type (JSON when no Content-Type is
/// sent), or 415 when Go's `mime.ParseMediaType` refuses the header or no serializer reads
/// the type.
pub fn input_media_type(headers: &HeaderMap) -> Result<&'static str, ApiError> {
    let header = match headers.get(http::header::CONTENT_TYPE) {
        None => return Ok(READABLE[0]),
        Some(value) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
    };
    if header.is_empty() {
        return Ok(READABLE[0]);
    }
    parse_media_type(&header)
        .and_then(|media| READABLE.iter().copied().find(|readable| *readable == media))
        .ok_or_else(ApiError::unsupported_media_type)
}

/// Go's `mime.ParseMediaType`, reduced to whether it succeeds: the type, lower-cased, when
/// the header is `type[/subtype]` followed by well-formed `; name=value` parameters.
fn parse_media_type(header: &str) -> Option<String> {
    let is_token_char = |c: char| !c.is_ascii_control() && c != ' ' && !"()<>@,;:\\\"/[]?=".contains(c);
    let token_len = |s: &str| s.find(|c: char| !is_token_char(c)).unwrap_or(s.len());
    let (base, mut params) = header.split_at(header.find(';').unwrap_or(header.len()));
    let media = base.trim().to_ascii_lowercase();
    let (kind, rest) = media.split_at(token_len(&media));
    let subtype_ok = match rest.strip_prefix('/') {
        None => rest.is_empty(),
        Some(sub) => !sub.is_empty() && token_len(sub) == sub.len(),
    };
    if kind.is_empty() || !subtype_ok {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    loop {
        params = params.trim_start();
        if params.is_empty() {
            return Some(media);
        }
        // `; name=value`, the value a token or a quoted string.
        let parsed = (|| {
            let rest = params.strip_prefix(';')?.trim_start();
            let (name, rest) = rest.split_at(token_len(rest));
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            let value_len = if let Some(quoted) = rest.strip_prefix('"') {
                let mut escaped = false;
                let end = quoted.char_indices().find(|&(_, c)| {
                    let closes = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })?;
                end.0 + 2
            } else {
                token_len(rest)
            };
            (!name.is_empty() && value_len > 0).then(|| (name.to_ascii_lowercase(), &rest[value_len..]))
        })();
        match parsed {
            Some((name, rest)) if !seen.contains(&name) => {
                seen.insert(name);
                params = rest;
            }
            // A trailing `;` is allowed; anything else malformed is an error.
            _ if params.trim() == ";" => return Some(media),
            _ => return None,
        }
    }
}

/// Decodes an object body for `resource` (JSON; 415 for types no serializer reads): see
/// [`parse_object`].
pub fn decode_object(headers: &HeaderMap, body: &[u8], resource: &Resource) -> Result<Map<String, Value>, ApiError> {
    match input_media_type(headers)? {
        "application/json" => parse_object(body, resource),
        // kube converts YAML to JSON and decodes that; a YAML error is a 400 (the detail is
        // our YAML parser's words, not Go's).
        "application/yaml" => match listwatch_encoding::yaml::to_json(body) {
            Ok(json) => parse_object(&json, resource),
            Err(e) => Err(ApiError::bad_request(format!("error converting YAML to JSON: {e}"))),
        },
        // Protobuf bodies are not read.
        _ => Err(ApiError::unsupported_media_type()),
    }
}

/// kube's `summarizeData(body, 30)`: what a decode error quotes of the body (its first 30
/// bytes as text when it starts with `{`, else in hex).
pub fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (shown, more) = (&body[..body.len().min(MAX)], if body.len() > MAX { " ..." } else { "" });
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => format!("{}{more}", shown.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// The 400 of a body kube cannot read a kind from (`transformDecodeError` without a kind):
/// `kind` is the type the handler decodes into.
pub fn unrecognized(kind: &str, error: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): {error} ({})",
        summarize(body)
    ))
}

/// A JSON body decoded for a handler that reads one `kind` (a Scale, a Binding): Go's syntax
/// errors and any other parse failure are the 400 of [`unrecognized`].
pub fn json_of_kind(kind: &str, body: &[u8]) -> Result<Value, ApiError> {
    if let Some(syntax) = go_json::syntax_error(body) {
        return Err(unrecognized(kind, &format!("couldn't get version/kind; json parse error: {syntax}"), body));
    }
    from_json(body).map_err(|e| unrecognized(kind, &format!("couldn't get version/kind; json parse error: {e}"), body))
}

/// The 400 of a body of kind `kind` (in `version`) that does not decode as the resource's kind.
pub fn cannot_be_handled(kind: &str, version: &str, resource: &Resource, error: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {} cannot be handled as a {}: {error}",
        listwatch_meta::validation::go_quote(version),
        resource.kind
    ))
}

/// Parses and checks a JSON object body as kube's JSON serializer reads it: Go's syntax
/// errors, then the apiVersion and kind (see [`crate::handlers::kinds`]), with kube's messages.
pub fn parse_object(body: &[u8], resource: &Resource) -> Result<Map<String, Value>, ApiError> {
    if let Some(syntax) = go_json::syntax_error(body) {
        return Err(unrecognized(
            resource.kind,
            &format!("couldn't get version/kind; json parse error: {syntax}"),
            body,
        ));
    }
    let value: Value = from_json(body).or_else(|e| {
        // Go reads invalid UTF-8 as U+FFFD where serde_json refuses it.
        let lossy = String::from_utf8_lossy(body).into_owned().into_bytes();
        from_json(&lossy).map_err(|_| {
            unrecognized(resource.kind, &format!("couldn't get version/kind; json parse error: {e}"), body)
        })
    })?;
    let named = kinds::interpret(&value).map_err(|e| unrecognized(resource.kind, &e, body))?;
    let map = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if resource.dynamic.is_some() {
        // A custom resource decodes into an unstructured object, which needs a kind; the kind
        // and apiVersion it names are checked against the URL by validation (422), not here.
        if named.kind.is_empty() {
            let data = String::from_utf8_lossy(body);
            return Err(unrecognized(resource.kind, &format!("Object 'Kind' is missing in '{data}'"), body));
        }
        return Ok(map);
    }
    let kind = named.with_defaults(resource);
    kinds::decode_failure(&kind, resource, &String::from_utf8_lossy(body), &map)
        .map_err(|e| cannot_be_handled(&kind.kind, &kind.version, resource, &e))?;
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    /// On a thread with the server's runtime threads' stack, as a handler runs.
    fn on_a_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let stack = crate::config::REQUEST_THREAD_STACK_BYTES;
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

    fn cm() -> &'static Resource {
        listwatch_meta::Registry.find_kind("", "ConfigMap").unwrap()
    }

    #[test]
    fn summaries_are_kubes() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"{\"a\":1}"), "{\"a\":1}");
        assert_eq!(summarize(&[b'{'; 31]), format!("{} ...", "{".repeat(30)));
        assert_eq!(summarize(b"garbage"), "67617262616765");
    }

    #[test]
    fn bodies_fail_with_the_json_serializers_words() {
        let message = |body: &[u8]| parse_object(body, cm()).unwrap_err().status().message.clone();
        let prefix = "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: ";
        assert_eq!(message(b""), format!("{prefix}unexpected end of JSON input (<empty>)"));
        assert_eq!(
            message(b"{bad}"),
            format!("{prefix}invalid character 'b' looking for beginning of object key string ({{bad}})")
        );
        assert_eq!(
            message(b"42"),
            format!("{prefix}json: cannot unmarshal number into Go value of type {} (3432)", kinds_find_kind_type())
        );
        assert_eq!(
            message(br#"{"apiVersion":"v1","kind":"Secret"}"#),
            "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"
        );
        // `null` is an empty object.
        assert_eq!(parse_object(b"null", cm()).unwrap(), Map::new());
    }

    fn kinds_find_kind_type() -> &'static str {
        r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#
    }

    #[test]
    fn media_types_parse_as_gos_mime() {
        assert_eq!(parse_media_type("Application/JSON; charset=utf-8").as_deref(), Some("application/json"));
        assert_eq!(parse_media_type("application/json;").as_deref(), Some("application/json"));
        assert_eq!(parse_media_type("a/b; x=\"q;\\\"\"; y=1").as_deref(), Some("a/b"));
        assert_eq!(parse_media_type("garbage").as_deref(), Some("garbage"));
        for bad in ["garbage;;;", "application/json; foo", "application/", "/json", "a/b/c", "a/b; x=1; x=2"] {
            assert_eq!(parse_media_type(bad), None, "{bad}");
        }
    }

    #[test]
    fn input_types_are_the_serializers() {
        let with = |ct: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
            input_media_type(&headers)
        };
        assert_eq!(input_media_type(&HeaderMap::new()).unwrap(), "application/json");
        assert_eq!(with("application/vnd.kubernetes.protobuf").unwrap(), "application/vnd.kubernetes.protobuf");
        for refused in ["text/plain", "*/*", "garbage;;;", "application/json; foo"] {
            let e = with(refused).unwrap_err();
            assert_eq!(e.code(), 415, "{refused}");
            assert_eq!(
                e.status().message,
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
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
