//! The kimi-cli JSON-RPC 2.0 wire dialect, as a projection of the agent core:
//!
//! - [`decode`]: one inbound line → a request, a notification, a client response, or its error;
//! - [`handler`]: the generated `WireHandler` trait implemented by mapping each method onto the core;
//! - [`project`]: the core's events → wire `event`s (exhaustive), with one turn at a time;
//! - [`port`]: the core's host port → `ApprovalRequest`, `ToolCallRequest`, `QuestionRequest`;
//! - [`log`]: the session's wire log and `replay`;
//! - [`serve`]: the reader loop (requests answered exactly once, in order where it matters).
//!
//! | core event | wire |
//! |---|---|
//! | prompt accepted | `TurnBegin {user_input}` (a run started from queued messages: at its first user message) |
//! | assistant `MessageStart` | `StepBegin {n}` (a retried attempt continues its step) |
//! | text / thinking delta | `ContentPart {type:text}` / `{type:think}` |
//! | tool call start / argument delta | `ToolCall {arguments:""}` / `ToolCallPart` |
//! | assistant `MessageEnd` | `StatusUpdate` (token usage, message id, plan mode); none for a cancelled step; after a provider error `StepInterrupted`, sent before `TurnEnd` unless the step is retried |
//! | `ToolEnd` | `ToolResult` |
//! | steered user message | `SteerInput` |
//! | `RetryStart` | `StepRetry` |
//! | `CompactionStart` / `CompactionEnd` | `CompactionBegin` / `CompactionEnd` |
//! | `RunEnd` / `PromptSettled` | `TurnEnd`, then the prompt's result (`finished` / `cancelled` / `max_steps_reached`, or -32003) |
//!
//! Every event and agent request is written to the wire log (merged) and served by `replay`.

pub mod decode;
pub mod handler;
pub mod log;
pub mod port;
pub mod project;
pub mod serve;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::agent::events::RunOutcome;
use crate::agent::{CoreError, PromptId};
use crate::protocol::envelope::{wire_codes, WireError};
use crate::protocol::*;
use crate::transport::Outbox;

pub use decode::{decode_wire_line, error_response, WireInbound};
pub use handler::WireSession;
pub use serve::serve_wire;

/// Protocol version this dialect speaks (kimi-cli's).
pub const WIRE_PROTOCOL_VERSION: &str = "1.10";

/// The turn as the wire sees it: one at a time, `TurnBegin` and `TurnEnd` strictly alternating.
#[derive(Debug, Default)]
struct Turn {
    /// `TurnBegin` was sent and `TurnEnd` not yet.
    active: bool,
    /// A run started without a wire prompt (from queued messages): its first user message
    /// opens the turn.
    implicit: bool,
    /// Model calls (`StepBegin n`) in this turn.
    step: u32,
    /// Plan mode, reported in `StatusUpdate`.
    plan_mode: bool,
    /// A failed attempt's `StepInterrupted`, held back: a retry continues the same step
    /// (`StepRetry`, no new `StepBegin`, as kimi does); otherwise it goes out before `TurnEnd`.
    interrupted: bool,
    /// The next assistant message is a retry of the current step.
    retrying: bool,
}

/// What a tool's `ToolResult` says beyond the core's output: an external tool's answer, or
/// kimi's wording for a refused call or a failed external tool.
#[derive(Debug, Clone)]
struct ReturnExtras {
    message: String,
    display: Vec<WireDisplayBlock>,
    /// Written as `output` instead of the text the model saw (kimi writes `""` for a
    /// rejection or an external tool error and puts the words in `message`).
    output: Option<String>,
}

impl ReturnExtras {
    /// kimi's shape for a call that produced no output: `output:""`, the words in `message`
    /// and one `brief` display block.
    fn failed(message: impl Into<String>, brief: impl Into<String>) -> Self {
        Self { message: message.into(), display: vec![WireDisplayBlock::Brief(WireBriefDisplay::new(brief.into()))], output: Some(String::new()) }
    }
}

/// The dialect's side of the core: the event projection and the host port, writing to the
/// single outbox, plus what correlates the core's handles with this dialect's ids.
#[derive(Debug)]
pub struct WireHost {
    out: Outbox,
    log: Mutex<log::WireLog>,
    turn: Mutex<Turn>,
    /// Requests sent to the client, by JSON-RPC id: where its answer goes (closed at stdin EOF).
    pending: crate::dialect::HostRequests<oneshot::Sender<Result<Value, WireError>>>,
    /// Prompt requests waiting for their turn to settle, by the core's prompt id.
    prompts: Mutex<HashMap<PromptId, oneshot::Sender<RunOutcome>>>,
    /// `ToolResult` extras (external tool answers, refusals), by tool call id.
    returns: Mutex<HashMap<String, ReturnExtras>>,
    /// The client answers `QuestionRequest`s (declared in `initialize`).
    supports_question: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl WireHost {
    /// A host writing to `out`, logging to the wire log beside `session` (when kept on disk).
    pub fn new(out: Outbox, session: Option<std::path::PathBuf>) -> Self {
        Self {
            out,
            log: Mutex::new(log::WireLog::open(session)),
            turn: Mutex::new(Turn::default()),
            pending: crate::dialect::HostRequests::default(),
            prompts: Mutex::new(HashMap::new()),
            returns: Mutex::new(HashMap::new()),
            supports_question: AtomicBool::new(false),
        }
    }

    /// The outbox every frame of this dialect goes through.
    pub fn outbox(&self) -> &Outbox {
        &self.out
    }

    fn questions_supported(&self) -> bool {
        self.supports_question.load(Ordering::Relaxed)
    }

    /// Sends an event, logging it first.
    async fn event(&self, event: WireEvent) {
        lock(&self.log).record_event(&event);
        let _ = self.out.send(&WireEventNotification::new(event)).await;
    }

    /// Sends a request to the client, logging it first (approvals are not logged, as in kimi);
    /// its answer arrives through [`WireHost::client_response`]. Once the client's input has
    /// ended nothing is sent and the receiver has already ended: nobody can answer.
    async fn request(&self, id: &str, params: WireAgentRequestParams) -> oneshot::Receiver<Result<Value, WireError>> {
        let (tx, rx) = oneshot::channel();
        if self.pending.insert(id.to_owned(), tx) {
            lock(&self.log).record_request(id, &params);
            let _ = self.out.send(&WireAgentRequest::new(crate::agent::nonempty(id), params)).await;
        }
        rx
    }

    /// Forgets a request nobody waits for any more (timed out, aborted).
    fn withdraw(&self, id: &str) {
        self.pending.withdraw(id);
    }

    /// The client's input ended (stdin EOF): requests waiting for it fail closed now and later
    /// ones are not sent (kimi: a pending approval is rejected, an external tool fails, a
    /// question is answered with nothing; notes §1.6).
    pub fn input_ended(&self) {
        self.pending.close();
    }

    /// Whether the client's input has ended.
    fn input_has_ended(&self) -> bool {
        self.pending.is_closed()
    }

    /// Delivers the client's answer to one of our requests; answers to unknown or settled
    /// requests (including replayed ones) are ignored.
    pub fn client_response(&self, id: &Value, outcome: Result<Value, WireError>) {
        let key = match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(tx) = self.pending.take(&key) {
            let _ = tx.send(outcome);
        }
    }
}

/// The one mapping from the core's errors to this dialect's error codes.
pub fn wire_error(e: CoreError) -> WireError {
    let code = match &e {
        CoreError::InvalidParams(_) => wire_codes::INVALID_PARAMS,
        CoreError::Busy(_) | CoreError::Conflict(_) => wire_codes::INVALID_STATE,
        CoreError::Unsupported(_) => wire_codes::LLM_NOT_SUPPORTED,
        CoreError::NotFound(_) | CoreError::Internal(_) | CoreError::SessionWrite(_) => wire_codes::INTERNAL_ERROR,
    };
    WireError::new(code, e.to_string())
}

/// A JSON-RPC id as read (string or integer) in its typed form.
pub fn wire_id(id: &Value) -> WireId {
    match id {
        Value::String(s) => WireId::String(s.clone()),
        other => WireId::Int64(other.as_i64().unwrap_or_default()),
    }
}
