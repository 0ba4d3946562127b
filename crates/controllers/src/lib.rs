//! The controllers of kube-controller-manager that make workloads move, run by `listwatch
//! serve` against its own address (or by anything else that has a [`listwatch_client::Client`]).
//!
//! They are clients like any other: each one lists and watches through listwatch-client's
//! shared informers, queues keys in listwatch-workqueue's rate-limited queue and writes through
//! the REST API, so the project's own client machinery carries their load. Nothing here reaches
//! into the server's storage.
//!
//! * [`replicaset`]: pods to match `spec.replicas`, owner references, adoption and release by
//!   selector, `status` (replicas, fullyLabeled, ready, available, observedGeneration);
//! * [`deployment`]: one ReplicaSet per pod-template hash, rolling updates and `Recreate`,
//!   pause, revisions and their history limit, `status` and the conditions `kubectl rollout
//!   status` reads;
//! * [`pods`]: the kubelet's part, which listwatch has no kubelets for, played by
//!   [`stages`] (kwok's Stage API, as data): by default a new pod is ContainerCreating, then
//!   Running and Ready (IP, start time, container statuses, conditions) after a delay with
//!   jitter, and a pod bound to a node that is deleted is removed after a moment; other stage
//!   files add failures (examples/stages: CrashLoopBackOff, OOMKilled). Once nodes exist, only
//!   pods bound to one move;
//! * [`stages`]: the Stage model and loader (YAML in kwok's shape, refused with file, line and
//!   column when malformed), the field paths selectors read, the status templates, the
//!   default set;
//! * [`nodes`]: fake nodes, kwok-like (`--nodes N`): registered as kubelets register, kept
//!   alive by Lease renewals and status heartbeats, stopped by an annotation;
//! * [`scheduler`]: binds pending pods to the fitting node with the fewest pods, through the
//!   `pods/binding` subresource, or marks them Unschedulable with kube's message;
//! * [`serviceaccounts`]: a `default` ServiceAccount in every namespace;
//! * [`node_lifecycle`]: a node whose Lease goes unrenewed becomes Ready=Unknown and tainted
//!   unreachable, and its pods are evicted once their toleration runs out ([`taints`] matches
//!   tolerations for both).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use listwatch_client::{Client, SharedInformerFactory};

mod common;
pub mod deployment;
pub mod node_lifecycle;
pub mod nodes;
pub mod pods;
pub mod replicaset;
pub mod scheduler;
pub mod serviceaccounts;
pub mod stages;
pub mod taints;

/// One controller `--controllers` can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// [`deployment`].
    Deployment,
    /// [`replicaset`].
    ReplicaSet,
    /// [`pods`].
    PodLifecycle,
    /// [`nodes`].
    Nodes,
    /// [`scheduler`].
    Scheduler,
    /// [`node_lifecycle`].
    NodeLifecycle,
    /// [`serviceaccounts`].
    ServiceAccount,
}

impl Controller {
    /// Every controller, in the order `--controllers` lists them.
    pub const ALL: [Controller; 7] = [
        Controller::Deployment,
        Controller::ReplicaSet,
        Controller::PodLifecycle,
        Controller::Nodes,
        Controller::Scheduler,
        Controller::NodeLifecycle,
        Controller::ServiceAccount,
    ];

    /// The name `--controllers` takes.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Deployment => "deployment",
            Controller::ReplicaSet => "replicaset",
            Controller::PodLifecycle => "pod-lifecycle",
            Controller::Nodes => "nodes",
            Controller::Scheduler => "scheduler",
            Controller::NodeLifecycle => "node-lifecycle",
            Controller::ServiceAccount => "serviceaccount",
        }
    }
}

/// The controllers to run: what `--controllers` says (`all`, the default; `none`; or names,
/// comma-separated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection(BTreeSet<Controller>);

impl Selection {
    /// Every controller.
    pub fn all() -> Selection {
        Selection(Controller::ALL.into_iter().collect())
    }

    /// No controller: a bare API server.
    pub fn none() -> Selection {
        Selection(BTreeSet::new())
    }

    /// Whether `controller` is chosen.
    pub fn contains(&self, controller: Controller) -> bool {
        self.0.contains(&controller)
    }

    /// Whether nothing is chosen.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Default for Selection {
    fn default() -> Self {
        Selection::all()
    }
}

impl FromStr for Selection {
    type Err = String;

    fn from_str(text: &str) -> Result<Selection, String> {
        let mut chosen = BTreeSet::new();
        for name in text.split(',').map(str::trim) {
            match name {
                "all" | "*" => chosen.extend(Controller::ALL),
                "none" | "" => {}
                _ => match Controller::ALL.into_iter().find(|c| c.name() == name) {
                    Some(controller) => {
                        chosen.insert(controller);
                    }
                    None => {
                        let known: Vec<&str> = Controller::ALL.iter().map(|c| c.name()).collect();
                        return Err(format!(
                            "unknown controller {name:?}: want all, none or some of {}",
                            known.join(", ")
                        ));
                    }
                },
            }
        }
        Ok(Selection(chosen))
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.0.iter().map(|c| c.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// Tunables of the controllers.
#[derive(Clone, Debug)]
pub struct Options {
    /// Workers per controller (kube-controller-manager's `--concurrent-*-syncs`, 5 there).
    pub workers: usize,
    /// How long a new pod stays Pending before the stand-in kubelet starts it: the default
    /// stages' delays are scaled to it.
    pub pod_start_delay: Duration,
    /// The stages pods move through; the default set (scaled to `pod_start_delay`) if `None`.
    pub stages: Option<Arc<stages::StageSet>>,
    /// Seed of the stages' jitter and choices; from the clock if `None`.
    pub stage_seed: Option<u64>,
    /// Fake nodes to register and keep alive (`node-0` ..), with the `nodes` controller.
    pub nodes: usize,
    /// The node lifecycle controller's periods and default toleration.
    pub node_lifecycle: node_lifecycle::LifecycleOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: 5,
            pod_start_delay: stages::DEFAULT_START_DELAY,
            stages: None,
            stage_seed: None,
            nodes: 0,
            node_lifecycle: node_lifecycle::LifecycleOptions::default(),
        }
    }
}

/// The running controllers; dropping this does not stop them, [`Running::stop`] does.
pub struct Running {
    factory: SharedInformerFactory,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    queues: Vec<common::Queue>,
}

impl Running {
    /// Stops the workers and the informers.
    pub fn stop(self) {
        for queue in self.queues {
            queue.shut_down();
        }
        for task in self.tasks {
            task.abort();
        }
        self.factory.shutdown();
    }
}

/// Starts the chosen controllers on `client`: their informers first, their workers once the
/// caches have synced (as kube-controller-manager's `WaitForCacheSync`).
pub fn start(client: Client, selection: &Selection, options: &Options) -> anyhow::Result<Running> {
    let factory = SharedInformerFactory::new(client.clone());
    let mut running = Running { factory: factory.clone(), tasks: Vec::new(), queues: Vec::new() };
    let mut starts: Vec<common::Workers> = Vec::new();
    if selection.contains(Controller::ReplicaSet) {
        starts.push(replicaset::ReplicaSetController::register(client.clone(), &factory)?);
    }
    if selection.contains(Controller::Deployment) {
        starts.push(deployment::DeploymentController::register(client.clone(), &factory)?);
    }
    if selection.contains(Controller::PodLifecycle) {
        let stages = match &options.stages {
            Some(stages) => stages.clone(),
            None => Arc::new(stages::StageSet::defaults(options.pod_start_delay)),
        };
        starts.push(pods::PodLifecycle::register(client.clone(), &factory, stages, options.stage_seed)?);
    }
    if selection.contains(Controller::Scheduler) {
        starts.push(scheduler::Scheduler::register(client.clone(), &factory)?);
    }
    if selection.contains(Controller::ServiceAccount) {
        starts.push(serviceaccounts::ServiceAccounts::register(client.clone(), &factory)?);
    }
    if selection.contains(Controller::NodeLifecycle) {
        starts.push(node_lifecycle::NodeLifecycle::register(client.clone(), &factory, options.node_lifecycle.clone())?);
    }
    let fake_nodes = (selection.contains(Controller::Nodes) && options.nodes > 0)
        .then(|| nodes::FakeNodes::register(client, &factory, options.nodes, options.node_lifecycle.grace_period));
    factory.start();
    if let Some(fake_nodes) = fake_nodes {
        let factory = factory.clone();
        running.tasks.push(tokio::spawn(async move {
            while !factory.wait_for_cache_sync(Duration::from_secs(60)).await {
                tracing::warn!(controller = "nodes", "caches not synced after 60 s; still waiting");
            }
            fake_nodes.run().await;
        }));
    }
    for workers in starts {
        running.queues.push(workers.queue.clone());
        let factory = factory.clone();
        let count = options.workers.max(1);
        running.tasks.push(tokio::spawn(async move {
            while !factory.wait_for_cache_sync(Duration::from_secs(60)).await {
                tracing::warn!(controller = workers.name, "caches not synced after 60 s; still waiting");
            }
            workers.run(count).await;
        }));
    }
    Ok(running)
}
