//! The patch types of a PATCH (JSON patch, merge patch, strategic merge patch, server-side
//! apply): which one a request is, refused as go-restful and kube's handler refuse it; and for
//! the first three the patch document decoded as kube decodes it, and the patch applied (an
//! apply is `super::apply`'s).

use http::HeaderMap;
use listwatch_gocompat::json as go_json;
use listwatch_meta::ApiError;
use serde_json::{Map, Value};

use super::{body_in, schema};
use crate::options::FieldValidation;

/// The patch types a PATCH route consumes (go-restful's `Consumes`; also what kube's patch
/// handler lists in its 415).
const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch types kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchKind {
    /// The patch type of a PATCH, refused as kube-apiserver refuses it. go-restful's router
    /// comes first: the route consumes only the patch types (a missing Content-Type counts as
    /// `application/octet-stream`), and a body of another type is `415: Unsupported Media
    /// Type`; an empty one passes that check but then fails the Accept check with no route
    /// left (`406: Not Acceptable`, or 415 without a Content-Length). Then kube's handler
    /// wants the Content-Type, up to its first `;`, to be one of the patch types exactly.
    pub fn from_headers(headers: &HeaderMap) -> Result<PatchKind, ApiError> {
        let header =
            |name| headers.get(name).map(|v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let content_type = header(http::header::CONTENT_TYPE).unwrap_or_default();
        let offered = if content_type.is_empty() { "application/octet-stream" } else { content_type.as_str() };
        let routed =
            offered.split(',').any(|t| PATCH_TYPES.contains(&t.split(';').next().unwrap_or("").trim_matches(' ')));
        if !routed {
            let length = header(http::header::CONTENT_LENGTH);
            let declared = length.as_deref().and_then(|l| l.trim().parse::<u64>().ok()).unwrap_or(0);
            return Err(match (declared, length) {
                (1.., _) => ApiError::router_refusal(415, "415: Unsupported Media Type"),
                (_, None) => {
                    ApiError::router_refusal(415, "415: Unsupported Media Type\n\nAvailable representations: ")
                }
                (_, Some(_)) => ApiError::router_refusal(406, "406: Not Acceptable\n\nAvailable representations: "),
            });
        }
        let handled = match content_type.find(';') {
            Some(i) if i > 0 => &content_type[..i],
            _ => content_type.as_str(),
        };
        match handled {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" => Ok(PatchKind::Apply),
            _ => Err(ApiError::unsupported_media_type_of(&PATCH_TYPES)),
        }
    }

    /// The patch document, decoded as kube's patch handler decodes it: 400 with Go's texts for
    /// one that does not decode (prefixed `error decoding patch: ` where kube's handler decodes
    /// it itself, under `fieldValidation` `Warn` and `Strict`), 413 for a JSON patch of more
    /// than 10,000 operations.
    pub fn decode(self, body: &[u8], validation: FieldValidation) -> Result<Value, ApiError> {
        let handler = validation != FieldValidation::Ignore;
        let prefix = match self {
            PatchKind::Json | PatchKind::Merge if handler => "error decoding patch: ",
            _ => "",
        };
        // An apply configuration is YAML, read by `super::apply`.
        if self == PatchKind::Apply {
            return Ok(Value::Null);
        }
        if let Some(syntax) = go_json::syntax_error(body) {
            return Err(ApiError::bad_request(format!("{prefix}{syntax}")));
        }
        let patch: Value = body_in::from_json(body).map_err(|e| ApiError::bad_request(format!("{prefix}{e}")))?;
        match self {
            PatchKind::Json => {
                let decoding = if handler {
                    listwatch_patch::JsonPatchDecoding::Handler
                } else {
                    listwatch_patch::JsonPatchDecoding::Library
                };
                listwatch_patch::decode_json_patch(&patch, decoding).map_err(patch_error)?;
            }
            PatchKind::Merge | PatchKind::Strategic if !patch.is_object() && !patch.is_null() => {
                return Err(ApiError::bad_request(format!(
                    "{prefix}{}",
                    go_json::type_error(go_json::json_kind(&patch), "", "", "map[string]interface {}")
                )));
            }
            // kube's merge patch library refuses a `null` patch (`errBadJSONPatch`).
            PatchKind::Merge if patch.is_null() => return Err(ApiError::bad_request("Invalid JSON Patch")),
            PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {}
        }
        Ok(patch)
    }

    /// Applies the patch to `current`: 400 for a malformed patch, 422 for one that cannot
    /// apply.
    pub fn apply(self, resource: &listwatch_meta::Resource, current: &Value, patch: &Value) -> Result<Value, ApiError> {
        match self {
            // An apply merges by the schema (`super::apply`); as a plain patch it is a merge.
            PatchKind::Merge | PatchKind::Apply => Ok(listwatch_patch::json_merge_patch(current, patch)),
            PatchKind::Json => listwatch_patch::json_patch(current, patch).map_err(patch_error),
            PatchKind::Strategic => {
                let schema = listwatch_patch::builtin_schema(resource.kind);
                let schema: &dyn listwatch_patch::PatchSchema = match &schema {
                    Some(s) => s,
                    None => &listwatch_patch::NoSchema,
                };
                listwatch_patch::apply(current, patch, schema).map_err(patch_error)
            }
        }
    }

    /// How kube shows the patch in the 422 of a patched object that does not decode: the
    /// patched object's JSON for JSON and merge patches, the patch itself under Go's `%v` for
    /// strategic merge patches (kube decodes those from a map, not from JSON).
    pub fn shown(self, patched: &Map<String, Value>, patch: &Value) -> String {
        match self {
            PatchKind::Json | PatchKind::Merge | PatchKind::Apply => serde_json::to_string(patched).unwrap_or_default(),
            PatchKind::Strategic => listwatch_patch::go_value(patch),
        }
    }

    /// The 422 of a patched value that is not an object of the kind.
    pub fn undecodable(self, patched: &Value, patch: &Value, detail: &str) -> ApiError {
        let shown = match self {
            PatchKind::Json | PatchKind::Merge | PatchKind::Apply => patched.to_string(),
            PatchKind::Strategic => listwatch_patch::go_value(patch),
        };
        schema::patch_invalid(&shown, detail)
    }
}

/// A patch error as kube-apiserver's patch handler answers it: 400 for a malformed patch, 413
/// for too many operations, 422 (kube's generic Status, without the cause) for one that cannot
/// apply.
fn patch_error(e: listwatch_patch::PatchError) -> ApiError {
    match e.http_status() {
        413 => ApiError::request_entity_too_large(e.to_string()),
        422 => ApiError::unprocessable_entity(),
        _ => ApiError::bad_request(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch_kind(content_type: Option<&str>, content_length: Option<&str>) -> Result<PatchKind, ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(ct) = content_type {
            headers.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
        }
        if let Some(length) = content_length {
            headers.insert(http::header::CONTENT_LENGTH, length.parse().unwrap());
        }
        PatchKind::from_headers(&headers)
    }

    #[test]
    fn patch_types_route_as_go_restful_then_kubes_handler() {
        assert_eq!(patch_kind(Some("application/merge-patch+json; charset=utf-8"), Some("2")), Ok(PatchKind::Merge));
        assert_eq!(patch_kind(Some("application/json-patch+json"), None), Ok(PatchKind::Json));
        let refusal = |ct, length| {
            let e = patch_kind(ct, length).unwrap_err();
            (e.code(), e.reason().to_owned(), e.status().message.clone())
        };
        let unsupported = (415, "UnsupportedMediaType".to_owned(), "415: Unsupported Media Type".to_owned());
        assert_eq!(refusal(Some("text/plain"), Some("2")), unsupported);
        assert_eq!(refusal(Some("application/json"), Some("2")), unsupported);
        assert_eq!(refusal(None, Some("2")), unsupported);
        // An empty body passes the Content-Type check and fails the Accept one.
        assert_eq!(refusal(Some("text/plain"), Some("0")).0, 406);
        assert_eq!(refusal(Some("text/plain"), None).2, "415: Unsupported Media Type\n\nAvailable representations: ");
        // go-restful takes any listed type; kube's handler wants the whole header to be one.
        assert_eq!(
            refusal(Some("text/plain, application/merge-patch+json"), Some("2")).2,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
    }
}
