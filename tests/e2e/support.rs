//! Running the built `listwatch` binary for a test, on the embedded store or on etcd, and
//! talking to it with kubectl and raw HTTP.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use listwatch_testkit::etcd::{EtcdProcess, EtcdProcessOptions, shared_endpoints, unique_prefix};
use serde_json::Value;

/// Which storage a test server runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store, durable, in the test's own directory.
    Memory,
    /// The run's shared etcd, under a key prefix of the test's own.
    Etcd,
    /// A private etcd (tests that compact or kill it).
    PrivateEtcd,
}

/// A running `listwatch serve`. Killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub url: String,
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
    args: Vec<String>,
    pub etcd: Option<EtcdProcess>,
    pub http: reqwest::Client,
}

fn binary() -> PathBuf {
    std::env::var_os("LISTWATCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_listwatch")))
}

impl Server {
    /// Starts a server for test `name` with the debug API on, no compactor, and `extra` flags.
    pub async fn start(name: &str, backend: Backend, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (storage, etcd) = match backend {
            Backend::Memory => (vec!["--data-dir".to_string(), dir.path().join("data").display().to_string()], None),
            Backend::Etcd => (
                vec![
                    "--etcd".to_string(),
                    shared_endpoints().await.join(","),
                    "--etcd-prefix".to_string(),
                    format!("{}registry", unique_prefix(name)),
                ],
                None,
            ),
            Backend::PrivateEtcd => {
                let process = EtcdProcess::start(EtcdProcessOptions::default()).await;
                (vec!["--etcd".to_string(), process.endpoint().to_string()], Some(process))
            }
        };
        Server::start_with_storage(dir, storage, etcd, extra).await
    }

    /// Starts a server on the given storage flags (and keeps `etcd` alive with it).
    pub async fn start_with_storage(
        dir: tempfile::TempDir,
        storage: Vec<String>,
        etcd: Option<EtcdProcess>,
        extra: &[&str],
    ) -> Server {
        let kubeconfig = dir.path().join("kubeconfig");
        let mut args: Vec<String> =
            vec!["serve".into(), "--kubeconfig".into(), kubeconfig.display().to_string(), "--enable-debug-api".into()];
        // No compactor unless the test asks for one: compaction is what tests force.
        if !extra.contains(&"--compaction-interval") {
            args.extend(["--compaction-interval".into(), "0s".into()]);
        }
        args.extend(storage);
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut server = Server {
            child: None,
            url: String::new(),
            kubeconfig,
            dir,
            args,
            etcd,
            // Servers with --tls-generate use a CA of their own; the tests trust any.
            http: reqwest::Client::builder()
                .http1_only()
                .danger_accept_invalid_certs(true)
                .build()
                .expect("an HTTP client"),
        };
        server.launch("127.0.0.1:0").await;
        server
    }

    /// Starts the process and waits until it serves and is ready.
    async fn launch(&mut self, addr: &str) {
        let mut args = self.args.clone();
        args.extend(["--addr".into(), addr.into()]);
        let mut child = Command::new(binary())
            .args(&args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the listwatch binary starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log_path = self.dir.path().join("server.log");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut log = std::fs::OpenOptions::new().create(true).append(true).open(log_path).expect("a log file");
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(log, "{line}");
                if let Some(rest) = line.strip_prefix("listwatch is serving on ") {
                    let url = rest.split(';').next().unwrap_or("").to_string();
                    let _ = tx.send(url);
                }
            }
        });
        self.child = Some(child);
        let url = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(60)))
            .await
            .expect("join")
            .unwrap_or_else(|_| panic!("listwatch did not start; log:\n{}", self.log()));
        self.url = url;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = self.http.get(format!("{}/readyz", self.url)).send().await
                && r.status() == 200
            {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "listwatch never became ready; log:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Kills the process with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The id of the running process.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// Restarts on the same port, data dir and storage.
    pub async fn restart(&mut self) {
        self.kill();
        let addr = self.url.trim_start_matches("http://").to_string();
        self.launch(&addr).await;
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

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
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
