//! The options of a DELETE (`DeleteOptions`), read and checked as kube-apiserver reads them.
//!
//! With a body, the options are the body and the query is ignored; without one, they come from
//! the query (`gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`, `dryRun`, and `uid`
//! and `resourceVersion` as preconditions). A body must decode as kube's meta codec decodes it:
//! Go's JSON errors, a kind that is `DeleteOptions` (of any group and version), fields of the
//! right types; each failure is a 400 with the decoder's words. kube-apiserver 1.32 sends
//! those as 500s, a bug 1.35 fixed; the 400 is what clients should see. Then
//! `ValidateDeleteOptions`: a 422 `DeleteOptions.meta.k8s.io "" is invalid`.

use listwatch_gocompat::json as go_json;
use listwatch_meta::ApiError;
use listwatch_meta::validation::{FieldError, go_quote};
use listwatch_meta::write_validation;
use serde_json::{Map, Value};

use super::OptionsKind;
use crate::request::Query;

/// DeleteOptions from the body or, without one, from the query.
#[derive(Debug, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation_policy: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<i64>,
    /// A resourceVersion precondition that is not a resourceVersion this server writes
    /// (`"abc"`, `"007"`): kube compares the strings, so it never holds.
    pub precondition_rv_text: Option<String>,
    pub dry_run: bool,
}

/// The Go scheme kube-apiserver decodes DeleteOptions bodies with, as its errors name it.
const META_SCHEME: &str = "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:28";

/// Kinds that scheme knows in any version (`AddUnversionedTypes`): a body of one of them
/// decodes, then fails to convert to DeleteOptions.
const META_UNVERSIONED_KINDS: &[&str] =
    &["CreateOptions", "UpdateOptions", "Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"];

/// Kinds that scheme knows in `meta.k8s.io/v1` only.
const META_V1_KINDS: &[&str] = &[
    "ListOptions",
    "GetOptions",
    "PatchOptions",
    "WatchEvent",
    "Table",
    "TableOptions",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
];

/// The Go type kube's `findKind` struct has, as Go prints it in a type error.
const FIND_KIND_TYPE: &str =
    r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

fn delete_options_decode_error(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message)
}

/// An `int64` field of a DeleteOptions body, with Go's type errors.
fn go_int64(value: &Value, go_struct: &str, field: &str) -> Result<Option<i64>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => {
            n.as_i64().map(Some).ok_or_else(|| go_json::type_error(&format!("number {n}"), go_struct, field, "int64"))
        }
        other => Err(go_json::type_error(go_json::json_kind(other), go_struct, field, "int64")),
    }
}

/// A string field (`go_type` as Go names it), with Go's type errors.
fn go_string(value: &Value, go_struct: &str, field: &str, go_type: &str) -> Result<Option<String>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(go_json::type_error(go_json::json_kind(other), go_struct, field, go_type)),
    }
}

fn go_bool(value: &Value, go_struct: &str, field: &str) -> Result<Option<bool>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        other => Err(go_json::type_error(go_json::json_kind(other), go_struct, field, "bool")),
    }
}

/// What a DeleteOptions carries before kube validates it.
#[derive(Default)]
struct RawDeleteOptions {
    grace_period_seconds: Option<i64>,
    orphan_dependents: Option<bool>,
    propagation_policy: Option<String>,
    dry_run: Option<Vec<String>>,
    precondition_uid: Option<String>,
    precondition_rv: Option<String>,
}

/// Decodes a DeleteOptions body as kube-apiserver's meta codec does, with its messages: Go's
/// JSON syntax errors, the kind check, then the fields' types. kube-apiserver 1.32 answers
/// these with a 500; 1.35 fixed that to the 400 given here.
fn delete_options_from_body(body: &[u8]) -> Result<RawDeleteOptions, ApiError> {
    if let Some(syntax) = go_json::syntax_error(body) {
        return Err(delete_options_decode_error(format!("couldn't get version/kind; json parse error: {syntax}")));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| delete_options_decode_error(format!("couldn't get version/kind; json parse error: {e}")))?;
    let object = match value {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(delete_options_decode_error(format!(
                "couldn't get version/kind; json parse error: {}",
                go_json::type_error(go_json::json_kind(&other), "", "", FIND_KIND_TYPE)
            )));
        }
    };
    let find_kind = |field: &str| -> Result<String, ApiError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(delete_options_decode_error(format!(
                "couldn't get version/kind; json parse error: {}",
                go_json::type_error(go_json::json_kind(other), "", field, "string")
            ))),
        }
    };
    let (api_version, kind) = (find_kind("apiVersion")?, find_kind("kind")?);
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => (String::new(), String::new()),
        [version] => (String::new(), (*version).to_owned()),
        [group, version] => ((*group).to_owned(), (*version).to_owned()),
        _ => return Err(delete_options_decode_error(format!("unexpected GroupVersion string: {api_version}"))),
    };
    // Defaults: kind DeleteOptions, group and version meta.k8s.io/v1 (`gvkWithDefaults`).
    let kind = if kind.is_empty() { "DeleteOptions".to_owned() } else { kind };
    let version = match (group.as_str(), version.is_empty()) {
        ("" | "meta.k8s.io", true) => "v1".to_owned(),
        _ => version,
    };
    let group = if group.is_empty() && api_version.is_empty() { "meta.k8s.io".to_owned() } else { group };
    if kind != "DeleteOptions" {
        let known = META_UNVERSIONED_KINDS.contains(&kind.as_str())
            || (group == "meta.k8s.io" && version == "v1" && META_V1_KINDS.contains(&kind.as_str()));
        let gv = if group.is_empty() { version } else { format!("{group}/{version}") };
        return Err(delete_options_decode_error(if known {
            format!("converting (v1.{kind}) to (v1.DeleteOptions): unknown conversion")
        } else {
            format!(
                "no kind {} is registered for version {} in scheme {}",
                go_quote(&kind),
                go_quote(&gv),
                go_quote(META_SCHEME)
            )
        }));
    }
    let mut raw = RawDeleteOptions::default();
    let field_error = |message: String| delete_options_decode_error(message);
    for (key, value) in &object {
        match key.as_str() {
            "gracePeriodSeconds" => {
                raw.grace_period_seconds = go_int64(value, "DeleteOptions", key).map_err(field_error)?;
            }
            "orphanDependents" => raw.orphan_dependents = go_bool(value, "DeleteOptions", key).map_err(field_error)?,
            "propagationPolicy" => {
                raw.propagation_policy =
                    go_string(value, "DeleteOptions", key, "v1.DeletionPropagation").map_err(field_error)?;
            }
            "ignoreStoreReadErrorWithClusterBreakingPotential" => {
                go_bool(value, "DeleteOptions", key).map_err(field_error)?;
            }
            "dryRun" => match value {
                Value::Null => raw.dry_run = None,
                Value::Array(items) => {
                    let mut values = Vec::new();
                    for item in items {
                        match item {
                            Value::String(s) => values.push(s.clone()),
                            // Go leaves a null element as the empty string.
                            Value::Null => values.push(String::new()),
                            other => {
                                return Err(field_error(go_json::type_error(
                                    go_json::json_kind(other),
                                    "DeleteOptions",
                                    key,
                                    "string",
                                )));
                            }
                        }
                    }
                    raw.dry_run = Some(values);
                }
                other => {
                    return Err(field_error(go_json::type_error(
                        go_json::json_kind(other),
                        "DeleteOptions",
                        key,
                        "[]string",
                    )));
                }
            },
            "preconditions" => match value {
                Value::Null => {}
                Value::Object(pre) => {
                    for (field, v) in pre {
                        let path = format!("preconditions.{field}");
                        match field.as_str() {
                            "uid" => {
                                raw.precondition_uid =
                                    go_string(v, "Preconditions", &path, "types.UID").map_err(field_error)?;
                            }
                            "resourceVersion" => {
                                raw.precondition_rv =
                                    go_string(v, "Preconditions", &path, "string").map_err(field_error)?;
                            }
                            _ => {}
                        }
                    }
                }
                other => {
                    return Err(field_error(go_json::type_error(
                        go_json::json_kind(other),
                        "DeleteOptions",
                        key,
                        "v1.Preconditions",
                    )));
                }
            },
            _ => {}
        }
    }
    Ok(raw)
}

/// kube's query conversion of DeleteOptions (`Convert_url_Values_To_v1_DeleteOptions`),
/// including `uid` and `resourceVersion` as preconditions.
fn delete_options_from_query(query: &Query) -> Result<RawDeleteOptions, ApiError> {
    let mut raw = RawDeleteOptions::default();
    if let Some(g) = query.get("gracePeriodSeconds") {
        let parsed = g.parse::<i64>().map_err(|e| {
            let why = match e.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
                _ => "invalid syntax",
            };
            ApiError::bad_request(format!("strconv.ParseInt: parsing {}: {why}", go_quote(g)))
        })?;
        raw.grace_period_seconds = Some(parsed);
    }
    if query.has("orphanDependents") {
        raw.orphan_dependents = Some(query.flag("orphanDependents"));
    }
    raw.propagation_policy = query.get("propagationPolicy").map(String::from);
    let dry_run = query.all("dryRun");
    raw.dry_run = (!dry_run.is_empty()).then(|| dry_run.into_iter().map(String::from).collect());
    raw.precondition_uid = query.get("uid").filter(|v| !v.is_empty()).map(String::from);
    raw.precondition_rv = query.get("resourceVersion").filter(|v| !v.is_empty()).map(String::from);
    Ok(raw)
}

/// The DeleteOptions of a delete or deletecollection: from the body when there is one (kube
/// then ignores the query), else from the query; then kube's `ValidateDeleteOptions` (422).
pub fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let raw = if body.is_empty() { delete_options_from_query(query)? } else { delete_options_from_body(body)? };
    let mut errors = Vec::new();
    if let (Some(_), Some(policy)) = (raw.orphan_dependents, &raw.propagation_policy) {
        errors.push(FieldError::invalid(
            "propagationPolicy",
            policy,
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(policy) = &raw.propagation_policy
        && !matches!(policy.as_str(), "Foreground" | "Background" | "Orphan")
    {
        errors.push(FieldError::not_supported(
            "propagationPolicy",
            &go_quote(policy),
            &["Foreground", "Background", "Orphan", "nil"],
        ));
    }
    let dry_run: Vec<&str> = raw.dry_run.iter().flatten().map(String::as_str).collect();
    errors.extend(write_validation::validate_dry_run(&dry_run));
    OptionsKind::Delete.check(errors)?;
    let propagation_policy = match (raw.propagation_policy, raw.orphan_dependents) {
        (Some(policy), _) => Some(policy),
        (None, Some(true)) => Some("Orphan".to_owned()),
        (None, _) => None,
    };
    let (precondition_rv, precondition_rv_text) = match raw.precondition_rv {
        None => (None, None),
        // Only the canonical decimal form can equal a resourceVersion this server wrote.
        Some(rv) => match rv.parse::<i64>() {
            Ok(n) if n.to_string() == rv => (Some(n), None),
            _ => (None, Some(rv)),
        },
    };
    Ok(DeleteOptions {
        grace_period_seconds: raw.grace_period_seconds,
        propagation_policy,
        precondition_uid: raw.precondition_uid,
        precondition_rv,
        precondition_rv_text,
        dry_run: !dry_run.is_empty(),
    })
}
