//! kimi's wire to the host, the pi/omp JSONL dialect to the agent.
//!
//! | wire (host) | JSONL (agent) |
//! |---|---|
//! | `initialize` | answered here: no external tools, no hooks, no slash commands |
//! | `prompt` | `prompt`: `TurnBegin`, then the run, `TurnEnd`; `finished` at `agent_end`, `cancelled` after `cancel` |
//! | `steer` | `steer` |
//! | `cancel` | `abort` |
//! | `StepBegin` | `turn_start` |
//! | `ContentPart` text / think | `message_update` text / thinking deltas |
//! | `ToolCall` / `ToolResult` | `tool_execution_start` / `tool_execution_end` |
//! | `replay`, `set_plan_mode`, external tools | refused: the JSONL dialect has no wire log and no plan mode |
//!
//! The agent's dialogs (`select` — omp's and agentwire's tool approvals —, `confirm`, `input`,
//! `editor`) become one-question `QuestionRequest`s when the host declared
//! `capabilities.supports_question` in `initialize`; otherwise they are dismissed (a warning
//! names them), as the wire's `ApprovalRequest` names a tool call, which a dialog is not.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::rpc_events::{step, Step};
use serde_json::Value;

use crate::client::{DialogAnswer, RpcAgentFrame, RpcClient, RpcDialog, RpcEvents, RpcHostHandler};
use crate::dialect::wire::port::dialog_question;
use crate::dialect::wire::{codes, WireSide, WIRE_PROTOCOL_VERSION};
use crate::jsonrpc::{Connection, Error, Reply, Service};
use crate::protocol::{
    nonempty, WireAgentRequest, WireQuestionRequest, WireQuestionRequestPayload, WireQuestionResult,
    AbortCommand, PromptCommand, SteerCommand, WireCancelRequest, WireContentPart, WireContentPartEvent, WireEmptyResult, WireEvent, WireEventNotification, WireFunctionCall, WireHandler,
    WireInitializeRequest, WireInitializeResult, WirePromptRequest, WirePromptResult, WirePromptResultStatus, WireReplayRequest, WireReplayResult, WireServerInfo, WireSetPlanModeRequest,
    WireSetPlanModeResult, WireStepBeginEvent, WireStepBeginPayload, WireSteerRequest, WireSteerResult, WireTextPart, WireThinkPart, WireToolCallEvent, WireToolCallPayload, WireToolResultEvent,
    WireToolResultPayload, WireToolReturnValue, WireTurnBeginEvent, WireTurnBeginPayload, WireTurnEndEvent, WireTurnEndPayload, WireUserInput,
};

/// The agent's dialogs, asked of the wire host as questions when it answers them.
#[derive(Debug, Clone)]
pub struct WireDialogs {
    conn: Arc<Connection>,
    supports_question: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
}

impl WireDialogs {
    /// Dialogs for the host on `conn`.
    pub fn new(conn: Arc<Connection>) -> Self {
        Self { conn, supports_question: Arc::default(), next: Arc::default() }
    }
}

impl RpcHostHandler for WireDialogs {
    fn dialog(&self, dialog: RpcDialog) -> BoxFuture<'_, DialogAnswer> {
        async move {
            if !self.supports_question.load(Ordering::SeqCst) {
                tracing::warn!("the agent opened a `{}` dialog ({}); the wire host does not answer questions (capabilities.supports_question), so it is dismissed", dialog.method, dialog.title);
                return DialogAnswer::Cancelled;
            }
            let (question, options, body) = match dialog.method.as_str() {
                "select" => (dialog.title.clone(), dialog.options.clone(), String::new()),
                "confirm" => (format!("{}: {}", dialog.title, dialog.message.clone().unwrap_or_default()), vec!["Yes".to_owned(), "No".to_owned()], String::new()),
                _ => (dialog.title.clone(), Vec::new(), dialog.prefill.clone().or_else(|| dialog.placeholder.clone()).unwrap_or_default()),
            };
            let wire = dialog_question(question.clone(), &options, body);
            let id = format!("bridge-question-{}", self.next.fetch_add(1, Ordering::Relaxed));
            let payload = WireQuestionRequestPayload { id: id.clone(), tool_call_id: format!("dialog-{}", dialog.id), questions: vec![wire] };
            let request = WireAgentRequest::new(nonempty(&id), WireQuestionRequest::new(payload).into());
            let answer = match self.conn.peer().send(Value::String(id), &request).await.wait(None, None).await {
                Reply::Answered(Ok(result)) => serde_json::from_value::<WireQuestionResult>(result).ok().and_then(|r| r.answers.get(&question).cloned()),
                Reply::Answered(Err(_)) | Reply::TimedOut | Reply::Abandoned | Reply::InputEnded => None,
            };
            match (answer, dialog.method.as_str()) {
                (None, _) => DialogAnswer::Cancelled,
                (Some(a), "confirm") => DialogAnswer::Confirmed(a == "Yes"),
                (Some(a), _) => DialogAnswer::Value(a),
            }
        }
        .boxed()
    }
}

#[derive(Debug, Default)]
struct Turn {
    /// The running prompt's end (`agent_end`).
    done: Option<oneshot::Sender<()>>,
    /// `cancel` came while it ran.
    cancelled: bool,
    /// Steps begun in this turn.
    steps: u32,
}

/// The wire server in front of a JSONL agent.
#[derive(Debug)]
pub struct WireOverRpc {
    conn: Arc<Connection>,
    agent: RpcClient,
    supports_question: Arc<AtomicBool>,
    turn: Mutex<Turn>,
}

fn lock(turn: &Mutex<Turn>) -> std::sync::MutexGuard<'_, Turn> {
    turn.lock().unwrap_or_else(|e| e.into_inner())
}

/// The text of the host's input; images, audio and video have no JSONL counterpart here.
fn input_text(input: &WireUserInput) -> Result<String, Error> {
    match input {
        WireUserInput::String(text) => Ok(text.clone()),
        WireUserInput::Array(parts) => parts
            .iter()
            .map(|part| match part {
                WireContentPart::Text(t) => Ok(t.text.clone()),
                WireContentPart::Think(_) | WireContentPart::ImageUrl(_) | WireContentPart::AudioUrl(_) | WireContentPart::VideoUrl(_) => {
                    Err(Error::new(codes::LLM_NOT_SUPPORTED, "The bridge carries text input only: images, audio, video and thinking parts have no JSONL counterpart here"))
                }
            })
            .collect(),
    }
}

impl WireOverRpc {
    /// The server for the host on `conn`, driving `agent`; `dialogs` must be the handler the
    /// agent's client was connected with (they share what the host declared it answers).
    pub fn new(conn: Arc<Connection>, agent: RpcClient, dialogs: &WireDialogs) -> Self {
        Self { conn, agent, supports_question: dialogs.supports_question.clone(), turn: Mutex::default() }
    }

    async fn event(&self, event: WireEvent) {
        let _ = self.conn.outbox().send(&WireEventNotification::new(event)).await;
    }

    /// Forwards the agent's events to the host until its output ends; then a running prompt
    /// ends with an error (the agent is gone).
    pub async fn pump(&self, mut events: RpcEvents) {
        while let Some(frame) = events.next().await {
            self.forward(&frame).await;
        }
        lock(&self.turn).done.take();
    }

    async fn forward(&self, frame: &RpcAgentFrame) {
        let Some(step) = step(frame) else { return };
        if lock(&self.turn).done.is_none() {
            // Between turns (a run the wire did not start) nothing is said: a wire turn is
            // framed by TurnBegin and TurnEnd.
            return;
        }
        let event: WireEvent = match step {
            Step::TurnStart => {
                let n = {
                    let mut turn = lock(&self.turn);
                    turn.steps += 1;
                    turn.steps
                };
                WireStepBeginEvent::new(WireStepBeginPayload { n: NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN) }).into()
            }
            Step::Text(text) => WireContentPartEvent::new(WireContentPart::Text(WireTextPart::new(text))).into(),
            Step::Thinking(text) => WireContentPartEvent::new(WireContentPart::Think(WireThinkPart::new(text))).into(),
            Step::ToolStart { id, name, args } => {
                let arguments = serde_json::to_string(&args).unwrap_or_default();
                WireToolCallEvent::new(WireToolCallPayload::new(id, WireFunctionCall { name, arguments: Some(arguments) })).into()
            }
            // kimi's wire reports a tool's result once, at its end.
            Step::ToolProgress { .. } => return,
            Step::ToolEnd { id, text, is_error, .. } => {
                let value = WireToolReturnValue { is_error, output: WireUserInput::String(text), message: String::new(), display: Vec::new(), extras: None };
                WireToolResultEvent::new(WireToolResultPayload { tool_call_id: id, return_value: value }).into()
            }
            Step::End => {
                if let Some(done) = lock(&self.turn).done.take() {
                    let _ = done.send(());
                }
                return;
            }
        };
        self.event(event).await;
    }
}

impl WireHandler for WireOverRpc {
    async fn initialize(&self, request: WireInitializeRequest) -> Result<WireInitializeResult, Error> {
        if request.params.external_tools.as_ref().is_some_and(|tools| !tools.is_empty()) {
            return Err(Error::invalid_params("The bridge carries no external tools: the agent behind it speaks the pi/omp JSONL dialect"));
        }
        if request.params.hooks.as_ref().is_some_and(|hooks| !hooks.is_empty()) {
            return Err(Error::invalid_params("The bridge carries no hooks: the agent behind it speaks the pi/omp JSONL dialect"));
        }
        let questions = request.params.capabilities.as_ref().and_then(|c| c.supports_question) == Some(true);
        self.supports_question.store(questions, Ordering::SeqCst);
        Ok(WireInitializeResult {
            protocol_version: WIRE_PROTOCOL_VERSION.into(),
            server: WireServerInfo { name: "agentwire-bridge".into(), version: env!("CARGO_PKG_VERSION").into() },
            slash_commands: Vec::new(),
            external_tools: None,
            hooks: None,
            capabilities: None,
        })
    }

    async fn prompt(&self, request: WirePromptRequest) -> Result<WirePromptResult, Error> {
        let input = request.params.user_input;
        let text = input_text(&input)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut turn = lock(&self.turn);
            if turn.done.is_some() {
                return Err(Error::new(codes::INVALID_STATE, "An agent turn is already in progress"));
            }
            *turn = Turn { done: Some(tx), cancelled: false, steps: 0 };
        }
        self.event(WireTurnBeginEvent::new(WireTurnBeginPayload { user_input: input }).into()).await;
        if let Err(e) = self.agent.request(&PromptCommand::new(text)).await {
            lock(&self.turn).done.take();
            self.event(WireTurnEndEvent::new(WireTurnEndPayload {}).into()).await;
            return Err(Error::internal(format!("agent: {e}")));
        }
        let ended = rx.await.is_ok();
        self.event(WireTurnEndEvent::new(WireTurnEndPayload {}).into()).await;
        let cancelled = std::mem::take(&mut lock(&self.turn).cancelled);
        match (ended, cancelled) {
            (_, true) => Ok(WirePromptResult { status: WirePromptResultStatus::Cancelled, steps: None }),
            (true, false) => Ok(WirePromptResult { status: WirePromptResultStatus::Finished, steps: None }),
            (false, false) => Err(Error::internal("The agent exited before the turn ended")),
        }
    }

    async fn steer(&self, request: WireSteerRequest) -> Result<WireSteerResult, Error> {
        if lock(&self.turn).done.is_none() {
            return Err(Error::new(codes::INVALID_STATE, "No agent turn is in progress"));
        }
        let text = input_text(&request.params.user_input)?;
        self.agent.request(&SteerCommand::new(text)).await.map_err(|e| Error::internal(format!("agent: {e}")))?;
        Ok(WireSteerResult::new())
    }

    async fn replay(&self, _request: WireReplayRequest) -> Result<WireReplayResult, Error> {
        Err(Error::method_not_found("replay is not available: the agent behind this bridge speaks the pi/omp JSONL dialect, which keeps no wire log"))
    }

    async fn cancel(&self, _request: WireCancelRequest) -> Result<WireEmptyResult, Error> {
        {
            let mut turn = lock(&self.turn);
            if turn.done.is_none() {
                return Err(Error::new(codes::INVALID_STATE, "No agent turn is in progress"));
            }
            turn.cancelled = true;
        }
        self.agent.request(&AbortCommand::default()).await.map_err(|e| Error::internal(format!("agent: {e}")))?;
        Ok(WireEmptyResult {})
    }

    async fn set_plan_mode(&self, _request: WireSetPlanModeRequest) -> Result<WireSetPlanModeResult, Error> {
        Err(Error::method_not_found("set_plan_mode is not available: the agent behind this bridge speaks the pi/omp JSONL dialect, which has no plan mode"))
    }
}

impl Service for WireOverRpc {
    type Side = WireSide;

    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn notified(&self, notification: std::convert::Infallible) {
        match notification {}
    }

    fn input_ended(&self) {
        self.agent.close();
    }
}
