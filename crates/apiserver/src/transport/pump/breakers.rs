//! The deliberate guarantee breakers ([`WatchBreaker`]) as a stream applies them: here, in the
//! pump, so a broken guarantee looks the same on every transport and representation. Each
//! stream counts its changes (ADDED, MODIFIED and DELETED events above its initial events)
//! while a breaker is set, and breaks the 3rd one, once.

use std::sync::Arc;

use listwatch_meta::{ApiError, Object, Resource, WatchEvent};
use serde_json::Value;

use crate::faults::WatchBreaker;

/// Which change of a stream is broken.
const BROKEN_CHANGE: u32 = 3;

/// The label `alter-object` adds.
const ALTERED_LABEL: &str = "listwatch.dev/altered";

/// A stream's way to its broken event.
#[derive(Default)]
pub struct Breaking {
    /// Changes counted so far.
    counted: u32,
    /// The event was broken: the rest of the stream is left alone.
    done: bool,
}

impl Breaking {
    /// Breaks the batch's event if it holds the stream's 3rd change (events above
    /// `initial_through` are changes).
    pub fn apply(
        &mut self,
        breaker: WatchBreaker,
        events: &mut Vec<WatchEvent>,
        initial_through: i64,
        resource: &Resource,
    ) {
        if self.done || matches!(breaker, WatchBreaker::None | WatchBreaker::SpuriousExpired) {
            return;
        }
        let Some(index) = events.iter().position(|event| {
            let change = matches!(event, WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))
                && event.resource_version().is_some_and(|rv| rv > initial_through);
            self.counted += u32::from(change);
            change && self.counted == BROKEN_CHANGE
        }) else {
            return;
        };
        self.done = true;
        let event = events[index].clone();
        match breaker {
            WatchBreaker::SkipEvent => {
                events.remove(index);
            }
            WatchBreaker::DuplicateEvent => events.insert(index + 1, event),
            WatchBreaker::BookmarkAhead => {
                let resource_version = event.resource_version().expect("a change has a resourceVersion");
                events.insert(index, WatchEvent::Bookmark { resource_version, initial_events_end: false });
            }
            WatchBreaker::AlterObject => events[index] = altered(event, resource),
            WatchBreaker::None | WatchBreaker::SpuriousExpired => {}
        }
    }
}

/// The ERROR that answers a watch from `client_version` when `spurious-expired` is set: the
/// cache's "too old" answer, naming the client's own version as the oldest one kept.
pub fn spurious_expired(client_version: u64) -> WatchEvent {
    WatchEvent::Error(ApiError::expired(format!("too old resource version: {client_version} ({client_version})")))
}

/// `event` with the label `listwatch.dev/altered: "true"` added to its object.
fn altered(event: WatchEvent, resource: &Resource) -> WatchEvent {
    let alter = |object: &Arc<Object>| {
        let mut value = object.value();
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            let labels = metadata.entry("labels").or_insert_with(|| Value::Object(Default::default()));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert(ALTERED_LABEL.into(), Value::from("true"));
            }
        }
        Object::from_value(resource, value, object.resource_version()).map(Arc::new).unwrap_or_else(|_| object.clone())
    };
    match &event {
        WatchEvent::Added(o) => WatchEvent::Added(alter(o)),
        WatchEvent::Modified(o) => WatchEvent::Modified(alter(o)),
        WatchEvent::Deleted(o) => WatchEvent::Deleted(alter(o)),
        _ => event,
    }
}

#[cfg(test)]
mod tests {
    use listwatch_meta::Registry;
    use serde_json::json;

    use super::*;

    fn configmaps() -> &'static Resource {
        Registry.find("", "v1", "configmaps").unwrap()
    }

    fn added(name: &str, rv: i64) -> WatchEvent {
        let object = Object::from_value(configmaps(), json!({"metadata": {"name": name, "namespace": "ns"}}), rv);
        WatchEvent::Added(Arc::new(object.unwrap()))
    }

    /// `(type, name, resourceVersion)` of each event.
    fn summary(events: &[WatchEvent]) -> Vec<(&'static str, String, i64)> {
        events
            .iter()
            .map(|e| match e {
                WatchEvent::Added(o) => ("ADDED", o.name().to_string(), o.resource_version()),
                WatchEvent::Bookmark { resource_version, .. } => ("BOOKMARK", String::new(), *resource_version),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    /// Initial events at 1 and 2, then changes at 11 to 14, in batches of two.
    fn broken(breaker: WatchBreaker) -> Vec<WatchEvent> {
        let mut breaking = Breaking::default();
        let mut out = Vec::new();
        for batch in
            [[added("i", 1), added("j", 2)], [added("a", 11), added("b", 12)], [added("c", 13), added("d", 14)]]
        {
            let mut events = batch.to_vec();
            breaking.apply(breaker, &mut events, 10, configmaps());
            out.extend(events);
        }
        out
    }

    #[test]
    fn the_third_change_after_the_initial_events_is_broken_once() {
        let names = |events: &[WatchEvent]| summary(events).into_iter().map(|(_, n, _)| n).collect::<Vec<_>>();
        assert_eq!(names(&broken(WatchBreaker::None)), ["i", "j", "a", "b", "c", "d"]);
        assert_eq!(names(&broken(WatchBreaker::SkipEvent)), ["i", "j", "a", "b", "d"]);
        assert_eq!(names(&broken(WatchBreaker::DuplicateEvent)), ["i", "j", "a", "b", "c", "c", "d"]);
        let ahead = summary(&broken(WatchBreaker::BookmarkAhead));
        assert_eq!(ahead[4], ("BOOKMARK", String::new(), 13));
        assert_eq!(ahead[5], ("ADDED", "c".to_string(), 13));
        let altered = broken(WatchBreaker::AlterObject);
        let WatchEvent::Added(c) = &altered[4] else { panic!("{altered:?}") };
        assert_eq!((c.name(), c.resource_version()), ("c", 13));
        assert_eq!(c.labels().unwrap()[ALTERED_LABEL], "true");
        let WatchEvent::Added(d) = &altered[5] else { panic!("{altered:?}") };
        assert!(d.labels().is_none());
    }
}
