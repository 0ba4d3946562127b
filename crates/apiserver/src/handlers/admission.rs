//! Admission: kube's NamespaceLifecycle plugin, the one admission check clients can tell
//! apart here. New objects are refused in a namespace that does not exist (404) or is being
//! terminated (403); the immortal namespaces cannot be deleted (see the delete handler).

use listwatch_meta::{ApiError, Resource};
use serde_json::Value;

use crate::state::ApiState;

/// kube's NamespaceLifecycle admission: no new objects in a missing (404) or terminating
/// (403) namespace.
pub async fn check_namespace_accepts_writes(
    state: &ApiState,
    namespace: &str,
    resource: &Resource,
    name: &str,
) -> Result<(), ApiError> {
    let store = state.namespaces();
    let cached = match &store.cache {
        Some(cache) if cache.is_ready() => cache.get(None, namespace, 0).await.ok().flatten(),
        _ => None,
    };
    let found = match cached {
        Some(ns) => Some(ns),
        // Not in the cache (yet): ask storage, as kube's admission does on a miss.
        None => store.read(None, namespace).await?,
    };
    let Some(ns) = found else {
        return Err(ApiError::not_found(&store.resource.group_resource(), namespace));
    };
    let phase = ns.value().pointer("/status/phase").and_then(Value::as_str).map(String::from);
    if phase.as_deref() == Some("Terminating") {
        return Err(ApiError::forbidden(
            &resource.group_resource(),
            name,
            &format!("unable to create new content in namespace {namespace} because it is being terminated"),
        ));
    }
    Ok(())
}
