//! The peer: our requests to the other side of the connection (approvals, questions,
//! permissions, `fs/*` and `terminal/*` calls). It gives each request its id (or takes the
//! dialect's own), correlates the answer by id, and settles every request exactly once: the
//! answer, a timeout, a cancellation, or the waiter giving up. A request nobody waits for any
//! more is withdrawn, so a late answer finds nothing and is ignored. What a non-answer *means*
//! (reject, error, decline) is the caller's fail-closed decision, made on [`Reply`].
//!
//! The answer type is a parameter: a JSON-RPC peer's answers are `result` or `error`; the
//! JSONL dialect correlates its typed `extension_ui_response`s with the same peer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::envelope::{Notification, NotificationFrame, Request, RequestFrame};
use super::error::Error;
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
    /// The waiter was cancelled (an abort, the end of input) or the connection went away; the
    /// request was withdrawn.
    Abandoned,
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
        let pending = self.register(id);
        let _ = self.out.send(&RequestFrame { id: &pending.id, method: M::METHOD, params }).await;
        pending
    }
}

impl<A> Peer<A> {
    /// A peer writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self { out, pending: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0) }
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
        let pending = self.register(id);
        let _ = self.out.send(frame).await;
        pending
    }

    fn register(&self, id: Value) -> Pending<'_, A> {
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(key(&id), tx);
        Pending { peer: self, id, rx }
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
            answer = &mut self.rx => answer.map_or(Reply::Abandoned, Reply::Answered),
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
}
