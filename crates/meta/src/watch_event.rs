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
    /// The resourceVersion a client resumes from after this event.
    pub fn resource_version(&self) -> Option<i64> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o.resource_version()),
            WatchEvent::Bookmark { resource_version, .. } => Some(*resource_version),
            WatchEvent::Error(_) => None,
        }
    }
}

/// The type of a watch event that carries an object (metav1.WatchEvent's `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
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
