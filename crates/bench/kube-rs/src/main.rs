//! Reflector throughput and memory, kube-rs's side: the same program as listwatch-client's
//! `crates/bench/examples/reflector_bench` (`client` mode), on `kube::runtime`.
//!
//! ```sh
//! kube-rs-reflector-bench --kubeconfig KC --namespace NS --events M [--ready-file F] [--go-file G]
//! ```
//!
//! * Objects: the same `BenchPod` struct (the shared file is included below), with
//!   `k8s_openapi`'s `ObjectMeta` as its metadata, because `kube::Resource::meta` must return
//!   that type; `kube::Resource` is implemented for it by hand (no `kube::core::Object`, whose
//!   spec/status split would decode the same fields through one more layer of types).
//! * The reflector as kube-rs documents it:
//!   `watcher(api, watcher::Config::default()).default_backoff().reflect(writer)`, with the
//!   watcher's defaults (kube 5.0.0): initial strategy `ListWatch`, `list_semantic: MostRecent`
//!   (every list is a consistent read: no `resourceVersion`), `page_size: Some(500)`,
//!   bookmarks on, watch `timeoutSeconds=290` with an idle limit of 295 s.
//! * Measured as the other side: `shared.rs`'s phases and JSON line.

#[path = "../../examples/reflector_bench/shared.rs"]
mod shared;

use std::borrow::Cow;
use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Config};
use shared::{Args, BenchPod, Phases, ROUND_ANNOTATION};

type Pod = BenchPod<ObjectMeta>;

impl kube::Resource for Pod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Pod".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "pods".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse(std::env::args().skip(1))?;
    let mut phases = Phases::start("kube-rs 5.0.0");
    let kubeconfig = Kubeconfig::read_from(&args.kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    let api: Api<Pod> = Api::namespaced(client, &args.namespace);
    let (reader, writer) = reflector::store::<Pod>();
    let stream = watcher(api, watcher::Config::default()).default_backoff().reflect(writer);
    let mut stream = std::pin::pin!(stream);

    loop {
        match stream.next().await {
            Some(Ok(watcher::Event::InitDone)) => break,
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("kube-rs-reflector-bench: {e}"),
            None => return Err("the watcher stream ended".into()),
        }
    }
    phases.synced(reader.len());
    if let Some(path) = &args.ready_file {
        std::fs::write(path, b"")?;
    }
    if let Some(path) = &args.go_file {
        shared::wait_for_file(path).await;
    }

    phases.watch_start();
    let mut events = 0;
    while events < args.events {
        match stream.next().await {
            Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_))) => {
                phases.event();
                events += 1;
            }
            Some(Ok(watcher::Event::Init)) => eprintln!("kube-rs-reflector-bench: the watcher relisted"),
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("kube-rs-reflector-bench: {e}"),
            None => return Err("the watcher stream ended".into()),
        }
    }

    let mut rounds: BTreeMap<String, usize> = BTreeMap::new();
    let state = reader.state();
    for pod in &state {
        let round = pod.metadata.annotations.as_ref().and_then(|a| a.get(ROUND_ANNOTATION));
        *rounds.entry(round.cloned().unwrap_or_default()).or_default() += 1;
    }
    let store_len = state.len();
    drop(state);
    println!("{}", phases.finish(events, store_len, rounds));
    Ok(())
}
