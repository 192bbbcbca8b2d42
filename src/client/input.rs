//! The agent's input (its stdin) behind an [`Outbox`] that can be closed while other holders of
//! the outbox (a JSON-RPC connection answers the agent's requests through the same one) still
//! have it: [`InputCloser::close`] waits until every frame queued so far is written, then drops
//! the sink, so the agent reads EOF after the last frame, never in the middle of one.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;

use crate::transport::{spawn_writer, Outbox};

/// Bytes of our frames that may wait for a slow agent (the JSON-RPC clients' budget).
pub(crate) const OUTBOUND_BUDGET: usize = 16 * 1024 * 1024;

type Sink = Box<dyn AsyncWrite + Unpin + Send>;
type Shared = Arc<Mutex<Option<Sink>>>;

/// How long [`InputCloser::close`] waits for queued frames before it closes anyway (a stuck
/// agent that reads nothing must not hold the close up).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The sink the writer task writes into; after the close every write fails (`BrokenPipe`).
struct ClosableSink(Shared);

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the agent's input was closed")
}

impl AsyncWrite for ClosableSink {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(sink) => Pin::new(sink).poll_write(cx, buf),
            None => Poll::Ready(Err(closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(sink) => Pin::new(sink).poll_flush(cx),
            None => Poll::Ready(Err(closed())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(sink) => Pin::new(sink).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

/// Closes the agent's input (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct InputCloser {
    sink: Shared,
    out: Outbox,
    /// The outbox's budget with nothing queued: every permit back means every frame queued
    /// was written and flushed (the writer holds a batch's first permit until its flush).
    idle: usize,
}

impl std::fmt::Debug for InputCloser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputCloser").field("idle", &self.idle).finish_non_exhaustive()
    }
}

impl InputCloser {
    /// Closes the input once what is queued is written (at most [`DRAIN_LIMIT`]).
    pub async fn close(&self) {
        let waited = tokio::time::timeout(DRAIN_LIMIT, async {
            while self.out.available_bytes() < self.idle && !self.out.is_closed() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        if waited.await.is_err() {
            tracing::warn!("the agent read nothing for {DRAIN_LIMIT:?}; closing its input with frames still queued");
        }
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Whether the input is closed.
    pub fn is_closed(&self) -> bool {
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }
}

/// Starts a writer on `sink` (see [`spawn_writer`]) that [`InputCloser::close`] can close.
pub fn spawn_closable_writer<W>(sink: W, budget_bytes: usize) -> (Outbox, InputCloser)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shared: Shared = Arc::new(Mutex::new(Some(Box::new(sink))));
    let (out, _writer) = spawn_writer(ClosableSink(shared.clone()), budget_bytes);
    let idle = out.available_bytes();
    (out.clone(), InputCloser { sink: shared, out, idle })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn close_writes_what_is_queued_then_ends_the_stream() {
        let (sink, mut agent) = tokio::io::duplex(64);
        let (out, closer) = spawn_closable_writer(sink, 1 << 20);
        // More than the pipe holds: the close must wait for the reader to take it all.
        for i in 0..50 {
            out.send(&serde_json::json!({ "n": i })).await.unwrap();
        }
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            agent.read_to_string(&mut text).await.unwrap();
            text
        });
        closer.close().await;
        assert!(closer.is_closed());
        let text = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("EOF reached the agent").unwrap();
        assert_eq!(text.lines().count(), 50, "every queued frame arrived whole: {text}");
        assert!(out.send(&1).await.is_ok() || out.is_closed(), "a late frame is dropped, not a panic");
    }
}
