//! The agent core: conversation state, the run loop ([`run`]), sessions, models and tools,
//! independent of any dialect. It reports what happens as typed [`events::AgentEvent`]s to an
//! [`events::EventSink`] and asks the host through a typed [`port::HostPort`]; each dialect
//! (`crate::dialect::rpc`, `crate::dialect::wire`) implements both and maps its own requests
//! onto the methods here. Nothing in this module knows a frame, a request id or JSON text.
//!
//! Ordering rules kept here, which every host relies on: a request's events come
//! before its answer (events are queued by the sink before `emit` returns); a run starts only
//! after the request that started it has been answered (the dialect starts the [`Prompt`] it was
//! handed once its answer is queued); a prompt's work ends with exactly one `PromptSettled`,
//! after every retry, compaction and queued message; `abort` returns after the run's last event.
//!
//! Rooms: [`prompting`] (prompts, queues, abort), [`settings`] (models, thinking, modes, tools),
//! [`session_ops`] (new / switch / branch / clone / export / listings), [`user_bash`] (the host's
//! own `bash` command), [`run`] + [`stream`] (the loop), [`approval`], [`compaction`], [`slash`],
//! [`mcp`] (the agent's MCP servers: start, tools, shut down).
//!
//! [`AgentCore`] is the core's interface as the dialects drive it; [`Agent`] implements all of
//! it, and a custom agent implements the run (with [`Runs`] doing the bookkeeping) and takes
//! the defaults, which refuse what it does not implement.

pub mod approval;
mod as_core;
pub mod compaction;
mod mcp;
mod prompting;
mod run;
mod session_ops;
mod settings;
mod slash;
mod user_bash;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::protocol::*;
use crate::providers::config::Catalogue;
use crate::providers::ModelSpec;
use crate::sessions::{Payload, Session};

pub use run::QUESTION_TOOL;
// The core interface the built-in agent implements, under the names this module always had.
pub use crate::core::{
    error, events, port, stream, unsupported, AgentCore, AgentEvent, AgentInfo, ApprovalPolicy, Capabilities, CoreError, CoreResult, EventSink, Host, HostPort, MakeAgent, Prompt,
    PromptId, QueueKind, Reply, RunControl, Runs, StateExtras, StateVersion, Submitted,
};

impl ApprovalPolicy {
    /// The policy a session file recorded (its last [`crate::sessions::APPROVAL_ENTRY`]).
    fn saved(session: &Session) -> Option<Self> {
        session.custom_data(crate::sessions::APPROVAL_ENTRY)?.get("policy")?.as_str().and_then(Self::from_name)
    }

    /// The session file entry recording this policy.
    fn entry(self) -> Payload {
        Payload::Custom { custom_type: crate::sessions::APPROVAL_ENTRY.to_owned(), data: serde_json::json!({"policy": self.name()}) }
    }
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
    /// How long a host tool call waits when its definition sets no `timeoutMs`, and an MCP tool
    /// call for its server.
    pub host_tool_timeout: Duration,
    /// Automatic retry of transient provider errors.
    pub retry: RetryPolicy,
    /// When and how much to compact.
    pub compaction: compaction::CompactionPolicy,
    /// Where new sessions are written (`None`: in memory only, `--no-session`).
    pub session_dir: Option<PathBuf>,
    /// Root of all session directories (for `list_sessions` with scope `all`).
    pub sessions_root: Option<PathBuf>,
    /// Model calls one run may make before it stops (`--max-steps-per-turn`); `None`: no limit.
    pub max_steps_per_turn: Option<u32>,
    /// Largest session file `switch_session` and `list_sessions` read (`--max-session-bytes`).
    pub max_session_bytes: u64,
    /// Thinking level to start with when the session saved none (`--thinking`), clamped to the
    /// model like `set_thinking_level`.
    pub thinking: Option<ThinkingLevel>,
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
    /// The run has reported its end (`RunEnd`) with nothing left queued and is only settling
    /// its prompt: to the host it is over, so a new prompt (or a steer, a follow-up) waits the
    /// moment it takes instead of being refused or queued into work that has ended.
    finishing: bool,
}

/// A retry back-off in progress: cancelling `cancel` ends it; `ended` turns true once
/// `RetryEnd` is emitted.
#[derive(Debug, Clone)]
struct RetryWait {
    cancel: CancellationToken,
    ended: watch::Receiver<bool>,
    /// What lets the run go on after `abort_retry` cancelled the back-off: its answer comes
    /// before the run's last events (`abort` answers after the run, so it needs none).
    resume: Arc<Mutex<Option<crate::core::Start>>>,
}

#[derive(Debug)]
struct State {
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
    /// When tool calls need approval: `config.approval` at first, changed by
    /// [`Agent::set_approval_policy`] (ACP's `session/set_mode`).
    approval: ApprovalPolicy,
    /// Directories besides the working directory whose paths the built-in tools use without
    /// the "outside the working directory" question (ACP's `additionalDirectories`).
    extra_roots: Vec<PathBuf>,
    /// Tools the user approved for the rest of this session ("approve for session"); cleared
    /// whenever another session is adopted, so a new or switched session asks again.
    approved_tools: HashSet<String>,
    steering: VecDeque<Queued>,
    follow_up: VecDeque<Queued>,
    run: Option<RunState>,
    retry: Option<RetryWait>,
    compacting: bool,
    /// The host's running `bash` commands, by a key of their own.
    bash: HashMap<u64, CancellationToken>,
    next_bash: u64,
    current_model: usize,
    /// A session write that failed during the run, for the run to report and stop on.
    write_failure: Option<CoreError>,
    /// [`Agent::shutdown`] was called: the process is ending, so a run or `bash` started from
    /// now on (by a request read just before) starts cancelled and is answered as such.
    shutting_down: bool,
    /// The connected MCP servers (empty until [`Agent::start_mcp`]).
    mcp: Arc<crate::mcp::McpServers>,
    /// [`Agent::close_mcp`] ran: servers still starting are shut down as soon as they are up.
    mcp_closed: bool,
}

pub(crate) struct Inner {
    config: AgentConfig,
    models: Vec<ModelSpec>,
    state: Mutex<State>,
    sink: Arc<dyn EventSink>,
    port: Arc<dyn HostPort>,
    next_prompt: AtomicU64,
    /// Prompts whose outcome someone waits for ([`Prompt::outcome`]), by id.
    settles: Mutex<std::collections::HashMap<PromptId, oneshot::Sender<events::RunOutcome>>>,
    /// Serializes `abort_and_prompt` (see [`Agent::abort_and_prompt`]).
    abort_and_prompt: tokio::sync::Mutex<()>,
    /// Moves every time [`Agent::state`] hands the state out, so every change of it (see
    /// [`Agent::state_version`]).
    state_changes: AtomicU64,
    /// A `TurnStart` was emitted and its `TurnEnd` not yet (a panicking run ends the turn).
    turn_open: std::sync::atomic::AtomicBool,
}

/// The state locked only for reading ([`Agent::state_for_reading`]): no `DerefMut`, so nothing
/// can change it unseen by [`Agent::state_version`].
struct ReadState<'a>(MutexGuard<'a, State>);

impl std::ops::Deref for ReadState<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.0
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
    /// An agent reporting to `sink` and asking `port`, with the models of `catalogue`,
    /// continuing `session` (new or loaded from disk: its messages, name, model and thinking
    /// level are restored).
    pub fn new(config: AgentConfig, catalogue: Catalogue, session: Session, sink: Arc<dyn EventSink>, port: Arc<dyn HostPort>) -> Self {
        let session_name = session.name();
        let (saved_model, saved_level) = session.settings();
        let approval = ApprovalPolicy::saved(&session).unwrap_or(config.approval);
        let current_model = saved_model
            .and_then(|(p, m)| catalogue.models.iter().position(|s| *s.info.provider == p && *s.info.id == m))
            .unwrap_or(catalogue.current);
        let state = State {
            session,
            thinking: saved_level.or_else(|| config.thinking.map(|l| Self::effective_level(&catalogue.models[current_model], l))).unwrap_or(ThinkingLevel::Off),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            interrupt_mode: InterruptMode::Immediate,
            session_name,
            auto_compaction: true,
            auto_retry: true,
            todos: Vec::new(),
            host_tools: Vec::new(),
            approval,
            extra_roots: Vec::new(),
            approved_tools: HashSet::new(),
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            run: None,
            retry: None,
            compacting: false,
            bash: HashMap::new(),
            next_bash: 0,
            current_model,
            write_failure: None,
            shutting_down: false,
            mcp: Arc::default(),
            mcp_closed: false,
        };
        let inner = Inner {
            config,
            models: catalogue.models,
            state: Mutex::new(state),
            sink,
            port,
            next_prompt: AtomicU64::new(1),
            settles: Mutex::new(std::collections::HashMap::new()),
            abort_and_prompt: tokio::sync::Mutex::new(()),
            state_changes: AtomicU64::new(0),
            turn_open: std::sync::atomic::AtomicBool::new(false),
        };
        Self { inner: Arc::new(inner) }
    }

    /// The configuration the agent was started with (the approval policy in force is
    /// [`Agent::approval_policy`]).
    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// When tool calls need the host's approval now.
    pub fn approval_policy(&self) -> ApprovalPolicy {
        self.state().approval
    }

    /// Changes when tool calls need approval, from the next tool call on (a call already
    /// waiting for its answer keeps waiting). Tools approved for the session stay approved.
    /// The policy is part of the session: recorded in its file and restored with it. The
    /// policy holds even when it cannot be saved; the error says so.
    pub fn set_approval_policy(&self, policy: ApprovalPolicy) -> CoreResult<()> {
        let changed = std::mem::replace(&mut self.state().approval, policy) != policy;
        if changed {
            self.record_setting(policy.entry())?;
        }
        Ok(())
    }

    /// Sets the directories besides the working directory that the built-in tools may use
    /// like the working directory itself (the path policy does not ask about them).
    pub fn set_additional_roots(&self, roots: Vec<PathBuf>) {
        self.state().extra_roots = roots;
    }

    /// Writes the session file now, with the settings a file starts with, if it has no entries
    /// yet (a file is otherwise created with the first message): a host that hands out the
    /// session's id at once (ACP's `session/new`) can then always load it.
    pub fn save_session(&self) -> CoreResult<()> {
        let mut st = self.state();
        if st.session.entries().is_empty() {
            self.start_file(&mut st)?;
        }
        Ok(())
    }

    /// The entries a session file starts with: the model, the thinking level, a name given
    /// before the first message and an approval policy other than the configured one.
    fn start_file(&self, st: &mut State) -> CoreResult<()> {
        let spec = &self.inner.models[st.current_model];
        let (provider, model_id) = (spec.info.provider.to_string(), spec.info.id.to_string());
        let level = st.thinking;
        let mut saved = Self::append(st, Payload::ModelChange { provider, model_id });
        saved = saved.and(Self::append(st, Payload::ThinkingLevel(level)));
        // A name given before the first message was acknowledged then; it is saved with the
        // settings the file starts with, not lost because the file did not exist yet.
        if let Some(name) = st.session_name.clone() {
            saved = saved.and(Self::append(st, Payload::Name(name)));
        }
        if st.approval != self.inner.config.approval {
            let entry = st.approval.entry();
            saved = saved.and(Self::append(st, entry));
        }
        saved
    }

    /// Appends a message to the session (and the branch's message list). A new session first
    /// records its model and thinking level. When the file cannot be written the message is
    /// still part of the conversation (and written with the next entry that can be), and the
    /// error, naming the file and the OS reason, goes to the caller, which tells the host.
    pub(crate) fn record(&self, message: AgentMessage) -> CoreResult<()> {
        let mut st = self.state();
        let mut saved = Ok(());
        if st.session.entries().is_empty() {
            saved = self.start_file(&mut st);
        }
        saved.and(Self::append(&mut st, Payload::Message(Box::new(message))))
    }

    /// [`Agent::record`] inside a run: a failure is kept for [`Agent::take_write_failure`], which
    /// the run checks at its next step boundary.
    pub(crate) fn record_for_run(&self, message: AgentMessage) {
        if let Err(e) = self.record(message) {
            self.state().write_failure.get_or_insert(e);
        }
    }

    /// A session write failure of this run, reported to the host as an error notice; the run
    /// then ends with this error, so its prompt fails instead of claiming a saved conversation.
    pub(crate) async fn take_write_failure(&self) -> Option<String> {
        let failure = self.state().write_failure.take()?;
        let message = failure.to_string();
        self.emit(AgentEvent::Notice { level: events::NoticeLevel::Error, message: message.clone() }).await;
        Some(message)
    }

    fn append(st: &mut State, payload: Payload) -> CoreResult<()> {
        st.session.append(payload).map(drop).map_err(|e| CoreError::SessionWrite(e.to_string()))
    }

    /// Records a setting change in a session that already has entries (a new session records
    /// its settings with its first message).
    fn record_setting(&self, payload: Payload) -> CoreResult<()> {
        let mut st = self.state();
        if st.session.entries().is_empty() {
            return Ok(());
        }
        Self::append(&mut st, payload)
    }

    /// Replaces the session (new, loaded, cloned); the run must already be stopped. Approvals
    /// "for the session" belonged to the old one and are forgotten.
    fn adopt_session(&self, session: Session) {
        let mut st = self.state();
        st.session_name = session.name();
        let (model, level) = session.settings();
        if let Some(index) = model.and_then(|(p, m)| self.inner.models.iter().position(|s| *s.info.provider == p && *s.info.id == m)) {
            st.current_model = index;
        }
        if let Some(level) = level {
            st.thinking = level;
        }
        if let Some(policy) = ApprovalPolicy::saved(&session) {
            st.approval = policy;
        }
        st.session = session;
        st.todos.clear();
        st.approved_tools.clear();
    }

    /// The session file, only once it exists: a host must not be told about a file it cannot open.
    fn session_file(st: &State) -> Option<String> {
        st.session.path().filter(|_| st.session.file_exists()).map(|p| p.display().to_string())
    }

    /// The current session's file, when sessions are kept on disk (it may not exist until the
    /// first message is saved).
    pub fn session_path(&self) -> Option<PathBuf> {
        self.state().session.path().map(Path::to_path_buf)
    }

    /// The current session's id.
    pub fn session_id(&self) -> String {
        self.state().session.id().to_owned()
    }

    /// The session's name, when it has one.
    pub fn session_name(&self) -> Option<String> {
        self.state().session_name.clone()
    }

    /// Whether a run (or a slash command) is in progress, retry back-offs included; a run that
    /// has reported its end no longer counts.
    pub fn is_running(&self) -> bool {
        self.state().run.as_ref().is_some_and(|r| !r.finishing)
    }

    /// The process is ending (a signal, `--eof-timeout`, the host gone): abort the run the way
    /// `abort` would (everything it waits on resolves), cancel every running `bash` (SIGTERM,
    /// then SIGKILL, to its process group), and start whatever is asked after this cancelled, so
    /// that every request already read is answered promptly. Returns after the run's last event.
    pub async fn shutdown(&self) {
        self.state().shutting_down = true;
        self.abort_bash();
        self.abort_run().await;
        self.close_mcp().await;
    }

    /// Returns once no run is in progress (queued steering and follow-up messages delivered,
    /// a run they start included). stdin EOF waits for this: what was asked is finished.
    pub async fn settled(&self) {
        loop {
            let running = self.state().run.as_ref().map(|r| r.done.clone());
            match running {
                Some(mut done) => {
                    let _ = done.wait_for(|d| *d).await;
                }
                None => return,
            }
        }
    }

    /// The state, to read or change. Every call counts as a change ([`Agent::state_version`]):
    /// the count moves while the lock is held and before the caller can touch anything, so a
    /// version read under the lock always belongs to the state it was read with.
    fn state(&self) -> MutexGuard<'_, State> {
        let guard = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.state_changes.fetch_add(1, Ordering::AcqRel);
        guard
    }

    /// The state, only to read it: does not count as a change. Only what must not invalidate
    /// the answers cached by version (the snapshot and the version itself) reads it this way.
    fn state_for_reading(&self) -> ReadState<'_> {
        ReadState(self.inner.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Changes whenever anything [`Agent::state_snapshot`] reports may have changed: every
    /// hold of the state (see [`Agent::state`]) and every new listing of an MCP server's tools.
    /// A dialect may keep an answer built from a snapshot for as long as this stays the same.
    pub fn state_version(&self) -> StateVersion {
        let st = self.state_for_reading();
        self.version_of(&st)
    }

    /// The version of the state `st` (read under its lock, so the two belong together).
    fn version_of(&self, st: &State) -> StateVersion {
        StateVersion(self.inner.state_changes.load(Ordering::Acquire).wrapping_add(st.mcp.tools_generation()))
    }

    /// Reports an event; returns once the dialect has queued its frames.
    pub(crate) async fn emit(&self, event: AgentEvent<'_>) {
        match &event {
            AgentEvent::TurnStart => self.inner.turn_open.store(true, Ordering::Relaxed),
            AgentEvent::TurnEnd { .. } => self.inner.turn_open.store(false, Ordering::Relaxed),
            _ => {}
        }
        let settled = if let AgentEvent::PromptSettled { prompt: Some(prompt), outcome, .. } = &event { Some((*prompt, outcome.clone())) } else { None };
        self.inner.sink.emit(event).await;
        // The outcome is delivered once the dialect queued what the settled prompt sends.
        if let Some((prompt, outcome)) = settled {
            if let Some(tx) = self.inner.settles.lock().unwrap_or_else(|e| e.into_inner()).remove(&prompt) {
                let _ = tx.send(outcome);
            }
        }
    }

    /// Whether a turn has started and not yet ended.
    fn turn_open(&self) -> bool {
        self.inner.turn_open.load(Ordering::Relaxed)
    }

    /// Tells the host something outside any run (a `notice` frame in the dialects that have
    /// one; a log line otherwise).
    pub async fn notice(&self, level: events::NoticeLevel, message: String) {
        self.emit(AgentEvent::Notice { level, message }).await;
    }

    pub(crate) fn port(&self) -> &dyn HostPort {
        &*self.inner.port
    }

    /// What the built-in tools work with: the working directory, the run's cancellation, and
    /// the host's file and command access when it offers any.
    pub(crate) fn tool_context(&self, cancel: &CancellationToken) -> crate::tools::ToolContext {
        crate::tools::ToolContext { cwd: self.inner.config.cwd.clone(), cancel: cancel.clone(), host: self.port().tools() }
    }

    /// The selected model.
    pub(crate) fn current(&self) -> ModelSpec {
        let index = self.state().current_model;
        self.inner.models[index.min(self.inner.models.len() - 1)].clone()
    }

    /// Whether `prompt` has not been settled yet (its outcome is still to be delivered).
    fn settle_pending(&self, prompt: PromptId) -> bool {
        self.inner.settles.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&prompt)
    }

    /// A new prompt with its outcome's waiter registered, and what its work waits on: the
    /// dialect's [`Prompt::start`] (or the handle dropped).
    fn new_prompt(&self) -> (Prompt, oneshot::Receiver<()>) {
        let id = PromptId(self.inner.next_prompt.fetch_add(1, Ordering::Relaxed));
        let (tx, settled) = oneshot::channel();
        self.inner.settles.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
        let (start, gate) = crate::core::Start::pair();
        (Prompt::new(id, start, settled), gate)
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

impl Agent {
    /// The built-in slash commands the host can use (without dialogs, those that need none).
    pub fn commands(&self) -> CommandsResult {
        slash::listing(self.port().supports_dialogs())
    }
}
