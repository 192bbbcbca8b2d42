//! An inbound stream that ends when a token is cancelled: a signal turns into the end of input,
//! so each dialect's own end-of-input path (abort the run, answer what is in flight, bounded)
//! handles it, instead of the serve loop being dropped with requests unanswered.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// `inner` until `stop` is cancelled, then end of input.
pub struct UntilCancelled<R> {
    inner: R,
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
    stopped: bool,
}

impl<R> UntilCancelled<R> {
    /// Reads `inner` until `stop` is cancelled.
    pub fn new(inner: R, stop: CancellationToken) -> Self {
        Self { inner, stop: Box::pin(stop.cancelled_owned()), stopped: false }
    }

    fn poll_stopped(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.stopped && self.stop.as_mut().poll(cx).is_ready() {
            self.stopped = true;
        }
        self.stopped
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilCancelled<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.poll_stopped(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for UntilCancelled<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.poll_stopped(cx) {
            return Poll::Ready(Ok(&[]));
        }
        Pin::new(&mut this.inner).poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        if !this.stopped {
            Pin::new(&mut this.inner).consume(amt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn cancelling_ends_the_input() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let stop = CancellationToken::new();
        let mut lines = UntilCancelled::new(tokio::io::BufReader::new(rx), stop.clone()).lines();
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"one\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        stop.cancel();
        assert_eq!(lines.next_line().await.unwrap(), None, "ends although the writer is still open");
    }
}
