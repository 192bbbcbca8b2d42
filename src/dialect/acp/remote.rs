//! An ACP agent (an editor's agent: gemini-cli, opencode, codex-acp, `agentwire --mode acp`)
//! driven as the core: the remote agent of this dialect ([`crate::dialect::remote`]), for either
//! version of the protocol. [`Agents`] (the connection) and [`Remote`] (one front session) are
//! written once; a version's [`RemoteVersion`] is what its wire shapes make its own: its types,
//! how a session opens and closes, the prompt, and the run (v1's ends with the prompt's answer,
//! v2's with the session's `idle` update). v1's is here ([`AcpAgents`], [`AcpRemote`]), v2's in
//! [`crate::dialect::acp_v2::remote`].
//!
//! | core | ACP v1 (agent) |
//! |---|---|
//! | a front's session | `session/new` in the bridge's working directory (each front session its own) |
//! | prompt | `session/prompt` (text and images); its answer ends the run (`end_turn`, `max_tokens` → completed; `max_turn_requests` → step limit; `cancelled`; `refusal` → failed) |
//! | cancel | `session/cancel`; the run ends with the prompt's answer |
//! | new session (rpc `new_session`) | `session/new`: the front's session goes on in a fresh agent session |
//! | thinking level | the agent's `thought_level` config option (`session/set_config_option`) |
//! | settings | the agent's select config options, each as it gave it; a change is its `session/set_config_option` |
//! | text / thinking | `agent_message_chunk` / `agent_thought_chunk` |
//! | tool started, progress, finished | `tool_call` (once its `rawInput` is known) / `tool_call_update` with content / `completed` or `failed` |
//! | approval | `session/request_permission`: the option of the decision's kind (allow once or always, reject) |
//!
//! `fs/*` and `terminal/*` are not offered in `initialize`, so the agent uses its own.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

pub use super::remote_shared::Asked;
use super::remote_shared::{self as shared, Thinking};
use super::router::{Router, Sorted, Streams};
use crate::client::acp::{Client, ClientVersion, Host as ClientHost, V1};
use crate::client::{AcpClient, AcpClientError, CallError, InputCloser};
use crate::core::events::RunOutcome;
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::core::{AgentCore, Capabilities, CoreError, CoreResult, Host, QueueKind, Reply, RunControl, Runs, Setting, SettingValue, Submitted};
use crate::dialect::remote::{failed, refused, slash_command, Answer, Owed, WIND_DOWN};
use crate::jsonrpc::{Request, Service};
use crate::protocol::acp::{
    AuthMethod, AuthMethodId, AuthenticateRequest, ContentBlock, EnvVariable, HttpHeader, LogoutRequest, McpServer, McpServerStdio, NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionConfigOption,
    SessionConfigSelectOptions, SessionConfigValueId, SessionId, SessionUpdate, SetSessionConfigOptionRequest, StopReason, ToolCallContent, ToolCallStatus,
};
use crate::protocol::{CommandsResult, ImageContent, ThinkingLevel};

/// The agent's `initialize` answer in version `V`.
pub type Initialized<V> = <<V as ClientVersion>::Initialize as Request>::Result;
/// The params of `session/prompt` in version `V`.
pub type PromptParams<V> = <<V as ClientVersion>::SessionPrompt as Request>::Params;
/// The router of a version's updates.
pub type VersionRouter<V> = Router<<V as RemoteVersion>::SessionUpdate, <V as RemoteVersion>::Command, <V as RemoteVersion>::ConfigOption>;

/// When a version's agent session opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// At the bridge's start ([`Agents::open_first`], so the first session's config options
    /// are known at once), without MCP servers: the host's servers leave it for a new one that
    /// has them, opened at the next prompt.
    AtStart,
    /// When the host hands its MCP servers (so its config options, the thinking level among
    /// them, are known before the first prompt), else at the first prompt.
    WithServers,
}

/// What one ACP version makes its own in the remote agent: its wire types, how a session opens
/// and closes, the prompt, and how a run goes.
pub trait RemoteVersion: ClientVersion<SessionId: Send + std::fmt::Debug, SessionNew: Request<Params: Send>, SessionPrompt: Request<Params: Send + 'static>, SessionSetConfigOption: Request<Params: Send>> + Sized {
    /// A `session/update`'s update.
    type SessionUpdate: Send + 'static;
    /// A slash command of the agent's.
    type Command: Clone + Send + 'static;
    /// A config option of a session.
    type ConfigOption: Clone + Send + 'static;
    /// An MCP server handed to the agent.
    type McpServer: Clone + Send + 'static;
    /// What a run of a session leaves to the next (one it ended before the agent did).
    type RunState: Default + std::fmt::Debug + Send + Sync + 'static;
    /// `session/request_permission`'s params and result.
    type PermissionRequest;
    type PermissionResponse;
    /// When the agent session opens.
    const OPENING: Opening;
    /// Whether a new session the front asks for reports an id of its own (`<id>-<n>`).
    const RENEWED_ID: bool;

    /// What a notification is, for the router, and the session it names.
    fn sort(notification: Self::Update) -> (String, Sorted<Self::SessionUpdate, Self::Command, Self::ConfigOption>);
    /// A select config option as the core's setting (a boolean one has none).
    fn setting(option: &Self::ConfigOption) -> Option<Setting>;
    /// A server config as the version's MCP server (`None`: the version cannot carry it).
    fn server(config: &McpServerConfig) -> Option<Self::McpServer>;
    /// A session id as the router's key.
    fn key(id: &Self::SessionId) -> &str;
    /// The agent's name, from its `initialize` answer.
    fn agent_name(agent: &Initialized<Self>) -> Option<String>;
    /// Whether the agent takes images in a prompt.
    fn images(agent: &Initialized<Self>) -> bool;
    /// The agent's `agent` auth methods (a `terminal` one is left out: the host would run the
    /// bridge's command line with its arguments, not the agent's login).
    fn auth_methods(agent: Initialized<Self>) -> Vec<crate::core::AuthMethod>;
    /// Whether the agent logs out.
    fn can_logout(agent: Option<Initialized<Self>>) -> bool;
    /// The agent's login with `method`; its error comes back as it gave it.
    fn authenticate(client: &Client<Self>, method: &str) -> impl Future<Output = CoreResult<()>> + Send;
    /// The agent's logout.
    fn logout(client: &Client<Self>) -> impl Future<Output = CoreResult<()>> + Send;
    /// A slash command's name and description.
    fn command(command: Self::Command) -> (String, String);

    /// `session/new` in `cwd` with `servers`.
    fn new_session(cwd: &str, servers: Vec<Self::McpServer>) -> <Self::SessionNew as Request>::Params;
    /// The opened session's id, its slash commands and config options.
    fn opened(answer: <Self::SessionNew as Request>::Result) -> (Self::SessionId, Vec<Self::Command>, Vec<Self::ConfigOption>);
    /// Tells the agent a session it no longer serves a front is done.
    fn close_session(client: &Client<Self>, id: &Self::SessionId) -> impl Future<Output = ()> + Send;
    /// `session/prompt` of `text` and `images` in `session`.
    fn prompt(text: &str, images: &[ImageContent], session: Self::SessionId) -> PromptParams<Self>;
    /// `session/set_config_option` of a select.
    fn set_select(session: Self::SessionId, config_id: String, value: String) -> <Self::SessionSetConfigOption as Request>::Params;
    /// The session's config options, from the answer to `session/set_config_option`.
    fn config_options(answer: <Self::SessionSetConfigOption as Request>::Result) -> Vec<Self::ConfigOption>;
    /// One run: the prompt sent, the session's updates streamed to `reply` until the turn ends.
    fn run(client: Client<Self>, router: VersionRouter<Self>, opened: Arc<Opened<Self>>, request: PromptParams<Self>, reply: Reply) -> impl Future<Output = RunOutcome> + Send + 'static;

    /// A permission request's session and what it asks the host.
    fn asked(request: &Self::PermissionRequest) -> (&str, Asked);
    /// The answer: the first option of a `wanted` kind, else `cancelled`.
    fn answer(request: &Self::PermissionRequest, wanted: Option<&[&str]>) -> Self::PermissionResponse;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection to an ACP agent of version `V`: one agent session per front session.
pub struct Agents<V: RemoteVersion> {
    client: Client<V>,
    router: VersionRouter<V>,
    cwd: String,
    /// A session opened before the front asked (so its first session's config options are
    /// known at once); the first front session takes it.
    ready: Arc<Mutex<Option<Opened<V>>>>,
    /// The agent wanted authentication before that first session: it is opened once the host
    /// has authenticated.
    first_after_auth: Arc<AtomicBool>,
}

impl<V: RemoteVersion> Clone for Agents<V> {
    fn clone(&self) -> Self {
        Self { client: self.client.clone(), router: self.router.clone(), cwd: self.cwd.clone(), ready: self.ready.clone(), first_after_auth: self.first_after_auth.clone() }
    }
}

impl<V: RemoteVersion> std::fmt::Debug for Agents<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents").field("client", &self.client).field("cwd", &self.cwd).finish_non_exhaustive()
    }
}

/// An agent session and what a run of it reads.
pub struct Opened<V: RemoteVersion> {
    pub(crate) id: V::SessionId,
    /// Its updates and catch-up requests (a run holds them while it streams), its host and
    /// the run in progress (what the agent asks during a run is withdrawn with it).
    pub(crate) streams: Streams<V::SessionUpdate>,
    /// What an earlier run left to this one.
    pub(crate) left: V::RunState,
}

impl<V: RemoteVersion> std::fmt::Debug for Opened<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened").field("id", &self.id).field("left", &self.left).finish_non_exhaustive()
    }
}

impl<V: RemoteVersion> Agents<V> {
    /// Drives the ACP agent reading `input` (its stdout) and writing `out` (its stdin, closed by
    /// `closer`); `initialized` is its `initialize` answer when it was sent already (else send it
    /// through [`Agents::client`]). Sessions open in `cwd`.
    pub fn connect<R>(input: R, out: crate::transport::Outbox, closer: InputCloser, initialized: Option<Initialized<V>>, cwd: String) -> Self
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
        ClientHost<V, Permissions<V>>: Service,
    {
        // The permission handler needs the router, which needs the client's updates.
        let slot: Arc<OnceLock<VersionRouter<V>>> = Arc::default();
        let (client, updates) = Client::<V>::over(input, out, closer, Permissions { router: slot.clone() }, initialized);
        let router = Router::start(updates, V::sort, V::setting);
        let _ = slot.set(router.clone());
        Self { client, router, cwd, ready: Arc::default(), first_after_auth: Arc::default() }
    }

    /// The client (to send `initialize`).
    pub fn client(&self) -> &Client<V> {
        &self.client
    }

    /// Opens the first session now. An agent that wants authentication first (-32000, with
    /// methods to offer) gets it from the host: the session is opened once the host has
    /// authenticated. Any other refusal is returned (it ends the bridge before the host is
    /// served).
    pub async fn open_first(&self) -> Result<(), AcpClientError> {
        match self.open(&self.cwd, Vec::new()).await {
            Ok(opened) => {
                *lock(&self.ready) = Some(opened);
                Ok(())
            }
            Err(CallError::Rejected { error, .. }) if error.code == crate::jsonrpc::ErrorCode::AuthRequired && !crate::core::MakeAgent::auth_methods(self).is_empty() => {
                tracing::info!("the agent wants authentication before a session: the host is offered its methods");
                self.first_after_auth.store(true, Ordering::SeqCst);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Opens an agent session in `cwd` with the host's MCP `servers`.
    async fn open(&self, cwd: &str, servers: Vec<V::McpServer>) -> Result<Opened<V>, AcpClientError> {
        let (id, commands, config) = V::opened(self.client.new_session(&V::new_session(cwd, servers)).await?);
        let streams = self.router.open(V::key(&id), commands, config);
        Ok(Opened { id, streams, left: V::RunState::default() })
    }

    /// A session for a front, reporting to `host`, in `cwd` (the bridge's when `None`). The
    /// session opened at start is its if it works in the same directory.
    pub fn agent(&self, host: Host, cwd: Option<&Path>) -> Remote<V> {
        let cwd = cwd.map_or_else(|| self.cwd.clone(), |c| c.to_string_lossy().into_owned());
        let opened = if cwd == self.cwd { lock(&self.ready).take() } else { None };
        if let Some(opened) = &opened {
            self.router.set_host(V::key(&opened.id), &host);
        }
        let name = self.client.agent().and_then(|a| V::agent_name(&a)).unwrap_or_else(|| "acp-agent".to_owned());
        Remote { runs: Runs::new(name, host), agents: self.clone(), session: tokio::sync::Mutex::new(opened.map(Arc::new)), renewed: AtomicU64::new(0), cwd, servers: Mutex::new(Vec::new()) }
    }

    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub async fn close(&self) {
        self.client.close().await;
    }
}

/// One front session, as the core: an agent session of its own.
pub struct Remote<V: RemoteVersion> {
    runs: Runs,
    agents: Agents<V>,
    /// The agent session, once opened; a run holds it while it streams.
    session: tokio::sync::Mutex<Option<Arc<Opened<V>>>>,
    /// How many times the front asked for a new session (each is a session of its own to it).
    renewed: AtomicU64,
    /// Where the agent session works.
    cwd: String,
    /// The host's MCP servers, handed to the agent session when it opens.
    servers: Mutex<Vec<V::McpServer>>,
}

impl<V: RemoteVersion> std::fmt::Debug for Remote<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("runs", &self.runs).field("agents", &self.agents).field("cwd", &self.cwd).finish_non_exhaustive()
    }
}

impl<V: RemoteVersion> Remote<V> {
    /// The agent session, opening it first if need be.
    async fn opened(&self) -> CoreResult<Arc<Opened<V>>> {
        let mut session = self.session.lock().await;
        if let Some(opened) = session.as_ref() {
            return Ok(opened.clone());
        }
        let servers = lock(&self.servers).clone();
        let opened = Arc::new(self.agents.open(&self.cwd, servers).await.map_err(shared::session_refused)?);
        self.agents.router.set_host(V::key(&opened.id), self.runs.host());
        *session = Some(opened.clone());
        Ok(opened)
    }

    /// Leaves the agent session (the next is opened afresh): its run's stream ends.
    async fn leave(&self) {
        let old = self.session.lock().await.take();
        if let Some(old) = old {
            self.agents.router.close(V::key(&old.id));
            V::close_session(&self.agents.client, &old.id).await;
        }
    }

    fn current_id(&self) -> Option<String> {
        self.session.try_lock().ok().and_then(|s| s.as_ref().map(|o| V::key(&o.id).to_owned()))
    }

    /// The agent's `thought_level` select.
    fn thinking(&self) -> Option<Thinking> {
        Thinking::of(self.settings()?)
    }

    /// `session/set_config_option` of a select; the agent's answer is the session's options now.
    async fn set_select(&self, config_id: String, value: String) -> CoreResult<()> {
        let session = self.opened().await?.id.clone();
        let request = V::set_select(session.clone(), config_id, value);
        let answer = self.agents.client.set_config_option(&request).await.map_err(shared::agent_error)?;
        self.agents.router.set_config(V::key(&session), V::config_options(answer));
        Ok(())
    }
}

impl<V: RemoteVersion> AgentCore for Remote<V> {
    type Control = Runs;

    fn control(&self) -> &Runs {
        &self.runs
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        shared::check_queue(queue.is_some(), self.runs.is_running())?;
        self.check_input(&images)?;
        let opened = self.opened().await?;
        let request = V::prompt(&text, &images, opened.id.clone());
        let (client, router) = (self.agents.client.clone(), self.agents.router.clone());
        self.runs.start_cooperative(text, images, None, WIND_DOWN, move |reply| V::run(client, router, opened, request, reply)).await
    }

    fn capabilities(&self) -> Capabilities {
        let images = self.agents.client.agent().is_some_and(|a| V::images(&a));
        // Every ACP agent takes stdio servers; the host learns of http ones from `initialize`.
        Capabilities { images, mcp: true, ..Capabilities::none() }
    }

    fn commands(&self) -> CommandsResult {
        let Some(id) = self.current_id() else { return CommandsResult { commands: Vec::new() } };
        let named = self.agents.router.commands(&id).into_iter().map(V::command);
        CommandsResult { commands: named.filter_map(|(name, description)| slash_command(&name, Some(description), Vec::new())).collect() }
    }

    /// The host's MCP servers go to the agent with its session (see [`Opening`]). The agent
    /// reports what cannot start itself.
    async fn start_mcp(&self, configs: &[McpServerConfig], bound: std::time::Duration) -> Vec<StartFailure> {
        let _ = bound;
        match V::OPENING {
            // The session opened at start had none: with none to add, it stays.
            Opening::AtStart if configs.is_empty() => return Vec::new(),
            Opening::AtStart | Opening::WithServers => {}
        }
        *lock(&self.servers) = configs.iter().filter_map(V::server).collect();
        self.leave().await;
        match V::OPENING {
            Opening::AtStart => {}
            Opening::WithServers => {
                if let Err(e) = self.opened().await {
                    tracing::warn!("{e}");
                }
            }
        }
        Vec::new()
    }

    fn session_id(&self) -> String {
        match self.renewed.load(Ordering::SeqCst) {
            0 => self.runs.session_id(),
            n => format!("{}-{n}", self.runs.session_id()),
        }
    }

    async fn steer(&self, _text: String, _images: Vec<ImageContent>) -> CoreResult<Submitted> {
        shared::no_queue()
    }

    async fn follow_up(&self, _text: String, _images: Vec<ImageContent>) -> CoreResult<Submitted> {
        shared::no_queue()
    }

    async fn new_session(&self, parent: Option<String>) -> CoreResult<()> {
        let _ = parent;
        self.runs.abort().await;
        if V::RENEWED_ID {
            self.renewed.fetch_add(1, Ordering::SeqCst);
        }
        self.leave().await;
        self.opened().await.map(drop)
    }

    /// The agent session's select config options, as it gave them last.
    fn settings(&self) -> Option<Vec<Setting>> {
        let id = self.current_id()?;
        Some(self.agents.router.config(&id).iter().filter_map(V::setting).collect())
    }

    async fn set_setting(&self, id: &str, value: &str) -> CoreResult<()> {
        self.set_select(id.to_owned(), value.to_owned()).await
    }

    fn thinking_level(&self) -> Option<ThinkingLevel> {
        self.thinking()?.level()
    }

    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        self.thinking().map(|t| t.levels()).unwrap_or_default()
    }

    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        self.opened().await?;
        let thinking = Thinking::required(self.thinking())?;
        let value = thinking.value(level)?;
        self.set_select(thinking.id, value).await.map(|()| level)
    }

    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        shared::cycle_thinking_level(self).await
    }
}

/// Any front's ACP sessions: each in the directory the host names.
impl<V: RemoteVersion> crate::core::MakeAgent for Agents<V> {
    type Agent = Remote<V>;

    fn auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        self.client.agent().map(V::auth_methods).unwrap_or_default()
    }

    async fn authenticate(&self, method: &str) -> CoreResult<()> {
        V::authenticate(&self.client, method).await?;
        // The first session the agent refused before: its options are known at `session/new`.
        if self.first_after_auth.swap(false, Ordering::SeqCst) {
            if let Err(e) = self.open_first().await {
                tracing::warn!("the agent refused `session/new` after authentication: {e}");
            }
        }
        Ok(())
    }

    fn can_logout(&self) -> bool {
        V::can_logout(self.client.agent())
    }

    async fn logout(&self) -> CoreResult<()> {
        V::logout(&self.client).await
    }

    fn make(&self, host: Host) -> CoreResult<Remote<V>> {
        Ok(self.agent(host, None))
    }

    fn make_in(&self, host: Host, cwd: &Path) -> CoreResult<Remote<V>> {
        Ok(self.agent(host, Some(cwd)))
    }
}

/// The agent's permission requests, asked of the host of the session they name.
pub struct Permissions<V: RemoteVersion> {
    router: Arc<OnceLock<VersionRouter<V>>>,
}

impl<V: RemoteVersion> Permissions<V> {
    /// The answer to `request`, once the host of its session decided (`cancelled` when nobody
    /// did, or no option is of the kind decided).
    pub(crate) async fn answer(&self, request: V::PermissionRequest) -> V::PermissionResponse {
        let (session, asked) = V::asked(&request);
        let wanted = shared::decide(&self.router, session, asked).await;
        V::answer(&request, wanted)
    }
}

/// What the remote agent of `$version` writes alike in both versions but for the generated
/// module `$p` whose types it reads (both name their updates, content blocks and permission
/// requests alike): the agent's permission requests answered, the router's sorting of its
/// notifications (`$notification`: its `session/update`), and the text of its content.
macro_rules! alike {
    ($version:ty, $p:ident, $notification:ident) => {
        impl $crate::protocol::$p::AcpClientHandler for $crate::dialect::acp::remote::Permissions<$version> {
            async fn session_request_permission(&self, request: $crate::protocol::$p::RequestPermissionRequest) -> Result<$crate::protocol::$p::RequestPermissionResponse, $crate::jsonrpc::Error> {
                Ok(self.answer(request).await)
            }
        }

        /// What a notification is, for the router, and the session it names.
        fn sort(notification: $crate::protocol::$p::$notification) -> (String, $crate::dialect::acp::router::Sorted<$crate::protocol::$p::SessionUpdate, $crate::protocol::$p::AvailableCommand, $crate::protocol::$p::SessionConfigOption>) {
            use $crate::dialect::acp::router::Sorted;
            use $crate::protocol::$p::SessionUpdate;
            let sorted = match notification.update {
                SessionUpdate::ConfigOptionUpdate { config_options, .. } => Sorted::Config(config_options),
                SessionUpdate::AvailableCommandsUpdate { available_commands, .. } => Sorted::Commands(available_commands),
                update => Sorted::Update(update),
            };
            (notification.session_id.0, sorted)
        }

        /// The text of content (text blocks; other blocks are named, not carried).
        fn block_text(block: &$crate::protocol::$p::ContentBlock) -> String {
            use $crate::protocol::$p::ContentBlock;
            match block {
                ContentBlock::Text { text, .. } => text.clone(),
                ContentBlock::ResourceLink { uri, .. } => uri.clone(),
                ContentBlock::Image { .. } => "[image]".to_owned(),
                ContentBlock::Audio { .. } => "[audio]".to_owned(),
                ContentBlock::Resource { .. } => "[resource]".to_owned(),
            }
        }
    };
}
pub(crate) use alike;

alike!(V1, acp, SessionNotification);

/// An ACP v1 agent's connection.
pub type AcpAgents = Agents<V1>;
/// A front session of an ACP v1 agent.
pub type AcpRemote = Remote<V1>;

impl RemoteVersion for V1 {
    type SessionUpdate = SessionUpdate;
    type Command = crate::protocol::acp::AvailableCommand;
    type ConfigOption = SessionConfigOption;
    type McpServer = McpServer;
    /// The answer of a prompt a run ended before it came.
    type RunState = Owed<Result<crate::protocol::acp::PromptResponse, AcpClientError>>;
    type PermissionRequest = RequestPermissionRequest;
    type PermissionResponse = RequestPermissionResponse;
    const OPENING: Opening = Opening::AtStart;
    const RENEWED_ID: bool = true;

    fn sort(notification: crate::protocol::acp::SessionNotification) -> (String, Sorted<SessionUpdate, Self::Command, SessionConfigOption>) {
        sort(notification)
    }

    fn setting(option: &SessionConfigOption) -> Option<Setting> {
        setting(option)
    }

    fn server(config: &McpServerConfig) -> Option<McpServer> {
        Some(acp_server(config))
    }

    fn key(id: &SessionId) -> &str {
        &id.0
    }

    fn agent_name(agent: &crate::protocol::acp::InitializeResponse) -> Option<String> {
        agent.agent_info.as_ref().map(|i| i.name.clone())
    }

    fn images(agent: &crate::protocol::acp::InitializeResponse) -> bool {
        agent.agent_capabilities.prompt_capabilities.image
    }

    fn auth_methods(agent: crate::protocol::acp::InitializeResponse) -> Vec<crate::core::AuthMethod> {
        let agent_methods = agent.auth_methods.into_iter().filter_map(|method| match method {
            AuthMethod::AuthMethodAgent(m) => Some(crate::core::AuthMethod::new(m.id.0, m.name).with_description(m.description)),
            AuthMethod::Object { .. } => None,
        });
        agent_methods.collect()
    }

    fn can_logout(agent: Option<crate::protocol::acp::InitializeResponse>) -> bool {
        agent.is_some_and(|a| a.agent_capabilities.auth.logout.is_some())
    }

    async fn authenticate(client: &AcpClient, method: &str) -> CoreResult<()> {
        let request = AuthenticateRequest::new(AuthMethodId(method.to_owned()));
        client.request::<crate::protocol::acp::methods::Authenticate>(&request).await.map(drop).map_err(refused)
    }

    async fn logout(client: &AcpClient) -> CoreResult<()> {
        if !Self::can_logout(client.agent()) {
            return Err(CoreError::Unsupported("the agent does not log out: its initialize answer leaves out agentCapabilities.auth.logout".into()));
        }
        client.request::<crate::protocol::acp::methods::Logout>(&LogoutRequest::new()).await.map(drop).map_err(refused)
    }

    fn command(command: Self::Command) -> (String, String) {
        (command.name, command.description)
    }

    fn new_session(cwd: &str, servers: Vec<McpServer>) -> NewSessionRequest {
        NewSessionRequest::new(cwd.to_owned(), servers)
    }

    fn opened(answer: crate::protocol::acp::NewSessionResponse) -> (SessionId, Vec<Self::Command>, Vec<SessionConfigOption>) {
        // v1 sends the commands in an update after `session/new`.
        (answer.session_id, Vec::new(), answer.config_options.unwrap_or_default())
    }

    /// The session is only no longer routed: v1 agents need not offer `session/close`.
    async fn close_session(_client: &AcpClient, _id: &SessionId) {}

    fn prompt(text: &str, images: &[ImageContent], session: SessionId) -> PromptRequest {
        let blocks = shared::prompt_blocks(text, images, |text| ContentBlock::Text { annotations: None, meta: None, text }, |data, mime_type| ContentBlock::Image { annotations: None, meta: None, data, mime_type, uri: None });
        PromptRequest::new(blocks, session)
    }

    fn set_select(session_id: SessionId, config_id: String, value: String) -> SetSessionConfigOptionRequest {
        SetSessionConfigOptionRequest::Variant1 { config_id: crate::protocol::acp::SessionConfigId(config_id), meta: None, session_id, value: SessionConfigValueId(value) }
    }

    fn config_options(answer: crate::protocol::acp::SetSessionConfigOptionResponse) -> Vec<SessionConfigOption> {
        answer.config_options
    }

    async fn run(client: AcpClient, router: VersionRouter<V1>, opened: Arc<Opened<V1>>, request: PromptRequest, reply: Reply) -> RunOutcome {
        run(client, router, opened, request, reply).await
    }

    fn asked(request: &RequestPermissionRequest) -> (&str, Asked) {
        let call = &request.tool_call;
        let name = call.name.clone().or_else(|| call.title.clone()).unwrap_or_else(|| "tool".to_owned());
        let arguments = shared::arguments(call.raw_input.as_ref()).unwrap_or_default();
        let summary = call.title.clone().unwrap_or_default();
        // The change it would make, when the agent shows it as a diff.
        let change = call.content.iter().flatten().find_map(|c| match c {
            ToolCallContent::Diff { path, old_text, new_text, .. } => Some(crate::core::port::FileChange { path: path.into(), old_text: old_text.clone(), new_text: new_text.clone() }),
            ToolCallContent::Content { .. } | ToolCallContent::Terminal { .. } => None,
        });
        (&request.session_id.0, Asked { call_id: call.tool_call_id.0.clone(), name, arguments, summary, change })
    }

    fn answer(request: &RequestPermissionRequest, wanted: Option<&[&str]>) -> RequestPermissionResponse {
        let chosen = wanted.and_then(|wanted| wanted.iter().find_map(|kind| request.options.iter().find(|o| o.kind == super::port::kind(kind))));
        RequestPermissionResponse::new(match chosen {
            Some(option) => RequestPermissionOutcome::Selected { option_id: option.option_id.clone(), meta: None },
            None => RequestPermissionOutcome::Cancelled,
        })
    }
}

/// An ACP select config option as the core's setting (a grouped one's values in one list); a
/// boolean one has no setting.
pub(crate) fn setting(option: &SessionConfigOption) -> Option<Setting> {
    match option {
        SessionConfigOption::Variant0 { id, name, description, category, current_value, options, .. } => {
            let value = |o: &crate::protocol::acp::SessionConfigSelectOption| SettingValue::new(o.value.0.clone(), o.name.clone(), o.description.clone());
            let values = match options {
                SessionConfigSelectOptions::Ungrouped(list) => list.iter().map(value).collect(),
                SessionConfigSelectOptions::Grouped(groups) => groups.iter().flat_map(|g| g.options.iter().map(value)).collect(),
            };
            Some(Setting::new(id.0.clone(), name.clone(), current_value.0.clone(), values).with_description(description.clone()).with_category(category.as_ref().map(|c| c.0.clone())))
        }
        SessionConfigOption::Variant1 { .. } => None,
    }
}

/// A server config as ACP's `McpServer` (the inverse of what the ACP front reads).
pub(crate) fn acp_server(config: &McpServerConfig) -> McpServer {
    match config {
        McpServerConfig::Stdio(s) => {
            let env = s.env.iter().map(|(name, value)| EnvVariable::new(name.clone(), value.clone())).collect();
            McpServer::Variant2(McpServerStdio::new(s.args.clone(), s.command.clone(), env, s.name.clone()))
        }
        McpServerConfig::Http(h) => McpServer::Variant0 {
            headers: h.headers.iter().map(|(name, value)| HttpHeader::new(name.clone(), value.clone())).collect(),
            meta: None,
            name: h.name.clone(),
            type_: "http".to_owned(),
            url: h.url.clone(),
        },
    }
}

/// One v1 run: the prompt sent, the session's updates streamed until the prompt's answer.
async fn run(client: AcpClient, router: VersionRouter<V1>, opened: Arc<Opened<V1>>, request: PromptRequest, reply: Reply) -> RunOutcome {
    let mut streams = opened.streams.streams.lock().await;
    let (updates, catch_ups) = &mut *streams;
    let id = &opened.id;
    // An earlier run ended here before its prompt was answered: its updates come before its
    // answer, so once it is answered (and they are routed) what is queued is its, and dropped.
    if !opened.left.settle().await {
        return failed("the agent is still ending the cancelled prompt; try again");
    }
    router.flushed().await;
    while updates.try_recv().is_ok() {}
    let run_guard = opened.streams.slot.begin_run();
    let prompting = client.clone();
    let answer = Answer::spawn(async move { prompting.prompt(&request).await }, &opened.left);
    tokio::pin!(answer);
    let mut stream = Stream::default();
    let mut cancel_sent = false;
    let answer = loop {
        tokio::select! {
            biased;
            update = updates.recv() => match update {
                Some(update) => stream.forward(update, &reply).await,
                None => break answer.await,
            },
            Some(done) = catch_ups.recv() => {
                while let Ok(update) = updates.try_recv() {
                    stream.forward(update, &reply).await;
                }
                stream.start_pending(&reply).await;
                let _ = done.send(());
            }
            answer = &mut answer => break answer,
            () = reply.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                // ACP: the client answers the permission requests it has open `cancelled`.
                run_guard.cancel();
                client.cancel(id).await;
            }
        }
    };
    // Every update of the prompt came before its answer: once routed, they are all here.
    router.flushed().await;
    while let Ok(update) = updates.try_recv() {
        stream.forward(update, &reply).await;
    }
    stream.start_pending(&reply).await;
    match answer.unwrap_or(Err(crate::client::CallError::Closed { method: "session/prompt" })).map(|a| a.stop_reason) {
        Ok(StopReason::EndTurn | StopReason::MaxTokens) => RunOutcome::Completed,
        Ok(StopReason::MaxTurnRequests) => RunOutcome::StepLimit { steps: 0 },
        Ok(StopReason::Cancelled) => RunOutcome::Aborted,
        Ok(StopReason::Refusal) => failed("the agent refused the prompt (stopReason: refusal)"),
        Err(crate::client::CallError::Closed { .. }) => failed("The agent exited before the prompt ended"),
        Err(e) => failed(format!("agent: {e}")),
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

/// The run's view of the agent's tool calls: one announced without its arguments waits for
/// them (agentwire sends them in the next update), or for anything else to happen.
#[derive(Default)]
struct Stream {
    pending: Option<(String, String, Map<String, Value>)>,
    names: HashMap<String, String>,
}

impl Stream {
    async fn start_pending(&mut self, reply: &Reply) {
        if let Some((id, name, args)) = self.pending.take() {
            reply.tool_started(&id, &name, args).await;
        }
    }

    async fn forward(&mut self, update: SessionUpdate, reply: &Reply) {
        // Arguments for the call waiting for them.
        if let SessionUpdate::ToolCallUpdate { tool_call_id, raw_input: Some(Value::Object(args)), .. } = &update {
            if let Some(pending) = self.pending.as_mut().filter(|p| p.0 == tool_call_id.0) {
                pending.2.clone_from(args);
            }
        }
        self.start_pending(reply).await;
        match update {
            SessionUpdate::AgentMessageChunk { content, .. } => reply.text(block_text(&content)).await,
            SessionUpdate::AgentThoughtChunk { content, .. } => reply.thinking(block_text(&content)).await,
            SessionUpdate::ToolCall { tool_call_id, title, name, raw_input, status, content, .. } => {
                let name = name.unwrap_or(title);
                let id = tool_call_id.0;
                self.names.insert(id.clone(), name.clone());
                let finished = matches!(status, Some(ToolCallStatus::Completed | ToolCallStatus::Failed));
                // A pending call's input may still change (opencode announces `{cwd}`, then the
                // arguments in an update): it starts at the next update, with the latest input.
                let pending = matches!(status, None | Some(ToolCallStatus::Pending));
                match raw_input {
                    Some(Value::Object(args)) if pending => self.pending = Some((id.clone(), name.clone(), args)),
                    Some(Value::Object(args)) => reply.tool_started(&id, &name, args).await,
                    Some(other) => reply.tool_started(&id, &name, Map::from_iter([("input".to_owned(), other)])).await,
                    None if finished => reply.tool_started(&id, &name, Map::new()).await,
                    None => self.pending = Some((id.clone(), name.clone(), Map::new())),
                }
                if finished {
                    reply.tool_finished(&id, &name, &call_text(&content), None, status == Some(ToolCallStatus::Failed)).await;
                }
            }
            SessionUpdate::ToolCallUpdate { tool_call_id, status, content, raw_output, .. } => {
                let id = tool_call_id.0;
                let name = self.names.get(&id).cloned().unwrap_or_default();
                let text = content.as_deref().map(call_text);
                match status {
                    Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) => {
                        reply.tool_finished(&id, &name, &text.unwrap_or_default(), raw_output, status == ToolCallStatus::Failed).await;
                    }
                    Some(ToolCallStatus::Pending | ToolCallStatus::InProgress) | None => {
                        if let Some(text) = text {
                            reply.tool_progress(&id, &text).await;
                        }
                    }
                }
            }
            // Kept by the router: they never reach a run.
            SessionUpdate::ConfigOptionUpdate { .. } | SessionUpdate::AvailableCommandsUpdate { .. } => {}
            // Nothing the core reports.
            SessionUpdate::UserMessageChunk { .. } | SessionUpdate::Plan { .. } | SessionUpdate::CurrentModeUpdate { .. } | SessionUpdate::SessionInfoUpdate { .. } => {}
            SessionUpdate::UsageUpdate { .. } | SessionUpdate::Notice { .. } | SessionUpdate::CompactionUpdate { .. } | SessionUpdate::CompactionSummaryChunk { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's servers reach the agent as the host wrote them: ACP's `mcpServers`, read by the
    /// front into the core's configs, written back by the remote agent.
    #[test]
    fn mcp_servers_go_to_the_agent_as_the_host_wrote_them() {
        let written = serde_json::json!([
            {"name": "files", "command": "npx", "args": ["-y", "server"], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "remote", "url": "http://127.0.0.1:3001/mcp", "headers": [{"name": "Authorization", "value": "Bearer x"}]}
        ]);
        let servers: Vec<McpServer> = serde_json::from_value(written.clone()).unwrap();
        let configs = super::super::mcp::configs(&servers).unwrap();
        let back: Vec<McpServer> = configs.iter().map(acp_server).collect();
        assert_eq!(serde_json::to_value(&back).unwrap(), written);
    }
}
