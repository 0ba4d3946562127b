//! DELETE of one object and of a collection. The registry deletes (preconditions,
//! finalizers, grace periods); this adds what kube's handler and admission add: the options
//! from the query or the body, NamespaceLifecycle's immortal namespaces, and the response.

use listwatch_encoding::Encoder;
use listwatch_meta::status::StatusDetails;
use listwatch_meta::{ApiError, Status};

use super::body_in;
use super::write::{WriteRequest, respond};
use crate::admission::{Admission, Operation};
use crate::options::delete_options;
use crate::registry::delete::Deletion;
use crate::response::{self, HttpResponse};

/// The namespaces the NamespaceLifecycle admission plugin keeps from being deleted.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// NamespaceLifecycle's refusal to delete an immortal namespace (dry run or not).
fn check_namespace_deletable(resource: &listwatch_meta::Resource, name: &str) -> Result<(), ApiError> {
    if resource.group.is_empty() && resource.kind == "Namespace" && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(&resource.group_resource(), name, "this namespace may not be deleted"));
    }
    Ok(())
}

/// DELETE of one object.
pub async fn delete(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let WriteRequest { state, user, store, req, query, headers, body, media } = w;
    if req.subresource.is_some() {
        return Err(ApiError::method_not_supported(&store.resource.group_resource(), "delete"));
    }
    if !body.is_empty() {
        body_in::input_media_type(headers)?;
    }
    let options = delete_options(query, &body)?;
    let name = req.name.as_deref().expect("DELETE has a name");
    check_namespace_deletable(store.resource, name)?;
    let namespace = store.scope(req.namespace.as_deref());
    let admission =
        Admission::new(state, user, store.resource, None, namespace, Operation::Delete, options.dry_run, None);
    admit_delete(&admission, store, namespace, name).await?;
    let deleted = store.delete(req.namespace.as_deref(), name, &options).await?;
    let warnings = admission.warnings();
    let answer = match deleted {
        Deletion::Pending(object) => respond(store, media, 200, &object),
        Deletion::Deleted(object) if store.resource.delete_returns_object => respond(store, media, 200, &object),
        Deletion::Deleted(object) => {
            let details = StatusDetails {
                name: name.to_string(),
                group: store.resource.group.to_string(),
                kind: store.resource.plural.to_string(),
                uid: object.uid().to_string(),
                ..Default::default()
            };
            response::status(200, &Status::success(Some(details)))
        }
    };
    Ok(response::with_warnings(answer, &warnings))
}

/// Admission of a delete, as kube's handler and store run it: the mutating webhooks with no
/// object (they may not change one), then the validating webhooks with the object as stored
/// now (kube reads it inside the delete; here just before, so a write in between is not seen).
async fn admit_delete(
    admission: &Admission<'_>,
    store: &crate::registry::ResourceStore,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    admission.mutate(name, None, None).await?;
    if let Some(existing) = store.read(namespace, name).await? {
        let existing = existing.value();
        admission.validate(name, existing.as_object(), None).await?;
    }
    Ok(())
}

/// DELETE of a collection: every matching object, one revision each; answers the list of
/// what was deleted.
pub async fn delete_collection(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let WriteRequest { state, user, store, req, query, headers, body, media } = w;
    if !body.is_empty() {
        body_in::input_media_type(headers)?;
    }
    let options = delete_options(query, &body)?;
    let list_options = crate::options::parse(query, store.resource, false, None)?;
    let listed = store.list(req.namespace.as_deref(), &list_options).await?;
    let mut deleted = Vec::new();
    for object in &listed.items {
        let ns = (!object.namespace().is_empty()).then_some(object.namespace());
        let admission = Admission::new(state, user, store.resource, None, ns, Operation::Delete, options.dry_run, None);
        match admit_delete(&admission, store, ns, object.name()).await {
            Ok(()) => {}
            Err(e) if e.code() == 404 => continue,
            Err(e) => return Err(e),
        }
        match store.delete(ns, object.name(), &options).await {
            Ok(Deletion::Deleted(o) | Deletion::Pending(o)) => deleted.push(o),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = deleted.iter().map(|o| o.resource_version()).max().unwrap_or(listed.resource_version);
    let encoder = Encoder::new(store.resource, media);
    let body = encoder.list(&deleted, rv, None, None).into_pieces();
    Ok(response::with_body(200, encoder.content_type(), crate::transport::body::Body::pieces(body)))
}
