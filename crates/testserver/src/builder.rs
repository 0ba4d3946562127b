//! What a test chooses before the server starts. Everything has envtest's default: no
//! controllers, no nodes, kube-apiserver's watch cache and bookmark interval, the client
//! audit on. There is no port to choose: each server binds a free one, so two servers can
//! never share a port.

use std::path::Path;
use std::time::Duration;

use crate::crds::CrdSource;
use crate::server::TestServer;

/// Chooses what a [`TestServer`] starts with ([`TestServer::builder`]).
#[derive(Clone, Debug)]
pub struct Builder {
    pub(crate) crds: Vec<CrdSource>,
    pub(crate) controllers: String,
    pub(crate) nodes: usize,
    pub(crate) watch_cache_max_events: Option<usize>,
    pub(crate) bookmark_interval: Option<Duration>,
    pub(crate) audit: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            crds: Vec::new(),
            controllers: "none".into(),
            nodes: 0,
            watch_cache_max_events: None,
            bookmark_interval: None,
            audit: true,
        }
    }
}

impl Builder {
    /// Installs the CRDs of a YAML file (several documents allowed) or of every `.yaml`, `.yml`
    /// and `.json` file of a directory; they are served before [`Builder::start`] returns. A file
    /// that does not parse, or a CRD the server refuses, fails `start` with the file and kube's
    /// message.
    pub fn crd_file(mut self, path: impl AsRef<Path>) -> Self {
        self.crds.push(CrdSource::Path(path.as_ref().to_path_buf()));
        self
    }

    /// Installs the CRDs of YAML text (e.g. `serde_yaml::to_string(&Widget::crd())`).
    pub fn crd_yaml(mut self, yaml: impl Into<String>) -> Self {
        self.crds.push(CrdSource::Yaml(yaml.into()));
        self
    }

    /// Runs the kwok-like controllers: `"all"`, `"none"` (the default, as envtest) or a list
    /// such as `"deployment,replicaset,scheduler,pod-lifecycle"`. An unknown name fails `start`.
    pub fn controllers(mut self, selection: &str) -> Self {
        self.controllers = selection.to_string();
        self
    }

    /// Registers `count` fake nodes (with the `nodes` controller; 0 by default).
    pub fn nodes(mut self, count: usize) -> Self {
        self.nodes = count;
        self
    }

    /// Keeps at most `events` events in each watch cache's window (kube's is sized by memory;
    /// a small window makes resuming watches get 410 sooner).
    pub fn watch_cache_max_events(mut self, events: usize) -> Self {
        self.watch_cache_max_events = Some(events);
        self
    }

    /// Sends a bookmark to watchers that asked for them every `interval` (kube: a minute).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = Some(interval);
        self
    }

    /// Records every request for [`TestServer::audit`] (on by default).
    pub fn audit(mut self, on: bool) -> Self {
        self.audit = on;
        self
    }

    /// Starts the server; returns once it serves and every CRD is established.
    pub async fn start(self) -> Result<TestServer, crate::Error> {
        TestServer::start_with(self).await
    }
}
