//! The faults of the simulator and the debug API, as calls with no HTTP round trip. A resource
//! is named as kubectl names it: `pods`, `deployments.apps`, `widgets.example.com`. Each call
//! returns once its fault has taken effect: watchers dropped are gone, a reset cache serves
//! again, a restarted server serves, an outage has begun.

use std::time::Duration;

use crate::{Error, StreamFault, TestServer};

/// The faults a [`TestServer`] can be made to suffer ([`TestServer::faults`]).
pub struct Faults<'a> {
    server: &'a TestServer,
}

/// `plural[.group]` as kubectl writes it: the plural and the group.
fn split(resource: &str) -> (&str, &str) {
    resource.split_once('.').map_or((resource, ""), |(plural, group)| (plural, group))
}

impl<'a> Faults<'a> {
    pub(crate) fn new(server: &'a TestServer) -> Faults<'a> {
        Faults { server }
    }

    /// Compacts storage at its current revision: watches and lists from before it get 410
    /// Expired. Answers the revision.
    pub async fn compact(&self) -> Result<i64, Error> {
        Ok(self.server.state().compact(None).await?.0)
    }

    /// Ends every client watch of `resource` (clients must re-watch from where they were);
    /// answers how many ended. A resource the server does not serve is an error.
    pub fn drop_watches(&self, resource: &str) -> Result<usize, Error> {
        let (plural, group) = split(resource);
        Ok(self.server.state().drop_watchers(group, Some(plural))?)
    }

    /// Ends every client watch of every resource.
    pub fn drop_all_watches(&self) -> usize {
        self.server.state().drop_watchers("", None).unwrap_or(0)
    }

    /// Throws `resource`'s watch cache away and relists, as a kube-apiserver does when its
    /// cache falls too far behind: its watches end, and resuming from before gets 410. Returns
    /// once the cache serves again.
    pub async fn reset_cache(&self, resource: &str) -> Result<(), Error> {
        let (plural, group) = split(resource);
        Ok(self.server.state().reset_cache_and_wait(group, plural).await?)
    }

    /// Answers the next `count` requests 429 Too Many Requests with `Retry-After` (whole
    /// seconds, 1 to 3600).
    pub fn throttle(&self, count: i64, retry_after: Duration) {
        self.server.state().throttle(count, retry_after, false);
    }

    /// A network fault on the watch streams open now (and, for a lasting one, those opened
    /// while it lasts): latency, a cut mid-event, a blackhole, a stall, GOAWAY.
    pub fn streams(&self, fault: StreamFault) {
        self.server.state().stream_fault(fault);
    }

    /// Every storage call fails as a dead etcd's would, for `lasting` (zero ends one early):
    /// writes get 503s, caches fall behind, then relist when storage is back.
    pub fn storage_outage(&self, lasting: Duration) -> Result<(), Error> {
        Ok(self.server.state().storage_outage(lasting)?)
    }

    /// Watchers that asked for bookmarks get one every `interval` from now on (zero restores
    /// the configured one).
    pub fn bookmark_interval(&self, interval: Duration) -> Result<(), Error> {
        self.server.state().set_bookmark_interval(interval)?;
        Ok(())
    }

    /// For `lasting`, every continue token is answered 410 as if its revision were compacted.
    pub fn expire_continue_tokens(&self, lasting: Duration) {
        self.server.state().expire_continue_tokens(lasting);
    }

    /// Stops the server (every watch and connection ends) and starts it again on the same store,
    /// port and kubeconfig; returns once it serves. The client audit starts again with it.
    pub async fn restart(&self) -> Result<(), Error> {
        self.server.restart().await
    }
}
