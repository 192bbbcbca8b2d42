//! ACP to the host, the pi/omp JSONL dialect to the agent.
//!
//! | ACP (host) | JSONL (agent) |
//! |---|---|
//! | `initialize` | answered here: no `loadSession`, no list/resume, text prompts only |
//! | `session/new` | the agent's one session (`new_session` for every later one; earlier ids end) |
//! | `session/prompt` | `prompt`; answered `end_turn` at `agent_end`, `cancelled` after an abort |
//! | `session/cancel` | `abort` |
//! | `agent_message_chunk` / `agent_thought_chunk` | `message_update` text / thinking deltas |
//! | `tool_call` / `tool_call_update` | `tool_execution_start` / `_update` / `_end` |
//! | `session/request_permission` | a `confirm` dialog (allow / reject) or a `select` (one option per label: omp and agentwire ask tool approvals so) |
//! | `session/load`, `session/list`, `session/resume`, `session/set_mode` | refused: the dialect has no such command |
//!
//! `input` and `editor` dialogs have no ACP counterpart: they are dismissed, and a warning says
//! which.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::oneshot;

use super::rpc_events::{step, Step};
use crate::client::{DialogAnswer, RpcAgentFrame, RpcClient, RpcDialog, RpcEvents, RpcHostHandler};
use crate::dialect::acp::project::{text_block, tool_kind, tool_title};
use super::acp_front::AcpFront;
use tokio_util::sync::CancellationToken;
use crate::jsonrpc::{Connection, Error, Reply};
use crate::protocol::acp::{
    methods, NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionId, PermissionOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionNotification, SessionUpdate, StopReason, ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate,
};
use crate::protocol::{AbortCommand, NewSessionCommand, PromptCommand};

/// What a prompt waits for.
#[derive(Debug, Default)]
struct Turn {
    /// The running prompt's end (`agent_end`), with whether it was cancelled.
    done: Option<oneshot::Sender<bool>>,
    /// `session/cancel` came while it ran.
    cancelled: bool,
}

#[derive(Debug, Default)]
struct State {
    /// The live ACP session id (the agent has one session at a time).
    session: Option<String>,
    /// How many sessions were opened (ids are `bridge-<n>`).
    opened: u64,
    turn: Turn,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ACP server in front of a JSONL agent.
#[derive(Debug)]
pub struct AcpOverRpc {
    conn: Arc<Connection>,
    agent: RpcClient,
    state: Arc<Mutex<State>>,
    /// Woken when a turn ends: a prompt sent right behind `session/cancel` waits for it.
    turn_ended: tokio::sync::Notify,
}

/// The agent's dialogs, asked of the ACP host where ACP can ask.
#[derive(Debug, Clone)]
pub struct AcpDialogs {
    conn: Arc<Connection>,
    state: Arc<Mutex<State>>,
}

impl AcpDialogs {
    /// Dialogs for the host on `conn`.
    pub fn new(conn: Arc<Connection>) -> Self {
        Self {
            conn,
            state: Arc::default(),
        }
    }
}

/// The permission kind an option label reads as: ACP's options are all allow or reject.
fn option_kind(label: &str) -> PermissionOptionKind {
    let lower = label.to_lowercase();
    if ["deny", "reject", "no", "cancel", "abort"].iter().any(|w| lower.starts_with(w)) {
        PermissionOptionKind::RejectOnce
    } else {
        PermissionOptionKind::AllowOnce
    }
}

/// Asks the ACP host on `conn` to allow `call` in `session`, offering `options` (label, kind);
/// the index of the option chosen, `None` when dismissed, refused or unanswerable (nothing
/// allowed).
pub(super) async fn ask_permission(conn: &Connection, session: String, call: ToolCallUpdate, options: Vec<(String, PermissionOptionKind)>) -> Option<usize> {
    let options = options.into_iter().enumerate().map(|(i, (label, kind))| PermissionOption::new(kind, label, PermissionOptionId(i.to_string()))).collect();
    let request = RequestPermissionRequest::new(options, SessionId(session), call);
    let pending = conn.peer().request::<methods::SessionRequestPermission>(&request).await;
    let answer = match pending.wait(None, None).await {
        Reply::Answered(Ok(result)) => serde_json::from_value::<RequestPermissionResponse>(result).ok().map(|r| r.outcome),
        Reply::Answered(Err(_)) | Reply::TimedOut | Reply::Abandoned | Reply::InputEnded => None,
    };
    match answer {
        Some(RequestPermissionOutcome::Selected { option_id, .. }) => option_id.0.parse::<usize>().ok(),
        Some(RequestPermissionOutcome::Cancelled) | None => None,
    }
}

impl RpcHostHandler for AcpDialogs {
    fn dialog(&self, dialog: RpcDialog) -> BoxFuture<'_, DialogAnswer> {
        async move {
            let Some(session) = lock(&self.state).session.clone() else { return DialogAnswer::Cancelled };
            // A confirm is allow / reject; a select (omp's and agentwire's tool approvals are
            // selects) offers its labels. Free text (input, editor) has no ACP request.
            let labels: Vec<(String, PermissionOptionKind)> = match dialog.method.as_str() {
                "confirm" => vec![("Allow".into(), PermissionOptionKind::AllowOnce), ("Reject".into(), PermissionOptionKind::RejectOnce)],
                "select" if !dialog.options.is_empty() => dialog.options.iter().map(|o| (o.clone(), option_kind(o))).collect(),
                _ => {
                    tracing::warn!("the agent opened a `{}` dialog ({}); ACP has no such request, so it is dismissed", dialog.method, dialog.title);
                    return DialogAnswer::Cancelled;
                }
            };
            let title = match &dialog.message {
                Some(message) if !message.is_empty() => format!("{}: {message}", dialog.title),
                _ => dialog.title.clone(),
            };
            let call = ToolCallUpdate::new(ToolCallId(format!("dialog-{}", dialog.id))).with_title(title);
            let options = labels.iter().map(|(label, kind)| (label.clone(), *kind)).collect();
            let chosen = ask_permission(&self.conn, session, call, options).await.and_then(|i| labels.get(i));
            match (chosen, dialog.method.as_str()) {
                (None, _) => DialogAnswer::Cancelled,
                (Some((_, kind)), "confirm") => DialogAnswer::Confirmed(*kind == PermissionOptionKind::AllowOnce),
                (Some((label, _)), _) => DialogAnswer::Value(label.clone()),
            }
        }
        .boxed()
    }
}

impl AcpOverRpc {
    /// The server for the host on `conn`, driving `agent`; `dialogs` must be the handler the
    /// agent's client was connected with (they share the session).
    pub fn new(conn: Arc<Connection>, agent: RpcClient, dialogs: &AcpDialogs) -> Self {
        Self {
            conn,
            agent,
            state: dialogs.state.clone(),
            turn_ended: tokio::sync::Notify::new(),
        }
    }

    /// Forwards the agent's events to the host until the agent's output ends; then every
    /// prompt still running ends (with an error: the agent is gone).
    pub async fn pump(&self, mut events: RpcEvents) {
        while let Some(frame) = events.next().await {
            self.forward(&frame).await;
        }
        // A cancelled prompt still answers `cancelled`; any other fails (the agent is gone).
        let turn = std::mem::take(&mut lock(&self.state).turn);
        if let Some(done) = turn.done.filter(|_| turn.cancelled) {
            let _ = done.send(true);
        }
        self.turn_ended.notify_waiters();
    }

    async fn forward(&self, frame: &RpcAgentFrame) {
        let Some(session) = lock(&self.state).session.clone() else { return };
        let Some(step) = step(frame) else { return };
        if step == Step::End {
            // Taken whole: the next prompt starts from a fresh turn, and this one's answer
            // carries its own `cancelled`.
            let turn = std::mem::take(&mut lock(&self.state).turn);
            if let Some(done) = turn.done {
                let _ = done.send(turn.cancelled);
            }
            self.turn_ended.notify_waiters();
        }
        if let Some(update) = acp_update(step) {
            self.conn.peer().notify::<methods::SessionUpdate>(&SessionNotification::new(SessionId(session), update)).await;
        }
    }

}

impl AcpOverRpc {
    /// Aborts the running prompt, if any: it ends `cancelled` once the agent settles it.
    fn cancel_turn(&self) {
        let running = {
            let mut state = lock(&self.state);
            let running = state.turn.done.is_some();
            state.turn.cancelled |= running;
            running
        };
        if running {
            let agent = self.agent.clone();
            tokio::spawn(async move {
                if let Err(e) = agent.request(&AbortCommand::default()).await {
                    tracing::warn!("cancel: the agent refused `abort`: {e}");
                }
            });
        }
    }
}

fn agent_error(e: crate::client::ClientError) -> Error {
    Error::internal(format!("agent: {e}"))
}

impl AcpFront for AcpOverRpc {
    const AGENT: &'static str = "the pi/omp JSONL dialect";
    const TITLE: &'static str = "agentwire bridge (pi/omp JSONL agent)";

    fn conn(&self) -> &Connection {
        &self.conn
    }

    fn live(&self, session: &SessionId) -> Result<(), Error> {
        match &lock(&self.state).session {
            Some(live) if *live == session.0 => Ok(()),
            Some(_) => Err(Error::resource_not_found(format!("Session {} ended: the agent behind this bridge has one session at a time and a later session/new replaced it", session.0))),
            None => Err(Error::resource_not_found(format!("No session {}; call session/new first", session.0))),
        }
    }

    async fn open_session(&self, _params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let first = lock(&self.state).opened == 0;
        if !first {
            if lock(&self.state).turn.done.is_some() {
                return Err(Error::internal("A prompt is running; the agent behind this bridge has one session at a time, so session/new waits for it to end"));
            }
            self.agent
                .request(&NewSessionCommand::default())
                .await
                .map_err(agent_error)?;
        }
        let mut state = lock(&self.state);
        state.opened += 1;
        let id = format!("bridge-{}", state.opened);
        state.session = Some(id.clone());
        Ok(NewSessionResponse::new(SessionId(id)))
    }

    async fn prompt(&self, text: String, cancelled: CancellationToken) -> Result<PromptResponse, Error> {
        let busy = || Error::internal("A prompt is already running in this session; wait for it or send session/cancel");
        // A prompt right behind a `session/cancel` waits for the cancelled turn's end.
        let wait = {
            let state = lock(&self.state);
            super::acp_front::PromptWait::of(state.turn.done.is_some(), state.turn.cancelled, &self.turn_ended)
        };
        if !wait.ready().await {
            return Err(busy());
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if state.turn.done.is_some() {
                return Err(busy());
            }
            state.turn = Turn {
                done: Some(tx),
                cancelled: false,
            };
        }
        if let Err(e) = self.agent.request(&PromptCommand::new(text)).await {
            lock(&self.state).turn = Turn::default();
            self.turn_ended.notify_waiters();
            return Err(agent_error(e));
        }
        let ended = tokio::select! {
            ended = rx => ended,
            () = cancelled.cancelled() => {
                self.cancel_turn();
                return Ok(PromptResponse::new(StopReason::Cancelled));
            }
        };
        match ended {
            Ok(true) => Ok(PromptResponse::new(StopReason::Cancelled)),
            Ok(false) => Ok(PromptResponse::new(StopReason::EndTurn)),
            Err(_) => Err(Error::internal("The agent exited before the prompt ended")),
        }
    }

    fn cancel(&self, session: &SessionId) {
        if lock(&self.state).session.as_deref() == Some(session.0.as_str()) {
            self.cancel_turn();
        }
    }

    fn close_agent(&self) {
        // Host EOF: the agent's input closes; the prompts end when it does.
        self.agent.close();
    }
}

/// The ACP update for a step of the agent's run (`None`: ACP has none for it).
pub(super) fn acp_update(step: Step) -> Option<SessionUpdate> {
    let call_update = crate::dialect::acp::project::call_update;
    Some(match step {
        Step::Text(text) => SessionUpdate::AgentMessageChunk { content: text_block(text), message_id: None, meta: None },
        Step::Thinking(text) => SessionUpdate::AgentThoughtChunk { content: text_block(text), message_id: None, meta: None },
        Step::ToolStart { id, name, args } => SessionUpdate::ToolCall {
            content: Vec::new(),
            kind: Some(tool_kind(&name)),
            locations: Vec::new(),
            meta: None,
            title: tool_title(&name, &args),
            name: Some(name),
            raw_input: Some(Value::Object(args)),
            raw_output: None,
            status: Some(ToolCallStatus::InProgress),
            tool_call_id: ToolCallId(id),
        },
        Step::ToolProgress { id, text } => {
            let mut update = call_update(&id);
            if let SessionUpdate::ToolCallUpdate { content, .. } = &mut update {
                *content = Some(vec![ToolCallContent::Content { content: text_block(text), meta: None }]);
            }
            update
        }
        Step::ToolEnd { id, text, result, is_error } => {
            let mut update = call_update(&id);
            if let SessionUpdate::ToolCallUpdate { content, status, raw_output, .. } = &mut update {
                *content = Some(vec![ToolCallContent::Content { content: text_block(text), meta: None }]);
                *status = Some(if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
                *raw_output = Some(result);
            }
            update
        }
        // Turns have no ACP update; the run's end answers the prompt.
        Step::TurnStart | Step::End => return None,
    })
}
