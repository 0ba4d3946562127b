//! Multi-member etcd clusters (`EtcdCluster`) and listwatch servers on them: a cluster starts
//! with a leader, the leadership moves where it is sent, a killed leader is replaced and writes
//! go on, a killed member catches up after its restart, and servers sharing a cluster and a
//! prefix see each other's writes. The servers are the real binary (`LISTWATCH_BIN`, as
//! scripts/test.sh sets it).

mod support;

use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use listwatch_testkit::etcd::{EtcdCluster, EtcdMember, EtcdProcessOptions, unique_prefix};
use listwatch_testkit::server::Server;
use support::{CMS, create_configmap, request, runs};

/// How long a cluster may take to replace a killed leader: etcd's election timeout is 1 s, and
/// on a loaded machine an election may take a few rounds.
const ELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a server may take to see another server's write (through its watch cache).
const CONVERGENCE_TIMEOUT: Duration = Duration::from_secs(10);

async fn three_members() -> EtcdCluster {
    EtcdCluster::start(3, EtcdProcessOptions::default()).await
}

/// A listwatch server on `cluster`, with its keys under `prefix`.
async fn server_on(cluster: &EtcdCluster, prefix: &str) -> Server {
    Server::builder().etcd_endpoints(cluster.endpoints(), prefix).start().await
}

/// Creates ConfigMap `name` through `server`, trying again while it answers 503 (during a
/// leader election etcd itself may refuse for a moment), as a client of kube-apiserver would. Returns how many 503s came first; panics on any other answer, or after
/// [`CONVERGENCE_TIMEOUT`].
async fn create_configmap_despite_unavailable(server: &Server, name: &str) -> usize {
    let deadline = Instant::now() + CONVERGENCE_TIMEOUT;
    let mut unavailable = 0;
    loop {
        let (code, body) = request(server, "POST", CMS, &format!(r#"{{"metadata":{{"name":"{name}"}}}}"#)).await;
        match code {
            201 => return unavailable,
            503 if Instant::now() < deadline => unavailable += 1,
            _ => panic!("creating {name} after {unavailable} answers 503: {code} {body}"),
        }
    }
}

/// Waits until a LIST of ConfigMaps through `server` names `name`; panics after
/// [`CONVERGENCE_TIMEOUT`].
async fn wait_until_listed(server: &Server, name: &str) {
    let deadline = Instant::now() + CONVERGENCE_TIMEOUT;
    let wanted = format!(r#""name":"{name}""#);
    loop {
        let (code, body) = request(server, "GET", CMS, "").await;
        if code == 200 && body.contains(&wanted) {
            return;
        }
        assert!(Instant::now() < deadline, "{name} is not listed within {CONVERGENCE_TIMEOUT:?}: {code} {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_member_cluster_starts_with_a_leader_and_leaves_nothing_behind() {
    let started = Instant::now();
    let cluster = three_members().await;
    eprintln!("a 3-member etcd cluster started in {:?}", started.elapsed());

    assert_eq!(cluster.members().len(), 3);
    assert_eq!(cluster.endpoints().len(), 3);
    let leader = cluster.leader().await.expect("a leader once started");
    let statuses = cluster.statuses().await;
    for (member, status) in cluster.members().iter().zip(&statuses) {
        let status = status.unwrap_or_else(|| panic!("{} answers", member.name()));
        assert_eq!(status.member_id, member.id());
        assert_eq!(status.leader_id, cluster.member(leader).id(), "{} follows the leader", member.name());
    }
    let mut ids: Vec<u64> = cluster.members().iter().map(EtcdMember::id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "distinct member ids: {ids:?}");

    let pids: Vec<u32> = cluster.members().iter().map(|m| m.pid().expect("running")).collect();
    let dirs: Vec<_> = cluster.members().iter().map(|m| m.data_dir().to_owned()).collect();
    drop(cluster);
    for pid in pids {
        assert!(!runs(pid), "etcd {pid} still runs");
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_leader_hands_the_leadership_to_the_named_member() {
    let cluster = three_members().await;
    let leader = cluster.leader().await.expect("a leader");
    // Twice: to each of the other two members.
    for to in (0..3).filter(|&i| i != leader) {
        cluster.move_leader(to).await;
        assert_eq!(cluster.leader().await, Some(to));
    }
    // To the leader itself: nothing to do.
    let leader = cluster.leader().await.expect("a leader");
    cluster.move_leader(leader).await;
    assert_eq!(cluster.leader().await, Some(leader));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_and_writes_through_a_server_go_on() {
    let mut cluster = three_members().await;
    let server = server_on(&cluster, &format!("{}registry", unique_prefix("leader-killed"))).await;
    create_configmap(&server, "before").await;

    let killed = cluster.kill_leader().await;
    let since_kill = Instant::now();
    let leader = cluster.wait_for_leader(ELECTION_TIMEOUT).await;
    eprintln!("a new leader was elected {:?} after the old one was killed", since_kill.elapsed());
    assert_ne!(leader, killed);
    assert!(!cluster.member(killed).is_running());

    let unavailable = create_configmap_despite_unavailable(&server, "after").await;
    eprintln!("the first write after the new leader settled succeeded after {unavailable} answers 503");
    wait_until_listed(&server, "after").await;
    wait_until_listed(&server, "before").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_restarts_and_catches_up() {
    let mut cluster = three_members().await;
    let leader = cluster.leader().await.expect("a leader");
    let follower = (leader + 1) % 3;
    let prefix = unique_prefix("catch-up");

    cluster.kill(follower).await;
    let running: Vec<String> =
        (0..3).filter(|&i| i != follower).map(|i| cluster.member(i).endpoint().to_owned()).collect();
    let mut client = Client::connect(&running, None).await.expect("connect to the running members");
    let mut last_revision = 0;
    for i in 0..20 {
        let put = client.put(format!("{prefix}{i}"), "missed", None).await.expect("a write without the follower");
        last_revision = put.header().expect("a header").revision();
    }

    cluster.restart(follower).await;
    assert!(cluster.member(follower).is_running());
    // Read from the restarted member alone, serializably: what it has applied itself.
    let mut restarted = Client::connect([cluster.member(follower).endpoint()], None).await.expect("connect");
    let deadline = Instant::now() + CONVERGENCE_TIMEOUT;
    loop {
        let status = cluster.status(follower).await;
        let missed = restarted
            .get(prefix.as_str(), Some(GetOptions::new().with_prefix().with_count_only().with_serializable()))
            .await
            .expect("a serializable read");
        if missed.count() == 20 && status.is_some_and(|s| s.revision >= last_revision) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted member has {} of 20 keys and {status:?} (last write at {last_revision})",
            missed.count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_cluster_and_prefix_see_each_others_writes() {
    let cluster = three_members().await;
    let prefix = format!("{}registry", unique_prefix("shared-prefix"));
    let one = server_on(&cluster, &prefix).await;
    let two = server_on(&cluster, &prefix).await;
    let joined = cluster.endpoints().join(",");
    for server in [&one, &two] {
        assert!(server.args().windows(2).any(|w| w[0] == "--etcd" && w[1] == joined), "{:?}", server.args());
        assert!(server.args().windows(2).any(|w| w[0] == "--etcd-prefix" && w[1] == prefix), "{:?}", server.args());
    }

    create_configmap(&one, "from-one").await;
    wait_until_listed(&two, "from-one").await;
    create_configmap(&two, "from-two").await;
    wait_until_listed(&one, "from-two").await;
    // One store: the name is taken for both.
    let (code, body) = request(&two, "POST", CMS, r#"{"metadata":{"name":"from-one"}}"#).await;
    assert_eq!(code, 409, "{body}");
}

/// With one member of three down the cluster has a quorum, so every write succeeds, as it does
/// through kube-apiserver (Go's gRPC balancer skips a member it cannot connect to). storage's
/// etcd-client balances over one tonic channel whose reconnecting endpoints count as ready when
/// they cannot connect (grpc/grpc-rust#2839), so about a third of requests used to fail with
/// 503 "etcd: Unavailable: tcp connect error"; storage now sends a request that could not
/// connect, or that hyper cancelled before sending, again (it never reached etcd).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_succeeds_while_a_member_is_down() {
    let mut cluster = three_members().await;
    let server = server_on(&cluster, &format!("{}registry", unique_prefix("member-down"))).await;
    let leader = cluster.leader().await.expect("a leader");
    cluster.kill((leader + 1) % 3).await;
    cluster.wait_for_leader(ELECTION_TIMEOUT).await;
    let mut failures = Vec::new();
    for i in 0..20 {
        let (code, body) = request(&server, "POST", CMS, &format!(r#"{{"metadata":{{"name":"w{i}"}}}}"#)).await;
        if code != 201 {
            failures.push(format!("w{i}: {code} {body}"));
        }
    }
    assert!(failures.is_empty(), "{} of 20 writes failed: {failures:#?}", failures.len());
}
