//! The generated [`AcpAgentHandler`] trait, implemented by mapping each ACP method onto the core.
//!
//! Each ACP session is one [`Agent`] (built by the process's [`SessionFactory`] for the
//! session's `cwd`) with its own [`AcpSessionHost`]; sessions live until the process ends.
//! Updates about a session that the client only learns of from an answer
//! (`available_commands_update` after `session/new`) are sent once that answer is queued.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::client_tools::ClientTools;
use super::{lock, modes, AcpSessionHost};
use crate::agent::events::RunOutcome;
use crate::agent::{Agent, Submitted};
use crate::jsonrpc::{Connection, Error};
use crate::protocol::acp::*;
use crate::protocol::ImageContent;

/// What the process provides to build sessions: an agent for a working directory (new, or
/// resuming a session file) and where session files are.
pub trait SessionFactory: Send + Sync {
    /// A new agent for `cwd` reporting to `host`, continuing the session file `resume` if given.
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: Arc<AcpSessionHost>) -> Result<Agent, String>;
    /// Directories holding session files: those of `cwd` first, then every other one (all of
    /// them when `cwd` is `None`).
    fn session_dirs(&self, cwd: Option<&Path>) -> Vec<PathBuf>;
    /// Whether the model the sessions start with accepts images.
    fn accepts_images(&self) -> bool;
    /// The largest session file read (`--max-session-bytes`): listings skip larger files.
    fn max_session_bytes(&self) -> u64;
    /// How long one MCP server may take to start (`--mcp-startup-timeout-ms`).
    fn mcp_startup_timeout(&self) -> std::time::Duration;
}

/// One live session.
#[derive(Debug, Clone)]
struct Live {
    agent: Agent,
    host: Arc<AcpSessionHost>,
}

/// The ACP agent: the connection, the session factory and the live sessions.
pub struct AcpServer {
    conn: Arc<Connection>,
    factory: Arc<dyn SessionFactory>,
    sessions: Mutex<HashMap<String, Live>>,
    /// `initialize`'s `clientCapabilities` (only `fs` and `terminal` are read).
    client: Mutex<Option<ClientCapabilities>>,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer").finish_non_exhaustive()
    }
}

fn not_found(session: &str) -> Error {
    Error::resource_not_found(format!("Session not found: {session}")).with_details([("sessionId", session)])
}

fn absolute(cwd: &str) -> Result<PathBuf, Error> {
    let path = PathBuf::from(cwd);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(Error::invalid_params(format!("cwd must be an absolute path: {cwd}")).with_details([("path", "/cwd"), ("reason", "not an absolute path")]))
    }
}

/// The prompt's text and images. Text resources are inlined with their URI; links are named.
fn prompt_input(blocks: &[ContentBlock]) -> Result<(String, Vec<ImageContent>), Error> {
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
                let path = format!("/prompt/{i}");
                return Err(Error::invalid_params("Audio prompts are not supported (promptCapabilities.audio is false)").with_details([("path", path.as_str()), ("reason", "audio is not supported")]));
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

impl AcpServer {
    /// A server on `conn` building sessions with `factory`.
    pub fn new(conn: Arc<Connection>, factory: Arc<dyn SessionFactory>) -> Self {
        Self { conn, factory, sessions: Mutex::new(HashMap::new()), client: Mutex::new(None) }
    }

    /// The connection (client responses go there).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Every live session's agent.
    pub fn agents(&self) -> Vec<Agent> {
        lock(&self.sessions).values().map(|l| l.agent.clone()).collect()
    }

    fn live(&self, session: &str) -> Result<Live, Error> {
        lock(&self.sessions).get(session).cloned().ok_or_else(|| not_found(session))
    }

    /// `session/cancel`: aborts the session's run (its prompt resolves `cancelled`, a pending
    /// permission request is withdrawn and rejects).
    pub fn cancel(&self, session: &str) {
        if let Ok(live) = self.live(session) {
            // Cancelled before the next line is read: a permission answer right behind the
            // notification must not let the tool run or the turn go on.
            live.agent.cancel_now();
            tokio::spawn(async move { live.agent.abort().await });
        } else {
            tracing::warn!("session/cancel for an unknown session {session}");
        }
    }

    /// Builds and registers a session; its commands are announced after the answer.
    fn open(&self, cwd: &Path, resume: Option<&Path>) -> Result<Live, Error> {
        let host = Arc::new(AcpSessionHost::new(self.conn.clone()));
        let agent = self.factory.create(cwd, resume, host.clone()).map_err(Error::internal)?;
        let id = agent.session_id();
        host.set_session_id(&id);
        *lock(&host.cwd) = Some(cwd.to_path_buf());
        *lock(&host.context_window) = Some(agent.current_model().context_window);
        let offered = match &*lock(&self.client) {
            Some(client) => ClientTools::offered(self.conn.clone(), id.clone(), client.fs.read_text_file, client.fs.write_text_file, client.terminal),
            None => None,
        };
        *lock(&host.tools) = offered.map(|t| Arc::new(t) as Arc<dyn crate::tools::host::HostTools>);
        let live = Live { agent, host };
        lock(&self.sessions).insert(id, live.clone());
        self.announce_commands(&live);
        Ok(live)
    }

    /// Connects the session's MCP servers (replacing those it had). Servers that cannot start
    /// are told to the client: before the answer when `before_answer` (load, resume: the client
    /// knows the session), else right after it (new: the answer introduces the session).
    async fn connect_mcp(&self, live: &Live, configs: &[crate::mcp::McpServerConfig], before_answer: bool) {
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

    fn announce_commands(&self, live: &Live) {
        let answered = self.conn.after_answer();
        let live = live.clone();
        tokio::spawn(async move {
            if !answered.await {
                return;
            }
            let available_commands = live
                .agent
                .commands()
                .commands
                .into_iter()
                .map(|c| AvailableCommand { description: c.description.clone().unwrap_or_default(), input: None, meta: None, name: c.name.to_string() })
                .collect();
            live.host.update(SessionUpdate::AvailableCommandsUpdate { available_commands, meta: None }).await;
        });
    }

    /// The session file of `session`, looked for in the directories of `cwd` first.
    fn find_session_file(&self, session: &str, cwd: &Path) -> Option<PathBuf> {
        self.factory
            .session_dirs(Some(cwd))
            .iter()
            .flat_map(|d| crate::sessions::files_in(d))
            .find(|p| {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                if !stem.ends_with(session) {
                    return false;
                }
                match crate::sessions::listing_limited(p, self.factory.max_session_bytes()) {
                    Some(l) => *l.id == *session,
                    // A file over the size limit is not read to check its id: it is found by
                    // its name (`<time>_<id>`), and loading it says that it is too large.
                    None => stem.strip_suffix(session).is_some_and(|rest| rest.ends_with('_')),
                }
            })
    }

    /// An open session or one loaded from its file.
    fn open_existing(&self, session: &str, cwd: &str) -> Result<Live, Error> {
        if let Ok(live) = self.live(session) {
            if live.agent.is_running() {
                return Err(Error::internal("The session is running a prompt; cancel it first"));
            }
            self.announce_commands(&live);
            return Ok(live);
        }
        let cwd = absolute(cwd)?;
        let path = self.find_session_file(session, &cwd).ok_or_else(|| not_found(session))?;
        self.open(&cwd, Some(&path))
    }
}

impl AcpAgentHandler for AcpServer {
    async fn initialize(&self, params: InitializeRequest) -> Result<InitializeResponse, Error> {
        *lock(&self.client) = Some(params.client_capabilities);
        Ok(InitializeResponse {
            agent_capabilities: AgentCapabilities {
                auth: Default::default(),
                load_session: true,
                // stdio and streamable HTTP through rmcp; it has no client for legacy SSE.
                mcp_capabilities: McpCapabilities { http: true, meta: None, sse: false },
                meta: None,
                prompt_capabilities: PromptCapabilities { audio: false, embedded_context: true, image: self.factory.accepts_images(), meta: None },
                session_capabilities: SessionCapabilities {
                    additional_directories: None,
                    close: None,
                    delete: None,
                    list: Some(SessionListCapabilities { meta: None }),
                    meta: None,
                    resume: Some(SessionResumeCapabilities { meta: None }),
                },
            },
            agent_info: Some(Implementation { meta: None, name: "agentwire".into(), title: Some("agentwire".into()), version: env!("CARGO_PKG_VERSION").into() }),
            auth_methods: Vec::new(),
            meta: None,
            protocol_version: ProtocolVersion(ACP_PROTOCOL_VERSION),
        })
    }

    async fn session_new(&self, params: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let cwd = absolute(&params.cwd)?;
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open(&cwd, None)?;
        self.connect_mcp(&live, &servers, false).await;
        Ok(NewSessionResponse { config_options: None, meta: None, modes: Some(modes::state(live.agent.approval_policy())), session_id: SessionId(live.agent.session_id()) })
    }

    async fn session_load(&self, params: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open_existing(&params.session_id, &params.cwd)?;
        // The whole history goes out before the answer, and so does news of a server that
        // could not start.
        live.host.replay(&live.agent.messages()).await;
        self.connect_mcp(&live, &servers, true).await;
        Ok(LoadSessionResponse { config_options: None, meta: None, modes: Some(modes::state(live.agent.approval_policy())) })
    }

    async fn session_list(&self, params: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let cwd = params.cwd.as_deref().map(absolute).transpose()?;
        let mut listings: Vec<_> = self.factory.session_dirs(cwd.as_deref()).iter().flat_map(|d| crate::sessions::files_in(d)).filter_map(|p| crate::sessions::listing_limited(&p, self.factory.max_session_bytes())).collect();
        if let Some(cwd) = &cwd {
            listings.retain(|l| Path::new(&l.cwd) == cwd.as_path());
        }
        listings.sort_by(|a, b| b.modified.cmp(&a.modified));
        let sessions = listings
            .into_iter()
            .map(|l| SessionInfo {
                additional_directories: Vec::new(),
                cwd: l.cwd.clone(),
                meta: None,
                session_id: SessionId(l.id.to_string()),
                title: l.name.clone().or_else(|| l.first_message.clone()),
                updated_at: Some(l.modified.clone()).filter(|m| !m.is_empty()),
            })
            .collect();
        Ok(ListSessionsResponse { meta: None, next_cursor: None, sessions })
    }

    async fn session_resume(&self, params: ResumeSessionRequest) -> Result<ResumeSessionResponse, Error> {
        let servers = super::mcp::configs(&params.mcp_servers)?;
        let live = self.open_existing(&params.session_id, &params.cwd)?;
        self.connect_mcp(&live, &servers, true).await;
        Ok(ResumeSessionResponse { config_options: None, meta: None, modes: Some(modes::state(live.agent.approval_policy())) })
    }

    async fn session_set_mode(&self, params: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let live = self.live(&params.session_id)?;
        live.agent.set_approval_policy(modes::policy(&params.mode_id)?);
        Ok(SetSessionModeResponse { meta: None })
    }

    async fn session_prompt(&self, params: PromptRequest) -> Result<PromptResponse, Error> {
        let live = self.live(&params.session_id)?;
        let (text, images) = prompt_input(&params.prompt)?;
        let busy = || Error::internal("A prompt is already running in this session; wait for it or send session/cancel");
        if live.agent.is_running() {
            return Err(busy());
        }
        let prompt = match live.agent.prompt(text, images, None).await {
            Ok(Submitted::Started(prompt)) => prompt,
            Ok(Submitted::Queued) => return Err(busy()),
            Err(e) => return Err(Error::internal(e.to_string())),
        };
        live.agent.release_gates();
        let outcome = prompt.outcome().await.ok_or_else(|| Error::internal("The prompt ended without an outcome"))?;
        let hit_length = lock(&live.host.state).hit_length;
        let stop_reason = match outcome {
            RunOutcome::Completed if hit_length => StopReason::MaxTokens,
            RunOutcome::Completed => StopReason::EndTurn,
            RunOutcome::StepLimit { .. } => StopReason::MaxTurnRequests,
            RunOutcome::Aborted => StopReason::Cancelled,
            RunOutcome::Failed(e) => return Err(Error::internal(e.message)),
        };
        Ok(PromptResponse { meta: None, stop_reason })
    }
}
