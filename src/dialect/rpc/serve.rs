//! The JSONL reader loop: reads lines, decodes them (one error response per bad line, id
//! echoed), dispatches commands through the generated `dispatch_rpc_command` and writes every
//! response through the single writer.
//!
//! Ordering: commands are handled in arrival order on the reader task, so cheap commands answer
//! in order. Answers to read-only commands and to bad lines are gathered in a batch while more
//! input is already buffered, and queued as one item when the input runs dry, the batch is
//! full, or before any other command runs (so nothing a command causes can overtake an earlier
//! answer): a pipelined burst costs one hand-off to the writer per batch, not per frame.
//! Commands that wait on the run or on external work (`abort`, `abort_and_prompt`,
//! `new_session`, `bash`) are spawned, so the reader keeps reading the UI and host-tool answers
//! a run may be waiting for. Work starts only after the response of the command that started
//! it is queued: a command that submits a message is answered through [`RpcSession::accept`],
//! which hands back the [`Start`] of the work it started, and this loop starts it once the answer is on
//! the outbox.
//!
//! stdin EOF means "no more requests", not "cancel": stop reading, fail closed every dialog and
//! host tool call waiting for the host (nobody can answer them now), let every command already
//! read finish and answer — a running `bash` completes with its output — and return. The run
//! itself goes on: the process runner (`crate::server`) waits for it, and bounds the wait only
//! when asked to (`--eof-timeout`) or on a signal, by cancelling.

use std::sync::Arc;
use std::task::Poll;

use futures_util::FutureExt;
use tokio::io::AsyncBufRead;
use tokio::task::JoinSet;

use super::chunks::InboundChunks;
use super::decode::{decode_line, Inbound};
use super::RpcSession;
use crate::core::{AgentCore, Start};
use crate::jsonrpc::answer;
use crate::protocol::rpc_reply::RpcReply;
use crate::protocol::{dispatch_rpc_command, RpcCommand};
use crate::transport::{FrameBatch, InboundLine, LineReader, Outbox};

fn is_detached(command: &RpcCommand) -> bool {
    matches!(command, RpcCommand::Abort(_) | RpcCommand::AbortAndPrompt(_) | RpcCommand::NewSession(_) | RpcCommand::Bash(_))
}

/// Answers gathered before the batch is queued (well inside the writer's byte budget).
const BATCH_BYTES: usize = 64 * 1024;

/// A line's buffer up to this size is read into again for the next line (one allocation for
/// a session's lines, not one each); a larger one is let go, so one huge line does not pin
/// its size.
const LINE_BUFFER_KEPT: usize = 64 * 1024;

/// Commands that only read state: their answers may wait in the batch, since they cause no
/// other frame that could overtake an earlier answer.
fn is_read_only(command: &RpcCommand) -> bool {
    matches!(
        command,
        RpcCommand::GetState(_)
            | RpcCommand::GetAvailableModels(_)
            | RpcCommand::GetAvailableThinkingLevels(_)
            | RpcCommand::GetSessionStats(_)
            | RpcCommand::GetBranchMessages(_)
            | RpcCommand::GetForkMessages(_)
            | RpcCommand::GetLastAssistantText(_)
            | RpcCommand::GetMessages(_)
            | RpcCommand::GetMessagesPage(_)
            | RpcCommand::GetCommands(_)
            | RpcCommand::GetAvailableCommands(_)
            | RpcCommand::GetTree(_)
            | RpcCommand::GetEntries(_)
    )
}

/// The generated dispatch over every command, compiled once: both callers poll it through
/// this box (awaited in place from two functions, the optimizer kept two copies of its 0.13 MB
/// state machine).
fn dispatch<'a, A: AgentCore>(session: &'a RpcSession<A>, id: Option<serde_json::Value>, command: RpcCommand) -> std::pin::Pin<Box<dyn std::future::Future<Output = RpcReply> + Send + 'a>> {
    Box::pin(dispatch_rpc_command(session, id, command))
}

/// Runs one command's handler: its answer, and the work it started (to start once that answer
/// is queued). A handler that panics is answered `internal` (with the command's id), and the
/// loop goes on serving: uncaught, the panic would end the loop and the process with it, or
/// leave a detached command without its answer.
async fn handle<A: AgentCore>(session: &RpcSession<A>, id: Option<serde_json::Value>, command: RpcCommand) -> (RpcReply, Start) {
    let kind = command.tag();
    let handled = async {
        match session.accept(id.clone(), command).await {
            Ok(accepted) => accepted,
            Err(command) => (dispatch(session, id.clone(), command).await, Start::none()),
        }
    };
    match std::panic::AssertUnwindSafe(handled).catch_unwind().await {
        Ok(handled) => handled,
        Err(panic) => {
            let reason = crate::panic::reason(panic);
            (RpcReply { id, command: kind, outcome: Err(crate::protocol::RpcError::internal(format!("the command's handler panicked: {reason}"))) }, Start::none())
        }
    }
}

/// Queues `reply`, then lets the work the command started go (its first event follows the
/// answer), then what waits for the answer ([`answer::Answered::fire`]).
async fn answer_then_start(out: &Outbox, (reply, mut work): (RpcReply, Start), answered: answer::Answered) {
    let _ = out.send(&reply).await;
    work.go();
    answered.fire();
}

/// The one error frame for a sub-protocol answer nobody is waiting for, carrying its id.
async fn unknown_answer(out: &Outbox, id: String, command: &str) {
    let what = if command == "extension_ui_response" {
        "extension UI request id (never sent, already answered, timed out or withdrawn)"
    } else {
        "host tool call id (never made, finished, cancelled or timed out)"
    };
    let error = crate::protocol::RpcError::not_found(format!("Unknown {what}: {id}"));
    let _ = out.send(&crate::protocol::rpc_reply::rpc_failure(Some(serde_json::Value::String(id)), command, error)).await;
}

/// Serves one JSONL session on `input`; returns when input ends and every command read is
/// answered (a run it started may still go on).
pub async fn serve_rpc<A: AgentCore, R: AsyncBufRead + Unpin>(session: RpcSession<A>, input: R, max_line_bytes: usize) {
    let out = session.host().outbox().clone();
    let mut reader = LineReader::new(input, max_line_bytes);
    let mut detached: JoinSet<()> = JoinSet::new();
    let session = Arc::new(session);
    let mut batch = FrameBatch::default();
    let mut chunks = InboundChunks::default();
    let mut spare = Vec::new();
    loop {
        let next = reader.next_line_in(std::mem::take(&mut spare));
        tokio::pin!(next);
        // Gathered answers wait only while the next line is already at hand.
        let line = match futures_util::poll!(next.as_mut()) {
            Poll::Ready(line) => line,
            Poll::Pending => {
                let _ = out.send_batch(&mut batch).await;
                next.await
            }
        };
        let line = match line {
            Ok(Some(line)) => line,
            // A read error is the end of the input as far as the host is concerned.
            Ok(None) | Err(_) => break,
        };
        let decoded = decode_line(&line, max_line_bytes);
        if let InboundLine::Line(bytes) = line {
            if bytes.capacity() <= LINE_BUFFER_KEPT {
                spare = bytes;
            }
        }
        let inbound = match decoded {
            // omp protocol v2: a chunk waits for the rest of its frame, then that frame is handled.
            Ok(Inbound::Chunk(chunk)) => match chunks.accept(chunk, out.splits_large_frames(), max_line_bytes, &mut batch) {
                Some(frame) => frame,
                None => continue,
            },
            inbound => inbound,
        };
        // A bad line's error or a read-only answer joins the batch; anything else goes after it.
        match &inbound {
            Err(_) => {}
            Ok(Inbound::Command { command, .. }) if is_read_only(command) => {}
            Ok(_) => {
                let _ = out.send_batch(&mut batch).await;
            }
        }
        match inbound {
            Err(failure) => {
                let _ = failure.push_to(&mut batch);
            }
            // Messages are written from the session's stored text straight into the batch (see
            // `RpcSession::write_messages`); the state from its text kept while it is unchanged
            // (`RpcSession::write_state`).
            Ok(Inbound::Command { id, command: RpcCommand::GetState(cmd) }) => session.write_state(id, &cmd, &mut batch),
            Ok(Inbound::Command { id, command: RpcCommand::GetMessages(_) }) => session.write_messages(id, &mut batch),
            Ok(Inbound::Command { id, command: RpcCommand::GetMessagesPage(cmd) }) => session.write_messages_page(id, &cmd, &mut batch),
            Ok(Inbound::Command { id, command }) if is_read_only(&command) => {
                // Through the same dispatch as every other command: its data is written to text
                // once and copied into the batch (a second instance of the dispatch, serializing
                // into the batch directly, was 0.19 MB of the binary).
                let _ = batch.push(&dispatch(&*session, id, command).await);
            }
            // A sub-protocol answer nobody waits for gets one `not_found` error carrying its id:
            // the host learns its answer was too late (or wrong) instead of wondering.
            Ok(Inbound::UiResponse(r)) => {
                let id = r.id.to_string();
                if !session.host().ui_response(r) {
                    unknown_answer(&out, id, "extension_ui_response").await;
                }
            }
            Ok(Inbound::HostToolUpdate(u)) => {
                let id = u.id.to_string();
                if !session.host().host_tool_update(u).await {
                    unknown_answer(&out, id, "host_tool_update").await;
                }
            }
            // `chunks.accept` never yields a chunk (a frame carrying one is refused there).
            Ok(Inbound::Chunk(_)) => {}
            Ok(Inbound::HostToolResult(r)) => {
                let id = r.id.to_string();
                if !session.host().host_tool_result(r) {
                    unknown_answer(&out, id, "host_tool_result").await;
                }
            }
            // What a command leaves for after its answer (the work it started) goes once the
            // answer is queued.
            Ok(Inbound::Command { id, command }) => {
                if is_detached(&command) {
                    let (session, out) = (session.clone(), out.clone());
                    detached.spawn(async move {
                        let (handled, answered) = answer::scope(handle(&*session, id, command));
                        answer_then_start(&out, handled.await, answered).await;
                    });
                } else {
                    let (handled, answered) = answer::scope(handle(&*session, id, command));
                    answer_then_start(&out, handled.await, answered).await;
                }
            }
        }
        if batch.len() >= BATCH_BYTES {
            let _ = out.send_batch(&mut batch).await;
        }
        // Reap finished detached commands so the set does not grow with the session.
        while detached.try_join_next().is_some() {}
    }
    if let Some(unfinished) = chunks.at_end() {
        let _ = unfinished.push_to(&mut batch);
    }
    let _ = out.send_batch(&mut batch).await;
    session.host().input_ended();
    while detached.join_next().await.is_some() {}
}
