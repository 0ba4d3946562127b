//! A minimal deployment controller: it creates and deletes pods until each deployment has
//! `spec.replicas` of them, and reports the count in the deployment's status. With it,
//! "client-go gin的简单整合四-list-watch初探"'s experiment works against a listwatch serving
//! without its own controllers (`listwatch serve --controllers=none`; with them, the real
//! Deployment controller in crates/controllers does this job and this one would fight it). It
//! stays as an example of writing a controller:
//!
//! ```sh
//! cargo run -p listwatch-client --example deployment_controller -- [--kubeconfig PATH]
//! kubectl create deployment nginx --image=nginx     # in another terminal
//! kubectl scale deployment/nginx --replicas=3       # two more pods: their events are printed
//! kubectl get deployment nginx                      # READY 3/3, UP-TO-DATE 3, AVAILABLE 3
//! kubectl get pods                                  # nginx-xxxxx  1/1  Running
//! kubectl scale deployment/nginx --replicas=1       # two pods go
//! kubectl delete deployment nginx                   # the server's garbage collector deletes the pods
//! ```
//!
//! The pods are what kube's ReplicaSet controller would make (without the ReplicaSet): named
//! `<deployment>-<random>` (`generateName`), labelled and specified from the pod template, with
//! an owner reference to the deployment. It prints each pod event as the article's `PodHandler`
//! does, plus what it creates and deletes.
//!
//! Without `--controllers` there is no kubelet either, so a stand-in (`start_pods`) marks the
//! pods this controller owns Running and Ready through their `/status`, which makes READY read
//! 1/1. Run this only against such a listwatch, or a cluster without kube-controller-manager
//! and kubelets: there, the
//! real deployment controller would fight this one over the pods.
//!
//! Left out on purpose: rolling updates (a changed template does not replace existing pods, and
//! every pod counts as up to date), `minReadySeconds`, pause, conditions.

mod common;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser;
use listwatch_client::{Api, Client, HandlerFns, Lister, Object, Patch, SharedInformerFactory, Store, object_key};
use listwatch_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use serde_json::{Value, json};

use common::{Connection, Deployment, DeploymentStatus, Pod};

/// Retries of a failing deployment before it waits for its next change.
const MAX_RETRIES: usize = 5;
/// How long a sync waits for the cache to show the pods it just created or deleted.
const CACHE_CATCH_UP: Duration = Duration::from_secs(30);

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    /// Deployments synced at the same time (never the same one twice).
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

struct DeploymentController {
    client: Client,
    deployments: Lister<Deployment>,
    pods: Lister<Pod>,
    pod_cache: Store<Pod>,
    queue: Arc<RateLimitingQueue<String>>,
}

impl DeploymentController {
    fn new(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Arc<Self>> {
        let deployments = factory.informer::<Deployment>();
        let pods = factory.informer::<Pod>();
        let queue = Arc::new(RateLimitingQueue::with_config(
            default_controller_rate_limiter(),
            QueueConfig::named("deployment-controller"),
        ));

        // A deployment that changed in any way (spec, status, deletion) is synced again.
        let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
        deployments.add_event_handler(
            HandlerFns::<Deployment>::new()
                .on_add(move |deployment, _| on_add.add(deployment.key()))
                .on_update(move |_old, new, _| on_update.add(new.key()))
                .on_delete(move |deployment| on_delete.add(deployment.key())),
        )?;

        // A pod that changed syncs the deployment that owns it; and, like the article's
        // `PodHandler`, every pod event is printed.
        let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
        pods.add_event_handler(
            HandlerFns::<Pod>::new()
                .on_add(move |pod, _| {
                    println!("pod added: {} ({})", pod.key(), pod.phase());
                    if let Some(owner) = owning_deployment(pod) {
                        on_add.add(owner);
                    }
                })
                .on_update(move |old, new, _| {
                    println!("pod updated: {} ({} -> {})", new.key(), old.phase(), new.phase());
                    if let Some(owner) = owning_deployment(new) {
                        on_update.add(owner);
                    }
                })
                .on_delete(move |pod| {
                    println!("pod deleted: {}", pod.key());
                    if let Some(owner) = owning_deployment(pod.object()) {
                        on_delete.add(owner);
                    }
                }),
        )?;

        Ok(Arc::new(DeploymentController {
            client,
            deployments: deployments.lister(),
            pods: pods.lister(),
            pod_cache: pods.store(),
            queue,
        }))
    }

    async fn run_worker(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            match self.sync(&key).await {
                Ok(()) => self.queue.forget(&key),
                Err(error) if self.queue.num_requeues(&key) < MAX_RETRIES => {
                    println!("sync of deployment {key} failed, retrying: {error:#}");
                    self.queue.add_rate_limited(key.clone());
                }
                Err(error) => {
                    println!("giving up on deployment {key} until it changes: {error:#}");
                    self.queue.forget(&key);
                }
            }
            self.queue.done(&key);
        }
    }

    /// Makes one deployment's pods and status match its spec.
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let Some(deployment) = self.deployments.get(key) else {
            // Deleted. Its pods name it as their owner, so the garbage collector deletes them.
            return Ok(());
        };
        if deployment.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let pods = self.owned_pods(&deployment)?;
        let wanted = usize::try_from(deployment.replicas()).unwrap_or(0);
        if pods.len() != wanted {
            println!("deployment {key}: {} pods, {wanted} wanted", pods.len());
        }
        if pods.len() < wanted {
            self.create_pods(&deployment, wanted - pods.len()).await?;
        } else if pods.len() > wanted {
            self.delete_pods(pods, wanted).await?;
        }
        let pods = self.owned_pods(&deployment)?;
        self.start_pods(&pods).await?;
        self.update_status(&deployment, &pods).await
    }

    /// The pods of `deployment`, from the cache: those its selector matches that it controls,
    /// and that are not being deleted.
    fn owned_pods(&self, deployment: &Deployment) -> anyhow::Result<Vec<Arc<Pod>>> {
        let selector = deployment.spec.selector.to_selector()?;
        let template_labels = deployment.spec.template.metadata.labels.clone().unwrap_or_default();
        // kube-apiserver refuses such deployments; without this check the pods created would
        // never be found and the controller would create pods forever.
        if selector.is_empty() || !selector.matches_labels(|key| template_labels.get(key).map(String::as_str)) {
            bail!("spec.selector does not match the template's labels");
        }
        let namespace = deployment.namespace().unwrap_or_default();
        let uid = deployment.uid().context("the deployment has no uid")?;
        Ok(self
            .pods
            .namespace(namespace)
            .list(&selector)
            .into_iter()
            .filter(|pod| controller_uid(pod) == Some(uid) && pod.metadata.deletion_timestamp.is_none())
            .collect())
    }

    async fn create_pods(&self, deployment: &Deployment, count: usize) -> anyhow::Result<()> {
        let namespace = deployment.namespace().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let mut created = Vec::with_capacity(count);
        for _ in 0..count {
            let pod = api.create(&new_pod(deployment)).await?;
            println!("created pod {}", pod.key());
            created.push(pod.key());
        }
        // Our own writes reach the cache a moment later, through the watch. Until they do, the
        // next sync of this deployment would count too few pods and create more. Waiting here
        // is safe because no other worker syncs this deployment meanwhile (client-go's
        // ReplicaSet controller keeps "expectations" instead, so its workers need not wait).
        let seen = self.pod_cache.wait_until(CACHE_CATCH_UP, |cache| created.iter().all(|key| cache.contains(key)));
        if !seen.await {
            bail!("the cache did not show the new pods within {CACHE_CATCH_UP:?}");
        }
        Ok(())
    }

    /// Deletes the newest pods until `keep` are left.
    async fn delete_pods(&self, mut pods: Vec<Arc<Pod>>, keep: usize) -> anyhow::Result<()> {
        pods.sort_by(|a, b| {
            (&b.metadata.creation_timestamp, b.name()).cmp(&(&a.metadata.creation_timestamp, a.name()))
        });
        let mut deleted = Vec::new();
        for pod in &pods[..pods.len() - keep] {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), pod.namespace().unwrap_or_default());
            match api.delete(pod.name()).await {
                Ok(()) => println!("deleted pod {}", pod.key()),
                Err(e) if e.code() == Some(404) => {} // Someone else was quicker.
                Err(e) => return Err(e.into()),
            }
            deleted.push(pod.key());
        }
        let gone = self.pod_cache.wait_until(CACHE_CATCH_UP, |cache| !deleted.iter().any(|key| cache.contains(key)));
        if !gone.await {
            bail!("the cache still showed deleted pods after {CACHE_CATCH_UP:?}");
        }
        Ok(())
    }

    /// The stand-in kubelet: a pod that is not running yet is reported Running and Ready, with
    /// one ready container status per container (what `kubectl get pods` counts for READY).
    async fn start_pods(&self, pods: &[Arc<Pod>]) -> anyhow::Result<()> {
        for pod in pods.iter().filter(|pod| pod.phase() != "Running") {
            let containers: Vec<Value> = pod
                .spec
                .containers
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name, "image": c.image, "imageID": "", "ready": true, "started": true,
                        "restartCount": 0, "state": {"running": {}},
                    })
                })
                .collect();
            let conditions: Vec<Value> = ["PodScheduled", "Initialized", "ContainersReady", "Ready"]
                .iter()
                .map(|condition| json!({"type": condition, "status": "True"}))
                .collect();
            let status =
                json!({"status": {"phase": "Running", "conditions": conditions, "containerStatuses": containers}});
            let api: Api<Pod> = Api::namespaced(self.client.clone(), pod.namespace().unwrap_or_default());
            api.patch_status(pod.name(), &Patch::Merge(status))
                .await
                .with_context(|| format!("starting {}", pod.key()))?;
        }
        Ok(())
    }

    /// Writes the counts to the deployment's `/status` when they changed.
    async fn update_status(&self, deployment: &Deployment, pods: &[Arc<Pod>]) -> anyhow::Result<()> {
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let ready = count(pods.iter().filter(|pod| pod.is_ready()).count());
        let status = DeploymentStatus {
            observed_generation: deployment.metadata.generation,
            replicas: count(pods.len()),
            // No rollouts here: every pod counts as made from the current template.
            updated_replicas: count(pods.len()),
            ready_replicas: ready,
            // With minReadySeconds 0, a ready pod is available.
            available_replicas: ready,
        };
        if status == deployment.status {
            return Ok(());
        }
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), deployment.namespace().unwrap_or_default());
        api.patch_status(deployment.name(), &Patch::Merge(json!({ "status": status }))).await?;
        println!(
            "deployment {} status: {} replicas, {} updated, {} ready, {} available",
            deployment.key(),
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas
        );
        Ok(())
    }
}

/// A new pod from `deployment`'s template, owned by it.
fn new_pod(deployment: &Deployment) -> Value {
    let template = &deployment.spec.template;
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": format!("{}-", deployment.name()),
            "labels": template.metadata.labels,
            "annotations": template.metadata.annotations,
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": deployment.name(),
                "uid": deployment.uid(),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": template.spec,
    })
}

fn controller_uid(pod: &Pod) -> Option<&str> {
    Some(&pod.metadata.controller_of()?.uid)
}

/// The queue key of the deployment controlling `pod`, if one does.
fn owning_deployment(pod: &Pod) -> Option<String> {
    let owner = pod.metadata.controller_of()?;
    if owner.api_version != "apps/v1" || owner.kind != "Deployment" {
        return None;
    }
    Some(object_key(pod.namespace(), &owner.name))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    let client = args.connection.client()?;
    let factory = SharedInformerFactory::new(client.clone());
    let controller = DeploymentController::new(client, &factory)?;

    factory.start();
    if !factory.wait_for_cache_sync(Duration::from_secs(60)).await {
        bail!("the caches did not sync within 60 s");
    }
    let workers: Vec<_> = (0..args.workers.max(1)).map(|_| tokio::spawn(controller.clone().run_worker())).collect();
    println!("deployment controller started with {} workers", workers.len());

    tokio::signal::ctrl_c().await?;
    controller.queue.shut_down_with_drain().await;
    for worker in workers {
        worker.await?;
    }
    factory.shutdown();
    Ok(())
}
