//! The ACP reader loop. Lines are read on their own task (bounded by `--max-line-bytes`); each
//! request becomes one in-flight future polled here, so a `session/prompt` answers when its run
//! ends while the loop keeps serving `session/cancel` and the client's answers to permission
//! requests. Every request is answered exactly once; notifications never.
//!
//! stdin EOF: every session's run is aborted (prompts resolve `cancelled`), requests in flight
//! are answered (bounded by a grace period), and the loop returns.

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::io::AsyncBufRead;

use super::decode::{decode_acp_line, AcpInbound};
use super::AcpServer;
use crate::dialect::SHUTDOWN_GRACE;
use crate::protocol::acp::{dispatch_acp_request, error_frame, success_frame, AcpAgentNotification, AcpError};
use crate::transport::lines::spawn_line_channel;

/// Serves ACP on `input` until it ends and everything in flight is answered.
pub async fn serve_acp<R>(server: &AcpServer, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let out = server.conn().outbox().clone();
    let (mut lines, reader) = spawn_line_channel(input, max_line_bytes);
    let mut inflight = FuturesUnordered::new();
    let mut shutdown = None;
    let mut deadline = None;
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
            line = lines.recv(), if shutdown.is_none() => match line {
                None => {
                    let agents = server.agents();
                    shutdown = Some(tokio::spawn(async move {
                        for agent in agents {
                            agent.shutdown().await;
                        }
                    }));
                    deadline = Some(Box::pin(tokio::time::sleep(SHUTDOWN_GRACE)));
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
            () = async { deadline.as_mut().expect("guarded").await }, if deadline.is_some() => break,
            else => break,
        }
        if shutdown.is_some() && inflight.is_empty() {
            break;
        }
    }
    drop(inflight);
    if let Some(shutdown) = shutdown {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, shutdown).await;
    }
    reader.abort();
}
