//! A watch response body as a stream of events.
//!
//! The body is read frame by frame (HTTP/1.1 chunks or HTTP/2 DATA frames, which need not line up
//! with events) and fed to the [`EventDecoder`] for the response's content type. Each read waits
//! at most the idle limit: a server that sends nothing (not even a bookmark) for longer than the
//! watch's own timeout plus a margin is taken to be gone, and the stream ends with
//! [`Error::Timeout`], which callers treat like a dropped connection (kube-rs PR #1945; client-go
//! relies on HTTP/2 pings and TCP keep-alive instead, which this client also has).
//!
//! A JSON frame is fed to the decoder one line (one event) at a time, as the consumer asks for
//! events, rather than whole: a frame can hold hundreds of events, and decoding them all before
//! the first is used would allocate them all before the objects they replace are freed, which
//! defeats the allocator's per-thread caches (each event's objects are then made from memory
//! that is not in them); one event at a time, an update's new object is allocated from what the
//! previous update freed.
//!
//! The stream ends after an `ERROR` event, after the first `Err` item, or when the body ends.
//! A body that ends in the middle of an event yields an `Err` ([`Error::Io`] with
//! `UnexpectedEof`), which is a probable EOF, not a decoding failure.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::event::{EventDecoder, StreamFormat, WatchEvent};

/// The events of one watch request. Ends when the server ends the stream; `Err` items end it too.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, Error>>;

struct BodyState<T> {
    body: Incoming,
    /// What is left of the last frame read, not yet fed to the decoder.
    unread: Bytes,
    format: StreamFormat,
    decoder: EventDecoder,
    pending: VecDeque<Result<WatchEvent<T>, Error>>,
    idle_timeout: Option<Duration>,
    done: bool,
}

/// The events of a watch response body, each decoded object `K` handed out as `wrap(object)`.
pub(crate) fn body_events<K: DeserializeOwned + 'static, T: Send + 'static>(
    body: Incoming,
    format: StreamFormat,
    max_event_bytes: usize,
    idle_timeout: Option<Duration>,
    wrap: fn(K) -> T,
) -> WatchStream<T> {
    let state = BodyState {
        body,
        unread: Bytes::new(),
        format,
        decoder: EventDecoder::new(format, max_event_bytes),
        pending: VecDeque::new(),
        idle_timeout,
        done: false,
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(item) = state.pending.pop_front() {
                if matches!(item, Err(_) | Ok(WatchEvent::Error(_))) {
                    state.done = true;
                    state.pending.clear();
                }
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            if !state.unread.is_empty() {
                let end = match state.format {
                    StreamFormat::Json => memchr::memchr(b'\n', &state.unread).map_or(state.unread.len(), |i| i + 1),
                    StreamFormat::Protobuf => state.unread.len(),
                };
                let piece = state.unread.split_to(end);
                if let Err(e) = state.decoder.push_mapped(&piece, &mut state.pending, wrap) {
                    state.pending.push_back(Err(e));
                }
                continue;
            }
            let frame = match state.idle_timeout {
                Some(limit) => match tokio::time::timeout(limit, state.body.frame()).await {
                    Ok(frame) => frame,
                    Err(_) => {
                        state.done = true;
                        return Some((Err(Error::Timeout { what: "waiting for watch events", after: limit }), state));
                    }
                },
                None => state.body.frame().await,
            };
            match frame {
                None => {
                    state.done = true;
                    if state.decoder.is_mid_event() {
                        let source = std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the watch stream ended in the middle of an event",
                        );
                        return Some((Err(Error::Io { what: "reading a watch", source }), state));
                    }
                    return None;
                }
                Some(Err(e)) => {
                    state.done = true;
                    return Some((Err(Error::Body(e)), state));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        state.unread = data;
                    }
                }
            }
        }
    })
    .boxed()
}
