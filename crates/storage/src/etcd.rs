//! The etcd backend: [`Storage`] on a real etcd cluster, over gRPC with the `etcd-client` crate.
//!
//! Reads are etcd Ranges; writes are single-key transactions guarded by the key's mod revision,
//! exactly as kube-apiserver issues them (`If(mod_revision(key) == r) Then(put|delete)
//! Else(get)`), so a conflict comes back with the current state in the same round trip.
//!
//! etcd-client is a thin layer over the protocol, so this module adds what Go's `clientv3` would
//! otherwise provide (see `shared/spec/etcd.md` §3.6):
//!
//! * error mapping: etcd reports "compacted" without the compaction revision, so it is found
//!   with a probe watch (`compaction_probe`);
//! * watches that survive broken streams, classify every response themselves, and keep the
//!   "a progress notification covers every earlier event" promise on etcd versions whose
//!   requested progress is unreliable: see the `watch` submodule.
//!
//! Every unary request has a deadline ([`EtcdOptions::request_timeout`]); a missed deadline, a
//! connection failure or any error the storage API has no variant for becomes
//! [`StorageError::Unavailable`].

mod watch;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::proto::{PbKeyValue, PbTxnOpResponse};
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient,
    MaintenanceClient, ResponseHeader, Txn, TxnOp, TxnResponse, WatchClient,
};
use parking_lot::Mutex;
use tracing::debug;

use crate::{
    BackendVersion, DeleteResponse, KeyValue, MAX_REQUEST_BYTES, RangeRequest, RangeResponse, Result, Revision,
    Storage, StorageError, Watch, WatchRequest, WriteResponse,
};

/// How [`EtcdStore`] talks to etcd. `Default` gives values suited to a local or LAN cluster.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// First wait before re-creating a broken watch stream; doubles on each failed attempt.
    pub resume_backoff_initial: Duration,
    /// Cap of that wait (watches retry forever, until dropped).
    pub resume_backoff_max: Duration,
    /// How often a progress request is re-sent while unanswered: etcd >= 3.5.13 silently drops
    /// one while the watcher is catching up (Kubernetes retries every 100 ms too).
    pub progress_request_retry: Duration,
    /// Deadline of each unary request (range, transaction, compaction, status) and of a watch's
    /// creation.
    pub request_timeout: Duration,
    /// Deadline for establishing a connection.
    pub connect_timeout: Duration,
    /// HTTP/2 keep-alive ping interval and timeout, so a watch on a dead connection (a frozen or
    /// partitioned member) breaks and resumes instead of hanging (kube-apiserver: 30 s / 10 s).
    pub keep_alive_interval: Duration,
    /// How long a keep-alive ping may go unanswered before the connection counts as dead.
    pub keep_alive_timeout: Duration,
    /// Largest response accepted. tonic's default (4 MiB) is far too small: a page of 10,000
    /// objects, or a catch-up watch batch (up to 1000 revisions, each event with its previous
    /// value), easily exceeds it. The default, 2 GiB - 1, is what etcd itself may send
    /// (`MaxSendMsgSize`) and what Go's clientv3 accepts: a response that cannot be decoded would
    /// break a watch, and the resumed watch would meet the same batch again, forever.
    pub max_decoding_message_size: usize,
    /// Largest request sent; must exceed [`MAX_REQUEST_BYTES`] plus the transaction around it.
    pub max_encoding_message_size: usize,
    /// Watch responses buffered between the gRPC stream and the consumer. When full, the stream
    /// is no longer read, and gRPC flow control pushes back on etcd.
    pub watch_buffer: usize,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            resume_backoff_initial: Duration::from_millis(100),
            resume_backoff_max: Duration::from_secs(2),
            progress_request_retry: Duration::from_millis(100),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            keep_alive_interval: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(10),
            max_decoding_message_size: i32::MAX as usize,
            max_encoding_message_size: 16 * 1024 * 1024,
            watch_buffer: 32,
        }
    }
}

/// A key that nothing reads or writes, for the probes (a leading NUL keeps it away from any
/// real key layout; it is never written, so it adds no revisions).
const PROBE_KEY: &[u8] = b"\0listwatch-probe";

/// A [`Storage`] backed by an etcd cluster. Cheap to clone (clones share connections and state).
#[derive(Clone)]
pub struct EtcdStore {
    kv: KvClient,
    watch: WatchClient,
    maintenance: MaintenanceClient,
    options: Arc<EtcdOptions>,
    /// The highest compaction revision seen (from probes, errors and watches) or performed;
    /// compaction only moves forward, so this is a lower bound of the cluster's.
    compacted: Arc<AtomicI64>,
    /// The server version, refreshed by every [`Storage::version`] call; watches gate progress
    /// handling on it.
    version: Arc<Mutex<BackendVersion>>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore").field("version", &self.version.lock().version).finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Connects to the cluster (`http://host:port` endpoints) and reads its version, so an
    /// unreachable cluster fails here with [`StorageError::Unavailable`].
    pub async fn connect(endpoints: &[String], options: EtcdOptions) -> Result<EtcdStore> {
        let connect_options = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_keep_alive(options.keep_alive_interval, options.keep_alive_timeout);
        let client = tokio::time::timeout(options.request_timeout, Client::connect(endpoints, Some(connect_options)))
            .await
            .map_err(|_| StorageError::Unavailable(format!("connecting to etcd at {endpoints:?} timed out")))?
            .map_err(|e| StorageError::Unavailable(format!("connecting to etcd at {endpoints:?}: {e}")))?;
        let store = EtcdStore {
            kv: client
                .kv_client()
                .max_decoding_message_size(options.max_decoding_message_size)
                .max_encoding_message_size(options.max_encoding_message_size),
            watch: client.watch_client().max_decoding_message_size(options.max_decoding_message_size),
            maintenance: client.maintenance_client(),
            options: Arc::new(options),
            compacted: Arc::new(AtomicI64::new(0)),
            version: Arc::new(Mutex::new(BackendVersion { backend: "etcd", version: String::new() })),
        };
        store.version().await?;
        Ok(store)
    }

    /// Runs one unary request under the deadline, sorting its failure, and sends it again when
    /// it failed on the way (see [`Resend`]): after a short pause that doubles each time, up to
    /// [`MAX_RESENDS`] times (about 1.6 s in all, so a dead cluster still fails fast) and never
    /// past the deadline. The channel's balancer keeps offering a member that is down
    /// (grpc/grpc-rust#2839), where etcd's Go client skips it, and right after a member dies
    /// several tries in a row can land on it (CI saw five back-to-back resends all fail with
    /// "operation was canceled").
    async fn request<T, Fut>(&self, call: impl Fn() -> Fut) -> Result<T, Failure>
    where
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.request_resending(Resend::Always, call).await.map(|sent| sent.answer)
    }

    /// [`Self::request`] with a choice of which failures are sent again; the answer says
    /// whether a failed earlier send may have reached etcd.
    async fn request_resending<T, Fut>(&self, resend: Resend, call: impl Fn() -> Fut) -> Result<Sent<T>, Failure>
    where
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.options.request_timeout;
        let mut pause = FIRST_RESEND_PAUSE;
        let mut resends = 0;
        let mut maybe_applied = false;
        loop {
            let failure = match tokio::time::timeout_at(deadline, call()).await {
                Ok(Ok(answer)) => return Ok(Sent { answer, maybe_applied }),
                Ok(Err(e)) => {
                    debug!(error = %e, "etcd request failed");
                    Failure::of(&e)
                }
                Err(_) => {
                    return Err(Failure::Other(format!(
                        "etcd request timed out after {:?}",
                        self.options.request_timeout
                    )));
                }
            };
            let again = failure.is_connect_error() || (resend == Resend::Always && failure.is_broken_transport());
            if !again || resends == MAX_RESENDS || tokio::time::Instant::now() + pause >= deadline {
                return Err(failure);
            }
            maybe_applied |= failure.is_broken_transport();
            resends += 1;
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_RESEND_PAUSE);
        }
    }

    /// Turns a failure into the storage error, looking up the revisions etcd does not report.
    /// `write_size` is the size of the write that failed, if it was one.
    async fn storage_error(&self, failure: Failure, write_size: Option<usize>) -> StorageError {
        match failure {
            Failure::Compacted => match self.fetch_compacted_revision().await {
                Ok(compact_revision) => StorageError::Compacted { compact_revision },
                Err(e) => e,
            },
            Failure::FutureRevision => match self.current_revision().await {
                Ok(current_revision) => StorageError::FutureRevision { current_revision },
                Err(e) => e,
            },
            Failure::TooLarge(message) => match write_size {
                Some(size) => StorageError::ValueTooLarge { size, limit: MAX_REQUEST_BYTES },
                None => StorageError::Unavailable(message),
            },
            Failure::Other(message) => StorageError::Unavailable(message),
        }
    }

    /// Runs a write transaction guarded by a mod_revision compare. It is sent again even when
    /// its connection broke after sending it (the answer says so): the guard keeps a second
    /// send from applying twice, and the caller tells its own earlier success from a conflict
    /// by the value it finds ([`was_ours`]).
    async fn txn(&self, txn: Txn, write_size: usize) -> Result<Sent<TxnResponse>> {
        match self
            .request_resending(Resend::Always, || {
                let (mut kv, txn) = (self.kv.clone(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await
        {
            Ok(sent) => Ok(sent),
            Err(failure) => Err(self.storage_error(failure, Some(write_size)).await),
        }
    }

    /// The cluster's compaction revision (0 if never compacted), remembered in `self.compacted`.
    ///
    /// etcd has no API for it. A Range at revision 1 tells cheaply whether anything is compacted;
    /// only then does a watch from revision 1 ask for it: etcd cancels such a watch with the
    /// compaction revision (spec §1.3).
    async fn fetch_compacted_revision(&self) -> Result<Revision> {
        let at_first_revision = GetOptions::new().with_revision(1).with_count_only();
        let compacted = match self
            .request(|| {
                let (mut kv, options) = (self.kv.clone(), at_first_revision.clone());
                async move { kv.get(PROBE_KEY, Some(options)).await }
            })
            .await
        {
            Ok(_) => 0,
            Err(Failure::Compacted) => {
                let probe = watch::compaction_probe(self.watch.clone(), PROBE_KEY);
                tokio::time::timeout(self.options.request_timeout, probe).await.map_err(|_| {
                    StorageError::Unavailable("etcd did not answer the compaction probe in time".into())
                })??
            }
            // (Not storage_error: that may call back here.)
            Err(failure) => return Err(StorageError::Unavailable(failure.message())),
        };
        Ok(self.note_compacted(compacted))
    }

    /// Records a compaction revision seen; returns the highest one known.
    fn note_compacted(&self, revision: Revision) -> Revision {
        self.compacted.fetch_max(revision, Ordering::AcqRel).max(revision)
    }
}

#[async_trait]
impl Storage for EtcdStore {
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let mut options = GetOptions::new();
        if let Some(end) = &request.range.end {
            options = options.with_range(end.to_vec());
        }
        if request.limit > 0 {
            options = options.with_limit(request.limit);
        }
        if request.revision > 0 {
            options = options.with_revision(request.revision);
        }
        if request.count_only {
            options = options.with_count_only();
        }
        let mut response = match self
            .request(|| {
                let (mut kv, key, options) = (self.kv.clone(), request.range.start.to_vec(), options.clone());
                async move { kv.get(key, Some(options)).await }
            })
            .await
        {
            Ok(response) => response,
            Err(failure) => return Err(self.storage_error(failure, None).await),
        };
        let header_revision = response.header().map_or(0, ResponseHeader::revision);
        Ok(RangeResponse {
            // etcd's header has the current revision even for a read in the past.
            revision: if request.revision > 0 { request.revision } else { header_revision },
            count: response.count(),
            more: response.more(),
            kvs: response.take_kvs().into_iter().map(|kv| key_value(kv.0)).collect(),
        })
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<WriteResponse> {
        crate::check_request_size(key, &value)?;
        let size = key.len() + value.len();
        // No Else(get): AlreadyExists carries no state, so reading it back would be wasted.
        let txn = Txn::new().when([Compare::mod_revision(key, CompareOp::Equal, 0)]).and_then([TxnOp::put(
            key,
            value.clone(),
            None,
        )]);
        let sent = self.txn(txn, size).await?;
        if !sent.answer.succeeded() {
            // An earlier send that broke on the way may have created it: then the key holds
            // exactly our value (its uid is new), and the create succeeded.
            if sent.maybe_applied
                && let Some(current) = self.get_key(key).await?
                && was_ours(&current, &value)
            {
                return Ok(WriteResponse { revision: current.mod_revision });
            }
            return Err(StorageError::AlreadyExists);
        }
        Ok(WriteResponse { revision: txn_revision(&sent.answer)? })
    }

    async fn update(&self, key: &[u8], value: Bytes, expected_mod_revision: Revision) -> Result<WriteResponse> {
        crate::check_request_size(key, &value)?;
        let size = key.len() + value.len();
        if expected_mod_revision <= 0 {
            // A missing key's mod revision compares as 0, so the guarded put below would create
            // the key; no existing key has mod revision 0, so this is always a conflict.
            let current = self.get_key(key).await?;
            return Err(StorageError::Conflict { current });
        }
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected_mod_revision)])
            .and_then([TxnOp::put(key, value.clone(), None)])
            .or_else([TxnOp::get(key, None)]);
        let Sent { answer: mut response, maybe_applied } = self.txn(txn, size).await?;
        if !response.succeeded() {
            let current = take_else_get(&mut response);
            // An earlier send that broke on the way may have applied it: the key then holds
            // our value, written right after the revision we expected.
            if maybe_applied
                && let Some(current) = &current
                && was_ours(current, &value)
            {
                return Ok(WriteResponse { revision: current.mod_revision });
            }
            return Err(StorageError::Conflict { current });
        }
        Ok(WriteResponse { revision: txn_revision(&response)? })
    }

    async fn delete(&self, key: &[u8], expected_mod_revision: Option<Revision>) -> Result<DeleteResponse> {
        let with_prev = || Some(DeleteOptions::new().with_prev_key());
        let Some(expected) = expected_mod_revision else {
            let mut response = match self
                .request_resending(Resend::IfNotSent, || {
                    let (mut kv, key) = (self.kv.clone(), key.to_vec());
                    async move { kv.delete(key, with_prev()).await }
                })
                .await
            {
                Ok(sent) => sent.answer,
                Err(failure) => return Err(self.storage_error(failure, None).await),
            };
            let revision = response.header().map_or(0, ResponseHeader::revision);
            let prev = response.take_prev_kvs().into_iter().next().ok_or(StorageError::NotFound)?;
            return Ok(DeleteResponse { revision, prev: key_value(prev.0) });
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([TxnOp::delete(key, with_prev())])
            .or_else([TxnOp::get(key, None)]);
        // Not sent again after a broken connection: a second send could not return the value
        // the first one deleted.
        let mut response = match self
            .request_resending(Resend::IfNotSent, || {
                let (mut kv, txn) = (self.kv.clone(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await
        {
            Ok(sent) => sent.answer,
            Err(failure) => return Err(self.storage_error(failure, None).await),
        };
        if !response.succeeded() {
            return Err(StorageError::Conflict { current: take_else_get(&mut response) });
        }
        let revision = txn_revision(&response)?;
        match response.0.responses.pop().and_then(|op| op.response) {
            Some(PbTxnOpResponse::ResponseDeleteRange(deleted)) => {
                match deleted.prev_kvs.into_iter().next() {
                    Some(prev) => Ok(DeleteResponse { revision, prev: key_value(prev) }),
                    // Only reachable with an expected revision of 0 (or less) on a missing key:
                    // mod_revision compares as 0, and nothing was there to delete.
                    None => Err(StorageError::Conflict { current: None }),
                }
            }
            other => Err(StorageError::Unavailable(format!("etcd answered a delete with {other:?}"))),
        }
    }

    async fn watch(&self, request: WatchRequest) -> Result<Watch> {
        crate::check_watch_range(&request.range)?;
        let trust_requested_progress = self.version.lock().supports_request_watch_progress();
        let params = watch::WatchParams {
            client: self.watch.clone(),
            range: request.range,
            progress_notify: request.progress_notify,
            trust_requested_progress,
            options: self.options.clone(),
            compacted: self.compacted.clone(),
        };
        watch::start(params, request.start_revision).await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let options = CompactionOptions::new().with_physical();
        match self
            .request(|| {
                let (mut kv, options) = (self.kv.clone(), options.clone());
                async move { kv.compact(revision, Some(options)).await }
            })
            .await
        {
            Ok(_) => {
                self.note_compacted(revision);
                Ok(())
            }
            Err(failure) => Err(self.storage_error(failure, None).await),
        }
    }

    async fn current_revision(&self) -> Result<Revision> {
        // A linearizable (the default) read of one key, counting only: the header has the
        // cluster's current revision.
        let options = GetOptions::new().with_count_only().with_limit(1);
        match self
            .request(|| {
                let (mut kv, options) = (self.kv.clone(), options.clone());
                async move { kv.get(PROBE_KEY, Some(options)).await }
            })
            .await
        {
            Ok(response) => response
                .header()
                .map(ResponseHeader::revision)
                .ok_or_else(|| StorageError::Unavailable("etcd range response without a header".into())),
            // Only a timeout or a connection failure can get here.
            Err(failure) => Err(StorageError::Unavailable(failure.message())),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.fetch_compacted_revision().await
    }

    async fn version(&self) -> Result<BackendVersion> {
        let status = match self
            .request(|| {
                let mut maintenance = self.maintenance.clone();
                async move { maintenance.status().await }
            })
            .await
        {
            Ok(status) => status,
            Err(failure) => return Err(StorageError::Unavailable(failure.message())),
        };
        let version = BackendVersion { backend: "etcd", version: status.version().to_string() };
        *self.version.lock() = version.clone();
        Ok(version)
    }
}

impl EtcdStore {
    /// The current state of one key.
    async fn get_key(&self, key: &[u8]) -> Result<Option<KeyValue>> {
        match self
            .request(|| {
                let (mut kv, key) = (self.kv.clone(), key.to_vec());
                async move { kv.get(key, None).await }
            })
            .await
        {
            Ok(mut response) => Ok(response.take_kvs().into_iter().next().map(|kv| key_value(kv.0))),
            Err(failure) => Err(self.storage_error(failure, None).await),
        }
    }
}

/// An etcd failure, sorted into what the storage API tells apart.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// "required revision has been compacted" (Range, Compact).
    Compacted,
    /// "required revision is a future revision" (Range, Compact).
    FutureRevision,
    /// etcd's "request is too large" (above `--max-request-bytes`), or gRPC's message size limit.
    TooLarge(String),
    /// Anything else: connection failures, timeouts, unexpected server errors.
    Other(String),
}

/// How many times a request that could not connect is sent again.
const MAX_RESENDS: u32 = 8;
/// The pause before a request that could not connect is sent again; it doubles each time.
const FIRST_RESEND_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between two sends of a request that could not connect.
const MAX_RESEND_PAUSE: Duration = Duration::from_millis(500);

/// Which failed sends of a request are sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resend {
    /// Only those that never reached etcd: a delete (a second send would not see the value
    /// the first one removed).
    IfNotSent,
    /// Also those whose connection broke after sending: reads, and writes guarded by a
    /// mod_revision compare (a second send cannot apply twice).
    Always,
}

/// A request's answer, and whether an earlier send of it broke after leaving, so that etcd
/// may have applied it.
struct Sent<T> {
    answer: T,
    maybe_applied: bool,
}

/// Whether the key holds exactly the value a write sent. A created object carries a new uid,
/// so only our create stores its bytes; another update is byte-identical to ours only if it
/// stored exactly our state, and then calling ours done tells the truth about what is stored.
fn was_ours(current: &KeyValue, value: &Bytes) -> bool {
    current.value == *value
}

impl Failure {
    /// Whether the connection broke while the request was out ("transport error", a reset
    /// stream): etcd may or may not have received it.
    fn is_broken_transport(&self) -> bool {
        const BROKEN: [&str; 3] = ["transport error", "connection reset", "stream closed because of a broken pipe"];
        matches!(self, Failure::Other(message) if BROKEN.iter().any(|sign| message.contains(sign)))
    }

    /// Whether the request failed before reaching etcd: no connection to the member, or
    /// hyper cancelled it because the member's connection closed while the request waited to
    /// be sent ("operation was canceled"; a request already sent fails with a transport error
    /// instead).
    fn is_connect_error(&self) -> bool {
        const NOT_SENT: [&str; 3] = ["tcp connect error", "Connection refused", "operation was canceled"];
        matches!(self, Failure::Other(message) if NOT_SENT.iter().any(|sign| message.contains(sign)))
    }

    fn of(error: &etcd_client::Error) -> Failure {
        match error {
            etcd_client::Error::GRpcStatus(status) => {
                Failure::of_status(&format!("{:?}", status.code()), status.message())
            }
            other => Failure::Other(format!("etcd: {other}")),
        }
    }

    /// By message, as etcd's Go client does (rpctypes): the codes are too coarse (OutOfRange for
    /// both revision errors).
    fn of_status(code: &str, message: &str) -> Failure {
        if message.contains("required revision has been compacted") {
            Failure::Compacted
        } else if message.contains("required revision is a future revision") {
            Failure::FutureRevision
        } else if message.contains("request is too large") || message.contains("larger than max") {
            Failure::TooLarge(format!("etcd: {message}"))
        } else {
            Failure::Other(format!("etcd: {code}: {message}"))
        }
    }

    fn message(self) -> String {
        match self {
            Failure::Compacted => "etcd: required revision has been compacted".into(),
            Failure::FutureRevision => "etcd: required revision is a future revision".into(),
            Failure::TooLarge(message) | Failure::Other(message) => message,
        }
    }
}

/// The revision of a single-write transaction: its header's (the store revision after it).
fn txn_revision(response: &TxnResponse) -> Result<Revision> {
    response
        .header()
        .map(ResponseHeader::revision)
        .ok_or_else(|| StorageError::Unavailable("etcd transaction response without a header".into()))
}

/// The key read by a failed transaction's `Else(get)`; `None` if it does not exist.
fn take_else_get(response: &mut TxnResponse) -> Option<KeyValue> {
    match response.0.responses.pop()?.response? {
        PbTxnOpResponse::ResponseRange(range) => range.kvs.into_iter().next().map(key_value),
        _ => None,
    }
}

/// etcd's KeyValue as ours; the buffers are moved, not copied.
fn key_value(kv: PbKeyValue) -> KeyValue {
    KeyValue {
        key: Bytes::from(kv.key),
        value: Bytes::from(kv.value),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
        version: kv.version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_sorted_by_message() {
        assert_eq!(
            Failure::of_status("OutOfRange", "etcdserver: mvcc: required revision has been compacted"),
            Failure::Compacted
        );
        assert_eq!(
            Failure::of_status("OutOfRange", "etcdserver: mvcc: required revision is a future revision"),
            Failure::FutureRevision
        );
        assert!(matches!(
            Failure::of_status("InvalidArgument", "etcdserver: request is too large"),
            Failure::TooLarge(_)
        ));
        assert!(matches!(
            Failure::of_status("ResourceExhausted", "grpc: received message larger than max (3 vs. 2)"),
            Failure::TooLarge(_)
        ));
        assert!(
            matches!(Failure::of_status("Unavailable", "tcp connect error"), Failure::Other(m) if m.contains("tcp connect error"))
        );
    }
}
