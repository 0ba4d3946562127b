//! GET and LIST: the options parsed, the read delegated to the registry (which picks the
//! watch cache or storage), the result encoded in the negotiated representation.

use listwatch_encoding::{Encoder, MediaType};
use listwatch_meta::ApiError;

use listwatch_simulator::audit::record::ListServed;

use crate::faults::ReadFaults;
use crate::options::{self, RequestedVersion, parse_resource_version, with_client_version};
use crate::registry::ResourceStore;
use crate::registry::expired_continue;
use crate::request::{Query, ResourceRequest};
use crate::response::{self, HttpResponse, ListAnswer, ObjectVersion};
use crate::transport::body::Body;

/// GET of one object, at the resourceVersion asked for (see the registry's delegator).
pub async fn get(
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    media: MediaType,
) -> Result<HttpResponse, ApiError> {
    let name = req.name.as_deref().expect("GET has a name");
    let (rv, client_version) = parse_resource_version(query.get("resourceVersion").unwrap_or(""))?;
    let object = store
        .get(req.namespace.as_deref(), name, rv)
        .await
        .map_err(|e| with_client_version(e, client_version))?
        .ok_or_else(|| ApiError::not_found(&store.resource.group_resource(), name))?;
    let encoder = Encoder::new(store.resource, media);
    let mut response = response::with_body(200, encoder.content_type(), Body::full(encoder.object(&object)));
    response.extensions_mut().insert(ObjectVersion(object.resource_version()));
    Ok(response)
}

/// The answer an injected read fault gives a LIST or WATCH instead of serving it, if any: an
/// expired continue token's 410, or a too-large resourceVersion's 504 (see
/// `crate::faults::reads`). Options that do not parse are left to the handler.
pub fn refuse_by_fault(faults: &ReadFaults, store: &ResourceStore, query: &Query, watch: bool) -> Result<(), ApiError> {
    let Ok(options) = options::parse(query, store.resource, watch, None) else { return Ok(()) };
    if let Some(token) = &options.continue_token
        && faults.continue_expires()
    {
        return Err(expired_continue(token));
    }
    if let RequestedVersion::At(asked) = options.resource_version
        && let Some(current) = faults.too_large(asked)
    {
        return Err(ApiError::too_large_resource_version(asked, current, 1));
    }
    Ok(())
}

/// LIST of a collection (one page of it when `limit` is set).
pub async fn list(
    store: &ResourceStore,
    req: &ResourceRequest,
    query: &Query,
    media: MediaType,
) -> Result<HttpResponse, ApiError> {
    let options = options::parse(query, store.resource, false, None)?;
    let listed = store
        .list(req.namespace.as_deref(), &options)
        .await
        .map_err(|e| with_client_version(e, options.client_resource_version))?;
    let encoder = Encoder::new(store.resource, media);
    let pieces = encoder
        .list(&listed.items, listed.resource_version, listed.continue_token.as_deref(), listed.remaining)
        .into_pieces();
    let mut response = response::with_body(200, encoder.content_type(), Body::pieces(pieces));
    response.extensions_mut().insert(ListAnswer(ListServed {
        resource_version: listed.resource_version,
        items: listed.items.len(),
        more: listed.continue_token.as_deref().is_some_and(|token| !token.is_empty()),
    }));
    Ok(response)
}
