//! Running a real `listwatch serve` for the client's tests (testkit's harness), on the embedded
//! store or on etcd.
//!
//! The binary comes from `LISTWATCH_BIN` (scripts/test.sh sets it); without it the tests fail
//! with a message saying so, they never skip. etcd runs use the run's shared etcd
//! (`LISTWATCH_ETCD_ENDPOINTS`, or one started by listwatch-testkit) under a key prefix of their
//! own, or a private etcd that a test may kill and restart.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use listwatch_client::{
    Api, ApiResource, BackoffConfig, Client, Config, DynamicObject, ListParams, Object, ReflectorConfig,
};
use serde_json::json;

pub use listwatch_testkit::server::Backend;

/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// A running `listwatch serve` (testkit's harness), killed when dropped.
pub struct Server(listwatch_testkit::server::Server);

impl Deref for Server {
    type Target = listwatch_testkit::server::Server;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Server {
    /// Starts a server for test `name` with the debug API on, no compactor, and `extra` flags.
    pub async fn start(name: &str, backend: Backend, extra: &[&str]) -> Server {
        let server = listwatch_testkit::server::Server::builder()
            .name(name)
            .backend(backend)
            .args(extra)
            .ready_timeout(WAIT)
            .start()
            .await;
        let server = Server(server);
        server.wait_for_the_api().await;
        server
    }

    /// Ready means the API answers through the client under test, too.
    async fn wait_for_the_api(&self) {
        let api: Api<DynamicObject> = Api::new(self.client(), ApiResource::namespaces(), None);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match api.get("default").await {
                Ok(_) => return,
                Err(e) => assert!(
                    tokio::time::Instant::now() < deadline,
                    "listwatch never became ready ({e}); log:\n{}",
                    self.log()
                ),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's kubeconfig, as a client config.
    pub fn config(&self) -> Config {
        Config::from_kubeconfig(&self.kubeconfig).expect("the server's kubeconfig loads")
    }

    pub fn client(&self) -> Client {
        Client::new(self.config()).expect("a client")
    }

    /// Restarts on the same address, data dir and storage.
    pub async fn restart(&mut self) {
        self.0.restart().await;
        self.wait_for_the_api().await;
    }

    /// POST /debug/listwatch/<path>.
    pub async fn debug(&self, path: &str) {
        let client = self.client();
        client
            .request(
                listwatch_client::http::Method::POST,
                &format!("/debug/listwatch/{path}"),
                "application/json",
                None,
            )
            .await
            .unwrap_or_else(|e| panic!("debug {path}: {e}"));
    }
}

/// Reflector settings that make everything happen quickly: short watches, short backoffs.
pub fn fast_reflector(name: &str) -> ReflectorConfig {
    ReflectorConfig {
        name: name.to_owned(),
        min_watch_timeout: Duration::from_secs(3),
        idle_margin: Duration::from_secs(3),
        backoff: BackoffConfig {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(500),
            ..Default::default()
        },
        initial_events_timeout: Duration::from_secs(20),
        list_timeout: Some(Duration::from_secs(30)),
        ..ReflectorConfig::default()
    }
}

pub fn configmaps(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::new(client.clone(), ApiResource::configmaps(), Some(namespace))
}

pub fn configmap(name: &str, value: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})
}

/// Retries `request` while the server answers 429 (as it does while a watch cache is being
/// rebuilt after a reset), waiting the Retry-After it names; at most [`WAIT`] in all.
pub async fn while_throttled<T, F, Fut>(mut request: F) -> Result<T, listwatch_client::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, listwatch_client::Error>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match request().await {
            Err(e) if e.is_too_many_requests() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(e.retry_after().unwrap_or(Duration::from_millis(100))).await;
            }
            other => return other,
        }
    }
}

/// The server's state: key → resourceVersion, from a consistent list.
pub async fn server_state(api: &Api<DynamicObject>) -> BTreeMap<String, String> {
    let params = ListParams::default();
    let list = while_throttled(|| api.list(&params)).await.expect("a consistent list");
    list.items.iter().map(|o| (o.key(), o.resource_version().unwrap_or("").to_owned())).collect()
}

/// Creates, updates and deletes configmaps `prefix-*` from `workers` concurrent writers,
/// `per_worker` objects each: every object is created, updated `updates` times, and every third
/// one deleted.
pub async fn storm(api: &Api<DynamicObject>, prefix: &str, workers: usize, per_worker: usize, updates: usize) {
    let mut tasks = Vec::new();
    for worker in 0..workers {
        let api = api.clone();
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_worker {
                let name = format!("{prefix}-{worker}-{i}");
                // A retried create may find its first try succeeded (409), a retried delete its
                // first try done (404).
                let object = configmap(&name, "0");
                write_retrying(&[409], || api.create(&object)).await;
                for u in 1..=updates {
                    let patch = json!({"data": {"v": u.to_string()}});
                    write_retrying(&[], || api.patch_merge(&name, &patch)).await;
                }
                if i % 3 == 0 {
                    write_retrying(&[404], || async { api.delete(&name).await.map(|_| DynamicObject(json!({}))) })
                        .await;
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(WAIT * 3, task).await.expect("the storm ends in time").expect("a writer panicked");
    }
}

/// Retries a write while the server is unavailable (restarts, etcd restarts, 429s); `done`
/// lists the codes that mean an earlier try already did it.
pub async fn write_retrying<F, Fut>(done: &[u16], mut write: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<DynamicObject, listwatch_client::Error>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match write().await {
            Ok(_) => return,
            Err(e) if e.code().is_some_and(|c| done.contains(&c)) => return,
            Err(e) if tokio::time::Instant::now() < deadline && retriable(&e) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("write failed: {e}"),
        }
    }
}

fn retriable(e: &listwatch_client::Error) -> bool {
    match e.code() {
        Some(code) => code == 429 || code >= 500,
        None => true,
    }
}
