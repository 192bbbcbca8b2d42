//! The host-tool sub-protocol: a model call to a host tool becomes `host_tool_call`; the host's
//! `host_tool_update`s become `tool_execution_update`s and its `host_tool_result` ends the call.
//! Abort sends `host_tool_cancel` and fails the call; a call the host does not answer within the
//! definition's `timeoutMs` (or the agent's default) fails too, with a `host_tool_cancel`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{new_id, nonempty};
use crate::protocol::{AgentToolResult, HostToolCall, HostToolCancel, HostToolDefinition, HostToolResult, HostToolUpdate};
use crate::tools::ToolOutput;
use crate::transport::Outbox;

struct Pending {
    result: oneshot::Sender<HostToolResult>,
    updates: mpsc::Sender<AgentToolResult>,
}

/// Calls waiting for the host, by `host_tool_call` id.
pub struct HostToolService {
    pending: Mutex<HashMap<String, Pending>>,
    /// How long a call waits when its definition sets no `timeoutMs`.
    default_timeout: Duration,
}

impl std::fmt::Debug for HostToolService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostToolService").finish_non_exhaustive()
    }
}

impl HostToolService {
    /// A service whose calls wait at most `default_timeout` unless their definition says otherwise.
    pub fn new(default_timeout: Duration) -> Self {
        Self { pending: Mutex::new(HashMap::new()), default_timeout }
    }

    /// Forwards a host update; unknown ids are ignored. Waits if the call's queue is full
    /// (backpressure on the host rather than an unbounded buffer).
    pub async fn update(&self, frame: HostToolUpdate) -> bool {
        let tx = self.pending.lock().unwrap_or_else(|e| e.into_inner()).get(frame.id.as_str()).map(|p| p.updates.clone());
        match tx {
            Some(tx) => tx.send(frame.partial_result).await.is_ok(),
            None => false,
        }
    }

    /// Delivers a host result; `false` when no call with that id is running (never made,
    /// finished, cancelled or timed out).
    pub fn result(&self, frame: HostToolResult) -> bool {
        match self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(frame.id.as_str()) {
            Some(p) => p.result.send(frame).is_ok(),
            None => false,
        }
    }

    /// Runs a host tool call to completion. `on_update` gets each partial result.
    pub async fn call(
        &self,
        out: &Outbox,
        def: &HostToolDefinition,
        tool_call_id: &str,
        arguments: &Map<String, Value>,
        cancel: &CancellationToken,
        mut on_update: impl AsyncUpdate,
    ) -> ToolOutput {
        let id = new_id();
        let (result_tx, mut result_rx) = oneshot::channel();
        let (updates_tx, mut updates_rx) = mpsc::channel(64);
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Pending { result: result_tx, updates: updates_tx });
        let call = HostToolCall {
            type_: Default::default(),
            id: nonempty(&id),
            tool_call_id: nonempty(tool_call_id),
            tool_name: nonempty(&def.name),
            arguments: arguments.clone(),
        };
        let _ = out.send(&call).await;
        // A host that never answers is bounded: by the definition's timeoutMs, else the default.
        let timeout = def.timeout_ms.map_or(self.default_timeout, Duration::from_millis);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let name = def.name.to_string();
        let failure = loop {
            tokio::select! {
                biased;
                Some(update) = updates_rx.recv() => on_update.update(update).await,
                result = &mut result_rx => match result {
                    Ok(r) => {
                        return ToolOutput { content: r.result.content, details: r.result.details, is_error: r.is_error.unwrap_or(false) };
                    }
                    Err(_) => break format!("Host tool \"{name}\" was abandoned"),
                },
                () = cancel.cancelled() => break format!("Host tool \"{name}\" was aborted"),
                () = &mut deadline => break format!("Host tool \"{name}\" did not answer within {} ms", timeout.as_millis()),
            }
        };
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        let cancel_frame = HostToolCancel { type_: Default::default(), id: nonempty(&new_id()), target_id: nonempty(&id) };
        let _ = out.send(&cancel_frame).await;
        ToolOutput::error(failure)
    }
}

/// Receives partial results while a host tool runs.
pub trait AsyncUpdate: Send {
    /// One partial result.
    fn update(&mut self, partial: AgentToolResult) -> impl std::future::Future<Output = ()> + Send;
}
