//! The generated [`AcpAgentHandler`] trait, implemented by mapping each ACP method onto the core.
//!
//! Each ACP session is one core (an [`AgentCore`]: the built-in [`Agent`] or a custom one,
//! built by the process's [`SessionFactory`](crate::core::SessionFactory) for the session's `cwd`) with its own
//! [`AcpSessionHost`]; sessions live until `session/close`, `session/delete` or the end of the
//! process. What the cores cannot do ([`SessionFactory::capabilities`](crate::core::SessionFactory::capabilities)) `initialize` does not
//! advertise, and the methods for it answer -32601 naming them. Updates about a session that
//! the client only learns of from an answer (`available_commands_update` after `session/new`)
//! are sent once that answer is queued; those of a session it names (`session/load`,
//! `session/resume`) go out before the answer, so nothing for that session follows it until
//! the next request.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::client_tools::ClientTools;
use super::{auth, config, lock, modes, AcpSessionHost};
use crate::core::events::RunOutcome;
use crate::core::{AgentCore, Capabilities, CoreError, Submitted};
use crate::jsonrpc::Error;
use crate::protocol::acp::*;
use crate::protocol::ImageContent;

/// An agent's own authentication method as ACP v1's (the agent carries it out: no `type`).
pub(crate) fn auth_method(method: &crate::core::AuthMethod) -> AuthMethod {
    AuthMethod::AuthMethodAgent(AuthMethodAgent::new(AuthMethodId(method.id.clone()), method.name.clone()).with_description(method.description.clone()))
}

/// One live session.
type Live<A> = super::front::Live<A, AcpSessionHost>;

/// ACP v1's projection of the front: its session host, and per connection `initialize`'s
/// `clientCapabilities` and the sessions closed or deleted.
#[derive(Debug)]
pub enum V1 {}

impl super::front::Projection for V1 {
    const NAME: &'static str = "AcpServer";
    type Host = AcpSessionHost;
    type Extra = V1Connection;
    type Side = super::AcpAgentSide;

    fn notified<A: AgentCore>(front: &AcpServer<A>, notification: AcpAgentNotification) {
        super::serve::route_notification(front.conn(), notification, |session| front.cancel(session));
    }
}

/// What a v1 connection keeps beside its sessions.
#[derive(Debug, Default)]
pub struct V1Connection {
    /// `initialize`'s `clientCapabilities` (only `fs` and `terminal` are read).
    client: Mutex<Option<ClientCapabilities>>,
    /// Sessions closed or deleted in this process, so a later request for one says so.
    closed: Mutex<HashSet<String>>,
}

/// The ACP agent: the connection, the session factory and the live sessions, each served by
/// one core (the built-in [`Agent`], or any [`AgentCore`]).
pub type AcpServer<A> = super::front::Front<V1, A>;

pub(crate) fn not_found(session: &str) -> Error {
    Error::resource_not_found(format!("Session not found: {session}")).with_details([("sessionId", session)])
}

pub(crate) fn absolute(cwd: &str) -> Result<PathBuf, Error> {
    let path = PathBuf::from(cwd);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(Error::invalid_params(format!("cwd must be an absolute path: {cwd}")).at("/cwd", "not an absolute path"))
    }
}

/// `additionalDirectories`: absolute paths, or -32602 naming the first that is not.
fn additional_roots(dirs: &[String]) -> Result<Vec<PathBuf>, Error> {
    dirs.iter()
        .enumerate()
        .map(|(i, d)| {
            let path = PathBuf::from(d);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(Error::invalid_params(format!("additionalDirectories must be absolute paths: {d}")).at(format!("/additionalDirectories/{i}"), "not an absolute path"))
            }
        })
        .collect()
}

/// The prompt's text and images. Text resources are inlined with their URI; links are named.
pub(crate) fn prompt_input(blocks: &[ContentBlock]) -> Result<(String, Vec<ImageContent>), Error> {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text { text: t, .. } => text.push(t.clone()),
            ContentBlock::Image { data, mime_type, .. } => {
                let mime = mime_type.parse().map_err(|_| Error::invalid_params(format!("Unsupported image type: {mime_type}")))?;
                images.push(ImageContent::new(data.clone(), mime));
            }
            ContentBlock::Audio { .. } => {
                return Err(Error::invalid_params("Audio prompts are not supported (promptCapabilities.audio is false)").at(format!("/prompt/{i}"), "audio is not supported"));
            }
            ContentBlock::ResourceLink { name, uri, .. } => text.push(format!("[@{name}]({uri})")),
            ContentBlock::Resource { resource, .. } => match resource {
                EmbeddedResourceResource::TextResourceContents(r) => text.push(format!("<context uri=\"{}\">\n{}\n</context>", r.uri, r.text)),
                EmbeddedResourceResource::BlobResourceContents(r) => text.push(format!("[binary resource]({})", r.uri)),
            },
        }
    }
    Ok((text.join("\n"), images))
}

/// A method the sessions' agents cannot serve (not advertised in `initialize`).
pub(crate) fn unsupported_method(method: &str) -> Error {
    Error::method_not_found(format!("this agent does not support `{method}`"))
}

/// The core's refusal as an ACP error: what it does not support is -32601, an agent's own
/// error (behind the bridge) as it came, the rest -32603.
pub(crate) fn core_error(e: CoreError) -> Error {
    match e {
        CoreError::Unsupported(message) => Error::method_not_found(message),
        CoreError::InvalidParams(_) | CoreError::NotFound(_) | CoreError::Busy(_) | CoreError::Conflict(_) | CoreError::SessionWrite(_) | CoreError::Internal(_) => Error::internal(e.to_string()),
        // An ACP agent's own error, passed back as it gave it.
        CoreError::Refused(refusal) => {
            let error = Error::new(refusal.code, refusal.message);
            match refusal.data {
                Some(data) => error.with_data(data),
                None => error,
            }
        }
    }
}

impl<A: AgentCore> AcpServer<A> {
    /// -32601 naming `method` unless the agents can (`capable`) serve it.
    fn require(&self, capable: impl Fn(&Capabilities) -> bool, method: &str) -> Result<(), Error> {
        if capable(&self.factory.capabilities()) {
            Ok(())
        } else {
            Err(unsupported_method(method))
        }
    }

    fn live(&self, session: &str) -> Result<Live<A>, Error> {
        self.session(session).ok_or_else(|| {
            if lock(&self.extra.closed).contains(session) {
                Error::resource_not_found(format!("Session closed: {session}")).with_details([("sessionId", session)])
            } else {
                not_found(session)
            }
        })
    }

    /// Ends a live session as `session/close` does: its run is cancelled (the prompt resolves
    /// `cancelled`), its `bash` commands are terminated, and later requests for it fail. Returns
    /// once a prompt it cancelled has been answered, so that answer comes first.
    async fn end(&self, session: &str) -> Option<Live<A>> {
        // A prompt still waiting for its run has not been answered (answers are written by the
        // loop this request runs on): wait until its answer is queued.
        self.end_with(session, |live| {
            lock(&self.extra.closed).insert(session.to_owned());
            lock(&live.host.state).prompt_answered.clone()
        })
        .await
    }

    /// `session/cancel`: aborts the session's run (its prompt resolves `cancelled`, a pending
    /// permission request is withdrawn and rejects).
    pub fn cancel(&self, session: &str) {
        if let Ok(live) = self.live(session) {
            // Cancelled before the next line is read: a permission answer right behind the
            // notification must not let the tool run or the turn go on. Only the run in force
            // now is cancelled: a spawned `abort` ran whenever the runtime got to it and could
            // abort the *next* prompt's run instead (ACP queues nothing, so there is nothing
            // else for an abort to drop).
            if live.agent.is_running() {
                lock(&live.host.state).cancelled = true;
            }
            live.agent.cancel_now();
        } else {
            tracing::warn!("session/cancel for an unknown session {session}");
        }
    }

    /// Builds and registers a session.
    fn open(&self, cwd: &Path, resume: Option<&Path>) -> Result<Live<A>, Error> {
        let host = Arc::new(AcpSessionHost::new(self.conn.clone()));
        let agent = Arc::new(self.factory.create(cwd, resume, crate::core::Host::new(host.clone(), host.clone())).map_err(Error::internal)?);
        let id = agent.session_id();
        host.set_session_id(&id);
        *lock(&host.cwd) = Some(cwd.to_path_buf());
        *lock(&host.context_window) = agent.current_model().map(|m| m.context_window);
        let offered = match &*lock(&self.extra.client) {
            Some(client) => ClientTools::offered(self.conn.clone(), id.clone(), client.fs.read_text_file, client.fs.write_text_file, client.terminal),
            None => None,
        };
        *lock(&host.tools) = offered.map(|t| Arc::new(t) as Arc<dyn crate::core::tools::HostTools>);
        let live = Live { agent, host };
        lock(&self.extra.closed).remove(&id);
        lock(&self.sessions).insert(id, live.clone());
        Ok(live)
    }

    /// Connects the session's MCP servers (replacing those it had). Servers that cannot start
    /// are told to the client: before the answer when `before_answer` (load, resume: the client
    /// knows the session), else right after it (new: the answer introduces the session).
    async fn connect_mcp(&self, live: &Live<A>, configs: &[crate::core::mcp::McpServerConfig], before_answer: bool) {
        let failures = live.agent.start_mcp(configs, self.factory.mcp_startup_timeout()).await;
        if failures.is_empty() {
            return;
        }
        if before_answer {
            live.host.report_mcp_failures(&failures).await;
            return;
        }
        let answered = self.conn.after_answer();
        let host = live.host.clone();
        tokio::spawn(async move {
            if answered.await {
                host.report_mcp_failures(&failures).await;
            }
        });
    }

    /// Announces a new session's commands once the answer naming it is queued.
    fn announce_commands_after_answer(&self, live: &Live<A>) {
        let answered = self.conn.after_answer();
        let live = live.clone();
        tokio::spawn(async move {
            if answered.await {
                announce_commands(&live).await;
            }
        });
    }

    /// An open session or one loaded from its file; its commands (and its title, when it has
    /// one) are announced before the answer (the client named the session, so it knows it).
    async fn open_existing(&self, session: &str, cwd: &str) -> Result<Live<A>, Error> {
        let live = match self.session(session) {
            Some(live) if live.agent.is_running() => return Err(Error::internal("The session is running a prompt; cancel it first")),
            Some(live) => live,
            None => {
                let cwd = absolute(cwd)?;
                let path = self.factory.find_session_file(session, Some(&cwd)).ok_or_else(|| not_found(session))?;
                self.open(&cwd, Some(&path))?
            }
        };
        announce_commands(&live).await;
        if let Some(title) = live.agent.session_name() {
            live.host.update(SessionUpdate::SessionInfoUpdate { meta: None, title: Some(title), updated_at: None }).await;
        }
        Ok(live)
    }
}

/// Sends the session's slash commands (`available_commands_update`); those that take text
/// carry it as their `input` hint.
async fn announce_commands<A: AgentCore>(live: &Live<A>) {
    let available_commands = live
        .agent
        .commands()
        .commands
        .into_iter()
        .map(|c| {
            let command = AvailableCommand::new(c.description.clone().unwrap_or_default(), c.name.to_string());
            match c.input.and_then(|i| i.hint) {
                Some(hint) => command.with_input(AvailableCommandInput(UnstructuredCommandInput::new(hint))),
                None => command,
            }
        })
        .collect();
    live.host.update(SessionUpdate::AvailableCommandsUpdate { available_commands, meta: None }).await;
}

/// `session/set_mode` and `set_config_option`'s mode: the policy, saved with the session.
fn set_policy<A: AgentCore>(live: &Live<A>, policy: crate::core::ApprovalPolicy) -> Result<(), Error> {
    live.agent.set_approval_policy(policy).map_err(core_error)
}

/// The session's `additionalDirectories`, or -32601 from an agent that takes none.
fn set_roots<A: AgentCore>(live: &Live<A>, roots: Vec<PathBuf>) -> Result<(), Error> {
    live.agent.set_additional_roots(roots).map_err(core_error)
}

impl<A: AgentCore> AcpAgentHandler for AcpServer<A> {
    async fn initialize(&self, params: InitializeRequest) -> Result<InitializeResponse, Error> {
        let terminal_auth = params.client_capabilities.auth.terminal;
        *lock(&self.extra.client) = Some(params.client_capabilities);
        // What the agents cannot do is advertised absent (and refused if asked anyway).
        let can = self.factory.capabilities();
        // agentwire's provider keys, or else the methods of the agent behind.
        let own = if can.auth { Vec::new() } else { self.factory.agent_auth_methods() };
        let logout = can.auth || (!own.is_empty() && self.factory.agent_can_logout());
        let auth = if logout { AgentAuthCapabilities::new().with_logout(LogoutCapabilities::new()) } else { AgentAuthCapabilities::new() };
        let mut sessions = SessionCapabilities::new();
        if can.additional_directories {
            sessions = sessions.with_additional_directories(SessionAdditionalDirectoriesCapabilities::new());
        }
        sessions = sessions.with_close(SessionCloseCapabilities::new());
        if can.sessions {
            sessions = sessions.with_delete(SessionDeleteCapabilities::new()).with_list(SessionListCapabilities::new()).with_resume(SessionResumeCapabilities::new());
        }
        Ok(InitializeResponse {
            agent_capabilities: AgentCapabilities {
                auth,
                load_session: can.sessions,
                // stdio and streamable HTTP through rmcp; it has no client for legacy SSE.
                mcp_capabilities: McpCapabilities { http: can.mcp, meta: None, sse: false },
                meta: None,
                prompt_capabilities: PromptCapabilities { audio: false, embedded_context: true, image: can.images, meta: None },
                session_capabilities: sessions,
            },
            agent_info: Some(Implementation::new(self.info.name.clone(), self.info.version.clone()).with_title(self.info.name.clone())),
            auth_methods: if can.auth { auth::methods(terminal_auth) } else { own.iter().map(auth_method).collect() },
            meta: None,
            protocol_version: ProtocolVersion(ACP_PROTOCOL_VERSION),
        })
    }

    async fn session_new(&self, params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let cwd = absolute(&params.cwd)?;
        let roots = additional_roots(&params.additional_directories)?;
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open(&cwd, None)?;
        // The id handed out names a file from now on: a new process can load or resume it
        // before anything was prompted.
        if let Err(e) = set_roots(&live, roots).and_then(|()| live.agent.save_session().map_err(|e| Error::internal(e.to_string()))) {
            lock(&self.sessions).remove(&live.agent.session_id());
            return Err(e);
        }
        self.connect_mcp(&live, &servers, false).await;
        self.announce_commands_after_answer(&live);
        let options = config::options(&*live.agent);
        Ok(NewSessionResponse::new(SessionId(live.agent.session_id())).with_config_options(options).with_modes(live.agent.approval_policy().map(modes::state)))
    }

    async fn session_load(&self, params: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        self.require(|can| can.sessions, "session/load")?;
        let roots = additional_roots(&params.additional_directories)?;
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open_existing(&params.session_id, &params.cwd).await?;
        set_roots(&live, roots)?;
        // The whole history goes out before the answer, and so does news of a server that
        // could not start.
        live.host.replay(&live.agent.messages().map_err(core_error)?).await;
        self.connect_mcp(&live, &servers, true).await;
        Ok(LoadSessionResponse::new().with_config_options(config::options(&*live.agent)).with_modes(live.agent.approval_policy().map(modes::state)))
    }

    async fn session_list(&self, params: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        self.require(|can| can.sessions, "session/list")?;
        let cwd = params.cwd.as_deref().map(absolute).transpose()?;
        Ok(ListSessionsResponse::new(self.stored_sessions(cwd).await?))
    }

    async fn session_resume(&self, params: ResumeSessionRequest) -> Result<ResumeSessionResponse, Error> {
        self.require(|can| can.sessions, "session/resume")?;
        let roots = additional_roots(&params.additional_directories)?;
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open_existing(&params.session_id, &params.cwd).await?;
        set_roots(&live, roots)?;
        self.connect_mcp(&live, &servers, true).await;
        Ok(ResumeSessionResponse::new().with_config_options(config::options(&*live.agent)).with_modes(live.agent.approval_policy().map(modes::state)))
    }

    async fn session_set_mode(&self, params: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let live = self.live(&params.session_id)?;
        if live.agent.approval_policy().is_none() {
            return Err(unsupported_method("session/set_mode"));
        }
        set_policy(&live, modes::policy(&params.mode_id)?)?;
        // The mode is also a config option: the client's copy of those is now stale.
        live.host.update(SessionUpdate::ConfigOptionUpdate { config_options: config::options(&*live.agent), meta: None }).await;
        Ok(SetSessionModeResponse::new())
    }

    async fn session_set_config_option(&self, params: SetSessionConfigOptionRequest) -> Result<SetSessionConfigOptionResponse, Error> {
        let (session, config_id, value) = match params {
            SetSessionConfigOptionRequest::Variant1 { config_id, session_id, value, .. } => (session_id, config_id, value),
            SetSessionConfigOptionRequest::Variant0 { config_id, .. } => {
                return Err(Error::invalid_params(format!("The config option {:?} is a select, not a boolean", config_id.0)).at("/type", "agentwire has no boolean config options"));
            }
        };
        let live = self.live(&session)?;
        let change = config::change(&*live.agent, &config_id.0, &value.0)?;
        if let Some(policy) = config::apply(&*live.agent, &live.host.context_window, change).await? {
            live.host.update(SessionUpdate::CurrentModeUpdate { current_mode_id: SessionModeId(modes::mode_id(policy).to_owned()), meta: None }).await;
        }
        Ok(SetSessionConfigOptionResponse::new(config::options(&*live.agent)))
    }

    async fn session_close(&self, params: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
        self.end(&params.session_id).await.ok_or_else(|| not_found(&params.session_id))?;
        Ok(CloseSessionResponse::new())
    }

    async fn session_delete(&self, params: DeleteSessionRequest) -> Result<DeleteSessionResponse, Error> {
        self.require(|can| can.sessions, "session/delete")?;
        let session = params.session_id.0;
        let live = self.end(&session).await;
        // A session kept in memory only (`--no-session`) is gone once closed; one that never
        // existed is as deleted as it can be (the spec asks for silent success).
        if self.delete_file(&session, live.as_ref(), true)? {
            lock(&self.extra.closed).insert(session);
        }
        Ok(DeleteSessionResponse::new())
    }

    async fn authenticate(&self, params: AuthenticateRequest) -> Result<AuthenticateResponse, Error> {
        self.authenticate_with("authenticate", &params.method_id.0).await.map(|()| AuthenticateResponse::new())
    }

    async fn logout(&self, _params: LogoutRequest) -> Result<LogoutResponse, Error> {
        self.logout_with("logout", self.factory.agent_can_logout()).await.map(|()| LogoutResponse::new())
    }

    async fn session_prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        // `$/cancel_request` for this prompt cancels its run, which then answers `cancelled`
        // (claimed first: a cancellation arriving while the run starts must not drop the
        // handler of a run that was started).
        let cancelled = crate::jsonrpc::claim_cancellation();
        let live = self.live(&params.session_id)?;
        let (text, images) = prompt_input(&params.prompt)?;
        let first_image = params.prompt.iter().position(|b| matches!(b, ContentBlock::Image { .. })).unwrap_or(0);
        super::images::check(&*live.agent, &images, first_image)?;
        let options_before = config::options(&*live.agent);
        let busy = || Error::internal("A prompt is already running in this session; wait for it or send session/cancel");
        // An editor's "interrupt and send" writes `session/cancel` and the next prompt back to
        // back: that prompt waits for the cancelled one to wind down (its tools are stopped, a
        // `bash` within its kill grace) instead of being refused. A prompt with no cancel ahead
        // of it is refused at once.
        let winding_down = lock(&live.host.state).cancelled;
        if live.agent.is_running() && !(winding_down && tokio::time::timeout(super::CANCEL_WIND_DOWN, live.agent.settled()).await.is_ok()) {
            return Err(busy());
        }
        let prompt = match live.agent.prompt(text, images, None).await {
            Ok(Submitted::Started(prompt) | Submitted::Handled(prompt)) => {
                lock(&live.host.state).cancelled = false;
                prompt
            }
            Ok(Submitted::Queued) => return Err(busy()),
            Err(e) => return Err(Error::internal(e.to_string())),
        };
        let (answered, prompt_answered) = tokio::sync::watch::channel(false);
        lock(&live.host.state).prompt_answered = Some(prompt_answered);
        crate::jsonrpc::answer::on_answer(move |_| {
            let _ = answered.send(true);
        });
        // Started now: the answer is the work's outcome, after its last update.
        let outcome = prompt.outcome();
        tokio::pin!(outcome);
        let outcome = tokio::select! {
            outcome = &mut outcome => outcome,
            () = cancelled.cancelled() => {
                self.cancel(&params.session_id);
                outcome.await
            }
        };
        let outcome = outcome.ok_or_else(|| Error::internal("The prompt ended without an outcome"))?;
        let hit_length = lock(&live.host.state).hit_length;
        // A slash command (`/model`) or the run changed a setting: the client hears of it
        // before the prompt's answer.
        let options = config::options(&*live.agent);
        let announced = lock(&live.host.state).announced_options.take();
        if options != options_before && announced.as_ref() != Some(&options) {
            *lock(&live.host.context_window) = live.agent.current_model().map(|m| m.context_window);
            live.host.update(SessionUpdate::ConfigOptionUpdate { config_options: options, meta: None }).await;
        }
        let stop_reason = match outcome {
            RunOutcome::Completed if hit_length => StopReason::MaxTokens,
            RunOutcome::Completed => StopReason::EndTurn,
            RunOutcome::StepLimit { .. } => StopReason::MaxTurnRequests,
            RunOutcome::Aborted => StopReason::Cancelled,
            RunOutcome::Failed(e) => return Err(auth::prompt_failure(&e)),
        };
        Ok(PromptResponse::new(stop_reason))
    }
}
