//! What the agent sends unasked (ACP's `session/update`s, the wire's `event`s), in the order it
//! sent them, as a stream: the JSON-RPC clients' serve loop queues each one before it reads the
//! next line, so a request's answer never overtakes what came before it.

use tokio::sync::mpsc;

/// The agent's notifications of type `T`; ends when its output ends.
#[derive(Debug)]
pub struct Notifications<T> {
    rx: mpsc::UnboundedReceiver<T>,
}

impl<T> Notifications<T> {
    /// The stream and the sender the serve loop queues into.
    pub(crate) fn channel() -> (mpsc::UnboundedSender<T>, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Self { rx })
    }

    /// The next notification, `None` once the agent's output ended.
    pub async fn next(&mut self) -> Option<T> {
        self.rx.recv().await
    }

    /// The next notification already received, without waiting.
    pub fn try_next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}
