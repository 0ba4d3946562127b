//! What the controllers share: the worker loop over a rate-limited queue (client-go's
//! `processNextWorkItem`), label selectors and owner references read from JSON, and the small
//! JSON accessors the controllers' objects need.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use listwatch_client::{
    ApiResource, DynamicObject, IndexConflict, IndexFn, LabelSelector, Object, SharedInformer, SharedInformerFactory,
    object_key, rfc3339,
};
use listwatch_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use serde_json::{Value, json};

/// A controller's queue of `namespace/name` keys.
pub type Queue = Arc<RateLimitingQueue<String>>;

/// Syncs one key; `Ok(Some(d))` asks for another sync after `d` (a pod becoming available, a
/// deadline).
pub type SyncFn = Arc<dyn Fn(String) -> BoxFuture<'static, anyhow::Result<Option<Duration>>> + Send + Sync>;

/// Retries of a failing key before it waits for its next change (kube's `maxRetries`, 15).
const MAX_RETRIES: usize = 15;

/// A new queue with client-go's default controller rate limiter.
pub fn queue(name: &str) -> Queue {
    Arc::new(RateLimitingQueue::with_config(default_controller_rate_limiter(), QueueConfig::named(name)))
}

/// A controller ready to run: its queue and what syncs one key of it.
pub struct Workers {
    /// The controller's name, for logs.
    pub name: &'static str,
    /// Its queue.
    pub queue: Queue,
    /// Its sync.
    pub sync: SyncFn,
}

impl Workers {
    /// Runs `count` workers until the queue shuts down.
    pub async fn run(self, count: usize) {
        let workers: Vec<_> =
            (0..count).map(|_| tokio::spawn(work(self.name, self.queue.clone(), self.sync.clone()))).collect();
        for worker in workers {
            let _ = worker.await;
        }
    }
}

async fn work(name: &'static str, queue: Queue, sync: SyncFn) {
    while let Some(key) = queue.get().await {
        match sync(key.clone()).await {
            Ok(again) => {
                queue.forget(&key);
                if let Some(delay) = again {
                    queue.add_after(key.clone(), delay);
                }
            }
            Err(error) if queue.num_requeues(&key) < MAX_RETRIES => {
                tracing::debug!(controller = name, %key, error = format!("{error:#}"), "sync failed, retrying");
                queue.add_rate_limited(key.clone());
            }
            Err(error) => {
                tracing::warn!(controller = name, %key, error = format!("{error:#}"), "sync failed, dropping");
                queue.forget(&key);
            }
        }
        queue.done(&key);
    }
}

/// The pods index by `spec.nodeName` ([`index_pods_by_node`]).
pub(crate) const NODE_INDEX: &str = "spec.nodeName";

/// Indexes `pods` by `spec.nodeName` (once, whichever controller asks first), as the
/// scheduler and the node lifecycle controller look pods up by node. Finished pods
/// (Succeeded, Failed) hold no place on their node and are left out, as kube-scheduler's
/// informer leaves them out, so a bucket's size is what the node holds.
pub fn index_pods_by_node(pods: &SharedInformer<DynamicObject>) {
    // A conflict is the index another controller added already.
    let _ = pods.add_indexer(NODE_INDEX, pods_by_node());
}

/// The index function of [`index_pods_by_node`].
pub(crate) fn pods_by_node() -> IndexFn<DynamicObject> {
    Arc::new(|pod: &DynamicObject| {
        if matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
            return Vec::new();
        }
        pod.pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .into_iter()
            .collect()
    })
}

/// apps/v1 ReplicaSets.
pub fn replicasets() -> ApiResource {
    ApiResource::new("apps", "v1", "ReplicaSet", "replicasets", true)
}

/// A `metav1.LabelSelector` (JSON) as a selector; `None` if it is malformed. An absent or
/// empty selector matches nothing here, as kube's controllers treat it.
pub fn selector(json: Option<&Value>) -> Option<LabelSelector> {
    let json = json?;
    let mut requirements: Vec<String> = json
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|labels| labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    for expression in json.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = expression.get("key")?.as_str()?;
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let values = values.join(",");
        requirements.push(match expression.get("operator")?.as_str()? {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    if requirements.is_empty() {
        return None;
    }
    LabelSelector::parse(&requirements.join(",")).ok()
}

/// Whether `selector` matches the labels of `object`.
pub fn matches(selector: &LabelSelector, object: &DynamicObject) -> bool {
    selector.matches_labels(|key| object.label(key))
}

/// The owner reference with `controller: true`, if any.
pub fn controller_of(object: &DynamicObject) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The queue key of the `kind` (in apps/v1) that controls `object`, if one does.
pub fn controller_key(object: &DynamicObject, kind: &str) -> Option<String> {
    let owner = controller_of(object)?;
    if owner.get("kind")?.as_str()? != kind || owner.get("apiVersion")?.as_str()? != "apps/v1" {
        return None;
    }
    Some(object_key(object.namespace(), owner.get("name")?.as_str()?))
}

/// The uid of whatever controls `object`.
pub fn controller_uid(object: &DynamicObject) -> Option<&str> {
    controller_of(object)?.get("uid")?.as_str()
}

/// The shared informer of `resource`, whose cache keeps objects without `metadata.managedFields`:
/// no controller reads them, and they are about a third of a pod as stored (kube's own
/// controllers are often given the same transform).
pub fn informer(factory: &SharedInformerFactory, resource: &ApiResource) -> SharedInformer<DynamicObject> {
    let informer = factory.dynamic(resource);
    // Refused only once the informer runs (another controller set it up first): then it has
    // the transform already, or was started without one by someone else, which is harmless.
    let _ = informer.set_transform(|mut object: DynamicObject| {
        if let Some(metadata) = object.0.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        object
    });
    informer
}

/// The index of objects by their controller: the controller's uid, or [`orphans_of`] their
/// namespace for objects nothing controls. A controller's sync then reads the objects it owns
/// and the orphans it may adopt, not every object of the namespace: with 100,000 pods in one
/// namespace, listing them all on each of thousands of syncs was the controllers' whole cost.
pub const CONTROLLER_INDEX: &str = "controller";

/// The [`CONTROLLER_INDEX`] value of the uncontrolled objects of `namespace` (a uid never
/// holds a `/`).
pub fn orphans_of(namespace: &str) -> String {
    format!("orphans/{namespace}")
}

/// Installs [`CONTROLLER_INDEX`] on `informer` (once: controllers share informers).
pub fn index_by_controller(informer: &SharedInformer<DynamicObject>) {
    let index = Arc::new(|object: &DynamicObject| match controller_uid(object) {
        Some(uid) => vec![uid.to_owned()],
        None => vec![orphans_of(object.namespace().unwrap_or_default())],
    });
    match informer.add_indexer(CONTROLLER_INDEX, index) {
        Ok(()) | Err(IndexConflict(_)) => {}
    }
}

/// The objects of `store` that `owner` controls, and the orphans of its namespace.
pub fn owned_and_orphans(
    store: &listwatch_client::Store<DynamicObject>,
    owner: &DynamicObject,
) -> (Vec<Arc<DynamicObject>>, Vec<Arc<DynamicObject>>) {
    let by = |value: &str| store.by_index(CONTROLLER_INDEX, value).unwrap_or_default();
    (by(owner.uid().unwrap_or_default()), by(&orphans_of(owner.namespace().unwrap_or_default())))
}

/// A controller owner reference to `owner`, an apps/v1 `kind`.
pub fn owner_reference(owner: &DynamicObject, kind: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": owner.name(),
        "uid": owner.uid(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether `object` has a deletion timestamp.
pub fn is_deleting(object: &DynamicObject) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// An integer field, or `default`.
pub fn int(object: &Value, pointer: &str, default: i64) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(default)
}

/// `metadata.generation`.
pub fn generation(object: &DynamicObject) -> i64 {
    int(&object.0, "/metadata/generation", 0)
}

/// A pod's Ready condition, if it is True: when it turned so (RFC 3339), or "" if unknown.
pub fn ready_since(pod: &DynamicObject) -> Option<&str> {
    let conditions = pod.pointer("/status/conditions")?.as_array()?;
    let ready = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?;
    if ready.get("status").and_then(Value::as_str) != Some("True") {
        return None;
    }
    Some(ready.get("lastTransitionTime").and_then(Value::as_str).unwrap_or(""))
}

/// The condition of `type_` in `status.conditions`, if there is one.
pub fn condition<'a>(object: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// The status (`True`, `False`, `Unknown`) of the condition of `type_`, if there is one.
pub fn condition_status<'a>(object: &'a DynamicObject, type_: &str) -> Option<&'a str> {
    condition(object, type_)?.get("status")?.as_str()
}

/// The current time as kube writes a `MicroTime` (RFC 3339, UTC, microseconds), as Leases
/// carry it.
pub fn now_micro() -> String {
    let now = std::time::SystemTime::now();
    let micros = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_micros());
    let seconds = rfc3339::format(now);
    format!("{}.{micros:06}Z", seconds.trim_end_matches('Z'))
}

/// The current time as kube writes it (RFC 3339, UTC, seconds).
pub fn now_rfc3339() -> String {
    rfc3339::format(std::time::SystemTime::now())
}

/// Seconds since the epoch of an RFC 3339 time.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    rfc3339::parse(text)?.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_from_json() {
        let s = selector(Some(&json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]}]})))
        .unwrap();
        assert!(s.matches_labels(|k| match k {
            "app" => Some("web"),
            "tier" => Some("b"),
            _ => None,
        }));
        assert!(selector(Some(&json!({}))).is_none());
        assert!(selector(Some(&json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}))).is_none());
    }
}
