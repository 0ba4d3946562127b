//! A Kubernetes API server inside `cargo test`: listwatch's apiserver started in the test's
//! own process, on a free loopback port, with an in-memory store, typed faults and the client
//! audit. Add it under `[dev-dependencies]` and test a controller against a real list-watch
//! protocol instead of a mocked client, with no cluster and no binary to install:
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use listwatch_testserver::TestServer;
//!
//! let server = TestServer::builder().crd_file("tests/widgets.yaml").start().await?;
//! let client = server.client()?; // a kube::Client (the `kube` feature, on by default)
//! // ... run the controller under test with `client`, create objects, await its work ...
//! server.faults().reset_cache("widgets.example.com").await?; // returns once it has relisted
//! server.faults().drop_watches("configmaps")?;
//! server.faults().storage_outage(std::time::Duration::from_secs(2))?;
//! // ... await convergence again ...
//! assert!(server.audit().clean(), "{:#?}", server.audit().findings);
//! # Ok(()) }
//! ```
//!
//! What a test gets ([`TestServer`]): the URL and a kubeconfig file (in a temporary directory
//! removed with the server), a `kube::Config` and `kube::Client`, CRDs installed and served
//! before `start` returns ([`Builder::crd_file`], [`Builder::crd_yaml`], as envtest's
//! `CRDInstallOptions`), the kwok-like controllers and fake nodes when asked
//! ([`Builder::controllers`], [`Builder::nodes`]), a short watch-cache window or bookmark
//! interval, and [`Faults`]: compaction, dropped watches, cache resets, 429s, network faults on
//! watch streams, storage outages, a restart. Each fault returns once it has taken effect, so
//! a test awaits the consequence instead of sleeping. [`TestServer::audit`] is the client
//! audit's verdict on every client the server saw: the controller under test never missed an
//! event, never hot-looped on 410s, honoured Retry-After.
//!
//! Every server is isolated (its own store, port and tasks); many run in parallel tests of one
//! process. Dropping the handle stops the server.
//!
//! **When to use the binary instead**: tests in another language (they cannot link a Rust
//! crate: run `listwatch serve --ephemeral --addr 127.0.0.1:0 --ready-file F` as a fixture and
//! read the URL and kubeconfig from F; see `examples/fixtures`), a server on etcd, HTTPS and
//! authentication, or a scenario with a schedule of faults and a verdict (`listwatch simulate`).

mod builder;
mod crds;
mod faults;
mod kubeconfig;
mod server;

pub use builder::Builder;
pub use faults::Faults;
pub use listwatch_apiserver::StreamFault;
pub use listwatch_simulator::audit::{Finding, Report as AuditReport, Rule};
pub use server::TestServer;

/// Why a server could not start, or a fault could not be caused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A CRD file could not be read or parsed.
    #[error("{file}: {message}")]
    CrdFile {
        /// The file (or `<yaml #N>` for a string).
        file: String,
        /// What was wrong.
        message: String,
    },
    /// The server refused a CRD (kube's message).
    #[error("{file}: customresourcedefinition {name:?} refused: {message}")]
    CrdRefused {
        /// The file it came from.
        file: String,
        /// The CRD's name.
        name: String,
        /// The server's answer.
        message: String,
    },
    /// The server refused a fault (a resource it does not serve, say): kube's message.
    #[error("{0}")]
    Refused(String),
    /// Anything else: starting, binding, the store.
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

impl From<listwatch_meta::ApiError> for Error {
    fn from(error: listwatch_meta::ApiError) -> Error {
        Error::Refused(error.0.message.clone())
    }
}
