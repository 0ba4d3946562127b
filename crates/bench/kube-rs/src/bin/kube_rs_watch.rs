//! kube-rs (`kube` 5) as its users keep a cache: `reflector(writer, watcher(api,
//! Config::default()).default_backoff())` over the ConfigMaps of one namespace, run until
//! killed. The zoo (`tests/e2e/zoo.rs`) runs it under every shipped scenario: the client audit
//! must find nothing wrong with it.
//!
//!     kube_rs_watch NAMESPACE        (the kubeconfig from $KUBECONFIG)

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let namespace = std::env::args().nth(1).unwrap_or_else(|| "default".into());
    let client = Client::try_default().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
    let (_reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, watcher::Config::default()).default_backoff());
    // Errors are retried by the backoff; the stream itself never ends.
    stream.for_each(|_| async {}).await;
    Ok(())
}
