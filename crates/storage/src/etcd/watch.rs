//! Watches on etcd: one gRPC watch stream per storage watch, resumed whenever it breaks.
//!
//! [`start`] opens the stream and waits for etcd's `created` answer, so a failure reaches the
//! caller and a watch "from now" (start revision 0) is pinned to a revision before `watch()`
//! returns. A task then owns the stream: it classifies every etcd response ([`classify`], after
//! the table in spec §1.2), forwards events and progress into a bounded channel that the
//! [`Watch`] reads (a slow consumer stops the task reading, and gRPC flow control pushes back on
//! etcd), and sends progress requests. Dropping the `Watch` aborts the task, which drops the
//! stream and so cancels the watch in etcd.
//!
//! etcd-client does not resume a broken stream (a killed etcd surfaces as an `h2 protocol error`),
//! so the task does: [`Cursor`] keeps the next revision owed to the consumer, the last event's
//! revision + 1 or the last progress revision + 1 (the "+1" is etcd #15275), and the watch is
//! re-created from there with backoff, for as long as the `Watch` lives. Nothing is lost, and the
//! cursor drops anything etcd might repeat.
//!
//! Progress notifications must keep their promise that every event up to their revision was
//! delivered:
//! * one with a revision below the cursor is stale (e.g. for a watch that starts in the future,
//!   etcd < 3.5.22 reports the current revision) and is dropped;
//! * answers to progress requests (watch id -1) are trusted only on versions that order them
//!   after pending events ([`BackendVersion::supports_request_watch_progress`]: etcd 3.4.31 and
//!   later, 3.5.13 and later). Older etcd sends them ahead of events still being caught up (etcd
//!   #15220), so there they are dropped and no requests are sent; a pending request is then
//!   satisfied by the next periodic notification, which etcd sends only for caught-up watchers
//!   and in order with their events.
//!
//! [`BackendVersion::supports_request_watch_progress`]: crate::BackendVersion::supports_request_watch_progress

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use etcd_client::proto::{PbEvent, PbWatchResponse};
use etcd_client::{WatchClient, WatchOptions, WatchRequestSender, WatchResponseStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::{EtcdOptions, key_value};
use crate::{
    Event, EventKind, KeyRange, ProgressRequester, Result, Revision, StorageError, Watch, WatchResponse, WatchStream,
};

/// What a watch needs to (re)create its etcd stream.
pub(super) struct WatchParams {
    pub client: WatchClient,
    pub range: KeyRange,
    pub progress_notify: bool,
    /// Whether etcd answers progress requests in order with events (see the module doc).
    pub trust_requested_progress: bool,
    pub options: Arc<EtcdOptions>,
    /// The store's highest known compaction revision, raised by compacted watches.
    pub compacted: Arc<AtomicI64>,
}

/// Opens the watch and starts the task that serves it.
pub(super) async fn start(params: WatchParams, start_revision: Revision) -> Result<Watch> {
    // etcd < 3.4.38 / 3.5.24 accepts a negative start revision and misbehaves; 0 means "now".
    let start_revision = start_revision.max(0);
    let (stream, created_revision) = open(&params, start_revision).await.map_err(|e| match e {
        OpenError::Unavailable(reason) | OpenError::Refused(reason) => StorageError::Unavailable(reason),
    })?;
    // Pinning "now" keeps a resume from skipping anything written after the watch was created.
    let next = if start_revision > 0 { start_revision } else { created_revision + 1 };
    let (responses_tx, responses_rx) = mpsc::channel(params.options.watch_buffer.max(1));
    // Capacity 1: requests made while one is pending coalesce.
    let (progress_tx, progress_rx) = mpsc::channel(1);
    let task = WatchTask {
        params,
        cursor: Cursor { next },
        responses: responses_tx,
        progress_requests: progress_rx,
        progress_pending: false,
    };
    let task = tokio::spawn(task.run(stream));
    let requester = ProgressRequester::new(move || {
        let _ = progress_tx.try_send(());
    });
    Ok(Watch::new(Box::new(EtcdWatchStream { responses: responses_rx, task }), requester))
}

/// The [`WatchStream`] half: reads what the task forwards; dropping it stops the task.
struct EtcdWatchStream {
    responses: mpsc::Receiver<Result<WatchResponse>>,
    task: JoinHandle<()>,
}

#[async_trait::async_trait]
impl WatchStream for EtcdWatchStream {
    async fn next(&mut self) -> Option<Result<WatchResponse>> {
        self.responses.recv().await
    }
}

impl Drop for EtcdWatchStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An open etcd watch stream with one created watcher.
struct OpenStream {
    requests: WatchRequestSender,
    responses: WatchResponseStream,
}

enum OpenError {
    /// etcd could not be reached or the stream broke: worth retrying.
    Unavailable(String),
    /// etcd refused the watch (canceled it on creation): final.
    Refused(String),
}

/// Creates an etcd watch from `start_revision` and waits for it to be created; returns the
/// stream and the store revision at creation.
async fn open(params: &WatchParams, start_revision: Revision) -> Result<(OpenStream, Revision), OpenError> {
    // Always with previous values (our events carry them), never fragmented (a revision always
    // arrives whole; the decoding limit is raised instead).
    let mut options = WatchOptions::new().with_prev_key().with_start_revision(start_revision);
    if let Some(end) = &params.range.end {
        options = options.with_range(end.to_vec());
    }
    if params.progress_notify {
        options = options.with_progress_notify();
    }
    let opening = async {
        let stream = params
            .client
            .clone()
            .watch(params.range.start.to_vec(), Some(options))
            .await
            .map_err(|e| OpenError::Unavailable(format!("etcd: opening a watch: {e}")))?;
        let (requests, mut responses) = stream.split();
        loop {
            let response = match responses.message().await {
                Ok(Some(response)) => response,
                Ok(None) => {
                    return Err(OpenError::Unavailable("etcd closed the watch stream on creation".into()));
                }
                Err(e) => {
                    return Err(OpenError::Unavailable(format!("etcd: creating a watch: {e}")));
                }
            };
            match classify(&response.0) {
                Kind::Created { revision } => {
                    return Ok((OpenStream { requests, responses }, revision));
                }
                Kind::Canceled { reason } => {
                    return Err(OpenError::Refused(format!("etcd refused the watch: {reason}")));
                }
                // etcd answers a create before anything else for that watcher.
                other => debug!(?other, "etcd watch response before `created`, ignored"),
            }
        }
    };
    let timeout = params.options.request_timeout;
    tokio::time::timeout(timeout, opening)
        .await
        .unwrap_or_else(|_| Err(OpenError::Unavailable(format!("etcd did not create the watch within {timeout:?}"))))
}

/// The task serving one watch.
struct WatchTask {
    params: WatchParams,
    cursor: Cursor,
    responses: mpsc::Sender<Result<WatchResponse>>,
    progress_requests: mpsc::Receiver<()>,
    /// A progress notification was asked for and none has been forwarded since.
    progress_pending: bool,
}

/// Whether the watch goes on after a response.
enum Flow {
    Continue,
    /// A final response was delivered, or the consumer is gone.
    Done,
}

impl WatchTask {
    async fn run(mut self, first: OpenStream) {
        let options = self.params.options.clone();
        let mut stream = Some(first);
        let mut backoff = options.resume_backoff_initial;
        loop {
            let current = match stream.take() {
                Some(current) => current,
                None => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(options.resume_backoff_max);
                    match open(&self.params, self.cursor.next).await {
                        Ok((resumed, _)) => {
                            info!(range = %self.describe(), from = self.cursor.next, "etcd watch resumed");
                            backoff = options.resume_backoff_initial;
                            resumed
                        }
                        Err(OpenError::Unavailable(reason)) => {
                            warn!(range = %self.describe(), from = self.cursor.next, %reason, retry_in = ?backoff, "cannot resume etcd watch");
                            continue;
                        }
                        Err(OpenError::Refused(reason)) => {
                            warn!(range = %self.describe(), %reason, "etcd refused to resume the watch; ending it");
                            let _ = self.responses.send(Err(StorageError::Unavailable(reason))).await;
                            return;
                        }
                    }
                }
            };
            match self.serve(current).await {
                Ok(()) => return,
                Err(reason) => {
                    warn!(range = %self.describe(), from = self.cursor.next, %reason, "etcd watch stream broke; resuming");
                }
            }
        }
    }

    /// Serves one stream until the watch is done (`Ok`) or the stream breaks (`Err(reason)`).
    async fn serve(&mut self, stream: OpenStream) -> Result<(), String> {
        let OpenStream { mut requests, mut responses } = stream;
        let retry_period = self.params.options.progress_request_retry;
        let trusted = self.params.trust_requested_progress;
        // When to re-send an unanswered progress request.
        let mut retry_at: Option<Instant> = None;
        if self.progress_pending && trusted {
            // A request made on the broken stream: ask the new one.
            send_progress_request(&mut requests).await?;
            retry_at = Some(Instant::now() + retry_period);
        }
        loop {
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                message = responses.message() => {
                    let response = match message {
                        Ok(Some(response)) => response,
                        Ok(None) => return Err("etcd closed the watch stream".into()),
                        Err(e) => return Err(e.to_string()),
                    };
                    if let Flow::Done = self.handle(response.0).await {
                        return Ok(());
                    }
                    if !self.progress_pending {
                        retry_at = None;
                    }
                }
                Some(()) = self.progress_requests.recv() => {
                    self.progress_pending = true;
                    if trusted && retry_at.is_none() {
                        send_progress_request(&mut requests).await?;
                        retry_at = Some(Instant::now() + retry_period);
                    }
                }
                () = retry => {
                    // etcd >= 3.5.13 drops a request while the watcher is catching up.
                    send_progress_request(&mut requests).await?;
                    retry_at = Some(Instant::now() + retry_period);
                }
            }
        }
    }

    async fn handle(&mut self, mut response: PbWatchResponse) -> Flow {
        match classify(&response) {
            Kind::Events => {
                let events = self.cursor.accept_events(std::mem::take(&mut response.events));
                if events.is_empty() {
                    return Flow::Continue;
                }
                self.deliver(Ok(WatchResponse::Events(events))).await
            }
            Kind::Progress { revision, requested } => {
                if requested && !self.params.trust_requested_progress {
                    debug!(revision, "requested progress from an etcd that may send it ahead of events; dropped");
                    return Flow::Continue;
                }
                match self.cursor.accept_progress(revision) {
                    Some(revision) => {
                        self.progress_pending = false;
                        self.deliver(Ok(WatchResponse::Progress(revision))).await
                    }
                    None => {
                        debug!(revision, next = self.cursor.next, "stale etcd progress notification dropped");
                        Flow::Continue
                    }
                }
            }
            Kind::Compacted { compact_revision } => {
                self.params.compacted.fetch_max(compact_revision, Ordering::AcqRel);
                let _ = self.deliver(Ok(WatchResponse::Compacted(compact_revision))).await;
                Flow::Done
            }
            Kind::Canceled { reason } => {
                warn!(range = %self.describe(), %reason, "etcd canceled the watch");
                let _ =
                    self.deliver(Err(StorageError::Unavailable(format!("etcd canceled the watch: {reason}")))).await;
                Flow::Done
            }
            Kind::Created { .. } | Kind::Empty => {
                debug!(response = ?classify(&response), "unexpected etcd watch response ignored");
                Flow::Continue
            }
        }
    }

    async fn deliver(&self, response: Result<WatchResponse>) -> Flow {
        match self.responses.send(response).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Done,
        }
    }

    fn describe(&self) -> String {
        let range = &self.params.range;
        match &range.end {
            None => String::from_utf8_lossy(&range.start).into_owned(),
            Some(end) => format!("[{}, {})", String::from_utf8_lossy(&range.start), String::from_utf8_lossy(end)),
        }
    }
}

async fn send_progress_request(requests: &mut WatchRequestSender) -> Result<(), String> {
    requests.request_progress().await.map_err(|e| format!("sending a progress request: {e}"))
}

/// The next revision the consumer is owed; what a resumed watch starts from.
#[derive(Debug)]
struct Cursor {
    next: Revision,
}

impl Cursor {
    /// Converts a batch of events, dropping any the consumer already has.
    fn accept_events(&mut self, events: Vec<PbEvent>) -> Vec<Arc<Event>> {
        let received = events.len();
        let accepted: Vec<Arc<Event>> =
            events.into_iter().filter_map(event).filter(|event| event.revision() >= self.next).map(Arc::new).collect();
        if accepted.len() != received {
            warn!(received, accepted = accepted.len(), next = self.next, "etcd sent events already delivered; dropped");
        }
        if let Some(last) = accepted.last() {
            self.next = last.revision() + 1;
        }
        accepted
    }

    /// The revision to report for a progress notification, or `None` if it is stale (below the
    /// last event delivered).
    fn accept_progress(&mut self, revision: Revision) -> Option<Revision> {
        if revision < self.next - 1 {
            return None;
        }
        self.next = revision + 1;
        Some(revision)
    }
}

/// etcd's event as ours (the buffers are moved); `None` for an unknown event type.
fn event(event: PbEvent) -> Option<Event> {
    let kind = match event.r#type {
        0 => EventKind::Put,
        1 => EventKind::Delete,
        other => {
            warn!(event_type = other, "unknown etcd event type; event dropped");
            return None;
        }
    };
    Some(Event { kind, kv: key_value(event.kv?), prev: event.prev_kv.map(key_value) })
}

/// What an etcd watch response means (spec §1.2 "Kinds of response a proxy must tell apart").
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// The watcher was created; `revision` is the store revision at that moment.
    Created { revision: Revision },
    /// One or more events, complete revisions in order.
    Events,
    /// No events: every event up to `revision` was sent. `requested`: an answer to a progress
    /// request (watch id -1) rather than a periodic notification (the watcher's own id).
    Progress { revision: Revision, requested: bool },
    /// The watcher's next revision is compacted; the watcher is gone.
    Compacted { compact_revision: Revision },
    /// The watcher is gone for another reason (refused on creation, or canceled).
    Canceled { reason: String },
    /// Nothing recognizable (no header revision): ignored.
    Empty,
}

/// Classifies one response (Go clientv3's `IsProgressNotify` and `Err()`, written out).
fn classify(response: &PbWatchResponse) -> Kind {
    let header_revision = response.header.as_ref().map_or(0, |h| h.revision);
    if response.compact_revision != 0 {
        // etcd #22294: may repeat; the watch ends at the first one, so repeats are never read.
        Kind::Compacted { compact_revision: response.compact_revision }
    } else if response.canceled {
        let reason = if response.cancel_reason.is_empty() {
            // Go's client reads an empty reason as "future revision", which etcd never cancels
            // for in practice.
            "no reason given (a future revision?)".to_string()
        } else {
            response.cancel_reason.clone()
        };
        Kind::Canceled { reason }
    } else if response.created {
        Kind::Created { revision: header_revision }
    } else if !response.events.is_empty() {
        Kind::Events
    } else if header_revision != 0 {
        Kind::Progress { revision: header_revision, requested: response.watch_id == -1 }
    } else {
        Kind::Empty
    }
}

/// The compaction revision, asked with a watch from revision 1 on `key`: etcd cancels it with
/// the compaction revision. Only call this when revision 1 is known to be compacted; otherwise
/// the watch just stays open (the caller's timeout ends it).
pub(super) async fn compaction_probe(mut client: WatchClient, key: &[u8]) -> Result<Revision> {
    let unavailable = |e: etcd_client::Error| StorageError::Unavailable(format!("etcd compaction probe: {e}"));
    let stream = client.watch(key, Some(WatchOptions::new().with_start_revision(1))).await.map_err(unavailable)?;
    // Keep the request half: dropping it would end the stream. Both are dropped on return,
    // which cancels the probe watch.
    let (_requests, mut responses) = stream.split();
    loop {
        let response = responses
            .message()
            .await
            .map_err(unavailable)?
            .ok_or_else(|| StorageError::Unavailable("etcd closed the compaction probe".into()))?;
        match classify(&response.0) {
            Kind::Compacted { compact_revision } => return Ok(compact_revision),
            Kind::Canceled { reason } => {
                return Err(StorageError::Unavailable(format!("etcd canceled the compaction probe: {reason}")));
            }
            _ => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use etcd_client::proto::{PbKeyValue, PbResponseHeader};

    use super::*;

    fn response(header_revision: i64) -> PbWatchResponse {
        PbWatchResponse {
            header: Some(PbResponseHeader { revision: header_revision, ..Default::default() }),
            ..Default::default()
        }
    }

    fn kv(key: &str, value: &str, create: i64, modified: i64, version: i64) -> PbKeyValue {
        PbKeyValue {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: create,
            mod_revision: modified,
            version,
            lease: 0,
        }
    }

    fn put(key: &str, revision: i64) -> PbEvent {
        PbEvent { r#type: 0, kv: Some(kv(key, "v", revision, revision, 1)), prev_kv: None }
    }

    #[test]
    fn classifies_every_kind_of_response() {
        // Created: the first auto id is 0; the header has the store revision.
        let created = PbWatchResponse { created: true, watch_id: 0, ..response(8) };
        assert_eq!(classify(&created), Kind::Created { revision: 8 });

        // A failed create is both created and canceled, with id -1 and a reason.
        let failed = PbWatchResponse {
            created: true,
            canceled: true,
            watch_id: -1,
            cancel_reason: "mvcc: duplicate watch ID provided on the WatchStream".into(),
            ..response(8)
        };
        assert!(matches!(classify(&failed), Kind::Canceled { reason } if reason.contains("duplicate")));

        // Compacted: canceled, header revision 0, no reason.
        let compacted = PbWatchResponse { canceled: true, compact_revision: 8, header: None, ..Default::default() };
        assert_eq!(classify(&compacted), Kind::Compacted { compact_revision: 8 });

        // Canceled without a reason or compaction.
        let canceled = PbWatchResponse { canceled: true, ..response(9) };
        assert!(matches!(classify(&canceled), Kind::Canceled { .. }));

        // Progress: periodic (own id) and requested (-1).
        assert_eq!(
            classify(&PbWatchResponse { watch_id: 3, ..response(12) }),
            Kind::Progress { revision: 12, requested: false }
        );
        assert_eq!(
            classify(&PbWatchResponse { watch_id: -1, ..response(12) }),
            Kind::Progress { revision: 12, requested: true }
        );

        // Events.
        let events = PbWatchResponse { events: vec![put("/a", 12)], ..response(12) };
        assert_eq!(classify(&events), Kind::Events);

        // Nothing at all.
        assert_eq!(classify(&PbWatchResponse::default()), Kind::Empty);
    }

    #[test]
    fn converts_events_with_tombstones_and_previous_values() {
        let delete = PbEvent {
            r#type: 1,
            kv: Some(PbKeyValue { key: b"/a".to_vec(), mod_revision: 7, ..Default::default() }),
            prev_kv: Some(kv("/a", "old", 3, 5, 2)),
        };
        let event = event(delete).unwrap();
        assert_eq!(event.kind, EventKind::Delete);
        assert_eq!((&event.kv.key[..], event.kv.mod_revision, event.kv.version), (&b"/a"[..], 7, 0));
        let prev = event.prev.unwrap();
        assert_eq!((&prev.value[..], prev.mod_revision, prev.create_revision), (&b"old"[..], 5, 3));

        let create = super::event(put("/b", 9)).unwrap();
        assert!(create.is_create());
        assert!(create.prev.is_none());

        assert!(super::event(PbEvent { r#type: 7, ..put("/c", 9) }).is_none());
    }

    #[test]
    fn cursor_tracks_the_next_revision_and_drops_repeats() {
        let mut cursor = Cursor { next: 10 };
        let got = cursor.accept_events(vec![put("/a", 10), put("/b", 11), put("/c", 11)]);
        assert_eq!(got.len(), 3);
        assert_eq!(cursor.next, 12);

        // A resumed stream that repeats revision 11 (it must not, but if it does): dropped.
        let got = cursor.accept_events(vec![put("/c", 11), put("/d", 12)]);
        assert_eq!(got.iter().map(|e| e.revision()).collect::<Vec<_>>(), vec![12]);
        assert_eq!(cursor.next, 13);

        // Progress at the last event revision is fine; below it is stale; above moves on (+1).
        assert_eq!(cursor.accept_progress(12), Some(12));
        assert_eq!(cursor.accept_progress(11), None);
        assert_eq!(cursor.accept_progress(20), Some(20));
        assert_eq!(cursor.next, 21);
        // After a progress at 20, an event at 20 would be a repeat.
        assert!(cursor.accept_events(vec![put("/e", 20)]).is_empty());
    }

    #[test]
    fn future_start_ignores_progress_below_it() {
        // A watch from revision 13 while etcd is at 8: etcd < 3.5.22 reports 8.
        let mut cursor = Cursor { next: 13 };
        assert_eq!(cursor.accept_progress(8), None);
        assert_eq!(cursor.accept_progress(12), Some(12));
        assert_eq!(cursor.next, 13);
    }
}
