//! The Agent Client Protocol v2 (Preview), agent side, as a projection of the agent core,
//! beside v1 ([`crate::dialect::acp`]). Types, method tables, handler trait and validators come
//! from the vendored official v2 schema (`crate::protocol::acp_v2`, `schema/acp/v2/`); a
//! connection speaks v2 when its `initialize` asks for protocol version 2 or later
//! ([`crate::dialect::acp_version`]).
//!
//! What v2 changes, and how the core maps onto it:
//!
//! | core | ACP v2 |
//! |---|---|
//! | a prompt inserted | `session/prompt` answers at once with the user message's `messageId`; a `user_message` upsert with that id and the prompt's content |
//! | a prompt while a run works | held: inserted (and answered) as a run of its own once the run before it reported `idle`; `session/cancel` and `session/close` cancel the held prompts (-32800) |
//! | run in progress | `state_update` `running`; `requires_action` while a permission request waits; `idle` with `stopReason` (`end_turn`, `max_tokens`, `max_turn_requests`, `cancelled`, `error` with the error) when the run ends |
//! | text / thinking delta | `agent_message_chunk` / `agent_thought_chunk` with the assistant message's `messageId` |
//! | tool call streamed, complete, running, finished | `tool_call_update` upserts keyed by `toolCallId` (`pending`, then title, kind, locations and `rawInput`; `in_progress`; `completed` / `failed` with text, or a unified diff for `edit` / `write`) |
//! | approval | `session/request_permission` with a `tool_call` subject (a diff for `edit` / `write`) and the four standard options |
//! | assistant `MessageEnd` | `usage_update` (context tokens used of the model's window) |
//! | a run's assistant messages' token counts | `usage` on the run's `idle` (unstable schema) |
//! | the core's `clone_session` of a stored session | `session/fork` (unstable schema) |
//! | the core's `set_session_name` | `session/set_title` (unstable schema), live or stored |
//! | `TodosChanged` / `SessionNameChanged` / a notice | `plan_update` / `session_info_update` / `notice` |
//!
//! Files and commands are the agent's own tools: v2 has no client `fs/*` or `terminal/*`
//! methods (a client lends tools through the MCP servers it names). Sessions are resumed with
//! `session/resume`, replaying the history from the start when `replayFrom` asks for it.

pub mod decode;
pub mod handler;
mod port;
mod project;
#[cfg(feature = "client")]
pub mod remote;
pub mod serve;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::jsonrpc::Connection;
use crate::protocol::acp_v2::{methods, MessageId, SessionId, SessionUpdate, UpdateSessionNotification, Usage};

pub use decode::AcpV2AgentSide;
pub use handler::AcpV2Server;
pub use serve::serve_acp_v2;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a tool call looked like when it was announced, for its later updates.
#[derive(Debug, Clone, Default)]
struct CallInfo {
    name: String,
    arguments: Map<String, Value>,
}

/// Per-session state of the projection.
#[derive(Debug, Default)]
struct SessionState {
    /// The next message id (ids are `m<n>`; a replay names the history's messages by index,
    /// live ones continue from the history's length).
    next_message: u64,
    /// The assistant message being streamed.
    agent_message: Option<String>,
    /// The last assistant message of the run stopped on length.
    hit_length: bool,
    /// Permission requests waiting for the client (`requires_action` while any does).
    waiting: usize,
    /// Fires for the prompts held now (sent while a run works) when `session/cancel` or
    /// `session/close` cancels them; replaced by a fresh token for the prompts after.
    hold: tokio_util::sync::CancellationToken,
    /// Turns `true` once the run of the latest prompt reported `idle`.
    idle: Option<tokio::sync::watch::Receiver<bool>>,
    /// Tool calls announced in this session, by id.
    calls: HashMap<String, CallInfo>,
    /// The tools the user answered `allow_always` or `reject_always` for.
    standing: crate::dialect::acp::port::Standing,
    /// The token usage of the run in progress, summed over its assistant messages (`None`
    /// before the first: a run without a model call reports no usage), for its `idle`.
    run_usage: Option<RunUsage>,
}

/// The tokens a run's model calls used, summed over its assistant messages.
#[derive(Debug, Clone, Copy, Default)]
struct RunUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total: u64,
    /// `None` while no message reported reasoning tokens.
    reasoning: Option<u64>,
}

impl RunUsage {
    fn add(&mut self, u: &crate::protocol::Usage) {
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read;
        self.cache_write += u.cache_write;
        self.total += u.total_tokens;
        if let Some(r) = u.reasoning {
            self.reasoning = Some(self.reasoning.unwrap_or(0) + r);
        }
    }

    /// As the unstable schema's `usage` of an `idle` update.
    fn usage(self) -> Usage {
        Usage::new(self.input, self.output, self.total).with_cached_read_tokens(self.cache_read).with_cached_write_tokens(self.cache_write).with_thought_tokens(self.reasoning)
    }
}

/// One ACP v2 session's side of the core: its event sink and host port.
#[derive(Debug)]
pub struct AcpV2SessionHost {
    conn: Arc<Connection>,
    session_id: Mutex<String>,
    state: Mutex<SessionState>,
    /// The session's working directory (tool locations are absolute).
    cwd: Mutex<Option<PathBuf>>,
    /// The model's context window, for `usage_update`.
    context_window: Mutex<Option<u64>>,
    /// Taken by a `session/prompt` until its run started: prompts are inserted one at a time,
    /// in the order they came.
    admission: tokio::sync::Mutex<()>,
    /// Sends nothing: the host of a session opened only to change it (`session/set_title` of a
    /// session not active on the connection), whose updates the client did not ask for.
    quiet: bool,
}

impl AcpV2SessionHost {
    /// A host for a session of `conn` (its id is set once the core created the session).
    pub fn new(conn: Arc<Connection>) -> Self {
        Self { conn, session_id: Mutex::new(String::new()), state: Mutex::new(SessionState::default()), cwd: Mutex::new(None), context_window: Mutex::new(None), admission: tokio::sync::Mutex::new(()), quiet: false }
    }

    /// A host that sends nothing, for a session opened only to change it.
    pub fn quiet(conn: Arc<Connection>) -> Self {
        Self { quiet: true, ..Self::new(conn) }
    }

    fn session_id(&self) -> String {
        lock(&self.session_id).clone()
    }

    /// A new message id.
    fn next_message_id(&self) -> String {
        let mut st = lock(&self.state);
        let id = format!("m{}", st.next_message);
        st.next_message += 1;
        id
    }

    /// Sends one `session/update`.
    async fn update(&self, update: SessionUpdate) {
        if self.quiet {
            return;
        }
        let n = UpdateSessionNotification::new(SessionId(self.session_id()), update);
        self.conn.peer().notify::<methods::SessionUpdate>(&n).await;
    }

    /// Sends a `state_update` (`running`, `requires_action`, or `idle` with its stop reason
    /// and, for `error`, the error).
    async fn state(&self, state: &str, stop_reason: Option<&str>, error: Option<crate::protocol::acp_v2::Error>) {
        self.state_with_usage(state, stop_reason, error, None).await;
    }

    /// [`Self::state`] with the token usage of the run it ends (an `idle` ending a run).
    async fn state_with_usage(&self, state: &str, stop_reason: Option<&str>, error: Option<crate::protocol::acp_v2::Error>, usage: Option<Usage>) {
        self.update(SessionUpdate::StateUpdate { background: None, error, meta: None, state: state.to_owned(), stop_reason: stop_reason.map(str::to_owned), usage }).await;
    }

    /// Cancels the prompts held now (they are answered -32800, never inserted).
    fn cancel_held(&self) {
        std::mem::take(&mut lock(&self.state).hold).cancel();
    }

    /// A `user_message` upsert.
    async fn user_message(&self, id: &str, content: Vec<crate::protocol::acp_v2::ContentBlock>) {
        self.update(SessionUpdate::UserMessage { content: Some(content), message_id: MessageId(id.to_owned()), meta: None }).await;
    }
}
