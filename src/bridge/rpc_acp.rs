//! The pi/omp JSONL dialect to the host, ACP to the agent (the mirror of [`super::acp_rpc`]).
//!
//! | JSONL (host) | ACP (agent) |
//! |---|---|
//! | (start) | `session/new` with the bridge's working directory: the host's one session |
//! | `prompt` | `session/prompt` (text); answered at once, the run streamed, `prompt_result` at its end |
//! | `abort` | `session/cancel`; answered after the run's `agent_end` and `prompt_result` (`aborted`) |
//! | `new_session` | `session/new` (a running prompt is cancelled first) |
//! | `get_state` | answered by the bridge from what it knows (session id, streaming, message count, thinking level) |
//! | `get_available_thinking_levels` / `set_thinking_level` / `cycle_thinking_level` | the agent's `thought_level` config option (`session/set_config_option`) |
//! | `message_update` `text_delta` / `thinking_delta` | `agent_message_chunk` / `agent_thought_chunk` (text) |
//! | `tool_execution_start` | `tool_call` |
//! | `tool_execution_update` | `tool_call_update` with content, not finished |
//! | `tool_execution_end` | `tool_call_update` `completed` / `failed` |
//! | `message_end`, `turn_end`, `agent_end`, `prompt_result` | the `session/prompt` answer (`end_turn`…, `cancelled` → `aborted`, an error → `error`) |
//! | a `select` dialog (`extension_ui_request`), one option per permission option | `session/request_permission` |
//!
//! Every other command is refused (`unsupported`) naming what ACP lacks; `fs/*` and
//! `terminal/*` are advertised absent in the bridge's `initialize`, so an agent does not ask.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::io::AsyncBufRead;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::client::{AcpClient, AcpUpdates};
use crate::dialect::rpc::decode::{decode_line, Inbound};
use crate::jsonrpc::{Error, Peer, Reply};
use crate::protocol::acp::{
    AcpClientHandler, ContentBlock, NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionConfigId,
    SessionConfigOption, SessionConfigSelectOptions, SessionConfigValueId, SessionId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest, StopReason as AcpStopReason, ToolCallContent, ToolCallStatus,
};
use crate::protocol::envelope::{rpc_failure, rpc_response};
use crate::protocol::{
    nonempty, AgentEndEvent, AgentMessage, AvailableThinkingLevels, ThinkingLevel, ThinkingLevelResult, AgentStartEvent, AgentToolResult, AmeTextDelta, AmeThinkingDelta, AssistantContent, AssistantMessage, CancelledResult,
    ExtensionUiRequest, ExtensionUiResponse, MessageEndEvent, MessageStartEvent, MessageUpdateEvent, PromptError, PromptResultEvent, PromptResultEventStatus, QueueMode, RpcCommand,
    RpcError, SessionState, StopReason, TextContent, TextOrImageContent, ThinkingContent, ToolExecutionEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent,
    TurnEndEvent, TurnStartEvent, UiSelectRequest, Usage, UsageCost, UserContent, UserMessage,
};
use crate::transport::{LineReader, Outbox};

/// The host's dialogs waiting for its `extension_ui_response`, by request id.
type Dialogs = Peer<ExtensionUiResponse>;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The agent's requests to the host: permissions become `select` dialogs.
#[derive(Debug, Clone)]
pub struct RpcDialogs {
    dialogs: Arc<Dialogs>,
    next: Arc<AtomicU64>,
    /// The pump of the agent's updates, once [`RpcOverAcp::start`] started it.
    pump: Arc<OnceLock<mpsc::UnboundedSender<Control>>>,
}

impl RpcDialogs {
    /// Dialogs for the host writing to `out`.
    pub fn new(out: Outbox) -> Self {
        Self { dialogs: Arc::new(Peer::new(out)), next: Arc::default(), pump: Arc::default() }
    }

    /// Waits until the pump has written every update the agent sent before the request being
    /// handled (the serve loop queues a notification before it dispatches a later request).
    /// Without it, a permission asked right after its `tool_call` update (the agent writes
    /// both at once) could reach the host before the `tool_execution_start` it is about.
    async fn caught_up(&self) {
        let Some(pump) = self.pump.get() else { return };
        let (done, caught_up) = oneshot::channel();
        if pump.send(Control::CatchUp(done)).is_ok() {
            let _ = caught_up.await;
        }
    }
}

impl AcpClientHandler for RpcDialogs {
    async fn session_request_permission(&self, request: RequestPermissionRequest) -> Result<RequestPermissionResponse, Error> {
        let cancelled = || Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
        let labels: Vec<String> = request.options.iter().map(|o| o.name.clone()).collect();
        let title = request.tool_call.title.clone().unwrap_or_else(|| format!("Allow tool call {}?", request.tool_call.tool_call_id.0));
        let id = format!("bridge-permission-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let frame = ExtensionUiRequest::from(UiSelectRequest::new(nonempty(&id), title, labels.clone()));
        self.caught_up().await;
        let answer = match self.dialogs.send(Value::String(id), &frame).await.wait(None, None).await {
            Reply::Answered(answer) => answer,
            // The host's input ended (nobody can answer) or the wait was given up: nothing allowed.
            Reply::TimedOut | Reply::Abandoned | Reply::InputEnded => return cancelled(),
        };
        let chosen = answer.value.as_deref().and_then(|v| request.options.iter().find(|o| o.name == v));
        match chosen {
            Some(option) => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Selected { option_id: option.option_id.clone(), meta: None })),
            None => cancelled(),
        }
    }
}

/// What the pump is told besides the agent's updates.
#[derive(Debug)]
enum Control {
    /// A prompt was sent: the run's opening events.
    Start { text: String },
    /// The prompt's answer: the run's closing events.
    End { id: Option<Value>, outcome: Result<AcpStopReason, crate::client::AcpClientError> },
    /// Write every update received so far, then say so ([`RpcDialogs::caught_up`]).
    CatchUp(oneshot::Sender<()>),
}

/// A run in progress.
#[derive(Debug, Default)]
struct Run {
    /// `abort` came while it ran.
    aborted: bool,
    /// `abort`s and `new_session`s waiting for its end.
    waiters: Vec<oneshot::Sender<()>>,
}

#[derive(Debug, Default)]
struct State {
    session: Option<SessionId>,
    /// The session's config options, as the agent last reported them.
    config: Vec<SessionConfigOption>,
    run: Option<Run>,
    /// User and assistant messages of the session.
    messages: u64,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The JSONL server in front of an ACP agent.
#[derive(Debug)]
pub struct RpcOverAcp {
    out: Outbox,
    agent: AcpClient,
    dialogs: Arc<Dialogs>,
    state: Arc<Mutex<State>>,
    control: mpsc::UnboundedSender<Control>,
    cwd: String,
    /// The agent's name (for the assistant messages' `provider`).
    agent_name: String,
}

/// The agent's refusal as a JSONL error.
fn agent_error(e: &crate::client::AcpClientError) -> RpcError {
    RpcError::internal(format!("agent: {e}"))
}

impl RpcOverAcp {
    /// The server for the host on `out`, driving `agent` (initialized); `dialogs` must be the
    /// handler the agent's client was connected with. Opens the host's session
    /// (`session/new` in `cwd`) and starts forwarding `updates`.
    pub async fn start(out: Outbox, agent: AcpClient, updates: AcpUpdates, dialogs: &RpcDialogs, cwd: String) -> Result<Arc<Self>, crate::client::AcpClientError> {
        let session = agent.new_session(&NewSessionRequest::new(cwd.clone(), Vec::new())).await?;
        let agent_name = agent.agent().and_then(|a| a.agent_info).map_or_else(|| "acp".to_owned(), |i| i.name);
        let (control, rx) = mpsc::unbounded_channel();
        let state = Arc::new(Mutex::new(State { session: Some(session.session_id), config: session.config_options.unwrap_or_default(), ..State::default() }));
        let _ = dialogs.pump.set(control.clone());
        let server = Arc::new(Self { out, agent, dialogs: dialogs.dialogs.clone(), state, control, cwd, agent_name });
        tokio::spawn(Pump::new(&server).run(updates, rx));
        Ok(server)
    }

    async fn reply<T: serde::Serialize>(&self, id: Option<Value>, command: &'static str, outcome: Result<Option<T>, RpcError>) {
        let _ = self.out.send(&rpc_response(id, command, outcome)).await;
    }

    async fn fail(&self, id: Option<Value>, command: &str, error: RpcError) {
        let _ = self.out.send(&rpc_failure(id, command, error)).await;
    }

    /// Serves the host's lines until its input ends, then closes the agent's input and waits
    /// for every command read to be answered (a running prompt ends when the agent ends it).
    pub async fn serve<R: AsyncBufRead + Unpin>(self: &Arc<Self>, input: R, max_line_bytes: usize) {
        let mut reader = LineReader::new(input, max_line_bytes);
        let mut handlers = JoinSet::new();
        while let Ok(Some(line)) = reader.next_line().await {
            match decode_line(&line, max_line_bytes) {
                Err(response) => {
                    let _ = self.out.send(&response).await;
                }
                Ok(Inbound::Command { id, command }) => {
                    let me = self.clone();
                    handlers.spawn(async move { me.command(id, command).await });
                }
                Ok(Inbound::UiResponse(response)) => {
                    let id = response.id.to_string();
                    if !self.dialogs.answer(&Value::String(id.clone()), response) {
                        let error = RpcError::not_found(format!("Unknown extension UI request id (never sent, already answered or withdrawn): {id}"));
                        self.fail(Some(Value::String(id)), "extension_ui_response", error).await;
                    }
                }
                Ok(Inbound::HostToolUpdate(update)) => self.no_host_tools(serde_json::to_value(&update.id).ok(), "host_tool_update").await,
                Ok(Inbound::HostToolResult(result)) => self.no_host_tools(serde_json::to_value(&result.id).ok(), "host_tool_result").await,
                Ok(Inbound::Chunk(_)) => {
                    let error = RpcError::unsupported("rpc_chunk framing is not available: the bridge does not offer negotiate_protocol");
                    self.fail(None, "rpc_chunk", error).await;
                }
            }
        }
        // No more requests: dialogs waiting for the host fail closed, what was read is
        // answered, then the agent's input ends (it finishes what it was asked, then exits).
        // The agent's input closes only after the handlers are done: a handler spawned for the
        // last line may not have written its request to the agent yet, and closing first lost
        // it (`prompt` then EOF ended `error`, "the agent closed its output before answering",
        // about 1 run in 3). The supervisor bounds the wait (the answer grace after EOF).
        self.dialogs.close();
        while handlers.join_next().await.is_some() {}
        self.agent.close().await;
    }

    async fn no_host_tools(&self, id: Option<Value>, command: &str) {
        let shown = id.as_ref().map_or_else(String::new, Value::to_string);
        let error = RpcError::not_found(format!("Unknown host tool call id {shown}: the agent behind this bridge speaks ACP, which has no host tools"));
        self.fail(id, command, error).await;
    }

    async fn command(&self, id: Option<Value>, command: RpcCommand) {
        let tag = command.tag();
        // What ACP lacks for each command the bridge cannot carry.
        let lacks = match command {
            RpcCommand::Prompt(prompt) => return self.prompt(id, prompt.message, prompt.images.is_some_and(|i| !i.is_empty())).await,
            RpcCommand::Abort(_) => {
                self.abort().await;
                return self.reply::<()>(id, "abort", Ok(None)).await;
            }
            RpcCommand::NewSession(_) => return self.new_session(id).await,
            RpcCommand::GetState(get) if get.dump_tools == Some(true) || get.system_prompt == Some(true) => {
                "ACP does not show an agent's tools or system prompt to its client (`dumpTools`, `systemPrompt`)"
            }
            RpcCommand::GetState(_) => return self.reply(id, "get_state", Ok(Some(self.state_snapshot()))).await,
            RpcCommand::Steer(_) | RpcCommand::FollowUp(_) | RpcCommand::AbortAndPrompt(_) => "ACP has no message queue (a prompt runs alone; abort, then prompt)",
            RpcCommand::SetModel(_) | RpcCommand::CycleModel(_) | RpcCommand::GetAvailableModels(_) => "the agent behind this bridge speaks ACP v1, which lists no models",
            RpcCommand::SetThinkingLevel(set) => return self.set_thinking_level(id, Some(set.level)).await,
            RpcCommand::CycleThinkingLevel(_) => return self.set_thinking_level(id, None).await,
            RpcCommand::GetAvailableThinkingLevels(_) => {
                let levels = self.thinking().map(|t| t.levels());
                return match levels {
                    Ok(levels) => self.reply(id, tag, Ok(Some(AvailableThinkingLevels { levels }))).await,
                    Err(e) => self.fail(id, tag, e).await,
                };
            }
            RpcCommand::Bash(_) | RpcCommand::AbortBash(_) => "ACP has no host-run shell command",
            RpcCommand::SetHostTools(_) => "ACP has no host tools",
            RpcCommand::GetMessages(_)
            | RpcCommand::GetMessagesPage(_)
            | RpcCommand::GetLastAssistantText(_)
            | RpcCommand::GetBranchMessages(_)
            | RpcCommand::GetForkMessages(_)
            | RpcCommand::GetTree(_)
            | RpcCommand::GetSessionStats(_) => "ACP does not hand the conversation to its client",
            RpcCommand::ListSessions(_) | RpcCommand::SwitchSession(_) | RpcCommand::Branch(_) | RpcCommand::Fork(_) | RpcCommand::Clone(_) | RpcCommand::ExportHtml(_) | RpcCommand::SetSessionName(_) => {
                "the agent behind this bridge speaks ACP, whose sessions have no files, branches or names to set"
            }
            RpcCommand::SetTodos(_)
            | RpcCommand::SetSteeringMode(_)
            | RpcCommand::SetFollowUpMode(_)
            | RpcCommand::SetInterruptMode(_)
            | RpcCommand::Compact(_)
            | RpcCommand::SetAutoCompaction(_)
            | RpcCommand::SetAutoRetry(_)
            | RpcCommand::AbortRetry(_)
            | RpcCommand::GetCommands(_)
            | RpcCommand::GetAvailableCommands(_)
            | RpcCommand::SetEventOptions(_)
            | RpcCommand::NegotiateProtocol(_) => "the agent behind this bridge speaks ACP, which has no such request",
        };
        self.fail(id, tag, RpcError::unsupported(format!("{tag} is not available: {lacks}"))).await;
    }

    /// The agent's thinking-level option (`category: thought_level`), or why there is none.
    fn thinking(&self) -> Result<Thinking, RpcError> {
        let state = lock(&self.state);
        let session = state.session.clone().ok_or_else(|| RpcError::internal("No session: new_session failed"))?;
        state
            .config
            .iter()
            .find_map(|option| match option {
                SessionConfigOption::Variant0 { category: Some(c), id, current_value, options, .. } if c.0 == "thought_level" => {
                    let values = match options {
                        SessionConfigSelectOptions::Ungrouped(list) => list.iter().map(|o| o.value.0.clone()).collect(),
                        SessionConfigSelectOptions::Grouped(groups) => groups.iter().flat_map(|g| g.options.iter().map(|o| o.value.0.clone())).collect(),
                    };
                    Some(Thinking { session: session.clone(), id: id.clone(), current: current_value.0.clone(), values })
                }
                SessionConfigOption::Variant0 { .. } | SessionConfigOption::Variant1 { .. } => None,
            })
            .ok_or_else(|| RpcError::unsupported("thinking levels are not available: the ACP agent offers no `thought_level` config option"))
    }

    /// `set_thinking_level` (`Some`) or `cycle_thinking_level` (`None`) as the agent's
    /// `thought_level` config option.
    async fn set_thinking_level(&self, id: Option<Value>, level: Option<ThinkingLevel>) {
        let command = if level.is_some() { "set_thinking_level" } else { "cycle_thinking_level" };
        let thinking = match self.thinking() {
            Ok(thinking) => thinking,
            Err(e) => return self.fail(id, command, e).await,
        };
        let value = match &level {
            Some(level) => {
                let value = level.to_string();
                if !thinking.values.contains(&value) {
                    let error = RpcError::invalid_params(format!("Thinking level {value} is not offered by the agent (it offers {})", thinking.values.join(", ")));
                    return self.fail(id, command, error).await;
                }
                value
            }
            // Fewer than two levels: nothing to cycle to (`data: null`, as pi).
            None if thinking.levels().len() < 2 => return self.reply::<ThinkingLevelResult>(id, command, Ok(None)).await,
            None => {
                let levels = thinking.levels();
                let at = levels.iter().position(|l| l.to_string() == thinking.current).map_or(0, |i| i + 1);
                levels[at % levels.len()].to_string()
            }
        };
        let request = SetSessionConfigOptionRequest::Variant1 { config_id: thinking.id, meta: None, session_id: thinking.session, value: SessionConfigValueId(value.clone()) };
        match self.agent.set_config_option(&request).await {
            Ok(answer) => {
                lock(&self.state).config = answer.config_options;
                match (level, value.parse::<ThinkingLevel>()) {
                    (Some(_), _) => self.reply::<()>(id, command, Ok(None)).await,
                    (None, Ok(level)) => self.reply(id, command, Ok(Some(ThinkingLevelResult { level }))).await,
                    (None, Err(_)) => self.fail(id, command, RpcError::internal(format!("the agent's thinking level {value} is not one of pi's"))).await,
                }
            }
            Err(e) => self.fail(id, command, agent_error(&e)).await,
        }
    }

    /// `new_session`: a running prompt is aborted, then the agent opens a new session.
    async fn new_session(&self, id: Option<Value>) {
        self.abort().await;
        match self.agent.new_session(&NewSessionRequest::new(self.cwd.clone(), Vec::new())).await {
            Ok(session) => {
                {
                    let mut state = lock(&self.state);
                    state.session = Some(session.session_id);
                    state.config = session.config_options.unwrap_or_default();
                    state.messages = 0;
                }
                self.reply(id, "new_session", Ok(Some(CancelledResult { cancelled: false }))).await;
            }
            Err(e) => self.fail(id, "new_session", agent_error(&e)).await,
        }
    }

    async fn prompt(&self, id: Option<Value>, text: String, images: bool) {
        if images {
            return self.fail(id, "prompt", RpcError::invalid_params("The bridge carries text prompts only: images have no ACP counterpart here")).await;
        }
        let session = {
            let mut state = lock(&self.state);
            match (&state.run, state.session.clone()) {
                (Some(_), _) => Err(RpcError::busy("A prompt is running: ACP has no message queue; wait for its prompt_result or abort it")),
                (None, None) => Err(RpcError::internal("No session: new_session failed")),
                (None, Some(session)) => {
                    state.run = Some(Run::default());
                    Ok(session)
                }
            }
        };
        let session = match session {
            Ok(session) => session,
            Err(e) => return self.fail(id, "prompt", e).await,
        };
        // The prompt is answered at once, before the run's first event (pi's order).
        self.reply::<()>(id.clone(), "prompt", Ok(None)).await;
        let _ = self.control.send(Control::Start { text: text.clone() });
        let block = ContentBlock::Text { annotations: None, meta: None, text };
        let outcome = self.agent.prompt(&PromptRequest::new(vec![block], session)).await.map(|r| r.stop_reason);
        let _ = self.control.send(Control::End { id, outcome });
    }

    /// Cancels the running prompt, if any, and waits for its run to end.
    async fn abort(&self) {
        let (waiter, session) = {
            let mut state = lock(&self.state);
            let session = state.session.clone();
            let Some(run) = state.run.as_mut() else { return };
            run.aborted = true;
            let (tx, rx) = oneshot::channel();
            run.waiters.push(tx);
            (rx, session)
        };
        if let Some(session) = session {
            self.agent.cancel(&session).await;
        }
        let _ = waiter.await;
    }

    fn state_snapshot(&self) -> SessionState {
        let thinking_level = self.thinking().ok().and_then(|t| t.current.parse().ok());
        let state = lock(&self.state);
        SessionState {
            model: None,
            thinking_level,
            is_streaming: state.run.is_some(),
            is_compacting: false,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            interrupt_mode: None,
            session_file: None,
            session_id: nonempty(state.session.as_ref().map_or("", |s| s.0.as_str())),
            session_name: None,
            auto_compaction_enabled: false,
            auto_retry_enabled: None,
            message_count: state.messages,
            pending_message_count: Some(0),
            queued_message_count: Some(0),
            todo_phases: None,
            fast_mode_enabled: None,
            fast_mode_active: None,
            tokens_per_second: None,
            system_prompt: None,
            dump_tools: None,
            context_usage: None,
        }
    }
}

/// The agent's `thought_level` config option.
#[derive(Debug)]
struct Thinking {
    session: SessionId,
    id: SessionConfigId,
    current: String,
    values: Vec<String>,
}

impl Thinking {
    /// The offered values that are pi thinking levels.
    fn levels(&self) -> Vec<ThinkingLevel> {
        self.values.iter().filter_map(|v| v.parse().ok()).collect()
    }
}

/// A tool call the agent reported.
#[derive(Debug)]
struct Call {
    name: String,
    args: Map<String, Value>,
    ended: bool,
}

/// Forwards the agent's updates and the runs' openings and ends to the host, in order (one
/// task writes every event).
struct Pump {
    out: Outbox,
    state: Arc<Mutex<State>>,
    agent_name: String,
    text: String,
    thinking: String,
    calls: HashMap<String, Call>,
    running: bool,
    user: Option<UserMessage>,
}

fn zero_usage() -> Usage {
    Usage { input: 0, output: 0, cache_read: 0, cache_write: 0, total_tokens: 0, reasoning: None, cost: UsageCost { input: 0.0, output: 0.0, cache_read: 0.0, cache_write: 0.0, total: 0.0 } }
}

/// The text of ACP content (text blocks; other blocks are named, not carried).
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::ResourceLink { uri, .. } => uri.clone(),
        ContentBlock::Image { .. } => "[image]".to_owned(),
        ContentBlock::Audio { .. } => "[audio]".to_owned(),
        ContentBlock::Resource { .. } => "[resource]".to_owned(),
    }
}

fn call_text(content: &[ToolCallContent]) -> String {
    content
        .iter()
        .map(|c| match c {
            ToolCallContent::Content { content, .. } => block_text(content),
            ToolCallContent::Diff { path, new_text, .. } => format!("{path}:\n{new_text}"),
            ToolCallContent::Terminal { terminal_id, .. } => format!("[terminal {terminal_id}]"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_result(text: String, raw: Option<Value>) -> AgentToolResult {
    AgentToolResult { content: vec![TextOrImageContent::Text(TextContent::new(text))], details: raw }
}

impl Pump {
    fn new(server: &RpcOverAcp) -> Self {
        Self { out: server.out.clone(), state: server.state.clone(), agent_name: server.agent_name.clone(), text: String::new(), thinking: String::new(), calls: HashMap::new(), running: false, user: None }
    }

    async fn run(mut self, mut updates: AcpUpdates, mut control: mpsc::UnboundedReceiver<Control>) {
        loop {
            tokio::select! {
                // A run's opening goes before its updates; its end after every update that
                // came before the prompt's answer (all of them are queued by then).
                biased;
                message = control.recv() => match message {
                    Some(Control::Start { text }) => self.start(text).await,
                    Some(Control::End { id, outcome }) => {
                        self.catch_up(&mut updates).await;
                        self.end(id, outcome).await;
                    }
                    Some(Control::CatchUp(done)) => {
                        self.catch_up(&mut updates).await;
                        let _ = done.send(());
                    }
                    None => break,
                },
                update = updates.next() => match update {
                    Some(update) => self.update(update).await,
                    // The agent's output ended: the prompt in flight ends with an error via
                    // its `End`, which still comes.
                    None => {
                        while let Some(message) = control.recv().await {
                            match message {
                                Control::Start { text } => self.start(text).await,
                                Control::End { id, outcome } => self.end(id, outcome).await,
                                Control::CatchUp(done) => {
                                    let _ = done.send(());
                                }
                            }
                        }
                        break;
                    }
                },
            }
        }
    }

    /// Writes every update already received.
    async fn catch_up(&mut self, updates: &mut AcpUpdates) {
        while let Some(update) = updates.try_next() {
            self.update(update).await;
        }
    }

    async fn send<T: serde::Serialize>(&self, frame: &T) {
        let _ = self.out.send(frame).await;
    }

    async fn start(&mut self, text: String) {
        self.text.clear();
        self.thinking.clear();
        self.calls.clear();
        self.running = true;
        let user = UserMessage::new(UserContent::String(text), now_ms());
        self.send(&AgentStartEvent::new()).await;
        self.send(&TurnStartEvent::new()).await;
        self.send(&MessageStartEvent::new(AgentMessage::User(user.clone()))).await;
        self.send(&MessageEndEvent::new(AgentMessage::User(user.clone()))).await;
        self.user = Some(user);
        self.send(&MessageStartEvent::new(AgentMessage::Assistant(self.assistant(StopReason::Stop, None)))).await;
    }

    fn assistant(&self, stop: StopReason, error: Option<String>) -> AssistantMessage {
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            content.push(AssistantContent::Thinking(ThinkingContent::new(self.thinking.clone())));
        }
        if !self.text.is_empty() {
            content.push(AssistantContent::Text(TextContent::new(self.text.clone())));
        }
        AssistantMessage::new(content, "acp", self.agent_name.clone(), "acp-agent", zero_usage(), stop, now_ms()).with_error_message(error)
    }

    async fn update(&mut self, notification: SessionNotification) {
        let ours = lock(&self.state).session.as_ref() == Some(&notification.session_id);
        if let (true, SessionUpdate::ConfigOptionUpdate { config_options, .. }) = (ours, &notification.update) {
            lock(&self.state).config.clone_from(config_options);
            return;
        }
        if !ours || !self.running {
            return;
        }
        match notification.update {
            SessionUpdate::AgentMessageChunk { content, .. } => {
                let delta = block_text(&content);
                self.text.push_str(&delta);
                let index = u32::from(!self.thinking.is_empty());
                self.send(&MessageUpdateEvent::new(AmeTextDelta::new(index, delta).into())).await;
            }
            SessionUpdate::AgentThoughtChunk { content, .. } => {
                let delta = block_text(&content);
                self.thinking.push_str(&delta);
                self.send(&MessageUpdateEvent::new(AmeThinkingDelta::new(0, delta).into())).await;
            }
            SessionUpdate::ToolCall { tool_call_id, title, name, raw_input, status, content, .. } => {
                let args = match raw_input {
                    Some(Value::Object(map)) => map,
                    Some(other) => Map::from_iter([("input".to_owned(), other)]),
                    None => Map::new(),
                };
                let name = name.unwrap_or(title);
                let id = tool_call_id.0;
                self.send(&ToolExecutionStartEvent::new(nonempty(&id), name.as_str(), args.clone())).await;
                self.calls.insert(id.clone(), Call { name, args, ended: false });
                if let Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) = status {
                    self.finish_call(&id, call_text(&content), None, status == ToolCallStatus::Failed).await;
                }
            }
            SessionUpdate::ToolCallUpdate { tool_call_id, status, content, raw_input, raw_output, .. } => {
                let id = tool_call_id.0;
                // The arguments may come after the call (agentwire sends them once parsed).
                if let (Some(Value::Object(args)), Some(call)) = (raw_input, self.calls.get_mut(&id)) {
                    call.args = args;
                }
                let text = content.as_deref().map(call_text);
                match status {
                    Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) => {
                        self.finish_call(&id, text.unwrap_or_default(), raw_output, status == ToolCallStatus::Failed).await;
                    }
                    Some(ToolCallStatus::Pending | ToolCallStatus::InProgress) | None => {
                        let Some(text) = text else { return };
                        let Some(call) = self.calls.get(&id) else { return };
                        let frame = ToolExecutionUpdateEvent::new(nonempty(&id), call.name.as_str(), call.args.clone(), tool_result(text, None));
                        self.send(&frame).await;
                    }
                }
            }
            // Nothing of these has a JSONL event a pi host reads (config options are kept above).
            SessionUpdate::ConfigOptionUpdate { .. }
            | SessionUpdate::UserMessageChunk { .. }
            | SessionUpdate::Plan { .. }
            | SessionUpdate::AvailableCommandsUpdate { .. }
            | SessionUpdate::CurrentModeUpdate { .. }
            | SessionUpdate::SessionInfoUpdate { .. }
            | SessionUpdate::UsageUpdate { .. }
            | SessionUpdate::Notice { .. }
            | SessionUpdate::CompactionUpdate { .. }
            | SessionUpdate::CompactionSummaryChunk { .. } => {}
        }
    }

    async fn finish_call(&mut self, id: &str, text: String, raw: Option<Value>, is_error: bool) {
        let name = match self.calls.get_mut(id) {
            Some(call) if !call.ended => {
                call.ended = true;
                call.name.clone()
            }
            // Ended already, or never started: reported once.
            Some(_) | None => return,
        };
        self.send(&ToolExecutionEndEvent::new(nonempty(id), name.as_str(), tool_result(text, raw), is_error)).await;
    }

    async fn end(&mut self, id: Option<Value>, outcome: Result<AcpStopReason, crate::client::AcpClientError>) {
        let aborted = lock(&self.state).run.as_ref().is_some_and(|r| r.aborted);
        let (stop, status, error) = match (&outcome, aborted) {
            (Ok(AcpStopReason::Cancelled), _) | (Ok(_), true) => (StopReason::Aborted, PromptResultEventStatus::Aborted, None),
            (Ok(AcpStopReason::EndTurn), false) => (StopReason::Stop, PromptResultEventStatus::Completed, None),
            (Ok(AcpStopReason::MaxTokens | AcpStopReason::MaxTurnRequests), false) => (StopReason::Length, PromptResultEventStatus::Completed, None),
            (Ok(AcpStopReason::Refusal), false) => (StopReason::Error, PromptResultEventStatus::Error, Some("the agent refused the prompt (stopReason: refusal)".to_owned())),
            (Err(e), _) => (StopReason::Error, PromptResultEventStatus::Error, Some(e.to_string())),
        };
        let assistant = self.assistant(stop, error.clone());
        self.send(&MessageEndEvent::new(AgentMessage::Assistant(assistant.clone()))).await;
        self.send(&TurnEndEvent::new(AgentMessage::Assistant(assistant.clone()), Vec::new())).await;
        let mut messages: Vec<AgentMessage> = self.user.take().map(AgentMessage::User).into_iter().collect();
        messages.push(AgentMessage::Assistant(assistant));
        // The run is over in the state before the host reads so: a `get_state` sent after
        // `prompt_result` sees it (not streaming, its messages counted).
        self.running = false;
        let run = {
            let mut state = lock(&self.state);
            state.messages += 2;
            state.run.take()
        };
        self.send(&AgentEndEvent::new(messages).with_is_terminal(Some(true))).await;
        self.send(&PromptResultEvent::new(status, outcome.is_ok()).with_id(id).with_error(error.map(|message| PromptError { message, http_status: None, retryable: false }))).await;
        for waiter in run.map(|r| r.waiters).unwrap_or_default() {
            let _ = waiter.send(());
        }
    }
}
