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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestedVersion {
    Unset,
    /// `"0"`: any version, the cache's is fine.
    Any,
    At(i64),
}

#[derive(Clone, Debug)]
pub struct ListOptions {
    pub label_selector: LabelSelector,
    pub field_selector: FieldSelector,
    pub resource_version: RequestedVersion,
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

/// Parses and validates the list/watch options of a request on `resource`. `watch` says
/// whether this is a watch; `name` (a legacy `/watch/` path's object) becomes
/// `metadata.name=<name>`.
pub fn parse(query: &Query, resource: &Resource, watch: bool, name: Option<&str>) -> Result<ListOptions, ApiError> {
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
    // Kinds without selectable fields of their own use kube's default conversion (and its
    // message); the others accept exactly their listed fields.
    let labels = if resource.selectable_fields.is_empty() {
        FieldLabels::MetadataOnly
    } else {
        FieldLabels::custom_resource(resource.namespaced, resource.selectable_fields)
    };
    let field_selector = field_selector.convert_labels(&labels).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let int = |name: &str| -> Result<Option<i64>, ApiError> {
        match query.get(name) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "{name}: Invalid value: \"{v}\": strconv.ParseInt: parsing \"{v}\": invalid syntax"
                ))
            }),
        }
    };
    let limit = int("limit")?.unwrap_or(0).max(0);
    let timeout_seconds = int("timeoutSeconds")?;
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
    let resource_version = match rv_text {
        "" => RequestedVersion::Unset,
        "0" => RequestedVersion::Any,
        text => match text.parse::<u64>() {
            Ok(n) if n <= i64::MAX as u64 => RequestedVersion::At(n as i64),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "invalid resource version: resourceVersion: Invalid value: \"{text}\": strconv.ParseUint: parsing \"{text}\": invalid syntax"
                )));
            }
        },
    };
    Ok(ListOptions {
        label_selector,
        field_selector,
        resource_version,
        resource_version_match: rvm,
        limit,
        continue_token,
        timeout_seconds,
        allow_watch_bookmarks: query.flag("allowWatchBookmarks"),
        send_initial_events,
        watch,
    })
}
