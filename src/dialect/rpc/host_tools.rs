//! The host-tool sub-protocol: the core's host tool call becomes `host_tool_call`; the host's
//! `host_tool_update`s are passed on as partial results and its `host_tool_result` ends the call.
//! Abort sends `host_tool_cancel` and fails the call; a call the host does not answer within its
//! timeout fails too, with a `host_tool_cancel`. Once the host's input has ended (stdin EOF) a
//! waiting call fails at once and a new one is not made, in omp's words.

use tokio::sync::{mpsc, oneshot};

use super::port::new_id;
use crate::protocol::nonempty;
use crate::core::port::ToolAsk;
use crate::dialect::HostRequests;
use crate::protocol::{AgentToolResult, HostToolCall, HostToolCancel, HostToolResult, HostToolUpdate};
use crate::core::tools::ToolOutput;
use crate::transport::Outbox;

struct Pending {
    result: oneshot::Sender<HostToolResult>,
    updates: mpsc::Sender<AgentToolResult>,
}

/// omp's words for a host tool call the host can no longer answer (its input ended), so
/// a host written against omp recognizes it.
const DISCONNECTED: &str = "RPC client disconnected before host tool execution completed";

/// Calls waiting for the host, by `host_tool_call` id.
#[derive(Default)]
pub struct HostToolCalls {
    pending: HostRequests<Pending>,
}

impl std::fmt::Debug for HostToolCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostToolCalls").finish_non_exhaustive()
    }
}

impl HostToolCalls {
    /// Forwards a host update; `false` for unknown ids. Waits if the core is behind
    /// (backpressure on the host rather than an unbounded buffer).
    pub async fn update(&self, frame: HostToolUpdate) -> bool {
        let tx = self.pending.with(frame.id.as_str(), |p| p.updates.clone());
        match tx {
            Some(tx) => tx.send(frame.partial_result).await.is_ok(),
            None => false,
        }
    }

    /// Delivers a host result; `false` when no call with that id is running (never made,
    /// finished, cancelled or timed out).
    pub fn result(&self, frame: HostToolResult) -> bool {
        match self.pending.take(frame.id.as_str()) {
            Some(p) => p.result.send(frame).is_ok(),
            None => false,
        }
    }

    /// The host's input ended: waiting calls fail now, later ones are not made.
    pub fn close(&self) {
        self.pending.close();
    }

    /// Runs a host tool call to completion.
    pub async fn call(&self, out: &Outbox, ask: ToolAsk<'_>) -> ToolOutput {
        let id = new_id();
        let (result_tx, result_rx) = oneshot::channel();
        if !self.pending.insert(id.clone(), Pending { result: result_tx, updates: ask.updates }) {
            return ToolOutput::error(DISCONNECTED);
        }
        let call = HostToolCall::new(nonempty(&id), nonempty(&ask.call.id), nonempty(&ask.def.name), ask.call.arguments.clone());
        let _ = out.send(&call).await;
        let name = ask.def.name.to_string();
        let failure = tokio::select! {
            result = result_rx => match result {
                Ok(r) => return ToolOutput { content: r.result.content, details: r.result.details, is_error: r.is_error.unwrap_or(false), change: None },
                // The input ended while the call waited ([`HostToolCalls::close`]).
                Err(_) => return ToolOutput::error(DISCONNECTED),
            },
            () = ask.cancel.cancelled() => format!("Host tool \"{name}\" was aborted"),
            () = tokio::time::sleep(ask.timeout) => format!("Host tool \"{name}\" did not answer within {} ms", ask.timeout.as_millis()),
        };
        self.pending.withdraw(&id);
        let _ = out.send(&HostToolCancel::new(nonempty(&new_id()), nonempty(&id))).await;
        ToolOutput::error(failure)
    }
}
