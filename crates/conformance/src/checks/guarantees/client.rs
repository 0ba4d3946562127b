//! The observing clients of the guarantee checks: each lists (or starts a streaming list) and
//! watches the writer's namespace as a reflector would, resuming from the last resourceVersion
//! it saw whenever the server ends a watch cleanly, and writes down, in the simulator's record
//! format, every request, every event, bookmark and error, how each stream ended, and the store
//! it ends with. Nothing is judged here; `checker::check` judges the records.
//!
//! A client does not relist: after a 410, a broken stream or a streaming list cut before its
//! initial events ended, it stops, and the checker finds what it missed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use listwatch_simulator::record::{
    ClientRecord, Delivery, EventKind, ListRecord, ListResult, ObjectState, StreamEnd, WatchRecord, WatchRequest,
    labels_of,
};
use serde_json::Value;
use tokio::sync::watch;

use super::workload::{SELECTOR, is_ours};
use crate::checks::initial::{open_streaming_path, streaming_lists_unsupported};
use crate::fixture::encode;
use crate::http::Status;
use crate::watch::{Read, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

/// How a client starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// A LIST, then a watch from the list's resourceVersion.
    List,
    /// A streaming list (`sendInitialEvents=true`), whose initial events fill the store.
    StreamingList,
}

/// What one client does.
#[derive(Clone, Copy, Debug)]
pub struct ClientPlan {
    pub id: &'static str,
    /// Whether it lists and watches with [`SELECTOR`] (else every object of the namespace).
    pub selected_only: bool,
    pub start: Start,
    /// `allowWatchBookmarks=true`.
    pub bookmarks: bool,
    /// `timeoutSeconds` of each watch: the server ends it, and the client resumes from the last
    /// resourceVersion it saw (a bookmark's, typically, since servers send one just before).
    pub timeout_seconds: Option<u64>,
}

/// Where the run is, as the writer tells the clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Writes are still coming.
    Writing,
    /// The last write is at `revision`: a client has seen everything once it delivered that
    /// far, and gives up at `deadline`.
    Written { revision: i64, deadline: tokio::time::Instant },
    /// The writer failed; the run is void.
    Aborted,
}

/// A client that has started (its first watch is open), ready to follow the writes.
pub struct Started<'a> {
    observer: Observer<'a>,
    watch: WatchStream,
}

/// A client's requests, records and store.
struct Observer<'a> {
    target: &'a Target,
    plan: ClientPlan,
    collection: String,
    namespace: String,
    started: Instant,
    record: ClientRecord,
    store: BTreeMap<String, ObjectState>,
    /// The resourceVersion of the last event or bookmark delivered: where a resume starts.
    last_rv: Option<i64>,
    /// The highest resourceVersion delivered.
    highest_rv: i64,
    /// Events of objects the writer did not make, left out of the record.
    ignored: usize,
}

/// What became of a client.
pub enum Followed {
    Recorded {
        record: ClientRecord,
        ignored: usize,
    },
    /// The server does not serve streaming lists (storage or feature gate): why.
    Unsupported(String),
}

/// How one watch ended.
enum WatchEnd {
    /// It delivered the last write (or the run ended): the client is done.
    Done,
    /// The server ended it cleanly: resume.
    Closed,
    /// An ERROR event, a broken stream or a malformed event: the client stops.
    Stopped(StreamEnd),
    /// The first event of a streaming list says the server cannot serve one.
    Unsupported(String),
}

impl ClientPlan {
    /// Lists (for [`Start::List`]) and opens the first watch. `started` is the run's clock.
    pub async fn start<'a>(
        self,
        target: &'a Target,
        namespace: &str,
        started: Instant,
    ) -> Result<Result<Started<'a>, String>, CheckFailure> {
        let resource = target.resource;
        let collection = resource.collection(namespace);
        let mut client = Observer {
            target,
            plan: self,
            collection,
            namespace: namespace.to_string(),
            started,
            record: ClientRecord {
                id: self.id.to_string(),
                resource: resource.plural().into(),
                group: resource.group().into(),
                namespace: Some(namespace.to_string()),
                label_selector: self.selected_only.then(|| SELECTOR.to_string()),
                field_selector: None,
                watches: Vec::new(),
                lists: Vec::new(),
                final_store: Vec::new(),
            },
            store: BTreeMap::new(),
            last_rv: None,
            highest_rv: 0,
            ignored: 0,
        };
        let watch = match self.start {
            Start::List => {
                let from = client.list().await?;
                client.open(&from.to_string(), false).await?
            }
            Start::StreamingList => match client.open("", true).await {
                Ok(watch) => watch,
                Err(CheckFailure::Skipped { why }) => return Ok(Err(why)),
                Err(failure) => return Err(failure),
            },
        };
        Ok(Ok(Started { observer: client, watch }))
    }
}

impl Observer<'_> {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn selector_query(&self) -> String {
        if self.plan.selected_only { format!("labelSelector={}", encode(SELECTOR)) } else { String::new() }
    }

    /// A consistent LIST: fills the store and returns the list's resourceVersion.
    async fn list(&mut self) -> Result<i64, CheckFailure> {
        let at_ms = self.now_ms();
        let query = self.selector_query();
        let path = if query.is_empty() { self.collection.clone() } else { format!("{}?{query}", self.collection) };
        let list = self.target.get(&path).await?.expect(200)?;
        let resource_version: i64 =
            list["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                CheckFailure::failed_with(
                    format!("GET {path}: a list has no numeric metadata.resourceVersion"),
                    list.to_string(),
                )
            })?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        for item in items.iter().filter(|item| is_ours(name_of(item))) {
            let state = object_state(item, &self.namespace);
            self.store.insert(state.name.clone(), state);
        }
        self.record.lists.push(ListRecord {
            client: self.record.id.clone(),
            seq: self.next_seq(),
            at_ms,
            resource_version_requested: String::new(),
            result: ListResult::Ok { resource_version, items: self.store.values().cloned().collect() },
        });
        Ok(resource_version)
    }

    /// The number of the next request among this client's lists and watches.
    fn next_seq(&self) -> u32 {
        u32::try_from(self.record.lists.len() + self.record.watches.len()).unwrap_or(u32::MAX)
    }

    /// Opens a watch from `resource_version` (a streaming list from `""` when `streaming`) and
    /// records its request.
    async fn open(&mut self, resource_version: &str, streaming: bool) -> Result<WatchStream, CheckFailure> {
        let mut query = vec!["watch=1".to_string()];
        let selector = self.selector_query();
        if !selector.is_empty() {
            query.push(selector);
        }
        if streaming {
            query.push("sendInitialEvents=true&resourceVersionMatch=NotOlderThan".into());
        } else {
            query.push(format!("resourceVersion={resource_version}"));
        }
        if self.plan.bookmarks {
            query.push("allowWatchBookmarks=true".into());
        }
        if let Some(seconds) = self.plan.timeout_seconds {
            query.push(format!("timeoutSeconds={seconds}"));
        }
        let path = format!("{}?{}", self.collection, query.join("&"));
        let opened_ms = self.now_ms();
        let watch =
            if streaming { open_streaming_path(self.target, &path).await? } else { self.target.watch(&path).await? };
        self.record.watches.push(WatchRecord {
            client: self.record.id.clone(),
            seq: self.next_seq(),
            opened_ms,
            request: WatchRequest {
                group: self.target.resource.group().into(),
                resource: self.target.resource.plural().into(),
                namespace: Some(self.namespace.clone()),
                label_selector: self.record.label_selector.clone(),
                field_selector: None,
                resource_version: resource_version.to_string(),
                send_initial_events: streaming.then_some(true),
                allow_bookmarks: self.plan.bookmarks,
            },
            deliveries: Vec::new(),
            end: StreamEnd::Open,
            ended_ms: None,
        });
        Ok(watch)
    }

    /// Records one event and applies it to the store; says how the watch ends if it does.
    fn deliver(&mut self, event: WatchEvent) -> Option<WatchEnd> {
        let at_ms = self.now_ms();
        let record = self.record.watches.last_mut().expect("a watch was opened");
        let first = record.deliveries.is_empty();
        let kind = match event.kind.as_str() {
            "ADDED" => EventKind::Added,
            "MODIFIED" => EventKind::Modified,
            "DELETED" => EventKind::Deleted,
            "BOOKMARK" => {
                let resource_version = event.rv();
                record.deliveries.push(Delivery::Bookmark {
                    at_ms,
                    resource_version,
                    initial_events_end: event.is_initial_events_end(),
                });
                self.last_rv = Some(resource_version);
                self.highest_rv = self.highest_rv.max(resource_version);
                return None;
            }
            "ERROR" => {
                if first
                    && record.request.send_initial_events == Some(true)
                    && let Some(CheckFailure::Skipped { why }) = streaming_lists_unsupported(&event)
                {
                    return Some(WatchEnd::Unsupported(why));
                }
                let status = Status::from_json(&event.object);
                record.deliveries.push(Delivery::Error {
                    at_ms,
                    code: u16::try_from(status.code).unwrap_or(0),
                    reason: status.reason,
                    message: status.message,
                });
                return Some(WatchEnd::Stopped(StreamEnd::Closed));
            }
            other => {
                let error = format!("an event of unknown type {other:?}: {}", event.line);
                return Some(WatchEnd::Stopped(StreamEnd::Broken { error }));
            }
        };
        if !is_ours(event.name()) {
            self.ignored += 1;
            return None;
        }
        let state = object_state(&event.object, &self.namespace);
        record.deliveries.push(Delivery::Event {
            at_ms,
            kind,
            namespace: state.namespace.clone(),
            name: state.name.clone(),
            uid: state.uid.clone(),
            resource_version: state.resource_version,
            fingerprint: state.fingerprint,
            labels: labels_of(&event.object),
        });
        self.last_rv = Some(state.resource_version);
        self.highest_rv = self.highest_rv.max(state.resource_version);
        match kind {
            EventKind::Deleted => self.store.remove(&state.name),
            EventKind::Added | EventKind::Modified => self.store.insert(state.name.clone(), state),
        };
        None
    }
}

impl Started<'_> {
    /// Follows the writes until the client has delivered the last one, the run's deadline
    /// passes, or a watch ends in a way a client cannot resume from.
    pub async fn follow(mut self, mut run: watch::Receiver<RunState>) -> Followed {
        loop {
            let end = self.read_watch(&mut run).await;
            let ended_ms = self.observer.now_ms();
            let record = self.observer.record.watches.last_mut().expect("a watch was opened");
            match end {
                WatchEnd::Unsupported(why) => return Followed::Unsupported(why),
                WatchEnd::Done => break,
                WatchEnd::Stopped(how) => {
                    record.end = how;
                    record.ended_ms = Some(ended_ms);
                    break;
                }
                WatchEnd::Closed => {
                    record.end = StreamEnd::Closed;
                    record.ended_ms = Some(ended_ms);
                    let streaming_cut = record.request.send_initial_events == Some(true)
                        && !record.deliveries.iter().any(is_initial_events_end);
                    let Some(from) = self.observer.last_rv.filter(|_| !streaming_cut) else { break };
                    // As a reflector does, a watch that cannot be reopened at once is tried
                    // again with a short back-off (a busy machine can time a request out).
                    let mut reopened = self.observer.open(&from.to_string(), false).await;
                    for backoff_ms in [100, 200, 400, 800] {
                        if reopened.is_ok() {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                        reopened = self.observer.open(&from.to_string(), false).await;
                    }
                    match reopened {
                        Ok(watch) => self.watch = watch,
                        Err(failure) => {
                            let why = failure.describe();
                            let at_ms = self.observer.now_ms();
                            let record = self.observer.record.watches.last_mut().expect("a watch was opened");
                            record.deliveries.push(Delivery::Error {
                                at_ms,
                                code: 0,
                                reason: String::new(),
                                message: why.clone(),
                            });
                            record.end = StreamEnd::Broken { error: why };
                            record.ended_ms = Some(at_ms);
                            break;
                        }
                    }
                }
            }
        }
        self.observer.record.final_store = self.observer.store.into_values().collect();
        Followed::Recorded { record: self.observer.record, ignored: self.observer.ignored }
    }

    /// Reads the open watch until it ends or the client is done.
    async fn read_watch(&mut self, run: &mut watch::Receiver<RunState>) -> WatchEnd {
        loop {
            let state = *run.borrow();
            let within = match state {
                RunState::Aborted => return WatchEnd::Done,
                RunState::Written { revision, .. } if self.observer.highest_rv >= revision => return WatchEnd::Done,
                RunState::Written { deadline, .. } => {
                    match deadline.checked_duration_since(tokio::time::Instant::now()) {
                        Some(left) if !left.is_zero() => left,
                        _ => return WatchEnd::Done,
                    }
                }
                // Woken by the run's state changing, or an event.
                RunState::Writing => Duration::from_secs(3600),
            };
            let read = tokio::select! {
                read = self.watch.read(within) => read,
                changed = run.changed() => match changed {
                    Ok(()) => continue,
                    Err(_) => return WatchEnd::Done,
                },
            };
            match read {
                Ok(Read::Event(event)) => {
                    if let Some(end) = self.observer.deliver(event) {
                        return end;
                    }
                }
                Ok(Read::Ended) => return WatchEnd::Closed,
                Ok(Read::TimedOut) => {}
                Err(failure) => return WatchEnd::Stopped(StreamEnd::Broken { error: failure.describe() }),
            }
        }
    }
}

fn is_initial_events_end(delivery: &Delivery) -> bool {
    matches!(delivery, Delivery::Bookmark { initial_events_end: true, .. })
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// What the checker keeps of an object (its namespace when the object does not say).
pub fn object_state(object: &Value, namespace: &str) -> ObjectState {
    ObjectState::of(object, namespace)
}
