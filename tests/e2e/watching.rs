//! WATCH end to end: kubectl's watches, many watchers, slow watchers, resuming from
//! bookmarks, 410s on both watch paths, and etcd restarting under a watch.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, event_rv, metric, summary};

on_both_backends!(
    kubectl_get_w_sees_changes,
    concurrent_watchers_see_identical_sequences,
    slow_watcher_is_closed_and_nobody_else_waits,
    resume_from_bookmark_misses_and_repeats_nothing,
    watch_from_before_the_window_gets_410,
    uncached_watch_past_compaction_gets_410,
    client_disconnect_frees_the_watcher,
    watch_headers_and_timeout,
);

mod etcd_restart {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_watcher_misses_an_event() {
        super::etcd_killed_mid_stream().await;
    }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const SECONDS: Duration = Duration::from_secs(10);

async fn create(server: &Server, name: &str, data: Value) -> i64 {
    let (code, body) = server.post_json(CMS, &json!({"metadata": {"name": name}, "data": data})).await;
    assert_eq!(code, 201, "{body}");
    body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

async fn patch(server: &Server, name: &str, data: Value) -> i64 {
    let (code, body) = server
        .send("PATCH", &format!("{CMS}/{name}"), "application/merge-patch+json", json!({"data": data}).to_string())
        .await;
    assert_eq!(code, 200, "{body}");
    body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

async fn delete(server: &Server, name: &str) {
    let (code, body) = server.send("DELETE", &format!("{CMS}/{name}"), "application/json", "").await;
    assert_eq!(code, 200, "{body}");
}

async fn current_rv(server: &Server) -> i64 {
    let (_, list) = server.get(CMS).await;
    list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// Lines a long-running kubectl prints, one at a time, with a timeout.
/// (The child is kept so that it lives, and is killed, with the lines.)
struct Lines(tokio::io::Lines<BufReader<tokio::process::ChildStdout>>, #[allow(dead_code)] tokio::process::Child);

impl Lines {
    async fn next(&mut self) -> String {
        tokio::time::timeout(SECONDS, self.0.next_line())
            .await
            .expect("kubectl printed a line in time")
            .unwrap()
            .expect("a line")
    }
}

async fn kubectl_get_w_sees_changes(backend: Backend) {
    let server = Server::start("watch-kubectl", backend, &[]).await;
    let k = server.kubectl();
    create(&server, "before", json!({"a": "1"})).await;
    let mut cmd = k.command(&["get", "configmaps", "-w", "--output-watch-events"]);
    cmd.stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = Lines(BufReader::new(child.stdout.take().unwrap()).lines(), child);
    let header = lines.next().await;
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["EVENT", "NAME", "DATA", "AGE"], "{header}");
    let first = lines.next().await;
    assert_eq!(first.split_whitespace().take(2).collect::<Vec<_>>(), ["ADDED", "before"], "{first}");
    // Another kubectl changes things; this one sees each change.
    k.run_with_input(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: live}\ndata: {a: '1'}\n",
    )
    .await
    .ok();
    let added = lines.next().await;
    assert!(added.starts_with("ADDED") && added.contains(" live "), "{added}");
    k.run(&["patch", "configmap", "live", "--type=merge", "-p", "{\"data\":{\"b\":\"2\"}}"]).await.ok();
    let modified = lines.next().await;
    assert!(modified.starts_with("MODIFIED") && modified.split_whitespace().nth(2) == Some("2"), "{modified}");
    k.run(&["delete", "configmap", "live"]).await.ok();
    assert!(lines.next().await.starts_with("DELETED"));
    drop(lines);

    // A named object: `kubectl get configmap NAME -w` prints its changes only.
    let mut cmd = k.command(&["get", "configmap", "before", "-w"]);
    cmd.stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = Lines(BufReader::new(child.stdout.take().unwrap()).lines(), child);
    assert!(lines.next().await.starts_with("NAME"));
    assert!(lines.next().await.starts_with("before"));
    create(&server, "other", json!({})).await;
    k.run(&["label", "configmap", "before", "x=y"]).await.ok();
    let line = lines.next().await;
    assert!(line.starts_with("before "), "only the named object: {line}");
}

async fn concurrent_watchers_see_identical_sequences(backend: Backend) {
    let server = Server::start("watch-200", backend, &[]).await;
    let start = create(&server, "seed", json!({})).await;
    let mut watches = Vec::new();
    for _ in 0..200 {
        watches.push(Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await);
    }
    let mut last = 0;
    // 31 writes, the last a create: its resourceVersion is the last event's. (Storage's
    // current revision is not: on the shared etcd other tests' writes move it too.)
    for i in 0..31 {
        last = match i % 3 {
            0 => create(&server, &format!("c{i}"), json!({"i": i.to_string()})).await,
            1 => patch(&server, "seed", json!({"i": i.to_string()})).await,
            _ => {
                delete(&server, &format!("c{}", i - 2)).await;
                last
            }
        };
    }
    let sequences =
        futures::future::join_all(watches.iter_mut().map(|w| w.until_rv(last, Duration::from_secs(30)))).await;
    let first: Vec<_> = sequences[0].iter().map(summary).collect();
    assert_eq!(first.len(), 31);
    assert!(first.windows(2).all(|w| w[0].2 < w[1].2), "in resourceVersion order: {first:?}");
    for s in &sequences {
        assert_eq!(s.iter().map(summary).collect::<Vec<_>>(), first);
    }
}

/// A watch on a raw socket with a small receive buffer that is never read.
async fn stuck_watch(server: &Server, rv: i64) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = format!("GET {CMS}?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    stream
}

async fn slow_watcher_is_closed_and_nobody_else_waits(backend: Backend) {
    let server = Server::start("watch-slow", backend, &["--watcher-queue", "10"]).await;
    let start = current_rv(&server).await;
    let _stuck = stuck_watch(&server, start).await;
    let mut fast = Vec::new();
    for _ in 0..3 {
        fast.push(Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await);
    }
    let readers: Vec<_> = fast
        .into_iter()
        .map(|mut w| tokio::spawn(async move { (w.until_rv(i64::MAX, Duration::from_secs(60)).await, w) }))
        .collect();
    // ~10 KiB objects, as fast as the server takes them; the writer never waits on watchers.
    let blob = "x".repeat(10 * 1024);
    let mut revisions = Vec::new();
    let mut slowest = Duration::ZERO;
    for i in 0..400 {
        let t = Instant::now();
        revisions.push(create(&server, &format!("big-{i:03}"), json!({"blob": blob})).await);
        slowest = slowest.max(t.elapsed());
    }
    assert!(slowest < Duration::from_secs(2), "a write waited {slowest:?}");
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        while metric(&server, "apiserver_terminated_watchers_total", "resource=\"configmaps\"").await < 1.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "the stuck watcher was never closed");
    // The fast ones lost nothing: every event, in order. (until_rv(MAX) never returns by itself:
    // read exactly the events we wrote.)
    for reader in readers {
        reader.abort();
    }
    for _ in 0..3 {
        let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await;
        let events = w.until_rv(*revisions.last().unwrap(), Duration::from_secs(30)).await;
        assert_eq!(events.iter().map(event_rv).collect::<Vec<_>>(), revisions);
    }
}

async fn resume_from_bookmark_misses_and_repeats_nothing(backend: Backend) {
    let server = Server::start("watch-bookmark-resume", backend, &["--bookmark-interval", "1s"]).await;
    let start = current_rv(&server).await;
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&allowWatchBookmarks=true&resourceVersion={start}")).await;
    let mut delivered = Vec::new();
    for i in 0..5 {
        create(&server, &format!("b{i}"), json!({})).await;
    }
    // Read until a bookmark that follows the events.
    let bookmark = loop {
        let event = w.next(SECONDS).await.expect("the watch is open");
        let at = event_rv(&event);
        if event["type"] == "BOOKMARK" {
            assert_eq!(event["object"]["kind"], "ConfigMap");
            assert!(delivered.iter().all(|rv| *rv <= at), "a bookmark never goes below an event sent");
            if delivered.len() == 5 {
                break at;
            }
        } else {
            delivered.push(at);
        }
    };
    drop(w);
    let mut after = Vec::new();
    for i in 5..8 {
        after.push(create(&server, &format!("b{i}"), json!({})).await);
    }
    let mut resumed = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={bookmark}")).await;
    let events = resumed.until_rv(*after.last().unwrap(), SECONDS).await;
    assert_eq!(events.iter().map(event_rv).collect::<Vec<_>>(), after);
}

async fn watch_from_before_the_window_gets_410(backend: Backend) {
    let server = Server::start("watch-410-cache", backend, &[]).await;
    let old = create(&server, "a", json!({})).await;
    create(&server, "b", json!({})).await;
    // A relist starts a new window at the current revision.
    server.debug("cache/reset?resource=configmaps").await;
    let deadline = Instant::now() + SECONDS;
    let mut w = loop {
        let w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={}", old - 1)).await;
        if w.status != 429 {
            break w;
        }
        assert!(Instant::now() < deadline, "the cache never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(w.status, 200);
    let error = w.next(SECONDS).await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert!(
        error["object"]["message"].as_str().unwrap().starts_with(&format!("too old resource version: {} (", old - 1))
    );
    assert!(w.next(SECONDS).await.is_none(), "the stream ends after the ERROR");
}

async fn uncached_watch_past_compaction_gets_410(backend: Backend) {
    // Compaction is global: on etcd, use a private one.
    let backend = if backend == Backend::Etcd { Backend::PrivateEtcd } else { backend };
    let server = Server::start("watch-410-uncached", backend, &["--watch-cache=false"]).await;
    let old = create(&server, "a", json!({})).await;
    create(&server, "b", json!({})).await;
    server.debug("compact").await;
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={}", old - 1)).await;
    assert_eq!(w.status, 200);
    let error = w.next(SECONDS).await.expect("an ERROR event");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["message"], "The resourceVersion for the provided watch is too old.");
    assert!(w.next(SECONDS).await.is_none());
    // From the current revision the uncached path proxies changes as they come.
    let now = current_rv(&server).await;
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={now}")).await;
    let rv = patch(&server, "a", json!({"k": "v"})).await;
    let events = w.until_rv(rv, SECONDS).await;
    assert_eq!(events.iter().map(summary).collect::<Vec<_>>(), [("MODIFIED".to_string(), "a".to_string(), rv)]);
}

async fn client_disconnect_frees_the_watcher(backend: Backend) {
    let server = Server::start("watch-disconnect", backend, &[]).await;
    let labels = "kind=\"ConfigMap\"";
    let w = Watch::open(&server, &format!("{CMS}?watch=1")).await;
    assert_eq!(metric(&server, "apiserver_registered_watchers", labels).await, 1.0);
    drop(w);
    let freed = tokio::time::timeout(SECONDS, async {
        while metric(&server, "apiserver_registered_watchers", labels).await != 0.0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(freed.is_ok(), "the watcher stayed registered after its client left");
}

async fn etcd_killed_mid_stream() {
    let mut server = Server::start("watch-etcd-restart", Backend::PrivateEtcd, &[]).await;
    let start = current_rv(&server).await;
    let mut cached = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={start}")).await;
    let mut revisions = Vec::new();
    for i in 0..20 {
        revisions.push(create(&server, &format!("e{i}"), json!({})).await);
    }
    let etcd = server.etcd.as_mut().unwrap();
    etcd.kill().await;
    etcd.restart().await;
    // Writes succeed again once etcd is back (the client reconnects by itself).
    for i in 20..40 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (code, body) = server.post_json(CMS, &json!({"metadata": {"name": format!("e{i}")}})).await;
            if code == 201 {
                revisions.push(body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap());
                break;
            }
            assert!(Instant::now() < deadline, "etcd never came back: {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let events = cached.until_rv(*revisions.last().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(events.iter().map(event_rv).collect::<Vec<_>>(), revisions, "every event exactly once");
    server.kill();
}

async fn watch_headers_and_timeout(backend: Backend) {
    let server = Server::start("watch-headers", backend, &[]).await;
    let started = Instant::now();
    // Headers arrive at once, before any event exists.
    let mut w =
        Watch::open(&server, &format!("{CMS}?watch&resourceVersion={}&timeoutSeconds=1", current_rv(&server).await))
            .await;
    assert_eq!(w.status, 200);
    assert_eq!(w.headers["content-type"], "application/json");
    assert_eq!(w.headers["cache-control"], "no-cache, private");
    assert_eq!(w.headers["transfer-encoding"], "chunked");
    // At the deadline the body simply ends.
    assert!(w.next(SECONDS).await.is_none());
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "{took:?}");
}

mod timing {
    use crate::support::Backend;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn future_resource_version_waits() {
        super::future_resource_version_waits(Backend::Memory).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bookmark_two_seconds_before_the_deadline() {
        super::bookmark_before_the_deadline(Backend::Memory).await;
    }
}

/// A watch from a resourceVersion the server has not reached is accepted and waits for it.
async fn future_resource_version_waits(backend: Backend) {
    let server = Server::start("watch-future-rv", backend, &[]).await;
    let now = current_rv(&server).await;
    let mut w = Watch::open(&server, &format!("{CMS}?watch=1&resourceVersion={}", now + 3)).await;
    assert_eq!(w.status, 200);
    let mut revisions = Vec::new();
    for i in 0..6 {
        revisions.push(create(&server, &format!("f{i}"), json!({})).await);
    }
    // Only the changes after the requested resourceVersion.
    let events = w.until_rv(*revisions.last().unwrap(), SECONDS).await;
    let want: Vec<i64> = revisions.iter().copied().filter(|rv| *rv > now + 3).collect();
    assert_eq!(events.iter().map(event_rv).collect::<Vec<_>>(), want);
}

/// A watch that asked for bookmarks gets one about 2 s before its deadline, even with the
/// periodic bookmark a minute away.
async fn bookmark_before_the_deadline(backend: Backend) {
    let server = Server::start("watch-deadline-bookmark", backend, &[]).await;
    let now = create(&server, "before", json!({})).await;
    let started = Instant::now();
    let mut w = Watch::open(
        &server,
        &format!("{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion={}", now - 1),
    )
    .await;
    let added = w.next(SECONDS).await.unwrap();
    assert_eq!(added["type"], "ADDED");
    let bookmark = w.next(SECONDS).await.expect("a bookmark before the end");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert!(event_rv(&bookmark) >= now);
    let at = started.elapsed();
    assert!(at >= Duration::from_millis(1500) && at < Duration::from_millis(3500), "bookmark at {at:?}");
    assert!(w.next(SECONDS).await.is_none(), "then the stream ends at the deadline");
}
