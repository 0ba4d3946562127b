//! LIST: every namespace, then every pod — the `List()` of "Kubernetes List-Watch机制（也没那么详的）详解"
//! (`clientset.CoreV1().Namespaces().List(...)`, printing `get namespace <name>`).
//!
//! ```sh
//! cargo run -p listwatch-client --example list_namespaces -- [--kubeconfig PATH]
//! ```
//!
//! It prints one line per namespace and per pod and exits. Against a fresh listwatch
//! (`scripts/serve.sh`, then `--kubeconfig ~/.kube/listwatch-config`) that is `default`,
//! `kube-system`, `kube-public` and `kube-node-lease`; `kubectl run nginx --image=nginx` adds a
//! pod to the list.

mod common;

use clap::Parser;
use listwatch_client::{Api, ListParams, Object};

use common::{Connection, Namespace, Pod};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let client = Args::parse().connection.client()?;

    // One request each, answered by the server from its current state (a consistent read).
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let list = namespaces.list(&ListParams::default()).await?;
    for namespace in &list.items {
        println!("get namespace {}", namespace.name());
    }

    // Pods across all namespaces; `Api::namespaced(client, "default")` would list one.
    let pods: Api<Pod> = Api::all(client);
    let list = pods.list(&ListParams::default()).await?;
    for pod in &list.items {
        println!("get pod {} ({})", pod.key(), pod.phase());
    }
    // The list's resourceVersion is where a watch would continue from (see retry_watch).
    println!("{} pods at resourceVersion {}", list.items.len(), list.metadata.resource_version);
    Ok(())
}
