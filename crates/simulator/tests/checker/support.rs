//! Hand-written runs for the checker's tests: a change log written key by key, deliveries cut from
//! it, and one correct run holding every kind of watch the checker reads, for each test to break
//! one thing in. Deliveries are written out event by event rather than derived, so the tests do
//! not share the checker's reading of history.

use std::collections::BTreeMap;

use listwatch_simulator::checker::{Guarantee, Verdict, check};
use listwatch_simulator::record::{
    Change, ClientRecord, Compaction, Delivery, EventKind, HistoryEvent, Known, ListRecord, ListResult, ObjectState,
    StreamEnd, WatchRecord, WatchRequest,
};

pub const CONFIGMAPS: &str = "configmaps";

/// Storage's change log, written one key per revision from revision 1.
#[derive(Default)]
pub struct Log {
    pub events: Vec<HistoryEvent>,
}

impl Log {
    pub fn create(&mut self, namespace: &str, name: &str, labels: &[(&str, &str)]) -> i64 {
        self.put(CONFIGMAPS, namespace, name, labels)
    }

    pub fn update(&mut self, namespace: &str, name: &str, labels: &[(&str, &str)]) -> i64 {
        self.put(CONFIGMAPS, namespace, name, labels)
    }

    /// A write of another resource, which no configmap watch may see.
    pub fn write_other(&mut self, resource: &str, namespace: &str, name: &str) -> i64 {
        self.put(resource, namespace, name, &[])
    }

    pub fn delete(&mut self, namespace: &str, name: &str) -> i64 {
        let last = self.last_put(CONFIGMAPS, namespace, name, i64::MAX).expect("deleting a key never written").clone();
        let revision = self.next_revision();
        self.events.push(HistoryEvent { revision, kind: Change::Delete, created: false, ..last });
        revision
    }

    fn put(&mut self, resource: &str, namespace: &str, name: &str, labels: &[(&str, &str)]) -> i64 {
        let revision = self.next_revision();
        let existing = self.state(resource, namespace, name, revision - 1).map(|last| last.uid.clone());
        self.events.push(HistoryEvent {
            revision,
            kind: Change::Put,
            created: existing.is_none(),
            group: String::new(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: existing.unwrap_or_else(|| format!("{name}-{revision}")),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            // Every write's content differs.
            fingerprint: 0xf000 + revision as u64,
            object: None,
        });
        revision
    }

    fn next_revision(&self) -> i64 {
        self.events.last().map_or(1, |last| last.revision + 1)
    }

    /// The write at `revision`.
    pub fn write(&self, revision: i64) -> &HistoryEvent {
        self.events.iter().find(|write| write.revision == revision).expect("no write at that revision")
    }

    fn last_put(&self, resource: &str, namespace: &str, name: &str, at: i64) -> Option<&HistoryEvent> {
        self.events.iter().rev().find(|write| {
            write.revision <= at && write.resource == resource && write.namespace == namespace && write.name == name
        })
    }

    /// The key's live state at `at`, if it exists then.
    fn state(&self, resource: &str, namespace: &str, name: &str, at: i64) -> Option<&HistoryEvent> {
        self.last_put(resource, namespace, name, at).filter(|write| write.kind == Change::Put)
    }

    /// An event of `kind` carrying the state written (or deleted) at `revision`.
    pub fn event(&self, kind: EventKind, revision: i64) -> Delivery {
        event_of(kind, self.write(revision), revision)
    }

    /// The DELETED a filtered watch gets when the update at `revision` takes the object out of its
    /// scope: the state before the update, at the update's revision.
    pub fn left_scope(&self, revision: i64) -> Delivery {
        let write = self.write(revision);
        let before = self.state(&write.resource, &write.namespace, &write.name, revision - 1).expect("no state before");
        event_of(EventKind::Deleted, before, revision)
    }

    /// An initial (or synthetic) ADDED event of the key's state at `at`.
    pub fn initial(&self, namespace: &str, name: &str, at: i64) -> Delivery {
        let state = self.state(CONFIGMAPS, namespace, name, at).expect("no such object then");
        event_of(EventKind::Added, state, state.revision)
    }

    /// The key's state at `at`, as a store or a LIST holds it.
    pub fn object(&self, namespace: &str, name: &str, at: i64) -> ObjectState {
        let state = self.state(CONFIGMAPS, namespace, name, at).expect("no such object then");
        ObjectState {
            namespace: state.namespace.clone(),
            name: state.name.clone(),
            uid: state.uid.clone(),
            resource_version: state.revision,
            fingerprint: state.fingerprint,
        }
    }

    /// A store holding these keys as they are at the end of the log.
    pub fn store(&self, keys: &[(&str, &str)]) -> Vec<ObjectState> {
        keys.iter().map(|(namespace, name)| self.object(namespace, name, i64::MAX)).collect()
    }
}

fn event_of(kind: EventKind, state: &HistoryEvent, revision: i64) -> Delivery {
    Delivery::Event {
        at_ms: revision as u64 * 10,
        kind,
        namespace: state.namespace.clone(),
        name: state.name.clone(),
        uid: state.uid.clone(),
        resource_version: revision,
        fingerprint: state.fingerprint,
        labels: state.labels.clone(),
    }
}

pub fn bookmark(revision: i64) -> Delivery {
    Delivery::Bookmark { at_ms: revision as u64 * 10, resource_version: revision, initial_events_end: false }
}

pub fn initial_events_end(revision: i64) -> Delivery {
    Delivery::Bookmark { at_ms: revision as u64 * 10, resource_version: revision, initial_events_end: true }
}

pub fn gone(at_ms: u64) -> Delivery {
    Delivery::Error { at_ms, code: 410, reason: "Expired".into(), message: "too old resource version".into() }
}

/// What a client limits itself to; its watches ask for the same.
#[derive(Clone, Default)]
pub struct Scope {
    pub namespace: Option<&'static str>,
    pub labels: Option<&'static str>,
    pub fields: Option<&'static str>,
}

impl Scope {
    pub fn watch(&self, seq: u32, resource_version: &str, deliveries: Vec<Delivery>) -> WatchRecord {
        WatchRecord {
            client: String::new(),
            seq,
            opened_ms: seq as u64,
            request: WatchRequest {
                group: String::new(),
                resource: CONFIGMAPS.into(),
                namespace: self.namespace.map(Into::into),
                label_selector: self.labels.map(Into::into),
                field_selector: self.fields.map(Into::into),
                resource_version: resource_version.into(),
                send_initial_events: None,
                allow_bookmarks: true,
            },
            deliveries,
            end: StreamEnd::Open,
            ended_ms: None,
        }
    }

    /// A streaming list: a watch asking for initial events.
    pub fn streaming_watch(&self, seq: u32, resource_version: &str, deliveries: Vec<Delivery>) -> WatchRecord {
        let mut watch = self.watch(seq, resource_version, deliveries);
        watch.request.send_initial_events = Some(true);
        watch
    }

    pub fn client(
        &self,
        id: &str,
        lists: Vec<ListRecord>,
        watches: Vec<WatchRecord>,
        store: Vec<ObjectState>,
    ) -> ClientRecord {
        let named = |mut watch: WatchRecord| {
            watch.client = id.into();
            watch
        };
        ClientRecord {
            id: id.into(),
            resource: CONFIGMAPS.into(),
            group: String::new(),
            namespace: self.namespace.map(Into::into),
            label_selector: self.labels.map(Into::into),
            field_selector: self.fields.map(Into::into),
            watches: watches.into_iter().map(named).collect(),
            lists,
            final_store: store,
        }
    }
}

pub fn list(seq: u32, resource_version: i64, items: Vec<ObjectState>) -> ListRecord {
    ListRecord {
        client: String::new(),
        seq,
        at_ms: seq as u64,
        resource_version_requested: String::new(),
        result: ListResult::Ok { resource_version, items },
    }
}

/// A whole run, to break one thing in and judge.
pub struct Run {
    pub log: Log,
    pub clients: Vec<ClientRecord>,
    pub known: Known,
}

impl Run {
    pub fn check(&self) -> Verdict {
        check(&self.log.events, &self.clients, &self.known)
    }

    pub fn client(&mut self, id: &str) -> &mut ClientRecord {
        self.clients.iter_mut().find(|client| client.id == id).expect("no such client")
    }

    pub fn deliveries(&mut self, id: &str, seq: u32) -> &mut Vec<Delivery> {
        let watch = self.client(id).watches.iter_mut().find(|watch| watch.seq == seq).expect("no such watch");
        &mut watch.deliveries
    }
}

/// The change log every test starts from (revisions in the comments).
pub fn log() -> Log {
    let web = [("app", "web")];
    let db = [("app", "db")];
    let mut log = Log::default();
    log.create("a", "x", &web); // 1
    log.create("a", "y", &db); // 2
    log.create("b", "z", &web); // 3
    log.update("a", "x", &web); // 4
    log.update("a", "y", &web); // 5: y enters app=web
    log.update("a", "x", &db); // 6: x leaves app=web
    log.delete("b", "z"); // 7
    log.create("b", "w", &web); // 8
    log.update("a", "y", &web); // 9
    log.delete("a", "x"); // 10: x, outside app=web, goes
    log.update("b", "w", &web); // 11
    log.create("a", "v", &[]); // 12
    log.write_other("secrets", "a", "s"); // 13
    log.update("a", "y", &web); // 14
    log
}

/// A correct run over [`log`]: four clients whose every delivery is right.
///
/// * `all`: no selectors; lists at 3, watches from 3 until the stream breaks after a bookmark at
///   8, resumes from 8.
/// * `web`: `app=web`; lists at 1 and watches from 1 while objects move in and out of the selector.
/// * `ns-a`: namespace `a`; a streaming list whose initial events end at 5, then live events.
/// * `y-only`: `metadata.name=y` in `a`; its watch from 2 gets a 410 after a compaction to 6, and it
///   relists at 9 and watches from there.
pub fn correct_run() -> Run {
    use EventKind::{Added, Deleted, Modified};
    let log = log();

    let all = Scope::default();
    let mut broken = all.watch(
        2,
        "3",
        vec![
            log.event(Modified, 4),
            log.event(Modified, 5),
            log.event(Modified, 6),
            log.event(Deleted, 7),
            log.event(Added, 8),
            bookmark(8),
        ],
    );
    broken.end = StreamEnd::Broken { error: "unexpected EOF".into() };
    let resumed = all.watch(
        3,
        "8",
        vec![
            log.event(Modified, 9),
            log.event(Deleted, 10),
            log.event(Modified, 11),
            log.event(Added, 12),
            log.event(Modified, 14),
            bookmark(14),
        ],
    );
    let first_list = vec![log.object("a", "x", 3), log.object("a", "y", 3), log.object("b", "z", 3)];
    let all = all.client(
        "all",
        vec![list(1, 3, first_list)],
        vec![broken, resumed],
        log.store(&[("a", "y"), ("a", "v"), ("b", "w")]),
    );

    let web = Scope { labels: Some("app=web"), ..Scope::default() };
    let watch = web.watch(
        2,
        "1",
        vec![
            log.event(Added, 3),
            log.event(Modified, 4),
            log.event(Added, 5),
            log.left_scope(6),
            log.event(Deleted, 7),
            log.event(Added, 8),
            bookmark(8),
            log.event(Modified, 9),
            log.event(Modified, 11),
            bookmark(12),
            log.event(Modified, 14),
        ],
    );
    let web = web.client(
        "web",
        vec![list(1, 1, vec![log.object("a", "x", 1)])],
        vec![watch],
        log.store(&[("a", "y"), ("b", "w")]),
    );

    let namespace_a = Scope { namespace: Some("a"), ..Scope::default() };
    let streaming = namespace_a.streaming_watch(
        1,
        "",
        vec![
            log.initial("a", "y", 5),
            log.initial("a", "x", 5),
            initial_events_end(5),
            log.event(Modified, 6),
            log.event(Modified, 9),
            log.event(Deleted, 10),
            log.event(Added, 12),
            bookmark(13),
            log.event(Modified, 14),
        ],
    );
    let namespace_a = namespace_a.client("ns-a", vec![], vec![streaming], log.store(&[("a", "y"), ("a", "v")]));

    let y_only = Scope { namespace: Some("a"), fields: Some("metadata.name=y"), ..Scope::default() };
    let mut compacted = y_only.watch(2, "2", vec![gone(101)]);
    compacted.end = StreamEnd::Closed;
    let after_relist = y_only.watch(4, "9", vec![log.event(Modified, 14)]);
    let y_only = y_only.client(
        "y-only",
        vec![list(1, 2, vec![log.object("a", "y", 2)]), list(3, 9, vec![log.object("a", "y", 9)])],
        vec![compacted, after_relist],
        log.store(&[("a", "y")]),
    );

    let known =
        Known { compactions: vec![Compaction { at_ms: 95, revision: 6 }], cache_resets: vec![], window_capacity: 100 };
    Run { log, clients: vec![all, web, namespace_a, y_only], known }
}

/// Asserts the verdict's totals are exactly `expected` (every other guarantee zero), and that
/// `passed` agrees.
#[track_caller]
pub fn assert_violations(verdict: &Verdict, expected: &[(Guarantee, usize)]) {
    let mut want: BTreeMap<Guarantee, usize> = Guarantee::zero_counts();
    want.extend(expected.iter().copied());
    let found: Vec<_> = verdict.clients.iter().flat_map(|client| &client.violations).collect();
    assert_eq!(verdict.violations, want, "violations found: {found:#?}");
    assert_eq!(verdict.passed, expected.iter().all(|(_, count)| *count == 0));
}
