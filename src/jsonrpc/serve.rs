//! The one serve loop of every JSON-RPC dialect, and the connection it serves.
//!
//! Lines are read on their own task (bounded by `--max-line-bytes`); each request becomes one
//! in-flight future polled here, so a long request (a prompt answered when its run ends) does
//! not stop the loop from reading cancellations and the peer's answers to our requests. Every
//! request is answered exactly once, notifications never; the loop itself never awaits a
//! handler (the deadlock the ACP SDK's ordering chapter warns of).
//!
//! **The answer is queued.** Work that must follow a request's answer (a cancel's abort,
//! updates the client can only place once it has the answer) waits on
//! [`Connection::after_answer`] inside that request's handler: it resolves when *that*
//! request's answer is on the outbox.
//!
//! **Cancellation.** The loop keeps a cancellation token per request in flight, by id;
//! [`Connection::cancel_request`] (a dialect's `$/cancel_request`) fires it. A request whose
//! handler did not [`claim_cancellation`] is dropped and answered -32800 at once; one that did
//! ends itself (a prompt cancels its run and answers `cancelled`). An id not in flight is
//! ignored.
//!
//! **Batches** (a JSON array on one line) are JSON-RPC 2.0's: each member is acted on as a line
//! of its own would be, and the answers to its requests, with its members' error frames, are
//! written as one array once the last of them is done (its notifications and responses get
//! nothing; a batch of only those gets no reply at all). An empty array is one -32600.
//!
//! **End of input** means "no more requests", not "cancel" (a host that
//! pipes its commands in and closes stdin expects every one answered): once every line read
//! is handled, the peer is closed ([`Peer::close`]: our requests waiting for the other side's
//! answer fail closed, later ones are not sent), the requests in flight are answered as they
//! would have been (a prompt when its run ends), and the loop returns. Bounding that wait
//! (`--eof-timeout`, a signal) is the process runner's: it cancels the work, and the cancelled
//! requests answer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use serde_json::Value;
use tokio::io::AsyncBufRead;
use tokio_util::sync::CancellationToken;

use super::answer::{scope, Answered};
use super::decode::{decode_line, Decoded, Inbound, Line, Side};
use super::frames::{Answer, Responder};
use crate::protocol::envelope::Error;
use super::peer::Peer;
use crate::transport::lines::spawn_line_channel;
use crate::transport::{FrameBatch, Outbox};

/// Answers requests of type `R`: implemented by the generated dispatch for every type that
/// implements a dialect's generated handler trait.
pub trait Dispatch<R>: Sync {
    /// Runs `request` and encodes its answer with `responder`.
    fn dispatch(&self, request: R, responder: Responder) -> impl Future<Output = Answer> + Send + '_;
}

/// A dialect's server on one connection: its decoding side, its connection and what it does
/// with notifications. Its requests go through [`Dispatch`].
pub trait Service: Dispatch<<Self::Side as Side>::Request> {
    /// The rules and typed messages of the side this service serves.
    type Side: Side;
    /// The connection (outbox, peer).
    fn connection(&self) -> &Connection;
    /// Acts on a notification (before the next line is read).
    fn notified(&self, notification: <Self::Side as Side>::Notification);
    /// The input ended (after the peer was closed): what a service must do at once, before
    /// the requests in flight are answered. The agent's dialects do nothing (what was asked is
    /// finished); a bridge closes its agent's input.
    fn input_ended(&self) {}
}

/// The cancellation of one request in flight.
#[derive(Debug, Clone, Default)]
struct Cancellation {
    token: CancellationToken,
    /// The handler ends itself when the token fires (see [`claim_cancellation`]).
    claimed: Arc<AtomicBool>,
}

impl Cancellation {
    /// Resolves when the request is cancelled and its handler left that to the loop.
    async fn unclaimed(&self) {
        self.token.cancelled().await;
        if self.claimed.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }
}

tokio::task_local! {
    /// The cancellation of the request whose handler is being polled.
    static CANCEL: Cancellation;
}

/// Called in a request's handler: the handler ends itself when the request is cancelled
/// (the returned token fires) instead of being dropped and answered -32800. Outside a
/// request's handler the token never fires.
pub fn claim_cancellation() -> CancellationToken {
    CANCEL
        .try_with(|c| {
            c.claimed.store(true, Ordering::Release);
            c.token.clone()
        })
        .unwrap_or_default()
}

/// The key of a request id in the table of requests in flight: its JSON text.
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// One JSON-RPC connection: the outbox, the peer (our requests to the other side) and the
/// peer's requests in flight (for their cancellation).
#[derive(Debug)]
pub struct Connection {
    peer: Peer,
    running: Mutex<HashMap<String, CancellationToken>>,
}

impl Connection {
    /// A connection writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self { peer: Peer::new(out), running: Mutex::new(HashMap::new()) }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels the request in flight with id `id` (`$/cancel_request`); whether there was one.
    pub fn cancel_request(&self, id: &Value) -> bool {
        match self.running().get(&id_key(id)) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Our requests to the other side.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The outbox every frame goes through.
    pub fn outbox(&self) -> &Outbox {
        self.peer.outbox()
    }

    /// Resolves once the answer of the request being handled is queued (see
    /// [`super::answer::after_answer`]).
    pub fn after_answer(&self) -> impl Future<Output = bool> + Send + 'static {
        super::answer::after_answer()
    }
}

/// A batch whose requests are still running: its answers so far, and how many are missing.
#[derive(Debug, Default)]
struct OpenBatch {
    answers: FrameBatch,
    missing: usize,
}

/// Serves `service` on `input` until it ends and every request read is answered.
pub async fn serve<S, R>(service: &S, input: R, max_line_bytes: usize)
where
    S: Service,
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let conn = service.connection();
    let out = conn.outbox().clone();
    let (mut lines, reader) = spawn_line_channel(input, max_line_bytes);
    let mut inflight = FuturesUnordered::new();
    // Batches with requests still running, by the number the loop gave them.
    let mut batches: HashMap<u64, OpenBatch> = HashMap::new();
    let mut next_batch: u64 = 0;
    let mut ended = false;
    loop {
        tokio::select! {
            biased;
            Some((answer, waiters, key, batch)) = inflight.next(), if !inflight.is_empty() => {
                let (answer, answered, key, batch): (Answer, Answered, String, Option<u64>) = (answer, waiters, key, batch);
                conn.running().remove(&key);
                match batch {
                    None => {
                        let _ = out.send_batch(&mut answer.into_batch()).await;
                    }
                    Some(n) => {
                        let open = batches.entry(n).or_default();
                        open.answers.append(answer.into_batch());
                        open.missing = open.missing.saturating_sub(1);
                        if open.missing == 0 {
                            let done = batches.remove(&n).unwrap_or_default();
                            let _ = out.send_batch(&mut done.answers.into_array()).await;
                        }
                    }
                }
                // A batch member's answer counts as queued once it is done, not once the
                // batch's array is written: the array waits for every member, so a member
                // whose work waited for another member's written answer would wait forever.
                answered.fire();
            }
            line = lines.recv(), if !ended => match line {
                None => {
                    // No more requests, so no more answers either: what waits for one fails
                    // closed. The requests in flight are still answered.
                    conn.peer().close();
                    service.input_ended();
                    ended = true;
                }
                Some(line) => match decode_line::<S::Side>(line) {
                    Line::One(decoded) => {
                        if let Some(mut refused) = receive(service, decoded, None, &inflight) {
                            let _ = out.send_batch(&mut refused).await;
                        }
                    }
                    Line::Batch(members) => {
                        let n = next_batch;
                        next_batch += 1;
                        let mut open = OpenBatch::default();
                        for decoded in members {
                            let before = inflight.len();
                            if let Some(refused) = receive(service, decoded, Some(n), &inflight) {
                                open.answers.append(refused);
                            }
                            open.missing += inflight.len() - before;
                        }
                        if open.missing == 0 {
                            // Nothing runs: the members' errors go now, or nothing at all
                            // (a batch of notifications and responses gets no reply).
                            let _ = out.send_batch(&mut open.answers.into_array()).await;
                        } else {
                            batches.insert(n, open);
                        }
                    }
                },
            },
            else => break,
        }
        if ended && inflight.is_empty() {
            break;
        }
    }
    reader.abort();
}

/// One request in flight: its answer, the waiters of that answer, its key in the table of
/// requests in flight, and the batch it belongs to.
type Handled = (Answer, Answered, String, Option<u64>);

/// Acts on one decoded message (of the batch `batch`, if any): a request joins `inflight`, a
/// notification or a response is acted on now; what the message is refused with is returned.
fn receive<'s, S: Service>(
    service: &'s S,
    decoded: Decoded<S::Side>,
    batch: Option<u64>,
    inflight: &FuturesUnordered<std::pin::Pin<Box<dyn Future<Output = Handled> + Send + 's>>>,
) -> Option<FrameBatch> {
    let conn = service.connection();
    let null_data = S::Side::POLICY.null_data;
    match decoded {
        Err(frame) => {
            let mut refused = FrameBatch::default();
            let _ = refused.push(&*frame);
            Some(refused)
        }
        Ok(Inbound::Notification(n)) => {
            service.notified(n);
            None
        }
        // A `_`-prefixed method is a peer's extension (ACP's convention): it is allowed, and
        // not ours to understand.
        Ok(Inbound::Ignored { method, reason }) if method.starts_with('_') => {
            tracing::debug!("ignoring the extension notification `{method}`: {reason}");
            None
        }
        Ok(Inbound::Ignored { method, reason }) => {
            tracing::warn!("ignoring a `{method}` notification: {reason}");
            None
        }
        Ok(Inbound::Response { id, outcome }) => {
            conn.peer().answer(&id, outcome);
            None
        }
        Ok(Inbound::Request { id, request }) => {
            let key = id_key(&id);
            let cancel = Cancellation::default();
            conn.running().insert(key.clone(), cancel.token.clone());
            let refusal = Responder::new(id.clone(), null_data);
            let (handled, answered) = scope(CANCEL.scope(cancel.clone(), service.dispatch(request, Responder::new(id, null_data))));
            // A handler that panics is answered -32603, and the loop goes on serving:
            // uncaught, the panic would end the loop and the process with it.
            let handled = std::panic::AssertUnwindSafe(handled).catch_unwind();
            inflight.push(Box::pin(async move {
                let answer = tokio::select! {
                    biased;
                    answer = handled => match answer {
                        Ok(answer) => answer,
                        Err(panic) => refusal.answer::<()>(Err(Error::internal(format!("Internal error: the request's handler panicked: {}", crate::panic::reason(panic))))),
                    },
                    () = cancel.unclaimed() => refusal.answer::<()>(Err(Error::request_cancelled("Request cancelled by $/cancel_request"))),
                };
                (answer, answered, key, batch)
            }));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Policy;
    use serde_json::json;

    /// A side whose every request is its method name.
    enum Methods {}

    impl Side for Methods {
        type Request = String;
        type Notification = ();
        const POLICY: Policy = Policy::STRICT;
        fn request(method: &str, _frame: Value) -> Result<String, Error> {
            Ok(method.to_owned())
        }
        fn notification(_method: &str, _frame: Value) -> Result<(), crate::protocol::envelope::IgnoredNotification> {
            Ok(())
        }
    }

    /// Answers `ok` with "fine" and panics on anything else.
    struct Panicky(Connection);

    impl Dispatch<String> for Panicky {
        fn dispatch(&self, request: String, responder: Responder) -> impl Future<Output = Answer> + Send + '_ {
            async move {
                if request != "ok" {
                    panic!("no handler for {request}");
                }
                responder.answer(Ok("fine"))
            }
        }
    }

    impl Service for Panicky {
        type Side = Methods;
        fn connection(&self) -> &Connection {
            &self.0
        }
        fn notified(&self, _notification: ()) {}
    }

    /// The text written for `input`, one JSON value per line.
    async fn served(input: &'static str) -> Vec<Value> {
        let (out, written) = tokio::io::duplex(1 << 16);
        let (outbox, writer) = crate::transport::writer::spawn_writer(out, 1 << 20);
        let service = Panicky(Connection::new(outbox));
        serve(&service, tokio::io::BufReader::new(input.as_bytes()), 1 << 20).await;
        drop(service);
        writer.await.unwrap().unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut { written }, &mut text).await.unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Sorts a batch's answers by id (their order in the array is free).
    fn by_id(mut batch: Value) -> Value {
        if let Value::Array(items) = &mut batch {
            items.sort_by_key(|a| a["id"].to_string());
        }
        batch
    }

    /// A batch used to be answered with one -32600 and nothing in it ran.
    #[tokio::test]
    async fn a_batch_is_answered_with_one_array_of_its_requests_answers() {
        let written = served(concat!(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ok"},{"jsonrpc":"2.0","method":"ok"},{"jsonrpc":"2.0","id":"b","method":"boom"}]"#, "\n",
        ))
        .await;
        assert_eq!(written.len(), 1, "one array, written once: {written:?}");
        assert_eq!(
            by_id(written[0].clone()),
            json!([
                {"jsonrpc":"2.0","id":"b","error":{"code":-32603,"message":"Internal error: the request's handler panicked: no handler for boom"}},
                {"jsonrpc":"2.0","id":1,"result":"fine"},
            ])
        );
    }

    #[tokio::test]
    async fn notifications_in_a_batch_get_no_reply_and_bad_members_one_error_each() {
        let invalid = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: not a JSON-RPC object"}});
        let written = served(concat!(
            r#"[{"jsonrpc":"2.0","method":"ok"},{"jsonrpc":"2.0","method":"ok"}]"#, "\n",
            "[17, true, null]\n",
            "[]\n",
            r#"[[{"jsonrpc":"2.0","id":1,"method":"ok"}]]"#, "\n",
        ))
        .await;
        assert_eq!(
            written,
            [
                json!([invalid, invalid, invalid]),
                json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: an empty batch"}}),
                json!([invalid]),
            ]
        );
    }

    /// A panicking handler used to take the serve loop, and the process, down with it: the
    /// requests after it were never answered.
    #[tokio::test]
    async fn a_panicking_handler_is_answered_and_the_loop_goes_on() {
        let (out, written) = tokio::io::duplex(1 << 16);
        let (outbox, writer) = crate::transport::writer::spawn_writer(out, 1 << 20);
        let service = Panicky(Connection::new(outbox));
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"boom"}"#, "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"ok"}"#, "\n",
        );
        serve(&service, tokio::io::BufReader::new(input.as_bytes()), 1 << 20).await;
        drop(service);
        writer.await.unwrap().unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut { written }, &mut text).await.unwrap();
        let mut answers: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        answers.sort_by_key(|a| a["id"].as_i64());
        assert_eq!(
            answers,
            [
                json!({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error: the request's handler panicked: no handler for boom"}}),
                json!({"jsonrpc":"2.0","id":2,"result":"fine"}),
            ]
        );
    }
}
