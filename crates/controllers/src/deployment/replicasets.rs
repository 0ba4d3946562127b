//! One sync of one Deployment and the ReplicaSets it owns: which of them is the "new" one (the
//! current template's), creating it with the next revision, scaling, and deleting old ones
//! beyond the history limit. Every write's answer replaces the ReplicaSet it changed, so later
//! steps of the same sync see it.

use anyhow::Context as _;
use listwatch_client::{Api, ApiResource, Client, DynamicObject, Object as _, Patch};
use serde_json::{Map, Value, json};

use super::hash;
use super::spec::{self, DESIRED_REPLICAS, MAX_REPLICAS, REVISION, Spec};
use crate::common;
use crate::replicaset::ignore_gone;

/// Annotations of a Deployment that are not copied to its ReplicaSets.
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    "deployment.kubernetes.io/revision-history",
    DESIRED_REPLICAS,
    MAX_REPLICAS,
];

/// The state of one sync.
pub struct Sync<'a> {
    client: &'a Client,
    /// The Deployment, as last written or read.
    pub d: DynamicObject,
    /// Its spec, defaulted.
    pub spec: Spec,
    /// The ReplicaSets it owns, as last written or read.
    pub replicasets: Vec<DynamicObject>,
    /// The name of the ReplicaSet this sync created, if it created one.
    pub created: Option<String>,
}

impl<'a> Sync<'a> {
    /// A sync of `d`, which owns `replicasets`.
    pub fn new(client: &'a Client, d: DynamicObject, spec: Spec, replicasets: Vec<DynamicObject>) -> Sync<'a> {
        Sync { client, d, spec, replicasets, created: None }
    }

    fn namespace(&self) -> String {
        self.d.namespace().unwrap_or_default().to_string()
    }

    /// The Deployment's namespace's `resource`.
    fn api_of(&self, resource: ApiResource) -> Api<DynamicObject> {
        Api::new(self.client.clone(), resource, Some(&self.namespace()))
    }

    fn api(&self) -> Api<DynamicObject> {
        self.api_of(common::replicasets())
    }

    /// The ReplicaSet of the current template (the oldest, should there be several).
    pub fn new_rs(&self) -> Option<&DynamicObject> {
        self.replicasets
            .iter()
            .filter(|rs| {
                rs.pointer("/spec/template").is_some_and(|t| hash::equal_ignoring_hash(t, &self.spec.template))
            })
            .min_by_key(|rs| rs.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or(""))
    }

    /// Every ReplicaSet but the new one.
    pub fn old_rses(&self) -> Vec<&DynamicObject> {
        let new = self.new_rs().map(|rs| rs.name().to_string());
        self.replicasets.iter().filter(|rs| Some(rs.name()) != new.as_deref()).collect()
    }

    /// Makes sure the new ReplicaSet carries the newest revision (creating it with
    /// `initial_replicas` when `create` and it is missing), and that the Deployment's revision
    /// annotation is the new ReplicaSet's.
    pub async fn sync_new_rs(&mut self, create: bool, initial_replicas: i64) -> anyhow::Result<()> {
        let max_old = self.old_rses().iter().map(|rs| spec::revision(rs)).max().unwrap_or(0);
        let wanted = max_old + 1;
        match self.new_rs().cloned() {
            Some(rs) if spec::revision(&rs) < wanted => {
                let patch = json!({"metadata": {"annotations": {REVISION: wanted.to_string()}}});
                let updated = self.api().patch(rs.name(), &Patch::Merge(patch)).await?;
                self.replace(updated);
            }
            Some(_) => {}
            None if create => self.create_new_rs(wanted, initial_replicas).await?,
            None => return Ok(()),
        }
        let revision = self.new_rs().map(spec::revision).unwrap_or(0).to_string();
        if self.d.annotation(REVISION) != Some(revision.as_str()) {
            let api = self.api_of(ApiResource::deployments());
            let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
            self.d = api.patch(self.d.name(), &Patch::Merge(patch)).await?;
        }
        Ok(())
    }

    async fn create_new_rs(&mut self, revision: i64, replicas: i64) -> anyhow::Result<()> {
        let collision_count = self.d.pointer("/status/collisionCount").and_then(Value::as_i64);
        let hash = hash::compute(&self.spec.template, collision_count);
        let mut template = self.spec.template.clone();
        template["metadata"]["labels"][hash::HASH_LABEL] = json!(hash);
        let mut selector = self.d.pointer("/spec/selector").cloned().unwrap_or_default();
        selector["matchLabels"][hash::HASH_LABEL] = json!(hash);
        let mut annotations: Map<String, Value> = self
            .d
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter(|(k, _)| !NOT_COPIED.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        annotations.insert(REVISION.into(), json!(revision.to_string()));
        annotations.extend(self.scale_annotations());
        let name = format!("{}-{hash}", self.d.name());
        let rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": template["metadata"]["labels"],
                "annotations": annotations,
                "ownerReferences": [common::owner_reference(&self.d, "Deployment")],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": self.spec.min_ready_seconds,
                "selector": selector,
                "template": template,
            },
        });
        match self.api().create(&rs).await {
            Ok(created) => {
                self.created = Some(created.name().to_string());
                self.replicasets.push(created);
                Ok(())
            }
            Err(e) if e.code() == Some(409) => {
                // Ours already (a cache behind its own write), or another template's name:
                // then kube bumps collisionCount, which changes the hash.
                let existing = self.api().get(&name).await?;
                let ours = common::controller_uid(&existing) == self.d.uid();
                let same = existing
                    .pointer("/spec/template")
                    .is_some_and(|t| hash::equal_ignoring_hash(t, &self.spec.template));
                if ours && same {
                    self.replace(existing);
                    return Ok(());
                }
                let api = self.api_of(ApiResource::deployments());
                let patch = json!({"status": {"collisionCount": collision_count.unwrap_or(0) + 1}});
                api.patch_status(self.d.name(), &Patch::Merge(patch)).await?;
                anyhow::bail!("ReplicaSet {name} exists with another template; collisionCount raised")
            }
            Err(e) => Err(e).with_context(|| format!("creating ReplicaSet {name}")),
        }
    }

    /// The annotations a ReplicaSet gets each time the Deployment scales it.
    fn scale_annotations(&self) -> [(String, Value); 2] {
        [
            (DESIRED_REPLICAS.into(), json!(self.spec.replicas.to_string())),
            (MAX_REPLICAS.into(), json!((self.spec.replicas + self.spec.max_surge()).to_string())),
        ]
    }

    /// Sets `name`'s replicas; returns whether they changed.
    pub async fn scale(&mut self, name: &str, replicas: i64) -> anyhow::Result<bool> {
        let Some(rs) = self.replicasets.iter().find(|rs| rs.name() == name) else { return Ok(false) };
        let changed = common::int(&rs.0, "/spec/replicas", 1) != replicas;
        let annotations: Map<String, Value> = self.scale_annotations().into_iter().collect();
        let stale = annotations.iter().any(|(k, v)| rs.annotation(k) != v.as_str());
        if !changed && !stale {
            return Ok(false);
        }
        let patch = json!({"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}});
        let updated = self.api().patch(name, &Patch::Merge(patch)).await?;
        self.replace(updated);
        Ok(changed)
    }

    /// Deletes the oldest old ReplicaSets with no pods beyond `revisionHistoryLimit`.
    pub async fn cleanup(&mut self) -> anyhow::Result<()> {
        let mut idle: Vec<&DynamicObject> = self
            .old_rses()
            .into_iter()
            .filter(|rs| {
                common::int(&rs.0, "/spec/replicas", 1) == 0
                    && common::int(&rs.0, "/status/replicas", 0) == 0
                    && common::int(&rs.0, "/status/observedGeneration", 0) >= common::generation(rs)
                    && !common::is_deleting(rs)
            })
            .collect();
        let excess = idle.len() as i64 - self.spec.revision_history_limit;
        if excess <= 0 {
            return Ok(());
        }
        idle.sort_by_key(|rs| spec::revision(rs));
        let doomed: Vec<String> = idle.iter().take(excess as usize).map(|rs| rs.name().to_string()).collect();
        for name in doomed {
            ignore_gone(self.api().delete(&name).await)?;
            self.replicasets.retain(|rs| rs.name() != name);
        }
        Ok(())
    }

    fn replace(&mut self, rs: DynamicObject) {
        match self.replicasets.iter_mut().find(|r| r.name() == rs.name()) {
            Some(slot) => *slot = rs,
            None => self.replicasets.push(rs),
        }
    }

    /// Writes `status` to the Deployment when it changed.
    pub async fn write_status(&mut self, status: Value) -> anyhow::Result<()> {
        let api = self.api_of(ApiResource::deployments());
        match api.patch_status(self.d.name(), &Patch::Merge(json!({ "status": status }))).await {
            Ok(updated) => {
                self.d = updated;
                Ok(())
            }
            Err(e) if e.code() == Some(404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
