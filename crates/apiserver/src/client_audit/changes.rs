//! Storage's recent changes, as the audit names what a client missed: one storage watch of the
//! whole root from the moment the audit starts (the same watch `/debug/listwatch/history`
//! streams, never the watch caches the clients are served from), kept for the last
//! [`MAX_CHANGES`] changes. A gap that reaches back before them is reported unchecked.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::Registry;
use listwatch_meta::fingerprint::object_fingerprint;
use listwatch_simulator::record::{Change, HistoryEvent};
use listwatch_storage::{Event, EventKind, KeyRange, Storage, WatchRequest, WatchResponse};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;

/// How many changes are kept.
pub const MAX_CHANGES: usize = 500_000;

/// Storage's recent changes.
#[derive(Default)]
pub struct ChangeLog(Arc<Mutex<VecDeque<HistoryEvent>>>);

impl ChangeLog {
    /// Follows storage from its current revision until `shutdown`, reopening the watch after a
    /// break (a compaction or an outage leaves a gap, which the audit then cannot judge across).
    pub fn follow(&self, storage: Arc<dyn Storage>, root: String, mut shutdown: watch::Receiver<bool>) {
        let log = self.0.clone();
        tokio::spawn(async move {
            let root = root.trim_end_matches('/').to_string();
            loop {
                let last = log.lock().back().map(|last| last.revision);
                let from = match last {
                    Some(last) => last + 1,
                    None => match storage.current_revision().await {
                        Ok(revision) => revision + 1,
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    },
                };
                let range = KeyRange::prefix(format!("{root}/"));
                if let Ok(mut watch) = storage.watch(WatchRequest::new(range, from)).await {
                    loop {
                        let answer = tokio::select! {
                            _ = shutdown.wait_for(|down| *down) => return,
                            answer = watch.next() => answer,
                        };
                        match answer {
                            Some(Ok(WatchResponse::Events(events))) => {
                                let mut log = log.lock();
                                for change in events.iter().filter_map(|event| change_of(&root, event)) {
                                    if log.len() == MAX_CHANGES {
                                        log.pop_front();
                                    }
                                    log.push_back(change);
                                }
                            }
                            Some(Ok(WatchResponse::Progress(_))) => {}
                            // Compacted past us, failed, or ended: start again from storage's
                            // revision now (a gap the audit will see as one).
                            _ => {
                                log.lock().clear();
                                break;
                            }
                        }
                    }
                }
                tokio::select! {
                    _ = shutdown.wait_for(|down| *down) => return,
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        });
    }

    /// The changes kept, oldest first.
    pub fn snapshot(&self) -> Vec<HistoryEvent> {
        self.0.lock().iter().cloned().collect()
    }
}

/// Where a key lies: (group, resource, namespace, name), for a built-in resource's key or a
/// custom resource's (`<root>/<group>/<plural>/[<namespace>/]<name>`, a group with a dot).
fn locate<'a>(root: &str, key: &'a str) -> Option<(&'a str, &'a str, &'a str, &'a str)> {
    if let Some(resource) = Registry.for_storage_key(root, key) {
        let rest = &key[resource.collection_prefix(root).len()..];
        let (namespace, name) =
            if resource.namespaced { rest.split_once('/').unwrap_or(("", rest)) } else { ("", rest) };
        return Some((resource.group, resource.plural, namespace, name));
    }
    let rest = key.strip_prefix(root.trim_end_matches('/'))?.strip_prefix('/')?;
    let (group, rest) = rest.split_once('/').filter(|(group, _)| group.contains('.'))?;
    let (plural, rest) = rest.split_once('/')?;
    let (namespace, name) = rest.split_once('/').unwrap_or(("", rest));
    Some((group, plural, namespace, name))
}

/// One change as the simulator's records describe it, or `None` for a key of no resource.
pub fn change_of(root: &str, event: &Event) -> Option<HistoryEvent> {
    let key = std::str::from_utf8(&event.kv.key).ok()?;
    let (group, plural, namespace, name) = locate(root, key)?;
    let stored = match event.kind {
        EventKind::Put => Some(&event.kv.value),
        EventKind::Delete => event.prev.as_ref().map(|prev| &prev.value),
    };
    let object: Option<Value> = stored.and_then(|value| serde_json::from_slice(value).ok());
    let metadata = object.as_ref().and_then(|o| o.get("metadata"));
    let uid = metadata.and_then(|m| m.get("uid")).and_then(Value::as_str).unwrap_or("");
    let labels = metadata
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| labels.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
        .unwrap_or_default();
    Some(HistoryEvent {
        revision: event.revision(),
        kind: match event.kind {
            EventKind::Put => Change::Put,
            EventKind::Delete => Change::Delete,
        },
        created: event.is_create(),
        group: group.to_owned(),
        resource: plural.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        labels,
        fingerprint: object.as_ref().map_or(0, object_fingerprint),
        object: None,
    })
}
