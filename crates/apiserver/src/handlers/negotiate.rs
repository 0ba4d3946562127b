//! The representation of a response: what the `Accept` header negotiates (406 for none we
//! serve), with the Table options kube reads only for Tables.

use listwatch_encoding::{MediaType, negotiate, negotiate_stream};
use listwatch_meta::{ApiError, Resource};

use crate::request::Query;

/// The representation of an object (`list` false) or a list response.
pub fn response_media(
    accept: Option<&str>,
    resource: &Resource,
    list: bool,
    query: &Query,
) -> Result<MediaType, ApiError> {
    with_include_object(negotiate(accept, resource, list)?, query)
}

/// The representation of a watch stream.
pub fn stream_media(accept: Option<&str>, resource: &Resource, query: &Query) -> Result<MediaType, ApiError> {
    with_include_object(negotiate_stream(accept, resource)?, query)
}

/// Applies `includeObject` (what Table rows carry: None, Metadata by default, or Object) to a
/// Table representation. kube reads it only when converting to a Table
/// (`ValidateTableOptions`): then a value it does not know is a 400; otherwise it is ignored.
fn with_include_object(mut media: MediaType, query: &Query) -> Result<MediaType, ApiError> {
    let Some(value) = query.get("includeObject") else { return Ok(media) };
    if let listwatch_encoding::Output::Table { include: current, .. } = &mut media.output {
        *current = listwatch_encoding::IncludeObject::parse(value).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                listwatch_meta::validation::go_quote(value)
            ))
        })?;
    }
    Ok(media)
}
