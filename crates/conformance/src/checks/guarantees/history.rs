//! Storage's change log for the writer's namespace, rebuilt from the writer's own
//! acknowledgements (see the module doc of `guarantees` for why that is sound).
//!
//! A create or update answers the stored object: its resourceVersion is the write's revision
//! and its content is the state written. A delete answers a Status, without the delete's
//! revision; it lies strictly between the revisions of the acknowledged writes before and after
//! it (writes go one at a time). Within that interval the writer made no other write, so any
//! event of the deleted object that a watch delivered there can only be the delete's; the
//! revision most watches agree on is taken. A delete no watch showed is placed just after the
//! write before it, so the watches that missed it are still blamed for it.

use std::collections::BTreeMap;

use listwatch_simulator::record::{Change, ClientRecord, Delivery, HistoryEvent, labels_of};
use serde_json::Value;

use super::client::object_state;
use super::workload::Ack;
use crate::fixture::rv;
use crate::resource::Resource;

/// The rebuilt change log, and how its deletes were placed.
#[derive(Debug, Default)]
pub struct Rebuilt {
    pub history: Vec<HistoryEvent>,
    /// Deletes no watch showed (placed just after the write before them).
    pub unseen_deletes: usize,
    /// Deletes that watches showed at different revisions.
    pub disputed_deletes: usize,
}

/// Rebuilds the change log of `resource` in `namespace` from `acks`, taking delete revisions
/// from what the `clients` delivered.
pub fn rebuild(acks: &[Ack], resource: Resource, namespace: &str, clients: &[ClientRecord]) -> Rebuilt {
    let put_revisions: Vec<Option<i64>> = acks
        .iter()
        .map(|ack| match ack {
            Ack::Put { object, .. } => Some(rv(object)),
            Ack::Delete { .. } => None,
        })
        .collect();
    let mut rebuilt = Rebuilt::default();
    for (i, ack) in acks.iter().enumerate() {
        let event = match ack {
            Ack::Put { created, object } => {
                history_event(object, resource, namespace, rv(object), Change::Put, *created)
            }
            Ack::Delete { deleted } => {
                let before = put_revisions[..i].iter().rev().find_map(|r| *r).unwrap_or(0);
                let after = put_revisions[i + 1..].iter().find_map(|r| *r).unwrap_or(i64::MAX);
                let name = deleted["metadata"]["name"].as_str().unwrap_or_default();
                let seen = revisions_seen(clients, name, before, after);
                if seen.len() > 1 {
                    rebuilt.disputed_deletes += 1;
                }
                // The revision the most watches showed; the lowest of equals.
                let revision = match seen.iter().max_by_key(|(revision, count)| (**count, -**revision)) {
                    Some((revision, _)) => *revision,
                    None => {
                        rebuilt.unseen_deletes += 1;
                        // After the write before it (a delete placed there, too).
                        rebuilt.history.last().map_or(before, |last| last.revision.max(before)) + 1
                    }
                };
                history_event(deleted, resource, namespace, revision, Change::Delete, false)
            }
        };
        rebuilt.history.push(event);
    }
    rebuilt
}

/// How many deliveries show an event of `name` at each revision in `(before, after)`.
fn revisions_seen(clients: &[ClientRecord], name: &str, before: i64, after: i64) -> BTreeMap<i64, usize> {
    let mut seen = BTreeMap::new();
    let deliveries = clients.iter().flat_map(|c| &c.watches).flat_map(|w| &w.deliveries);
    for delivery in deliveries {
        if let Delivery::Event { name: delivered, resource_version, .. } = delivery
            && delivered == name
            && before < *resource_version
            && *resource_version < after
        {
            *seen.entry(*resource_version).or_default() += 1;
        }
    }
    seen
}

fn history_event(
    object: &Value,
    resource: Resource,
    namespace: &str,
    revision: i64,
    kind: Change,
    created: bool,
) -> HistoryEvent {
    let state = object_state(object, namespace);
    HistoryEvent {
        revision,
        kind,
        created,
        group: resource.group().into(),
        resource: resource.plural().into(),
        namespace: state.namespace,
        name: state.name,
        uid: state.uid,
        labels: labels_of(object),
        fingerprint: state.fingerprint,
        object: None,
    }
}

#[cfg(test)]
mod tests {
    use listwatch_simulator::record::{EventKind, StreamEnd, WatchRecord, WatchRequest};
    use serde_json::json;

    use super::*;

    fn object(name: &str, rv: i64) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"), "resourceVersion": rv.to_string()}})
    }

    fn client(events: &[(&str, i64)]) -> ClientRecord {
        let deliveries = events
            .iter()
            .map(|(name, rv)| Delivery::Event {
                at_ms: 0,
                kind: EventKind::Deleted,
                namespace: "ns".into(),
                name: (*name).into(),
                uid: String::new(),
                resource_version: *rv,
                fingerprint: 0,
                labels: BTreeMap::new(),
            })
            .collect();
        let request = WatchRequest {
            group: String::new(),
            resource: "configmaps".into(),
            namespace: Some("ns".into()),
            label_selector: None,
            field_selector: None,
            resource_version: "1".into(),
            send_initial_events: None,
            allow_bookmarks: false,
        };
        let watch = WatchRecord {
            client: "c".into(),
            seq: 0,
            opened_ms: 0,
            request,
            deliveries,
            end: StreamEnd::Open,
            ended_ms: None,
        };
        ClientRecord {
            id: "c".into(),
            resource: "configmaps".into(),
            group: String::new(),
            namespace: Some("ns".into()),
            label_selector: None,
            field_selector: None,
            watches: vec![watch],
            lists: Vec::new(),
            final_store: Vec::new(),
        }
    }

    #[test]
    fn delete_revisions_come_from_the_watches_within_the_acknowledged_bounds() {
        let acks = [
            Ack::Put { created: true, object: object("g-a", 10) },
            Ack::Put { created: true, object: object("g-b", 12) },
            Ack::Delete { deleted: object("g-a", 10) },
            Ack::Delete { deleted: object("g-b", 12) },
            Ack::Put { created: true, object: object("g-c", 20) },
        ];
        // g-a's delete shown at 14 twice and (wrongly) at 16 once, and once outside its bounds;
        // g-b's delete shown by no watch.
        let clients = [client(&[("g-a", 14), ("g-a", 25)]), client(&[("g-a", 14)]), client(&[("g-a", 16)])];
        let rebuilt = rebuild(&acks, Resource::ConfigMaps, "ns", &clients);
        let revisions: Vec<(i64, &str, Change)> =
            rebuilt.history.iter().map(|e| (e.revision, e.name.as_str(), e.kind)).collect();
        assert_eq!(
            revisions,
            [
                (10, "g-a", Change::Put),
                (12, "g-b", Change::Put),
                (14, "g-a", Change::Delete),
                (15, "g-b", Change::Delete),
                (20, "g-c", Change::Put),
            ]
        );
        assert_eq!((rebuilt.unseen_deletes, rebuilt.disputed_deletes), (1, 1));
        assert!(rebuilt.history[0].created && !rebuilt.history[2].created);
        assert_eq!(rebuilt.history[2].uid, "u-g-a");
    }
}
