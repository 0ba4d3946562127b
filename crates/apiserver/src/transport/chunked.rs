//! WATCH over chunked HTTP (HTTP/1.1 chunks, or HTTP/2 DATA frames): each batch of events is
//! one chunk, written with one vectored write, JSON lines or length-prefixed protobuf frames
//! back to back as the encoder made them.

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
}

/// The 200 whose body is the watch's stream.
pub fn respond(watch: PreparedWatch, shutdown: watch::Receiver<bool>, what: RequestLabel) -> HttpResponse {
    let content_type = watch.media.stream_content_type();
    // A panic while producing a batch ends this watch only (the client re-watches).
    let stream = guard_stream(pump(watch, shutdown, Chunked), what);
    response::with_body(200, content_type, Body::stream(stream))
}
