//! One agent type for every front the binary serves: the built-in agent, or an agent in any
//! dialect driven by its remote agent (`agentwire bridge`). Each front (rpc, wire, ACP v1 and
//! v2) is generic over the core it serves; serving both through this one type compiles each
//! front once, at the cost of a match per call.

#[cfg(feature = "agent")]
use crate::agent::Agent;
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::core::{AgentCore, ApprovalPolicy, BashOutput, Capabilities, CoreResult, QueueKind, RunControl, Setting, StateExtras, StateVersion, Submitted};
#[cfg(feature = "client")]
use crate::core::{Host, MakeAgent};
use crate::core::messages::{MessagesJson, MessagesPageJson};
#[cfg(feature = "client")]
use crate::dialect::remote::{RemoteAgent, RemoteAgents};
use crate::protocol::*;
use std::path::PathBuf;
use std::time::Duration;

/// The agent behind a front of the `agentwire` binary.
pub enum ServedAgent {
    /// The built-in agent (`agentwire --mode …`).
    #[cfg(feature = "agent")]
    Builtin(Agent),
    /// An agent process driven in its dialect (`agentwire bridge`); boxed, as it is thirty
    /// times the size of the built-in agent's handle.
    #[cfg(feature = "client")]
    Remote(Box<RemoteAgent>),
}

/// `$e` with `$a` bound to whichever agent this is.
macro_rules! each {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            #[cfg(feature = "agent")]
            ServedAgent::Builtin($a) => $e,
            #[cfg(feature = "client")]
            ServedAgent::Remote($a) => {
                let $a: &RemoteAgent = $a;
                $e
            }
        }
    };
}

impl ServedAgent {
    /// Stops the MCP servers the built-in agent started (an agent behind the bridge stops its
    /// own as it exits).
    pub async fn close_mcp(&self) {
        match self {
            #[cfg(feature = "agent")]
            Self::Builtin(a) => a.close_mcp().await,
            #[cfg(feature = "client")]
            Self::Remote(_) => {}
        }
    }
}

/// The agent is its own control, as the built-in agent is: each call goes to the control of
/// the agent inside.
impl RunControl for ServedAgent {
    async fn abort(&self) {
        each!(self, a => RunControl::abort(AgentCore::control(a)).await)
    }

    fn cancel_now(&self) {
        each!(self, a => RunControl::cancel_now(AgentCore::control(a)))
    }

    fn is_running(&self) -> bool {
        each!(self, a => RunControl::is_running(AgentCore::control(a)))
    }

    async fn settled(&self) {
        each!(self, a => RunControl::settled(AgentCore::control(a)).await)
    }

    fn session_id(&self) -> String {
        each!(self, a => RunControl::session_id(AgentCore::control(a)))
    }

    fn messages(&self) -> Option<Vec<AgentMessage>> {
        each!(self, a => RunControl::messages(AgentCore::control(a)))
    }
}

/// Every method goes to the agent inside, its defaults included (the built-in agent overrides
/// most of them).
impl AgentCore for ServedAgent {
    type Control = Self;

    fn control(&self) -> &Self {
        self
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        each!(self, a => AgentCore::prompt(a, text, images, queue).await)
    }

    async fn abort(&self) {
        each!(self, a => AgentCore::abort(a).await)
    }

    fn cancel_now(&self) {
        each!(self, a => AgentCore::cancel_now(a))
    }

    fn is_running(&self) -> bool {
        each!(self, a => AgentCore::is_running(a))
    }

    async fn settled(&self) {
        each!(self, a => AgentCore::settled(a).await)
    }

    fn session_id(&self) -> String {
        each!(self, a => AgentCore::session_id(a))
    }

    fn capabilities(&self) -> Capabilities {
        each!(self, a => AgentCore::capabilities(a))
    }

    async fn shutdown(&self) {
        each!(self, a => AgentCore::shutdown(a).await)
    }

    async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        each!(self, a => AgentCore::steer(a, text, images).await)
    }

    async fn follow_up(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        each!(self, a => AgentCore::follow_up(a, text, images).await)
    }

    async fn abort_and_prompt(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        each!(self, a => AgentCore::abort_and_prompt(a, text, images).await)
    }

    fn check_input(&self, images: &[ImageContent]) -> CoreResult<()> {
        each!(self, a => AgentCore::check_input(a, images))
    }

    fn refuse_as_run(&self, reason: String) -> CoreResult<Submitted> {
        each!(self, a => AgentCore::refuse_as_run(a, reason))
    }

    fn commands(&self) -> CommandsResult {
        each!(self, a => AgentCore::commands(a))
    }

    fn state_version(&self) -> Option<StateVersion> {
        each!(self, a => AgentCore::state_version(a))
    }

    fn versioned_state_snapshot(&self) -> (Option<StateVersion>, SessionState) {
        each!(self, a => AgentCore::versioned_state_snapshot(a))
    }

    fn state_snapshot(&self) -> SessionState {
        each!(self, a => AgentCore::state_snapshot(a))
    }

    fn state_snapshot_with(&self, extras: StateExtras) -> CoreResult<SessionState> {
        each!(self, a => AgentCore::state_snapshot_with(a, extras))
    }

    fn current_model(&self) -> Option<Model> {
        each!(self, a => AgentCore::current_model(a))
    }

    fn available_models(&self) -> Vec<Model> {
        each!(self, a => AgentCore::available_models(a))
    }

    async fn set_model(&self, provider: &str, model_id: &str) -> CoreResult<Model> {
        each!(self, a => AgentCore::set_model(a, provider, model_id).await)
    }

    async fn cycle_model(&self) -> CoreResult<Option<CycleModelResult>> {
        each!(self, a => AgentCore::cycle_model(a).await)
    }

    fn thinking_level(&self) -> Option<ThinkingLevel> {
        each!(self, a => AgentCore::thinking_level(a))
    }

    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        each!(self, a => AgentCore::available_thinking_levels(a))
    }

    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        each!(self, a => AgentCore::set_thinking_level(a, level).await)
    }

    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        each!(self, a => AgentCore::cycle_thinking_level(a).await)
    }

    fn set_steering_mode(&self, mode: QueueMode) -> CoreResult<()> {
        each!(self, a => AgentCore::set_steering_mode(a, mode))
    }

    fn set_follow_up_mode(&self, mode: QueueMode) -> CoreResult<()> {
        each!(self, a => AgentCore::set_follow_up_mode(a, mode))
    }

    fn set_interrupt_mode(&self, mode: InterruptMode) -> CoreResult<()> {
        each!(self, a => AgentCore::set_interrupt_mode(a, mode))
    }

    fn set_auto_compaction(&self, enabled: bool) -> CoreResult<()> {
        each!(self, a => AgentCore::set_auto_compaction(a, enabled))
    }

    fn set_auto_retry(&self, enabled: bool) -> CoreResult<()> {
        each!(self, a => AgentCore::set_auto_retry(a, enabled))
    }

    async fn abort_retry(&self) -> CoreResult<crate::core::Start> {
        each!(self, a => AgentCore::abort_retry(a).await)
    }

    async fn set_todos(&self, phases: Vec<TodoPhase>) -> CoreResult<()> {
        each!(self, a => AgentCore::set_todos(a, phases).await)
    }

    fn set_host_tools(&self, tools: Vec<HostToolDefinition>) -> CoreResult<Vec<String>> {
        each!(self, a => AgentCore::set_host_tools(a, tools))
    }

    fn settings(&self) -> Option<Vec<Setting>> {
        each!(self, a => AgentCore::settings(a))
    }

    async fn set_setting(&self, id: &str, value: &str) -> CoreResult<()> {
        each!(self, a => AgentCore::set_setting(a, id, value).await)
    }

    fn approval_policy(&self) -> Option<ApprovalPolicy> {
        each!(self, a => AgentCore::approval_policy(a))
    }

    fn set_approval_policy(&self, policy: ApprovalPolicy) -> CoreResult<()> {
        each!(self, a => AgentCore::set_approval_policy(a, policy))
    }

    fn set_additional_roots(&self, roots: Vec<PathBuf>) -> CoreResult<()> {
        each!(self, a => AgentCore::set_additional_roots(a, roots))
    }

    async fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> Vec<StartFailure> {
        each!(self, a => AgentCore::start_mcp(a, configs, bound).await)
    }

    async fn compact(&self, custom_instructions: Option<&str>) -> CoreResult<CompactionResult> {
        each!(self, a => AgentCore::compact(a, custom_instructions).await)
    }

    async fn bash(&self, command: &str, timeout: Option<Duration>, output: BashOutput) -> CoreResult<BashResult> {
        each!(self, a => AgentCore::bash(a, command, timeout, output).await)
    }

    fn abort_bash(&self) -> CoreResult<()> {
        each!(self, a => AgentCore::abort_bash(a))
    }

    fn session_name(&self) -> Option<String> {
        each!(self, a => AgentCore::session_name(a))
    }

    fn session_path(&self) -> Option<PathBuf> {
        each!(self, a => AgentCore::session_path(a))
    }

    fn save_session(&self) -> CoreResult<()> {
        each!(self, a => AgentCore::save_session(a))
    }

    async fn new_session(&self, parent: Option<String>) -> CoreResult<()> {
        each!(self, a => AgentCore::new_session(a, parent).await)
    }

    async fn switch_session(&self, path: &str) -> CoreResult<()> {
        each!(self, a => AgentCore::switch_session(a, path).await)
    }

    async fn branch(&self, entry_id: &str, verb: &str) -> CoreResult<String> {
        each!(self, a => AgentCore::branch(a, entry_id, verb).await)
    }

    async fn clone_session(&self) -> CoreResult<()> {
        each!(self, a => AgentCore::clone_session(a).await)
    }

    fn branch_points(&self) -> CoreResult<BranchMessages> {
        each!(self, a => AgentCore::branch_points(a))
    }

    fn last_assistant_text(&self) -> CoreResult<Option<String>> {
        each!(self, a => AgentCore::last_assistant_text(a))
    }

    async fn set_session_name(&self, name: &str) -> CoreResult<()> {
        each!(self, a => AgentCore::set_session_name(a, name).await)
    }

    fn session_stats(&self) -> CoreResult<SessionStats> {
        each!(self, a => AgentCore::session_stats(a))
    }

    async fn export_html(&self, output: Option<&str>) -> CoreResult<PathBuf> {
        each!(self, a => AgentCore::export_html(a, output).await)
    }

    fn messages(&self) -> CoreResult<Vec<AgentMessage>> {
        each!(self, a => AgentCore::messages(a))
    }

    fn messages_json(&self) -> CoreResult<MessagesJson> {
        each!(self, a => AgentCore::messages_json(a))
    }

    fn messages_page(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPage> {
        each!(self, a => AgentCore::messages_page(a, cursor, limit))
    }

    fn messages_page_json(&self, cursor: Option<&str>, limit: Option<u64>) -> CoreResult<MessagesPageJson> {
        each!(self, a => AgentCore::messages_page_json(a, cursor, limit))
    }

    async fn list_sessions(&self, all: bool) -> CoreResult<SessionList> {
        each!(self, a => AgentCore::list_sessions(a, all).await)
    }

    fn tree(&self) -> CoreResult<SessionTree> {
        each!(self, a => AgentCore::tree(a))
    }

    fn entries(&self, since: Option<&str>) -> CoreResult<SessionEntries> {
        each!(self, a => AgentCore::entries(a, since))
    }

    async fn clear_queue(&self) -> CoreResult<ClearedQueue> {
        each!(self, a => AgentCore::clear_queue(a).await)
    }
}

/// The agents behind the bridge, built as [`ServedAgent`]s.
#[cfg(feature = "client")]
pub struct Remotes(pub RemoteAgents);

#[cfg(feature = "client")]
impl MakeAgent for Remotes {
    type Agent = ServedAgent;

    fn make(&self, host: Host) -> CoreResult<ServedAgent> {
        self.0.make(host).map(|a| ServedAgent::Remote(Box::new(a)))
    }

    fn make_in(&self, host: Host, cwd: &std::path::Path) -> CoreResult<ServedAgent> {
        self.0.make_in(host, cwd).map(|a| ServedAgent::Remote(Box::new(a)))
    }

    fn auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        self.0.auth_methods()
    }

    async fn authenticate(&self, method: &str) -> CoreResult<()> {
        self.0.authenticate(method).await
    }

    fn can_logout(&self) -> bool {
        self.0.can_logout()
    }

    async fn logout(&self) -> CoreResult<()> {
        self.0.logout().await
    }
}
