//! The Deployment controller, as kube-controller-manager's (`pkg/controller/deployment`): a
//! Deployment owns one ReplicaSet per pod template (named and labelled by the template's
//! hash), scales the current one up and the old ones down as its strategy allows, numbers
//! them with revisions (which `kubectl rollout undo` reads), deletes old ones beyond
//! `revisionHistoryLimit`, and reports `status` with the Available and Progressing
//! conditions `kubectl rollout status` waits on.
//!
//! * [`spec`]: the spec with kube's defaults;
//! * [`hash`]: the `pod-template-hash`;
//! * [`replicasets`]: finding, creating, scaling and deleting the ReplicaSets;
//! * [`rollout`]: the RollingUpdate and Recreate strategies;
//! * [`status`]: status and conditions.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use listwatch_client::{
    Api, ApiResource, Client, DynamicObject, HandlerFns, LabelSelector, Lister, Object, Patch, SharedInformerFactory,
    Store, object_key,
};
use serde_json::json;

use crate::common::{self, Queue, Workers};
use crate::replicaset::ignore_gone;

pub mod hash;
pub mod replicasets;
pub mod rollout;
pub mod spec;
pub mod status;

use spec::Spec;

/// apps/v1 Deployments.
fn deployments() -> ApiResource {
    ApiResource::deployments()
}

/// The controller's informers' views and its client.
pub struct DeploymentController {
    client: Client,
    deployments: Lister<DynamicObject>,
    /// The ReplicaSets, indexed by controller ([`common::CONTROLLER_INDEX`]).
    replicaset_cache: Store<DynamicObject>,
}

impl DeploymentController {
    /// Registers the controller's event handlers on `factory`'s informers.
    pub(crate) fn register(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Workers> {
        let deployments = common::informer(factory, &deployments());
        let replicasets = common::informer(factory, &common::replicasets());
        common::index_by_controller(&replicasets);
        let queue = common::queue("deployment");
        let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
        deployments.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |d, _| on_add.add(d.key()))
                .on_update(move |_, d, _| on_update.add(d.key()))
                .on_delete(move |d| on_delete.add(d.key())),
        )?;
        let d_lister = deployments.lister();
        let (q_add, q_update, q_delete) = (queue.clone(), queue.clone(), queue.clone());
        let (l_add, l_update) = (d_lister.clone(), d_lister.clone());
        replicasets.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |rs, _| enqueue_for_replicaset(&q_add, &l_add, rs))
                .on_update(move |old, new, _| {
                    if common::controller_uid(old) != common::controller_uid(new) {
                        enqueue_for_replicaset(&q_update, &l_update, old);
                    }
                    enqueue_for_replicaset(&q_update, &l_update, new);
                })
                .on_delete(move |rs| {
                    if let Some(key) = common::controller_key(rs.object(), "Deployment") {
                        q_delete.add(key);
                    }
                }),
        )?;
        // Recreate waits for the old pods to be gone: their deletion syncs the Deployment.
        let pods = common::informer(factory, &ApiResource::pods());
        let rs_lister = replicasets.lister();
        let q_pod = queue.clone();
        pods.add_event_handler(HandlerFns::<DynamicObject>::new().on_delete(move |pod| {
            let Some(rs_key) = common::controller_key(pod.object(), "ReplicaSet") else { return };
            if let Some(key) = rs_lister.get(&rs_key).and_then(|rs| common::controller_key(&rs, "Deployment")) {
                q_pod.add(key);
            }
        }))?;
        let controller =
            Arc::new(DeploymentController { client, deployments: d_lister, replicaset_cache: replicasets.store() });
        let sync = Arc::new(move |key: String| {
            let controller = controller.clone();
            async move { controller.sync(&key).await }.boxed()
        });
        Ok(Workers { name: "deployment", queue, sync })
    }

    /// Moves one Deployment a step towards its spec and reports where it is.
    async fn sync(&self, key: &str) -> anyhow::Result<Option<Duration>> {
        let Some(d) = self.deployments.get(key) else { return Ok(None) };
        let Some(spec) = Spec::of(&d) else {
            tracing::warn!(deployment = key, "invalid or empty selector; not syncing");
            return Ok(None);
        };
        let owned = self.claim_replicasets(&d, &spec).await?;
        let mut sync = replicasets::Sync::new(&self.client, (*d).clone(), spec, owned);
        if common::is_deleting(&d) {
            // kube only reports status then; the garbage collector removes what it owns.
            return sync.update_status().await;
        }
        if sync.spec.paused {
            return rollout::paused(&mut sync).await;
        }
        match sync.spec.strategy {
            spec::Strategy::Recreate => rollout::recreate(&mut sync).await,
            spec::Strategy::RollingUpdate { .. } => rollout::rolling(&mut sync).await,
        }
    }

    /// The ReplicaSets `d` controls and its selector matches, once orphans it matches are
    /// adopted and those it controls but no longer matches are released.
    async fn claim_replicasets(&self, d: &DynamicObject, spec: &Spec) -> anyhow::Result<Vec<DynamicObject>> {
        let uid = d.uid().unwrap_or_default();
        let namespace = d.namespace().unwrap_or_default();
        let mut owned = Vec::new();
        let (controlled, orphans) = common::owned_and_orphans(&self.replicaset_cache, d);
        for rs in controlled.into_iter().chain(orphans) {
            let matched = common::matches(&spec.selector, &rs);
            let api = self.api(common::replicasets(), namespace);
            match common::controller_uid(&rs) {
                Some(owner) if owner == uid && matched => owned.push((*rs).clone()),
                Some(owner) if owner == uid => {
                    let patch =
                        json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": rs.uid()}});
                    ignore_gone(api.patch(rs.name(), &Patch::Strategic(patch)).await)?;
                }
                None if matched && !common::is_deleting(d) && !common::is_deleting(&rs) => {
                    let patch = json!({"metadata": {
                        "ownerReferences": [common::owner_reference(d, "Deployment")], "uid": rs.uid()}});
                    match api.patch(rs.name(), &Patch::Strategic(patch)).await {
                        Ok(adopted) => owned.push(adopted),
                        Err(e) if e.code() == Some(404) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                _ => {}
            }
        }
        Ok(owned)
    }

    fn api(&self, resource: ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::new(self.client.clone(), resource, Some(namespace))
    }
}

/// Queues the Deployment that controls `rs`, or, for an orphan, those that would adopt it.
fn enqueue_for_replicaset(queue: &Queue, deployments: &Lister<DynamicObject>, rs: &DynamicObject) {
    if let Some(key) = common::controller_key(rs, "Deployment") {
        queue.add(key);
        return;
    }
    if common::controller_of(rs).is_some() {
        return;
    }
    let namespace = rs.namespace().unwrap_or_default();
    for d in deployments.namespace(namespace).list(&LabelSelector::everything()) {
        if common::selector(d.pointer("/spec/selector")).is_some_and(|s| common::matches(&s, rs)) {
            queue.add(object_key(Some(namespace), d.name()));
        }
    }
}
