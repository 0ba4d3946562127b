//! A RetryWatcher over watches that die every 10 s — the `RetryWatch()` of "Kubernetes
//! List-Watch机制（也没那么详的）详解": namespaces, printing `add a new namespace <name>`,
//! `modify a namespace <name>` and `delete a namespace <name>`.
//!
//! ```sh
//! cargo run -p listwatch-client --example retry_watch -- [--kubeconfig PATH] [--watch-timeout 10]
//! kubectl create namespace demo-1     # in another terminal, as often as you like:
//! kubectl delete namespace demo-1     # each change is printed once, across the restarts
//! ```
//!
//! Every `--watch-timeout` seconds the server ends the watch and the RetryWatcher opens the
//! next one; the program prints a `watching namespaces from resourceVersion N` line each time.
//!
//! The article's `watcher` function ignores the options the RetryWatcher hands it:
//!
//! ```go
//! func watcher(opts metav1.ListOptions) (watch.Interface, error) {
//!     timeOut := int64(10)
//!     return util.KubeClient.CoreV1().Namespaces().Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: &timeOut})
//! }
//! ```
//!
//! so every restart watches from "now" without a resourceVersion: the server first replays every
//! namespace as ADDED ("the events will be replayed every time the watcher restarts", as its
//! comment says), and a change made between two watches is never seen. [`TimedOutWatches`]
//! below passes the resourceVersion on, so each watch continues exactly where the last one
//! stopped: nothing is repeated and nothing is missed. (The article also starts from
//! resourceVersion "1", which only works because its watcher ignores it; here the start is the
//! resourceVersion of a LIST.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
use futures::future::BoxFuture;
use listwatch_client::{
    Api, Error, ListParams, ListerWatcher, Object, ObjectList, RetryWatcher, RetryWatcherConfig, WatchEvent,
    WatchParams, WatchStream,
};

use common::{Connection, Namespace};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    /// `timeoutSeconds` of each watch: the server ends it after this many seconds.
    #[arg(long, default_value_t = 10)]
    watch_timeout: u64,
}

/// The article's `watcher` function: namespace watches that the server ends after `timeout`.
/// It keeps what the RetryWatcher asks for, above all the resourceVersion to continue from.
struct TimedOutWatches {
    api: Api<Namespace>,
    timeout: Duration,
}

impl ListerWatcher<Namespace> for TimedOutWatches {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<Namespace>>, Error>> {
        Box::pin(self.api.list_shared(params))
    }

    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<Namespace>, Error>> {
        println!("watching namespaces from resourceVersion {}", params.resource_version);
        Box::pin(async move {
            // The fix: start from `params` (its resourceVersion) instead of from nothing.
            let params = WatchParams { timeout: Some(self.timeout), ..params.clone() };
            self.api.watch(&params).await
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    let api: Api<Namespace> = Api::all(args.connection.client()?);

    // A RetryWatcher needs a real resourceVersion to start from: the one of a LIST.
    let list = api.list(&ListParams::default()).await?;
    println!("{} namespaces at resourceVersion {}", list.items.len(), list.metadata.resource_version);

    let watches = TimedOutWatches { api, timeout: Duration::from_secs(args.watch_timeout) };
    let mut events = RetryWatcher::new(watches, &list.metadata.resource_version, RetryWatcherConfig::default())?;
    while let Some(event) = events.next().await {
        match event {
            WatchEvent::Added(ns) => println!("add a new namespace {} (resourceVersion {})", ns.name(), rv(&ns)),
            WatchEvent::Modified(ns) => println!("modify a namespace {} (resourceVersion {})", ns.name(), rv(&ns)),
            WatchEvent::Deleted(ns) => println!("delete a namespace {} (resourceVersion {})", ns.name(), rv(&ns)),
            // Bookmarks only move the resourceVersion on; the RetryWatcher keeps them.
            WatchEvent::Bookmark(_) => {}
            // 410 Gone: the resourceVersion was compacted away. A RetryWatcher cannot recover
            // from that (an informer relists); it yields the error and ends.
            WatchEvent::Error(status) => println!("the retry watcher stopped: {status}"),
        }
    }
    Ok(())
}

fn rv(namespace: &Namespace) -> &str {
    namespace.resource_version().unwrap_or("")
}
