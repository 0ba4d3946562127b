//! The in-process clients of a scenario (`clients:`): the client crate's own reflector, one per
//! client, each behind an [`Observed`] lister-watcher that records its traffic, with a store it
//! keeps from its events (what the checker compares with storage at the end). Each can be told
//! to stop reading for a while (the `pauseClient` fault).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use listwatch_client::reflector::{Reflector, ReflectorConfig, ReflectorEvent};
use listwatch_client::{Api, Client, DynamicObject, ListParams, Object};
use listwatch_simulator::record::{ClientRecord, ObjectState};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::observe::{self, ClientLog, Observed};
use crate::scenario::{ClientMode, ClientSpec};

/// Each client's "stop reading until" switch, by client id.
pub type Pauses = Arc<HashMap<String, watch::Sender<Option<Instant>>>>;

/// A client's store: what its events left, by key.
type Store = Arc<Mutex<BTreeMap<String, ObjectState>>>;

/// One running client.
struct Running {
    id: String,
    spec: ClientSpec,
    log: Arc<Mutex<ClientLog>>,
    store: Store,
    task: JoinHandle<()>,
}

/// Every client of the scenario, running.
pub struct Reflectors {
    running: Vec<Running>,
    /// Each client's "stop reading until" switch, by id.
    pub pauses: Pauses,
}

impl Reflectors {
    /// The ids of the clients `specs` describe: `<name>-<i>`.
    pub fn ids(specs: &[ClientSpec]) -> Vec<String> {
        specs.iter().flat_map(|spec| (0..spec.count).map(move |i| format!("{}-{i}", spec.name))).collect()
    }

    /// Starts `count` reflectors per spec, spread over the servers in turn (each fails over to
    /// the next server when its own cannot be reached); they run until `stop`.
    /// `servers_as(id)` is a client of each server authenticated as the client `id`.
    pub fn start(
        specs: &[ClientSpec],
        servers_as: impl Fn(&str) -> anyhow::Result<Vec<Client>>,
        started: Instant,
        stop: &watch::Receiver<bool>,
    ) -> anyhow::Result<Self> {
        let mut running = Vec::new();
        let mut pauses = HashMap::new();
        for spec in specs {
            for i in 0..spec.count {
                let id = format!("{}-{i}", spec.name);
                let servers = servers_as(&id)?;
                let first_server = running.len() % servers.len();
                let apis: Vec<Api<DynamicObject>> = servers
                    .iter()
                    .map(|c| Api::new(c.clone(), spec.resource.api_resource(), spec.namespace.as_deref()))
                    .collect();
                let (observed, log) = Observed::new(apis, first_server, &id, started);
                let config = ReflectorConfig {
                    name: id.clone(),
                    label_selector: spec.selector.clone(),
                    streaming_list: spec.mode == ClientMode::StreamingList,
                    ..ReflectorConfig::default()
                };
                let store = Store::default();
                let (pause_tx, pause) = watch::channel(None);
                pauses.insert(id.clone(), pause_tx);
                let task = tokio::spawn(reflect(Reflector::new(observed, config), store.clone(), pause, stop.clone()));
                running.push(Running { id, spec: spec.clone(), log, store, task });
            }
        }
        Ok(Reflectors { running, pauses: Arc::new(pauses) })
    }

    /// Whether every client's store holds exactly what a consistent LIST of its scope returns.
    pub async fn caught_up(&self, server: &Client) -> bool {
        for client in &self.running {
            if !matches_list(server, &client.spec, &client.store).await {
                return false;
            }
        }
        true
    }

    /// Stops every client (its streams dropped, which marks their ends) and returns its records.
    pub async fn finish(self) -> Vec<ClientRecord> {
        let mut records = Vec::new();
        for Running { id, spec, log, store, task } in self.running {
            task.abort();
            let _ = task.await;
            let log = std::mem::take(&mut *log.lock().expect("log"));
            let final_store = store.lock().expect("store").values().cloned().collect();
            records.push(ClientRecord {
                id,
                group: String::new(),
                resource: spec.resource.plural().into(),
                namespace: spec.namespace.clone(),
                label_selector: spec.selector.clone(),
                field_selector: None,
                watches: log.watches,
                lists: log.lists,
                final_store,
            });
        }
        records
    }
}

/// Runs a reflector until `stop`, keeping a store of what it delivered.
async fn reflect(
    mut reflector: Reflector<DynamicObject>,
    store: Store,
    mut pause: watch::Receiver<Option<Instant>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        // A paused client reads nothing (its stream's bytes wait in the buffers) until then, or
        // until the pause is changed (an `untilClosed` pause ends when the server has acted).
        let paused_until = *pause.borrow_and_update();
        if let Some(until) = paused_until
            && Instant::now() < until
        {
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = pause.changed() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            continue;
        }
        let event = tokio::select! {
            event = reflector.next_event() => event,
            _ = stop.wait_for(|s| *s) => return,
        };
        let mut store = store.lock().expect("store");
        match event {
            ReflectorEvent::Replace { objects, .. } => {
                *store = objects.iter().map(|o| (o.key(), observe::object_state(o))).collect();
            }
            ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) => {
                store.insert(o.key(), observe::object_state(&o));
            }
            ReflectorEvent::Deleted(o) => {
                store.remove(&o.key());
            }
            ReflectorEvent::Bookmark { .. } => {}
        }
    }
}

/// Whether a client's store holds exactly what a consistent LIST of its scope returns.
async fn matches_list(client: &Client, spec: &ClientSpec, store: &Mutex<BTreeMap<String, ObjectState>>) -> bool {
    let api: Api<DynamicObject> = Api::new(client.clone(), spec.resource.api_resource(), spec.namespace.as_deref());
    let params = ListParams { label_selector: spec.selector.clone(), ..Default::default() };
    let Ok(list) = api.list(&params).await else { return false };
    let store = store.lock().expect("store");
    list.items.len() == store.len()
        && list.items.iter().all(|o| {
            store.get(&o.key()).is_some_and(|s| Some(s.resource_version.to_string().as_str()) == o.resource_version())
        })
}
