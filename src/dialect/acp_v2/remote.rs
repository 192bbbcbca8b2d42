//! An ACP v2 agent driven as the core: the remote agent of v2, so `agentwire bridge` puts a v1
//! editor (or an rpc or wire host) in front of a v2 agent.
//!
//! | core | ACP v2 (agent) |
//! |---|---|
//! | a front's session | `session/new` (each front session its own), with the host's MCP servers |
//! | prompt | `session/prompt` (text and images); the turn runs until the session's `idle` `state_update` (`end_turn`, `max_tokens`, or none → completed; `max_turn_requests` → step limit; `cancelled`; `refusal`, `error` → failed with the agent's error) |
//! | cancel | `session/cancel`; the run ends with the `idle` update |
//! | text / thinking | `agent_message_chunk` / `agent_thought_chunk`, or a whole `agent_message` / `agent_thought` for a message that came without chunks |
//! | tool started, progress, finished | `tool_call_update` upserts: started once past `pending` (with the latest `rawInput`), progress with content, finished `completed` / `failed` |
//! | approval | `session/request_permission`: the option of the decision's kind |
//! | slash commands | `availableCommands` of `session/new` and `available_commands_update` |
//! | thinking level | the agent's `thought_level` config option (`session/set_config_option`) |
//! | settings | the agent's select config options, each as it gave it; a change is its `session/set_config_option` |

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::client::{AcpV2Client, CallError};
use crate::core::events::RunOutcome;
use crate::core::mcp::{McpServerConfig, StartFailure};
use crate::core::{AgentCore, Capabilities, CoreResult, Host, QueueKind, Reply, RunControl, Runs, Setting, Submitted};
use crate::dialect::acp::remote_shared::{self as shared, Asked, Thinking};
use crate::dialect::acp::router::{Router, Sorted, Streams};
use crate::dialect::remote::{failed, refused, slash_command, WIND_DOWN};
use crate::jsonrpc::Error;
use crate::protocol::acp_v2::{
    AbsolutePath, AcpClientHandler, AuthMethod, AuthMethodId, AvailableCommand, LoginAuthRequest, LogoutAuthRequest, ContentBlock, McpServer, MediaType, NewSessionRequest, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, RequestPermissionSubject, SessionId, SessionUpdate,
    SessionConfigId, SessionConfigOption, SessionConfigValueId, SetSessionConfigOptionRequest, ToolCallContent, ToolCallUpdate,
};
use crate::protocol::{CommandsResult, ImageContent, ThinkingLevel};

/// How long a run waits for the `idle` of a turn an earlier run left before it ended.
const LEFT_TURN: Duration = Duration::from_secs(5);

/// The router of a v2 agent's updates.
type V2Router = Router<SessionUpdate, AvailableCommand, SessionConfigOption>;

/// What a v2 notification is, for the router.
fn sort(notification: crate::protocol::acp_v2::UpdateSessionNotification) -> (String, Sorted<SessionUpdate, AvailableCommand, SessionConfigOption>) {
    let sorted = match notification.update {
        SessionUpdate::ConfigOptionUpdate { config_options, .. } => Sorted::Config(config_options),
        SessionUpdate::AvailableCommandsUpdate { available_commands, .. } => Sorted::Commands(available_commands),
        update => Sorted::Update(update),
    };
    (notification.session_id.0, sorted)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection to an ACP v2 agent: one agent session per front session.
#[derive(Debug, Clone)]
pub struct AcpV2Agents {
    client: AcpV2Client,
    router: V2Router,
    cwd: String,
}

/// An agent session and what a run of it reads.
#[derive(Debug)]
struct Opened {
    id: SessionId,
    streams: Streams<SessionUpdate>,
    /// A run ended (cancelled, bounded) before the agent reported the turn `idle`.
    turn_left: std::sync::atomic::AtomicBool,
}

impl AcpV2Agents {
    /// Drives the v2 agent reading `input` (its stdout) and writing `out` (its stdin, closed by
    /// `closer`); send `initialize` through [`AcpV2Agents::client`]. Sessions open in `cwd`.
    pub fn connect(input: impl tokio::io::AsyncBufRead + Unpin + Send + 'static, out: crate::transport::Outbox, closer: crate::client::InputCloser, cwd: String) -> Self {
        // The permission handler needs the router, which needs the client's updates.
        let slot: Arc<std::sync::OnceLock<V2Router>> = Arc::default();
        let (client, updates) = AcpV2Client::over(input, out, closer, Permissions { router: slot.clone() }, None);
        let router = Router::start(updates, sort, setting);
        let _ = slot.set(router.clone());
        Self { client, router, cwd }
    }

    /// The client (to send `initialize`).
    pub fn client(&self) -> &AcpV2Client {
        &self.client
    }

    async fn open(&self, cwd: &str, servers: Vec<McpServer>) -> Result<Opened, CallError> {
        let mut request = NewSessionRequest::new(AbsolutePath(cwd.to_owned()));
        request.mcp_servers = servers;
        let session = self.client.new_session(&request).await?;
        let streams = self.router.open(&session.session_id.0, session.available_commands, session.config_options);
        Ok(Opened { id: session.session_id, streams, turn_left: Default::default() })
    }

    /// A session for a front, reporting to `host`, in `cwd` (the bridge's when `None`).
    pub fn agent(&self, host: Host, cwd: Option<&Path>) -> AcpV2Remote {
        let cwd = cwd.map_or_else(|| self.cwd.clone(), |c| c.to_string_lossy().into_owned());
        let name = self.client.agent().map_or_else(|| "acp-agent".to_owned(), |a| a.info.name);
        AcpV2Remote { runs: Runs::new(name, host), agents: self.clone(), session: tokio::sync::Mutex::new(None), cwd, servers: Mutex::new(Vec::new()) }
    }

    /// Closes the agent's input (it finishes what it was asked, then exits).
    pub async fn close(&self) {
        self.client.close().await;
    }
}

/// One front session, as the core: an agent session of its own.
#[derive(Debug)]
pub struct AcpV2Remote {
    runs: Runs,
    agents: AcpV2Agents,
    session: tokio::sync::Mutex<Option<Arc<Opened>>>,
    cwd: String,
    servers: Mutex<Vec<McpServer>>,
}

impl AcpV2Remote {
    async fn opened(&self) -> CoreResult<Arc<Opened>> {
        let mut session = self.session.lock().await;
        if let Some(opened) = session.as_ref() {
            return Ok(opened.clone());
        }
        let servers = lock(&self.servers).clone();
        let opened = Arc::new(self.agents.open(&self.cwd, servers).await.map_err(shared::session_refused)?);
        self.agents.router.set_host(&opened.id.0, self.runs.host());
        *session = Some(opened.clone());
        Ok(opened)
    }

    fn current_id(&self) -> Option<String> {
        self.session.try_lock().ok().and_then(|s| s.as_ref().map(|o| o.id.0.clone()))
    }

    /// The agent's `thought_level` select.
    fn thinking(&self) -> Option<Thinking> {
        Thinking::of(self.settings()?)
    }

    /// `session/set_config_option` of a select; the agent's answer is the session's options now.
    async fn set_select(&self, config_id: String, value: String) -> CoreResult<()> {
        let session = self.opened().await?.id.clone();
        let request = SetSessionConfigOptionRequest::Variant0 { config_id: SessionConfigId(config_id), meta: None, session_id: session.clone(), type_: "select".to_owned(), value: SessionConfigValueId(value) };
        let answer = self.agents.client.set_config_option(&request).await.map_err(shared::agent_error)?;
        self.agents.router.set_config(&session.0, answer.config_options);
        Ok(())
    }
}

/// A v2 select config option as the core's setting: v1's, of the option in v1's shape.
fn setting(option: &SessionConfigOption) -> Option<Setting> {
    crate::dialect::acp::remote::setting(&crate::dialect::acp::compat::config_option_v1(option)?)
}

/// A server config as v2's `McpServer`: v1's, in v2's shape.
fn v2_server(config: &McpServerConfig) -> Option<McpServer> {
    crate::dialect::acp::compat::mcp_server(&crate::dialect::acp::remote::acp_server(config))
}

impl AgentCore for AcpV2Remote {
    type Control = Runs;

    fn control(&self) -> &Runs {
        &self.runs
    }

    async fn prompt(&self, text: String, images: Vec<ImageContent>, queue: Option<QueueKind>) -> CoreResult<Submitted> {
        shared::check_queue(queue.is_some(), self.runs.is_running())?;
        self.check_input(&images)?;
        let opened = self.opened().await?;
        let blocks = shared::prompt_blocks(&text, &images, |text| ContentBlock::Text { annotations: None, meta: None, text }, |data, mime| ContentBlock::Image { annotations: None, meta: None, data, mime_type: MediaType(mime), uri: None });
        let request = PromptRequest::new(blocks, opened.id.clone());
        let (client, router) = (self.agents.client.clone(), self.agents.router.clone());
        self.runs.start_cooperative(text, images, None, WIND_DOWN, move |reply| run(client, router, opened, request, reply)).await
    }

    fn capabilities(&self) -> Capabilities {
        let images = self.agents.client.agent().is_some_and(|a| a.capabilities.session.as_ref().and_then(|s| s.prompt.as_ref()).is_some_and(|p| p.image.is_some()));
        Capabilities { images, mcp: true, ..Capabilities::none() }
    }

    fn commands(&self) -> CommandsResult {
        let Some(id) = self.current_id() else { return CommandsResult { commands: Vec::new() } };
        let commands = self
            .agents
            .router
            .commands(&id)
            .into_iter()
            .filter_map(|c| match c {
                AvailableCommand::Command { name, description, .. } => slash_command(&name, Some(description), Vec::new()),
            })
            .collect();
        CommandsResult { commands }
    }

    /// The host's MCP servers go to the agent with its session, opened now (so its config
    /// options, the thinking level among them, are known before the first prompt). The agent
    /// reports what cannot start itself.
    async fn start_mcp(&self, configs: &[McpServerConfig], bound: Duration) -> Vec<StartFailure> {
        let _ = bound;
        *lock(&self.servers) = configs.iter().filter_map(v2_server).collect();
        if let Some(old) = self.session.lock().await.take() {
            self.agents.router.close(&old.id.0);
            let _ = self.agents.client.close_session(&old.id).await;
        }
        if let Err(e) = self.opened().await {
            tracing::warn!("{e}");
        }
        Vec::new()
    }

    fn session_id(&self) -> String {
        self.runs.session_id()
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
        let old = self.session.lock().await.take();
        if let Some(old) = old {
            self.agents.router.close(&old.id.0);
            let _ = self.agents.client.close_session(&old.id).await;
        }
        self.opened().await.map(drop)
    }

    /// The agent session's select config options, as it gave them last.
    fn settings(&self) -> Option<Vec<Setting>> {
        let id = self.current_id()?;
        Some(self.agents.router.config(&id).iter().filter_map(setting).collect())
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

/// The `idle` state update's outcome.
fn outcome(stop_reason: Option<&str>, error: Option<&crate::protocol::acp_v2::Error>) -> RunOutcome {
    match stop_reason {
        None | Some("end_turn" | "max_tokens") => RunOutcome::Completed,
        Some("max_turn_requests") => RunOutcome::StepLimit { steps: 0 },
        Some("cancelled") => RunOutcome::Aborted,
        Some("refusal") => failed("the agent refused the prompt (stopReason: refusal)"),
        Some(other) => failed(error.map_or_else(|| format!("the agent ended the turn with stopReason {other:?}"), |e| format!("agent: {}", e.message))),
    }
}

/// One run: the prompt sent, the session's updates streamed until the turn is `idle`.
async fn run(client: AcpV2Client, router: V2Router, opened: Arc<Opened>, request: PromptRequest, reply: Reply) -> RunOutcome {
    let mut streams = opened.streams.streams.lock().await;
    let (updates, catch_ups) = &mut *streams;
    router.flushed().await;
    // A turn an earlier run left (cancelled, then ended before the agent said so) ends first.
    if opened.turn_left.swap(false, std::sync::atomic::Ordering::SeqCst) {
        let left = async {
            while let Some(update) = updates.recv().await {
                if matches!(&update, SessionUpdate::StateUpdate { state, .. } if state == "idle") {
                    return true;
                }
            }
            false
        };
        if !tokio::time::timeout(LEFT_TURN, left).await.unwrap_or(false) {
            opened.turn_left.store(true, std::sync::atomic::Ordering::SeqCst);
            return failed("the agent is still ending the cancelled prompt; try again");
        }
    }
    while updates.try_recv().is_ok() {}
    let run_guard = opened.streams.slot.begin_run();
    // Marked until the turn's `idle` is read: a run cut short leaves it to the next.
    opened.turn_left.store(true, std::sync::atomic::Ordering::SeqCst);
    let prompting = client.clone();
    let ack = tokio::spawn(async move { prompting.prompt(&request).await });
    tokio::pin!(ack);
    let mut acked = false;
    let mut running = false;
    // An `idle` read before the prompt's answer was: the answer comes first on the wire, but
    // it reaches this run by another task than the updates and can be overtaken. It ends the
    // turn once the answer is read.
    let mut idle_early = None;
    let mut stream = Stream::default();
    let mut cancel_sent = false;
    loop {
        tokio::select! {
            biased;
            update = updates.recv() => match update {
                Some(SessionUpdate::StateUpdate { state, stop_reason, error, .. }) => match state.as_str() {
                    "idle" if acked || running => {
                        opened.turn_left.store(false, std::sync::atomic::Ordering::SeqCst);
                        stream.start_pending(&reply).await;
                        return outcome(stop_reason.as_deref(), error.as_ref());
                    }
                    "idle" => idle_early = Some((stop_reason, error)),
                    "running" | "requires_action" => running = true,
                    _ => {}
                },
                Some(update) => stream.forward(update, &reply).await,
                None => return failed("The agent exited before the prompt ended"),
            },
            Some(done) = catch_ups.recv() => {
                while let Ok(update) = updates.try_recv() {
                    match update {
                        SessionUpdate::StateUpdate { .. } => {}
                        update => stream.forward(update, &reply).await,
                    }
                }
                stream.start_pending(&reply).await;
                let _ = done.send(());
            }
            answer = &mut ack, if !acked => match answer {
                Ok(Ok(_)) => {
                    acked = true;
                    if let Some((stop_reason, error)) = idle_early.take() {
                        opened.turn_left.store(false, std::sync::atomic::Ordering::SeqCst);
                        stream.start_pending(&reply).await;
                        return outcome(stop_reason.as_deref(), error.as_ref());
                    }
                }
                Ok(Err(CallError::Closed { .. })) | Err(_) => {
                    opened.turn_left.store(false, std::sync::atomic::Ordering::SeqCst);
                    return failed("The agent exited before the prompt ended");
                }
                // Refused: no turn started.
                Ok(Err(e)) => {
                    opened.turn_left.store(false, std::sync::atomic::Ordering::SeqCst);
                    return failed(format!("agent: {e}"));
                }
            },
            () = reply.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                run_guard.cancel();
                client.cancel(&opened.id).await;
            }
        }
    }
}

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
            ToolCallContent::Diff { patch: Some(patch), .. } => patch.text.clone(),
            ToolCallContent::Diff { changes, patch: None, .. } => format!("[{} changed file(s)]", changes.len()),
            ToolCallContent::Terminal { terminal_id, .. } => format!("[terminal {}]", terminal_id.0),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a run knows of the agent's tool calls and messages.
#[derive(Default)]
struct Stream {
    /// A call announced `pending`: it starts at the next other update, with its latest input.
    pending: Option<String>,
    calls: HashMap<String, Call>,
    /// Messages (and thoughts) that came as chunks: a whole upsert of one repeats them.
    chunked: HashSet<String>,
}

#[derive(Default)]
struct Call {
    name: String,
    args: Map<String, Value>,
    started: bool,
    finished: bool,
}

impl Stream {
    async fn start_pending(&mut self, reply: &Reply) {
        if let Some(id) = self.pending.take() {
            self.start(&id, reply).await;
        }
    }

    async fn start(&mut self, id: &str, reply: &Reply) {
        if let Some(call) = self.calls.get_mut(id).filter(|c| !c.started) {
            call.started = true;
            let (name, args) = (call.name.clone(), call.args.clone());
            reply.tool_started(id, &name, args).await;
        }
    }

    async fn forward(&mut self, update: SessionUpdate, reply: &Reply) {
        let SessionUpdate::ToolCallUpdate { tool_call_id, name, title, raw_input, status, content, raw_output, .. } = update else {
            self.start_pending(reply).await;
            return self.forward_message(update, reply).await;
        };
        let id = tool_call_id.0;
        if self.pending.as_ref().is_some_and(|p| *p != id) {
            self.start_pending(reply).await;
        }
        let call = self.calls.entry(id.clone()).or_default();
        if let Some(name) = name.or(title).filter(|_| !call.started) {
            call.name = name;
        }
        match raw_input {
            Some(Value::Object(args)) if !call.started => call.args = args,
            Some(other) if !call.started => call.args = Map::from_iter([("input".to_owned(), other)]),
            Some(_) | None => {}
        }
        if call.name.is_empty() {
            call.name = "tool".to_owned();
        }
        let status = status.map(|s| s.0);
        let waiting = matches!(status.as_deref(), None | Some("pending")) && content.is_none();
        if !call.started && waiting {
            self.pending = Some(id);
            return;
        }
        if self.pending.as_deref() == Some(id.as_str()) {
            self.pending = None;
        }
        self.start(&id, reply).await;
        let text = content.as_deref().map(call_text);
        let Some(call) = self.calls.get_mut(&id) else { return };
        match status.as_deref() {
            Some(done @ ("completed" | "failed")) if !call.finished => {
                call.finished = true;
                let name = call.name.clone();
                reply.tool_finished(&id, &name, &text.unwrap_or_default(), raw_output, done == "failed").await;
            }
            _ => {
                if let Some(text) = text.filter(|_| !call.finished) {
                    reply.tool_progress(&id, &text).await;
                }
            }
        }
    }

    async fn forward_message(&mut self, update: SessionUpdate, reply: &Reply) {
        match update {
            SessionUpdate::AgentMessageChunk { content, message_id, .. } => {
                self.chunked.insert(format!("a{}", message_id.0));
                reply.text(block_text(&content)).await;
            }
            SessionUpdate::AgentThoughtChunk { content, message_id, .. } => {
                self.chunked.insert(format!("t{}", message_id.0));
                reply.thinking(block_text(&content)).await;
            }
            SessionUpdate::AgentMessage { content: Some(content), message_id, .. } if !self.chunked.contains(&format!("a{}", message_id.0)) => {
                reply.text(content.iter().map(block_text).collect::<String>()).await;
            }
            SessionUpdate::AgentThought { content: Some(content), message_id, .. } if !self.chunked.contains(&format!("t{}", message_id.0)) => {
                reply.thinking(content.iter().map(block_text).collect::<String>()).await;
            }
            // What the core does not report.
            SessionUpdate::AgentMessage { .. }
            | SessionUpdate::AgentThought { .. }
            | SessionUpdate::UserMessage { .. }
            | SessionUpdate::UserMessageChunk { .. }
            | SessionUpdate::StateUpdate { .. }
            | SessionUpdate::ToolCallUpdate { .. }
            | SessionUpdate::ToolCallContentChunk { .. }
            | SessionUpdate::TerminalUpdate { .. }
            | SessionUpdate::TerminalOutputChunk { .. }
            | SessionUpdate::PlanUpdate { .. }
            | SessionUpdate::AvailableCommandsUpdate { .. }
            | SessionUpdate::ConfigOptionUpdate { .. }
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
    router: Arc<std::sync::OnceLock<V2Router>>,
}

impl AcpClientHandler for Permissions {
    async fn session_request_permission(&self, request: RequestPermissionRequest) -> Result<RequestPermissionResponse, Error> {
        let cancelled = || Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled { meta: None }));
        let empty = ToolCallUpdate::new(crate::protocol::acp_v2::ToolCallId(String::new()));
        let call = match &request.subject {
            Some(RequestPermissionSubject::ToolCall { tool_call, .. }) => tool_call,
            Some(RequestPermissionSubject::Command { .. }) | None => &empty,
        };
        let name = call.name.clone().or_else(|| call.title.clone()).unwrap_or_else(|| "tool".to_owned());
        let arguments = shared::arguments(call.raw_input.as_ref()).unwrap_or_else(|| match &request.subject {
            Some(RequestPermissionSubject::Command { command, cwd, .. }) => Map::from_iter([("command".to_owned(), Value::String(command.clone())), ("cwd".to_owned(), Value::String(cwd.0.clone()))]),
            Some(RequestPermissionSubject::ToolCall { .. }) | None => Map::new(),
        });
        let summary = call.title.clone().unwrap_or_else(|| request.title.clone());
        // v2's diff is a patch, not the file's texts: the host is not shown it.
        let asked = Asked { call_id: call.tool_call_id.0.clone(), name, arguments, summary, change: None };
        let Some(wanted) = shared::decide(&self.router, &request.session_id.0, asked).await else { return cancelled() };
        match wanted.iter().find_map(|kind| request.options.iter().find(|o| o.kind.0 == *kind)) {
            Some(option) => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Selected { option_id: option.option_id.clone(), meta: None })),
            None => cancelled(),
        }
    }
}

/// Any front's v2 sessions: each in the directory the host names.
impl crate::core::MakeAgent for AcpV2Agents {
    type Agent = AcpV2Remote;

    /// The agent's `agent` methods from its `initialize` answer; a `terminal` one is left out
    /// (the host would run the bridge's command line with its arguments, not the agent's).
    fn auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        let Some(agent) = self.client.agent() else { return Vec::new() };
        agent
            .auth_methods
            .into_iter()
            .filter_map(|method| match method {
                AuthMethod::Agent { method_id, name, description, .. } => Some(crate::core::AuthMethod::new(method_id.0, name).with_description(description)),
                AuthMethod::Terminal { .. } => None,
            })
            .collect()
    }

    /// The agent's `auth/login`; its error comes back as it gave it.
    async fn authenticate(&self, method: &str) -> CoreResult<()> {
        let request = LoginAuthRequest::new(AuthMethodId(method.to_owned()));
        self.client.request::<crate::protocol::acp_v2::methods::AuthLogin>(&request).await.map(drop).map_err(refused)
    }

    /// v2 agents offering methods serve `auth/logout` too.
    fn can_logout(&self) -> bool {
        !self.auth_methods().is_empty()
    }

    async fn logout(&self) -> CoreResult<()> {
        self.client.request::<crate::protocol::acp_v2::methods::AuthLogout>(&LogoutAuthRequest::new()).await.map(drop).map_err(refused)
    }

    fn make(&self, host: Host) -> CoreResult<AcpV2Remote> {
        Ok(self.agent(host, None))
    }

    fn make_in(&self, host: Host, cwd: &Path) -> CoreResult<AcpV2Remote> {
        Ok(self.agent(host, Some(cwd)))
    }
}
