//! The ACP reader loop. Lines are read on their own task (bounded by `--max-line-bytes`); each
//! request becomes one in-flight future polled here, so a `session/prompt` answers when its run
//! ends while the loop keeps serving `session/cancel` and the client's answers to permission
//! requests. Every request is answered exactly once; notifications never.
//!
//! stdin EOF means "no more requests" (notes §1.6): permission requests and client calls waiting
//! for the client fail closed, the requests in flight are answered — a `session/prompt` when its
//! run ends, as it would have — and the loop returns. Bounding that wait (`--eof-timeout`, a
//! signal) is the process runner's (`crate::server`): it cancels the runs.

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::io::AsyncBufRead;

use super::decode::{decode_acp_line, AcpInbound};
use super::AcpServer;
use crate::protocol::acp::{dispatch_acp_request, error_frame, success_frame, AcpAgentNotification, AcpError};
use crate::transport::lines::spawn_line_channel;

/// Serves ACP on `input` until it ends and every request read is answered.
pub async fn serve_acp<R>(server: &AcpServer, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let out = server.conn().outbox().clone();
    let (mut lines, reader) = spawn_line_channel(input, max_line_bytes);
    let mut inflight = FuturesUnordered::new();
    let mut ended = false;
    loop {
        tokio::select! {
            biased;
            Some((id, outcome)) = inflight.next(), if !inflight.is_empty() => {
                let outcome: Result<Value, AcpError> = outcome;
                let _ = match outcome {
                    Ok(result) => out.send(&success_frame(&id, result)).await,
                    Err(e) => out.send(&error_frame(Some(&id), &e)).await,
                };
                server.answered();
            }
            line = lines.recv(), if !ended => match line {
                None => {
                    // No more requests: what waits for the client's answer fails closed; the
                    // requests in flight are still answered.
                    server.conn().input_ended();
                    ended = true;
                }
                Some(line) => match decode_acp_line(line) {
                    Err(e) => {
                        let _ = out.send(&*e).await;
                    }
                    Ok(AcpInbound::Notification(AcpAgentNotification::SessionCancel(n))) => server.cancel(&n.session_id),
                    Ok(AcpInbound::Ignored { method, reason }) => tracing::warn!("ignoring a `{method}` notification: {reason}"),
                    Ok(AcpInbound::ClientResponse { id, outcome }) => server.conn().client_response(&id, outcome),
                    Ok(AcpInbound::Request { id, method: _, request }) => {
                        inflight.push(async move { (id, dispatch_acp_request(server, *request).await) });
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
