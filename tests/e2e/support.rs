//! Running the built `listwatch` binary for a test (testkit's harness), on the embedded store or
//! on etcd, and talking to it with kubectl and raw HTTP.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use listwatch_testkit::etcd::EtcdProcess;
use listwatch_testkit::server::ServerBuilder;
use serde_json::Value;

pub use listwatch_testkit::server::Backend;

/// A running `listwatch serve` (testkit's harness) with an HTTP client for it. Killed when
/// dropped.
pub struct Server {
    server: listwatch_testkit::server::Server,
    pub http: reqwest::Client,
}

impl Deref for Server {
    type Target = listwatch_testkit::server::Server;
    fn deref(&self) -> &Self::Target {
        &self.server
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.server
    }
}

/// The listwatch binary: `LISTWATCH_BIN`, else the one cargo built for these tests.
pub fn binary() -> PathBuf {
    listwatch_testkit::server::listwatch_binary(Some(env!("CARGO_BIN_EXE_listwatch").as_ref()))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The harness, running the binary cargo built for these tests unless `LISTWATCH_BIN` names one.
pub fn harness() -> ServerBuilder {
    listwatch_testkit::server::Server::builder().fallback_binary(env!("CARGO_BIN_EXE_listwatch"))
}

impl Server {
    /// Starts a server for test `name` with the debug API on, no compactor, and `extra` flags.
    pub async fn start(name: &str, backend: Backend, extra: &[&str]) -> Server {
        Server::start_from(harness().name(name).backend(backend).args(extra)).await
    }

    /// Starts a server on the given storage flags, with its files in `dir` (and keeps `etcd`
    /// alive with it).
    pub async fn start_with_storage(
        dir: tempfile::TempDir,
        storage: Vec<String>,
        etcd: Option<EtcdProcess>,
        extra: &[&str],
    ) -> Server {
        let mut builder = harness().dir(dir).storage_flags(storage).args(extra);
        if let Some(etcd) = etcd {
            builder = builder.etcd(etcd);
        }
        Server::start_from(builder).await
    }

    /// Starts a server as [`harness`]`()`, configured further, says.
    pub async fn start_from(builder: ServerBuilder) -> Server {
        Server {
            server: builder.start().await,
            // Servers with --tls-generate use a CA of their own; the tests trust any.
            http: reqwest::Client::builder()
                .http1_only()
                .danger_accept_invalid_certs(true)
                .build()
                .expect("an HTTP client"),
        }
    }

    pub fn kubectl(&self) -> Kubectl {
        Kubectl { kubeconfig: self.kubeconfig.clone(), home: self.dir.path().join("home") }
    }

    pub fn api(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// GET a path, parsed as JSON, with its status.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(self.api(path)).send().await.expect("request");
        let code = r.status().as_u16();
        (code, r.json().await.unwrap_or(Value::Null))
    }

    /// Sends `body` with `method` and `content_type`, returning the status and JSON body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let r = self
            .http
            .request(method, self.api(path))
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .expect("request");
        let code = r.status().as_u16();
        (code, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("POST", path, "application/json", body.to_string()).await
    }

    pub async fn debug(&self, path: &str) -> Value {
        let (code, body) = self.send("POST", &format!("/debug/listwatch/{path}"), "application/json", "").await;
        assert_eq!(code, 200, "debug {path}: {body}");
        body
    }
}

/// Sends the request `send` makes until its answer satisfies `ready` (30 s at most), and
/// returns that answer: how a test awaits what the server applies once its caches have it
/// (an admission configuration, a CRD's new stores).
pub async fn answer_until<F, Fut>(mut send: F, ready: impl Fn(&(u16, Value)) -> bool) -> (u16, Value)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (u16, Value)>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = send().await;
        if ready(&got) {
            return got;
        }
        assert!(std::time::Instant::now() < deadline, "never the answer awaited: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that `got` (status code and body) is kube's failure `Status` with `code` and `reason`.
#[track_caller]
pub fn assert_failure(got: &(u16, Value), code: u16, reason: &str) {
    let (c, body) = got;
    assert_eq!(*c, code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
}

/// Asserts that `got` is kube's failure `Status` with `code`, `reason` and exactly `message`.
#[track_caller]
pub fn assert_status(got: &(u16, Value), code: u16, reason: &str, message: &str) {
    assert_failure(got, code, reason);
    assert_eq!(got.1["message"], message, "{}", got.1);
}

/// kubectl against a test server, with a HOME and cache of its own so discovery caches never
/// leak between tests.
pub struct Kubectl {
    kubeconfig: PathBuf,
    home: PathBuf,
}

/// What a kubectl run printed.
#[derive(Debug)]
pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn ok(self) -> String {
        assert!(self.success, "kubectl failed:\nstdout: {}\nstderr: {}", self.stdout, self.stderr);
        self.stdout
    }
}

/// The kubectl binary: the 1.32 client behind the gcloud dispatcher when present.
pub fn kubectl_binary() -> PathBuf {
    let pinned = Path::new("/usr/lib/google-cloud-sdk/bin/kubectl.1.32");
    if pinned.exists() { pinned.to_path_buf() } else { PathBuf::from("kubectl") }
}

impl Kubectl {
    /// The kubeconfig kubectl is run with (other clients use it too).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(kubectl_binary());
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd.arg("--cache-dir").arg(self.home.join("cache"));
        cmd.args(args);
        cmd.env("HOME", &self.home).env_remove("KUBECONFIG");
        cmd.stdin(Stdio::null()).kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in 60 s"))
            .expect("kubectl runs");
        Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl with `stdin` as its input (for `-f -`).
    pub async fn run_with_input(&self, args: &[&str], stdin: &str) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        use tokio::io::AsyncWriteExt;
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin.as_bytes()).await.expect("write stdin");
        drop(input);
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("kubectl finishes")
            .expect("kubectl output");
        Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `kubectl get -o json`, parsed.
    pub async fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.run(&all).await.ok()).expect("kubectl printed JSON")
    }
}

/// Runs a test body once per backend.
#[macro_export]
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() { super::$test($crate::support::Backend::Memory).await })*
        }
        mod etcd {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() { super::$test($crate::support::Backend::Etcd).await })*
        }
    };
}

/// A watch over chunked HTTP, parsed line by line from the byte stream.
pub struct Watch {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: Vec<u8>,
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
}

impl Watch {
    /// Opens `path` (which must ask for a watch) on `server`.
    pub async fn open(server: &Server, path: &str) -> Watch {
        Watch::open_with(&server.http, &server.api(path)).await
    }

    pub async fn open_with(client: &reqwest::Client, url: &str) -> Watch {
        let response = client.get(url).send().await.expect("watch request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        Watch { stream: Box::pin(response.bytes_stream()), buffer: Vec::new(), status, headers }
    }

    /// The next event, or `None` when the stream ended; panics after `timeout`.
    #[track_caller]
    pub fn next(&mut self, timeout: Duration) -> impl std::future::Future<Output = Option<Value>> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match tokio::time::timeout(timeout, self.next_event()).await {
                Ok(event) => event,
                Err(_) => panic!("no watch event within {timeout:?} (at {caller})"),
            }
        }
    }

    async fn next_event(&mut self) -> Option<Value> {
        use futures::StreamExt;
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).expect("each line is one JSON event"));
            }
            match self.stream.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(e)) => panic!("watch stream broke: {e}"),
                None => {
                    assert!(self.buffer.is_empty(), "the stream ended inside an event");
                    return None;
                }
            }
        }
    }

    /// Events until one with resourceVersion `rv` (inclusive), skipping bookmarks.
    pub async fn until_rv(&mut self, rv: i64, timeout: Duration) -> Vec<Value> {
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let event = self
                .next(left.max(Duration::from_millis(1)))
                .await
                .unwrap_or_else(|| panic!("the watch ended before {rv}: {out:?}"));
            if event["type"] == "BOOKMARK" {
                continue;
            }
            let at = event_rv(&event);
            out.push(event);
            if at >= rv {
                return out;
            }
        }
    }
}

/// The resourceVersion of a watch event's object.
pub fn event_rv(event: &Value) -> i64 {
    event["object"]["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// `(type, name, resourceVersion)` of an event.
pub fn summary(event: &Value) -> (String, String, i64) {
    (
        event["type"].as_str().unwrap_or("").to_string(),
        event["object"]["metadata"]["name"].as_str().unwrap_or("").to_string(),
        event_rv(event),
    )
}

/// A metric's value from `/metrics` (the sum over series whose labels contain `labels`).
pub async fn metric(server: &Server, name: &str, labels: &str) -> f64 {
    let text = server.http.get(server.api("/metrics")).send().await.expect("metrics").text().await.expect("text");
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']) && l.contains(labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
