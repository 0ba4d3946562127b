//! Reflector throughput and memory, listwatch-client's side (kube-rs's is
//! `crates/bench/kube-rs`; `scripts/bench-reflector.sh` runs both against one server).
//!
//! ```sh
//! # one reflector: list + watch pods of NS into a Store of fully decoded typed pods
//! reflector_bench client --kubeconfig KC --namespace NS --events M [--ready-file F] [--go-file G]
//! # the update driver: M unconditional PUTs of the pods of NS (round-robin), C at a time
//! reflector_bench update --server URL --namespace NS --updates M [--concurrency C] [--first-round R]
//! ```
//!
//! `client` syncs (the reflector's LIST into the store), creates `--ready-file`, waits for
//! `--go-file` if given, then takes in `--events` watch events, applying each to the store,
//! and prints one JSON line (see `shared.rs`): sync time and CPU, events per second of wall
//! time and per CPU second (user + system of this process during the watch phase), RSS after
//! the sync and peak RSS (`VmHWM`) of the whole run.
//!
//! The reflector and store are used as a program without event handlers would use them (the
//! equivalent of kube-rs's `reflector(writer, watcher(..))`): [`Reflector`] with its default
//! (client-go) settings, events applied to a [`Store`] without indexes.

#[path = "pod.rs"]
mod pod;
#[path = "shared.rs"]
mod shared;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use listwatch_client::http::Method;
use listwatch_client::reflector::ErrorHandler;
use listwatch_client::{Api, Client, Config, Object, Reflector, ReflectorConfig, ReflectorEvent, Store};
use shared::{Args, Phases, ROUND_ANNOTATION};

use pod::Pod;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("client") => client(Args::parse(args)?).await,
        Some("update") => update(args).await,
        _ => Err("usage: reflector_bench client --kubeconfig KC --namespace NS --events M [--ready-file F] \
                  [--go-file G] | update --server URL --namespace NS --updates M [--concurrency C]"
            .into()),
    }
}

async fn client(args: Args) -> Result<(), BoxError> {
    let mut phases = Phases::start("listwatch-client");
    let client = Client::new(Config::from_kubeconfig(&args.kubeconfig)?)?;
    let api: Api<Pod> = Api::namespaced(client, &args.namespace);
    // Errors go to stderr, as the kube-rs program prints its watcher's `Err` items.
    let error_handler: ErrorHandler =
        Arc::new(|e| eprintln!("reflector_bench: {:?} error: {}; {:?}", e.phase, e.error, e.recovery));
    let config =
        ReflectorConfig { name: "pods".into(), error_handler: Some(error_handler), ..ReflectorConfig::default() };
    let mut reflector = Reflector::new(api, config);
    let store: Store<Pod> = Store::new();

    while !store.has_synced() {
        apply(&store, reflector.next_event().await);
    }
    phases.synced(store.len());
    if let Some(path) = &args.ready_file {
        std::fs::write(path, b"")?;
    }
    if let Some(path) = &args.go_file {
        shared::wait_for_file(path).await;
    }

    phases.watch_start();
    let mut events = 0;
    while events < args.events {
        let event = reflector.next_event().await;
        if matches!(event, ReflectorEvent::Added(_) | ReflectorEvent::Modified(_) | ReflectorEvent::Deleted(_)) {
            phases.event();
            events += 1;
        } else if matches!(event, ReflectorEvent::Replace { .. }) {
            eprintln!("reflector_bench: the reflector relisted during the watch phase");
        }
        apply(&store, event);
    }

    let mut rounds = BTreeMap::new();
    store.for_each(|_, pod| *rounds.entry(pod.annotation(ROUND_ANNOTATION).unwrap_or("").to_owned()).or_default() += 1);
    println!("{}", phases.finish(events, store.len(), rounds));
    Ok(())
}

/// One reflector event into the store, as an informer applies it (without handlers).
fn apply(store: &Store<Pod>, event: ReflectorEvent<Pod>) {
    match event {
        ReflectorEvent::Replace { objects, resource_version, .. } => {
            store.replace(objects, &resource_version);
        }
        ReflectorEvent::Added(pod) | ReflectorEvent::Modified(pod) => {
            store.insert_at(pod.clone(), pod.resource_version());
        }
        ReflectorEvent::Deleted(pod) => {
            store.remove_at(&pod.key(), pod.resource_version());
        }
        ReflectorEvent::Bookmark { resource_version } => store.set_resource_version(&resource_version),
    }
}

/// The update driver: lists the pods of the namespace once, then PUTs them round-robin
/// (`--updates` in all, `--concurrency` in flight), each with [`ROUND_ANNOTATION`] set to the
/// round (`--first-round` for the first pass over the pods, then one more per pass: every
/// update changes the pod, so none is a no-op the server would skip), without a
/// resourceVersion (unconditional updates). Prints one JSON line.
async fn update(mut args: impl Iterator<Item = String>) -> Result<(), BoxError> {
    let (mut server, mut namespace, mut updates, mut concurrency) = (String::new(), "default".to_owned(), 0u64, 8usize);
    let mut first_round = 1u64;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} wants a value"))?;
        match flag.as_str() {
            "--server" => server = value,
            "--namespace" => namespace = value,
            "--updates" => updates = value.parse()?,
            "--concurrency" => concurrency = value.parse()?,
            "--first-round" => first_round = value.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let client = Client::new(Config::new(&server))?;
    let collection = format!("/api/v1/namespaces/{namespace}/pods");
    let (_, body) = client.request(Method::GET, &collection, "application/json", None).await?;
    let list: serde_json::Value = serde_json::from_slice(&body)?;
    // Each pod's body with a placeholder round, and where the placeholder sits.
    const PLACEHOLDER: &str = "RRRRRR";
    let mut templates: Vec<(String, Vec<u8>, usize)> = Vec::new();
    for mut pod in list["items"].as_array().cloned().unwrap_or_default() {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let metadata = pod["metadata"].as_object_mut().ok_or("a pod without metadata")?;
        metadata.remove("resourceVersion");
        let annotations = metadata.entry("annotations").or_insert_with(|| serde_json::json!({}));
        annotations[ROUND_ANNOTATION] = PLACEHOLDER.into();
        let body = serde_json::to_vec(&pod)?;
        let at = body.windows(PLACEHOLDER.len()).position(|w| w == PLACEHOLDER.as_bytes()).ok_or("no placeholder")?;
        templates.push((format!("{collection}/{name}"), body, at));
    }
    if templates.is_empty() {
        return Err(format!("no pods in namespace {namespace}").into());
    }
    templates.sort();
    let templates = Arc::new(templates);
    let (next, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, templates, next, failed) = (client.clone(), templates.clone(), next.clone(), failed.clone());
        workers.push(tokio::spawn(async move {
            let mut first_error = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= updates {
                    return first_error;
                }
                let (path, template, at) = &templates[(i % templates.len() as u64) as usize];
                let round = first_round + i / templates.len() as u64;
                let mut body = template.clone();
                body[*at..*at + PLACEHOLDER.len()].copy_from_slice(format!("{round:06}").as_bytes());
                let sent = client
                    .request(Method::PUT, path, "application/json", Some(("application/json", Bytes::from(body))))
                    .await;
                if let Err(e) = sent {
                    failed.fetch_add(1, Ordering::Relaxed);
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }));
    }
    let mut first_error = None;
    for worker in workers {
        first_error = first_error.or(worker.await?);
    }
    let seconds = started.elapsed().as_secs_f64();
    let failed = failed.load(Ordering::Relaxed);
    println!(
        "{}",
        serde_json::json!({
            "updates": updates,
            "failed": failed,
            "pods": templates.len(),
            "seconds": seconds,
            "updates_per_second": (updates as f64 / seconds).round(),
            "first_error": first_error,
        })
    );
    if failed > 0 {
        return Err(format!("{failed} updates failed").into());
    }
    Ok(())
}
