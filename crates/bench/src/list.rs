//! `listwatch bench list`: creates N pods (or widgets, a custom resource: `--kind widgets`) as
//! `bench create` does, then times full LISTs of all of them in the three ways clients ask:
//!
//! * `resourceVersion=0`: whatever the watch cache has (informers' first list);
//! * `resourceVersion` unset: a consistent read (from the cache once it has storage's
//!   revision, else from storage);
//! * `limit=500` and its continue tokens until the last page (kubectl's chunking; the first
//!   page from the cache's latest state, the rest from its state at the first page's revision,
//!   as kube 1.33's `ListFromCacheSnapshot`).
//!
//! Each is repeated `--repeat` times on one connection. The body is streamed and counted, not
//! kept: bytes, items (every item has one `"metadata":{`, and so has the list: pods,
//! ConfigMaps and widgets have no other), seconds. The server's peak RSS is
//! reset after the creates (where the kernel allows it) so it shows what the LISTs cost.
//!
//! `--compare` puts the cache's LIST next to etcd's: the same pods read straight from etcd
//! with one (linearizable) range read of the prefix the server stores them under
//! (`<--etcd-prefix>/pods/`, or `.../bench.listwatch.dev/widgets/`), as an uncached apiserver's LIST starts. For that the server runs
//! on etcd: `--etcd`, or else a private etcd started for the run. Both are timed `--repeat`
//! times; p50 and p99 (nearest rank: with few repeats, p99 is the slowest) and the ratio are
//! printed and kept in the result file. KEP-2340 measured 20-50× lower LIST latency from the
//! cache: the ratio to beat.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use http::Method;
use http_body_util::BodyExt;
use serde::Serialize;

use super::ServerArgs;
use super::create::{CreateLoad, CreateOutcome, create_objects, print_usage};
use super::decode::{StreamCounter, list_meta_string};
use super::etcd_direct::PrivateEtcd;
use super::http::{HttpConnection, encode_query_value};
use super::objects;
use super::report;
use super::server::{ProcessUsage, ServerUnderTest, cpu_between, machine_busy_seconds, other_cpu_seconds};

#[derive(Args, Debug)]
pub struct ListArgs {
    /// What to create, then list (the LISTs are of all namespaces).
    #[command(flatten)]
    load: CreateLoad,
    /// Times each kind of LIST is repeated.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Page size of the paged LIST (kubectl's is 500).
    #[arg(long, default_value_t = 500)]
    page_size: u64,
    /// Also time the same pods read straight from etcd (one range read) next to the cache's
    /// LIST; runs the server on etcd (--etcd, else a private etcd started for the run).
    #[arg(long, conflicts_with = "server")]
    compare: bool,
    /// Write the result as JSON here.
    #[arg(long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
}

/// The LISTs the bench times.
#[derive(Clone, Copy, Debug)]
enum ListKind {
    Cache,
    Consistent,
    Paged { limit: u64 },
}

impl ListKind {
    fn name(self) -> String {
        match self {
            ListKind::Cache => "resourceVersion=0".into(),
            ListKind::Consistent => "consistent (resourceVersion unset)".into(),
            ListKind::Paged { limit } => format!("limit={limit} paging"),
        }
    }

    /// The first request's path, for `collection` (all namespaces).
    fn first_path(self, collection: &str) -> String {
        match self {
            ListKind::Cache => format!("{collection}?resourceVersion=0"),
            ListKind::Consistent => collection.to_string(),
            ListKind::Paged { limit } => format!("{collection}?limit={limit}"),
        }
    }
}

/// One timed LIST (all its pages).
#[derive(Clone, Debug, Serialize)]
struct ListRun {
    seconds: f64,
    bytes: u64,
    items: u64,
    pages: u64,
}

#[derive(Clone, Debug, Serialize)]
struct ListSummary {
    kind: String,
    runs: Vec<ListRun>,
    mean_seconds: f64,
    min_seconds: f64,
    max_seconds: f64,
    mib_per_second: f64,
    items_per_second: f64,
}

#[derive(Serialize)]
struct ListResult {
    command: String,
    server: String,
    backend: String,
    kind: objects::KindArg,
    objects: u64,
    object_size: usize,
    create: CreateOutcome,
    server_peak_rss_after_create_mib: Option<f64>,
    lists: Vec<ListSummary>,
    /// Peak RSS during the LISTs (reset after the creates), or since start if the reset failed.
    server_peak_rss_during_lists_mib: Option<f64>,
    server_peak_rss_was_reset: bool,
    server_cpu_seconds_lists: Option<f64>,
    bench_cpu_seconds_lists: Option<f64>,
    /// What other processes used during the LISTs (should be near 0).
    other_cpu_seconds_lists: Option<f64>,
    /// `--compare`: the cache's LIST next to etcd's range read.
    #[serde(skip_serializing_if = "Option::is_none")]
    compare: Option<ListComparison>,
}

/// The watch cache's full LIST (`resourceVersion=0`) against one etcd range read of the same
/// pods.
#[derive(Serialize)]
struct ListComparison {
    etcd_endpoints: String,
    /// The key prefix read (`<etcd prefix>/pods/`).
    etcd_key_prefix: String,
    cache_p50_seconds: f64,
    cache_p99_seconds: f64,
    etcd_p50_seconds: f64,
    etcd_p99_seconds: f64,
    /// etcd's p50 / the cache's p50: how many times faster the cache is (target ≥ 20).
    cache_speedup_p50: f64,
    cache_speedup_p99: f64,
    cache_items: u64,
    cache_bytes: u64,
    etcd_items: u64,
    /// Keys and values of the range response.
    etcd_bytes: u64,
    etcd_runs_seconds: Vec<f64>,
}

/// The `q` quantile of `samples` (nearest rank).
fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied().unwrap_or(0.0)
}

/// Times `repeat` range reads of `prefix` on etcd, next to the cache LIST's runs.
async fn compare_with_etcd(
    endpoints: &str,
    prefix: String,
    cache: &ListSummary,
    repeat: usize,
) -> anyhow::Result<ListComparison> {
    let endpoints_list: Vec<&str> = endpoints.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    let client = etcd_client::Client::connect(&endpoints_list, None)
        .await
        .with_context(|| format!("connecting to etcd at {endpoints}"))?;
    let mut kv = client.kv_client().max_decoding_message_size(i32::MAX as usize);
    let (mut runs, mut items, mut bytes) = (Vec::new(), 0, 0);
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let response = kv
            .get(prefix.as_str(), Some(etcd_client::GetOptions::new().with_prefix()))
            .await
            .with_context(|| format!("reading {prefix} from etcd"))?;
        runs.push(started.elapsed().as_secs_f64());
        items = response.kvs().len() as u64;
        bytes = response.kvs().iter().map(|kv| (kv.key().len() + kv.value().len()) as u64).sum();
    }
    let cache_runs: Vec<f64> = cache.runs.iter().map(|r| r.seconds).collect();
    let last = cache.runs.last().expect("at least one run");
    let (cache_p50, cache_p99) = (quantile(&cache_runs, 0.50), quantile(&cache_runs, 0.99));
    let (etcd_p50, etcd_p99) = (quantile(&runs, 0.50), quantile(&runs, 0.99));
    Ok(ListComparison {
        etcd_endpoints: endpoints.to_string(),
        etcd_key_prefix: prefix,
        cache_p50_seconds: cache_p50,
        cache_p99_seconds: cache_p99,
        etcd_p50_seconds: etcd_p50,
        etcd_p99_seconds: etcd_p99,
        cache_speedup_p50: etcd_p50 / cache_p50,
        cache_speedup_p99: etcd_p99 / cache_p99,
        cache_items: last.items,
        cache_bytes: last.bytes,
        etcd_items: items,
        etcd_bytes: bytes,
        etcd_runs_seconds: runs,
    })
}

/// Streams one response body, counting bytes and items, keeping the start (for ListMeta).
async fn read_list(connection: &mut HttpConnection, path: &str) -> anyhow::Result<(u64, u64, Option<String>)> {
    let response = connection.send(Method::GET, path, "application/json", None).await?;
    let status = response.status();
    let mut body = response.into_body();
    if !status.is_success() {
        let answer = body.collect().await?.to_bytes();
        bail!("LIST {path} answered {status}: {}", String::from_utf8_lossy(&answer));
    }
    let mut items = StreamCounter::new(b"\"metadata\":{");
    let mut head = Vec::new();
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else { continue };
        bytes += data.len() as u64;
        if head.len() < 4096 {
            head.extend_from_slice(&data[..data.len().min(4096 - head.len())]);
        }
        items.feed(&data);
    }
    let continue_token = list_meta_string(&head, "continue").filter(|t| !t.is_empty());
    // (less the list's own metadata; widgets start with their apiVersion, pods with metadata)
    Ok((bytes, items.count.saturating_sub(1), continue_token))
}

async fn timed_list(connection: &mut HttpConnection, collection: &str, kind: ListKind) -> anyhow::Result<ListRun> {
    let started = Instant::now();
    let (mut bytes, mut items, mut pages) = (0, 0, 0);
    let mut path = kind.first_path(collection);
    loop {
        let (b, n, continue_token) = read_list(connection, &path).await?;
        bytes += b;
        items += n;
        pages += 1;
        match (kind, continue_token) {
            (ListKind::Paged { limit }, Some(token)) => {
                path = format!("{collection}?limit={limit}&continue={}", encode_query_value(&token));
            }
            _ => break,
        }
    }
    Ok(ListRun { seconds: started.elapsed().as_secs_f64(), bytes, items, pages })
}

pub async fn run(args: ListArgs) -> anyhow::Result<()> {
    let mut server_args = args.server.clone();
    // Declared before the server: dropped after it.
    let private_etcd = match (args.compare, &server_args.etcd) {
        (true, None) => Some(PrivateEtcd::start().await?),
        _ => None,
    };
    if let Some(etcd) = &private_etcd {
        server_args.etcd = Some(etcd.endpoint().to_string());
    }
    let server = ServerUnderTest::start(&server_args).await?;
    let prefix = format!("bench-{}", objects::run_tag());
    eprintln!("bench: creating {} {:?}", args.load.objects, args.load.kind);
    let (kind, create) = create_objects(server.addr, &args.load, &prefix).await?;
    let collection = kind.all_namespaces();
    println!(
        "created {}/{} {} in {:.2} s ({:.0}/s, latency {})",
        create.created,
        create.requested,
        kind.plural(),
        create.seconds,
        create.creates_per_second,
        create.latency.brief()
    );
    let peak_after_create = server.usage().map(|u| report::mib(u.peak_rss_bytes));
    let reset = server.reset_peak_rss();
    let (server_before, self_before, machine_before) =
        (server.usage(), ProcessUsage::of_self(), machine_busy_seconds());
    let lists_started = Instant::now();
    let mut connection = HttpConnection::connect(server.addr).await?;
    let mut lists = Vec::new();
    for list_kind in [ListKind::Cache, ListKind::Consistent, ListKind::Paged { limit: args.page_size }] {
        let mut runs = Vec::new();
        for _ in 0..args.repeat.max(1) {
            runs.push(timed_list(&mut connection, &collection, list_kind).await.map_err(|e| server.annotate(e))?);
        }
        let seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
        let mean = seconds.iter().sum::<f64>() / seconds.len() as f64;
        let last = runs.last().expect("at least one run").clone();
        let summary = ListSummary {
            kind: list_kind.name(),
            mean_seconds: mean,
            min_seconds: seconds.iter().copied().fold(f64::INFINITY, f64::min),
            max_seconds: seconds.iter().copied().fold(0.0, f64::max),
            mib_per_second: report::mib(last.bytes) / mean,
            items_per_second: last.items as f64 / mean,
            runs,
        };
        println!(
            "LIST {:<36} {:>8.3} s mean ({:.3}..{:.3}), {:>7.1} MiB, {:>7} items, {:>4} pages, {:>7.1} MiB/s",
            summary.kind,
            summary.mean_seconds,
            summary.min_seconds,
            summary.max_seconds,
            report::mib(last.bytes),
            last.items,
            last.pages,
            summary.mib_per_second
        );
        lists.push(summary);
    }
    let lists_seconds = lists_started.elapsed().as_secs_f64();
    let (server_after, self_after, machine_after) = (server.usage(), ProcessUsage::of_self(), machine_busy_seconds());
    let server_cpu_seconds_lists = cpu_between(server_before, server_after);
    let bench_cpu_seconds_lists = cpu_between(self_before, self_after);
    let compare = match (&server_args.etcd, &server.etcd_prefix) {
        (Some(endpoints), Some(root)) if args.compare => {
            let prefix = format!("{}/{}", root.trim_end_matches('/'), kind.storage_prefix());
            let cache = lists.iter().find(|l| l.kind == ListKind::Cache.name()).expect("the cache LIST ran");
            let comparison = compare_with_etcd(endpoints, prefix, cache, args.repeat).await?;
            print_comparison(&comparison);
            Some(comparison)
        }
        _ => None,
    };
    let result = ListResult {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        server: server.url.clone(),
        backend: server.backend.clone(),
        kind: args.load.kind,
        objects: args.load.objects,
        object_size: args.load.object_size,
        create,
        server_peak_rss_after_create_mib: peak_after_create,
        lists,
        server_peak_rss_during_lists_mib: server_after.map(|u| report::mib(u.peak_rss_bytes)),
        server_peak_rss_was_reset: reset,
        server_cpu_seconds_lists,
        bench_cpu_seconds_lists,
        other_cpu_seconds_lists: other_cpu_seconds(
            machine_before,
            machine_after,
            server_cpu_seconds_lists,
            bench_cpu_seconds_lists,
        ),
        compare,
    };
    println!(
        "server peak RSS: {} after the creates, {} during the LISTs{}",
        peak_after_create.map_or("?".into(), |m| format!("{m:.1} MiB")),
        result.server_peak_rss_during_lists_mib.map_or("?".into(), |m| format!("{m:.1} MiB")),
        if reset { "" } else { " (could not reset the peak: since start)" }
    );
    print_usage(
        result.server_cpu_seconds_lists,
        None,
        result.bench_cpu_seconds_lists,
        result.other_cpu_seconds_lists,
        lists_seconds,
    );
    if let Some(path) = &args.output {
        report::write_json(path, &result)?;
    }
    server.stop().await;
    drop(private_etcd);
    Ok(())
}

fn print_comparison(c: &ListComparison) {
    println!(
        "LIST from the watch cache (resourceVersion=0): p50 {:.3} s, p99 {:.3} s, {} items, {:.1} MiB",
        c.cache_p50_seconds,
        c.cache_p99_seconds,
        c.cache_items,
        report::mib(c.cache_bytes)
    );
    println!(
        "range read of {} from etcd: p50 {:.3} s, p99 {:.3} s, {} items, {:.1} MiB",
        c.etcd_key_prefix,
        c.etcd_p50_seconds,
        c.etcd_p99_seconds,
        c.etcd_items,
        report::mib(c.etcd_bytes)
    );
    println!(
        "the cache is {:.1}x faster at p50, {:.1}x at p99 (target: at least 20x){}",
        c.cache_speedup_p50,
        c.cache_speedup_p99,
        if c.cache_items == c.etcd_items { String::new() } else { "; NOTE: item counts differ".into() }
    );
}
