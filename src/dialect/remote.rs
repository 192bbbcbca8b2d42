//! What the remote agents share. A remote agent implements the core
//! ([`crate::core::AgentCore`]) by driving an agent over a connection in one dialect (an agent
//! process, through [`crate::client`]): its events become the core's events through a
//! [`Reply`], its requests (approvals, dialogs, questions) go to the [`Host`] the front gave
//! it. Any front can then serve it: `agentwire bridge` is a front composed with a remote agent.
//!
//! - [`crate::dialect::rpc::remote`]: a pi / oh-my-pi / agentwire JSONL agent;
//! - [`crate::dialect::wire::remote`]: a kimi-cli wire agent;
//! - [`crate::dialect::acp::remote`]: an ACP agent.
//!
//! [`RemoteAgents`] is any of the three: a front serving it is compiled once, whatever the
//! agent behind speaks (served once per remote type, each front was three times the code).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::core::events::RunOutcome;
use crate::core::port::{ApprovalAsk, Decision};
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::core::{AgentCore, Capabilities, CoreResult, EventSink, Host, HostPort, MakeAgent, QueueKind, Reply, Runs, Submitted};
use crate::protocol::{nonempty, CommandsResult, CycleModelResult, ImageContent, Model, PromptError, SlashCommand, SlashCommandSource, ThinkingLevel, ToolCall};

/// How long a cancelled run may take to wind down on the other side before it is ended here
/// (a `bash` the agent runs gets its SIGKILL 2 s after SIGTERM).
pub const WIND_DOWN: Duration = Duration::from_millis(2500);

/// How long the agent's approvals and dialogs wait for the host. The front's own port bounds
/// nothing here: a person at an editor may take minutes.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// The host of the session that speaks for a connection now, and the run in progress there:
/// the agent's requests arrive on the connection, not on a session, and go to whoever prompted
/// last. The host is held weakly: the front owns its hosts, and its output ends only once they
/// are gone.
#[derive(Clone, Default)]
pub struct HostSlot(Arc<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    host: Option<WeakHost>,
    /// Cancelled when the run in progress is cancelled or ends: what it asked the host is
    /// withdrawn.
    run: CancellationToken,
}

type WeakHost = (Weak<dyn EventSink>, Weak<dyn HostPort>);

impl std::fmt::Debug for HostSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSlot").field("set", &self.get().is_some()).finish()
    }
}

impl HostSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `host` speaks for the connection from now on.
    pub fn set(&self, host: &Host) {
        self.slot().host = Some((Arc::downgrade(host.sink()), Arc::downgrade(host.port())));
    }

    /// The host that speaks for the connection, if any session has yet and it is still served.
    pub fn get(&self) -> Option<Host> {
        let slot = self.slot();
        let (sink, port) = slot.host.as_ref()?;
        Some(Host::new(sink.upgrade()?, port.upgrade()?))
    }

    /// A run begins: what the agent asks the host during it is withdrawn once the guard is
    /// cancelled or dropped (the run cancelled, or over).
    pub fn begin_run(&self) -> RunGuard {
        let token = CancellationToken::new();
        self.slot().run = token.clone();
        RunGuard(token)
    }

    /// The token of the run in progress (cancelled when there is none).
    pub fn run_token(&self) -> CancellationToken {
        self.slot().run.clone()
    }
}

/// The run in progress, for [`HostSlot::begin_run`]: cancelled on drop.
#[derive(Debug)]
pub struct RunGuard(CancellationToken);

impl RunGuard {
    /// The run was cancelled: withdraw what it asked.
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// How long a run waits for the answer an earlier, abandoned run still owes before it refuses to
/// start.
pub const OWED_END: Duration = Duration::from_secs(5);

/// The answer to a prompt a run ended here before the agent answered it (its wind-down ran out):
/// owed, and the next run of the session waits for it first, so the agent is not busy and the
/// old prompt's late events are not taken for the new one's.
#[derive(Debug)]
pub struct Owed<T>(Mutex<Option<tokio::task::JoinHandle<T>>>);

impl<T> Default for Owed<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T> Owed<T> {
    /// Waits (at most [`OWED_END`]) for what an earlier run still owes; `false` when it does not
    /// come in time (it stays owed).
    pub async fn settle(&self) -> bool {
        let Some(mut handle) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() else { return true };
        match tokio::time::timeout(OWED_END, &mut handle).await {
            Ok(_) => true,
            Err(_) => {
                *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
                false
            }
        }
    }
}

/// A prompt's answer being awaited by a run: dropped before it came, it is left [`Owed`].
#[derive(Debug)]
pub struct Answer<'a, T> {
    handle: Option<tokio::task::JoinHandle<T>>,
    owed: &'a Owed<T>,
}

impl<'a, T: Send + 'static> Answer<'a, T> {
    /// Sends the prompt (`request`) as a task of its own.
    pub fn spawn(request: impl std::future::Future<Output = T> + Send + 'static, owed: &'a Owed<T>) -> Self {
        Self { handle: Some(tokio::spawn(request)), owed }
    }
}

impl<T> std::future::Future for Answer<'_, T> {
    type Output = Option<T>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
        let Some(handle) = self.handle.as_mut() else { return std::task::Poll::Ready(None) };
        match std::pin::Pin::new(handle).poll(cx) {
            std::task::Poll::Ready(answer) => {
                self.handle = None;
                std::task::Poll::Ready(answer.ok())
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl<T> Drop for Answer<'_, T> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            *self.owed.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        }
    }
}

/// How a request the host made through the bridge ended at a JSON-RPC agent, as the core's
/// error: the agent's own error as it gave it ([`crate::core::CoreError::Refused`]), or why no
/// answer came.
pub fn refused(e: crate::client::CallError) -> crate::core::CoreError {
    use crate::client::CallError;
    match e {
        CallError::Rejected { error, .. } => crate::core::CoreError::Refused(crate::core::Refusal::new(error.code.code(), error.message, error.data)),
        CallError::NotOffered { .. } => crate::core::CoreError::Unsupported(e.to_string()),
        CallError::Closed { .. } | CallError::Data { .. } => crate::core::CoreError::Internal(format!("agent: {e}")),
    }
}

/// A run that failed with `message`.
pub fn failed(message: impl Into<String>) -> RunOutcome {
    RunOutcome::Failed(PromptError { message: message.into(), http_status: None, retryable: false })
}

/// Asks `host` whether the agent's tool call `id` (`name`, `arguments`) may run, showing the
/// file `change` it makes when the agent said; withdrawn (`Abandoned`) when `cancel` fires (the
/// run was cancelled).
pub async fn approve(host: &Host, id: &str, name: &str, arguments: Map<String, Value>, summary: String, change: Option<crate::core::port::FileChange>, cancel: &CancellationToken) -> Decision {
    let call = ToolCall::new(nonempty(id), nonempty(name), arguments);
    host.port().approve(ApprovalAsk { call: &call, summary, change, timeout: ASK_TIMEOUT, cancel }).await
}

/// Whether a decision lets the call run.
pub fn approved(decision: &Decision) -> bool {
    match decision {
        Decision::Approve | Decision::ApproveForSession => true,
        Decision::Reject { .. } | Decision::RejectAndStop | Decision::TimedOut | Decision::Abandoned | Decision::Unanswerable => false,
    }
}

/// A tool call whose arguments stream in parts (the wire's `ToolCallPart`, an ACP `tool_call`
/// whose `rawInput` comes later): reported as started once they are complete.
#[derive(Debug)]
pub struct OpenCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The argument text so far.
    pub arguments: String,
}

impl OpenCall {
    /// Reports the call started, its arguments parsed (text that is no object is kept whole).
    pub async fn start(self, reply: &Reply) {
        let args = match serde_json::from_str::<Value>(&self.arguments) {
            Ok(Value::Object(args)) => args,
            Ok(_) | Err(_) if self.arguments.trim().is_empty() => Map::new(),
            Ok(_) | Err(_) => Map::from_iter([("arguments".to_owned(), Value::String(self.arguments))]),
        };
        reply.tool_started(&self.id, &self.name, args).await;
    }
}

/// A slash command of the agent behind, as the core lists it (the host's dialect names it to
/// the user; typed as a prompt, it reaches the agent as text); `None` for a name the schema
/// does not take (an empty one).
pub fn slash_command(name: &str, description: Option<String>, aliases: Vec<String>) -> Option<SlashCommand> {
    let Ok(name) = name.parse() else {
        tracing::warn!("the agent's slash command `{name}` is not listed: its name does not fit the schema");
        return None;
    };
    Some(SlashCommand {
        name,
        description: description.filter(|d| !d.is_empty()),
        source: Some(SlashCommandSource::Extension),
        aliases: Some(aliases).filter(|a| !a.is_empty()),
        input: None,
        subcommands: None,
        source_info: None,
    })
}

/// The connection to an agent in any dialect: makes its sessions ([`RemoteAgent`]).
#[derive(Debug, Clone)]
pub enum RemoteAgents {
    /// A JSONL agent.
    Rpc(crate::dialect::rpc::remote::RpcAgents),
    /// A kimi-wire agent.
    Wire(crate::dialect::wire::remote::WireAgents),
    /// An ACP v1 agent.
    Acp(crate::dialect::acp::remote::AcpAgents),
    /// An ACP v2 agent.
    AcpV2(crate::dialect::acp_v2::remote::AcpV2Agents),
}

impl RemoteAgents {
    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub async fn close(&self) {
        match self {
            Self::Rpc(a) => a.close(),
            Self::Wire(a) => a.close().await,
            Self::Acp(a) => a.close().await,
            Self::AcpV2(a) => a.close().await,
        }
    }
}

impl MakeAgent for RemoteAgents {
    type Agent = RemoteAgent;

    /// An ACP agent's own methods; an rpc or wire agent has none the host could name.
    fn auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        match self {
            Self::Acp(a) => a.auth_methods(),
            Self::AcpV2(a) => a.auth_methods(),
            Self::Rpc(_) | Self::Wire(_) => Vec::new(),
        }
    }

    async fn authenticate(&self, method: &str) -> CoreResult<()> {
        match self {
            Self::Acp(a) => a.authenticate(method).await,
            Self::AcpV2(a) => a.authenticate(method).await,
            Self::Rpc(_) | Self::Wire(_) => Err(crate::core::unsupported("authenticate")),
        }
    }

    fn can_logout(&self) -> bool {
        match self {
            Self::Acp(a) => a.can_logout(),
            Self::AcpV2(a) => a.can_logout(),
            Self::Rpc(_) | Self::Wire(_) => false,
        }
    }

    async fn logout(&self) -> CoreResult<()> {
        match self {
            Self::Acp(a) => a.logout().await,
            Self::AcpV2(a) => a.logout().await,
            Self::Rpc(_) | Self::Wire(_) => Err(crate::core::unsupported("logout")),
        }
    }

    fn make(&self, host: Host) -> CoreResult<RemoteAgent> {
        Ok(match self {
            Self::Rpc(a) => RemoteAgent::Rpc(a.agent(host)),
            Self::Wire(a) => RemoteAgent::Wire(a.make(host)?),
            Self::Acp(a) => RemoteAgent::Acp(a.agent(host, None)),
            Self::AcpV2(a) => RemoteAgent::AcpV2(a.agent(host, None)),
        })
    }

    fn make_in(&self, host: Host, cwd: &std::path::Path) -> CoreResult<RemoteAgent> {
        match self {
            Self::Acp(a) => Ok(RemoteAgent::Acp(a.agent(host, Some(cwd)))),
            Self::AcpV2(a) => Ok(RemoteAgent::AcpV2(a.agent(host, Some(cwd)))),
            Self::Rpc(_) | Self::Wire(_) => self.make(host),
        }
    }
}

/// One session of an agent in any dialect, as the core.
#[derive(Debug)]
pub enum RemoteAgent {
    /// Of a JSONL agent.
    Rpc(crate::dialect::rpc::remote::RpcRemote),
    /// Of a kimi-wire agent.
    Wire(crate::dialect::wire::remote::WireRemote),
    /// Of an ACP v1 agent.
    Acp(crate::dialect::acp::remote::AcpRemote),
    /// Of an ACP v2 agent.
    AcpV2(crate::dialect::acp_v2::remote::AcpV2Remote),
}

/// `$e` with `$a` bound to whichever remote agent this is.
macro_rules! each {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            RemoteAgent::Rpc($a) => $e,
            RemoteAgent::Wire($a) => $e,
            RemoteAgent::Acp($a) => $e,
            RemoteAgent::AcpV2($a) => $e,
        }
    };
}

impl AgentCore for RemoteAgent {
    type Control = Runs;

    fn control(&self) -> &Runs {
        each!(self, a => a.control())
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        each!(self, a => a.prompt(text, images, queue).await)
    }

    fn capabilities(&self) -> Capabilities {
        each!(self, a => a.capabilities())
    }

    fn commands(&self) -> CommandsResult {
        each!(self, a => a.commands())
    }

    fn session_id(&self) -> String {
        each!(self, a => a.session_id())
    }

    async fn steer(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        each!(self, a => a.steer(text, images).await)
    }

    async fn follow_up(&self, text: String, images: Vec<ImageContent>) -> CoreResult<Submitted> {
        each!(self, a => a.follow_up(text, images).await)
    }

    async fn new_session(&self, parent: Option<String>) -> CoreResult<()> {
        each!(self, a => a.new_session(parent).await)
    }

    async fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> Vec<StartFailure> {
        each!(self, a => a.start_mcp(configs, bound).await)
    }

    fn current_model(&self) -> Option<Model> {
        each!(self, a => a.current_model())
    }

    fn settings(&self) -> Option<Vec<crate::core::Setting>> {
        each!(self, a => a.settings())
    }

    async fn set_setting(&self, id: &str, value: &str) -> CoreResult<()> {
        each!(self, a => a.set_setting(id, value).await)
    }

    fn available_models(&self) -> Vec<Model> {
        each!(self, a => a.available_models())
    }

    async fn set_model(&self, provider: &str, model_id: &str) -> CoreResult<Model> {
        each!(self, a => a.set_model(provider, model_id).await)
    }

    async fn cycle_model(&self) -> CoreResult<Option<CycleModelResult>> {
        each!(self, a => a.cycle_model().await)
    }

    fn thinking_level(&self) -> Option<ThinkingLevel> {
        each!(self, a => a.thinking_level())
    }

    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        each!(self, a => a.available_thinking_levels())
    }

    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        each!(self, a => a.set_thinking_level(level).await)
    }

    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        each!(self, a => a.cycle_thinking_level().await)
    }
}
