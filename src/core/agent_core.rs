//! [`AgentCore`]: the core's interface as the dialects drive it. The rpc, wire and ACP
//! projections (`crate::dialect`) are generic over it, so any implementation is served in all
//! three; the built-in [`Agent`] is one implementation (it implements every method), and a
//! custom agent implements the run (prompt, cancel) and takes the defaults for the rest.
//!
//! The defaults are honest: a command a custom agent did not implement is refused with
//! [`CoreError::Unsupported`] naming it ("this agent does not support `compact`"), and a
//! capability the dialects advertise up front (ACP `initialize`, the rpc `ready` frame and
//! `get_state`) is advertised as absent ([`Capabilities`], `None` models, no modes).
//!
//! Generic rather than object-safe: the dialects' handlers are generic structs already (the
//! generated handler traits use `async fn`), so a generic core costs no boxing per call, and
//! the methods can return `impl Future + Send` (the dialects spawn them) without a boxed future
//! per call in every implementation.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use super::{CoreError, CoreResult, Host, QueueKind, Submitted};
use super::mcp::{McpServerConfig, StartFailure};
use crate::protocol::*;
use super::messages::{MessageJson, MessagesJson, MessagesPageJson};

/// Where a host `bash` command's output goes as it comes (the text since the last call); the
/// agent may run it on any task, so it only queues.
pub type BashOutput = Box<dyn FnMut(&str) + Send>;

/// The refusal of a command this agent does not implement, naming it.
pub fn unsupported(command: &str) -> CoreError {
    CoreError::Unsupported(format!("this agent does not support `{command}`"))
}

/// The name and version the host is told (the rpc `ready` frame's `agent`, wire's `server`,
/// ACP's `agentInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentInfo {
    /// The agent's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl AgentInfo {
    /// An agent called `name`, at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { name: name.into(), version: version.into() }
    }
}

impl Default for AgentInfo {
    /// agentwire's own name and version.
    fn default() -> Self {
        Self::new("agentwire", env!("CARGO_PKG_VERSION"))
    }
}

/// What an agent can do beyond prompting and cancelling, for the dialects that advertise it up
/// front: the rpc `ready` frame's `capabilities`, ACP's `initialize` (`loadSession`, session
/// capabilities, `promptCapabilities.image`, MCP). The default is none of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Sessions kept as files: listed, loaded, resumed, deleted, switched.
    pub sessions: bool,
    /// A stored session can be copied into a new one that goes its own way (the session loaded
    /// from its file, then [`AgentCore::clone_session`]): ACP v2's `session/fork`.
    pub fork: bool,
    /// Any stored session can be named, live or not (loaded from its file, then
    /// [`AgentCore::set_session_name`], saved there): ACP v2's `session/set_title`.
    pub titles: bool,
    /// Prompts may carry images.
    pub images: bool,
    /// The host's tools (rpc `set_host_tools`, wire external tools) are offered to the model.
    pub host_tools: bool,
    /// The agent asks the host through dialogs (rpc `extension_ui_request`).
    pub dialogs: bool,
    /// MCP servers handed over by the host (ACP `mcpServers`) are connected.
    pub mcp: bool,
    /// Directories besides the working directory (ACP `additionalDirectories`).
    pub additional_directories: bool,
    /// Provider keys: ACP `authenticate` and `logout`.
    pub auth: bool,
    /// Tool calls ask for approval under this policy (at start); `None`: the agent has no
    /// approval modes.
    pub approval: Option<ApprovalPolicy>,
}

impl Capabilities {
    /// Nothing beyond prompting and cancelling.
    pub fn none() -> Self {
        Self::default()
    }

    /// The same, with images in prompts accepted or not.
    #[must_use]
    pub fn with_images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }
}

/// A setting an agent names itself: a choice among values (ACP's `select` config option).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Setting {
    /// Its id.
    pub id: String,
    /// Its name, for people.
    pub name: String,
    /// What it sets.
    pub description: Option<String>,
    /// What kind of setting it is (ACP's categories: `model`, `mode`, `thought_level`, …).
    pub category: Option<String>,
    /// The value it has.
    pub current: String,
    /// The values it takes.
    pub values: Vec<SettingValue>,
}

impl Setting {
    /// The setting `id`, called `name`, at `current` among `values`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, current: impl Into<String>, values: Vec<SettingValue>) -> Self {
        Self { id: id.into(), name: name.into(), description: None, category: None, current: current.into(), values }
    }

    /// The same, described.
    #[must_use]
    pub fn with_description(mut self, description: Option<String>) -> Self {
        self.description = description;
        self
    }

    /// The same, of `category`.
    #[must_use]
    pub fn with_category(mut self, category: Option<String>) -> Self {
        self.category = category;
        self
    }
}

/// One value of a [`Setting`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SettingValue {
    /// The value.
    pub value: String,
    /// Its name, for people.
    pub name: String,
    /// What it means.
    pub description: Option<String>,
}

impl SettingValue {
    /// `value`, called `name`, described by `description`.
    pub fn new(value: impl Into<String>, name: impl Into<String>, description: Option<String>) -> Self {
        Self { value: value.into(), name: name.into(), description }
    }
}

/// A way to authenticate that the agent carries out itself once the host names it (ACP's
/// `agent` authentication method): the host only chooses. Authentication comes before any
/// session, so the agents' maker offers it ([`MakeAgent::auth_methods`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthMethod {
    /// Its id, which the host names to authenticate.
    pub id: String,
    /// Its name, for people.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
}

impl AuthMethod {
    /// The method `id`, called `name`.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), description: None }
    }

    /// The same, described.
    #[must_use]
    pub fn with_description(mut self, description: Option<String>) -> Self {
        self.description = description;
        self
    }
}

/// What a state snapshot carries beyond the state itself, on request (rpc `get_state` with
/// `dumpTools` / `systemPrompt`). Both are large (every tool's parameter schema; the whole
/// prompt) and rarely read, so a plain `get_state` leaves them out (omp sends them in every
/// answer, which makes it ~70 KB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateExtras {
    /// The tools the model is offered (`dumpTools`).
    pub tools: bool,
    /// The system prompt the model is sent (`systemPrompt`).
    pub system_prompt: bool,
}

impl StateExtras {
    /// The same, with the offered tools listed or not.
    #[must_use]
    pub fn with_tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// The same, with the system prompt included or not.
    #[must_use]
    pub fn with_system_prompt(mut self, system_prompt: bool) -> Self {
        self.system_prompt = system_prompt;
        self
    }

    /// Whether anything beyond the plain state is asked for.
    pub fn any(self) -> bool {
        self.tools || self.system_prompt
    }
}

/// The control of an agent's runs: cancel, whether one runs, when they settled, and
/// the session they belong to. [`super::Runs`] implements it for an agent answering one prompt
/// at a time; the built-in [`Agent`] for itself.
pub trait RunControl: Send + Sync {
    /// Cancels the run in progress (if any); returns once its last event is out.
    fn abort(&self) -> impl Future<Output = ()> + Send;

    /// Fires the run's cancellation at once, without waiting (ACP's `session/cancel`: what the
    /// run waits on resolves as cancelled before the next request is read); the run then ends
    /// as [`RunControl::abort`] would end it.
    fn cancel_now(&self);

    /// Whether a run is in progress (one that has reported its end no longer counts).
    fn is_running(&self) -> bool;

    /// Returns once no run is in progress (stdin EOF waits for this).
    fn settled(&self) -> impl Future<Output = ()> + Send;

    /// The current session's id.
    fn session_id(&self) -> String;

    /// Every message of the conversation so far, when the runs keep them; `None` (the default)
    /// when they do not.
    fn messages(&self) -> Option<Vec<AgentMessage>> {
        None
    }
}

/// The core's interface: what the dialects call. Implement the required items — the run
/// ([`AgentCore::prompt`]) and its control ([`AgentCore::control`]: a [`super::Runs`] does it
/// for an agent answering one prompt at a time) — and every other method has a default: the
/// run's control delegates to it, and the rest refuses with [`CoreError::Unsupported`] naming
/// the command, or reports the capability absent.
///
/// Ordering the dialects rely on: a run emits its events to the [`super::EventSink`] the agent
/// was built with, starts only once the dialect starts the returned [`super::Prompt`] (it does
/// once the host has been told the prompt was accepted), ends with exactly one
/// `PromptSettled` for that prompt (after its last `RunEnd`), and the [`super::Prompt`]
/// resolves after that event.
pub trait AgentCore: Send + Sync + 'static {
    // --- required: the run

    /// What controls the runs (cancel, whether one runs).
    type Control: RunControl;

    /// The runs' control.
    fn control(&self) -> &Self::Control;

    /// A prompt: starts work when idle ([`Submitted::Started`]: the returned [`super::Prompt`]
    /// starts it and resolves to its outcome; [`Submitted::Handled`] for one consumed without a
    /// run); while a run is in progress it is queued into `queue`, or refused
    /// ([`CoreError::Busy`]) when `queue` is `None`.
    fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> impl Future<Output = CoreResult<Submitted>> + Send;

    // --- the run, with defaults

    /// Cancels the run in progress (if any); returns once its last event is out.
    fn abort(&self) -> impl Future<Output = ()> + Send {
        self.control().abort()
    }

    /// Fires the run's cancellation at once ([`RunControl::cancel_now`]).
    fn cancel_now(&self) {
        self.control().cancel_now();
    }

    /// Whether a run is in progress (one that has reported its end no longer counts).
    fn is_running(&self) -> bool {
        self.control().is_running()
    }

    /// Returns once no run is in progress (stdin EOF waits for this).
    fn settled(&self) -> impl Future<Output = ()> + Send {
        self.control().settled()
    }

    /// The current session's id.
    fn session_id(&self) -> String {
        self.control().session_id()
    }

    /// What the agent can do beyond prompting and cancelling.
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }


    /// The process is ending: cancel everything; returns after the run's last event. The
    /// default aborts the run.
    fn shutdown(&self) -> impl Future<Output = ()> + Send {
        self.abort()
    }

    /// A steering message (queued into the running run, or a run of its own).
    fn steer(&self, text: String, images: Vec<ImageContent>) -> impl Future<Output = CoreResult<Submitted>> + Send {
        let _ = (text, images);
        async { Err(unsupported("steer")) }
    }

    /// A follow-up message (delivered when the run would stop, or a run of its own).
    fn follow_up(&self, text: String, images: Vec<ImageContent>) -> impl Future<Output = CoreResult<Submitted>> + Send {
        let _ = (text, images);
        async { Err(unsupported("follow_up")) }
    }

    /// Aborts the run, then prompts. The default does exactly that with [`AgentCore::abort`]
    /// and [`AgentCore::prompt`].
    fn abort_and_prompt(&self, text: String, images: Vec<ImageContent>) -> impl Future<Output = CoreResult<Submitted>> + Send {
        async move {
            self.abort().await;
            self.prompt(text, images, None).await
        }
    }

    /// Refuses content the agent cannot take. The default refuses images unless
    /// [`Capabilities::images`].
    fn check_input(&self, images: &[ImageContent]) -> CoreResult<()> {
        if images.is_empty() || self.capabilities().images {
            Ok(())
        } else {
            Err(CoreError::Unsupported("this agent does not take images".into()))
        }
    }

    /// Settles a prompt the agent cannot take as a run that failed at once (for hosts that wait
    /// for the run's end rather than the answer). The default refuses the prompt with `reason`.
    fn refuse_as_run(&self, reason: String) -> CoreResult<Submitted> {
        Err(CoreError::Unsupported(reason))
    }

    // --- settings

    /// The slash commands the host can use. Default: none.
    fn commands(&self) -> CommandsResult {
        CommandsResult { commands: Vec::new() }
    }

    /// A mark that moves whenever anything [`AgentCore::state_snapshot`] shows may have
    /// changed. With one, the rpc dialect keeps the encoded `get_state` answer while the mark
    /// stays (a host polling the state pays for a copy); `None` (the default) builds every
    /// answer afresh.
    fn state_version(&self) -> Option<StateVersion> {
        None
    }

    /// The state snapshot with the [`AgentCore::state_version`] read before it was taken (a
    /// change racing with it moves the version past the one returned). Default: no version.
    fn versioned_state_snapshot(&self) -> (Option<StateVersion>, SessionState) {
        (None, self.state_snapshot())
    }

    /// The state snapshot (rpc `get_state`). The default says what it knows (the session id,
    /// whether it runs, the messages when [`AgentCore::messages`] has them) and leaves the
    /// model, the thinking level and the queues' extras out.
    fn state_snapshot(&self) -> SessionState {
        SessionState {
            model: self.current_model(),
            thinking_level: self.thinking_level(),
            is_streaming: self.is_running(),
            is_compacting: false,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            interrupt_mode: None,
            session_file: None,
            session_id: nonempty(&self.session_id()),
            session_name: self.session_name(),
            auto_compaction_enabled: false,
            auto_retry_enabled: None,
            message_count: self.messages().map_or(0, |m| m.len() as u64),
            pending_message_count: None,
            queued_message_count: None,
            todo_phases: None,
            fast_mode_enabled: None,
            fast_mode_active: None,
            tokens_per_second: None,
            system_prompt: None,
            dump_tools: None,
            context_usage: None,
        }
    }

    /// The state snapshot with the `extras` asked for (rpc `get_state` with `dumpTools` /
    /// `systemPrompt`). The default lists neither, so it refuses a request for either (a host
    /// asking for the tools is told this agent does not list them, not shown an empty list).
    fn state_snapshot_with(&self, extras: StateExtras) -> CoreResult<SessionState> {
        if extras.tools {
            return Err(CoreError::Unsupported("this agent does not list the tools it offers the model (`dumpTools`)".into()));
        }
        if extras.system_prompt {
            return Err(CoreError::Unsupported("this agent does not show its system prompt (`systemPrompt`)".into()));
        }
        Ok(self.state_snapshot())
    }

    /// The model in use; `None`: the agent names no model.
    fn current_model(&self) -> Option<Model> {
        None
    }

    /// The models the host may choose from. Default: none.
    fn available_models(&self) -> Vec<Model> {
        Vec::new()
    }

    /// Selects a model.
    fn set_model(&self, provider: &str, model_id: &str) -> impl Future<Output = CoreResult<Model>> + Send {
        let _ = (provider, model_id);
        async { Err(unsupported("set_model")) }
    }

    /// Selects the next model.
    fn cycle_model(&self) -> impl Future<Output = CoreResult<Option<CycleModelResult>>> + Send {
        async { Err(unsupported("cycle_model")) }
    }

    /// The thinking level; `None`: the agent has none.
    fn thinking_level(&self) -> Option<ThinkingLevel> {
        None
    }

    /// The thinking levels the host may choose from. Default: none.
    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        Vec::new()
    }

    /// Sets the thinking level; returns the level in force (clamped to the model).
    fn set_thinking_level(&self, level: ThinkingLevel) -> impl Future<Output = CoreResult<ThinkingLevel>> + Send {
        let _ = level;
        async { Err(unsupported("set_thinking_level")) }
    }

    /// Selects the next thinking level; `None` when the model has none.
    fn cycle_thinking_level(&self) -> impl Future<Output = CoreResult<Option<ThinkingLevel>>> + Send {
        async { Err(unsupported("cycle_thinking_level")) }
    }

    /// How steering messages are delivered.
    fn set_steering_mode(&self, mode: QueueMode) -> CoreResult<()> {
        let _ = mode;
        Err(unsupported("set_steering_mode"))
    }

    /// How follow-up messages are delivered.
    fn set_follow_up_mode(&self, mode: QueueMode) -> CoreResult<()> {
        let _ = mode;
        Err(unsupported("set_follow_up_mode"))
    }

    /// Whether steering skips the turn's remaining tool calls.
    fn set_interrupt_mode(&self, mode: InterruptMode) -> CoreResult<()> {
        let _ = mode;
        Err(unsupported("set_interrupt_mode"))
    }

    /// Automatic compaction on or off.
    fn set_auto_compaction(&self, enabled: bool) -> CoreResult<()> {
        let _ = enabled;
        Err(unsupported("set_auto_compaction"))
    }

    /// Automatic retry of transient provider errors on or off.
    fn set_auto_retry(&self, enabled: bool) -> CoreResult<()> {
        let _ = enabled;
        Err(unsupported("set_auto_retry"))
    }

    /// Cancels a retry back-off in progress; the run goes on to its end once the dialect lets
    /// the returned [`super::Start`] go (after answering).
    fn abort_retry(&self) -> impl Future<Output = CoreResult<super::Start>> + Send {
        async { Err(unsupported("abort_retry")) }
    }

    /// Replaces the todo list.
    fn set_todos(&self, phases: Vec<TodoPhase>) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = phases;
        async { Err(unsupported("set_todos")) }
    }

    /// Replaces the host's tools; returns their names.
    fn set_host_tools(&self, tools: Vec<HostToolDefinition>) -> CoreResult<Vec<String>> {
        let _ = tools;
        Err(unsupported("set_host_tools"))
    }

    /// The agent's settings as it names them itself (an ACP agent's config options, behind the
    /// bridge), passed to the host as they are; `None` (the default): its settings are the
    /// model, thinking level and approval mode above.
    fn settings(&self) -> Option<Vec<Setting>> {
        None
    }

    /// Sets the setting `id` (one of [`AgentCore::settings`]) to `value`.
    fn set_setting(&self, id: &str, value: &str) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = (id, value);
        async { Err(unsupported("set_config_option")) }
    }

    /// When tool calls need approval now; `None`: the agent has no approval modes.
    fn approval_policy(&self) -> Option<ApprovalPolicy> {
        None
    }

    /// Changes when tool calls need approval.
    fn set_approval_policy(&self, policy: ApprovalPolicy) -> CoreResult<()> {
        let _ = policy;
        Err(unsupported("set_approval_policy"))
    }

    /// Directories besides the working directory the tools may use. The default accepts none.
    fn set_additional_roots(&self, roots: Vec<PathBuf>) -> CoreResult<()> {
        if roots.is_empty() {
            Ok(())
        } else {
            Err(unsupported("additionalDirectories"))
        }
    }

    /// Connects MCP servers; returns those that could not start. The default starts none and
    /// says so for each.
    fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> impl Future<Output = Vec<StartFailure>> + Send {
        let _ = bound;
        let failures = configs.iter().map(|c| StartFailure { server: c.name().to_owned(), reason: "this agent does not support MCP servers".into() }).collect();
        async move { failures }
    }

    /// Compacts the conversation.
    fn compact(&self, custom_instructions: Option<&str>) -> impl Future<Output = CoreResult<CompactionResult>> + Send {
        let _ = custom_instructions;
        async { Err(unsupported("compact")) }
    }

    /// Runs the host's own shell command; `output` is given its output as it comes.
    fn bash(&self, command: &str, timeout: Option<Duration>, output: BashOutput) -> impl Future<Output = CoreResult<BashResult>> + Send {
        let _ = (command, timeout, output);
        async { Err(unsupported("bash")) }
    }

    /// Cancels the host's running shell commands.
    fn abort_bash(&self) -> CoreResult<()> {
        Err(unsupported("abort_bash"))
    }

    // --- the session

    /// The session's name, when it has one.
    fn session_name(&self) -> Option<String> {
        None
    }

    /// The session's file, when sessions are kept on disk. Default: none.
    fn session_path(&self) -> Option<PathBuf> {
        None
    }

    /// Writes the session file now if it has none yet (ACP `session/new` hands out an id that
    /// can be loaded). The default keeps no file, so there is nothing to write.
    fn save_session(&self) -> CoreResult<()> {
        Ok(())
    }

    /// Starts a new session; `parent` is recorded in its header.
    fn new_session(&self, parent: Option<String>) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = parent;
        async { Err(unsupported("new_session")) }
    }

    /// Loads another session file.
    fn switch_session(&self, path: &str) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = path;
        async { Err(unsupported("switch_session")) }
    }

    /// Moves the session's leaf to before the user message `entry_id`; returns its text.
    fn branch(&self, entry_id: &str, verb: &str) -> impl Future<Output = CoreResult<String>> + Send {
        let _ = (entry_id, verb);
        async { Err(unsupported("branch")) }
    }

    /// Copies the session into a new one.
    fn clone_session(&self) -> impl Future<Output = CoreResult<()>> + Send {
        async { Err(unsupported("clone")) }
    }

    /// The user messages a branch can start from.
    fn branch_points(&self) -> CoreResult<BranchMessages> {
        Err(unsupported("get_branch_messages"))
    }

    /// The last assistant message's text.
    fn last_assistant_text(&self) -> CoreResult<Option<String>> {
        Err(unsupported("get_last_assistant_text"))
    }

    /// Names the session.
    fn set_session_name(&self, name: &str) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = name;
        async { Err(unsupported("set_session_name")) }
    }

    /// Token and message statistics.
    fn session_stats(&self) -> CoreResult<SessionStats> {
        Err(unsupported("get_session_stats"))
    }

    /// Writes the session as HTML; returns the file.
    fn export_html(&self, output: Option<&str>) -> impl Future<Output = CoreResult<PathBuf>> + Send {
        let _ = output;
        async { Err(unsupported("export_html")) }
    }

    /// The conversation's messages.
    fn messages(&self) -> CoreResult<Vec<AgentMessage>> {
        self.control().messages().ok_or_else(|| unsupported("get_messages"))
    }

    /// The conversation's messages as stored (rpc `get_messages` writes them as they are). The
    /// default serializes [`AgentCore::messages`].
    fn messages_json(&self) -> CoreResult<MessagesJson> {
        self.messages().map(|m| MessagesJson(m.into_iter().map(|m| MessageJson::Typed(std::sync::Arc::new(m))).collect()))
    }

    /// A page of the conversation's messages.
    fn messages_page(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPage> {
        let _ = (cursor, limit);
        Err(unsupported("get_messages_page"))
    }

    /// A page of the conversation's messages as stored.
    fn messages_page_json(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPageJson> {
        let _ = (cursor, limit);
        Err(unsupported("get_messages_page"))
    }

    /// The session files of this working directory (`all`: of every one).
    fn list_sessions(&self, all: bool) -> impl Future<Output = CoreResult<SessionList>> + Send {
        let _ = all;
        async { Err(unsupported("list_sessions")) }
    }

    /// The session's entry tree.
    fn tree(&self) -> CoreResult<SessionTree> {
        Err(unsupported("get_tree"))
    }

    /// The session's entries in append order, strictly after the entry `since` when given
    /// (`NotFound` when no entry has that id).
    fn entries(&self, since: Option<&str>) -> CoreResult<SessionEntries> {
        let _ = since;
        Err(unsupported("get_entries"))
    }

    /// Empties the steering and follow-up queues and returns what they held.
    fn clear_queue(&self) -> impl Future<Output = CoreResult<ClearedQueue>> + Send {
        async { Err(unsupported("clear_queue")) }
    }
}

/// What builds the agents a front serves: once for rpc and wire, once per session for ACP. Any
/// `Fn(Host) -> A` is one; a maker that can refuse (an agent with one session, asked for a
/// second) implements it itself.
pub trait MakeAgent: Send + Sync + 'static {
    /// The agents it builds.
    type Agent: AgentCore;
    /// An agent reporting to `host`, or why there is none.
    fn make(&self, host: Host) -> CoreResult<Self::Agent>;

    /// An agent for a session in `cwd` (ACP's `session/new` names one); by default
    /// [`MakeAgent::make`], which works where the process does.
    fn make_in(&self, host: Host, cwd: &std::path::Path) -> CoreResult<Self::Agent> {
        let _ = cwd;
        self.make(host)
    }

    /// The ways the host may authenticate with the agents built here, offered before any
    /// session exists (ACP's `authMethods`). Default: none.
    fn auth_methods(&self) -> Vec<AuthMethod> {
        Vec::new()
    }

    /// Authenticates with `method` (one of [`MakeAgent::auth_methods`]).
    fn authenticate(&self, method: &str) -> impl Future<Output = CoreResult<()>> + Send {
        let _ = method;
        async { Err(unsupported("authenticate")) }
    }

    /// Whether [`MakeAgent::logout`] is offered. Default: no.
    fn can_logout(&self) -> bool {
        false
    }

    /// Forgets the authentication.
    fn logout(&self) -> impl Future<Output = CoreResult<()>> + Send {
        async { Err(unsupported("logout")) }
    }
}

impl<A: AgentCore, F: Fn(Host) -> A + Send + Sync + 'static> MakeAgent for F {
    type Agent = A;
    fn make(&self, host: Host) -> CoreResult<A> {
        Ok(self(host))
    }
}


/// When tool calls need the host's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Never ask.
    #[default]
    Never,
    /// Ask before bash, write, edit, paths outside the working directory, and MCP tools not
    /// annotated read-only.
    Dangerous,
    /// Ask before every tool call.
    Always,
}

impl ApprovalPolicy {
    /// Every policy, for lookups by name.
    const ALL: [ApprovalPolicy; 3] = [ApprovalPolicy::Never, ApprovalPolicy::Dangerous, ApprovalPolicy::Always];

    /// The policy's name as `--approval` spells it (and the session file records it).
    pub fn name(self) -> &'static str {
        match self {
            ApprovalPolicy::Never => "never",
            ApprovalPolicy::Dangerous => "dangerous",
            ApprovalPolicy::Always => "always",
        }
    }

    /// The policy named `name` ([`ApprovalPolicy::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A mark that moves whenever an agent's state snapshot may have changed: equal versions mean an
/// unchanged snapshot ([`AgentCore::state_version`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateVersion(pub u64);
