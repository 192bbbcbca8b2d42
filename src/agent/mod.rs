//! The agent: conversation state, the command handlers (the generated [`RpcHandler`] trait)
//! and the run loop ([`run`]). One agent per process; every frame it emits goes through the
//! transport's [`Outbox`].
//!
//! Ordering rules kept here (see `../shared/protocol-notes.md` §2.15): a command's events come
//! before its response; `prompt`'s response comes before `agent_start` (the run waits on a gate
//! the server opens once the response is queued); `abort` answers after the run's `agent_end`
//! and `prompt_result`.

pub mod compaction;
pub mod host_tools;
mod run;
mod slash;
pub mod stream;
pub mod ui;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::protocol::*;
use crate::providers::config::Catalogue;
use crate::providers::ModelSpec;
use crate::sessions::{self, Payload, Session};
use crate::tools::{self, BUILTIN_TOOLS};
use crate::transport::Outbox;

/// When tool calls need the host's confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Never ask.
    #[default]
    Never,
    /// Ask before bash, write and edit.
    Dangerous,
    /// Ask before every tool call.
    Always,
}

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Working directory for tools and `bash`.
    pub cwd: PathBuf,
    /// Approval policy for tool calls.
    pub approval: ApprovalPolicy,
    /// How long an approval dialog waits before failing closed.
    pub approval_timeout: Duration,
    /// How long a host tool call waits when its definition sets no `timeoutMs`.
    pub host_tool_timeout: Duration,
    /// Automatic retry of transient provider errors.
    pub retry: RetryPolicy,
    /// When and how much to compact.
    pub compaction: compaction::CompactionPolicy,
    /// Where new sessions are written (`None`: in memory only, `--no-session`).
    pub session_dir: Option<PathBuf>,
    /// Root of all session directories (for `list_sessions` with scope `all`).
    pub sessions_root: Option<PathBuf>,
    /// Longest inbound line (advertised in `ready`).
    pub max_line_bytes: usize,
    /// Model calls one run may make before it stops (`--max-steps-per-turn`); `None`: no limit.
    pub max_steps_per_turn: Option<u32>,
}

/// How transient provider errors are retried (the only retry layer: the HTTP client does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_attempts: u32,
    /// Delay before the first retry; doubled each time, with jitter.
    pub base_delay: Duration,
    /// Upper bound of one delay (a longer `Retry-After` is honoured up to this).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 3, base_delay: Duration::from_secs(2), max_delay: Duration::from_secs(60) }
    }
}

pub(crate) use crate::protocol::{nonempty, now_ms};

/// A fresh 16-hex-digit id for sub-protocol requests.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_owned()
}

/// A message waiting in the steering or follow-up queue.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    text: String,
    images: Vec<ImageContent>,
}

#[derive(Debug)]
struct RunState {
    cancel: CancellationToken,
    done: watch::Receiver<bool>,
}

/// A retry back-off in progress: cancelling `cancel` ends it; `ended` turns true once
/// `auto_retry_end` is written.
#[derive(Debug, Clone)]
struct RetryWait {
    cancel: CancellationToken,
    ended: watch::Receiver<bool>,
}

#[derive(Debug)]
struct State {
    /// The messages of the current branch as the model sees them (derived from `session`).
    messages: Vec<AgentMessage>,
    session: Session,
    thinking: ThinkingLevel,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    interrupt_mode: InterruptMode,
    session_name: Option<String>,
    auto_compaction: bool,
    auto_retry: bool,
    todos: Vec<TodoPhase>,
    host_tools: Vec<HostToolDefinition>,
    steering: VecDeque<Queued>,
    follow_up: VecDeque<Queued>,
    run: Option<RunState>,
    retry: Option<RetryWait>,
    compacting: bool,
    bash: Option<CancellationToken>,
    current_model: usize,
}

pub(crate) struct Inner {
    config: AgentConfig,
    out: Outbox,
    models: Vec<ModelSpec>,
    state: Mutex<State>,
    ui: ui::UiService,
    hosts: host_tools::HostToolService,
    gates: Mutex<Vec<oneshot::Sender<()>>>,
}

/// A weak handle to an [`Agent`].
#[derive(Clone)]
pub struct WeakAgent(std::sync::Weak<Inner>);

impl WeakAgent {
    /// The agent, if it is still alive.
    pub fn upgrade(&self) -> Option<Agent> {
        self.0.upgrade().map(|inner| Agent { inner })
    }
}

impl std::fmt::Debug for WeakAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakAgent").finish_non_exhaustive()
    }
}

/// The agent; cheap to clone.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent writing to `out`, with the models of `catalogue`, continuing `session` (new or
    /// loaded from disk: its messages, name, model and thinking level are restored).
    pub fn new(config: AgentConfig, out: Outbox, catalogue: Catalogue, session: Session) -> Self {
        let messages = session.messages();
        let session_name = session.name();
        let (saved_model, saved_level) = session.settings();
        let current_model = saved_model
            .and_then(|(p, m)| catalogue.models.iter().position(|s| *s.info.provider == p && *s.info.id == m))
            .unwrap_or(catalogue.current);
        let state = State {
            messages,
            session,
            thinking: saved_level.unwrap_or(ThinkingLevel::Off),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            interrupt_mode: InterruptMode::Immediate,
            session_name,
            auto_compaction: true,
            auto_retry: true,
            todos: Vec::new(),
            host_tools: Vec::new(),
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            run: None,
            retry: None,
            compacting: false,
            bash: None,
            current_model,
        };
        let hosts = host_tools::HostToolService::new(config.host_tool_timeout);
        let inner = Inner {
            config,
            out,
            models: catalogue.models,
            state: Mutex::new(state),
            ui: ui::UiService::default(),
            hosts,
            gates: Mutex::new(Vec::new()),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Appends a message to the session (and the branch's message list). A new session first
    /// records its model and thinking level. A write error is reported on stderr; the run goes on.
    pub(crate) fn record(&self, message: AgentMessage) {
        let mut st = self.state();
        if st.session.entries().is_empty() {
            let spec = &self.inner.models[st.current_model];
            let (provider, model_id) = (spec.info.provider.to_string(), spec.info.id.to_string());
            let level = st.thinking;
            Self::append(&mut st, Payload::ModelChange { provider, model_id });
            Self::append(&mut st, Payload::ThinkingLevel(level));
        }
        Self::append(&mut st, Payload::Message(Box::new(message.clone())));
        st.messages.push(message);
    }

    fn append(st: &mut State, payload: Payload) {
        if let Err(e) = st.session.append(payload) {
            eprintln!("agentwire: could not write the session file: {e}");
        }
    }

    /// Records a setting change in a session that already has entries (a new session records
    /// its settings with its first message).
    fn record_setting(&self, payload: Payload) {
        let mut st = self.state();
        if !st.session.entries().is_empty() {
            Self::append(&mut st, payload);
        }
    }

    /// Replaces the session (new, loaded, cloned); the run must already be stopped.
    fn adopt_session(&self, session: Session) {
        let mut st = self.state();
        st.messages = session.messages();
        st.session_name = session.name();
        let (model, level) = session.settings();
        if let Some(index) = model.and_then(|(p, m)| self.inner.models.iter().position(|s| *s.info.provider == p && *s.info.id == m)) {
            st.current_model = index;
        }
        if let Some(level) = level {
            st.thinking = level;
        }
        st.session = session;
        st.todos.clear();
    }

    fn session_file(st: &State) -> Option<String> {
        st.session.path().map(|p| p.display().to_string())
    }

    /// The `ready` frame this agent writes first.
    pub fn ready_frame(&self) -> ReadyEvent {
        let approval = match self.inner.config.approval {
            ApprovalPolicy::Never => ReadyCapabilitiesApproval::Never,
            ApprovalPolicy::Dangerous => ReadyCapabilitiesApproval::Dangerous,
            ApprovalPolicy::Always => ReadyCapabilitiesApproval::Always,
        };
        ReadyEvent {
            type_: Default::default(),
            protocol_version: 1,
            supported_protocol_versions: Some(vec![1]),
            max_frame_bytes: self.inner.config.max_line_bytes as u64,
            max_reassembled_frame_bytes: None,
            agent: Some("agentwire".to_owned()),
            agent_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            dialect: Some(ReadyEventDialect::Rpc),
            capabilities: Some(ReadyCapabilities { host_tools: true, extension_ui: true, prompt_result: true, sessions: false, approval: Some(approval) }),
        }
    }

    /// A handle that does not keep the agent alive (so its output closes when the agent goes).
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent(Arc::downgrade(&self.inner))
    }

    /// The current session's file, when sessions are kept on disk.
    pub fn session_path(&self) -> Option<PathBuf> {
        self.state().session.path().map(Path::to_path_buf)
    }

    /// Whether a run is in progress (retry back-offs included).
    pub fn is_running(&self) -> bool {
        self.state().run.is_some()
    }

    /// Opens the gates of runs whose starting command has now been answered.
    pub fn release_gates(&self) {
        for gate in self.inner.gates.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = gate.send(());
        }
    }

    /// An answer to a UI dialog; `false` when no dialog with its id is waiting.
    pub fn ui_response(&self, response: ExtensionUiResponse) -> bool {
        self.inner.ui.answer(response)
    }

    /// Progress of a host tool call; `false` when no call with its id is running.
    pub async fn host_tool_update(&self, frame: HostToolUpdate) -> bool {
        self.inner.hosts.update(frame).await
    }

    /// Result of a host tool call; `false` when no call with its id is running.
    pub fn host_tool_result(&self, frame: HostToolResult) -> bool {
        self.inner.hosts.result(frame)
    }

    /// stdin closed or a signal arrived: abort the run (answering everything it owes) and
    /// cancel a running `bash`.
    pub async fn shutdown(&self) {
        self.release_gates();
        if let Some(bash) = self.state().bash.take() {
            bash.cancel();
        }
        self.abort_run().await;
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn emit<T: serde::Serialize>(&self, frame: &T) {
        // A closed writer means the host is gone; the process is about to end anyway.
        let _ = self.inner.out.send(frame).await;
    }

    fn queue_update_frame(state: &State) -> QueueUpdateEvent {
        QueueUpdateEvent {
            type_: Default::default(),
            steering: state.steering.iter().map(|q| q.text.clone()).collect(),
            follow_up: state.follow_up.iter().map(|q| q.text.clone()).collect(),
        }
    }

    /// Starts a run (or queues into the running one). Returns whether a run was started.
    async fn submit(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>, prompt_id: Option<Value>) -> bool {
        let queued = Queued { text, images };
        let update = {
            let mut st = self.state();
            if st.run.is_some() {
                match queue.unwrap_or(QueueKind::Steer) {
                    QueueKind::Steer => st.steering.push_back(queued),
                    QueueKind::FollowUp => st.follow_up.push_back(queued),
                }
                Some(Self::queue_update_frame(&st))
            } else {
                self.start_run(&mut st, vec![queued], prompt_id);
                None
            }
        };
        match update {
            Some(frame) => {
                self.emit(&frame).await;
                false
            }
            None => true,
        }
    }

    /// Registers and spawns a run; it starts once its command's response is written.
    fn start_run(&self, st: &mut State, first: Vec<Queued>, prompt_id: Option<Value>) {
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        let (gate_tx, gate_rx) = oneshot::channel();
        st.run = Some(RunState { cancel: cancel.clone(), done: done_rx });
        self.inner.gates.lock().unwrap_or_else(|e| e.into_inner()).push(gate_tx);
        let agent = Clone::clone(self);
        tokio::spawn(async move {
            let _ = gate_rx.await;
            run::run(agent, first, prompt_id, cancel, done_tx).await;
        });
    }

    /// Aborts the running run, clears the queues and waits until the run has written its last
    /// frame (`agent_end`, `prompt_result`).
    async fn abort_run(&self) {
        let (run, update) = {
            let mut st = self.state();
            let had_queue = !st.steering.is_empty() || !st.follow_up.is_empty();
            st.steering.clear();
            st.follow_up.clear();
            let run = st.run.as_ref().map(|r| (r.cancel.clone(), r.done.clone()));
            (run, had_queue.then(|| Self::queue_update_frame(&st)))
        };
        if let Some(frame) = update {
            self.emit(&frame).await;
        }
        if let Some((cancel, mut done)) = run {
            cancel.cancel();
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// The selected model.
    pub(crate) fn current(&self) -> ModelSpec {
        let index = self.state().current_model;
        self.inner.models[index.min(self.inner.models.len() - 1)].clone()
    }

    /// `level` clamped to what `spec` supports (`xhigh` only where the model accepts it;
    /// `auto` is `medium`; models without reasoning are always `off`).
    fn effective_level(spec: &ModelSpec, level: ThinkingLevel) -> ThinkingLevel {
        if !spec.info.reasoning {
            return ThinkingLevel::Off;
        }
        match level {
            ThinkingLevel::Xhigh | ThinkingLevel::Max if spec.supports_xhigh => ThinkingLevel::Xhigh,
            ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
            ThinkingLevel::Auto => ThinkingLevel::Medium,
            other => other,
        }
    }

    async fn change_thinking(&self, level: ThinkingLevel) -> ThinkingLevel {
        let level = Self::effective_level(&self.current(), level);
        let changed = {
            let mut st = self.state();
            let changed = st.thinking != level;
            st.thinking = level;
            changed
        };
        if changed {
            self.record_setting(Payload::ThinkingLevel(level));
            let frame = ThinkingLevelChangedEvent { type_: Default::default(), level: Some(level), thinking_level: None, configured: None, resolved: None };
            self.emit(&frame).await;
        }
        level
    }

    /// Thinking levels of a model, in cycling order.
    fn levels(spec: &ModelSpec) -> Vec<ThinkingLevel> {
        if !spec.info.reasoning {
            return vec![ThinkingLevel::Off];
        }
        let mut levels = vec![ThinkingLevel::Off, ThinkingLevel::Minimal, ThinkingLevel::Low, ThinkingLevel::Medium, ThinkingLevel::High];
        if spec.supports_xhigh {
            levels.push(ThinkingLevel::Xhigh);
        }
        levels
    }

    /// Selects a model; the thinking level is re-clamped (with its change event).
    async fn select_model(&self, index: usize) -> ThinkingLevel {
        let requested = {
            let mut st = self.state();
            st.current_model = index;
            st.thinking
        };
        let spec = &self.inner.models[index];
        self.record_setting(Payload::ModelChange { provider: spec.info.provider.to_string(), model_id: spec.info.id.to_string() });
        self.change_thinking(requested).await
    }


    fn context_usage(st: &State, window: u64) -> ContextUsage {
        let tokens = st.messages.iter().rev().find_map(|m| if let AgentMessage::Assistant(a) = m { Some(a.usage.total_tokens) } else { None });
        ContextUsage { tokens, context_window: window, percent: tokens.map(|t| t as f64 * 100.0 / window.max(1) as f64) }
    }
}

#[derive(Debug, Clone, Copy)]
enum QueueKind {
    Steer,
    FollowUp,
}

fn id_value(id: Option<&RequestId>) -> Option<Value> {
    id.and_then(|id| serde_json::to_value(id).ok())
}

fn images(list: Option<&Vec<ImageContent>>) -> Vec<ImageContent> {
    list.cloned().unwrap_or_default()
}

impl RpcHandler for Agent {
    async fn prompt(&self, cmd: PromptCommand) -> Result<Option<PromptAccepted>, RpcError> {
        let busy = self.state().run.is_some();
        let queue = match (busy, cmd.streaming_behavior) {
            (false, _) => None,
            (true, Some(PromptCommandStreamingBehavior::Steer)) => Some(QueueKind::Steer),
            (true, Some(PromptCommandStreamingBehavior::FollowUp)) => Some(QueueKind::FollowUp),
            (true, None) => {
                return Err(RpcError::busy("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."))
            }
        };
        if queue.is_none() && self.start_slash(&cmd.message, id_value(cmd.id.as_ref())) {
            return Ok(None);
        }
        self.submit(cmd.message, images(cmd.images.as_ref()), queue, id_value(cmd.id.as_ref())).await;
        Ok(None)
    }

    async fn steer(&self, cmd: SteerCommand) -> Result<(), RpcError> {
        self.submit(cmd.message, images(cmd.images.as_ref()), Some(QueueKind::Steer), id_value(cmd.id.as_ref())).await;
        Ok(())
    }

    async fn follow_up(&self, cmd: FollowUpCommand) -> Result<(), RpcError> {
        self.submit(cmd.message, images(cmd.images.as_ref()), Some(QueueKind::FollowUp), id_value(cmd.id.as_ref())).await;
        Ok(())
    }

    async fn abort(&self, _cmd: AbortCommand) -> Result<(), RpcError> {
        self.abort_run().await;
        Ok(())
    }

    async fn abort_and_prompt(&self, cmd: AbortAndPromptCommand) -> Result<(), RpcError> {
        self.abort_run().await;
        self.submit(cmd.message, images(cmd.images.as_ref()), None, id_value(cmd.id.as_ref())).await;
        Ok(())
    }

    async fn new_session(&self, cmd: NewSessionCommand) -> Result<CancelledResult, RpcError> {
        self.abort_run().await;
        let session = Session::create(self.inner.config.session_dir.as_deref(), &self.inner.config.cwd, cmd.parent_session);
        self.adopt_session(session);
        Ok(CancelledResult { cancelled: false })
    }

    async fn get_state(&self, _cmd: GetStateCommand) -> Result<SessionState, RpcError> {
        let st = self.state();
        let queued = (st.steering.len() + st.follow_up.len()) as u64;
        let model = self.inner.models[st.current_model].info.clone();
        let window = model.context_window;
        Ok(SessionState {
            model: Some(model),
            thinking_level: Some(st.thinking),
            is_streaming: st.run.is_some(),
            is_compacting: st.compacting,
            steering_mode: st.steering_mode,
            follow_up_mode: st.follow_up_mode,
            interrupt_mode: Some(st.interrupt_mode),
            session_file: Self::session_file(&st),
            session_id: nonempty(st.session.id()),
            session_name: st.session_name.clone(),
            auto_compaction_enabled: st.auto_compaction,
            auto_retry_enabled: Some(st.auto_retry),
            message_count: st.messages.len() as u64,
            pending_message_count: Some(queued),
            queued_message_count: Some(queued),
            todo_phases: Some(st.todos.clone()),
            fast_mode_enabled: None,
            fast_mode_active: None,
            tokens_per_second: None,
            system_prompt: None,
            dump_tools: None,
            context_usage: Some(Self::context_usage(&st, window)),
        })
    }

    async fn set_todos(&self, cmd: SetTodosCommand) -> Result<TodoPhasesResult, RpcError> {
        self.state().todos.clone_from(&cmd.phases);
        self.emit(&TodoUpdateEvent { type_: Default::default(), todo_phases: cmd.phases.clone() }).await;
        Ok(TodoPhasesResult { todo_phases: cmd.phases })
    }

    async fn set_host_tools(&self, cmd: SetHostToolsCommand) -> Result<HostToolNames, RpcError> {
        let mut names: Vec<String> = Vec::new();
        for (i, tool) in cmd.tools.iter().enumerate() {
            let name = tool.name.to_string();
            if BUILTIN_TOOLS.contains(&name.as_str()) {
                return Err(RpcError::invalid_params(format!("Host tool \"{name}\" conflicts with the built-in tool of that name")));
            }
            if names.contains(&name) {
                return Err(RpcError::invalid_params(format!("Host tool names must be unique: \"{name}\" appears twice")));
            }
            if tool.parameters.get("type").and_then(Value::as_str) != Some("object") {
                return Err(RpcError::invalid_params(format!("Host tool at index {i} (\"{name}\"): parameters must be a JSON Schema with \"type\": \"object\"")));
            }
            if let Err(e) = jsonschema::validator_for(&Value::Object(tool.parameters.clone())) {
                return Err(RpcError::invalid_params(format!("Host tool \"{name}\": parameters is not a valid JSON Schema: {e}")));
            }
            names.push(name);
        }
        self.state().host_tools = cmd.tools;
        Ok(HostToolNames { tool_names: names })
    }

    async fn set_model(&self, cmd: SetModelCommand) -> Result<Model, RpcError> {
        let index = self
            .inner
            .models
            .iter()
            .position(|m| *m.info.provider == *cmd.provider && *m.info.id == *cmd.model_id)
            .ok_or_else(|| RpcError::not_found(format!("Model not found: {}/{}", *cmd.provider, *cmd.model_id)))?;
        self.select_model(index).await;
        Ok(self.inner.models[index].info.clone())
    }

    async fn cycle_model(&self, _cmd: CycleModelCommand) -> Result<Option<CycleModelResult>, RpcError> {
        if self.inner.models.len() < 2 {
            return Ok(None);
        }
        let next = (self.state().current_model + 1) % self.inner.models.len();
        let level = self.select_model(next).await;
        Ok(Some(CycleModelResult { model: self.inner.models[next].info.clone(), thinking_level: Some(level), is_scoped: false }))
    }

    async fn get_available_models(&self, _cmd: GetAvailableModelsCommand) -> Result<AvailableModels, RpcError> {
        Ok(AvailableModels { models: self.inner.models.iter().map(|m| m.info.clone()).collect() })
    }

    async fn set_thinking_level(&self, cmd: SetThinkingLevelCommand) -> Result<(), RpcError> {
        self.change_thinking(cmd.level).await;
        Ok(())
    }

    async fn cycle_thinking_level(&self, _cmd: CycleThinkingLevelCommand) -> Result<Option<ThinkingLevelResult>, RpcError> {
        let spec = self.current();
        if !spec.info.reasoning {
            return Ok(None);
        }
        let order = Self::levels(&spec);
        let current = self.state().thinking;
        let next = order.iter().position(|l| *l == current).map_or(ThinkingLevel::Off, |i| order[(i + 1) % order.len()]);
        let level = self.change_thinking(next).await;
        Ok(Some(ThinkingLevelResult { level }))
    }

    async fn get_available_thinking_levels(&self, _cmd: GetAvailableThinkingLevelsCommand) -> Result<AvailableThinkingLevels, RpcError> {
        Ok(AvailableThinkingLevels { levels: Self::levels(&self.current()) })
    }

    async fn set_steering_mode(&self, cmd: SetSteeringModeCommand) -> Result<(), RpcError> {
        self.state().steering_mode = cmd.mode;
        Ok(())
    }

    async fn set_follow_up_mode(&self, cmd: SetFollowUpModeCommand) -> Result<(), RpcError> {
        self.state().follow_up_mode = cmd.mode;
        Ok(())
    }

    async fn set_interrupt_mode(&self, cmd: SetInterruptModeCommand) -> Result<(), RpcError> {
        self.state().interrupt_mode = cmd.mode;
        Ok(())
    }

    async fn compact(&self, cmd: CompactCommand) -> Result<CompactionResult, RpcError> {
        if self.state().run.is_some() {
            return Err(RpcError::busy("Cannot compact while the agent is running; abort or wait for prompt_result"));
        }
        self.state().compacting = true;
        self.emit(&CompactionStartEvent { type_: Default::default(), reason: CompactionStartEventReason::Manual }).await;
        let outcome = compaction::compact(self, cmd.custom_instructions.as_deref(), &CancellationToken::new()).await;
        self.state().compacting = false;
        let end = CompactionEndEvent {
            type_: Default::default(),
            reason: CompactionEndEventReason::Manual,
            result: outcome.as_ref().ok().cloned(),
            aborted: false,
            will_retry: false,
            error_message: outcome.as_ref().err().cloned(),
        };
        self.emit(&end).await;
        outcome.map_err(|e| if e.starts_with("Already") || e.starts_with("Nothing") { RpcError::new(RpcErrorCode::Conflict, e) } else { RpcError::internal(e) })
    }

    async fn set_auto_compaction(&self, cmd: SetAutoCompactionCommand) -> Result<(), RpcError> {
        self.state().auto_compaction = cmd.enabled;
        Ok(())
    }

    async fn set_auto_retry(&self, cmd: SetAutoRetryCommand) -> Result<(), RpcError> {
        self.state().auto_retry = cmd.enabled;
        Ok(())
    }

    async fn abort_retry(&self, _cmd: AbortRetryCommand) -> Result<(), RpcError> {
        // During a back-off: cancel it and answer once `auto_retry_end` is written (the run then
        // ends with agent_end and an aborted prompt_result). Otherwise nothing to do.
        let wait = self.state().retry.clone();
        if let Some(mut wait) = wait {
            wait.cancel.cancel();
            let _ = wait.ended.wait_for(|e| *e).await;
        }
        Ok(())
    }

    async fn bash(&self, cmd: BashCommand) -> Result<BashResult, RpcError> {
        let cancel = CancellationToken::new();
        {
            let mut st = self.state();
            if st.bash.is_some() {
                return Err(RpcError::busy("A bash command is already running; abort_bash cancels it"));
            }
            st.bash = Some(cancel.clone());
        }
        let timeout = cmd.timeout_ms.map(Duration::from_millis);
        let outcome = tools::shell::run_shell(&cmd.command, &self.inner.config.cwd, timeout, cancel, |_| {}).await;
        self.state().bash = None;
        let o = outcome.map_err(|e| RpcError::internal(format!("could not run the command: {e}")))?;
        let result = BashResult {
            output: o.output.clone(),
            exit_code: o.exit_code,
            cancelled: o.cancelled || o.timed_out,
            truncated: o.truncated,
            full_output_path: o.full_output_path.as_ref().map(|p| p.display().to_string()),
            working_dir: Some(self.inner.config.cwd.display().to_string()),
            total_lines: Some(o.total_lines),
            total_bytes: Some(o.total_bytes),
            output_lines: Some(o.output.lines().count() as u64),
            output_bytes: Some(o.output.len() as u64),
            elided_lines: o.truncated.then(|| o.total_lines.saturating_sub(o.output.lines().count() as u64)),
            elided_bytes: o.truncated.then(|| o.total_bytes.saturating_sub(o.output.len() as u64)),
        };
        let message = AgentMessage::BashExecution(BashExecutionMessage {
            role: Default::default(),
            command: cmd.command.to_string(),
            output: result.output.clone(),
            exit_code: result.exit_code,
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result.full_output_path.clone(),
            exclude_from_context: None,
            timestamp: now_ms(),
            meta: serde_json::Map::new(),
        });
        self.record(message);
        Ok(result)
    }

    async fn abort_bash(&self, _cmd: AbortBashCommand) -> Result<(), RpcError> {
        if let Some(cancel) = self.state().bash.as_ref() {
            cancel.cancel();
        }
        Ok(())
    }

    async fn get_session_stats(&self, _cmd: GetSessionStatsCommand) -> Result<SessionStats, RpcError> {
        let st = self.state();
        let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
        let mut tokens = SessionTokens { input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: None, total: 0 };
        let mut cost = 0.0;
        for m in &st.messages {
            match m {
                AgentMessage::User(_) => user += 1,
                AgentMessage::Assistant(a) => {
                    assistant += 1;
                    calls += a.content.iter().filter(|c| matches!(c, AssistantContent::ToolCall(_))).count() as u64;
                    tokens.input += a.usage.input;
                    tokens.output += a.usage.output;
                    tokens.cache_read += a.usage.cache_read;
                    tokens.cache_write += a.usage.cache_write;
                    tokens.total += a.usage.total_tokens;
                    cost += a.usage.cost.total;
                }
                AgentMessage::ToolResult(_) => results += 1,
                _ => {}
            }
        }
        Ok(SessionStats {
            session_file: Self::session_file(&st),
            session_id: nonempty(st.session.id()),
            user_messages: user,
            assistant_messages: assistant,
            tool_calls: calls,
            tool_results: results,
            total_messages: st.messages.len() as u64,
            tokens,
            cost,
            context_usage: Some(Self::context_usage(&st, self.inner.models[st.current_model].info.context_window)),
            premium_requests: None,
        })
    }

    async fn export_html(&self, cmd: ExportHtmlCommand) -> Result<ExportResult, RpcError> {
        let (html, default_path) = {
            let st = self.state();
            let title = st.session_name.clone().unwrap_or_else(|| format!("agentwire session {}", st.session.id()));
            let default = st.session.path().map(|p| p.with_extension("html"));
            (sessions::html::render(&title, &st.session.branch_messages().into_iter().map(|(_, m)| m).collect::<Vec<_>>()), default)
        };
        let path = match (cmd.output_path, default_path) {
            (Some(p), _) => self.inner.config.cwd.join(p),
            (None, Some(p)) => p,
            (None, None) => return Err(RpcError::invalid_params("This session is in memory only (--no-session): give outputPath")),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| RpcError::internal(format!("could not create {}: {e}", dir.display())))?;
        }
        std::fs::write(&path, html).map_err(|e| RpcError::internal(format!("could not write {}: {e}", path.display())))?;
        let path = path.canonicalize().unwrap_or(path);
        Ok(ExportResult { path: nonempty(&path.display().to_string()) })
    }

    async fn switch_session(&self, cmd: SwitchSessionCommand) -> Result<CancelledResult, RpcError> {
        let path = self.inner.config.cwd.join(cmd.session_path.as_str());
        if !path.exists() {
            return Err(RpcError::not_found(format!("Session file not found: {}", path.display())));
        }
        let (session, warnings) = Session::load(&path).map_err(|e| RpcError::invalid_params(format!("Not a session file: {e}")))?;
        for w in warnings {
            eprintln!("agentwire: {}:{}: {}", path.display(), w.line, w.reason);
        }
        self.abort_run().await;
        self.adopt_session(session);
        Ok(CancelledResult { cancelled: false })
    }

    async fn branch(&self, cmd: BranchCommand) -> Result<BranchResult, RpcError> {
        self.branch_to(&cmd.entry_id, "branching").await
    }

    async fn fork(&self, cmd: ForkCommand) -> Result<BranchResult, RpcError> {
        self.branch_to(&cmd.entry_id, "forking").await
    }

    async fn clone(&self, _cmd: CloneCommand) -> Result<CancelledResult, RpcError> {
        self.abort_run().await;
        let mut copy = self.state().session.clone_into(self.inner.config.session_dir.as_deref());
        copy.write_all_now().map_err(|e| RpcError::internal(format!("could not write the cloned session: {e}")))?;
        self.adopt_session(copy);
        Ok(CancelledResult { cancelled: false })
    }

    async fn get_branch_messages(&self, _cmd: GetBranchMessagesCommand) -> Result<BranchMessages, RpcError> {
        Ok(self.branch_points())
    }

    async fn get_fork_messages(&self, _cmd: GetForkMessagesCommand) -> Result<BranchMessages, RpcError> {
        Ok(self.branch_points())
    }

    async fn get_last_assistant_text(&self, _cmd: GetLastAssistantTextCommand) -> Result<LastAssistantText, RpcError> {
        let st = self.state();
        let text = st.messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => {
                let text: String =
                    a.content.iter().filter_map(|c| if let AssistantContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect();
                let text = text.trim_end().to_owned();
                (!text.is_empty()).then_some(text)
            }
            _ => None,
        });
        Ok(LastAssistantText { text })
    }

    async fn set_session_name(&self, cmd: SetSessionNameCommand) -> Result<(), RpcError> {
        let name = cmd.name.trim().to_owned();
        if name.is_empty() {
            return Err(RpcError::invalid_params("Session name cannot be empty"));
        }
        self.state().session_name = Some(name.clone());
        self.record_setting(Payload::Name(name.clone()));
        self.emit(&SessionInfoChangedEvent { type_: Default::default(), name: Some(name) }).await;
        Ok(())
    }

    async fn get_messages(&self, _cmd: GetMessagesCommand) -> Result<MessagesResult, RpcError> {
        Ok(MessagesResult { messages: self.state().messages.clone() })
    }

    async fn get_messages_page(&self, cmd: GetMessagesPageCommand) -> Result<MessagesPage, RpcError> {
        let st = self.state();
        let start = match cmd.cursor.as_deref() {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| RpcError::invalid_params(format!("Invalid message cursor: {c}")))?,
        };
        let limit = cmd.limit.map_or(100, |l| l as usize).max(1);
        let total = st.messages.len();
        let end = (start + limit).min(total);
        let messages = st.messages.get(start.min(total)..end).map(<[AgentMessage]>::to_vec).unwrap_or_default();
        Ok(MessagesPage { messages, total_messages: total as u64, next_cursor: (end < total).then(|| end.to_string()) })
    }

    async fn get_commands(&self, _cmd: GetCommandsCommand) -> Result<CommandsResult, RpcError> {
        Ok(slash::listing())
    }

    async fn get_available_commands(&self, _cmd: GetAvailableCommandsCommand) -> Result<CommandsResult, RpcError> {
        Ok(slash::listing())
    }

    async fn list_sessions(&self, cmd: ListSessionsCommand) -> Result<SessionList, RpcError> {
        let dirs: Vec<PathBuf> = match (cmd.scope, &self.inner.config.sessions_root) {
            (Some(ListSessionsCommandScope::All), Some(root)) => {
                std::fs::read_dir(root).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()
            }
            _ => self.inner.config.session_dir.iter().cloned().collect(),
        };
        let mut sessions: Vec<SessionListing> = dirs.iter().flat_map(|d| sessions::files_in(d)).filter_map(|p| sessions::listing(&p)).collect();
        sessions.sort_by(|a, b| b.modified.cmp(&a.modified));
        Ok(SessionList { sessions })
    }

    async fn get_tree(&self, _cmd: GetTreeCommand) -> Result<SessionTree, RpcError> {
        Ok(self.state().session.tree())
    }
}

impl Agent {
    async fn branch_to(&self, entry_id: &str, verb: &str) -> Result<BranchResult, RpcError> {
        let valid = self.state().session.branch_messages().iter().any(|(id, m)| id == entry_id && matches!(m, AgentMessage::User(_)));
        if !valid {
            return Err(RpcError::invalid_params(format!("Invalid entry ID for {verb}: {entry_id} is not a user message of this session")));
        }
        self.abort_run().await;
        let mut st = self.state();
        let text = st.session.branch_before(entry_id).unwrap_or_default();
        st.messages = st.session.messages();
        Ok(BranchResult { text, cancelled: false })
    }

    fn branch_points(&self) -> BranchMessages {
        let st = self.state();
        let messages = st
            .session
            .branch_messages()
            .into_iter()
            .filter(|(_, m)| matches!(m, AgentMessage::User(_)))
            .map(|(id, m)| BranchPoint { entry_id: nonempty(&id), text: sessions::message_text(&m) })
            .collect();
        BranchMessages { messages }
    }
}

/// The user message for a queued or prompted text.
fn user_message(q: &Queued, steering: bool) -> AgentMessage {
    let mut content = vec![crate::tools::text_content(q.text.clone())];
    content.extend(q.images.iter().cloned().map(TextOrImageContent::Image));
    AgentMessage::User(UserMessage {
        role: Default::default(),
        content: UserContent::Array(content),
        timestamp: now_ms(),
        attribution: None,
        steering: steering.then_some(true),
    })
}
