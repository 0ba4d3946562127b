//! Pod and deployment informers with event handlers — "client-go gin的简单整合四-list-watch初探":
//! one `SharedInformerFactory`, a `PodHandler` and a `DepHandler` whose `OnAdd` / `OnUpdate`
//! print the object's name (and the handlers of "Kubernetes List-Watch机制（也没那么详的）详解",
//! which print `Pod <ns>/<name> is added` / `is deleted`).
//!
//! ```sh
//! cargo run -p listwatch-client --example informers -- [--kubeconfig PATH] [--namespace NS]
//! kubectl create deployment nginx --image=nginx     # in another terminal
//! kubectl scale deployment/nginx --replicas=3
//! ```
//!
//! Every existing pod and deployment is printed first as an add (the informer's initial list),
//! then each change as it happens. On a real cluster, scaling makes the deployment's and its
//! pods' events appear, as they do against `listwatch serve` with its controllers (the
//! default).

mod common;

use std::sync::Arc;

use clap::Parser;
use listwatch_client::{DeletedObject, EventHandler, Object, SharedInformerFactory, UpdateCause};

use common::{Connection, Deployment, Pod};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    /// Only this namespace (default: all of them).
    #[arg(long)]
    namespace: Option<String>,
}

/// The article's `PodHandler`: `EventHandler` is client-go's `ResourceEventHandler`.
struct PodHandler;

impl EventHandler<Pod> for PodHandler {
    fn on_add(&self, pod: &Arc<Pod>, _in_initial_list: bool) {
        println!("Pod {} is added", pod.key());
    }

    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>, _cause: UpdateCause) {
        println!("Pod {} is updated ({} -> {})", new.key(), old.phase(), new.phase());
    }

    fn on_delete(&self, pod: &DeletedObject<Pod>) {
        // A delete the watch missed (seen by a relist) has only the last state the cache knew.
        println!("Pod {} is deleted", pod.key());
    }
}

/// The article's `DepHandler`.
struct DepHandler;

impl EventHandler<Deployment> for DepHandler {
    fn on_add(&self, deployment: &Arc<Deployment>, _in_initial_list: bool) {
        println!("Deployment {} is added", deployment.key());
    }

    fn on_update(&self, _old: &Arc<Deployment>, new: &Arc<Deployment>, _cause: UpdateCause) {
        let status = &new.status;
        println!(
            "Deployment {} is updated: {} replicas wanted, {} ready",
            new.key(),
            new.replicas(),
            status.ready_replicas
        );
    }

    fn on_delete(&self, deployment: &DeletedObject<Deployment>) {
        println!("Deployment {} is deleted", deployment.key());
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    let mut factory = SharedInformerFactory::builder(args.connection.client()?);
    if let Some(namespace) = &args.namespace {
        factory = factory.namespace(namespace);
    }
    // Like `informers.NewSharedInformerFactory(client, 0)`: no resync.
    let factory = factory.build();

    factory.informer::<Pod>().add_event_handler(PodHandler)?;
    factory.informer::<Deployment>().add_event_handler(DepHandler)?;
    factory.start();

    // The Go program blocks in `select {}`; this one until Ctrl-C.
    tokio::signal::ctrl_c().await?;
    factory.shutdown();
    Ok(())
}
