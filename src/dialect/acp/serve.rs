//! The ACP reader loop. Lines are read on their own task (bounded by `--max-line-bytes`); each
//! request becomes one in-flight future polled here, so a `session/prompt` answers when its run
//! ends while the loop keeps serving `session/cancel` and the client's answers to permission
//! requests. Every request is answered exactly once; notifications never.
//!
//! `$/cancel_request` names a request in flight: a `session/prompt` is cancelled as by
//! `session/cancel` (it answers `cancelled`); any other request answers -32800 at once. An id
//! not in flight (already answered, or never sent) is ignored.
//!
//! stdin EOF: every session's run is aborted (prompts resolve `cancelled`), requests in flight
//! are answered (bounded by a grace period), and the loop returns.

use std::collections::HashMap;

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::io::AsyncBufRead;
use tokio_util::sync::CancellationToken;

use super::decode::{decode_acp_line, AcpInbound};
use super::AcpServer;
use crate::dialect::SHUTDOWN_GRACE;
use crate::protocol::acp::{codes, dispatch_acp_request, error_frame, success_frame, AcpAgentNotification, AcpAgentRequest, AcpError};

/// A request in flight, for `$/cancel_request`.
struct Running {
    /// Ends the request with -32800.
    cancel: CancellationToken,
    /// The session of a `session/prompt`, which is cancelled through its run instead.
    prompt_of: Option<String>,
}
use crate::transport::lines::spawn_line_channel;

/// Serves ACP on `input` until it ends and everything in flight is answered.
pub async fn serve_acp<R>(server: &AcpServer, input: R, max_line_bytes: usize)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let out = server.conn().outbox().clone();
    let (mut lines, reader) = spawn_line_channel(input, max_line_bytes);
    let mut inflight = FuturesUnordered::new();
    let mut running: HashMap<String, Running> = HashMap::new();
    let mut shutdown = None;
    let mut deadline = None;
    loop {
        tokio::select! {
            biased;
            Some((id, outcome)) = inflight.next(), if !inflight.is_empty() => {
                let (id, outcome): (Value, Result<Value, AcpError>) = (id, outcome);
                running.remove(&id.to_string());
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
                    Ok(AcpInbound::Notification(AcpAgentNotification::CancelRequest(n))) => {
                        let key = serde_json::to_value(&n.request_id).unwrap_or_default().to_string();
                        match running.get(&key) {
                            Some(Running { prompt_of: Some(session), .. }) => server.cancel(session),
                            Some(Running { cancel, prompt_of: None }) => cancel.cancel(),
                            None => tracing::debug!("$/cancel_request for {key}, which is not in flight"),
                        }
                    }
                    Ok(AcpInbound::Ignored { method, reason }) => tracing::warn!("ignoring a `{method}` notification: {reason}"),
                    Ok(AcpInbound::ClientResponse { id, outcome }) => server.conn().client_response(&id, outcome),
                    Ok(AcpInbound::Request { id, method: _, request }) => {
                        let cancel = CancellationToken::new();
                        let prompt_of = match &*request {
                            AcpAgentRequest::SessionPrompt(p) => Some(p.session_id.0.clone()),
                            _ => None,
                        };
                        running.insert(id.to_string(), Running { cancel: cancel.clone(), prompt_of });
                        inflight.push(async move {
                            let outcome = tokio::select! {
                                biased;
                                outcome = dispatch_acp_request(server, *request) => outcome,
                                () = cancel.cancelled() => Err(AcpError::new(codes::REQUEST_CANCELLED, "Request cancelled by $/cancel_request")),
                            };
                            (id, outcome)
                        });
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
