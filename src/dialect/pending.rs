//! The JSONL dialect's host tool calls waiting for the host, by request id, and what knows when
//! nobody can answer them any more. A host tool call gets updates and then a result, which the
//! runtime's one-answer [`crate::jsonrpc::Peer`] does not model; every other request we send
//! (the JSONL dialect's dialogs, the wire's and ACP's requests) goes through the peer, which
//! closes the same way ([`crate::jsonrpc::Peer::close`]).
//!
//! stdin EOF means "no more requests", not "cancel": the host can no
//! longer answer anything either. The serve loop calls [`HostRequests::close`] once it has
//! handled every line read before the end: each waiting entry is dropped, so its receiver
//! resolves at once and the port gives its fail-closed outcome, and a request made afterwards is
//! refused before it is sent ([`HostRequests::insert`] returns `false`).

use std::collections::HashMap;
use std::sync::Mutex;

/// Waiting requests by id; `E` holds what the answer is delivered through (a `oneshot::Sender`,
/// with an update channel for host tools).
#[derive(Debug)]
pub struct HostRequests<E> {
    table: Mutex<Table<E>>,
}

#[derive(Debug)]
struct Table<E> {
    /// The host's input has ended: nothing can be answered any more.
    closed: bool,
    waiting: HashMap<String, E>,
}

impl<E> Default for HostRequests<E> {
    fn default() -> Self {
        Self { table: Mutex::new(Table { closed: false, waiting: HashMap::new() }) }
    }
}

impl<E> HostRequests<E> {
    fn table(&self) -> std::sync::MutexGuard<'_, Table<E>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request before it is sent; `false` (and `entry` dropped, so its receiver
    /// has already ended) once the host's input has ended: the request must not be sent.
    pub fn insert(&self, id: String, entry: E) -> bool {
        let mut table = self.table();
        if table.closed {
            return false;
        }
        table.waiting.insert(id, entry);
        true
    }

    /// Removes a request to answer it; `None` when nothing waits under `id` (never sent,
    /// answered, timed out, withdrawn, or the input ended).
    pub fn take(&self, id: &str) -> Option<E> {
        self.table().waiting.remove(id)
    }

    /// Looks at a waiting request without removing it.
    pub fn with<R>(&self, id: &str, f: impl FnOnce(&E) -> R) -> Option<R> {
        self.table().waiting.get(id).map(f)
    }

    /// Forgets a request nobody waits for any more (timed out, aborted).
    pub fn withdraw(&self, id: &str) {
        self.table().waiting.remove(id);
    }

    /// The host's input has ended: every waiting request resolves now (its entry is dropped)
    /// and later ones are refused.
    pub fn close(&self) {
        let waiting = {
            let mut table = self.table();
            table.closed = true;
            std::mem::take(&mut table.waiting)
        };
        // Dropped outside the lock: a waiter woken by its sender's drop may insert at once.
        drop(waiting);
    }

    /// Whether the host's input has ended.
    pub fn is_closed(&self) -> bool {
        self.table().closed
    }
}

#[cfg(test)]
mod tests {
    use super::HostRequests;
    use tokio::sync::oneshot;

    #[test]
    fn closing_ends_every_waiter_and_refuses_later_requests() {
        let requests = HostRequests::default();
        let (tx, mut rx) = oneshot::channel::<u8>();
        assert!(requests.insert("a".into(), tx));
        requests.close();
        assert!(matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Closed)), "the waiter resolves at once");
        let (tx, mut rx) = oneshot::channel::<u8>();
        assert!(!requests.insert("b".into(), tx));
        assert!(matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
        assert!(requests.take("a").is_none() && requests.is_closed());
    }
}
