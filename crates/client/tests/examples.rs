//! The examples against a real listwatch: each example binary runs against a server of its own
//! while the test does what the example's docs tell a person to do (create a pod, scale a
//! deployment with kubectl, …) and checks what the example prints and what the server ends up
//! with.
//!
//! The example binaries are not built here: `cargo test` and `cargo nextest run` build every
//! example of the package next to the test binaries (`target/<profile>/examples/`), and that is
//! where they are looked for. The listwatch binary comes from `LISTWATCH_BIN` (see
//! `support`); kubectl is the 1.32 client when present, as in the end-to-end tests.

mod support;

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use listwatch_client::http::Method;
use listwatch_client::{Api, ApiResource, Client, Config, DynamicObject, ListParams, Object};
use parking_lot::Mutex;
use serde_json::{Value, json};
use support::{Backend, Server, WAIT};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

// ---- running examples ----------------------------------------------------------------------

/// `target/<profile>/examples/<name>`, next to the `deps` directory this test runs from.
fn example_binary(name: &str) -> PathBuf {
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test_binary.parent().and_then(Path::parent).expect("the test binary is in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "{} does not exist: the examples are built by `cargo test` and `cargo nextest run` (not by `cargo test \
         --test examples`); build them with `cargo build -p listwatch-client --examples`",
        path.display()
    );
    path
}

/// A running example, killed when dropped. Its stdout is collected line by line.
struct Example {
    name: &'static str,
    child: Child,
    stdout: watch::Receiver<Vec<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Example {
    fn start(name: &'static str, server: &Server, args: &[&str]) -> Example {
        let mut child = Command::new(example_binary(name))
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .args(args)
            .env_remove("KUBECONFIG")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run example {name}: {e}"));
        let (lines_tx, stdout) = watch::channel(Vec::new());
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                lines_tx.send_modify(|lines| lines.push(line));
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut errors = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let collected = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                let mut collected = collected.lock();
                collected.push_str(&line);
                collected.push('\n');
            }
        });
        Example { name, child, stdout, stderr }
    }

    /// Everything printed so far.
    fn lines(&self) -> Vec<String> {
        self.stdout.borrow().clone()
    }

    fn report(&self) -> String {
        format!("example {} printed:\n{}\n--- stderr:\n{}", self.name, self.lines().join("\n"), self.stderr.lock())
    }

    /// Waits (at most [`WAIT`]) until the lines printed so far satisfy `done`; returns them.
    async fn wait_until(&mut self, what: &str, mut done: impl FnMut(&[String]) -> bool) -> Vec<String> {
        let waited = tokio::time::timeout(WAIT, self.stdout.wait_for(|lines| done(lines)))
            .await
            .map(|lines| lines.map(|lines| lines.clone()));
        match waited {
            Ok(Ok(lines)) => lines,
            // The output ended (the example exited): one last look.
            Ok(Err(_)) if done(&self.lines()) => self.lines(),
            Ok(Err(_)) => panic!("example {} ended before {what}; {}", self.name, self.report()),
            Err(_) => panic!("no {what} within {WAIT:?}; {}", self.report()),
        }
    }

    /// Waits for a line equal to `line`.
    async fn wait_for_line(&mut self, line: &str) {
        self.wait_for_line_after(0, line).await;
    }

    /// Waits for a line equal to `line` among those after the first `skip`.
    async fn wait_for_line_after(&mut self, skip: usize, line: &str) {
        self.wait_until(&format!("line {line:?}"), |lines| lines.iter().skip(skip).any(|l| l == line)).await;
    }

    /// Waits for a line starting with `prefix` and returns it.
    async fn wait_for_prefix(&mut self, prefix: &str) -> String {
        let what = format!("line starting {prefix:?}");
        let lines = self.wait_until(&what, |lines| lines.iter().any(|l| l.starts_with(prefix))).await;
        lines.into_iter().find(|l| l.starts_with(prefix)).expect("found above")
    }

    /// Waits (at most [`WAIT`]) for the example to exit by itself.
    async fn wait_exit(&mut self) -> ExitStatus {
        match tokio::time::timeout(WAIT, self.child.wait()).await {
            Ok(status) => status.expect("waiting for the example"),
            Err(_) => panic!("example {} did not exit within {WAIT:?}; {}", self.name, self.report()),
        }
    }

    fn count(&self, matches: impl Fn(&str) -> bool) -> usize {
        self.lines().iter().filter(|line| matches(line)).count()
    }
}

// ---- driving the server --------------------------------------------------------------------

fn kubectl_binary() -> PathBuf {
    let pinned = Path::new("/usr/lib/google-cloud-sdk/bin/kubectl.1.32");
    if pinned.exists() { pinned.to_path_buf() } else { PathBuf::from("kubectl") }
}

/// Runs kubectl against `server` (with a HOME and cache of the test's own); returns its stdout.
async fn kubectl(server: &Server, args: &[&str]) -> String {
    let home = server.dir.path().join("kubectl-home");
    let run = Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .arg("--cache-dir")
        .arg(home.join("cache"))
        .args(args)
        .env("HOME", &home)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, run)
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within {WAIT:?}"))
        .unwrap_or_else(|e| panic!("cannot run kubectl ({}): {e}", kubectl_binary().display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "kubectl {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// Checks `condition` until it returns `Some`, at most [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut condition: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(value) = condition().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn api(server: &Server, resource: ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    Api::new(server.client(), resource, namespace)
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    })
}

fn deployment(name: &str, replicas: i32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    })
}

async fn create_namespace(server: &Server, name: &str) {
    let namespaces = api(server, ApiResource::namespaces(), None);
    namespaces.create(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})).await.unwrap();
}

// ---- the examples --------------------------------------------------------------------------

#[tokio::test]
async fn list_namespaces_prints_every_namespace_and_pod() {
    let server = Server::start("example-list", Backend::Memory, &[]).await;
    api(&server, ApiResource::pods(), Some("default")).create(&pod("p1")).await.unwrap();

    let mut example = Example::start("list_namespaces", &server, &[]);
    let status = example.wait_exit().await;
    assert!(status.success(), "{status}; {}", example.report());
    let lines = example.wait_until("the pod count", |lines| lines.iter().any(|l| l.starts_with("1 pods at"))).await;
    for namespace in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(lines.contains(&format!("get namespace {namespace}")), "{}", example.report());
    }
    assert!(lines.contains(&"get pod default/p1 (Pending)".to_owned()), "{}", example.report());
}

#[tokio::test]
async fn watch_pods_prints_new_pods_until_the_server_ends_the_watch() {
    let server = Server::start("example-watch", Backend::Memory, &[]).await;
    let pods = api(&server, ApiResource::pods(), Some("default"));
    pods.create(&pod("before")).await.unwrap();

    let mut example = Example::start("watch_pods", &server, &["--timeout", "5"]);
    example.wait_for_line("watching pods in default for 5 s").await;
    // A watch without a resourceVersion starts with the pods that exist.
    example.wait_for_line("new Pod :  before").await;
    pods.create(&pod("after")).await.unwrap();
    example.wait_for_line("new Pod :  after").await;

    // timeoutSeconds=5: the server ends the watch, and the program with it.
    let status = example.wait_exit().await;
    assert!(status.success(), "{status}; {}", example.report());
    let lines =
        example.wait_until("the end", |lines| lines.last().is_some_and(|l| l.starts_with("the watch ended"))).await;
    assert_eq!(lines.iter().filter(|l| l.starts_with("new Pod")).count(), 2, "{}", example.report());
}

#[tokio::test]
async fn retry_watch_keeps_its_place_across_watch_timeouts() {
    const WATCH_LINE: &str = "watching namespaces from resourceVersion ";
    let server = Server::start("example-retry-watch", Backend::Memory, &[]).await;
    let namespaces = api(&server, ApiResource::namespaces(), None);

    // Every watch ends after 1 s and the next one starts from where it stopped.
    let mut example = Example::start("retry_watch", &server, &["--watch-timeout", "1"]);
    example.wait_for_prefix(WATCH_LINE).await;

    // Namespaces are created while watches end and restart, until three restarts happened
    // during the writes; then every other one is deleted.
    let watches = |example: &Example| example.count(|l| l.starts_with(WATCH_LINE));
    let first_watches = watches(&example);
    let mut created = Vec::new();
    let deadline = Instant::now() + WAIT;
    let mut pace = tokio::time::interval(Duration::from_millis(150));
    while watches(&example) < first_watches + 3 {
        assert!(Instant::now() < deadline, "the watch was not restarted 3 times; {}", example.report());
        pace.tick().await;
        let name = format!("rw-{}", created.len());
        namespaces.create(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})).await.unwrap();
        created.push(name);
    }
    let deleted: Vec<&String> = created.iter().step_by(2).collect();
    for name in &deleted {
        namespaces.delete(name).await.unwrap();
    }
    let last_deleted = format!("delete a namespace {} ", deleted.last().unwrap());
    example.wait_until("the last delete", |lines| lines.iter().any(|l| l.starts_with(&last_deleted))).await;
    // And one more restart after everything, to be sure none of it is replayed.
    let watches_now = watches(&example);
    let lines = example.wait_until("another restart", |lines| {
        lines.iter().filter(|l| l.starts_with(WATCH_LINE)).count() > watches_now
    });
    let lines = lines.await;

    // Every change exactly once, in resourceVersion order, and nothing from before the start
    // (the article's version replays every namespace as ADDED at each restart); each watch
    // starts where the events printed before it stopped.
    let mut events: Vec<(&str, &str, u64)> = Vec::new();
    for line in &lines {
        match parse_retry_watch_line(line) {
            Some(RetryWatchLine::WatchFrom(rv)) => {
                let last = events.last().map_or(0, |(_, _, rv)| *rv);
                assert!(rv >= last, "a watch restarted from {rv}, before event {last}; {}", example.report());
            }
            Some(RetryWatchLine::Event(action, name, rv)) => events.push((action, name, rv)),
            None => {}
        }
    }
    let count =
        |wanted: &str, name: &str| events.iter().filter(|(action, n, _)| *action == wanted && *n == name).count();
    for name in &created {
        assert_eq!(count("add", name), 1, "namespace {name} added not once; {}", example.report());
    }
    for name in &deleted {
        assert_eq!(count("delete", name), 1, "namespace {name} deleted not once; {}", example.report());
    }
    assert!(events.iter().all(|(_, name, _)| name.starts_with("rw-")), "a replayed namespace; {}", example.report());
    assert!(events.windows(2).all(|pair| pair[0].2 < pair[1].2), "events out of order; {}", example.report());
}

enum RetryWatchLine<'a> {
    WatchFrom(u64),
    /// add / modify / delete, the namespace, its resourceVersion.
    Event(&'static str, &'a str, u64),
}

fn parse_retry_watch_line(line: &str) -> Option<RetryWatchLine<'_>> {
    if let Some(rv) = line.strip_prefix("watching namespaces from resourceVersion ") {
        return Some(RetryWatchLine::WatchFrom(rv.parse().expect("a numeric resourceVersion")));
    }
    let (action, rest) =
        [("add a new namespace ", "add"), ("modify a namespace ", "modify"), ("delete a namespace ", "delete")]
            .into_iter()
            .find_map(|(prefix, action)| line.strip_prefix(prefix).map(|rest| (action, rest)))?;
    let (name, rv) = rest.strip_suffix(')')?.split_once(" (resourceVersion ")?;
    Some(RetryWatchLine::Event(action, name, rv.parse().expect("a numeric resourceVersion")))
}

#[tokio::test]
async fn informers_print_pod_and_deployment_events() {
    let server = Server::start("example-informers", Backend::Memory, &[]).await;
    let pods = api(&server, ApiResource::pods(), Some("default"));
    api(&server, ApiResource::deployments(), Some("default")).create(&deployment("nginx", 2, "nginx")).await.unwrap();
    pods.create(&pod("p0")).await.unwrap();

    let mut example = Example::start("informers", &server, &[]);
    // The initial list.
    example.wait_for_line("Deployment default/nginx is added").await;
    example.wait_for_line("Pod default/p0 is added").await;

    // The article's experiment.
    kubectl(&server, &["scale", "deployment/nginx", "--replicas=3"]).await;
    example.wait_for_line("Deployment default/nginx is updated: 3 replicas wanted, 0 ready").await;

    pods.create(&pod("p1")).await.unwrap();
    example.wait_for_line("Pod default/p1 is added").await;
    pods.delete("p1").await.unwrap();
    example.wait_for_line("Pod default/p1 is deleted").await;
    assert_eq!(example.count(|l| l == "Pod default/p0 is added"), 1, "{}", example.report());
}

#[tokio::test]
async fn listers_list_deployments_from_the_cache() {
    let server = Server::start("example-listers", Backend::Memory, &[]).await;
    let deployments = api(&server, ApiResource::deployments(), Some("default"));
    deployments.create(&deployment("b-deploy", 1, "nginx")).await.unwrap();
    deployments.create(&deployment("a-deploy", 1, "nginx")).await.unwrap();
    create_namespace(&server, "develop").await;
    api(&server, ApiResource::deployments(), Some("develop"))
        .create(&deployment("elsewhere", 1, "nginx"))
        .await
        .unwrap();
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "a-deploy"}},
    });
    api(&server, ApiResource::services(), Some("default")).create(&service).await.unwrap();

    let mut example = Example::start("listers", &server, &[]);
    let lines = example.wait_until("the lister's list", |lines| lines.iter().any(|l| l == "2 -> b-deploy")).await;
    // (The handlers print from threads of their own, so their lines may come in between.)
    let listed: Vec<&String> = lines
        .iter()
        .skip_while(|l| *l != "2 deployments in default (from the cache):")
        .filter(|l| l.contains(" -> "))
        .collect();
    assert_eq!(listed, ["1 -> a-deploy", "2 -> b-deploy"], "{}", example.report());
    example.wait_for_line("add a service: svc").await;
    example.wait_for_line("add a deployment: elsewhere").await;

    kubectl(&server, &["create", "deployment", "nginx-deploy", "--image=nginx"]).await;
    example.wait_for_line("add a deployment: nginx-deploy").await;
}

#[tokio::test]
async fn controller_drops_test_deployment_after_five_retries() {
    const DROPPED: &str = "Dropping deployment \"default/test-deployment\" out of the queue: simulated error for \
                           deployment test-deployment";
    const TEST_SYNC: &str = "Sync/Add/Update for Deployment test-deployment, Replicas: 1";
    let server = Server::start("example-controller", Backend::Memory, &[]).await;
    let deployments = api(&server, ApiResource::deployments(), Some("default"));
    let pods = api(&server, ApiResource::pods(), Some("default"));

    let mut example = Example::start("controller", &server, &[]);
    example.wait_for_line("controllers started").await;
    deployments.create(&deployment("web", 1, "nginx")).await.unwrap();
    deployments.create(&deployment("test-deployment", 1, "nginx")).await.unwrap();
    example.wait_for_line("Sync/Add/Update for Deployment web, Replicas: 1").await;

    // Six syncs of 2 s each, five retries with backoff in between, then the key is dropped.
    let lines = example.wait_until("the drop", |lines| lines.iter().any(|l| l == DROPPED)).await;
    let test_lines: Vec<&String> = lines.iter().filter(|l| l.contains("test-deployment")).collect();
    let mut expected = Vec::new();
    for retry in 0..5 {
        expected.push(TEST_SYNC.to_owned());
        expected.push(format!("Retry {retry} for key default/test-deployment"));
    }
    expected.push(TEST_SYNC.to_owned());
    expected.push(DROPPED.to_owned());
    assert_eq!(test_lines, expected.iter().collect::<Vec<_>>(), "{}", example.report());

    // After the drop nothing comes back for it: a later key goes through the same single
    // worker, and the test deployment is still synced six times only.
    deployments.delete("web").await.unwrap();
    example.wait_for_line("Deployment default/web does not exist anymore").await;
    assert_eq!(example.count(|l| l == TEST_SYNC), 6, "{}", example.report());

    // The PodController: a change to a pod is logged by its worker, from the cache.
    pods.create(&pod("p")).await.unwrap();
    example.wait_for_line("Pod default/p is added").await;
    pods.patch_merge("p", &json!({"metadata": {"labels": {"demo": "1"}}})).await.unwrap();
    example.wait_for_line("Pod default/p is modified").await;
    pods.delete("p").await.unwrap();
    example.wait_for_line("Pod default/p is deleted").await;
}

/// GET `path` from the example's HTTP API: the status code and the JSON body.
async fn get_json(http: &Client, path: &str) -> (u16, Value) {
    match http.request(Method::GET, path, "application/json", None).await {
        Ok((_, body)) => (200, serde_json::from_slice(&body).expect("a JSON body")),
        Err(e) => (e.code().unwrap_or_else(|| panic!("GET {path}: {e}")), Value::Null),
    }
}

#[tokio::test]
async fn deployment_api_answers_from_the_cache() {
    let mut server = Server::start("example-deployment-api", Backend::Memory, &[]).await;
    create_namespace(&server, "develop").await;
    let deployments = api(&server, ApiResource::deployments(), Some("develop"));
    deployments.create(&deployment("nginx", 2, "nginx:1.27")).await.unwrap();

    let mut example = Example::start("deployment_api", &server, &["--addr", "127.0.0.1:0"]);
    let serving = example.wait_for_prefix("serving deployments on ").await;
    let http = Client::new(Config::new(serving.trim_start_matches("serving deployments on "))).unwrap();

    let (code, body) = get_json(&http, "/deployments/develop").await;
    assert_eq!(code, 200);
    assert_eq!(
        body,
        json!([{
            "namespace": "develop", "name": "nginx", "replicas": 2, "readyReplicas": 0, "availableReplicas": 0,
            "images": ["nginx:1.27"],
        }])
    );
    assert_eq!(get_json(&http, "/deployments/default").await, (200, json!([])));
    assert_eq!(get_json(&http, "/deployments/develop/missing").await.0, 404);

    // A change reaches the answers through the watch.
    deployments.patch_merge("nginx", &json!({"spec": {"replicas": 4}})).await.unwrap();
    eventually("the scaled deployment served", || async {
        let (_, body) = get_json(&http, "/deployments/develop/nginx").await;
        (body["replicas"] == 4).then_some(())
    })
    .await;
    assert_eq!(get_json(&http, "/deployments").await.1.as_array().map(Vec::len), Some(1));

    // Served from the cache: with the API server gone, the answers stay.
    server.kill();
    let (code, body) = get_json(&http, "/deployments/develop").await;
    assert_eq!((code, body[0]["name"].as_str(), body[0]["replicas"].as_i64()), (200, Some("nginx"), Some(4)));
}

#[tokio::test]
async fn deployment_controller_scales_pods_to_match_kubectl_scale() {
    let server = Server::start("example-deployment-controller", Backend::Memory, &[]).await;
    let pods = api(&server, ApiResource::pods(), Some("default"));
    let deployments = api(&server, ApiResource::deployments(), Some("default"));

    let mut example = Example::start("deployment_controller", &server, &[]);
    example.wait_for_prefix("deployment controller started").await;

    kubectl(&server, &["create", "deployment", "nginx", "--image=nginx"]).await;
    example.wait_for_line("deployment default/nginx status: 1 replicas, 1 updated, 1 ready, 1 available").await;
    kubectl(&server, &["scale", "deployment/nginx", "--replicas=3"]).await;
    example.wait_for_line("deployment default/nginx status: 3 replicas, 3 updated, 3 ready, 3 available").await;

    // Exactly three pods were ever created, each seen by the pod handler.
    let created: Vec<String> =
        example.lines().iter().filter_map(|l| l.strip_prefix("created pod default/").map(str::to_owned)).collect();
    assert_eq!(created.len(), 3, "{}", example.report());
    for name in &created {
        assert!(name.starts_with("nginx-"), "pod name {name}");
        assert_eq!(example.count(|l| l == format!("pod added: default/{name} (Pending)")), 1, "{}", example.report());
    }

    // The server agrees: three running pods owned by the deployment, and its status.
    let deployment = deployments.get("nginx").await.unwrap();
    let uid = deployment.uid().unwrap().to_owned();
    let mut on_server: Vec<String> = pods
        .list(&ListParams::default().labels("app=nginx"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|pod| {
            let owner = &pod.pointer("/metadata/ownerReferences/0").expect("an owner reference");
            assert_eq!(
                (&owner["kind"], &owner["name"], &owner["uid"]),
                (&json!("Deployment"), &json!("nginx"), &json!(uid))
            );
            assert_eq!(owner["controller"], true);
            assert_eq!(pod.pointer("/status/phase"), Some(&json!("Running")));
            pod.name().to_owned()
        })
        .collect();
    on_server.sort();
    let mut expected = created.clone();
    expected.sort();
    assert_eq!(on_server, expected);
    let status = deployment.pointer("/status").unwrap();
    for field in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
        assert_eq!(status[field], 3, "status.{field} in {status}");
    }
    assert_eq!(status["observedGeneration"], deployment.0["metadata"]["generation"]);

    // What kubectl shows.
    let shown = kubectl(&server, &["get", "deployment", "nginx", "--no-headers"]).await;
    let columns: Vec<&str> = shown.split_whitespace().collect();
    assert_eq!(columns[..4], ["nginx", "3/3", "3", "3"], "kubectl get deployment: {shown}");
    let shown = kubectl(&server, &["get", "pods", "--no-headers"]).await;
    assert_eq!(shown.lines().count(), 3, "kubectl get pods: {shown}");
    for line in shown.lines() {
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(columns[1..3], ["1/1", "Running"], "kubectl get pods: {shown}");
    }

    // Down to one: the two newest go, nothing is created.
    let printed = example.lines().len();
    kubectl(&server, &["scale", "deployment/nginx", "--replicas=1"]).await;
    let status = "deployment default/nginx status: 1 replicas, 1 updated, 1 ready, 1 available";
    example.wait_for_line_after(printed, status).await;
    assert_eq!(example.count(|l| l.starts_with("deleted pod default/nginx-")), 2, "{}", example.report());
    assert_eq!(example.count(|l| l.starts_with("created pod ")), 3, "{}", example.report());
    assert_eq!(pods.list(&ListParams::default()).await.unwrap().items.len(), 1);

    // Deleting the deployment deletes its pod (the server's garbage collector), and the pod
    // handler says so.
    let survivor = pods.list(&ListParams::default()).await.unwrap().items[0].name().to_owned();
    kubectl(&server, &["delete", "deployment", "nginx"]).await;
    example.wait_for_line(&format!("pod deleted: default/{survivor}")).await;
    assert_eq!(example.count(|l| l.starts_with("created pod ")), 3, "{}", example.report());
}
