//! `listwatch bench`: load generators that measure a running listwatch server from the outside.
//!
//! The server and the load are separate processes, as in production: unless `--server URL`
//! is given, each command starts `listwatch serve` (this same executable) as a child on a free
//! loopback port, waits for `/readyz`, and stops it at the end ([`server`]). The server's CPU
//! seconds and peak RSS are read from `/proc`, so the split of the machine between server and
//! load generator is visible in every result.
//!
//! * `bench fanout` ([`fanout`]): N watch clients and a ConfigMap writer; delivered events/s,
//!   write-to-delivery latency, completeness of every watch.
//! * `bench create` ([`create`]): creates N pods with C connections; creates/s and latency.
//! * `bench list` ([`list`]): creates N pods, then times full LISTs (from the cache, consistent,
//!   and paged as kubectl pages).
//! * `bench startup` ([`startup`]): exec to a ready `/readyz`, on an empty or filled store.
//! * `bench watchers` ([`watchers`]): what idle watchers cost the server, as bytes per watcher.
//! * `bench testserver` ([`testserver`]): an apiserver per test, in process and as a process:
//!   start to first answer, a test's fixture with a CRD, idle memory.
//!
//! Reference rows for comparisons: [`raw`] (a broadcaster with no HTTP or JSON on the watch
//! path, the machine's ceiling; hidden `bench raw-broadcaster`) and [`etcd_direct`] (the same
//! watchers and writes straight on etcd; hidden `bench etcd-direct`).
//!
//! The pieces they share: [`http`] (one HTTP/1.1 connection on hyper's low-level client),
//! [`transport`] and [`decode`] (how watch bytes arrive and how events are cut out of them; a
//! new transport or encoding is a new variant there, nothing else changes), [`objects`] (the
//! ConfigMaps and Pods written, padded to a size), [`report`] (histograms, `/proc` readings,
//! the result file).
#![allow(rustdoc::private_intra_doc_links)]

mod compare;
mod create;
mod decode;
mod etcd_direct;
mod fanout;
mod http;
mod list;
mod objects;
mod plot;
mod raw;
mod report;
mod row;
mod rv_log;
mod server;
mod startup;
mod testserver;
mod transport;
mod watchers;

use std::time::Duration;

use clap::{Args, Subcommand};

/// `listwatch bench <command>`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Watch fan-out: N watchers, a ConfigMap writer; delivered events/s and write-to-delivery latency.
    Fanout(fanout::FanoutArgs),
    /// Create N pods as fast as possible with C connections; creates/s and latency.
    Create(create::CreateArgs),
    /// Create N pods, then time full LISTs (resourceVersion=0, consistent, limit=500 paging).
    List(list::ListArgs),
    /// Time `listwatch serve` from exec to a ready /readyz.
    Startup(startup::StartupArgs),
    /// An apiserver per test: in process (listwatch-testserver) and as a process, start to first answer, idle memory.
    Testserver(testserver::TestServerArgs),
    /// Idle watchers in steps (e.g. 10,000 then 100,000): server RSS per watcher, then one write all must get.
    Watchers(watchers::WatchersArgs),
    /// The raw ceiling's broadcaster process (started by the benches; prints `listening on ADDR`).
    #[command(hide = true)]
    RawBroadcaster(raw::RawBroadcasterArgs),
    /// The fan-out bench's watchers and writes straight on etcd; prints the row.
    #[command(hide = true)]
    EtcdDirect(etcd_direct::EtcdDirectArgs),
}

/// Where the server under test comes from (shared by every bench command).
#[derive(Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// Measure this running server instead of starting one (e.g. http://127.0.0.1:8080).
    #[arg(long)]
    pub(crate) server: Option<String>,
    /// With --server: its process id, to report its CPU seconds and peak RSS.
    #[arg(long, requires = "server")]
    pub(crate) server_pid: Option<u32>,
    /// Start the server on these etcd endpoints (comma-separated) instead of the embedded store.
    #[arg(long, conflicts_with = "server")]
    pub(crate) etcd: Option<String>,
    /// With --etcd: its process id, so that the rows served by etcd (or with it behind
    /// listwatch) count its CPU; without it those rows have no CPU per delivery.
    #[arg(long, requires = "etcd")]
    pub(crate) etcd_pid: Option<u32>,
    /// Extra argument for the started `listwatch serve` (repeat it), e.g. `--serve-arg=--watcher-queue=1000`.
    #[arg(long, allow_hyphen_values = true, conflicts_with = "server")]
    pub(crate) serve_arg: Vec<String>,
    /// Measure the raw broadcaster instead of listwatch: the machine's ceiling, with no HTTP or
    /// JSON work on the watch path (`bench fanout --transport raw`). Of the --serve-arg flags it
    /// takes `--watcher-queue=N`.
    #[arg(long, conflicts_with_all = ["server", "etcd"])]
    pub(crate) raw_broadcaster: bool,
}

/// Runs a bench command on the current (multi-threaded) runtime.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    server::raise_open_files_limit();
    match args.command {
        // `--compare` and `--sweep` run several systems, each measured as a plain run is.
        BenchCommand::Fanout(args) if args.compare || !args.sweep.is_empty() => compare::run(args).await,
        BenchCommand::Fanout(args) => fanout::run(args).await,
        BenchCommand::Create(args) => create::run(args).await,
        BenchCommand::List(args) => list::run(args).await,
        BenchCommand::Startup(args) => startup::run(args).await,
        BenchCommand::Watchers(args) => watchers::run(args).await,
        BenchCommand::Testserver(args) => testserver::run(args).await,
        BenchCommand::RawBroadcaster(args) => raw::serve(args).await,
        BenchCommand::EtcdDirect(args) => etcd_direct::run_command(args).await,
    }
}

/// A duration flag: `20s`, `1m30s`, or a plain number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Ok(Duration::from_secs_f64(seconds));
        }
        return Err(format!("{text:?} is not a duration"));
    }
    humantime::parse_duration(text).map_err(|e| e.to_string())
}
