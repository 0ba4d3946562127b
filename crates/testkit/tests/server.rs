//! The harness against the real binary (`LISTWATCH_BIN`, as scripts/test.sh sets it): what each
//! backend keeps across a restart, the address the server reports, TLS readiness, a failed start
//! that says why, a graceful stop, and a drop that leaves nothing behind.

mod support;

use listwatch_testkit::server::{Backend, Server};
use support::{configmap_code, create_configmap, request, runs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_server_keeps_its_data_and_address_across_restarts() {
    let mut server = Server::builder().name("harness-durable").backend(Backend::Memory).start().await;
    assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
    assert_ne!(server.url, "http://127.0.0.1:0");
    assert!(server.dir.path().join("data").is_dir(), "the data dir is in the server's dir");
    create_configmap(&server, "kept").await;
    let (url, pid) = (server.url.clone(), server.pid());

    server.kill();
    assert!(!server.is_running());
    server.restart().await;
    assert!(server.is_running());
    assert_eq!(server.url, url, "a restart keeps the address");
    assert_ne!(server.pid(), pid);
    assert_eq!(configmap_code(&server, "kept").await, 200, "a restart keeps the data");
    assert_eq!(server.log().matches("listwatch is serving on").count(), 2, "the log spans both runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_server_forgets_at_restart() {
    let mut server = Server::builder().backend(Backend::Ephemeral).start().await;
    assert!(server.args().iter().any(|a| a == "--ephemeral"), "{:?}", server.args());
    create_configmap(&server, "forgotten").await;
    server.restart().await;
    assert_eq!(configmap_code(&server, "forgotten").await, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_the_shared_etcd_see_only_their_own_objects() {
    let one = Server::builder().name("harness-shared").backend(Backend::Etcd).start().await;
    let two = Server::builder().name("harness-shared").backend(Backend::Etcd).start().await;
    let prefix = |server: &Server| {
        let args = server.args();
        let at = args.iter().position(|a| a == "--etcd-prefix").expect("an --etcd-prefix");
        args[at + 1].clone()
    };
    assert!(prefix(&one).starts_with("/lwtest/harness-shared-"), "{}", prefix(&one));
    assert_ne!(prefix(&one), prefix(&two));
    create_configmap(&one, "mine").await;
    assert_eq!(configmap_code(&one, "mine").await, 200);
    assert_eq!(configmap_code(&two, "mine").await, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_etcd_lives_and_dies_with_its_server() {
    let server = Server::builder().backend(Backend::PrivateEtcd).start().await;
    let etcd = server.etcd.as_ref().expect("a private etcd");
    assert!(server.args().iter().any(|a| a == etcd.endpoint()), "{:?}", server.args());
    let etcd_pid = etcd.pid().expect("etcd runs");
    create_configmap(&server, "on-etcd").await;
    drop(server);
    assert!(!runs(etcd_pid), "etcd {etcd_pid} still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_server_is_ready_when_started() {
    let server = Server::builder().args(["--tls-generate"]).start().await;
    assert!(server.url.starts_with("https://127.0.0.1:"), "{}", server.url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_says_why() {
    let error = Server::builder().args(["--no-such-flag"]).try_start().await.expect_err("an unknown flag");
    let error = error.to_string();
    assert!(error.contains("exited"), "{error}");
    assert!(error.contains("unexpected argument '--no-such-flag'"), "the log is in the error: {error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_replace_the_harness_defaults() {
    let server = Server::builder().args(["--compaction-interval=5m"]).debug_api(false).start().await;
    let args = server.args();
    assert!(!args.iter().any(|a| a == "--compaction-interval"), "{args:?}");
    assert!(!args.iter().any(|a| a == "--enable-debug-api"), "{args:?}");
    let (code, _) = request(&server, "POST", "/debug/listwatch/compact", "").await;
    assert_eq!(code, 404, "no debug API");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_is_graceful_and_drop_leaves_nothing_behind() {
    let mut server = Server::builder().backend(Backend::Memory).start().await;
    server.stop().await;
    assert!(!server.is_running());
    assert!(server.log().contains("stopped"), "a SIGTERM shuts down cleanly:\n{}", server.log());

    server.restart().await;
    let (pid, dir) = (server.pid(), server.dir.path().to_owned());
    drop(server);
    assert!(!runs(pid), "the server {pid} still runs");
    assert!(!dir.exists(), "{} is left behind", dir.display());
}
