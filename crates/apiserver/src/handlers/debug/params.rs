//! The debug API's query parameters: integers and durations, each a 400 when it is not one.

use listwatch_meta::ApiError;

use crate::request::Query;

/// An integer query parameter, if given; 400 if it is not one.
pub(super) fn int_param(query: &Query, name: &str) -> Result<Option<i64>, ApiError> {
    query
        .get(name)
        .map(|v| v.parse::<i64>().map_err(|_| ApiError::bad_request(format!("{name} must be an integer"))))
        .transpose()
}

/// A duration query parameter (`500ms`, `5s`, `1m`), if given; 400 if it is not one.
pub(super) fn duration_param(query: &Query, name: &str) -> Result<Option<std::time::Duration>, ApiError> {
    query
        .get(name)
        .map(|v| {
            humantime::parse_duration(v)
                .map_err(|e| ApiError::bad_request(format!("{name} must be a duration such as 5s or 500ms: {e}")))
        })
        .transpose()
}
