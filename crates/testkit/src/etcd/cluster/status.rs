//! What a cluster's members say about themselves (etcd's Maintenance.Status), and the one
//! request that changes the leader (Maintenance.MoveLeader), through etcd-client, the client
//! storage's etcd backend uses.
//!
//! Each request goes to one member alone, on a connection of its own: a status must come from
//! the member it describes, MoveLeader must reach the leader, and a member killed and restarted
//! leaves no half-dead connection behind for the next request.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

/// How long a member may take to answer a status request (a live member answers at once, with
/// or without a leader).
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a leader may take to hand its leadership over: it first brings the new leader up to
/// date, and etcd itself gives up after an election timeout or so.
const MOVE_LEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What one member says about itself and its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// The member's raft id.
    pub member_id: u64,
    /// The raft id of the leader it knows (its own when it leads); 0 when it knows none.
    pub leader_id: u64,
    /// The raft term it is in (each election starts a new one).
    pub raft_term: u64,
    /// The revision of its store: everything up to it is applied on this member.
    pub revision: i64,
    /// The last raft log entry applied on this member.
    pub raft_applied_index: u64,
}

impl MemberStatus {
    /// Whether the member says it leads.
    pub fn is_leader(&self) -> bool {
        self.leader_id != 0 && self.leader_id == self.member_id
    }
}

/// Asks the member at `endpoint` for its status.
pub(super) async fn query(endpoint: &str) -> Result<MemberStatus, String> {
    let request = async {
        let mut client = connect(endpoint, STATUS_TIMEOUT).await?;
        client.status().await
    };
    let response = tokio::time::timeout(STATUS_TIMEOUT, request)
        .await
        .map_err(|_| format!("{endpoint} did not answer a status request within {STATUS_TIMEOUT:?}"))?
        .map_err(|e| format!("status of {endpoint}: {e}"))?;
    let header = response.header().ok_or_else(|| format!("the status of {endpoint} has no header"))?;
    Ok(MemberStatus {
        member_id: header.member_id(),
        leader_id: response.leader(),
        raft_term: response.raft_term(),
        revision: header.revision(),
        raft_applied_index: response.raft_applied_index(),
    })
}

/// Asks the leader at `leader_endpoint` to hand its leadership to member `target_id`; returns
/// once the target leads.
pub(super) async fn move_leader(leader_endpoint: &str, target_id: u64) -> Result<(), String> {
    let request = async {
        let mut client = connect(leader_endpoint, MOVE_LEADER_TIMEOUT).await?;
        client.move_leader(target_id).await
    };
    tokio::time::timeout(MOVE_LEADER_TIMEOUT, request)
        .await
        .map_err(|_| format!("{leader_endpoint} did not move its leadership within {MOVE_LEADER_TIMEOUT:?}"))?
        .map_err(|e| format!("move-leader on {leader_endpoint}: {e}"))?;
    Ok(())
}

/// A client of the one member at `endpoint`, with connections and requests bounded by `timeout`.
async fn connect(endpoint: &str, timeout: Duration) -> Result<Client, etcd_client::Error> {
    let options = ConnectOptions::new().with_connect_timeout(timeout).with_timeout(timeout);
    Client::connect([endpoint], Some(options)).await
}
