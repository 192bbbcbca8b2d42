//! The wire reader loop. Lines are read on their own task (in order, bounded by
//! `--max-line-bytes` like the JSONL dialect) and each request becomes one in-flight future
//! polled here: cheap requests answer at once, a `prompt` answers when its turn ends, and the
//! reader keeps serving `steer`, `cancel` and the client's answers meanwhile. Every request is
//! answered exactly once; notifications never.
//!
//! stdin EOF means "no more requests" (notes §1.6): requests waiting for the client's answer
//! fail closed, the requests in flight are answered — a `prompt` when its turn ends, as it would
//! have — and the loop returns. Bounding that wait (`--eof-timeout`, a signal) is the process
//! runner's (`crate::server`): it cancels the run.

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::io::AsyncBufRead;

use super::decode::{decode_wire_line, error_response, WireInbound};
use super::{wire_id, WireSession};
use crate::protocol::envelope::WireError;
use crate::protocol::{dispatch_wire_request, WireSuccessResponse};
use crate::transport::lines::spawn_line_channel;

/// Serves the wire dialect on `input` until it ends and every request read is answered.
pub async fn serve_wire<R>(session: WireSession, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let out = session.host().outbox().clone();
    let (mut lines, reader) = spawn_line_channel(input, max_line_bytes);
    let mut inflight = FuturesUnordered::new();
    let mut ended = false;
    loop {
        tokio::select! {
            biased;
            Some((id, outcome)) = inflight.next(), if !inflight.is_empty() => {
                let outcome: Result<Value, WireError> = outcome;
                let _ = match outcome {
                    Ok(result) => out.send(&WireSuccessResponse::new(wire_id(&id), result)).await,
                    Err(e) => out.send(&error_response(Some(&id), &e)).await,
                };
                session.answered();
            }
            line = lines.recv(), if !ended => match line {
                None => {
                    // No more requests: what waits for the client's answer fails closed; the
                    // requests in flight are still answered.
                    session.host().input_ended();
                    ended = true;
                }
                Some(line) => match decode_wire_line(line) {
                    Err(e) => {
                        let _ = out.send(&*e).await;
                    }
                    Ok(WireInbound::Notification { method }) => {
                        tracing::warn!("ignoring a `{method}` notification (requests need an id)");
                    }
                    Ok(WireInbound::ClientResponse { id, outcome }) => session.host().client_response(&id, outcome),
                    Ok(WireInbound::Request { id, request }) => {
                        let session = &session;
                        inflight.push(async move { (id, dispatch_wire_request(session, request).await) });
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
