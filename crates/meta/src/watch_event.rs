//! The event a client watch delivers (kube's `watch.Event`): what the watch cache and the
//! storage-direct path produce and what the encoders write. It lives here, with the object and
//! the Status it carries, so an encoder need not know where events come from.

use std::sync::Arc;

use crate::{ApiError, Object};

/// One event for one client watch, ready to encode.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// An object was created (or, at the start of a watch, exists).
    Added(Arc<Object>),
    /// An object changed (or started to match the watch's selector); its new state.
    Modified(Arc<Object>),
    /// The last state, with `metadata.resourceVersion` set to the deletion's revision (or,
    /// when the object stopped matching the watch's selector, the update's revision).
    Deleted(Arc<Object>),
    /// Progress: every event up to `resource_version` has been sent.
    Bookmark {
        /// The revision the watch has reached.
        resource_version: i64,
        /// Whether this bookmark ends the initial events of a streaming list.
        initial_events_end: bool,
    },
    /// A terminal error (sent as an ERROR event carrying the Status, then the stream ends).
    Error(ApiError),
}

impl WatchEvent {
    /// The event of `event_type` carrying `object`.
    pub fn of(event_type: EventType, object: Arc<Object>) -> WatchEvent {
        match event_type {
            EventType::Added => WatchEvent::Added(object),
            EventType::Modified => WatchEvent::Modified(object),
            EventType::Deleted => WatchEvent::Deleted(object),
        }
    }

    /// The object and the type of an ADDED, MODIFIED or DELETED event; `None` for a bookmark
    /// or an error.
    pub fn object_event(&self) -> Option<(&Arc<Object>, EventType)> {
        match self {
            WatchEvent::Added(o) => Some((o, EventType::Added)),
            WatchEvent::Modified(o) => Some((o, EventType::Modified)),
            WatchEvent::Deleted(o) => Some((o, EventType::Deleted)),
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => None,
        }
    }

    /// The resourceVersion a client resumes from after this event.
    pub fn resource_version(&self) -> Option<i64> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o.resource_version()),
            WatchEvent::Bookmark { resource_version, .. } => Some(*resource_version),
            WatchEvent::Error(_) => None,
        }
    }
}

/// The type of a watch event that carries an object (metav1.WatchEvent's `type`). `as usize`
/// numbers them 0, 1, 2, for tables indexed by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added = 0,
    /// `MODIFIED`.
    Modified = 1,
    /// `DELETED`.
    Deleted = 2,
}

impl EventType {
    /// The type as the wire names it: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn name(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }

    /// What a JSON watch line holds before the object: `{"type":"ADDED","object":`.
    pub fn json_line_head(self) -> &'static [u8] {
        match self {
            EventType::Added => b"{\"type\":\"ADDED\",\"object\":",
            EventType::Modified => b"{\"type\":\"MODIFIED\",\"object\":",
            EventType::Deleted => b"{\"type\":\"DELETED\",\"object\":",
        }
    }
}

/// What a JSON watch line holds after the object.
pub const JSON_LINE_TAIL: &[u8] = b"}\n";
