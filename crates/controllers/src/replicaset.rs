//! The ReplicaSet controller, as kube-controller-manager's (`pkg/controller/replicaset`): for
//! each ReplicaSet it claims the pods its selector matches (adopting orphans, releasing those
//! that no longer match), creates or deletes pods until `spec.replicas` are active, and writes
//! `status`.
//!
//! Where kube keeps "expectations" of the pods it created so a sync that runs before the cache
//! shows them does not create more, this controller waits (a few seconds at most) for its own
//! writes to reach the informer's cache before it finishes the sync: the queue never hands one
//! key to two workers, so the next sync of that ReplicaSet sees them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use futures::FutureExt as _;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, LabelSelector, Lister, Object, Patch, SharedInformerFactory,
    Store, object_key,
};
use serde_json::{Map, Value, json};

use crate::common::{self, Queue, Workers};

/// How long a sync waits for the cache to show the pods it created or deleted.
const CACHE_CATCH_UP: Duration = Duration::from_secs(10);
/// kube's `BurstReplicas`: pods created or deleted in one sync at most.
const BURST_REPLICAS: usize = 500;
/// How long pod changes that can only move a ReplicaSet's status (a pod added, running,
/// ready) wait to be synced together: at least this, and four times what the last such sync
/// took, at most [`MAX_STATUS_COALESCING`]. Every sync walks all of the ReplicaSet's pods, so
/// one sync per pod change is quadratic: at 10,000 pods, syncing back to back took a core
/// away from the scheduler and the kubelet; paced so, status syncs take at most a fifth of one.
/// kube-controller-manager's syncs are paced too, by its client's 20 requests a second; this
/// is well under what a client waiting for `readyReplicas` can tell from that.
const STATUS_COALESCING: Duration = Duration::from_millis(100);
/// The longest a status-only change waits (see [`STATUS_COALESCING`]).
const MAX_STATUS_COALESCING: Duration = Duration::from_secs(1);

/// How long a status-only change waits, given what the last status sync took.
fn status_coalescing(last_sync: &AtomicU64) -> Duration {
    let paced = Duration::from_micros(last_sync.load(Ordering::Relaxed)).saturating_mul(4);
    paced.clamp(STATUS_COALESCING, MAX_STATUS_COALESCING)
}

/// The controller's informers' views and its client.
pub struct ReplicaSetController {
    client: Client,
    replicasets: Lister<DynamicObject>,
    /// The pods, indexed by controller ([`common::CONTROLLER_INDEX`]).
    pod_cache: Store<DynamicObject>,
    /// What the last status-only sync took, in microseconds (see [`STATUS_COALESCING`]).
    status_sync_micros: Arc<AtomicU64>,
}

impl ReplicaSetController {
    /// Registers the controller's event handlers on `factory`'s informers.
    pub(crate) fn register(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Workers> {
        let replicasets = common::informer(factory, &common::replicasets());
        let pods = common::informer(factory, &ApiResource::pods());
        common::index_by_controller(&pods);
        let queue = common::queue("replicaset");
        let status_sync_micros: Arc<AtomicU64> = Arc::default();
        let (pace_add, pace_update, pace_rs) =
            (status_sync_micros.clone(), status_sync_micros.clone(), status_sync_micros.clone());
        let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
        replicasets.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |rs, _| on_add.add(rs.key()))
                .on_update(move |old, rs, _| {
                    // The controller's own status write comes back as an update: syncing it at
                    // once made every status write start the next sync while pods kept moving.
                    let status_only = common::generation(old) == common::generation(rs)
                        && old.label_map() == rs.label_map()
                        && common::is_deleting(old) == common::is_deleting(rs);
                    let after = if status_only { status_coalescing(&pace_rs) } else { Duration::ZERO };
                    on_update.add_after(rs.key(), after);
                })
                .on_delete(move |rs| on_delete.add(rs.key())),
        )?;
        let rs_lister = replicasets.lister();
        let (q_add, q_update, q_delete) = (queue.clone(), queue.clone(), queue.clone());
        let (l_add, l_update) = (rs_lister.clone(), rs_lister.clone());
        pods.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |pod, _| enqueue_for_pod(&q_add, &l_add, pod, status_coalescing(&pace_add)))
                .on_update(move |old, new, _| {
                    // What changes which pods a ReplicaSet has (labels, owner, a deletion) is
                    // synced at once; the rest can only move its status.
                    if old.label_map() != new.label_map()
                        || common::controller_of(old) != common::controller_of(new)
                        || common::is_deleting(old) != common::is_deleting(new)
                    {
                        enqueue_for_pod(&q_update, &l_update, old, Duration::ZERO);
                        enqueue_for_pod(&q_update, &l_update, new, Duration::ZERO);
                    } else {
                        enqueue_for_pod(&q_update, &l_update, new, status_coalescing(&pace_update));
                    }
                })
                .on_delete(move |pod| {
                    if let Some(key) = common::controller_key(pod.object(), "ReplicaSet") {
                        q_delete.add(key);
                    }
                }),
        )?;
        let controller = Arc::new(ReplicaSetController {
            client,
            replicasets: rs_lister,
            pod_cache: pods.store(),
            status_sync_micros,
        });
        let sync = Arc::new(move |key: String| {
            let controller = controller.clone();
            async move { controller.sync(&key).await }.boxed()
        });
        Ok(Workers { name: "replicaset", queue, sync })
    }

    /// Makes one ReplicaSet's pods and status match its spec.
    async fn sync(&self, key: &str) -> anyhow::Result<Option<Duration>> {
        let Some(rs) = self.replicasets.get(key) else { return Ok(None) };
        let Some(selector) = common::selector(rs.pointer("/spec/selector")) else {
            tracing::warn!(replicaset = key, "invalid or empty selector; not syncing");
            return Ok(None);
        };
        let namespace = rs.namespace().unwrap_or_default().to_string();
        let started = Instant::now();
        let pods = self.claim_pods(&rs, &selector).await?;
        let wanted = usize::try_from(common::int(&rs.0, "/spec/replicas", 1)).unwrap_or(0);
        if common::is_deleting(&rs) || pods.len() == wanted {
            // Nothing to create or delete (most syncs: a pod's status moved): the status is
            // counted from the pods just claimed, as kube's is.
            let again = self.update_status(&rs, &pods).await;
            let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.status_sync_micros.store(took, Ordering::Relaxed);
            return again;
        }
        if pods.len() < wanted {
            self.create_pods(&rs, &namespace, (wanted - pods.len()).min(BURST_REPLICAS)).await?;
        } else {
            self.delete_pods(pods, wanted).await?;
        }
        let pods = self.owned_pods(&rs, &selector);
        self.update_status(&rs, &pods).await
    }

    /// The active pods `rs` controls and its selector matches, once orphans it matches are
    /// adopted and the pods it controls but no longer matches are released.
    async fn claim_pods(
        &self,
        rs: &DynamicObject,
        selector: &LabelSelector,
    ) -> anyhow::Result<Vec<Arc<DynamicObject>>> {
        let uid = rs.uid().context("the ReplicaSet has no uid")?;
        let (owned, orphans) = common::owned_and_orphans(&self.pod_cache, rs);
        let (matching, unmatched): (Vec<_>, Vec<_>) = owned.into_iter().partition(|pod| common::matches(selector, pod));
        for pod in &unmatched {
            self.release(pod, uid).await?;
        }
        let mut adopted = false;
        if !common::is_deleting(rs) {
            for pod in orphans.iter().filter(|pod| common::matches(selector, pod) && is_active(pod)) {
                self.adopt(rs, pod).await?;
                adopted = true;
            }
        }
        // Read again only when ownership changed; else what was just matched is the answer
        // (every sync walks every pod of the ReplicaSet, and did it twice).
        if adopted || !unmatched.is_empty() {
            return Ok(self.owned_pods(rs, selector));
        }
        Ok(matching.into_iter().filter(|pod| is_active(pod)).collect())
    }

    /// The active pods `rs` controls and its selector matches (through the controller index).
    fn owned_pods(&self, rs: &DynamicObject, selector: &LabelSelector) -> Vec<Arc<DynamicObject>> {
        let (owned, _) = common::owned_and_orphans(&self.pod_cache, rs);
        owned.into_iter().filter(|pod| common::matches(selector, pod) && is_active(pod)).collect()
    }

    async fn adopt(&self, rs: &DynamicObject, pod: &DynamicObject) -> anyhow::Result<()> {
        let patch = json!({"metadata": {
            "ownerReferences": [common::owner_reference(rs, "ReplicaSet")],
            "uid": pod.uid(),
        }});
        ignore_gone(self.pod_api(pod).patch(pod.name(), &Patch::Strategic(patch)).await)
    }

    async fn release(&self, pod: &DynamicObject, uid: &str) -> anyhow::Result<()> {
        let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": pod.uid()}});
        ignore_gone(self.pod_api(pod).patch(pod.name(), &Patch::Strategic(patch)).await)
    }

    fn pod_api(&self, pod: &DynamicObject) -> Api<DynamicObject> {
        Api::new(self.client.clone(), ApiResource::pods(), pod.namespace())
    }

    /// Creates `count` pods from the template, in kube's slow-start batches (1, 2, 4, ...): a
    /// template the server refuses fails once, not `count` times.
    async fn create_pods(&self, rs: &DynamicObject, namespace: &str, count: usize) -> anyhow::Result<()> {
        let api: Api<DynamicObject> = Api::new(self.client.clone(), ApiResource::pods(), Some(namespace));
        let pod = new_pod(rs);
        let mut created = Vec::with_capacity(count);
        let mut batch = 1;
        while created.len() < count {
            let size = batch.min(count - created.len());
            let results = futures::future::join_all((0..size).map(|_| api.create(&pod))).await;
            for result in results {
                let pod = result.with_context(|| format!("creating a pod for ReplicaSet {}", rs.key()))?;
                created.push(pod.key());
            }
            batch *= 2;
        }
        let seen = self.pod_cache.wait_until(CACHE_CATCH_UP, |cache| created.iter().all(|key| cache.contains(key)));
        if !seen.await {
            anyhow::bail!("the pod cache did not show the new pods within {CACHE_CATCH_UP:?}");
        }
        Ok(())
    }

    /// Deletes pods until `keep` are left, the least useful first.
    async fn delete_pods(&self, mut pods: Vec<Arc<DynamicObject>>, keep: usize) -> anyhow::Result<()> {
        pods.sort_by_cached_key(|pod| deletion_rank(pod));
        let doomed = &pods[..(pods.len() - keep).min(BURST_REPLICAS)];
        let deletes = doomed.iter().map(|pod| async move { ignore_gone(self.pod_api(pod).delete(pod.name()).await) });
        for result in futures::future::join_all(deletes).await {
            result?;
        }
        let keys: Vec<String> = doomed.iter().map(|pod| pod.key()).collect();
        let gone = self.pod_cache.wait_until(CACHE_CATCH_UP, |cache| {
            keys.iter().all(|key| cache.get(key).is_none_or(|pod| common::is_deleting(&pod)))
        });
        if !gone.await {
            anyhow::bail!("the pod cache still showed deleted pods after {CACHE_CATCH_UP:?}");
        }
        Ok(())
    }

    /// Writes the counts to `/status` when they changed; asks to be synced again when a ready
    /// pod becomes available later (`minReadySeconds`).
    async fn update_status(&self, rs: &DynamicObject, pods: &[Arc<DynamicObject>]) -> anyhow::Result<Option<Duration>> {
        let min_ready = u64::try_from(common::int(&rs.0, "/spec/minReadySeconds", 0)).unwrap_or(0);
        let template_labels = rs.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let (mut labelled, mut ready, mut available, mut again) = (0, 0, 0, None);
        for pod in pods {
            let labels = pod.label_map();
            if template_labels.is_none_or(|t| t.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))) {
                labelled += 1;
            }
            let Some(since) = common::ready_since(pod) else { continue };
            ready += 1;
            let ready_for = common::parse_rfc3339(since).map_or(u64::MAX, |t| now.saturating_sub(t));
            if min_ready == 0 || ready_for >= min_ready {
                available += 1;
            } else {
                let wait = Duration::from_secs(min_ready - ready_for);
                again = Some(again.map_or(wait, |w: Duration| w.min(wait)));
            }
        }
        let status = StatusCounts {
            replicas: pods.len() as i64,
            fully_labeled: labelled,
            ready,
            available,
            observed_generation: common::generation(rs),
        };
        if status != StatusCounts::of(rs) {
            let api: Api<DynamicObject> = Api::new(self.client.clone(), common::replicasets(), rs.namespace());
            ignore_gone(api.patch_status(rs.name(), &Patch::Merge(json!({"status": status.to_json()}))).await)?;
        }
        Ok(again)
    }
}

/// The counts of a ReplicaSet's status.
#[derive(Debug, PartialEq, Eq)]
struct StatusCounts {
    replicas: i64,
    fully_labeled: i64,
    ready: i64,
    available: i64,
    observed_generation: i64,
}

impl StatusCounts {
    fn of(rs: &DynamicObject) -> StatusCounts {
        StatusCounts {
            replicas: common::int(&rs.0, "/status/replicas", 0),
            fully_labeled: common::int(&rs.0, "/status/fullyLabeledReplicas", 0),
            ready: common::int(&rs.0, "/status/readyReplicas", 0),
            available: common::int(&rs.0, "/status/availableReplicas", 0),
            observed_generation: common::int(&rs.0, "/status/observedGeneration", 0),
        }
    }

    /// A merge patch of the status: zeros are removed, as Go's `omitempty` leaves them out,
    /// except `replicas`, which kube always writes.
    fn to_json(&self) -> Value {
        let or_null = |n: i64| if n == 0 { Value::Null } else { json!(n) };
        json!({
            "replicas": self.replicas,
            "fullyLabeledReplicas": or_null(self.fully_labeled),
            "readyReplicas": or_null(self.ready),
            "availableReplicas": or_null(self.available),
            "observedGeneration": or_null(self.observed_generation),
        })
    }
}

/// A new pod from `rs`'s template, controlled by it (kube's `GetPodFromTemplate`).
fn new_pod(rs: &DynamicObject) -> Value {
    let template = rs.pointer("/spec/template").cloned().unwrap_or_default();
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), json!(format!("{}-", rs.name())));
    for field in ["labels", "annotations"] {
        if let Some(value) = template.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), value.clone());
        }
    }
    metadata.insert("ownerReferences".into(), json!([common::owner_reference(rs, "ReplicaSet")]));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or_default()})
}

/// Neither finished (Succeeded, Failed) nor being deleted: kube's `IsPodActive`.
pub(crate) fn is_active(pod: &DynamicObject) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    phase != "Succeeded" && phase != "Failed" && !common::is_deleting(pod)
}

/// Smaller goes first when scaling down (kube's `ActivePods` order, in short): unscheduled
/// before scheduled, Pending before Running, not ready before ready, newer before older.
fn deletion_rank(pod: &DynamicObject) -> (bool, u8, bool, std::cmp::Reverse<String>) {
    let scheduled = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let phase = match pod.pointer("/status/phase").and_then(Value::as_str) {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        _ => 2,
    };
    let created = pod.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("").to_string();
    (scheduled, phase, common::ready_since(pod).is_some(), std::cmp::Reverse(created))
}

/// Enqueues the ReplicaSet that controls `pod` (`after` a while, for a change that can only
/// move its status), or those whose selector matches it if it is an orphan (at once).
fn enqueue_for_pod(queue: &Queue, replicasets: &Lister<DynamicObject>, pod: &DynamicObject, after: Duration) {
    if let Some(key) = common::controller_key(pod, "ReplicaSet") {
        queue.add_after(key, after);
        return;
    }
    if common::controller_of(pod).is_some() || !is_active(pod) {
        return;
    }
    let namespace = pod.namespace().unwrap_or_default();
    for rs in replicasets.namespace(namespace).list(&LabelSelector::everything()) {
        if common::selector(rs.pointer("/spec/selector")).is_some_and(|s| common::matches(&s, pod)) {
            queue.add(object_key(Some(namespace), rs.name()));
        }
    }
}

/// A 404 means the object went meanwhile: nothing left to do for it.
pub(crate) fn ignore_gone<T>(result: Result<T, listwatch_client::Error>) -> anyhow::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some(404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Labels of an object, read from its JSON.
trait LabelMap {
    fn label_map(&self) -> Option<&Map<String, Value>>;
}

impl LabelMap for DynamicObject {
    /// Borrowed: every sync reads every pod's labels, and a copy per pod was a tenth of the
    /// server's CPU at 10,000 pods.
    fn label_map(&self) -> Option<&Map<String, Value>> {
        self.pointer("/metadata/labels").and_then(Value::as_object).filter(|labels| !labels.is_empty())
    }
}
