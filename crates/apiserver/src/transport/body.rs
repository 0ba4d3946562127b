//! The response body type.
//!
//! Every response body is a stream of [`Chunk`]s: one or several `Bytes` written back to back.
//! A watch batch is a chunk of many pieces (each event's small envelope and its shared,
//! memoized object bytes), so hyper can write a whole batch with one vectored write and no
//! copy. A streamed body may end [`Aborted`]: on purpose, without its proper end (a fault the
//! debug API injects).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use futures::Stream;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// Bytes to write one after another.
#[derive(Debug, Default)]
pub struct Chunk {
    pieces: VecDeque<Bytes>,
    remaining: usize,
}

impl Chunk {
    /// The pieces, written in order (the vector's allocation is reused, not copied).
    pub fn new(pieces: Vec<Bytes>) -> Chunk {
        let remaining = pieces.iter().map(Bytes::len).sum();
        Chunk { pieces: VecDeque::from(pieces), remaining }
    }
}

impl From<Bytes> for Chunk {
    fn from(b: Bytes) -> Chunk {
        Chunk::new(vec![b])
    }
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        // Empty pieces are skipped by `advance`, so the front is never empty while bytes remain.
        self.pieces.iter().find(|b| !b.is_empty()).map_or(&[], |b| b.as_ref())
    }

    fn advance(&mut self, mut cnt: usize) {
        self.remaining -= cnt;
        while cnt > 0 {
            let front = self.pieces.front_mut().expect("advance past the end of a chunk");
            if cnt < front.len() {
                front.advance(cnt);
                return;
            }
            cnt -= front.len();
            self.pieces.pop_front();
        }
        while self.pieces.front().is_some_and(Bytes::is_empty) {
            self.pieces.pop_front();
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for piece in self.pieces.iter().filter(|p| !p.is_empty()) {
            if n == dst.len() {
                break;
            }
            dst[n] = IoSlice::new(piece);
            n += 1;
        }
        n
    }
}

/// A body ended on purpose without its proper end: hyper then drops the connection without
/// the terminating chunk (HTTP/1.1) or resets the stream (HTTP/2), as a broken network would.
#[derive(Debug, thiserror::Error)]
#[error("the response body was cut on purpose (debug API)")]
pub struct Aborted;

type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, Aborted>> + Send>>;

/// A response body: empty, whole, or streamed.
pub enum Body {
    Empty,
    Full(Option<Chunk>),
    Stream(ChunkStream),
}

impl Body {
    pub fn empty() -> Body {
        Body::Empty
    }

    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body::Full(Some(Chunk::from(bytes.into())))
    }

    pub fn pieces(pieces: Vec<Bytes>) -> Body {
        Body::Full(Some(Chunk::new(pieces)))
    }

    pub fn stream(stream: impl Stream<Item = Chunk> + Send + 'static) -> Body {
        use futures::StreamExt;
        Body::abortable(stream.map(Ok))
    }

    /// A stream that may end [`Aborted`].
    pub fn abortable(stream: impl Stream<Item = Result<Chunk, Aborted>> + Send + 'static) -> Body {
        Body::Stream(Box::pin(stream))
    }
}

impl HttpBody for Body {
    type Data = Chunk;
    type Error = Aborted;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Chunk>, Aborted>>> {
        match self.get_mut() {
            Body::Empty => Poll::Ready(None),
            Body::Full(chunk) => Poll::Ready(chunk.take().map(|c| Ok(Frame::data(c)))),
            Body::Stream(s) => s.as_mut().poll_next(cx).map(|c| c.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Empty => true,
            Body::Full(c) => c.is_none(),
            Body::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Empty => SizeHint::with_exact(0),
            Body::Full(Some(c)) => SizeHint::with_exact(c.remaining() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_reads_across_pieces() {
        let mut c = Chunk::new(vec![Bytes::from_static(b"ab"), Bytes::new(), Bytes::from_static(b"cde")]);
        assert_eq!(c.remaining(), 5);
        c.advance(3);
        assert_eq!(c.chunk(), b"de");
        let mut out = Vec::new();
        while c.has_remaining() {
            let n = c.chunk().len();
            out.extend_from_slice(c.chunk());
            c.advance(n);
        }
        assert_eq!(out, b"de");
    }
}
