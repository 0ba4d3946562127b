//! A raw WATCH with a timeout — the first program of "Client-go 实现一个 Watch 客户端": watch the
//! pods of `default` with `timeoutSeconds=60` and print `new Pod :  <name>` for each one added.
//!
//! ```sh
//! cargo run -p listwatch-client --example watch_pods -- [--kubeconfig PATH] [--namespace default] [--timeout 60]
//! kubectl run nginx$RANDOM --image=nginx      # in another terminal: the new pod is printed
//! ```
//!
//! The server ends the watch after `--timeout` seconds and the program exits: a raw watch does
//! not reconnect, and a change made while no watch is open is never seen. That is what the
//! article's "why not use Watch directly" list is about; `retry_watch` and the informer
//! examples show the fixes.

mod common;

use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
use listwatch_client::{Api, Object, WatchEvent, WatchParams};

use common::{Connection, Pod};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    #[arg(long, default_value = "default")]
    namespace: String,
    /// `timeoutSeconds`: the server ends the watch after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    let pods: Api<Pod> = Api::namespaced(args.connection.client()?, &args.namespace);

    // No resourceVersion: the watch starts "now", with a synthetic ADDED event for every pod
    // that already exists, then the changes.
    let params = WatchParams::default().timeout(Duration::from_secs(args.timeout));
    let mut events = pods.watch(&params).await?;
    println!("watching pods in {} for {} s", args.namespace, args.timeout);
    while let Some(event) = events.next().await {
        match event? {
            WatchEvent::Added(pod) => process_pod(pod.name()),
            WatchEvent::Modified(_) | WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => {}
            // In-stream errors (410 Gone after a compaction, for one) also end the watch.
            WatchEvent::Error(status) => println!("watch error: {status}"),
        }
    }
    println!("the watch ended (the server closes it after timeoutSeconds); a raw watch does not reconnect");
    Ok(())
}

fn process_pod(name: &str) {
    println!("new Pod :  {name}");
}
