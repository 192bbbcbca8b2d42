//! An ACP agent (an editor's agent: gemini-cli, opencode, codex-acp, `agentwire --mode acp`)
//! driven as the core: the remote agent of this dialect ([`crate::dialect::remote`]).
//! `initialize` was sent when the dialect was detected.
//!
//! | core | ACP (agent) |
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
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::core::events::RunOutcome;
use crate::core::{AgentCore, Capabilities, CoreError, CoreResult, Host, QueueKind, Reply, RunControl, Runs, Setting, SettingValue, Submitted};
use crate::client::{AcpClient, AcpClientError};
use crate::dialect::remote::{failed, refused, Answer, Owed, WIND_DOWN};
use super::remote_shared::{self as shared, Asked, Thinking};
use super::router::{Router, Sorted, Streams};
use crate::jsonrpc::Error;
use crate::protocol::acp::{
    AcpClientHandler, AuthMethod, AuthMethodId, AuthenticateRequest, AvailableCommand, ContentBlock, LogoutRequest, EnvVariable, HttpHeader, McpServer, McpServerStdio, NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionConfigOption,
    SessionConfigSelectOptions, SessionConfigValueId, SessionId, SessionUpdate, SetSessionConfigOptionRequest, StopReason, ToolCallContent, ToolCallStatus,
};
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::dialect::remote::slash_command;
use crate::protocol::{CommandsResult, ImageContent, ThinkingLevel};
use std::path::Path;

/// The router of a v1 agent's updates.
type V1Router = Router<SessionUpdate, AvailableCommand, SessionConfigOption>;

/// What a v1 notification is, for the router.
fn sort(notification: crate::protocol::acp::SessionNotification) -> (String, Sorted<SessionUpdate, AvailableCommand, SessionConfigOption>) {
    let sorted = match notification.update {
        SessionUpdate::ConfigOptionUpdate { config_options, .. } => Sorted::Config(config_options),
        SessionUpdate::AvailableCommandsUpdate { available_commands, .. } => Sorted::Commands(available_commands),
        update => Sorted::Update(update),
    };
    (notification.session_id.0, sorted)
}

/// The connection to an ACP agent: one agent session per front session.
#[derive(Debug, Clone)]
pub struct AcpAgents {
    client: AcpClient,
    router: V1Router,
    cwd: String,
    /// A session opened before the front asked (so its first session's config options are
    /// known at once); the first front session takes it.
    ready: Arc<Mutex<Option<Opened>>>,
    /// The agent wanted authentication before that first session: it is opened once the host
    /// has authenticated.
    first_after_auth: Arc<std::sync::atomic::AtomicBool>,
}

/// An agent session and what a run of it reads.
#[derive(Debug)]
struct Opened {
    id: SessionId,
    /// Its updates and catch-up requests (a run holds them while it streams), its host and
    /// the run in progress (what the agent asks during a run is withdrawn with it).
    streams: Streams<SessionUpdate>,
    /// The answer of a prompt a run ended before it came.
    owed: Owed<Result<crate::protocol::acp::PromptResponse, AcpClientError>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AcpAgents {
    /// Drives the ACP agent reading `input` (its stdout, `initialize` answered with
    /// `initialized`) and writing `out` (its stdin, closed by `closer`); sessions open in `cwd`.
    pub fn connect<R>(input: R, out: crate::transport::Outbox, closer: crate::client::InputCloser, initialized: crate::protocol::acp::InitializeResponse, cwd: String) -> Self
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    {
        // The permission handler needs the router, which needs the client's updates.
        let slot: Arc<std::sync::OnceLock<V1Router>> = Arc::default();
        let (client, updates) = AcpClient::over(input, out, closer, Permissions { router: slot.clone() }, Some(initialized));
        let router = Router::start(updates, sort, setting);
        let _ = slot.set(router.clone());
        Self { client, router, cwd, ready: Arc::default(), first_after_auth: Arc::default() }
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
            Err(crate::client::CallError::Rejected { error, .. }) if error.code == crate::jsonrpc::ErrorCode::AuthRequired && !crate::core::MakeAgent::auth_methods(self).is_empty() => {
                tracing::info!("the agent wants authentication before a session: the host is offered its methods");
                self.first_after_auth.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Opens an agent session in `cwd` with the host's MCP `servers`.
    async fn open(&self, cwd: &str, servers: Vec<McpServer>) -> Result<Opened, AcpClientError> {
        let session = self.client.new_session(&NewSessionRequest::new(cwd.to_owned(), servers)).await?;
        let streams = self.router.open(&session.session_id.0, Vec::new(), session.config_options.unwrap_or_default());
        Ok(Opened { id: session.session_id, streams, owed: Owed::default() })
    }

    /// A session for a front, reporting to `host`, in `cwd` (the bridge's when `None`). The
    /// session opened at start is its if it works in the same directory.
    pub fn agent(&self, host: Host, cwd: Option<&Path>) -> AcpRemote {
        let cwd = cwd.map_or_else(|| self.cwd.clone(), |c| c.to_string_lossy().into_owned());
        let opened = if cwd == self.cwd { lock(&self.ready).take() } else { None };
        if let Some(opened) = &opened {
            self.router.set_host(&opened.id.0, &host);
        }
        let name = self.client.agent().and_then(|a| a.agent_info).map_or_else(|| "acp-agent".to_owned(), |i| i.name);
        AcpRemote { runs: Runs::new(name, host), agents: self.clone(), session: tokio::sync::Mutex::new(opened.map(Arc::new)), renewed: std::sync::atomic::AtomicU64::new(0), cwd, servers: Mutex::new(Vec::new()) }
    }

    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub async fn close(&self) {
        self.client.close().await;
    }
}

/// One front session, as the core: an agent session of its own.
#[derive(Debug)]
pub struct AcpRemote {
    runs: Runs,
    agents: AcpAgents,
    /// The agent session, once opened; a run holds it while it streams.
    session: tokio::sync::Mutex<Option<Arc<Opened>>>,
    /// How many times the front asked for a new session (each is a session of its own to it).
    renewed: std::sync::atomic::AtomicU64,
    /// Where the agent session works.
    cwd: String,
    /// The host's MCP servers, handed to the agent session when it opens.
    servers: Mutex<Vec<McpServer>>,
}

impl AcpRemote {
    /// The agent session's id, opening it first if need be.
    async fn session(&self) -> CoreResult<SessionId> {
        let mut session = self.session.lock().await;
        if let Some(opened) = session.as_ref() {
            return Ok(opened.id.clone());
        }
        let servers = lock(&self.servers).clone();
        let opened = self.agents.open(&self.cwd, servers).await.map_err(shared::session_refused)?;
        self.agents.router.set_host(&opened.id.0, self.runs.host());
        let id = opened.id.clone();
        *session = Some(Arc::new(opened));
        Ok(id)
    }

    fn current_id(&self) -> Option<String> {
        self.session.try_lock().ok().and_then(|s| s.as_ref().map(|o| o.id.0.clone()))
    }

    fn thinking(&self) -> Option<Thinking> {
        Thinking::of(self.settings()?)
    }
}

impl AgentCore for AcpRemote {
    type Control = Runs;

    fn control(&self) -> &Runs {
        &self.runs
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        shared::check_queue(queue.is_some(), self.runs.is_running())?;
        self.check_input(&images)?;
        self.session().await?;
        let Some(opened) = self.session.lock().await.clone() else { return Err(CoreError::Internal("no agent session".into())) };
        let blocks = shared::prompt_blocks(&text, &images, |text| ContentBlock::Text { annotations: None, meta: None, text }, |data, mime_type| ContentBlock::Image { annotations: None, meta: None, data, mime_type, uri: None });
        let request = PromptRequest::new(blocks, opened.id.clone());
        let (client, router) = (self.agents.client.clone(), self.agents.router.clone());
        self.runs.start_cooperative(text, images, None, WIND_DOWN, move |reply| run(client, router, opened, request, reply)).await
    }

    fn capabilities(&self) -> Capabilities {
        let images = self.agents.client.agent().is_some_and(|a| a.agent_capabilities.prompt_capabilities.image);
        // Every ACP agent takes stdio servers; the host learns of http ones from `initialize`.
        Capabilities { images, mcp: true, ..Capabilities::none() }
    }

    fn commands(&self) -> CommandsResult {
        let Some(id) = self.current_id() else { return CommandsResult { commands: Vec::new() } };
        let commands = self.agents.router.commands(&id).into_iter().filter_map(|c| slash_command(&c.name, Some(c.description), Vec::new())).collect();
        CommandsResult { commands }
    }

    /// The host's MCP servers go to the agent with its session: opened already (the one opened
    /// at start, which had none), it is left for a new one that has them. The agent reports
    /// what cannot start itself.
    async fn start_mcp(&self, configs: &[McpServerConfig], bound: std::time::Duration) -> Vec<StartFailure> {
        let _ = bound;
        if configs.is_empty() {
            return Vec::new();
        }
        *lock(&self.servers) = configs.iter().map(acp_server).collect();
        if let Some(old) = self.session.lock().await.take() {
            self.agents.router.close(&old.id.0);
        }
        Vec::new()
    }

    fn session_id(&self) -> String {
        match self.renewed.load(std::sync::atomic::Ordering::SeqCst) {
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
        self.renewed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let old = self.session.lock().await.take();
        if let Some(old) = old {
            self.agents.router.close(&old.id.0);
        }
        self.session().await.map(drop)
    }

    /// The agent session's config options (its selects), as it gave them last.
    fn settings(&self) -> Option<Vec<Setting>> {
        let id = self.current_id()?;
        Some(self.agents.router.config(&id).iter().filter_map(setting).collect())
    }

    async fn set_setting(&self, id: &str, value: &str) -> CoreResult<()> {
        let session = self.session().await?;
        let request = SetSessionConfigOptionRequest::Variant1 { config_id: crate::protocol::acp::SessionConfigId(id.to_owned()), meta: None, session_id: session.clone(), value: SessionConfigValueId(value.to_owned()) };
        self.set_config_option(&session, &request).await
    }

    fn thinking_level(&self) -> Option<ThinkingLevel> {
        self.thinking()?.level()
    }

    fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        self.thinking().map(|t| t.levels()).unwrap_or_default()
    }

    async fn set_thinking_level(&self, level: ThinkingLevel) -> CoreResult<ThinkingLevel> {
        let session = self.session().await?;
        let thinking = Thinking::required(self.thinking())?;
        let request = SetSessionConfigOptionRequest::Variant1 { config_id: crate::protocol::acp::SessionConfigId(thinking.id.clone()), meta: None, session_id: session.clone(), value: SessionConfigValueId(thinking.value(level)?) };
        self.set_config_option(&session, &request).await.map(|()| level)
    }

    async fn cycle_thinking_level(&self) -> CoreResult<Option<ThinkingLevel>> {
        shared::cycle_thinking_level(self).await
    }
}

impl AcpRemote {
    /// `session/set_config_option`; the agent's answer is the session's options now.
    async fn set_config_option(&self, session: &SessionId, request: &SetSessionConfigOptionRequest) -> CoreResult<()> {
        let answer = self.agents.client.set_config_option(request).await.map_err(shared::agent_error)?;
        self.agents.router.set_config(&session.0, answer.config_options);
        Ok(())
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

/// One run: the prompt sent, the session's updates streamed until the prompt's answer.
async fn run(client: AcpClient, router: V1Router, opened: Arc<Opened>, request: PromptRequest, reply: Reply) -> RunOutcome {
    let mut streams = opened.streams.streams.lock().await;
    let (updates, catch_ups) = &mut *streams;
    let id = &opened.id;
    // An earlier run ended here before its prompt was answered: its updates come before its
    // answer, so once it is answered (and they are routed) what is queued is its, and dropped.
    if !opened.owed.settle().await {
        return failed("the agent is still ending the cancelled prompt; try again");
    }
    router.flushed().await;
    while updates.try_recv().is_ok() {}
    let run_guard = opened.streams.slot.begin_run();
    let prompting = client.clone();
    let answer = Answer::spawn(async move { prompting.prompt(&request).await }, &opened.owed);
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
            // Nothing the core reports (config options are kept by the router).
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
}

/// The agent's permission requests, asked of the host of the session they name.
struct Permissions {
    router: Arc<std::sync::OnceLock<V1Router>>,
}

impl AcpClientHandler for Permissions {
    async fn session_request_permission(&self, request: RequestPermissionRequest) -> Result<RequestPermissionResponse, Error> {
        let cancelled = || Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
        let call = &request.tool_call;
        let name = call.name.clone().or_else(|| call.title.clone()).unwrap_or_else(|| "tool".to_owned());
        let arguments = shared::arguments(call.raw_input.as_ref()).unwrap_or_default();
        let summary = call.title.clone().unwrap_or_default();
        // The change it would make, when the agent shows it as a diff.
        let change = call.content.iter().flatten().find_map(|c| match c {
            ToolCallContent::Diff { path, old_text, new_text, .. } => Some(crate::core::port::FileChange { path: path.into(), old_text: old_text.clone(), new_text: new_text.clone() }),
            ToolCallContent::Content { .. } | ToolCallContent::Terminal { .. } => None,
        });
        let asked = Asked { call_id: call.tool_call_id.0.clone(), name, arguments, summary, change };
        let Some(wanted) = shared::decide(&self.router, &request.session_id.0, asked).await else { return cancelled() };
        let chosen = wanted.iter().find_map(|kind| request.options.iter().find(|o| o.kind == super::port::kind(kind)));
        match chosen {
            Some(option) => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Selected { option_id: option.option_id.clone(), meta: None })),
            None => cancelled(),
        }
    }
}

/// Any front's ACP sessions: each in the directory the host names.
impl crate::core::MakeAgent for AcpAgents {
    type Agent = AcpRemote;

    /// The agent's `agent` methods from its `initialize` answer. A `terminal` one is left out:
    /// the host would run its own command line (the bridge's) with the method's arguments,
    /// which is not the agent's login (the bridge does not offer terminal auth to the agent).
    fn auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        let Some(agent) = self.client.agent() else { return Vec::new() };
        agent
            .auth_methods
            .into_iter()
            .filter_map(|method| match method {
                AuthMethod::AuthMethodAgent(m) => Some(crate::core::AuthMethod::new(m.id.0, m.name).with_description(m.description)),
                AuthMethod::Object { .. } => None,
            })
            .collect()
    }

    /// The agent's `authenticate`; its error comes back as it gave it.
    async fn authenticate(&self, method: &str) -> CoreResult<()> {
        let request = AuthenticateRequest::new(AuthMethodId(method.to_owned()));
        self.client.request::<crate::protocol::acp::methods::Authenticate>(&request).await.map_err(refused)?;
        // The first session the agent refused before: its options are known at `session/new`.
        if self.first_after_auth.swap(false, std::sync::atomic::Ordering::SeqCst) {
            if let Err(e) = self.open_first().await {
                tracing::warn!("the agent refused `session/new` after authentication: {e}");
            }
        }
        Ok(())
    }

    fn can_logout(&self) -> bool {
        self.client.agent().is_some_and(|a| a.agent_capabilities.auth.logout.is_some())
    }

    async fn logout(&self) -> CoreResult<()> {
        if !self.can_logout() {
            return Err(CoreError::Unsupported("the agent does not log out: its initialize answer leaves out agentCapabilities.auth.logout".into()));
        }
        self.client.request::<crate::protocol::acp::methods::Logout>(&LogoutRequest::new()).await.map(drop).map_err(refused)
    }

    fn make(&self, host: Host) -> CoreResult<AcpRemote> {
        Ok(self.agent(host, None))
    }

    fn make_in(&self, host: Host, cwd: &Path) -> CoreResult<AcpRemote> {
        Ok(self.agent(host, Some(cwd)))
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
