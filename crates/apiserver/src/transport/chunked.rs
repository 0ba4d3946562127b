//! WATCH over chunked HTTP (HTTP/1.1 chunks, or HTTP/2 DATA frames): each batch of events is
//! one chunk, written with one vectored write, JSON lines or length-prefixed protobuf frames
//! back to back as the encoder made them. A stream cut by an injected fault writes part of an
//! event as a chunk of its own, then ends abnormally (hyper drops the connection without the
//! terminating chunk, or resets the HTTP/2 stream).

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;

use super::body::{Body, Chunk};
use super::pump::{Framing, PreparedWatch, pump};
use crate::panics::{RequestLabel, guard_stream};
use crate::response::{self, HttpResponse};

/// A batch as one chunk of the body.
struct Chunked;

impl Framing for Chunked {
    type Frame = Chunk;

    fn frame(&mut self, pieces: Vec<bytes::Bytes>, _ends: &[usize]) -> Option<Chunk> {
        Some(Chunk::new(pieces))
    }

    fn partial(&mut self, bytes: bytes::Bytes) -> Option<Chunk> {
        Some(Chunk::from(bytes))
    }
}

/// How long an abnormal end waits after the last chunk. hyper writes a chunk out only when
/// the body pauses; ended at once, the chunk before (a cut's partial event) would be dropped
/// with the connection instead of reaching the client.
const FLUSH_BEFORE_ABORT: Duration = Duration::from_millis(50);

/// The 200 whose body is the watch's stream.
pub fn respond(watch: PreparedWatch, shutdown: watch::Receiver<bool>, what: RequestLabel) -> HttpResponse {
    let content_type = watch.media.stream_content_type();
    let frames = pump(watch, shutdown, Chunked).then(|frame| async move {
        if frame.is_err() {
            tokio::time::sleep(FLUSH_BEFORE_ABORT).await;
        }
        frame
    });
    // A panic while producing a batch ends this watch only (the client re-watches).
    let stream = guard_stream(frames, what);
    response::with_body(200, content_type, Body::abortable(stream))
}
