//! The Agent Client Protocol (ACP v1, agent side), as a projection of the agent core. Types,
//! method table, handler trait and validators come from the vendored official schema
//! (`crate::protocol::acp`, `schema/acp/`).
//!
//! - [`decode`]: one inbound line → a request, a notification, a client response, or its error;
//! - [`handler`]: the generated `AcpAgentHandler` trait, implemented by mapping each method onto
//!   the core (one [`Agent`] per ACP session, each with its own [`AcpSessionHost`]);
//! - [`project`]: the core's events → `session/update` notifications (exhaustive), and the
//!   replay of a session's history for `session/load`;
//! - [`modes`]: the core's approval policy as ACP session modes (`session/set_mode`);
//! - [`client_tools`]: the built-in tools' file and `bash` access through the client's
//!   `fs/*` and `terminal/*` methods, when it advertises them;
//! - [`port`]: the core's host port → `session/request_permission`;
//! - [`serve`]: the reader loop (requests answered exactly once; notifications never).
//!
//! | core | ACP |
//! |---|---|
//! | text / thinking delta | `agent_message_chunk` / `agent_thought_chunk` |
//! | tool call streamed (start) | `tool_call` (`pending`, kind from the tool) |
//! | tool call complete (arguments) | `tool_call_update` (title, locations, `rawInput`) |
//! | `ToolStart` / `ToolUpdate` | `tool_call_update` `in_progress` (partial output as content) |
//! | `ToolEnd` | `tool_call_update` `completed` / `failed` with text, or a diff for `edit` / `write` |
//! | assistant `MessageEnd` | `usage_update` (context tokens used of the model's window) |
//! | `TodosChanged` | `plan` |
//! | `PromptSettled` | the `session/prompt` result: `end_turn`, `max_tokens` (the model stopped on length), `max_turn_requests` (`--max-steps-per-turn`), `cancelled`; a provider failure is a -32603 error |
//! | approval (`HostPort::approve`) | `session/request_permission` with `allow_once`, `allow_always`, `reject_once`, `reject_always` |

pub mod client_tools;
pub mod decode;
pub mod handler;
pub mod modes;
pub mod port;
pub mod project;
pub mod serve;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::agent::events::RunOutcome;
use crate::agent::PromptId;
use crate::protocol::acp::{notification_frame, request_frame, AcpError, SessionId, SessionNotification, SessionUpdate};
use crate::transport::Outbox;

pub use decode::{decode_acp_line, AcpInbound};
pub use handler::{AcpServer, SessionFactory};
pub use serve::serve_acp;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection, shared by every session: the outbox and the requests sent to the client.
#[derive(Debug)]
pub struct AcpConn {
    out: Outbox,
    /// Requests sent to the client, by JSON-RPC id: where the answer goes (closed at stdin EOF).
    pending: crate::dialect::HostRequests<oneshot::Sender<Result<Value, AcpError>>>,
    next_id: AtomicU64,
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => format!("s:{s}"),
        other => format!("n:{other}"),
    }
}

impl AcpConn {
    /// A connection writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self { out, pending: crate::dialect::HostRequests::default(), next_id: AtomicU64::new(0) }
    }

    /// The outbox every frame goes through.
    pub fn outbox(&self) -> &Outbox {
        &self.out
    }

    /// Sends a request to the client; returns its id and where its answer arrives. Once the
    /// client's input has ended nothing is sent and the receiver has already ended.
    async fn request<T: serde::Serialize>(&self, method: &str, params: &T) -> (Value, oneshot::Receiver<Result<Value, AcpError>>) {
        let id = Value::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if self.pending.insert(id_key(&id), tx) {
            let _ = self.out.send(&request_frame(&id, method, params)).await;
        }
        (id, rx)
    }

    /// Forgets a request nobody waits for any more.
    fn withdraw(&self, id: &Value) {
        self.pending.withdraw(&id_key(id));
    }

    /// The client's input ended (stdin EOF): permission requests and `fs` / `terminal` calls
    /// waiting for it fail closed now, and later ones are not sent (notes §1.6).
    pub fn input_ended(&self) {
        self.pending.close();
    }

    /// Delivers the client's answer to one of our requests (unknown ids are ignored).
    pub fn client_response(&self, id: &Value, outcome: Result<Value, AcpError>) {
        if let Some(tx) = self.pending.take(&id_key(id)) {
            let _ = tx.send(outcome);
        }
    }
}

/// What a tool call looked like when it was announced, for its later updates.
#[derive(Debug, Clone, Default)]
struct CallInfo {
    name: String,
    arguments: serde_json::Map<String, Value>,
}

/// Per-session state of the projection.
#[derive(Debug, Default)]
struct SessionState {
    /// The `session/prompt` waiting for its run, by the core's prompt id.
    prompts: HashMap<PromptId, oneshot::Sender<(RunOutcome, bool)>>,
    /// The last assistant message of the run stopped on length.
    hit_length: bool,
    /// Tool calls announced in this session, by id.
    calls: HashMap<String, CallInfo>,
    /// Tools the user answered `reject_always` for.
    rejected_tools: HashSet<String>,
    /// Tools the user answered `allow_always` for (the core remembers them too; kept here so
    /// the answer survives the core forgetting it on a session switch).
    allowed_tools: HashSet<String>,
}

/// One ACP session's side of the core: its event sink and host port.
#[derive(Debug)]
pub struct AcpSessionHost {
    conn: std::sync::Arc<AcpConn>,
    session_id: Mutex<String>,
    state: Mutex<SessionState>,
    /// The session's working directory (tool locations are absolute).
    cwd: Mutex<Option<std::path::PathBuf>>,
    /// The model's context window, for `usage_update`.
    context_window: Mutex<Option<u64>>,
    /// The client's `fs` / `terminal` methods for the built-in tools, when it offers any.
    tools: Mutex<Option<std::sync::Arc<dyn crate::tools::host::HostTools>>>,
}

impl AcpSessionHost {
    /// A host for a session of `conn` (its id is set once the core created the session).
    pub fn new(conn: std::sync::Arc<AcpConn>) -> Self {
        Self {
            conn,
            session_id: Mutex::new(String::new()),
            state: Mutex::new(SessionState::default()),
            cwd: Mutex::new(None),
            context_window: Mutex::new(None),
            tools: Mutex::new(None),
        }
    }

    fn set_session_id(&self, id: &str) {
        *lock(&self.session_id) = id.to_owned();
    }

    fn session_id(&self) -> String {
        lock(&self.session_id).clone()
    }

    /// Sends one `session/update`.
    async fn update(&self, update: SessionUpdate) {
        let n = SessionNotification { meta: None, session_id: SessionId(self.session_id()), update };
        let _ = self.conn.out.send(&notification_frame("session/update", &n)).await;
    }
}
