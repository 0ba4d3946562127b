//! kube's NamespaceLifecycle admission plugin. New objects are refused in a namespace that does not exist (404) or is being
//! terminated (403); the immortal namespaces cannot be deleted (see the delete handler).

use std::sync::Arc;

use listwatch_meta::{ApiError, Object, Resource};
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
    let Some(ns) = namespace_object(state, namespace).await? else {
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

/// The namespace `name` as admission sees it: from the watch cache, or from storage on a miss
/// (as kube's admission plugins ask the API on a lister miss).
pub async fn namespace_object(state: &ApiState, name: &str) -> Result<Option<Arc<Object>>, ApiError> {
    let store = state.namespaces();
    let cached = match &store.cache {
        Some(cache) if cache.is_ready() => cache.get(None, name, 0).await.ok().flatten(),
        _ => None,
    };
    match cached {
        Some(ns) => Ok(Some(ns)),
        None => store.read(None, name).await,
    }
}
