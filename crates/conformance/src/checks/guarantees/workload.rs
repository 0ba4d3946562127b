//! The writer of the guarantee checks: a seeded mix of creates, updates (data changes, and label
//! flips that move objects in and out of the selected clients' selector) and deletes over a
//! small pool of objects of the target's resource (ConfigMaps, or the suite's custom resource),
//! keeping what each write returned.
//!
//! Writes go one at a time, each sent after the previous one was acknowledged. That order is
//! what lets the history be rebuilt from the acknowledgements: a write sent after another was
//! acknowledged commits at a higher revision, so the acknowledged writes around a delete bound
//! the delete's revision, which its answer (a Status, as kube-apiserver sends for ConfigMaps)
//! does not carry.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::Method;
use serde_json::{Value, json};

use crate::fixture::rv;
use crate::{CheckFailure, Target};

/// The label that puts an object in or out of the selected clients' scope.
pub const SELECTED_LABEL: &str = "listwatch-conformance/selected";

/// The selected clients' label selector.
pub const SELECTOR: &str = "listwatch-conformance/selected=yes";

/// Every object the writer makes is named with this prefix; any other object in the namespace
/// (kube-controller-manager publishes `kube-root-ca.crt` into every namespace) is not ours.
pub const NAME_PREFIX: &str = "g-";

/// How many names the random writes choose from.
const POOL: usize = 24;

/// The least time between the starts of two writes: spreads the writes over a few seconds, so
/// watches with a short `timeoutSeconds` end and resume while writes are still coming.
const PACE: Duration = Duration::from_millis(20);

/// Whether `name` is one of the writer's objects.
pub fn is_ours(name: &str) -> bool {
    name.starts_with(NAME_PREFIX)
}

/// One acknowledged write.
#[derive(Clone, Debug)]
pub enum Ack {
    /// A create (`created`) or an update: the stored object, whose resourceVersion is the
    /// write's revision.
    Put { created: bool, object: Value },
    /// A delete: the state it deleted (the last one acknowledged). Its revision is not known.
    Delete { deleted: Value },
}

/// What the writes were, counted for the run's summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteCounts {
    pub creates: usize,
    pub data_updates: usize,
    pub label_flips: usize,
    pub deletes: usize,
}

/// The writer: the live objects as last acknowledged, and every acknowledgement in order.
pub struct Writer<'a> {
    target: &'a Target,
    collection: String,
    namespace: String,
    rng: StdRng,
    live: BTreeMap<String, Value>,
    acks: Vec<Ack>,
    counts: WriteCounts,
    last_start: Option<tokio::time::Instant>,
}

impl<'a> Writer<'a> {
    /// A writer of the target's resource in `namespace`, choosing with `seed`.
    pub fn new(target: &'a Target, namespace: &str, seed: u64) -> Writer<'a> {
        Writer {
            target,
            collection: target.resource.collection(namespace),
            namespace: namespace.to_string(),
            rng: StdRng::seed_from_u64(seed),
            live: BTreeMap::new(),
            acks: Vec::new(),
            counts: WriteCounts::default(),
            last_start: None,
        }
    }

    /// Every acknowledged write, in the order they were made.
    pub fn acks(&self) -> &[Ack] {
        &self.acks
    }

    pub fn counts(&self) -> WriteCounts {
        self.counts
    }

    /// Creates `name`, in the selector's scope or not.
    pub async fn create(&mut self, name: &str, selected: bool) -> Result<Value, CheckFailure> {
        self.pace().await;
        let labels = json!({SELECTED_LABEL: if selected { "yes" } else { "no" }});
        let body = self.target.resource.object(
            name,
            Some(&self.namespace),
            labels.as_object().cloned().unwrap_or_default(),
            json!({"value": "0"}),
        );
        let response = self.target.send(Method::POST, &self.collection, Some(&body)).await?;
        let object = response.expect(201)?;
        self.counts.creates += 1;
        self.acknowledge_put(true, object.clone(), &response)?;
        Ok(object)
    }

    /// One seeded write: a create when the chosen name is free, else an update of its data, a
    /// label flip or a delete.
    pub async fn random_write(&mut self) -> Result<(), CheckFailure> {
        let name = format!("{NAME_PREFIX}{:02}", self.rng.random_range(0..POOL));
        let Some(current) = self.live.get(&name).cloned() else {
            let selected = self.rng.random_bool(0.5);
            return self.create(&name, selected).await.map(|_| ());
        };
        match self.rng.random_range(0..10u8) {
            0..5 => {
                let mut changed = current;
                changed["data"] = json!({"value": self.rng.random::<u32>().to_string()});
                self.counts.data_updates += 1;
                self.replace(changed).await
            }
            5..8 => {
                let mut changed = current;
                let flipped = if changed["metadata"]["labels"][SELECTED_LABEL] == "yes" { "no" } else { "yes" };
                changed["metadata"]["labels"][SELECTED_LABEL] = json!(flipped);
                self.counts.label_flips += 1;
                self.replace(changed).await
            }
            _ => self.delete(&name, current).await,
        }
    }

    async fn replace(&mut self, changed: Value) -> Result<(), CheckFailure> {
        self.pace().await;
        let name = changed["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let path = format!("{}/{name}", self.collection);
        let response = self.target.send(Method::PUT, &path, Some(&changed)).await?;
        let object = response.expect(200)?;
        self.acknowledge_put(false, object, &response)
    }

    async fn delete(&mut self, name: &str, current: Value) -> Result<(), CheckFailure> {
        self.pace().await;
        let path = format!("{}/{name}", self.collection);
        let response = self.target.send(Method::DELETE, &path, None).await?;
        if !matches!(response.status, 200 | 202) {
            return Err(CheckFailure::failed_with(format!("deleting {name}"), response.describe()));
        }
        self.counts.deletes += 1;
        self.live.remove(name);
        self.acks.push(Ack::Delete { deleted: current });
        Ok(())
    }

    fn acknowledge_put(
        &mut self,
        created: bool,
        object: Value,
        response: &crate::http::ApiResponse,
    ) -> Result<(), CheckFailure> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        if rv(&object) <= 0 || !is_ours(&name) {
            return Err(CheckFailure::failed_with(
                "a write must answer the stored object, with its name and a numeric metadata.resourceVersion",
                response.describe(),
            ));
        }
        self.live.insert(name, object.clone());
        self.acks.push(Ack::Put { created, object });
        Ok(())
    }

    /// Waits until [`PACE`] has passed since the last write started.
    async fn pace(&mut self) {
        if let Some(last) = self.last_start {
            tokio::time::sleep_until(last + PACE).await;
        }
        self.last_start = Some(tokio::time::Instant::now());
    }
}
