//! `ListOptions` from the query, validated as kube-apiserver does: the option combinations it
//! refuses answer 422 `Invalid` (kind `ListOptions`, group `meta.k8s.io`), a continue token
//! with a resourceVersion or an undecodable token 400, a malformed resourceVersion 400.

use listwatch_meta::continue_token::ContinueToken;
use listwatch_meta::selector::{FieldLabels, FieldSelector, LabelSelector};
use listwatch_meta::status::StatusCause;
use listwatch_meta::{ApiError, Resource};

use crate::request::Query;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    Exact,
    NotOlderThan,
}

/// A resourceVersion as the client gave it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RequestedVersion {
    /// No resourceVersion: the latest, read consistently.
    #[default]
    Unset,
    /// `"0"`: any version, the cache's is fine.
    Any,
    /// A revision; a client's number above `i64::MAX` (valid for kube, which parses a u64) is
    /// `i64::MAX`, a revision no storage reaches, so every read or wait for it ends "too large".
    At(i64),
}

/// Parses a resourceVersion as kube does (`strconv.ParseUint`, base 10): `""` unset, `"0"`
/// any, else a decimal u64 (no sign), with the number as the client wrote it.
pub fn parse_resource_version(text: &str) -> Result<(RequestedVersion, u64), ApiError> {
    let invalid = |why: &str| {
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: \"{text}\": strconv.ParseUint: parsing \"{text}\": {why}"
        ))
    };
    match text {
        "" => Ok((RequestedVersion::Unset, 0)),
        "0" => Ok((RequestedVersion::Any, 0)),
        _ if !text.bytes().all(|b| b.is_ascii_digit()) => Err(invalid("invalid syntax")),
        _ => {
            let n: u64 = text.parse().map_err(|_| invalid("value out of range"))?;
            Ok((RequestedVersion::At(i64::try_from(n).unwrap_or(i64::MAX)), n))
        }
    }
}

/// A "too large resource version" error about a saturated request (see
/// [`RequestedVersion::At`]) names the client's number, as kube's does, not `i64::MAX`.
pub fn with_client_version(e: ApiError, client_version: u64) -> ApiError {
    if client_version <= i64::MAX as u64 {
        return e;
    }
    let saturated = format!("Too large resource version: {}, ", i64::MAX);
    let mut e = e;
    if e.reason() == "Timeout" && e.0.message.contains(&saturated) {
        e.0.message = e.0.message.replace(&saturated, &format!("Too large resource version: {client_version}, "));
    }
    e
}

/// The options of a LIST or WATCH (kube's `metav1.ListOptions`); the default lists everything,
/// consistently.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub label_selector: LabelSelector,
    pub field_selector: FieldSelector,
    pub resource_version: RequestedVersion,
    /// The resourceVersion's number as the client wrote it (0 for unset and "0").
    pub client_resource_version: u64,
    pub resource_version_match: Option<ResourceVersionMatch>,
    pub limit: i64,
    pub continue_token: Option<ContinueToken>,
    pub timeout_seconds: Option<i64>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub watch: bool,
}

impl ListOptions {
    /// Whether the request filters by label or field.
    pub fn has_selectors(&self) -> bool {
        !self.label_selector.is_empty() || !self.field_selector.is_empty()
    }
}

fn forbidden(field: &str, detail: &str) -> StatusCause {
    StatusCause::new("FieldValueForbidden", format!("Forbidden: {detail}"), field)
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> StatusCause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    StatusCause::new(
        "FieldValueNotSupported",
        format!("Unsupported value: \"{value}\": supported values: {}", list.join(", ")),
        field,
    )
}

fn invalid_list_options(causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", "ListOptions", "", causes)
}

/// Go's `strconv.ParseInt(text, 10, 64)`, with its error text.
fn go_parse_int(text: &str) -> Result<i64, String> {
    text.parse::<i64>().map_err(|_| {
        // ParseInt's two failures: a well-formed number outside int64, or not a number.
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        let why = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("strconv.ParseInt: parsing {}: {why}", listwatch_meta::validation::go_quote(text))
    })
}

/// Parses and validates the list/watch options of a request on `resource`. `watch` says
/// whether this is a watch; `name` (a legacy `/watch/` path's object) becomes
/// `metadata.name=<name>`.
pub fn parse(query: &Query, resource: &Resource, watch: bool, name: Option<&str>) -> Result<ListOptions, ApiError> {
    // The query converts to metav1.ListOptions field by field (timeoutSeconds before limit),
    // then the selectors parse: a number that does not parse is strconv's error as is.
    let int = |name: &str| -> Result<Option<i64>, ApiError> {
        query.get(name).map(|v| go_parse_int(v).map_err(ApiError::bad_request)).transpose()
    };
    let timeout_seconds = int("timeoutSeconds")?;
    let limit = int("limit")?.unwrap_or(0).max(0);
    let label_selector = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut field_text = query.get("fieldSelector").unwrap_or("").to_string();
    if let Some(name) = name {
        let parsed = FieldSelector::parse(&field_text).map_err(|e| ApiError::bad_request(e.to_string()))?;
        if let Some(other) = parsed.requires_exact_name()
            && other != name
        {
            return Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name"));
        }
        field_text = if field_text.is_empty() {
            format!("metadata.name={name}")
        } else {
            format!("{field_text},metadata.name={name}")
        };
    }
    let field_selector = FieldSelector::parse(&field_text).map_err(|e| ApiError::bad_request(e.to_string()))?;
    // Built-in kinds without selectable fields of their own use kube's default conversion (and
    // its message); the others, custom resources always, accept exactly their listed fields.
    let labels = if resource.selectable_fields.is_empty() && resource.dynamic.is_none() {
        FieldLabels::MetadataOnly
    } else {
        FieldLabels::custom_resource(resource.namespaced, resource.selectable_fields)
    };
    let field_selector = field_selector.convert_labels(&labels).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let rv_text = query.get("resourceVersion").unwrap_or("");
    let rvm_text = query.get("resourceVersionMatch").unwrap_or("");
    let continue_text = query.get("continue").unwrap_or("");
    let send_initial_events = query.optional_flag("sendInitialEvents");

    // kube's ValidateListOptions / validateWatchOptions (422).
    let mut causes = Vec::new();
    let rvm = match rvm_text {
        "" => None,
        "Exact" => Some(ResourceVersionMatch::Exact),
        "NotOlderThan" => Some(ResourceVersionMatch::NotOlderThan),
        _ => None,
    };
    if watch {
        if send_initial_events.is_some() && rvm != Some(ResourceVersionMatch::NotOlderThan) {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !rvm_text.is_empty() {
            if send_initial_events.is_none() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if rvm != Some(ResourceVersionMatch::NotOlderThan) {
                causes.push(not_supported("resourceVersionMatch", rvm_text, &["NotOlderThan"]));
            }
            if !continue_text.is_empty() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if !rvm_text.is_empty() {
            if rv_text.is_empty() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !continue_text.is_empty() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if rvm.is_none() {
                causes.push(not_supported("resourceVersionMatch", rvm_text, &["Exact", "NotOlderThan", ""]));
            }
            if rvm == Some(ResourceVersionMatch::Exact) && rv_text == "0" {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial_events.is_some() {
            causes.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        }
    }
    if !causes.is_empty() {
        return Err(invalid_list_options(causes));
    }

    // The storage layer's checks (400).
    let mut continue_token = None;
    if !continue_text.is_empty() && !watch {
        let token = ContinueToken::decode(continue_text)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        if !rv_text.is_empty() && rv_text != "0" {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        continue_token = Some(token);
    }
    let (resource_version, client_resource_version) = parse_resource_version(rv_text)?;
    Ok(ListOptions {
        label_selector,
        field_selector,
        resource_version,
        client_resource_version,
        resource_version_match: rvm,
        limit,
        continue_token,
        timeout_seconds,
        allow_watch_bookmarks: query.flag("allowWatchBookmarks"),
        send_initial_events,
        watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_parse_as_kube_parses_a_u64() {
        assert_eq!(parse_resource_version("").unwrap(), (RequestedVersion::Unset, 0));
        assert_eq!(parse_resource_version("0").unwrap(), (RequestedVersion::Any, 0));
        assert_eq!(parse_resource_version("42").unwrap(), (RequestedVersion::At(42), 42));
        // Above i64::MAX: valid, saturated (no storage reaches it).
        assert_eq!(parse_resource_version("9223372036854775808").unwrap(), (RequestedVersion::At(i64::MAX), 1 << 63));
        assert_eq!(parse_resource_version("18446744073709551615").unwrap(), (RequestedVersion::At(i64::MAX), u64::MAX));
        let message = |text: &str| parse_resource_version(text).unwrap_err().status().message.clone();
        assert_eq!(
            message("-1"),
            "invalid resource version: resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid syntax"
        );
        assert!(message("+1").ends_with("invalid syntax"));
        assert!(message("18446744073709551616").ends_with("parsing \"18446744073709551616\": value out of range"));
    }

    #[test]
    fn too_large_errors_name_the_clients_number() {
        let e = ApiError::too_large_resource_version(i64::MAX, 7, 1);
        assert_eq!(
            with_client_version(e.clone(), u64::MAX).status().message,
            "Timeout: Too large resource version: 18446744073709551615, current: 7"
        );
        assert_eq!(with_client_version(e.clone(), i64::MAX as u64), e);
    }
}
