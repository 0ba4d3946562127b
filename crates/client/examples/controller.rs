//! The controller pattern: informer → handlers enqueue `namespace/name` keys → a worker reads
//! the object from the cache and retries failures with backoff — the third program of
//! "Client-go 实现一个 Watch 客户端" (a deployment named `test-deployment` fails on purpose and is
//! dropped after 5 retries), and the `PodController` of "Kubernetes List-Watch机制（也没那么详的）详解".
//!
//! ```sh
//! cargo run -p listwatch-client --example controller -- [--kubeconfig PATH]
//! kubectl create deployment test-deployment --image=nginx   # in another terminal
//! kubectl label pod <some pod> demo=1                       # "Pod <ns>/<name> is modified"
//! ```
//!
//! For `test-deployment` it prints `Sync/Add/Update for Deployment test-deployment, Replicas: 1`,
//! then `Retry 0 for key default/test-deployment` … `Retry 4 …` with growing pauses (5 ms,
//! 10 ms, … on top of the 2 s the failing sync takes), then
//! `Dropping deployment "default/test-deployment" out of the queue: …`. Any other deployment is
//! synced once per change.
//!
//! Why a queue rather than doing the work in the handler: a key added many times while it waits
//! is processed once, a key is never processed by two workers at once, and a failure gets
//! another chance later instead of being lost (handlers see each change once).

mod common;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use listwatch_client::{HandlerFns, Lister, Object, SharedInformerFactory};
use listwatch_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

use common::{Connection, Deployment, Pod};

/// How often a key is retried before it is dropped (client-go's sample controller uses 5).
const MAX_RETRIES: usize = 5;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
}

type Queue = Arc<RateLimitingQueue<String>>;

fn new_queue(name: &str) -> Queue {
    // Per key 5 ms doubling up to 1000 s, and at most 10 retries a second overall.
    Arc::new(RateLimitingQueue::with_config(default_controller_rate_limiter(), QueueConfig::named(name)))
}

/// The article's `Controller`: a cache to read from and a queue of keys.
struct DeploymentController {
    lister: Lister<Deployment>,
    queue: Queue,
}

impl DeploymentController {
    fn new(factory: &SharedInformerFactory) -> anyhow::Result<Arc<Self>> {
        let informer = factory.informer::<Deployment>();
        let queue = new_queue("deployments");
        // The handlers only turn events into keys; `DeletedObject::key` also works for a
        // delete the watch missed (client-go `DeletionHandlingMetaNamespaceKeyFunc`).
        let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
        informer.add_event_handler(
            HandlerFns::<Deployment>::new()
                .on_add(move |deployment, _| on_add.add(deployment.key()))
                .on_update(move |_old, new, _| on_update.add(new.key()))
                .on_delete(move |deployment| on_delete.add(deployment.key())),
        )?;
        Ok(Arc::new(DeploymentController { lister: informer.lister(), queue }))
    }

    async fn run_worker(self: Arc<Self>) {
        while self.process_next_item().await {}
    }

    /// Takes one key and handles it; `false` once the queue is shut down.
    async fn process_next_item(&self) -> bool {
        let Some(key) = self.queue.get().await else { return false };
        let result = self.sync_to_stdout(&key).await;
        handle_err(&self.queue, result, &key, "deployment");
        // Until `done`, no worker can get this key again.
        self.queue.done(&key);
        true
    }

    /// The business logic: read the object from the cache (never from the API server).
    async fn sync_to_stdout(&self, key: &str) -> Result<(), String> {
        let Some(deployment) = self.lister.get(key) else {
            println!("Deployment {key} does not exist anymore");
            return Ok(());
        };
        println!("Sync/Add/Update for Deployment {}, Replicas: {}", deployment.name(), deployment.replicas());
        if deployment.name() == "test-deployment" {
            tokio::time::sleep(Duration::from_secs(2)).await;
            return Err(format!("simulated error for deployment {}", deployment.name()));
        }
        Ok(())
    }
}

/// The article's `PodController`: pods that changed (not mere resyncs) are logged by a worker.
struct PodController {
    lister: Lister<Pod>,
    queue: Queue,
}

impl PodController {
    fn new(factory: &SharedInformerFactory) -> anyhow::Result<Arc<Self>> {
        let informer = factory.informer::<Pod>();
        let queue = new_queue("pods");
        let enqueue = queue.clone();
        // `NewSharedInformerFactory(client, 20*time.Second)`: every 20 s each cached pod comes
        // again as an update with the same resourceVersion, which is why only real changes
        // are queued.
        informer.add_event_handler_with_resync(
            HandlerFns::<Pod>::new()
                .on_add(|pod, _| println!("Pod {} is added", pod.key()))
                .on_update(move |old, new, _| {
                    if old.resource_version() != new.resource_version() {
                        enqueue.add(new.key());
                    }
                })
                .on_delete(|pod| println!("Pod {} is deleted", pod.key())),
            Some(Duration::from_secs(20)),
        )?;
        Ok(Arc::new(PodController { lister: informer.lister(), queue }))
    }

    async fn run_worker(self: Arc<Self>) {
        while self.process_next_work_item().await {}
    }

    async fn process_next_work_item(&self) -> bool {
        let Some(key) = self.queue.get().await else { return false };
        let result = self.sync(&key);
        handle_err(&self.queue, result, &key, "pod");
        self.queue.done(&key);
        true
    }

    fn sync(&self, key: &str) -> Result<(), String> {
        // REMINDER (as the article says): data from the cache.
        let pod = self.lister.get(key).ok_or_else(|| format!("pod {key} is not in the cache"))?;
        println!("Pod {} is modified", pod.key());
        Ok(())
    }
}

/// Forget a key that succeeded; retry a failed one with backoff, at most [`MAX_RETRIES`] times.
///
/// This is the deployment `Controller`'s `handleErr`. The `PodController` article retries
/// forever and never calls `Forget`, so a pod that once failed keeps its grown backoff for its
/// next failure; here both controllers use this function.
fn handle_err(queue: &Queue, result: Result<(), String>, key: &str, what: &str) {
    let key = key.to_owned();
    let Err(error) = result else {
        queue.forget(&key);
        return;
    };
    // How many times this key has been put back already.
    let requeues = queue.num_requeues(&key);
    if requeues < MAX_RETRIES {
        println!("Retry {requeues} for key {key}");
        // Back after a delay that grows with each failure, so a broken object cannot hot-loop.
        queue.add_rate_limited(key);
        return;
    }
    queue.forget(&key);
    println!("Dropping {what} {key:?} out of the queue: {error}");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let client = Args::parse().connection.client()?;
    // `informers.NewSharedInformerFactory(clientset, time.Hour*12)`.
    let factory = SharedInformerFactory::builder(client).default_resync(Duration::from_secs(12 * 60 * 60)).build();
    let deployments = DeploymentController::new(&factory)?;
    let pods = PodController::new(&factory)?;

    factory.start();
    if !factory.wait_for_cache_sync(Duration::from_secs(60)).await {
        anyhow::bail!("the caches did not sync within 60 s");
    }
    // One worker each, as in the articles; more would share the queue safely.
    let workers = [tokio::spawn(deployments.clone().run_worker()), tokio::spawn(pods.clone().run_worker())];
    println!("controllers started");

    tokio::signal::ctrl_c().await?;
    // Stop taking keys, let the syncs in progress finish, then stop the informers.
    deployments.queue.shut_down_with_drain().await;
    pods.queue.shut_down_with_drain().await;
    for worker in workers {
        worker.await?;
    }
    factory.shutdown();
    Ok(())
}
