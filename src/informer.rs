//! `listwatch informer <resource> [-n NS] [--kubeconfig PATH]`: runs a shared informer from the
//! client crate against any server and shows what it does: the cache filling from the initial
//! list, the moment it is synced, then every event as it comes (relists and tombstones marked).
//!
//! The resource is resolved as kubectl resolves it: by plural, singular, short name or kind,
//! through the server's discovery documents.
//!
//! The kubeconfig is found as kubectl finds it (`--kubeconfig`, then the files `KUBECONFIG`
//! lists, merged, then `~/.kube/config`), falling back to the one `listwatch serve` writes
//! (`~/.kube/listwatch-config`) so a first run needs no flag, then to the in-cluster service
//! account.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use listwatch_client::{
    ApiResource, Client, Config, DeletedObject, DynamicObject, HandlerFns, Object, SharedInformerFactory, UpdateCause,
};
use serde_json::Value;

#[derive(Args, Debug)]
pub struct InformerArgs {
    /// What to inform on: a plural, singular, short name or kind (`pods`, `po`, `Deployment`).
    resource: String,
    /// Only this namespace (default: all namespaces).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// The kubeconfig to use [default: KUBECONFIG's files, ~/.kube/config, else
    /// ~/.kube/listwatch-config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Stop after this long (default: run until Ctrl-C).
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
}

/// Finds `name` in the server's discovery documents.
async fn resolve(client: &Client, name: &str) -> anyhow::Result<ApiResource> {
    let wanted = name.to_ascii_lowercase();
    let mut group_versions = vec![("".to_string(), "v1".to_string(), "/api/v1".to_string())];
    let (_, groups) = client.request(http::Method::GET, "/apis", "application/json", None).await?;
    let groups: Value = serde_json::from_slice(&groups)?;
    for group in groups["groups"].as_array().into_iter().flatten() {
        if let (Some(group_name), Some(version)) =
            (group["name"].as_str(), group["preferredVersion"]["version"].as_str())
        {
            group_versions.push((group_name.to_string(), version.to_string(), format!("/apis/{group_name}/{version}")));
        }
    }
    for (group, version, path) in group_versions {
        let (_, list) = client.request(http::Method::GET, &path, "application/json", None).await?;
        let list: Value = serde_json::from_slice(&list)?;
        for r in list["resources"].as_array().into_iter().flatten() {
            let plural = r["name"].as_str().unwrap_or("");
            if plural.contains('/') {
                continue;
            }
            let kind = r["kind"].as_str().unwrap_or("");
            let matches = plural == wanted
                || r["singularName"].as_str() == Some(wanted.as_str())
                || kind.to_ascii_lowercase() == wanted
                || r["shortNames"].as_array().is_some_and(|s| s.iter().any(|n| n.as_str() == Some(wanted.as_str())));
            if matches {
                let namespaced = r["namespaced"].as_bool().unwrap_or(true);
                return Ok(ApiResource::new(&group, &version, kind, plural, namespaced));
            }
        }
    }
    bail!("the server has no resource type \"{name}\"")
}

fn elapsed(start: Instant) -> String {
    format!("{:>8.3}s", start.elapsed().as_secs_f64())
}

/// The kubeconfig files to read, in kubectl's order of precedence, then `serve`'s; empty when
/// none exists (in-cluster, then).
fn kubeconfig_files(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        let listed: Vec<PathBuf> = std::env::split_paths(&list).filter(|p| p.is_file()).collect();
        if !listed.is_empty() {
            return listed;
        }
    }
    let home = crate::kubeconfig::home();
    [home.join(".kube").join("config"), crate::kubeconfig::default_path()]
        .into_iter()
        .find(|p| p.is_file())
        .into_iter()
        .collect()
}

fn load_config(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let files = kubeconfig_files(explicit);
    if files.is_empty() {
        return Config::in_cluster().context(
            "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or start `listwatch serve` (it writes ~/.kube/listwatch-config)",
        );
    }
    let shown: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    eprintln!("using kubeconfig {}", shown.join(":"));
    Config::from_kubeconfig_files(&files, None).with_context(|| format!("loading the kubeconfig {}", shown.join(":")))
}

pub async fn run(args: InformerArgs) -> anyhow::Result<()> {
    let config = load_config(args.kubeconfig.as_deref())?;
    let client = Client::new(config)?;
    let resource = resolve(&client, &args.resource).await?;
    let start = Instant::now();
    let scope = args.namespace.as_deref().map_or("all namespaces".to_string(), |ns| format!("namespace {ns}"));
    println!("{} informer for {} ({}), {scope}", elapsed(start), resource.plural, resource.kind);

    let mut factory = SharedInformerFactory::builder(client);
    if let Some(ns) = &args.namespace {
        factory = factory.namespace(ns);
    }
    let factory = factory.build();
    let informer = factory.dynamic(&resource);
    let initial = Arc::new(AtomicUsize::new(0));
    let counted = initial.clone();
    let handler = HandlerFns::<DynamicObject>::new()
        .on_add(move |o: &Arc<DynamicObject>, in_initial_list| {
            if in_initial_list {
                let n = counted.fetch_add(1, Ordering::Relaxed) + 1;
                if n <= 5 || n.is_power_of_two() {
                    println!("{} cache filling: {n} objects (latest {})", elapsed(start), o.key());
                }
            } else {
                println!("{} ADDED    {} rv={}", elapsed(start), o.key(), o.resource_version().unwrap_or(""));
            }
        })
        .on_update(move |_old: &Arc<DynamicObject>, new: &Arc<DynamicObject>, cause: UpdateCause| {
            let why = match cause {
                UpdateCause::Watch => "",
                UpdateCause::Relist => " (relist)",
                UpdateCause::Resync => " (resync)",
            };
            println!("{} MODIFIED {} rv={}{why}", elapsed(start), new.key(), new.resource_version().unwrap_or(""));
        })
        .on_delete(move |deleted: &DeletedObject<DynamicObject>| match deleted {
            DeletedObject::Known(o) => {
                println!("{} DELETED  {} rv={}", elapsed(start), o.key(), o.resource_version().unwrap_or(""));
            }
            DeletedObject::FinalStateUnknown { key, .. } => {
                println!("{} DELETED  {key} (missed by the watch: final state unknown)", elapsed(start));
            }
        });
    let registration = informer.add_event_handler(handler)?;
    factory.start();
    if !registration.wait_synced(Duration::from_secs(300)).await {
        bail!("the informer did not sync within 5 minutes");
    }
    println!("{} synced: {} objects in the cache; now following changes", elapsed(start), informer.store().len());
    let until = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    until.await;
    factory.shutdown();
    Ok(())
}
