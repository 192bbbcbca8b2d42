//! An ACP v2 agent driven as the core: v2's [`RemoteVersion`] of the ACP remote agent
//! ([`crate::dialect::acp::remote`]), so `agentwire bridge` puts a v1 editor (or an rpc or wire
//! host) in front of a v2 agent.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::client::acp_v2::V2;
use crate::client::{AcpV2Client, CallError};
use crate::core::events::RunOutcome;
use crate::core::mcp::McpServerConfig;
use crate::core::{CoreResult, Reply, Setting};
use crate::dialect::acp::remote::{Agents, Opened, Opening, Remote, RemoteVersion, VersionRouter};
use crate::dialect::acp::remote_shared::{self as shared, Asked};
use crate::dialect::acp::router::Sorted;
use crate::dialect::remote::{failed, refused};
use crate::protocol::acp_v2::{
    AbsolutePath, AuthMethod, AuthMethodId, AvailableCommand, ContentBlock, InitializeResponse, LoginAuthRequest, LogoutAuthRequest, McpServer, MediaType, NewSessionRequest, NewSessionResponse, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    RequestPermissionSubject, SessionConfigId, SessionConfigOption, SessionConfigValueId, SessionId, SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, ToolCallContent, ToolCallUpdate, UpdateSessionNotification,
};
use crate::protocol::ImageContent;

/// How long a run waits for the `idle` of a turn an earlier run left before it ended.
const LEFT_TURN: Duration = Duration::from_secs(5);

crate::dialect::acp::remote::alike!(V2, acp_v2, UpdateSessionNotification);

/// An ACP v2 agent's connection.
pub type AcpV2Agents = Agents<V2>;
/// A front session of an ACP v2 agent.
pub type AcpV2Remote = Remote<V2>;

impl RemoteVersion for V2 {
    type SessionUpdate = SessionUpdate;
    type Command = AvailableCommand;
    type ConfigOption = SessionConfigOption;
    type McpServer = McpServer;
    /// A run ended (cancelled, bounded) before the agent reported the turn `idle`.
    type RunState = AtomicBool;
    type PermissionRequest = RequestPermissionRequest;
    type PermissionResponse = RequestPermissionResponse;
    const OPENING: Opening = Opening::WithServers;
    const RENEWED_ID: bool = false;

    fn sort(notification: UpdateSessionNotification) -> (String, Sorted<SessionUpdate, AvailableCommand, SessionConfigOption>) {
        sort(notification)
    }

    /// v1's, of the option in v1's shape.
    fn setting(option: &SessionConfigOption) -> Option<Setting> {
        crate::dialect::acp::remote::setting(&crate::dialect::acp::compat::config_option_v1(option)?)
    }

    /// v1's, in v2's shape.
    fn server(config: &McpServerConfig) -> Option<McpServer> {
        crate::dialect::acp::compat::mcp_server(&crate::dialect::acp::remote::acp_server(config))
    }

    fn key(id: &SessionId) -> &str {
        &id.0
    }

    fn agent_name(agent: &InitializeResponse) -> Option<String> {
        Some(agent.info.name.clone())
    }

    fn images(agent: &InitializeResponse) -> bool {
        agent.capabilities.session.as_ref().and_then(|s| s.prompt.as_ref()).is_some_and(|p| p.image.is_some())
    }

    fn auth_methods(agent: InitializeResponse) -> Vec<crate::core::AuthMethod> {
        let agent_methods = agent.auth_methods.into_iter().filter_map(|method| match method {
            AuthMethod::Agent { method_id, name, description, .. } => Some(crate::core::AuthMethod::new(method_id.0, name).with_description(description)),
            AuthMethod::Terminal { .. } => None,
        });
        agent_methods.collect()
    }

    /// v2 agents offering methods serve `auth/logout` too.
    fn can_logout(agent: Option<InitializeResponse>) -> bool {
        agent.is_some_and(|a| !Self::auth_methods(a).is_empty())
    }

    /// `auth/login`.
    async fn authenticate(client: &AcpV2Client, method: &str) -> CoreResult<()> {
        let request = LoginAuthRequest::new(AuthMethodId(method.to_owned()));
        client.request::<crate::protocol::acp_v2::methods::AuthLogin>(&request).await.map(drop).map_err(refused)
    }

    async fn logout(client: &AcpV2Client) -> CoreResult<()> {
        client.request::<crate::protocol::acp_v2::methods::AuthLogout>(&LogoutAuthRequest::new()).await.map(drop).map_err(refused)
    }

    fn command(command: AvailableCommand) -> (String, String) {
        match command {
            AvailableCommand::Command { name, description, .. } => (name, description),
        }
    }

    fn new_session(cwd: &str, servers: Vec<McpServer>) -> NewSessionRequest {
        let mut request = NewSessionRequest::new(AbsolutePath(cwd.to_owned()));
        request.mcp_servers = servers;
        request
    }

    fn opened(answer: NewSessionResponse) -> (SessionId, Vec<AvailableCommand>, Vec<SessionConfigOption>) {
        (answer.session_id, answer.available_commands, answer.config_options)
    }

    async fn close_session(client: &AcpV2Client, id: &SessionId) {
        let _ = client.close_session(id).await;
    }

    fn prompt(text: &str, images: &[ImageContent], session: SessionId) -> PromptRequest {
        let blocks = shared::prompt_blocks(text, images, |text| ContentBlock::Text { annotations: None, meta: None, text }, |data, mime| ContentBlock::Image { annotations: None, meta: None, data, mime_type: MediaType(mime), uri: None });
        PromptRequest::new(blocks, session)
    }

    fn set_select(session_id: SessionId, config_id: String, value: String) -> SetSessionConfigOptionRequest {
        SetSessionConfigOptionRequest::Variant0 { config_id: SessionConfigId(config_id), meta: None, session_id, type_: "select".to_owned(), value: SessionConfigValueId(value) }
    }

    fn config_options(answer: SetSessionConfigOptionResponse) -> Vec<SessionConfigOption> {
        answer.config_options
    }

    async fn run(client: AcpV2Client, router: VersionRouter<V2>, opened: Arc<Opened<V2>>, request: PromptRequest, reply: Reply) -> RunOutcome {
        run(client, router, opened, request, reply).await
    }

    fn asked(request: &RequestPermissionRequest) -> (&str, Asked) {
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
        (&request.session_id.0, Asked { call_id: call.tool_call_id.0.clone(), name, arguments, summary, change: None })
    }

    fn answer(request: &RequestPermissionRequest, wanted: Option<&[&str]>) -> RequestPermissionResponse {
        let chosen = wanted.and_then(|wanted| wanted.iter().find_map(|kind| request.options.iter().find(|o| o.kind.0 == *kind)));
        RequestPermissionResponse::new(match chosen {
            Some(option) => RequestPermissionOutcome::Selected { option_id: option.option_id.clone(), meta: None },
            None => RequestPermissionOutcome::Cancelled { meta: None },
        })
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

/// One v2 run: the prompt sent, the session's updates streamed until the turn is `idle`.
async fn run(client: AcpV2Client, router: VersionRouter<V2>, opened: Arc<Opened<V2>>, request: PromptRequest, reply: Reply) -> RunOutcome {
    let mut streams = opened.streams.streams.lock().await;
    let (updates, catch_ups) = &mut *streams;
    router.flushed().await;
    // A turn an earlier run left (cancelled, then ended before the agent said so) ends first.
    if opened.left.swap(false, Ordering::SeqCst) {
        let left = async {
            while let Some(update) = updates.recv().await {
                if matches!(&update, SessionUpdate::StateUpdate { state, .. } if state == "idle") {
                    return true;
                }
            }
            false
        };
        if !tokio::time::timeout(LEFT_TURN, left).await.unwrap_or(false) {
            opened.left.store(true, Ordering::SeqCst);
            return failed("the agent is still ending the cancelled prompt; try again");
        }
    }
    while updates.try_recv().is_ok() {}
    let run_guard = opened.streams.slot.begin_run();
    // Marked until the turn's `idle` is read: a run cut short leaves it to the next.
    opened.left.store(true, Ordering::SeqCst);
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
                        opened.left.store(false, Ordering::SeqCst);
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
                        opened.left.store(false, Ordering::SeqCst);
                        stream.start_pending(&reply).await;
                        return outcome(stop_reason.as_deref(), error.as_ref());
                    }
                }
                Ok(Err(CallError::Closed { .. })) | Err(_) => {
                    opened.left.store(false, Ordering::SeqCst);
                    return failed("The agent exited before the prompt ended");
                }
                // Refused: no turn started.
                Ok(Err(e)) => {
                    opened.left.store(false, Ordering::SeqCst);
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
            // A whole message repeating its chunks, or without content.
            SessionUpdate::AgentMessage { .. } | SessionUpdate::AgentThought { .. } => {}
            // Read by the run (the turn's state) or by `forward` (tool calls); the router keeps
            // the commands and config options.
            SessionUpdate::StateUpdate { .. } | SessionUpdate::ToolCallUpdate { .. } | SessionUpdate::AvailableCommandsUpdate { .. } | SessionUpdate::ConfigOptionUpdate { .. } => {}
            // What the core does not report.
            SessionUpdate::UserMessage { .. } | SessionUpdate::UserMessageChunk { .. } | SessionUpdate::PlanUpdate { .. } | SessionUpdate::SessionInfoUpdate { .. } | SessionUpdate::UsageUpdate { .. } | SessionUpdate::Notice { .. } => {}
            SessionUpdate::ToolCallContentChunk { .. } | SessionUpdate::TerminalUpdate { .. } | SessionUpdate::TerminalOutputChunk { .. } | SessionUpdate::CompactionUpdate { .. } | SessionUpdate::CompactionSummaryChunk { .. } => {}
        }
    }
}

