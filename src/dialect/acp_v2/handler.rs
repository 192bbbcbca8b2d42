//! The generated v2 [`AcpAgentHandler`] trait, implemented by mapping each method onto the
//! core, as v1's handler does ([`crate::dialect::acp::handler`]), with the same
//! [`SessionFactory`]: one core per session, each with its own [`AcpV2SessionHost`].
//!
//! A prompt is answered once its user message is inserted (its `messageId`); the run goes on
//! and reports itself through `state_update`. A prompt sent while a run works is held until
//! that run reported `idle`, then inserted as a run of its own; `session/cancel` and
//! `session/close` cancel held prompts (-32800). `session/close` answers after the cancelled run
//! reported `idle`. Closing or deleting a session that does not exist succeeds, as the spec
//! asks.
//!
//! From the unstable schema, where the factory keeps sessions as files: `session/fork` copies
//! the stored source into a new live session (the core's `clone_session`), `session/set_title`
//! names a session, live or stored (the core's `set_session_name`, saved in its file), and each
//! run's `idle` carries the tokens it used (`usage`).

use std::sync::Arc;

use super::{lock, AcpV2SessionHost};
use crate::core::events::RunOutcome;
use crate::core::{AgentCore, Capabilities, Host, Submitted};
use crate::dialect::acp::handler::{absolute, core_error, not_found};
use crate::dialect::acp::{auth, compat, config};
use crate::jsonrpc::Error;
use crate::protocol::acp_v2::*;

/// One live session.
type Live<A> = crate::dialect::acp::front::Live<A, AcpV2SessionHost>;

/// ACP v2's projection of the front: its session host; nothing else per connection.
#[derive(Debug)]
pub enum V2 {}

impl crate::dialect::acp::front::Projection for V2 {
    const NAME: &'static str = "AcpV2Server";
    type Host = AcpV2SessionHost;
    type Extra = ();
    type Side = super::AcpV2AgentSide;

    fn notified<A: AgentCore>(front: &AcpV2Server<A>, notification: AcpAgentNotification) {
        super::serve::route_notification(front, notification);
    }
}

/// The ACP v2 agent: the connection, the session factory and the live sessions.
pub type AcpV2Server<A> = crate::dialect::acp::front::Front<V2, A>;

/// v1's config options in v2's shape (v2 names the id `configId`).
fn config_options(agent: &impl AgentCore) -> Vec<SessionConfigOption> {
    config::options(agent).iter().filter_map(compat::config_option).collect()
}

/// The session's slash commands; those that take text carry it as their `input` hint.
fn commands(agent: &impl AgentCore) -> Vec<AvailableCommand> {
    agent
        .commands()
        .commands
        .into_iter()
        .map(|c| {
            let input = c.input.and_then(|i| i.hint).map(|hint| AvailableCommandInput::Text { hint, meta: None });
            AvailableCommand::Command { description: c.description.clone().unwrap_or_default(), input, meta: None, name: c.name.to_string() }
        })
        .collect()
}

/// The MCP servers of a v2 request as the core's configs.
fn mcp_configs(servers: &[McpServer]) -> Result<Vec<crate::core::mcp::McpServerConfig>, Error> {
    crate::dialect::acp::mcp_configs(&compat::mcp_servers_v1(servers)?)
}

impl<A: AgentCore> AcpV2Server<A> {
    fn can(&self) -> Capabilities {
        self.factory.capabilities()
    }

    fn live(&self, session: &str) -> Result<Live<A>, Error> {
        self.session(session).ok_or_else(|| not_found(session))
    }

    /// `session/cancel`: cancels the session's foreground run (it reports `idle`, `cancelled`).
    pub fn cancel(&self, session: &str) {
        match self.live(session) {
            Ok(live) => {
                live.host.cancel_held();
                live.agent.cancel_now();
            }
            Err(_) => tracing::warn!("session/cancel for an unknown session {session}"),
        }
    }

    fn open(&self, cwd: &std::path::Path, resume: Option<&std::path::Path>) -> Result<Live<A>, Error> {
        let live = self.build(cwd, resume, AcpV2SessionHost::new(self.conn.clone()))?;
        self.register(&live);
        Ok(live)
    }

    /// A session's agent and host, not yet live on the connection.
    fn build(&self, cwd: &std::path::Path, resume: Option<&std::path::Path>, host: AcpV2SessionHost) -> Result<Live<A>, Error> {
        let host = Arc::new(host);
        let agent = Arc::new(self.factory.create(cwd, resume, Host::new(host.clone(), host.clone())).map_err(Error::internal)?);
        *lock(&host.cwd) = Some(cwd.to_path_buf());
        *lock(&host.context_window) = agent.current_model().map(|m| m.context_window);
        Ok(Live { agent, host })
    }

    /// Makes a built session live under the id its agent has now.
    fn register(&self, live: &Live<A>) {
        let id = live.agent.session_id();
        *lock(&live.host.session_id) = id.clone();
        lock(&self.sessions).insert(id, live.clone());
    }

    /// The stored file of `session`: a live session's own (it writes its entries as they come),
    /// else the one the factory finds.
    fn stored(&self, session: &str, cwd: Option<&std::path::Path>) -> Result<std::path::PathBuf, Error> {
        let live = lock(&self.sessions).get(session).and_then(|l| l.agent.session_path()).filter(|p| p.exists());
        live.or_else(|| self.factory.find_session_file(session, cwd)).ok_or_else(|| not_found(session))
    }

    /// Ends a live session: its run is cancelled and has reported `idle` when this returns.
    async fn end(&self, session: &str) -> Option<Live<A>> {
        self.end_with(session, |live| {
            live.host.cancel_held();
            lock(&live.host.state).idle.clone()
        })
        .await
    }

    /// Connects the session's MCP servers; a notice for each that did not start follows the
    /// answer of the request that named them (before it, the host could not tie the notice's
    /// session id to a session).
    async fn connect_mcp(&self, live: &Live<A>, configs: &[crate::core::mcp::McpServerConfig]) {
        let failures = live.agent.start_mcp(configs, self.factory.mcp_startup_timeout()).await;
        if failures.is_empty() {
            return;
        }
        let answered = self.conn.after_answer();
        let host = live.host.clone();
        tokio::spawn(async move {
            let _ = answered.await;
            for failure in failures {
                host.notice("warning", &format!("MCP server \"{}\" did not start\n{}", failure.server, failure.reason)).await;
            }
        });
    }

    /// The prompt's run, once started: reports `idle` with its stop reason when it ends.
    fn report_end(&self, live: &Live<A>, mut prompt: crate::core::Prompt) {
        let (idle, idle_rx) = tokio::sync::watch::channel(false);
        lock(&live.host.state).idle = Some(idle_rx);
        let live = live.clone();
        let answered = self.conn.after_answer();
        tokio::spawn(async move {
            // The work starts once the prompt's answer (its message id) is queued.
            let _ = answered.await;
            prompt.start();
            let outcome = prompt.outcome().await;
            let hit_length = lock(&live.host.state).hit_length;
            let (reason, error) = match outcome {
                Some(RunOutcome::Completed) if hit_length => ("max_tokens", None),
                Some(RunOutcome::Completed) => ("end_turn", None),
                Some(RunOutcome::StepLimit { .. }) => ("max_turn_requests", None),
                Some(RunOutcome::Aborted) => ("cancelled", None),
                Some(RunOutcome::Failed(e)) => ("error", compat::error(&auth::prompt_failure(&e))),
                None => ("error", compat::error(&Error::internal("The prompt ended without an outcome"))),
            };
            // The tokens of this run only (the unstable schema's `usage`: not cumulative).
            let usage = lock(&live.host.state).run_usage.take().map(super::RunUsage::usage);
            live.host.state_with_usage("idle", Some(reason), error, usage).await;
            let _ = idle.send(true);
        });
    }
}

impl<A: AgentCore> AcpAgentHandler for AcpV2Server<A> {
    async fn initialize(&self, params: InitializeRequest) -> Result<InitializeResponse, Error> {
        if params.protocol_version.0 < ACP_V2_PROTOCOL_VERSION {
            // A repeated `initialize` asking for v1 on a connection that negotiated v2.
            let data = serde_json::json!({"requested": params.protocol_version.0, "supported": [1, 2]});
            return Err(Error::new(-32022, "Unsupported protocol version: this connection speaks ACP v2; reconnect and ask for version 1").with_data(data));
        }
        let can = self.can();
        let terminal_auth = params.capabilities.auth.as_ref().is_some_and(|a| a.terminal.is_some());
        let mut prompt = PromptCapabilities::new().with_embedded_context(PromptEmbeddedContextCapabilities::new());
        if can.images {
            prompt = prompt.with_image(PromptImageCapabilities::new());
        }
        let mut session = SessionCapabilities::new().with_prompt(prompt);
        // MCP only where the agent connects the servers it is handed (an rpc or wire agent
        // behind the bridge does not).
        if can.mcp {
            session = session.with_mcp(McpCapabilities::new().with_stdio(McpStdioCapabilities::new()).with_http(McpHttpCapabilities::new()));
        }
        if can.sessions {
            session = session.with_delete(SessionDeleteCapabilities::new());
        }
        // The unstable schema's `fork` and `title`: where a stored session can be loaded and
        // cloned (the core's `clone_session`) or named (its `set_session_name`, saved in the file).
        if can.fork {
            session = session.with_fork(SessionForkCapabilities::new());
        }
        if can.titles {
            session = session.with_title(SessionTitleCapabilities::new());
        }
        if can.additional_directories {
            session = session.with_additional_directories(SessionAdditionalDirectoriesCapabilities::new());
        }
        let capabilities = AgentCapabilities::new().with_session(session);
        let auth_methods: Vec<AuthMethod> = if can.auth {
            auth::methods(terminal_auth).iter().filter_map(compat::auth_method).collect()
        } else {
            // The methods of the agent behind, if it has any.
            self.factory.agent_auth_methods().into_iter().map(|m| AuthMethod::Agent { description: m.description, meta: None, method_id: AuthMethodId(m.id), name: m.name }).collect()
        };
        let info = Implementation::new(self.info.name.clone(), self.info.version.clone()).with_title(self.info.name.clone());
        let mut response = InitializeResponse::new(info, ProtocolVersion(ACP_V2_PROTOCOL_VERSION));
        response.capabilities = capabilities;
        response.auth_methods = auth_methods;
        Ok(response)
    }

    async fn auth_login(&self, params: LoginAuthRequest) -> Result<LoginAuthResponse, Error> {
        self.authenticate_with("auth/login", &params.method_id.0).await.map(|()| LoginAuthResponse::new())
    }

    /// v2 asks for `auth/logout` wherever `authMethods` is not empty; an agent behind that
    /// cannot log out refuses it (-32601, naming what it lacks).
    async fn auth_logout(&self, _params: LogoutAuthRequest) -> Result<LogoutAuthResponse, Error> {
        self.logout_with("auth/logout", !self.factory.agent_auth_methods().is_empty()).await.map(|()| LogoutAuthResponse::new())
    }

    async fn session_new(&self, params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let cwd = absolute(&params.cwd.0)?;
        let roots = params.additional_directories.iter().map(|d| absolute(&d.0)).collect::<Result<Vec<_>, _>>()?;
        let servers = mcp_configs(&params.mcp_servers)?;
        let live = self.open(&cwd, None)?;
        let id = live.agent.session_id();
        let saved = live.agent.set_additional_roots(roots).map_err(core_error).and_then(|()| live.agent.save_session().map_err(|e| Error::internal(e.to_string())));
        if let Err(e) = saved {
            lock(&self.sessions).remove(&id);
            return Err(e);
        }
        self.connect_mcp(&live, &servers).await;
        let mut response = NewSessionResponse::new(SessionId(id));
        response.config_options = config_options(&*live.agent);
        response.available_commands = commands(&*live.agent);
        Ok(response)
    }

    async fn session_list(&self, params: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        if !self.can().sessions {
            return Ok(ListSessionsResponse::new(Vec::new()));
        }
        let cwd = params.cwd.as_ref().map(|c| absolute(&c.0)).transpose()?;
        Ok(ListSessionsResponse::new(compat::session_infos(&self.stored_sessions(cwd).await?)))
    }

    async fn session_resume(&self, params: ResumeSessionRequest) -> Result<ResumeSessionResponse, Error> {
        let session = params.session_id.0.clone();
        let cwd = absolute(&params.cwd.0)?;
        let roots = params.additional_directories.iter().map(|d| absolute(&d.0)).collect::<Result<Vec<_>, _>>()?;
        let servers = mcp_configs(&params.mcp_servers)?;
        let open = self.session(&session);
        let live = match open {
            Some(live) if live.agent.is_running() => return Err(Error::internal("The session is running a prompt; cancel it first")),
            Some(live) => live,
            None if self.can().sessions => {
                let path = self.factory.find_session_file(&session, Some(&cwd)).ok_or_else(|| not_found(&session))?;
                self.open(&cwd, Some(&path))?
            }
            None => return Err(not_found(&session)),
        };
        live.agent.set_additional_roots(roots).map_err(core_error)?;
        let messages = live.agent.messages().map_err(core_error)?;
        if params.replay_from.is_some() {
            live.host.replay(&messages).await;
        } else {
            let mut st = lock(&live.host.state);
            st.next_message = st.next_message.max(messages.len() as u64);
        }
        if let Some(title) = live.agent.session_name() {
            live.host.update(SessionUpdate::SessionInfoUpdate { meta: None, title: Some(title), updated_at: None }).await;
        }
        // Resume reports the session's current state.
        live.host.state("idle", None, None).await;
        self.connect_mcp(&live, &servers).await;
        let mut response = ResumeSessionResponse::new();
        response.config_options = config_options(&*live.agent);
        response.available_commands = commands(&*live.agent);
        Ok(response)
    }

    async fn session_close(&self, params: CloseSessionRequest) -> Result<CloseSessionResponse, Error> {
        // Closing a session that does not exist succeeds (the spec's SHOULD).
        self.end(&params.session_id.0).await;
        Ok(CloseSessionResponse::new())
    }

    async fn session_delete(&self, params: DeleteSessionRequest) -> Result<DeleteSessionResponse, Error> {
        let session = params.session_id.0;
        let live = self.end(&session).await;
        self.delete_file(&session, live.as_ref(), self.can().sessions)?;
        // A session that never existed is deleted already.
        Ok(DeleteSessionResponse::new())
    }

    async fn session_fork(&self, params: ForkSessionRequest) -> Result<ForkSessionResponse, Error> {
        if !self.can().fork {
            return Err(Error::method_not_found("This agent cannot fork sessions (it loads no stored session to copy): `session.fork` is not in its capabilities"));
        }
        if params.system_prompt.is_some() {
            return Err(Error::invalid_params("agentwire does not take a system prompt on session requests (no `session.systemPrompt` capability)").at("/systemPrompt", "not advertised"));
        }
        let source = params.session_id.0.clone();
        let cwd = absolute(&params.cwd.0)?;
        let roots = params.additional_directories.iter().map(|d| absolute(&d.0)).collect::<Result<Vec<_>, _>>()?;
        let servers = mcp_configs(&params.mcp_servers)?;
        let path = self.stored(&source, Some(&cwd))?;
        // The stored source, loaded into a new agent that copies it into a session of its own
        // (new id, the source recorded as its parent) and goes on there: the source's history,
        // then each its own way.
        let live = self.build(&cwd, Some(&path), AcpV2SessionHost::new(self.conn.clone()))?;
        let forked = async {
            live.agent.clone_session().await?;
            live.agent.set_additional_roots(roots)?;
            live.agent.save_session()
        };
        if let Err(e) = forked.await {
            live.agent.shutdown().await;
            return Err(core_error(e));
        }
        self.register(&live);
        // Live messages continue after the copied history's (ids are indexes).
        let history = live.agent.messages().map(|m| m.len() as u64).unwrap_or(0);
        {
            let mut st = lock(&live.host.state);
            st.next_message = st.next_message.max(history);
        }
        self.connect_mcp(&live, &servers).await;
        let mut response = ForkSessionResponse::new(SessionId(live.agent.session_id()));
        response.config_options = config_options(&*live.agent);
        response.available_commands = commands(&*live.agent);
        Ok(response)
    }

    async fn session_set_title(&self, params: SetSessionTitleRequest) -> Result<SetSessionTitleResponse, Error> {
        if !self.can().titles {
            return Err(Error::method_not_found("This agent cannot retitle sessions (it keeps no stored session to name): `session.title` is not in its capabilities"));
        }
        // Normalized by trimming; the core saves it in the session file.
        let title = params.title.trim().to_owned();
        if title.is_empty() {
            return Err(Error::invalid_params("The title is empty").at("/title", "empty after trimming whitespace"));
        }
        let session = params.session_id.0;
        let open = self.session(&session);
        match open {
            // A live session also tells the client (`session_info_update`).
            Some(live) => live.agent.set_session_name(&title).await.map_err(core_error)?,
            None => {
                // Any stored session can be retitled: opened for the change, quietly (the client
                // did not make it active), and let go.
                let path = self.stored(&session, None)?;
                let factory = self.factory.clone();
                let id = session.clone();
                let listed = tokio::task::spawn_blocking(move || factory.list_sessions(None).into_iter().find(|s| s.session_id.0 == id)).await.map_err(|e| Error::internal(format!("reading the sessions failed: {e}")))?;
                let cwd = listed.map(|s| std::path::PathBuf::from(s.cwd)).ok_or_else(|| not_found(&session))?;
                let live = self.build(&cwd, Some(&path), AcpV2SessionHost::quiet(self.conn.clone()))?;
                let named = live.agent.set_session_name(&title).await;
                live.agent.shutdown().await;
                named.map_err(core_error)?;
            }
        }
        Ok(SetSessionTitleResponse::new(title))
    }

    async fn session_set_config_option(&self, params: SetSessionConfigOptionRequest) -> Result<SetSessionConfigOptionResponse, Error> {
        let (session, config_id, value) = match params {
            SetSessionConfigOptionRequest::Variant0 { config_id, session_id, value, .. } => (session_id, config_id, value),
            SetSessionConfigOptionRequest::Variant1 { config_id, .. } => {
                return Err(Error::invalid_params(format!("The config option {:?} is a select, not a boolean", config_id.0)).at("/type", "agentwire has no boolean config options"));
            }
        };
        let live = self.live(&session.0)?;
        let change = config::change(&*live.agent, &config_id.0, &value.0)?;
        config::apply(&*live.agent, &live.host.context_window, change).await?;
        Ok(SetSessionConfigOptionResponse::new(config_options(&*live.agent)))
    }

    async fn tool_call_cancel(&self, params: CancelToolCallRequest) -> Result<CancelToolCallResponse, Error> {
        self.live(&params.session_id.0)?;
        // No tool call advertises `capabilities.cancel`: a call is stopped with its run.
        Err(Error::invalid_params(format!("Tool call {} cannot be cancelled on its own (it does not advertise capabilities.cancel); send session/cancel", params.tool_call_id.0)).at("/toolCallId", "not cancellable"))
    }

    async fn session_prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        let live = self.live(&params.session_id.0)?;
        let v1_blocks = compat::content_blocks_v1(&params.prompt)?;
        let (text, images) = crate::dialect::acp::handler::prompt_input(&v1_blocks)?;
        let at = params.prompt.iter().position(|b| matches!(b, ContentBlock::Image { .. })).unwrap_or(0);
        crate::dialect::acp::images::check(&*live.agent, &images, at)?;
        // A prompt sent while the agent works is held (the SDK: "the agent inserts it right
        // away or holds it"): it is inserted as a run of its own once the runs before it have
        // reported `idle`, in the order the prompts came; `session/cancel` or `session/close`
        // cancels it meanwhile (-32800, never inserted).
        let hold = lock(&live.host.state).hold.clone();
        let cancelled = || Error::request_cancelled("The prompt was cancelled before it was inserted (session/cancel or session/close)");
        let _turn = tokio::select! {
            biased;
            () = hold.cancelled() => return Err(cancelled()),
            turn = live.host.admission.lock() => turn,
        };
        // The previous run's `idle` goes out before this prompt's `running`.
        let previous = lock(&live.host.state).idle.clone();
        let run_over = async {
            if let Some(mut idle) = previous {
                let _ = idle.wait_for(|idle| *idle).await;
            }
            live.agent.settled().await;
        };
        tokio::select! {
            biased;
            () = hold.cancelled() => return Err(cancelled()),
            () = run_over => {}
        }
        let message_id = live.host.next_message_id();
        let busy = || Error::internal("A run started in this session by other means is in progress; send session/cancel");
        let prompt = match live.agent.prompt(text, images, None).await {
            Ok(Submitted::Started(prompt) | Submitted::Handled(prompt)) => prompt,
            Ok(Submitted::Queued) => return Err(busy()),
            Err(e) => return Err(Error::internal(e.to_string())),
        };
        live.host.state("running", None, None).await;
        live.host.user_message(&message_id, params.prompt.clone()).await;
        self.report_end(&live, prompt);
        Ok(PromptResponse::new(MessageId(message_id)))
    }
}
