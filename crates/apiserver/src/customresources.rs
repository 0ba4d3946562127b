//! The resources CustomResourceDefinitions add while the server runs: the run-time half of the
//! registry, beside the static table of built-ins (`listwatch_meta::registry::BUILTIN`).
//!
//! Why a separate set rather than a growing table: the built-ins never change and every
//! layer reads them as static data; what CRDs add comes and goes with them. So the built-in
//! stores stay a fixed list in [`crate::state::ApiState`], and this holds one immutable
//! [`Snapshot`] of the served CRDs, swapped whole under a lock when the CRD controller
//! installs, changes or removes one. A request takes the snapshot's `Arc` once and is served
//! by the stores it found even if a CRD changes meanwhile (as kube finishes a request on the
//! storage it started with). The router, the delegator's stores, discovery and OpenAPI all
//! look resources up through [`ApiState`](crate::state::ApiState), which asks the built-ins
//! first and this set second.
//!
//! Each served version of a CRD has its own [`ResourceStore`] with its own watch cache, as
//! kube gives each version its own storage; all of a CRD's versions share one storage prefix.
//! The storage version's store comes first: it is the one controllers walk when they visit
//! every object of every resource, so each object is visited once.

pub mod conversion;
pub mod resource;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use listwatch_apiextensions::CustomResourceDefinition;
use parking_lot::RwLock;

use crate::registry::ResourceStore;

/// One CRD as served now.
#[derive(Clone)]
pub struct ServedCrd {
    /// The CRD as last seen or written (its status says what discovery shows).
    pub crd: Arc<CustomResourceDefinition>,
    /// One store per served version, the storage version's first. Empty while its names are
    /// not accepted: its URLs do not answer then.
    pub stores: Vec<Arc<ResourceStore>>,
}

impl ServedCrd {
    /// Whether its URLs answer (spec §1.4: NamesAccepted or Established).
    pub fn serves(&self) -> bool {
        !self.stores.is_empty()
    }

    /// Whether discovery lists it (Established).
    pub fn established(&self) -> bool {
        self.serves() && self.crd.is_condition_true("Established")
    }
}

/// The served CRDs at one moment, by CRD name.
#[derive(Default)]
pub struct Snapshot {
    /// By CRD name (`crontabs.stable.example.com`).
    pub crds: BTreeMap<String, ServedCrd>,
    /// The OpenAPI v3 document of every CRD group-version, by path (`apis/<g>/<v>`), with its
    /// hash: made by discovery on first use, once per snapshot.
    pub openapi: OnceLock<BTreeMap<String, (Bytes, String)>>,
}

impl Snapshot {
    /// The store serving `plural` in `group`/`version`.
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceStore>> {
        let name = format!("{plural}.{group}");
        if let Some(served) = self.crds.get(&name)
            && let Some(store) = served.stores.iter().find(|s| s.resource.version == version)
        {
            return Some(store);
        }
        // The accepted plural can differ from the one in the CRD's name only while a rename
        // is refused; look the others through too.
        self.crds
            .values()
            .flat_map(|c| c.stores.iter())
            .find(|s| s.resource.group == group && s.resource.version == version && s.resource.plural == plural)
    }

    /// The served CRD a resource belongs to.
    pub fn crd_of(&self, group: &str, plural: &str) -> Option<&ServedCrd> {
        self.crds
            .values()
            .find(|c| c.stores.first().is_some_and(|s| s.resource.group == group && s.resource.plural == plural))
    }

    /// Established CRDs, for discovery and OpenAPI.
    pub fn established(&self) -> impl Iterator<Item = &ServedCrd> {
        self.crds.values().filter(|c| c.established())
    }
}

/// The run-time set: the current [`Snapshot`], replaced whole on every change.
pub struct CustomResources {
    current: RwLock<Arc<Snapshot>>,
    /// Counts the changes, for those who follow the set (the garbage collector watches the
    /// stores it adds).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for CustomResources {
    fn default() -> Self {
        CustomResources { current: RwLock::default(), changes: tokio::sync::watch::channel(0).0 }
    }
}

impl CustomResources {
    /// Changes whenever the set does.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The served CRDs now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// Sets how `crd` is served: with `stores` (one per served version, the storage version's
    /// first; empty to stop serving it while keeping it known), or removes it (`None`).
    /// Returns the stores it no longer serves with, whose watches the caller ends.
    pub fn set(&self, name: &str, served: Option<ServedCrd>) -> Vec<Arc<ResourceStore>> {
        let mut current = self.current.write();
        let mut crds = current.crds.clone();
        let old = match served {
            Some(s) => crds.insert(name.to_owned(), s),
            None => crds.remove(name),
        };
        let kept: Vec<&Arc<ResourceStore>> = crds.get(name).map(|c| c.stores.iter().collect()).unwrap_or_default();
        let dropped = old
            .map(|o| o.stores.into_iter().filter(|s| !kept.iter().any(|k| Arc::ptr_eq(k, s))).collect())
            .unwrap_or_default();
        *current = Arc::new(Snapshot { crds, openapi: OnceLock::new() });
        drop(current);
        self.changes.send_modify(|n| *n += 1);
        dropped
    }
}
