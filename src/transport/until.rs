//! An inbound stream that ends when a token is cancelled: a signal turns into the end of input
//! even while a read of stdin is blocked, so each dialect's own end-of-input path (answer what
//! is in flight) handles it, instead of the serve loop being dropped with requests unanswered.
//! It also says when the stream itself ended (EOF or a read error), for `--eof-timeout`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// `inner` until `stop` is cancelled, then end of input.
pub struct UntilCancelled<R> {
    inner: R,
    /// The stop token itself, asked while input is at hand (a lock, no waker).
    token: CancellationToken,
    /// Its future, polled only when a read would wait: registering the waker is a second
    /// lock and a waker comparison, which every line of a pipelined burst paid.
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
    stopped: bool,
    /// Cancelled once `inner` has ended.
    ended: CancellationToken,
}

impl<R> UntilCancelled<R> {
    /// Reads `inner` until `stop` is cancelled.
    pub fn new(inner: R, stop: CancellationToken) -> Self {
        Self { inner, token: stop.clone(), stop: Box::pin(stop.cancelled_owned()), stopped: false, ended: CancellationToken::new() }
    }

    /// Cancels `ended` when `inner` itself ends (EOF or a read error), not when `stop` ends it.
    #[must_use]
    pub fn noting_end(mut self, ended: CancellationToken) -> Self {
        self.ended = ended;
        self
    }

    /// Whether the stop came (asked before every read, so a host that never stops writing is
    /// still stopped).
    fn is_stopped(&mut self) -> bool {
        if !self.stopped && self.token.is_cancelled() {
            self.stopped = true;
        }
        self.stopped
    }

    /// The read would wait: the stop must wake it, so its future is polled (and ends the
    /// input when the stop came meanwhile).
    fn wait_stopped(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.stopped && self.stop.as_mut().poll(cx).is_ready() {
            self.stopped = true;
        }
        self.stopped
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilCancelled<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.is_stopped() {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Ok(())) if buf.filled().len() == before => this.ended.cancel(),
            Poll::Ready(Err(_)) => this.ended.cancel(),
            Poll::Ready(Ok(())) => {}
            Poll::Pending if this.wait_stopped(cx) => return Poll::Ready(Ok(())),
            Poll::Pending => {}
        }
        poll
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for UntilCancelled<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.is_stopped() {
            return Poll::Ready(Ok(&[]));
        }
        let poll = Pin::new(&mut this.inner).poll_fill_buf(cx);
        match &poll {
            Poll::Ready(Ok(bytes)) if bytes.is_empty() => this.ended.cancel(),
            Poll::Ready(Err(_)) => this.ended.cancel(),
            Poll::Ready(Ok(_)) => {}
            Poll::Pending => {
                if !this.stopped && this.stop.as_mut().poll(cx).is_ready() {
                    this.stopped = true;
                    return Poll::Ready(Ok(&[]));
                }
            }
        }
        poll
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

    /// The stop ends the input while a read waits (the writer still open, nothing sent) and
    /// while lines are at hand (a host that never stops writing is stopped too: the stop is
    /// asked before every read, not only when a read would wait).
    #[tokio::test]
    async fn cancelling_ends_the_input() {
        for input in [&b"one\n"[..], b"one\ntwo\nthree\n"] {
            let (mut tx, rx) = tokio::io::duplex(1024);
            let stop = CancellationToken::new();
            let mut lines = UntilCancelled::new(tokio::io::BufReader::new(rx), stop.clone()).lines();
            tokio::io::AsyncWriteExt::write_all(&mut tx, input).await.unwrap();
            assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
            stop.cancel();
            assert_eq!(lines.next_line().await.unwrap(), None, "ends although the writer is still open");
        }
    }

    #[tokio::test]
    async fn notes_the_end_of_the_stream_but_not_a_stop() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let (stop, ended) = (CancellationToken::new(), CancellationToken::new());
        let mut lines = UntilCancelled::new(tokio::io::BufReader::new(rx), stop.clone()).noting_end(ended.clone()).lines();
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"one\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        assert!(!ended.is_cancelled());
        drop(tx);
        assert_eq!(lines.next_line().await.unwrap(), None);
        assert!(ended.is_cancelled(), "the writer closed: the stream ended");
        let (_tx, rx) = tokio::io::duplex(64);
        let ended = CancellationToken::new();
        stop.cancel();
        let mut lines = UntilCancelled::new(tokio::io::BufReader::new(rx), stop).noting_end(ended.clone()).lines();
        assert_eq!(lines.next_line().await.unwrap(), None);
        assert!(!ended.is_cancelled(), "stopped, not ended");
    }
}
