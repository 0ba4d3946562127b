//! What one in-process client saw, recorded between its reflector and the server: a
//! [`ListerWatcher`] that passes every LIST and WATCH through to the real [`Api`] and writes
//! down each request, each delivered event, bookmark and error, and how each stream ended.
//! The reflector under test is the client crate's own, untouched; the checker later compares
//! these records with storage's history.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use listwatch_client::event::WatchEvent;
use listwatch_client::reflector::ListerWatcher;
use listwatch_client::watch::WatchStream;
use listwatch_client::{Api, DynamicObject, Error, ListParams, ObjectList, WatchParams};
use listwatch_simulator::record::{
    Delivery, EventKind, ListRecord, ListResult, ObjectState, StreamEnd, WatchRecord, WatchRequest, labels_of,
};

/// The records of one client, filled as it runs.
#[derive(Default)]
pub struct ClientLog {
    /// Every LIST, in order.
    pub lists: Vec<ListRecord>,
    /// Every WATCH, in the order they were opened.
    pub watches: Vec<WatchRecord>,
}

/// An [`Api`] that records what passes through it. Given several servers' [`Api`]s it fails
/// over as a client behind a load balancer does: a request that cannot reach its server is
/// an error to the reflector (which backs off and retries, from its resourceVersion), and the
/// retry goes to the next server.
pub struct Observed {
    apis: Vec<Api<DynamicObject>>,
    current: std::sync::atomic::AtomicUsize,
    client: String,
    started: Instant,
    log: Arc<Mutex<ClientLog>>,
}

impl Observed {
    /// Records `client`'s traffic through `api`; times are milliseconds since `started`.
    pub fn new(
        apis: Vec<Api<DynamicObject>>,
        first: usize,
        client: &str,
        started: Instant,
    ) -> (Observed, Arc<Mutex<ClientLog>>) {
        let log = Arc::new(Mutex::new(ClientLog::default()));
        let current = std::sync::atomic::AtomicUsize::new(first % apis.len().max(1));
        (Observed { apis, current, client: client.to_string(), started, log: log.clone() }, log)
    }

    /// The server requests go to now.
    fn api(&self) -> &Api<DynamicObject> {
        &self.apis[self.current.load(std::sync::atomic::Ordering::Relaxed) % self.apis.len()]
    }

    /// After an error: the next request goes to the next server if this one was unreachable.
    fn fail_over(&self, error: &Error) {
        if matches!(error, Error::Request { .. }) && self.apis.len() > 1 {
            self.current.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// What the checker keeps of an object.
pub fn object_state(object: &DynamicObject) -> ObjectState {
    ObjectState::of(&object.0, "")
}

fn millis_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl ListerWatcher<DynamicObject> for Observed {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<DynamicObject>>, Error>> {
        Box::pin(async move {
            let at_ms = millis_since(self.started);
            let result = self.api().list_shared(params).await;
            if let Err(e) = &result {
                self.fail_over(e);
            }
            let recorded = match &result {
                Ok(list) => ListResult::Ok {
                    resource_version: list.metadata.resource_version.parse().unwrap_or(-1),
                    items: list.items.iter().map(|o| object_state(o)).collect(),
                },
                Err(e) => ListResult::Failed { code: status_code(e), message: e.to_string() },
            };
            let mut log = self.log.lock().expect("log lock");
            let seq = u32::try_from(log.lists.len()).unwrap_or(u32::MAX);
            log.lists.push(ListRecord {
                client: self.client.clone(),
                seq,
                at_ms,
                resource_version_requested: params.resource_version.clone(),
                result: recorded,
            });
            result
        })
    }

    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<DynamicObject>, Error>> {
        Box::pin(async move {
            let shared = self.watch_shared(params).await?;
            Ok(shared.map(|item| item.map(|event| event.map(Arc::unwrap_or_clone))).boxed())
        })
    }

    fn watch_shared<'a>(
        &'a self,
        params: &'a WatchParams,
    ) -> BoxFuture<'a, Result<WatchStream<Arc<DynamicObject>>, Error>> {
        Box::pin(async move {
            let opened_ms = millis_since(self.started);
            let request = WatchRequest {
                group: self.api().resource().group.clone(),
                resource: self.api().resource().plural.clone(),
                namespace: self.api().namespace().map(String::from),
                label_selector: params.label_selector.clone(),
                field_selector: params.field_selector.clone(),
                resource_version: params.resource_version.clone(),
                send_initial_events: params.send_initial_events,
                allow_bookmarks: params.allow_bookmarks,
            };
            let seq = {
                let mut log = self.log.lock().expect("log lock");
                let seq = u32::try_from(log.watches.len()).unwrap_or(u32::MAX);
                log.watches.push(WatchRecord {
                    client: self.client.clone(),
                    seq,
                    opened_ms,
                    request,
                    deliveries: Vec::new(),
                    end: StreamEnd::Open,
                    ended_ms: None,
                });
                seq as usize
            };
            let stream = match self.api().watch_shared(params).await {
                Ok(stream) => stream,
                Err(e) => {
                    self.fail_over(&e);
                    let mut log = self.log.lock().expect("log lock");
                    if let Some(record) = log.watches.get_mut(seq) {
                        record.deliveries.push(error_delivery(millis_since(self.started), &e));
                        record.end = StreamEnd::Broken { error: e.to_string() };
                        record.ended_ms = Some(millis_since(self.started));
                    }
                    return Err(e);
                }
            };
            Ok(recording(stream, self.log.clone(), seq, self.started).boxed())
        })
    }
}

/// `stream`, with each item written into watch `seq` of `log` as it passes, and the end.
fn recording(
    stream: WatchStream<Arc<DynamicObject>>,
    log: Arc<Mutex<ClientLog>>,
    seq: usize,
    started: Instant,
) -> impl futures::Stream<Item = Result<WatchEvent<Arc<DynamicObject>>, Error>> + Send {
    /// Marks the stream's end when the consumer drops it (ended by the server or not).
    struct EndGuard {
        log: Arc<Mutex<ClientLog>>,
        seq: usize,
        started: Instant,
    }
    impl Drop for EndGuard {
        fn drop(&mut self) {
            // The run may have taken the records already (it stops its clients after).
            if let Ok(mut log) = self.log.lock()
                && let Some(record) = log.watches.get_mut(self.seq)
                && record.ended_ms.is_none()
            {
                record.ended_ms = Some(millis_since(self.started));
                if matches!(record.end, StreamEnd::Open) {
                    record.end = StreamEnd::Closed;
                }
            }
        }
    }
    let guard = EndGuard { log: log.clone(), seq, started };
    stream.map(move |item| {
        let _keep = &guard;
        let at_ms = millis_since(started);
        let mut log = log.lock().expect("log lock");
        // Nothing to record into once the run has taken the records.
        let Some(record) = log.watches.get_mut(seq) else { return item };
        match &item {
            Ok(WatchEvent::Added(o)) => record.deliveries.push(event(at_ms, EventKind::Added, o)),
            Ok(WatchEvent::Modified(o)) => record.deliveries.push(event(at_ms, EventKind::Modified, o)),
            Ok(WatchEvent::Deleted(o)) => record.deliveries.push(event(at_ms, EventKind::Deleted, o)),
            Ok(WatchEvent::Bookmark(b)) => record.deliveries.push(Delivery::Bookmark {
                at_ms,
                resource_version: b.resource_version.parse().unwrap_or(-1),
                initial_events_end: b.is_initial_events_end(),
            }),
            Ok(WatchEvent::Error(status)) => record.deliveries.push(Delivery::Error {
                at_ms,
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            }),
            Err(e) => {
                record.deliveries.push(error_delivery(at_ms, e));
                record.end = StreamEnd::Broken { error: e.to_string() };
            }
        }
        item
    })
}

fn event(at_ms: u64, kind: EventKind, object: &DynamicObject) -> Delivery {
    let state = object_state(object);
    Delivery::Event {
        at_ms,
        kind,
        namespace: state.namespace,
        name: state.name,
        uid: state.uid,
        resource_version: state.resource_version,
        fingerprint: state.fingerprint,
        labels: labels_of(&object.0),
    }
}

/// An error that ended a watch, as a delivery (a Status's code, 0 for a transport error).
fn error_delivery(at_ms: u64, e: &Error) -> Delivery {
    match e {
        Error::Api(status) => {
            Delivery::Error { at_ms, code: status.code, reason: status.reason.clone(), message: status.message.clone() }
        }
        other => Delivery::Error { at_ms, code: 0, reason: "Transport".into(), message: other.to_string() },
    }
}

fn status_code(e: &Error) -> u16 {
    match e {
        Error::Api(status) => status.code,
        _ => 0,
    }
}
