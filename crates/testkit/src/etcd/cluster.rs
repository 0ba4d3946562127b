//! A private etcd cluster of several members on 127.0.0.1, for tests of what a kube-apiserver
//! meets in production and a single etcd never shows: a leader that moves (gracefully, as
//! `etcdctl move-leader` does) or dies, a member that falls behind and catches up, and several
//! apiservers sharing one cluster.
//!
//! Each member is one `scripts/etcd.sh start` (see [`super`]), tied to the test process like an
//! [`EtcdProcess`](super::EtcdProcess). Every member must know every peer URL before any of them
//! runs, so the cluster picks all the ports first, then starts the members concurrently (a
//! member becomes healthy only once a quorum runs). Who leads is asked of the members themselves
//! ([`status`]).

mod status;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

pub use status::MemberStatus;

use super::{
    EtcdProcessOptions, Launch, MemberFlags, Started, fresh_data_dir, kill_and_remove, random_u64, run_stop,
    signal_kill, try_run_start, wait_gone,
};
use crate::process::is_alive;

/// How many times [`EtcdCluster::start`] tries again with other ports when one was taken between
/// picking it and etcd binding it.
const START_ATTEMPTS: usize = 3;

/// How long a started (or restarted) cluster may take to agree on a leader.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`EtcdCluster::kill_leader`] and [`EtcdCluster::move_leader`] wait for a leader, and
/// a moved leadership for its new leader. etcd's election timeout is 1 s; elections on a loaded
/// machine can take several rounds.
const LEADER_TIMEOUT: Duration = Duration::from_secs(15);

/// The pause between two rounds of status requests while waiting for a leader.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// A private etcd cluster: `n` members on fresh data dirs and free loopback ports. A test may
/// kill, stop and restart members, and move or kill the leader. Dropping it kills every member
/// and removes their data dirs.
///
/// Members are numbered `0..n` (named `m0`, `m1`, ...); every method that takes a member index
/// panics on one out of range.
#[derive(Debug)]
pub struct EtcdCluster {
    options: EtcdProcessOptions,
    /// `--initial-cluster`: every member's name and peer URL.
    initial_cluster: String,
    /// `--initial-cluster-token`: unique, so that members of different clusters never talk.
    token: String,
    members: Vec<EtcdMember>,
}

/// One member of an [`EtcdCluster`]: its name, ports and data dir stay across restarts.
#[derive(Debug)]
pub struct EtcdMember {
    name: String,
    endpoint: String,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
    /// `None` while stopped or killed.
    pid: Option<u32>,
    /// The raft member id, learned once the cluster runs (0 before).
    id: u64,
}

impl EtcdMember {
    /// `m0`, `m1`, ...: etcd's `--name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://127.0.0.1:<client port>`; the same across restarts.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `http://127.0.0.1:<peer port>`, where the other members reach it.
    pub fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Where this member keeps its data; kept across restarts.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The running etcd's pid (`None` while stopped or killed).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the member's process runs.
    pub fn is_running(&self) -> bool {
        self.pid.is_some_and(is_alive)
    }

    /// The member's raft id, as etcd reports it in response headers and statuses.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl EtcdCluster {
    /// Starts a cluster of `members` members (fetching etcd on first use) and waits until every
    /// member answers and follows one leader. `options` apply to every member. Panics if it
    /// cannot.
    pub async fn start(members: usize, options: EtcdProcessOptions) -> EtcdCluster {
        assert!(members > 0, "a cluster needs at least one member");
        let mut clash = String::new();
        for _ in 0..START_ATTEMPTS {
            match EtcdCluster::try_launch(members, &options).await {
                Ok(mut cluster) => {
                    cluster.settle().await;
                    return cluster;
                }
                // Someone took a port between our pick and etcd's bind: pick again.
                Err(e) if e.contains("address already in use") => clash = e,
                Err(e) => panic!("could not start a {members}-member etcd cluster:\n{e}"),
            }
        }
        panic!("could not start a {members}-member etcd cluster: ports kept clashing; the last attempt:\n{clash}")
    }

    /// Picks the ports, makes the data dirs and starts every member; on any failure, stops
    /// those that started (dropping the cluster) and returns every member's error.
    async fn try_launch(members: usize, options: &EtcdProcessOptions) -> Result<EtcdCluster, String> {
        let ports = free_ports(2 * members);
        let members: Vec<EtcdMember> = (0..members)
            .map(|i| {
                let client_port = ports[2 * i];
                EtcdMember {
                    name: format!("m{i}"),
                    endpoint: format!("http://127.0.0.1:{client_port}"),
                    client_port,
                    peer_port: ports[2 * i + 1],
                    data_dir: fresh_data_dir(options.data_dir_parent.as_deref()),
                    pid: None,
                    id: 0,
                }
            })
            .collect();
        let initial_cluster =
            members.iter().map(|m| format!("{}={}", m.name, m.peer_url())).collect::<Vec<_>>().join(",");
        let mut cluster = EtcdCluster {
            options: options.clone(),
            initial_cluster,
            token: format!("listwatch-{:016x}", random_u64()),
            members,
        };
        let all: Vec<usize> = (0..cluster.members.len()).collect();
        cluster.launch(&all, "new").await?;
        Ok(cluster)
    }

    /// Runs `etcd.sh start` for these members concurrently (each waits for a quorum, so they
    /// must start together), and records their pids. The error lists every member that failed.
    async fn launch(&mut self, members: &[usize], state: &'static str) -> Result<(), String> {
        let tasks: Vec<_> = members
            .iter()
            .map(|&i| {
                let member = &self.members[i];
                let launch = Launch {
                    data_dir: Some(member.data_dir.clone()),
                    // The first start's watchdog removes the dir if this process dies first.
                    cleanup_data_dir: state == "new",
                    client_port: Some(member.client_port),
                    member: Some(MemberFlags {
                        name: member.name.clone(),
                        peer_port: member.peer_port,
                        initial_cluster: self.initial_cluster.clone(),
                        state,
                        token: self.token.clone(),
                    }),
                };
                let options = self.options.clone();
                (i, tokio::spawn(async move { try_run_start(&options, &launch).await }))
            })
            .collect();
        let mut errors = Vec::new();
        for (i, task) in tasks {
            match task.await {
                Ok(Ok(Started { endpoint, pid })) => {
                    assert_eq!(endpoint, self.members[i].endpoint, "etcd.sh start must use the given client port");
                    self.members[i].pid = Some(pid);
                }
                Ok(Err(e)) => errors.push(format!("member {}: {e}", self.members[i].name)),
                Err(e) => errors.push(format!("member {}: the start task failed: {e}", self.members[i].name)),
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(errors.join("\n")) }
    }

    /// Waits until every running member answers and follows one leader; learns the members'
    /// ids on the way. Panics with the members' statuses if that takes too long.
    async fn settle(&mut self) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let statuses = self.statuses().await;
            for (member, status) in self.members.iter_mut().zip(&statuses) {
                if let Some(status) = status {
                    member.id = status.member_id;
                }
            }
            if settled_leader(&self.members, &statuses).is_some() {
                return;
            }
            if Instant::now() > deadline {
                panic!("the etcd cluster did not settle on a leader within {SETTLE_TIMEOUT:?}: {statuses:?}");
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Every member, in order.
    pub fn members(&self) -> &[EtcdMember] {
        &self.members
    }

    /// Member `i`.
    pub fn member(&self, i: usize) -> &EtcdMember {
        &self.members[i]
    }

    /// Every member's client endpoint, for `--etcd` (joined with commas) or an etcd client;
    /// stopped members included, as a production apiserver's list would.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.endpoint.clone()).collect()
    }

    /// What each member says about itself and the cluster, in member order; `None` for a member
    /// that is not running or did not answer within 2 s.
    pub async fn statuses(&self) -> Vec<Option<MemberStatus>> {
        let tasks: Vec<_> = self
            .members
            .iter()
            .map(|member| {
                let endpoint = member.endpoint.clone();
                let running = member.is_running();
                tokio::spawn(async move { if running { status::query(&endpoint).await.ok() } else { None } })
            })
            .collect();
        let mut statuses = Vec::with_capacity(tasks.len());
        for task in tasks {
            statuses.push(task.await.ok().flatten());
        }
        statuses
    }

    /// What member `i` says about itself and the cluster; `None` if it is not running or did
    /// not answer within 2 s.
    pub async fn status(&self, i: usize) -> Option<MemberStatus> {
        let member = &self.members[i];
        if !member.is_running() {
            return None;
        }
        status::query(&member.endpoint).await.ok()
    }

    /// The member that leads right now, by its own account (the one of the highest term, should
    /// two say so); `None` during an election or without a quorum.
    pub async fn leader(&self) -> Option<usize> {
        self.statuses()
            .await
            .iter()
            .enumerate()
            .filter_map(|(i, status)| status.filter(MemberStatus::is_leader).map(|status| (status.raft_term, i)))
            .max()
            .map(|(_, i)| i)
    }

    /// Waits until a member leads and every running member answers and follows it, and returns
    /// the leader; panics (with the members' statuses) after `timeout`.
    pub async fn wait_for_leader(&self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let statuses = self.statuses().await;
            if let Some(leader) = settled_leader(&self.members, &statuses) {
                return leader;
            }
            if Instant::now() > deadline {
                panic!("no etcd leader that every running member follows within {timeout:?}: {statuses:?}");
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Hands the leadership to member `to` gracefully (etcd's MoveLeader, as `etcdctl
    /// move-leader` does: the leader first brings `to` up to date, then lets it campaign at once)
    /// and waits until every running member follows it. Panics if it cannot within 15 s.
    pub async fn move_leader(&self, to: usize) {
        let target = &self.members[to];
        assert!(target.is_running(), "cannot move the leadership to {}: it is not running", target.name);
        let deadline = Instant::now() + LEADER_TIMEOUT;
        let mut failures = Vec::new();
        loop {
            let leader = self.wait_for_leader(deadline.saturating_duration_since(Instant::now())).await;
            if leader == to {
                return;
            }
            // Sent to the leader: only it can hand its leadership over. It answers once `to`
            // leads, or fails if the leadership changed meanwhile (then: again, with the new one).
            if let Err(e) = status::move_leader(&self.members[leader].endpoint, target.id).await {
                failures.push(format!("from {}: {e}", self.members[leader].name));
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            if Instant::now() > deadline {
                panic!("could not move the etcd leadership to {} within {LEADER_TIMEOUT:?}: {failures:?}", target.name);
            }
        }
    }

    /// Kills the leader with SIGKILL (the abrupt leader change; the others elect a new one after
    /// etcd's 1 s election timeout) and returns which member it was. Waits for a leader first.
    pub async fn kill_leader(&mut self) -> usize {
        let leader = self.wait_for_leader(LEADER_TIMEOUT).await;
        self.kill(leader).await;
        leader
    }

    /// Kills member `i` with SIGKILL (as a crash would) and waits until it is gone. Its data dir
    /// stays for [`restart`](Self::restart).
    pub async fn kill(&mut self, i: usize) {
        if let Some(pid) = self.members[i].pid.take() {
            signal_kill(pid);
            wait_gone(pid).await;
        }
    }

    /// Stops member `i` gracefully (SIGTERM; a leader hands its leadership over first). Its data
    /// dir stays for [`restart`](Self::restart).
    pub async fn stop(&mut self, i: usize) {
        if let Some(pid) = self.members[i].pid.take() {
            run_stop(pid).await;
        }
    }

    /// Starts member `i` again (stopping it first if it runs) on its data dir, ports and name; it
    /// rejoins the cluster and catches up on what it missed. Waits until it is healthy, which
    /// takes a quorum: to bring back a cluster that lost its quorum, restart enough members at
    /// once with [`restart_members`](Self::restart_members). Panics if it cannot.
    pub async fn restart(&mut self, i: usize) {
        self.restart_members(&[i]).await;
    }

    /// Starts these members again, concurrently (see [`restart`](Self::restart)), and waits
    /// until every running member follows one leader. Panics if it cannot.
    pub async fn restart_members(&mut self, members: &[usize]) {
        for &i in members {
            self.stop(i).await;
        }
        if let Err(e) = self.launch(members, "existing").await {
            panic!("could not restart etcd members {members:?}:\n{e}");
        }
        let ids: Vec<u64> = self.members.iter().map(EtcdMember::id).collect();
        self.settle().await;
        for &i in members {
            assert_eq!(self.members[i].id, ids[i], "{} rejoined as another member", self.members[i].name);
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            kill_and_remove(member.pid.take(), &member.data_dir);
        }
    }
}

/// The member that leads by its own account if every running member answered and follows it.
fn settled_leader(members: &[EtcdMember], statuses: &[Option<MemberStatus>]) -> Option<usize> {
    let leader = statuses.iter().position(|status| status.is_some_and(|status| status.is_leader()))?;
    let leader_id = statuses[leader]?.member_id;
    let all_follow = members
        .iter()
        .zip(statuses)
        .all(|(member, status)| !member.is_running() || status.is_some_and(|status| status.leader_id == leader_id));
    all_follow.then_some(leader)
}

/// `count` distinct loopback ports that were free a moment ago: all bound at once (so the kernel
/// hands out distinct ones), then released for etcd. Another process may take one meanwhile;
/// [`EtcdCluster::start`] then tries again.
fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0: {e}")))
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().unwrap_or_else(|e| panic!("no local address: {e}")).port())
        .collect()
}
