//! The Agent Client Protocol (ACP v1, agent side), as a projection of the agent core. Types,
//! method table, handler trait and validators come from the vendored official schema
//! (`crate::protocol::acp`, `schema/acp/`).
//!
//! - [`decode`]: one inbound line → a request, a notification, a client response, or its error;
//! - [`front`]: the session table both versions' fronts keep, projected per version;
//! - [`handler`]: the generated `AcpAgentHandler` trait, implemented by mapping each method onto
//!   the core (one [`crate::core::AgentCore`] per ACP session — the built-in
//!   [`crate::agent::Agent`] or a custom one — each with its own [`AcpSessionHost`]);
//! - [`project`]: the core's events → `session/update` notifications (exhaustive), and the
//!   replay of a session's history for `session/load`;
//! - [`images`]: whether a prompt's images can go to the session's model;
//! - [`mcp`]: the sessions' `mcpServers` as the core's MCP server configs (sse refused);
//! - [`modes`]: the core's approval policy as ACP session modes (`session/set_mode`);
//! - [`config`]: model, thinking level and mode as config options (`session/set_config_option`);
//! - [`auth`]: how agentwire gets provider keys, as auth methods (`authenticate`, `logout`);
//! - [`client_tools`]: the built-in tools' file and `bash` access through the client's
//!   `fs/*` and `terminal/*` methods, when it advertises them;
//! - [`compat`]: every translation between v1 and v2 values ([`crate::dialect::acp_v2`] reuses
//!   v1's projection through it);
//! - [`port`]: the core's host port → `session/request_permission`;
//! - [`serve`]: the dialect as a service of the JSON-RPC runtime's one serve loop
//!   ([`crate::jsonrpc`]: envelopes, ids, our requests to the client and their answers,
//!   `$/cancel_request`).
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
//! | approval (`HostPort::approve`) | `session/request_permission` with `allow_once`, `allow_always`, `reject_once`, `reject_always`; a `diff` of the change for `write` / `edit` |

pub mod auth;
pub mod client_tools;
pub mod compat;
pub mod config;
pub mod decode;
pub mod front;
pub mod handler;
pub mod images;
mod mcp;
pub mod modes;
pub mod port;
pub mod project;
pub mod serve;
#[cfg(feature = "client")]
pub mod remote;
#[cfg(feature = "client")]
pub(crate) mod remote_shared;
#[cfg(feature = "client")]
pub mod router;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::jsonrpc::Connection;
use crate::protocol::acp::{methods, SessionId, SessionNotification, SessionUpdate};

pub use decode::{decode_acp_line, AcpAgentSide, AcpInbound};
pub use crate::core::{AuthFuture, SessionFactory};
pub use handler::AcpServer;
pub use serve::serve_acp;
pub(crate) use mcp::configs as mcp_configs;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a `session/prompt` sent right behind a `session/cancel` waits for the cancelled
/// prompt to end before it is refused as busy (here and in the bridges that serve ACP). A
/// cancelled run ends at once unless a tool ignores the cancel: a `bash` gets SIGKILL 2 s after
/// SIGTERM.
pub const CANCEL_WIND_DOWN: std::time::Duration = std::time::Duration::from_secs(10);

/// What a tool call looked like when it was announced, for its later updates.
#[derive(Debug, Clone, Default)]
struct CallInfo {
    name: String,
    arguments: serde_json::Map<String, Value>,
}

/// Per-session state of the projection.
#[derive(Debug, Default)]
struct SessionState {
    /// The last assistant message of the run stopped on length (read by the `session/prompt`
    /// that started it, once the run settled; reset when the next run starts).
    hit_length: bool,
    /// Turns `true` once the answer of the session's latest `session/prompt` is queued
    /// (`session/close` answers after the prompt it cancelled).
    prompt_answered: Option<tokio::sync::watch::Receiver<bool>>,
    /// The client sent `session/cancel` while the run in progress ran: it is winding down, and a
    /// prompt arriving meanwhile waits for it. Reset when a prompt starts the next run.
    cancelled: bool,
    /// Tool calls announced in this session, by id.
    calls: HashMap<String, CallInfo>,
    /// The tools the user answered `allow_always` or `reject_always` for.
    standing: port::Standing,
    /// The config options last sent because the agent changed them on its own: the prompt's
    /// end does not send the same again.
    announced_options: Option<Vec<crate::protocol::acp::SessionConfigOption>>,
}

/// One ACP session's side of the core: its event sink and host port.
#[derive(Debug)]
pub struct AcpSessionHost {
    conn: std::sync::Arc<Connection>,
    session_id: Mutex<String>,
    state: Mutex<SessionState>,
    /// The session's working directory (tool locations are absolute).
    cwd: Mutex<Option<std::path::PathBuf>>,
    /// The model's context window, for `usage_update`.
    context_window: Mutex<Option<u64>>,
    /// The client's `fs` / `terminal` methods for the built-in tools, when it offers any.
    tools: Mutex<Option<std::sync::Arc<dyn crate::core::tools::HostTools>>>,
}

impl AcpSessionHost {
    /// A host for a session of `conn` (its id is set once the core created the session).
    pub fn new(conn: std::sync::Arc<Connection>) -> Self {
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
        let n = SessionNotification::new(SessionId(self.session_id()), update);
        self.conn.peer().notify::<methods::SessionUpdate>(&n).await;
    }
}
