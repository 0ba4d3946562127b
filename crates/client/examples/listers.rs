//! Informers for deployments and services, read through a lister — the second program of
//! "Client-go 实现一个 Watch 客户端": handlers print `add a deployment: <name>`,
//! `update deployment: <old> <new>`, `add a service: <name>` …; once the caches are in sync the
//! deployments of `default` are printed from the lister as `1 -> <name>`, without asking the
//! API server.
//!
//! ```sh
//! cargo run -p listwatch-client --example listers -- [--kubeconfig PATH] [--namespace default]
//! kubectl create deployment nginx-deploy --image=nginx    # in another terminal: printed by the handler
//! ```
//!
//! Restart it after creating a deployment: the new one is in the lister's list.

mod common;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use listwatch_client::{DeletedObject, HandlerFns, LabelSelector, Object, SharedInformerFactory, UpdateCause};

use common::{Connection, Deployment, Service};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    /// Whose deployments the lister prints.
    #[arg(long, default_value = "default")]
    namespace: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    // `informers.NewSharedInformerFactory(clientset, time.Hour*12)`: handlers without a resync
    // period of their own get every cached object again as an update every 12 hours.
    let factory = SharedInformerFactory::builder(args.connection.client()?)
        .default_resync(Duration::from_secs(12 * 60 * 60))
        .build();

    let deployments = factory.informer::<Deployment>();
    // The lister reads the informer's cache (client-go: "from the Indexer").
    let deployment_lister = deployments.lister();
    deployments.add_event_handler(
        HandlerFns::new().on_add(on_add_deployment).on_update(on_update_deployment).on_delete(on_delete_deployment),
    )?;

    let services = factory.informer::<Service>();
    services.add_event_handler(
        HandlerFns::new().on_add(on_add_service).on_update(on_update_service).on_delete(on_delete_service),
    )?;

    // Start list & watch, and wait until every started informer has its first full list.
    factory.start();
    if !factory.wait_for_cache_sync(Duration::from_secs(60)).await {
        anyhow::bail!("the caches did not sync within 60 s");
    }

    let mut in_namespace = deployment_lister.namespace(&args.namespace).list(&LabelSelector::everything());
    in_namespace.sort_by(|a, b| a.name().cmp(b.name())); // The cache has no order.
    println!("{} deployments in {} (from the cache):", in_namespace.len(), args.namespace);
    for (idx, deploy) in in_namespace.iter().enumerate() {
        println!("{} -> {}", idx + 1, deploy.name());
    }

    // `<-stopper`: run until Ctrl-C.
    tokio::signal::ctrl_c().await?;
    factory.shutdown();
    Ok(())
}

fn on_add_deployment(deploy: &Arc<Deployment>, _in_initial_list: bool) {
    println!("add a deployment: {}", deploy.name());
}

fn on_update_deployment(old: &Arc<Deployment>, new: &Arc<Deployment>, _cause: UpdateCause) {
    println!("update deployment: {} {}", old.name(), new.name());
}

fn on_delete_deployment(deploy: &DeletedObject<Deployment>) {
    println!("delete a deployment: {}", deploy.object().name());
}

fn on_add_service(service: &Arc<Service>, _in_initial_list: bool) {
    println!("add a service: {}", service.name());
}

fn on_update_service(old: &Arc<Service>, new: &Arc<Service>, _cause: UpdateCause) {
    println!("update service: {} {}", old.name(), new.name());
}

fn on_delete_service(service: &DeletedObject<Service>) {
    println!("delete a service: {}", service.object().name());
}
