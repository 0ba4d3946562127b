//! client-go's work queue for controllers (`k8s.io/client-go/util/workqueue`), in async Rust.
//!
//! A controller's event handlers turn every change they see into a *key* (`namespace/name`) and
//! add it to a queue; a few workers take keys off the queue, read the current object from an
//! informer's cache, and reconcile. The queue is what makes that safe and cheap:
//!
//! * **Dedupe** ([`WorkQueue`], module [`queue`]): a key added many times before a worker takes it
//!   is processed once; a key is never processed by two workers at once; a key added while it is
//!   processing is processed again after its worker calls `done`. These come from client-go's
//!   *dirty* and *processing* sets.
//! * **Delays** ([`DelayingQueue`], module [`delaying`]): `add_after` adds a key later; a key
//!   waiting for a delay keeps the earliest deadline asked for.
//! * **Retries** ([`RateLimitingQueue`], module [`rate_limiting`]): `add_rate_limited` requeues a
//!   failed key after a delay chosen by a [`RateLimiter`] (module [`rate_limiter`]), by default
//!   [`default_controller_rate_limiter`]: per key 5 ms doubling to at most 1000 s, and overall at
//!   most 10 retries per second after a burst of 100. `forget` resets a key after success.
//! * **Metrics** (module [`metrics`]): `workqueue_depth`, `workqueue_adds_total`,
//!   `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
//!   `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` and
//!   `workqueue_retries_total`, labelled with the queue's name, through a [`MetricsProvider`]:
//!   [`NoopMetricsProvider`] by default, [`PrometheusMetricsProvider`] to publish them.
//!
//! Each layer wraps the one before, as in client-go, so a program picks the smallest that does the
//! job. Keys are any `Clone + Eq + Hash + Send + Sync + 'static` type; controllers use `String`.
//! The queues are shared between workers behind an `Arc`; the delaying and rate-limiting queues
//! need a Tokio runtime to be built, because a background task adds delayed keys when they are due.
//!
//! # The controller loop
//!
//! Workers `get` a key, reconcile it, then either `forget` it (success) or `add_rate_limited` it
//! (failure, retried with backoff) — giving up after a few retries — and in every case call `done`.
//! Shutting down with drain lets in-flight reconciles finish.
//!
//! ```
//! use std::sync::Arc;
//!
//! use listwatch_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
//! use tokio::sync::mpsc;
//!
//! /// Retries before a key is dropped, as in client-go's sample controller.
//! const MAX_RETRIES: usize = 5;
//!
//! /// Stands in for the real work: read the object from the cache, make the world match it.
//! async fn reconcile(key: &str) -> Result<(), String> {
//!     if key == "default/broken" { Err(format!("{key} cannot be reconciled")) } else { Ok(()) }
//! }
//!
//! /// How a worker finished with a key; only here so the example can check itself.
//! #[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
//! enum Outcome {
//!     Reconciled(String),
//!     DroppedAfterRetries(String, usize),
//! }
//!
//! async fn worker(queue: Arc<RateLimitingQueue<String>>, outcomes: mpsc::UnboundedSender<Outcome>) {
//!     // `None` means the queue shut down and nothing is left: the worker ends.
//!     while let Some(key) = queue.get().await {
//!         match reconcile(&key).await {
//!             Ok(()) => {
//!                 // The key's next failure starts the backoff from 5 ms again.
//!                 queue.forget(&key);
//!                 outcomes.send(Outcome::Reconciled(key.clone())).unwrap();
//!             }
//!             Err(_error) if queue.num_requeues(&key) < MAX_RETRIES => {
//!                 // Retried after 5 ms, 10 ms, 20 ms, … (overall at most 10/s past a burst of 100).
//!                 queue.add_rate_limited(key.clone());
//!             }
//!             Err(_error) => {
//!                 // Give up (a real controller logs the error); the next change to the object adds
//!                 // the key again, with a fresh backoff.
//!                 let retries = queue.num_requeues(&key);
//!                 queue.forget(&key);
//!                 outcomes.send(Outcome::DroppedAfterRetries(key.clone(), retries)).unwrap();
//!             }
//!         }
//!         // Always: until then no worker can get this key again.
//!         queue.done(&key);
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() {
//!     let queue = Arc::new(RateLimitingQueue::with_config(
//!         default_controller_rate_limiter(),
//!         QueueConfig::named("example"),
//!     ));
//!     // What the event handlers do: add keys. The second "default/a" collapses into the first.
//!     for key in ["default/a", "default/broken", "default/b", "default/a"] {
//!         queue.add(key.to_string());
//!     }
//!
//!     let (outcome_tx, mut outcome_rx) = mpsc::unbounded_channel();
//!     let workers: Vec<_> =
//!         (0..2).map(|_| tokio::spawn(worker(queue.clone(), outcome_tx.clone()))).collect();
//!
//!     let mut outcomes = Vec::new();
//!     for _ in 0..3 {
//!         outcomes.push(outcome_rx.recv().await.unwrap());
//!     }
//!     outcomes.sort();
//!     assert_eq!(
//!         outcomes,
//!         [
//!             Outcome::Reconciled("default/a".into()),
//!             Outcome::Reconciled("default/b".into()),
//!             Outcome::DroppedAfterRetries("default/broken".into(), MAX_RETRIES),
//!         ]
//!     );
//!
//!     // Stop taking work, let in-flight reconciles finish, then the workers' `get` returns `None`.
//!     queue.shut_down_with_drain().await;
//!     for worker in workers {
//!         worker.await.unwrap();
//!     }
//! }
//! ```
//!
//! # Publishing the metrics
//!
//! ```
//! use std::sync::Arc;
//!
//! use listwatch_workqueue::{PrometheusMetricsProvider, QueueConfig, WorkQueue};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = prometheus::Registry::new();
//! let provider = PrometheusMetricsProvider::new();
//! provider.register(&registry).unwrap();
//!
//! // One provider serves every queue; each queue's name becomes its `name` label.
//! let queue = WorkQueue::with_config(QueueConfig::named("pods").with_metrics_provider(Arc::new(provider)));
//! queue.add("default/web-0".to_string());
//!
//! let depth = registry.gather().into_iter().find(|family| family.name() == "workqueue_depth").unwrap();
//! assert_eq!(depth.get_metric()[0].get_gauge().get_value(), 1.0);
//! # }
//! ```

pub mod delaying;
pub mod metrics;
pub mod queue;
pub mod rate_limiter;
pub mod rate_limiting;

pub use delaying::DelayingQueue;
pub use metrics::{MetricsProvider, NoopMetricsProvider, PrometheusMetricsProvider};
pub use queue::{QueueConfig, WorkQueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_controller_rate_limiter, default_item_based_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
