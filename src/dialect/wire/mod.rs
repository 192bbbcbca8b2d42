//! The kimi-cli JSON-RPC 2.0 wire dialect, as a projection of the agent core:
//!
//! - [`decode`]: one inbound line → a request, a notification, a client response, or its error;
//! - [`handler`]: the generated `WireHandler` trait implemented by mapping each method onto the core;
//! - [`project`]: the core's events → wire `event`s (exhaustive), with one turn at a time;
//! - [`port`]: the core's host port → `ApprovalRequest`, `ToolCallRequest`, `QuestionRequest`;
//! - [`log`]: the session's wire log and `replay`;
//! - [`serve`]: the dialect as a service of the JSON-RPC runtime's one serve loop
//!   ([`crate::jsonrpc`]: envelopes, ids, our requests and their answers).
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
#[cfg(feature = "client")]
pub mod remote;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use crate::core::CoreError;
use crate::jsonrpc::{Connection, Error, ErrorCode, Pending};
use crate::protocol::*;
use crate::transport::Outbox;

pub use decode::{decode_wire_line, WireInbound, WireSide};
pub use handler::WireSession;
pub use serve::serve_wire;

/// kimi's error codes: the standard ones plus its domain codes, some of which share their
/// numbers with ACP's (see [`ErrorCode`]).
pub mod codes {
    use crate::jsonrpc::ErrorCode;

    /// The request conflicts with the turn state (-32000).
    pub const INVALID_STATE: ErrorCode = ErrorCode::AuthRequired;
    /// No model is configured (-32001).
    pub const LLM_NOT_SET: ErrorCode = ErrorCode::Other(-32001);
    /// The input needs a capability the model lacks (-32002).
    pub const LLM_NOT_SUPPORTED: ErrorCode = ErrorCode::ResourceNotFound;
    /// The provider failed after retries (-32003).
    pub const CHAT_PROVIDER_ERROR: ErrorCode = ErrorCode::Other(-32003);
    /// The provider's credentials expired (-32004).
    pub const AUTH_EXPIRED: ErrorCode = ErrorCode::Other(-32004);
}

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
    /// The connection: the outbox and our requests to the client.
    conn: Connection,
    log: Mutex<log::WireLog>,
    turn: Mutex<Turn>,
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
            conn: Connection::new(out),
            log: Mutex::new(log::WireLog::open(session)),
            turn: Mutex::new(Turn::default()),
            returns: Mutex::new(HashMap::new()),
            supports_question: AtomicBool::new(false),
        }
    }

    /// The connection every frame of this dialect goes through.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The outbox every frame of this dialect goes through.
    pub fn outbox(&self) -> &Outbox {
        self.conn.outbox()
    }

    fn questions_supported(&self) -> bool {
        self.supports_question.load(Ordering::Relaxed)
    }

    /// Sends an event, logging it first.
    async fn event(&self, event: WireEvent) {
        lock(&self.log).record_event(&event);
        let _ = self.outbox().send(&WireEventNotification::new(event)).await;
    }

    /// Sends a request to the client, logging it first (approvals are not logged, as in kimi).
    /// Once the client's input has ended nothing is sent or logged, and the request settles
    /// [`crate::jsonrpc::Reply::InputEnded`] at once: nobody can answer.
    async fn request(&self, id: &str, params: WireAgentRequestParams) -> Pending<'_> {
        if !self.conn.peer().is_closed() {
            lock(&self.log).record_request(id, &params);
        }
        self.conn.peer().send(Value::String(id.to_owned()), &WireAgentRequest::new(crate::protocol::nonempty(id), params)).await
    }
}

/// The one mapping from the core's errors to this dialect's error codes.
pub fn wire_error(e: CoreError) -> Error {
    let code = match &e {
        CoreError::InvalidParams(_) => ErrorCode::InvalidParams,
        CoreError::Busy(_) | CoreError::Conflict(_) => codes::INVALID_STATE,
        CoreError::Unsupported(_) => codes::LLM_NOT_SUPPORTED,
        // An ACP agent's codes mean other things in wire: its refusal is an internal error here.
        CoreError::NotFound(_) | CoreError::Internal(_) | CoreError::SessionWrite(_) | CoreError::Refused(_) => ErrorCode::InternalError,
    };
    Error::new(code, e.to_string())
}
