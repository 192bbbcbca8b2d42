//! "The answer is queued": the one mechanism for work that must follow a request's answer
//! (a cancel's abort, updates the client places by the answer, a run that starts only once
//! the request that started it is answered). A serve loop runs each request's handler inside
//! [`scope`] and calls [`Answered::fire`] once that request's answer is on the outbox; inside
//! the handler, [`after_answer`] resolves then. The JSON-RPC serve loop and the JSONL
//! dialect's loop both use it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// What runs once one request's answer is queued (`true`) or the request is dropped
/// unanswered (`false`).
type Callback = Box<dyn FnOnce(bool) + Send>;

/// The waiters of one request's answer.
#[derive(Default)]
struct Waiters(Mutex<Vec<Callback>>);

impl Waiters {
    fn run(&self, answered: bool) {
        let callbacks = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for callback in callbacks {
            callback(answered);
        }
    }
}

tokio::task_local! {
    /// The waiters of the request whose handler is being polled.
    static ANSWER: Arc<Waiters>;
}

/// What waits for one request's answer; [`Answered::fire`] once it is queued. Dropped
/// unfired, its waiters are told the request went unanswered.
pub struct Answered(Arc<Waiters>);

impl std::fmt::Debug for Answered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answered").finish_non_exhaustive()
    }
}

impl Answered {
    /// The request's answer is queued: everything waiting for it goes, in the order it
    /// registered, before this returns.
    pub fn fire(self) {
        self.0.run(true);
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.run(false);
    }
}

/// Runs `handler` as one request's handler: what it registers with [`on_answer`] or
/// [`after_answer`] waits for the returned [`Answered`] to fire.
pub fn scope<F: Future>(handler: F) -> (impl Future<Output = F::Output>, Answered) {
    let waiters = Arc::new(Waiters::default());
    (ANSWER.scope(waiters.clone(), handler), Answered(waiters))
}

/// Runs `then` once the answer of the request being handled is queued (`true`) or the request
/// is dropped unanswered (`false`); called outside a request's handler, at once (`true`).
pub fn on_answer(then: impl FnOnce(bool) + Send + 'static) {
    let mut then = Some(Box::new(then) as Callback);
    let _ = ANSWER.try_with(|w| w.0.lock().unwrap_or_else(|e| e.into_inner()).push(then.take().expect("taken once")));
    if let Some(now) = then {
        now(true);
    }
}

/// Resolves once the answer of the request being handled is queued (`true`), or when that
/// request is dropped unanswered (`false`). Called outside a request's handler, it resolves
/// at once.
pub fn after_answer() -> impl Future<Output = bool> + Send + 'static {
    let (tx, rx) = oneshot::channel();
    on_answer(move |answered| {
        let _ = tx.send(answered);
    });
    async move { rx.await.unwrap_or(false) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_go_when_their_own_request_is_answered() {
        let (first, first_answered) = scope(async { after_answer() });
        let (second, second_answered) = scope(async { after_answer() });
        let (mut first, second) = (Box::pin(first.await), second.await);
        second_answered.fire();
        assert!(futures_util::poll!(first.as_mut()).is_pending(), "another request's answer does not release it");
        first_answered.fire();
        assert!(first.await);
        assert!(second.await);
        assert!(after_answer().await, "outside a request there is nothing to wait for");
        let (dropped, unanswered) = scope(async { after_answer() });
        let dropped = dropped.await;
        drop(unanswered);
        assert!(!dropped.await);
        let order = Arc::new(Mutex::new(Vec::new()));
        let (handler, answered) = scope(async {
            let o = order.clone();
            on_answer(move |a| o.lock().unwrap().push(("first", a)));
            let o = order.clone();
            on_answer(move |a| o.lock().unwrap().push(("second", a)));
        });
        handler.await;
        assert!(order.lock().unwrap().is_empty());
        answered.fire();
        assert_eq!(*order.lock().unwrap(), [("first", true), ("second", true)], "run in order, before fire returns");
    }
}
