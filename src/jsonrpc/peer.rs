//! The peer: our requests to the other side of the connection (approvals, questions,
//! permissions, `fs/*` and `terminal/*` calls). It gives each request its id (or takes the
//! dialect's own), correlates the answer by id, and settles every request exactly once: the
//! answer, a timeout, a cancellation, or the waiter giving up. A request nobody waits for any
//! more is withdrawn, so a late answer finds nothing and is ignored. What a non-answer *means*
//! (reject, error, decline) is the caller's fail-closed decision, made on [`Reply`].
//!
//! **End of input.** When the other side closes its input to us (stdin EOF: "no more
//! requests", as every peer reads it) it can no longer answer anything either. The serve loop then
//! calls
//! [`Peer::close`], once every line read before the end is handled: each waiting request
//! settles [`Reply::InputEnded`] at once, and a request made afterwards is not sent and settles
//! the same way.
//!
//! The answer type is a parameter: a JSON-RPC peer's answers are `result` or `error`; the
//! JSONL dialect correlates its typed `extension_ui_response`s with the same peer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::protocol::envelope::{Notification, NotificationFrame, Request, RequestFrame};
use crate::protocol::envelope::Error;
use crate::transport::Outbox;

/// A JSON-RPC answer: `result`, or the error the peer answered with.
pub type Outcome = Result<Value, Error>;

/// How waiting for an answer ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<A = Outcome> {
    /// The peer answered (for JSON-RPC: its `result`, or the error it answered with).
    Answered(A),
    /// Nobody answered within the timeout; the request was withdrawn.
    TimedOut,
    /// The waiter was cancelled (an abort, a signal); the request was withdrawn.
    Abandoned,
    /// The other side's input ended ([`Peer::close`]) before it answered, or before the
    /// request was made (then it was not sent): nobody can answer it.
    InputEnded,
}

/// The key of a pending request: a string id and an integer id with the same digits differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(String),
    Token(String),
}

fn key(id: &Value) -> Key {
    match id {
        Value::String(s) => Key::Text(s.clone()),
        other => Key::Token(other.to_string()),
    }
}

/// Our outbound requests on one connection, answered with `A`.
#[derive(Debug)]
pub struct Peer<A = Outcome> {
    out: Outbox,
    pending: Mutex<HashMap<Key, oneshot::Sender<A>>>,
    next_id: AtomicU64,
    /// [`Peer::close`] was called; set only while `pending` is locked, so a request is either
    /// registered before the close (and settled by it) or refused after it.
    closed: AtomicBool,
}

/// A request sent and not yet settled. Dropping it withdraws the request.
#[derive(Debug)]
pub struct Pending<'a, A = Outcome> {
    peer: &'a Peer<A>,
    id: Value,
    rx: oneshot::Receiver<A>,
}

impl Peer {
    /// Sends the request `M` with a fresh integer id.
    pub async fn request<M: Request>(&self, params: &M::Params) -> Pending<'_>
    where
        M::Params: Serialize,
    {
        let id = Value::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (pending, registered) = self.register(id);
        if registered {
            let _ = self.out.send(&RequestFrame { id: &pending.id, method: M::METHOD, params }).await;
        }
        pending
    }
}

impl<A> Peer<A> {
    /// A peer writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self { out, pending: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0), closed: AtomicBool::new(false) }
    }

    /// The outbox every frame of the connection goes through.
    pub fn outbox(&self) -> &Outbox {
        &self.out
    }

    /// Sends the notification `M` (never answered).
    pub async fn notify<M: Notification>(&self, params: &M::Params)
    where
        M::Params: Serialize,
    {
        let _ = self.out.send(&NotificationFrame { method: M::METHOD, params }).await;
    }

    /// Sends a request frame the dialect built around an id of its own choosing (kimi's
    /// `"method": "request"` frames carry uuids, or the tool call's id).
    pub async fn send<F: Serialize + ?Sized>(&self, id: Value, frame: &F) -> Pending<'_, A> {
        let (pending, registered) = self.register(id);
        if registered {
            let _ = self.out.send(frame).await;
        }
        pending
    }

    /// Registers a request before it is sent; `false` once the peer is closed: the request
    /// must not be sent, and its waiter (its sender dropped) settles [`Reply::InputEnded`].
    fn register(&self, id: Value) -> (Pending<'_, A>, bool) {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let registered = !self.closed.load(Ordering::Relaxed);
        if registered {
            pending.insert(key(&id), tx);
        }
        drop(pending);
        (Pending { peer: self, id, rx }, registered)
    }

    /// The other side's input ended: nobody can answer any more. Every waiting request settles
    /// [`Reply::InputEnded`] now, and later ones are not sent.
    pub fn close(&self) {
        let waiting = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            self.closed.store(true, Ordering::Relaxed);
            std::mem::take(&mut *pending)
        };
        // Dropped outside the lock: a waiter woken by its sender's drop may ask again at once.
        drop(waiting);
    }

    /// Whether [`Peer::close`] was called: a request made now would not be sent.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Delivers the peer's answer to one of our requests; `false` when nobody waits for it
    /// (never sent, settled, withdrawn, or a replayed request).
    pub fn answer(&self, id: &Value, outcome: A) -> bool {
        let waiter = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&key(id));
        waiter.is_some_and(|tx| tx.send(outcome).is_ok())
    }

    /// How many requests wait for an answer.
    pub fn in_flight(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl<A> Pending<'_, A> {
    /// The request's id.
    pub fn id(&self) -> &Value {
        &self.id
    }

    /// Waits for the answer, at most `timeout` (`None`: no limit), until `cancel` fires.
    pub async fn wait(mut self, timeout: Option<Duration>, cancel: Option<&CancellationToken>) -> Reply<A> {
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            match cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // Only [`Peer::close`] drops a waiting request's sender.
            answer = &mut self.rx => answer.map_or(Reply::InputEnded, Reply::Answered),
            () = deadline => Reply::TimedOut,
            () = cancelled => Reply::Abandoned,
        }
    }
}

impl<A> Drop for Pending<'_, A> {
    fn drop(&mut self) {
        // Settled or not, nobody waits for this id any more.
        self.peer.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&key(&self.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    enum Ping {}
    impl Request for Ping {
        const METHOD: &'static str = "ping";
        type Params = ();
        type Result = ();
    }

    #[tokio::test]
    async fn answers_are_matched_by_id_and_type_and_settled_once() {
        let (out, _writer) = crate::transport::spawn_writer(tokio::io::sink(), 1 << 20);
        let peer = Peer::new(out);
        let first = peer.request::<Ping>(&()).await;
        assert_eq!(first.id(), &Value::from(0));
        assert!(!peer.answer(&Value::from("0"), Ok(Value::Null)), "a string id is not the integer id");
        assert!(peer.answer(&Value::from(0), Ok(Value::Bool(true))));
        assert!(!peer.answer(&Value::from(0), Ok(Value::Null)), "answered once");
        assert_eq!(first.wait(None, None).await, Reply::Answered(Ok(Value::Bool(true))));
        let second = peer.send(Value::from("a1"), &()).await;
        assert_eq!(second.wait(Some(Duration::from_millis(1)), None).await, Reply::TimedOut);
        assert_eq!(peer.in_flight(), 0, "a timed-out request is withdrawn");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(peer.request::<Ping>(&()).await.wait(None, Some(&cancel)).await, Reply::Abandoned);
        assert!(!peer.answer(&Value::from(1), Ok(Value::Null)), "an abandoned request is withdrawn");
    }

    #[tokio::test]
    async fn closing_settles_every_waiter_and_sends_nothing_after() {
        let (sink, mut sent) = tokio::io::duplex(1 << 16);
        let (out, writer) = crate::transport::spawn_writer(sink, 1 << 20);
        let peer = Peer::new(out);
        let waiting = peer.request::<Ping>(&()).await;
        assert!(!peer.is_closed());
        peer.close();
        assert!(peer.is_closed() && peer.in_flight() == 0);
        assert_eq!(waiting.wait(None, None).await, Reply::InputEnded, "settled at once, no timeout needed");
        let late = peer.send(Value::from("late"), &RequestFrame { id: &Value::from("late"), method: "ping", params: &() }).await;
        assert_eq!(peer.in_flight(), 0, "not registered");
        assert_eq!(late.wait(None, None).await, Reply::InputEnded);
        assert_eq!(peer.request::<Ping>(&()).await.wait(None, None).await, Reply::InputEnded);
        drop(peer);
        writer.await.unwrap().unwrap();
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut sent, &mut written).await.unwrap();
        assert_eq!(written.lines().count(), 1, "only the request made before the close was sent: {written}");
    }
}
