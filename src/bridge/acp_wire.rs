//! ACP to the host, kimi's wire dialect to the agent (kimi-cli `--wire`, `agentwire --mode wire`).
//!
//! | ACP (host) | wire (agent) |
//! |---|---|
//! | `initialize` | answered here after the wire `initialize` (sent during detection): no `loadSession`, no list/resume, text prompts only |
//! | `session/new` | the agent's one session (the wire has no request for another: a second is refused) |
//! | `session/prompt` | `prompt`; its answer ends it (`finished`/`max_steps_reached` → `end_turn`/`max_turn_requests`, `cancelled`) |
//! | `session/cancel` | `cancel` |
//! | `agent_message_chunk` / `agent_thought_chunk` | `ContentPart` `text` / `think` |
//! | `tool_call` / `tool_call_update` `completed`/`failed` | `ToolCall` (+ its `ToolCallPart`s) / `ToolResult` |
//! | `session/request_permission` (approve / approve for session / reject) | `ApprovalRequest` |
//!
//! A `QuestionRequest` has no ACP request: it is dismissed (no answers) with a warning on
//! stderr. External tools and hooks are not offered in `initialize`, so the agent does not ask.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::acp_rpc::{acp_update, ask_permission};
use super::rpc_events::Step;
use crate::client::{WireClient, WireEvents, WireHostHandler};
use super::acp_front::AcpFront;
use tokio_util::sync::CancellationToken;
use crate::jsonrpc::{Connection, Error};
use crate::protocol::acp::{
    methods, NewSessionRequest, NewSessionResponse, PermissionOptionKind, PromptResponse, SessionId, SessionNotification, StopReason, ToolCallId, ToolCallUpdate,
};
use crate::protocol::{
    WireApprovalDecision, WireApprovalRequestPayload, WireApprovalResult, WireCancelRequest, WireContentPart, WireEvent, WirePromptParams, WirePromptRequest, WirePromptResultStatus,
    WireQuestionRequestPayload, WireQuestionResult, WireToolCallPayload, WireUserInput,
};

#[derive(Debug, Default)]
struct State {
    /// The ACP session id of the agent's one session, once `session/new` opened it.
    session: Option<String>,
    /// A prompt is running.
    running: bool,
    /// `session/cancel` came while it ran.
    cancelled: bool,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The wire agent's requests, asked of the ACP host where ACP can ask.
#[derive(Debug, Clone)]
pub struct WireApprovals {
    conn: Arc<Connection>,
    state: Arc<Mutex<State>>,
}

impl WireApprovals {
    /// Approvals for the host on `conn`.
    pub fn new(conn: Arc<Connection>) -> Self {
        Self { conn, state: Arc::default() }
    }
}

/// The wire's approval answers, offered as ACP permission options in this order.
const DECISIONS: [(&str, PermissionOptionKind, WireApprovalDecision); 3] = [
    ("Approve", PermissionOptionKind::AllowOnce, WireApprovalDecision::Approve),
    ("Approve for this session", PermissionOptionKind::AllowAlways, WireApprovalDecision::ApproveForSession),
    ("Reject", PermissionOptionKind::RejectOnce, WireApprovalDecision::Reject),
];

impl WireHostHandler for WireApprovals {
    async fn approval(&self, request: WireApprovalRequestPayload) -> Result<WireApprovalResult, Error> {
        let session = lock(&self.state).session.clone();
        // Without a session nobody can be asked: rejected, as the wire does when unanswered.
        let chosen = match session {
            Some(session) => {
                // The approval names the tool call the host already saw as `tool_call`.
                let call = ToolCallUpdate::new(ToolCallId(request.tool_call_id.clone())).with_title(request.description.clone());
                let options = DECISIONS.iter().map(|(label, kind, _)| ((*label).to_owned(), *kind)).collect();
                ask_permission(&self.conn, session, call, options).await
            }
            None => None,
        };
        let response = chosen.and_then(|i| DECISIONS.get(i)).map_or(WireApprovalDecision::Reject, |(_, _, decision)| *decision);
        Ok(WireApprovalResult { request_id: request.id, response, feedback: None })
    }

    async fn question(&self, request: WireQuestionRequestPayload) -> Result<WireQuestionResult, Error> {
        tracing::warn!("the agent asked {} question(s) (QuestionRequest {}); ACP has no such request, so they are dismissed", request.questions.len(), request.id);
        Ok(WireQuestionResult { request_id: request.id, answers: Default::default() })
    }
}

/// The ACP server in front of a wire agent.
#[derive(Debug)]
pub struct AcpOverWire {
    conn: Arc<Connection>,
    agent: WireClient,
    state: Arc<Mutex<State>>,
    /// Asks the pump to forward every event already received, then to say so.
    flush: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Woken when a prompt ends: a prompt sent right behind `session/cancel` waits for it.
    turn_ended: tokio::sync::Notify,
}

/// A tool call whose arguments may still be streaming (`ToolCallPart`s).
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
}

impl AcpOverWire {
    /// The server for the host on `conn`, driving `agent`; `approvals` must be the handler the
    /// agent's client was connected with (they share the session). Run [`Self::pump`] with the
    /// receiver returned.
    pub fn new(conn: Arc<Connection>, agent: WireClient, approvals: &WireApprovals) -> (Self, mpsc::UnboundedReceiver<oneshot::Sender<()>>) {
        let (flush, flushes) = mpsc::unbounded_channel();
        (Self { conn, agent, state: approvals.state.clone(), flush, turn_ended: tokio::sync::Notify::new() }, flushes)
    }

    /// Forwards the agent's events to the host until its output ends; a flush request is
    /// answered once every event received before it was forwarded (a prompt's answer goes out
    /// after its updates).
    pub async fn pump(&self, mut events: WireEvents, mut flushes: mpsc::UnboundedReceiver<oneshot::Sender<()>>) {
        let mut open: Option<OpenCall> = None;
        loop {
            tokio::select! {
                biased;
                event = events.next() => match event {
                    Some(event) => self.forward(event, &mut open).await,
                    None => break,
                },
                Some(done) = flushes.recv() => {
                    while let Some(event) = events.try_next() {
                        self.forward(event, &mut open).await;
                    }
                    self.start_call(open.take()).await;
                    let _ = done.send(());
                }
            }
        }
        self.start_call(open.take()).await;
        // The agent is gone: answer what still waits for a flush.
        flushes.close();
        while let Some(done) = flushes.recv().await {
            let _ = done.send(());
        }
    }

    async fn forward(&self, event: WireEvent, open: &mut Option<OpenCall>) {
        if let WireEvent::ToolCallPart(part) = &event {
            if let (Some(call), Some(text)) = (open.as_mut(), &part.payload.arguments_part) {
                call.arguments.push_str(text);
            }
            return;
        }
        // Any other event means the open call's arguments are complete.
        self.start_call(open.take()).await;
        let step = match event {
            WireEvent::ContentPart(part) => match part.payload {
                WireContentPart::Text(t) => Step::Text(t.text),
                WireContentPart::Think(t) => Step::Thinking(t.think),
                WireContentPart::ImageUrl(_) | WireContentPart::AudioUrl(_) | WireContentPart::VideoUrl(_) => {
                    tracing::warn!("the agent streamed media by URL; ACP content carries media as data, so it is not shown");
                    return;
                }
            },
            WireEvent::ToolCall(call) => {
                *open = Some(open_call(call.payload));
                return;
            }
            WireEvent::ToolResult(result) => {
                let value = result.payload.return_value;
                let text = match &value.output {
                    WireUserInput::String(s) if !s.is_empty() => s.clone(),
                    WireUserInput::Array(parts) if !parts.is_empty() => parts.iter().filter_map(|p| if let WireContentPart::Text(t) = p { Some(t.text.as_str()) } else { None }).collect::<Vec<_>>().join("\n"),
                    WireUserInput::String(_) | WireUserInput::Array(_) => value.message.clone(),
                };
                let is_error = value.is_error;
                Step::ToolEnd { id: result.payload.tool_call_id, text, result: serde_json::to_value(&value).unwrap_or(Value::Null), is_error }
            }
            // Turn and step boundaries, status, compaction, MCP loading, hooks, sub-agents,
            // plans and side questions have no ACP update; the prompt's answer ends the turn.
            WireEvent::ToolCallPart(_)
            | WireEvent::TurnBegin(_)
            | WireEvent::SteerInput(_)
            | WireEvent::TurnEnd(_)
            | WireEvent::StepBegin(_)
            | WireEvent::StepInterrupted(_)
            | WireEvent::StepRetry(_)
            | WireEvent::CompactionBegin(_)
            | WireEvent::CompactionEnd(_)
            | WireEvent::McpLoadingBegin(_)
            | WireEvent::McpLoadingEnd(_)
            | WireEvent::StatusUpdate(_)
            | WireEvent::Notification(_)
            | WireEvent::ApprovalResponse(_)
            | WireEvent::HookTriggered(_)
            | WireEvent::HookResolved(_)
            | WireEvent::SubagentEvent(_)
            | WireEvent::PlanDisplay(_)
            | WireEvent::BtwBegin(_)
            | WireEvent::BtwEnd(_) => return,
        };
        self.update(step).await;
    }

    /// The `tool_call` of a call whose arguments are complete.
    async fn start_call(&self, call: Option<OpenCall>) {
        let Some(OpenCall { id, name, arguments }) = call else { return };
        let args = match serde_json::from_str::<Value>(&arguments) {
            Ok(Value::Object(args)) => args,
            // Not an object: kept as the text the model wrote.
            Ok(_) | Err(_) if arguments.trim().is_empty() => Map::new(),
            Ok(_) | Err(_) => Map::from_iter([("arguments".to_owned(), Value::String(arguments))]),
        };
        self.update(Step::ToolStart { id, name, args }).await;
    }

    async fn update(&self, step: Step) {
        let Some(session) = lock(&self.state).session.clone() else { return };
        if let Some(update) = acp_update(step) {
            self.conn.peer().notify::<methods::SessionUpdate>(&SessionNotification::new(SessionId(session), update)).await;
        }
    }

    /// Waits until every event received so far reached the host.
    async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        if self.flush.send(tx).is_ok() {
            let _ = rx.await;
        }
    }


    /// Asks the agent to cancel its running turn (its `prompt` then ends `cancelled`).
    fn cancel_turn(&self) {
        {
            let mut state = lock(&self.state);
            if !state.running {
                return;
            }
            state.cancelled = true;
        }
        let agent = self.agent.clone();
        tokio::spawn(async move {
            // kimi reads `params` as an object: an empty one, never absent.
            let cancel = WireCancelRequest::new().with_params(Value::Object(Map::new()));
            if let Err(e) = agent.request(&cancel).await {
                tracing::warn!("cancel: the agent refused `cancel`: {e}");
            }
        });
    }
}

fn open_call(call: WireToolCallPayload) -> OpenCall {
    OpenCall { id: call.id, name: call.function.name, arguments: call.function.arguments.unwrap_or_default() }
}

fn agent_error(e: crate::client::WireClientError) -> Error {
    Error::internal(format!("agent: {e}"))
}

impl AcpFront for AcpOverWire {
    const AGENT: &'static str = "kimi's wire dialect";
    const TITLE: &'static str = "agentwire bridge (kimi wire agent)";

    fn conn(&self) -> &Connection {
        &self.conn
    }

    fn live(&self, session: &SessionId) -> Result<(), Error> {
        match &lock(&self.state).session {
            Some(live) if *live == session.0 => Ok(()),
            Some(_) | None => Err(Error::resource_not_found(format!("No session {}; call session/new first", session.0))),
        }
    }

    async fn open_session(&self, _params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let mut state = lock(&self.state);
        if state.session.is_some() {
            return Err(Error::invalid_request("session/new is available once: the wire agent behind this bridge has one session per process and the wire has no request for another"));
        }
        let id = "bridge-1".to_owned();
        state.session = Some(id.clone());
        Ok(NewSessionResponse::new(SessionId(id)))
    }

    async fn prompt(&self, text: String, cancelled: CancellationToken) -> Result<PromptResponse, Error> {
        let busy = || Error::invalid_request("A prompt is already running in this session; wait for it or send session/cancel");
        // A prompt right behind a `session/cancel` waits for the cancelled prompt's end.
        let wait = {
            let state = lock(&self.state);
            super::acp_front::PromptWait::of(state.running, state.cancelled, &self.turn_ended)
        };
        if !wait.ready().await {
            return Err(busy());
        }
        {
            let mut state = lock(&self.state);
            if state.running {
                return Err(busy());
            }
            state.running = true;
            state.cancelled = false;
        }
        // After a `$/cancel_request` the answer still waits for the agent's (so it comes
        // after the turn's updates).
        let request = WirePromptRequest::new(WirePromptParams { user_input: WireUserInput::String(text) });
        let answer = self.agent.request(&request);
        tokio::pin!(answer);
        let answer = tokio::select! {
            answer = &mut answer => answer,
            () = cancelled.cancelled() => {
                self.cancel_turn();
                answer.await
            }
        };
        self.flushed().await;
        lock(&self.state).running = false;
        self.turn_ended.notify_waiters();
        match answer {
            Ok(result) => Ok(PromptResponse::new(match result.status {
                WirePromptResultStatus::Finished => StopReason::EndTurn,
                WirePromptResultStatus::Cancelled => StopReason::Cancelled,
                WirePromptResultStatus::MaxStepsReached => StopReason::MaxTurnRequests,
            })),
            Err(crate::client::CallError::Closed { .. }) => Err(Error::internal("The agent exited before the prompt ended")),
            Err(e) => Err(agent_error(e)),
        }
    }

    fn cancel(&self, session: &SessionId) {
        if lock(&self.state).session.as_deref() == Some(session.0.as_str()) {
            self.cancel_turn();
        }
    }

    fn close_agent(&self) {
        // Host EOF: the agent's input closes; the prompts end when it does.
        let agent = self.agent.clone();
        tokio::spawn(async move { agent.close().await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::NoWireHost;
    use crate::transport::spawn_writer;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// kimi streams a call's arguments in `ToolCallPart`s after a `ToolCall` without them: the
    /// host gets one `tool_call` with the whole arguments, then the result.
    #[tokio::test]
    async fn streamed_arguments_make_one_tool_call() {
        let (host_sink, host_source) = tokio::io::duplex(1 << 16);
        let (outbox, _writer) = spawn_writer(host_sink, 1 << 20);
        let conn = Arc::new(Connection::new(outbox));
        let approvals = WireApprovals::new(conn.clone());
        let (agent_in, _agent_reads) = tokio::io::duplex(1 << 16);
        let (mut agent_writes, agent_out) = tokio::io::duplex(1 << 16);
        let (client, events) = WireClient::connect(BufReader::new(agent_out), agent_in, NoWireHost);
        let (server, flushes) = AcpOverWire::new(conn, client, &approvals);
        lock(&server.state).session = Some("s".into());
        let server = Arc::new(server);
        tokio::spawn({
            let server = server.clone();
            async move { server.pump(events, flushes).await }
        });
        let event = |e: Value| format!("{}\n", serde_json::json!({"jsonrpc": "2.0", "method": "event", "params": e}));
        let lines = [
            event(serde_json::json!({"type": "ToolCall", "payload": {"type": "function", "id": "c1", "function": {"name": "bash", "arguments": null}}})),
            event(serde_json::json!({"type": "ToolCallPart", "payload": {"arguments_part": "{\"command\": \"echo "}})),
            event(serde_json::json!({"type": "ToolCallPart", "payload": {"arguments_part": "hi\"}"}})),
            event(serde_json::json!({"type": "ToolResult", "payload": {"tool_call_id": "c1", "return_value": {"is_error": false, "output": "hi\n", "message": "", "display": []}}})),
        ];
        agent_writes.write_all(lines.concat().as_bytes()).await.unwrap();
        let mut host = BufReader::new(host_source).lines();
        let mut next = async || -> Value { serde_json::from_str(&host.next_line().await.unwrap().unwrap()).unwrap() };
        let call = next().await;
        let update = &call["params"]["update"];
        assert_eq!((&update["sessionUpdate"], &update["toolCallId"], &update["title"]), (&Value::from("tool_call"), &Value::from("c1"), &Value::from("echo hi")), "{call}");
        assert_eq!(update["rawInput"]["command"], "echo hi", "{call}");
        let done = next().await;
        assert_eq!((&done["params"]["update"]["sessionUpdate"], &done["params"]["update"]["status"]), (&Value::from("tool_call_update"), &Value::from("completed")), "{done}");
    }
}
