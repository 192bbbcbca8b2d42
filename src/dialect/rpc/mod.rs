//! The pi / oh-my-pi JSONL RPC dialect, as a projection of the agent core:
//!
//! - [`decode`]: one inbound line → a command, a sub-protocol answer, or its one error response;
//! - [`failure`]: that error response, written straight into the output batch;
//! - [`handler`]: the generated `RpcHandler` trait implemented by mapping each command onto the core;
//! - [`project`]: the core's events → JSONL event frames (exhaustive);
//! - [`port`] and [`host_tools`]: the core's host port → `extension_ui_request` / `host_tool_call`;
//! - [`serve`]: the reader loop (dispatch order, detached commands, EOF);
//! - [`chunks`]: inbound `rpc_chunk` frames (omp protocol v2) reassembled into lines.

pub mod chunks;
pub mod decode;
pub mod failure;
pub mod handler;
pub mod host_tools;
pub mod port;
pub mod project;
pub mod serve;
#[cfg(feature = "client")]
pub mod remote;
#[cfg(feature = "client")]
pub mod steps;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::core::{CoreError, PromptId};
use crate::protocol::{RpcError, RpcErrorCode};
use crate::transport::{FrameBatch, Outbox};

pub use decode::{decode_line, Inbound};
pub use failure::RpcFailure;
pub use handler::RpcSession;
pub use serve::serve_rpc;

/// Which generation of the rpc dialect a connection speaks. pi 1.6 and omp 18.3 hosts read
/// the same stream; pi 0.73-era hosts expect the snapshots pi 0.84 dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RpcProfile {
    /// pi 1.6 / omp 18.3: delta-only `message_update` with `usage`, `messageId` on message
    /// events, `toolcall_start` with the call's id and name, `tool_execution_end.durationMs`,
    /// `bash_execution_update`.
    #[default]
    Current,
    /// pi 0.73.1 / omp 18.2.3 (`--rpc-profile pi-0.73`): `message_update` carries the message
    /// so far twice, and none of the fields above are sent.
    Pi073,
}

impl RpcProfile {
    /// Whether this profile sends the fields pi 0.84 and later (and omp 18.3) added.
    pub fn is_current(self) -> bool {
        match self {
            Self::Current => true,
            Self::Pi073 => false,
        }
    }
}

/// The dialect's side of the core: the event projection and the host port, writing to the
/// single outbox, plus what correlates the core's handles with this dialect's ids.
#[derive(Debug)]
pub struct RpcHost {
    out: Outbox,
    dialogs: port::UiDialogs,
    tools: host_tools::HostToolCalls,
    /// The request id of each prompt the core accepted, for its `prompt_result`.
    prompts: Mutex<HashMap<PromptId, Value>>,
    /// Which generation of the dialect this connection speaks.
    profile: RpcProfile,
    /// Whether `message_update` carries the message snapshots (`set_event_options`; off in the
    /// current profile, on in pi 0.73's).
    partial_messages: AtomicBool,
    /// omp's `messageId`s: the last one minted, and those of the messages started and not yet
    /// ended (a message nests inside a streaming reply only in omp, but the stack costs nothing).
    message_ids: Mutex<(u64, Vec<String>)>,
    /// When each running tool call started, for `tool_execution_end.durationMs`.
    tool_started: Mutex<HashMap<String, Instant>>,

    /// A run's `agent_end`, held until its `prompt_result` is encoded: the two go out as one
    /// write, so a host that answers `agent_end` with its next command never sees that command's
    /// response between them (it did, under load: the run's task was descheduled after queueing
    /// `agent_end`, and the reader answered the next command first).
    run_end: Mutex<Option<FrameBatch>>,
    /// The `tool_execution_*` frames of calls the core started while the assistant message
    /// still streamed (calls start as soon as their arguments are complete): pi and omp hosts
    /// get the assistant's `message_end` before any tool event, so they are held until it, then
    /// go out with it. `Some` while an assistant message streams.
    early_tools: Mutex<Option<FrameBatch>>,
    /// A run started since the last settled prompt: its settle sends `agent_settled`.
    active: AtomicBool,
    /// A run started since the last `session_settled`.
    stretch: AtomicBool,
    /// An `abort_and_prompt` is replacing the work in progress: the aborted prompt's settle
    /// does not end the stretch of activity.
    handing_over: AtomicBool,
}

impl RpcHost {
    /// A host writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self::with_profile(out, RpcProfile::default())
    }

    /// A host writing to `out` in `profile`.
    pub fn with_profile(out: Outbox, profile: RpcProfile) -> Self {
        Self {
            dialogs: port::UiDialogs::new(out.clone()),
            out,
            tools: host_tools::HostToolCalls::default(),
            prompts: Mutex::new(HashMap::new()),
            profile,
            partial_messages: AtomicBool::new(!profile.is_current()),
            message_ids: Mutex::new((0, Vec::new())),
            tool_started: Mutex::new(HashMap::new()),
            run_end: Mutex::new(None),
            early_tools: Mutex::new(None),
            active: AtomicBool::new(false),
            stretch: AtomicBool::new(false),
            handing_over: AtomicBool::new(false),
        }
    }

    /// The generation of the dialect this connection speaks.
    pub fn profile(&self) -> RpcProfile {
        self.profile
    }

    /// The outbox every frame of this dialect goes through.
    pub fn outbox(&self) -> &Outbox {
        &self.out
    }

    /// An answer to a UI dialog; `false` when no dialog with its id is waiting.
    pub fn ui_response(&self, response: crate::protocol::ExtensionUiResponse) -> bool {
        self.dialogs.answer(&Value::String(response.id.to_string()), response)
    }

    /// Progress of a host tool call; `false` when no call with its id is running.
    pub async fn host_tool_update(&self, frame: crate::protocol::HostToolUpdate) -> bool {
        self.tools.update(frame).await
    }

    /// Result of a host tool call; `false` when no call with its id is running.
    pub fn host_tool_result(&self, frame: crate::protocol::HostToolResult) -> bool {
        self.tools.result(frame)
    }

    /// The host's input ended (stdin EOF): dialogs and host tool calls waiting for it fail
    /// closed now, and later ones fail without being asked: nobody is
    /// left to answer them.
    pub fn input_ended(&self) {
        self.dialogs.close();
        self.tools.close();
    }

    /// Whether `message_update` frames carry the message snapshots.
    pub fn partial_messages(&self) -> bool {
        // Relaxed: the flag orders nothing else; a delta projected while the command that flips
        // it is answered may go either way.
        self.partial_messages.load(Ordering::Relaxed)
    }

    /// `set_event_options`: with or without the snapshots from the next `message_update` on.
    pub fn set_partial_messages(&self, on: bool) {
        self.partial_messages.store(on, Ordering::Relaxed);
    }

    /// Whether an `abort_and_prompt` is replacing the work in progress (set around it).
    fn hand_over(&self, on: bool) {
        self.handing_over.store(on, Ordering::Relaxed);
    }

    /// Remembers the request id a started prompt's `prompt_result` must carry.
    fn expect_result(&self, prompt: PromptId, id: Option<Value>) {
        if let Some(id) = id {
            self.prompts.lock().unwrap_or_else(|e| e.into_inner()).insert(prompt, id);
        }
    }
}

/// The one mapping from the core's errors to this dialect's error codes.
pub fn rpc_error(e: CoreError) -> RpcError {
    let code = match &e {
        CoreError::InvalidParams(_) => RpcErrorCode::InvalidParams,
        CoreError::NotFound(_) => RpcErrorCode::NotFound,
        CoreError::Busy(_) => RpcErrorCode::Busy,
        CoreError::Conflict(_) => RpcErrorCode::Conflict,
        CoreError::Unsupported(_) => RpcErrorCode::Unsupported,
        CoreError::Internal(_) | CoreError::SessionWrite(_) | CoreError::Refused(_) => RpcErrorCode::Internal,
    };
    RpcError::new(code, e.to_string())
}
