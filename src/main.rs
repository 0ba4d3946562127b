//! `listwatch`: a faithful, fast, scriptable Kubernetes list-watch apiserver.
//!
//! * `listwatch serve`: the API server (embedded store by default, real etcd with `--etcd`).
//! * `listwatch bench`: load generators that measure a server from a separate process (watch
//!   fan-out, creates, LISTs, startup); the `listwatch-bench` crate.
//! * `listwatch informer`: a shared informer from the client crate, showing its cache fill,
//!   sync and events.
//! * `listwatch simulate`: runs a scenario of faults against servers and clients and checks the
//!   watch guarantees; the `listwatch-runner` crate feeding `listwatch-simulator`'s checker.
//!
//! This file only dispatches: each subcommand's work lives in its crate, or, for `serve` and
//! `informer`, in the module of its name.

mod informer;
mod kubeconfig;
mod serve;

use std::io::IsTerminal;

use clap::{Parser, Subcommand};

/// jemalloc, not glibc's malloc: the server allocates and frees a JSON tree or buffer per
/// request and per event from every thread, and glibc's malloc was a third of its CPU in the
/// workloads' profiles. With jemalloc, 20,000 pods on 200 nodes took 29 % less server CPU at
/// the same memory (docs/performance.md, "The allocator"). The library crates leave the
/// choice to their binary, as libraries should.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "listwatch", version, about = "A faithful, fast, scriptable Kubernetes list-watch apiserver")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Kubernetes API.
    Serve(Box<serve::ServeArgs>),
    /// Measure a server: watch fan-out, creates, LISTs (starts one unless --server is given).
    Bench(listwatch_bench::BenchArgs),
    /// Run an informer on a resource: the cache filling, the synced moment, then events.
    Informer(informer::InformerArgs),
    /// Run a scenario of faults against servers and clients; exit 0 only if every watch
    /// guarantee held.
    Simulate(listwatch_runner::SimulateArgs),
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,h2=warn,hyper=warn,tonic=warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person watching: piped or redirected logs stay plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    // Deeply nested request bodies need deeper stacks than tokio's default.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(listwatch_apiserver::REQUEST_THREAD_STACK_BYTES)
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(*args)).map(|()| std::process::ExitCode::SUCCESS),
        Command::Bench(args) => runtime.block_on(listwatch_bench::run(args)).map(|()| std::process::ExitCode::SUCCESS),
        Command::Informer(args) => runtime.block_on(informer::run(args)).map(|()| std::process::ExitCode::SUCCESS),
        Command::Simulate(args) => runtime.block_on(listwatch_runner::run(args)),
    }
}
