//! kube-apiserver's compactor (`storage/etcd3/compact.go`): every interval, compact storage to
//! the revision seen one interval earlier, so watches and paged lists have at least one
//! interval of history. Several servers can share one etcd: each round is claimed through a
//! compare-and-swap on `compact_rev_key`, and a server that loses the race follows the
//! winner's token instead of compacting too. It needs nothing but storage, so it lives here.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use crate::{KeyRange, RangeRequest, Storage, StorageError};

/// Compacts `storage` every `interval` until `shutdown` turns true.
pub async fn run(storage: Arc<dyn Storage>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    const KEY: &[u8] = b"compact_rev_key";
    // `seen` is the key's mod revision last seen (our CAS token, as kube uses its version);
    // `revision` the store revision seen one interval ago.
    let mut seen: i64 = 0;
    let mut revision: i64 = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
        let value = Bytes::from(revision.to_string());
        let written = if seen == 0 { storage.create(KEY, value).await } else { storage.update(KEY, value, seen).await };
        match written {
            Ok(w) => {
                seen = w.revision;
                let to_compact = revision;
                revision = w.revision;
                if to_compact != 0 {
                    match storage.compact(to_compact).await {
                        Ok(()) => tracing::info!(revision = to_compact, "compacted storage"),
                        Err(StorageError::Compacted { .. }) => {}
                        Err(e) => tracing::warn!(error = %e, "compaction failed"),
                    }
                }
            }
            // Another server took this round: follow its token.
            Err(StorageError::AlreadyExists | StorageError::Conflict { .. }) => {
                match storage.range(RangeRequest::new(KeyRange::key(Bytes::from_static(KEY)))).await {
                    Ok(resp) => {
                        seen = resp.kvs.first().map_or(0, |kv| kv.mod_revision);
                        revision = resp.revision;
                    }
                    Err(e) => tracing::warn!(error = %e, "compactor cannot read its key"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "compactor cannot write its key"),
        }
    }
}
