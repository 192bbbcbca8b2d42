//! The `agentwire` process: the built-in agent, built for the chosen dialect and served on
//! stdin/stdout with the process's signals, end of input and exit codes (see the module docs of
//! `crate::server`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::agent::{Agent, AgentConfig, ApprovalPolicy, Capabilities, RetryPolicy};
use crate::core::events::NoticeLevel;
use crate::core::{AgentCore, Host, SessionError, SessionFactory, StartFuture};
use crate::protocol::acp::{SessionId, SessionInfo};
use crate::providers::offline::OfflineModel;
use crate::sessions::Session;

use super::serve::{serve_sessions, Serving};
use super::served::ServedAgent;
use super::supervisor::Stdin;
use super::{Dialect, ServeOptions};

/// Options of the agent process, whichever dialect it speaks (`--mode rpc`, `wire`, `acp`).
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// Working directory for tools and `bash`.
    pub cwd: PathBuf,
    /// Longest accepted inbound line.
    pub max_line_bytes: usize,
    /// Bytes of frames that may wait for a slow host before senders block (`--max-outbound-bytes`).
    pub max_outbound_bytes: usize,
    /// Largest session file read (`--max-session-bytes`).
    pub max_session_bytes: u64,
    /// Script for the offline model.
    pub model_script: Option<PathBuf>,
    /// Which generation of the rpc dialect `--mode rpc` speaks (`--rpc-profile`).
    pub rpc_profile: crate::dialect::rpc::RpcProfile,
    /// Config dir, provider, model and API key selection.
    pub selection: crate::providers::config::Selection,
    /// Automatic retry of transient provider errors.
    pub retry: RetryPolicy,
    /// Approval policy.
    pub approval: ApprovalPolicy,
    /// How long approval dialogs wait.
    pub approval_timeout: Duration,
    /// How long a host tool call may wait for the host when its definition sets no `timeoutMs`.
    pub host_tool_timeout: Duration,
    /// Where sessions go.
    pub sessions: SessionOptions,
    /// When and how much to compact.
    pub compaction: crate::agent::compaction::CompactionPolicy,
    /// Model calls one run may make (`None`: no limit).
    pub max_steps_per_turn: Option<u32>,
    /// Thinking level to start with when the session has none saved (`--thinking`).
    pub thinking: Option<crate::protocol::ThinkingLevel>,
    /// How long stdin EOF waits for the work asked before it is cancelled (`--eof-timeout`);
    /// `None`: until it is done.
    pub eof_timeout: Option<Duration>,
    /// MCP servers for rpc and wire (`--mcp-config FILE`, read when the agent starts).
    pub mcp_config: Option<PathBuf>,
    /// How long one MCP server may take to start (`--mcp-startup-timeout-ms`).
    pub mcp_startup_timeout: Duration,
}

/// `--session-dir`, `--no-session`, `--session FILE`, `--continue`.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Put session files directly in this directory.
    pub dir: Option<PathBuf>,
    /// Keep the session in memory only.
    pub disabled: bool,
    /// Resume this session file.
    pub resume: Option<PathBuf>,
    /// Resume the most recent session of this working directory.
    pub continue_recent: bool,
}

/// The directory new sessions go to, the root for `list_sessions {scope:"all"}`, and the session
/// to start with.
fn initial_session(options: &ProcessOptions) -> Result<(Option<PathBuf>, Option<PathBuf>, Session), crate::sessions::SessionError> {
    let s = &options.sessions;
    let config_root = crate::providers::config::config_dir(options.selection.config_dir.as_deref()).map(|d| d.join("sessions"));
    let dir = if s.disabled {
        None
    } else if let Some(d) = &s.dir {
        Some(d.clone())
    } else {
        config_root.as_deref().map(|r| crate::sessions::cwd_dir(r, &options.cwd))
    };
    // With --session-dir, "all sessions" means the sibling directories of that directory.
    let root = match &s.dir {
        Some(d) => d.parent().map(Path::to_path_buf),
        None => config_root,
    };
    let resume = match (&s.resume, s.continue_recent, &dir) {
        (Some(path), _, _) => Some(options.cwd.join(path)),
        (None, true, Some(d)) => crate::sessions::files_in(d).into_iter().max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()),
        _ => None,
    };
    let session = match resume {
        Some(path) => {
            let (session, warnings) = Session::load_limited(&path, options.max_session_bytes)?;
            for w in warnings {
                tracing::warn!("{}:{}: {}", path.display(), w.line, w.reason);
            }
            session
        }
        None => Session::create(dir.as_deref(), &options.cwd, None),
    };
    Ok((dir, root, session))
}

/// What the agent needs before it is built: its configuration, models and session.
struct Prepared {
    config: AgentConfig,
    catalogue: crate::providers::config::Catalogue,
    session: Session,
}

/// Why the agent cannot start: said on stderr, and the process exits 1 before any frame (an
/// ACP session that cannot start is refused with it).
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `--model-script` cannot be read or parsed.
    #[error("--model-script: {0}")]
    ModelScript(crate::providers::offline::ScriptError),
    /// A bad models file, an unknown `--provider` or `--model`.
    #[error(transparent)]
    Models(crate::providers::config::ConfigError),
    /// The session to resume cannot be read.
    #[error("cannot resume the session: {0}")]
    Resume(crate::sessions::SessionError),
}

/// Reads the models and the session; `Err` is the exit code after the reason was printed.
fn prepare(options: &ProcessOptions) -> Result<Prepared, u8> {
    prepare_or_explain(options).map_err(|e| {
        tracing::error!("{e}");
        1
    })
}

/// [`prepare`], with the reason it failed.
fn prepare_or_explain(options: &ProcessOptions) -> Result<Prepared, StartupError> {
    let mut selection = options.selection.clone();
    if let Some(path) = &options.model_script {
        selection.offline = Some(Arc::new(OfflineModel::from_script_file(path).map_err(StartupError::ModelScript)?));
    }
    // A bad models file or an unknown --provider/--model is a startup error we were explicitly
    // pointed at: say so on stderr and exit 1.
    let catalogue = crate::providers::config::load(&selection).map_err(StartupError::Models)?;
    let (session_dir, sessions_root, session) = initial_session(options).map_err(StartupError::Resume)?;
    let config = AgentConfig {
        cwd: options.cwd.clone(),
        approval: options.approval,
        approval_timeout: options.approval_timeout,
        host_tool_timeout: options.host_tool_timeout,
        retry: options.retry,
        compaction: options.compaction,
        session_dir,
        sessions_root,
        max_steps_per_turn: options.max_steps_per_turn,
        max_session_bytes: options.max_session_bytes,
        thinking: options.thinking,
    };
    Ok(Prepared { config, catalogue, session })
}

impl Prepared {
    fn build_in(self, host: Host) -> Agent {
        Agent::new(self.config, self.catalogue, self.session, host.sink().clone(), host.port().clone())
    }
}

/// Connects the servers of `--mcp-config` (rpc and wire). A config file that cannot be read or
/// is malformed, and a server that cannot start, are logged and returned for the dialect to
/// tell its host; the agent works on without them.
async fn start_mcp_servers(agent: &impl AgentCore, options: &ProcessOptions) -> Vec<(NoticeLevel, String)> {
    let Some(path) = &options.mcp_config else { return Vec::new() };
    let configs = match crate::mcp::config::read_config_file(path) {
        Ok(configs) => configs,
        Err(e) => {
            let message = format!("--mcp-config: {e}; no MCP server is connected");
            tracing::warn!("{message}");
            return vec![(NoticeLevel::Error, message)];
        }
    };
    agent.start_mcp(&configs, options.mcp_startup_timeout).await.into_iter().map(|failure| (NoticeLevel::Warning, failure.to_string())).collect()
}

/// Runs `agentwire --mode rpc` on stdin/stdout; returns the exit code.
pub async fn run_rpc_process(options: ProcessOptions) -> u8 {
    run_one(Dialect::Rpc, options).await
}

/// Runs `agentwire --mode wire` on stdin/stdout; returns the exit code.
pub async fn run_wire_process(options: ProcessOptions) -> u8 {
    run_one(Dialect::Wire, options).await
}

/// rpc and wire: one agent, built before the first frame (a startup problem exits 1 first).
async fn run_one(dialect: Dialect, options: ProcessOptions) -> u8 {
    let prepared = match prepare(&options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let session_file = prepared.session.path().map(Path::to_path_buf);
    let sessions = BuiltinSessions { options, accepts_images: false, first: Mutex::new(Some(prepared)), session_file };
    serve_process(dialect, sessions).await
}

/// Serves the built-in agents `sessions` builds in `dialect` on stdin/stdout, under the
/// process's supervisor (signals, end of input, exit codes).
async fn serve_process(dialect: Dialect, sessions: BuiltinSessions) -> u8 {
    let options = &sessions.options;
    let (out, writer) = crate::transport::stdio::spawn_stdout_writer(options.max_outbound_bytes);
    let serve_options = ServeOptions::default().with_max_line_bytes(options.max_line_bytes).with_rpc_profile(options.rpc_profile);
    let eof_timeout = options.eof_timeout;
    let stdin = Stdin::new();
    let input = Box::new(stdin.reader());
    let serving: Arc<OnceLock<Serving<ServedAgent>>> = Arc::default();
    let served = serving.clone();
    let factory: Arc<dyn SessionFactory<ServedAgent>> = Arc::new(sessions);
    let finished = async move {
        if let Err(e) = serve_sessions(dialect, serve_options, factory, input, out, &served).await {
            tracing::error!("{e}");
        }
        // Nothing is left to ask them: the MCP servers go before the process does.
        if let Some(serving) = served.get() {
            futures_util::future::join_all(serving.agents().iter().map(|a| a.close_mcp())).await;
        }
    };
    // Every agent's work: the run aborted, `bash` process groups terminated, later requests
    // started cancelled.
    let cancel = move || {
        let serving = serving.clone();
        async move {
            if let Some(serving) = serving.get() {
                futures_util::future::join_all(serving.agents().iter().map(|a| a.shutdown())).await;
            }
        }
    };
    super::supervisor::run(finished, cancel, writer, stdin, eof_timeout).await
}

/// Builds the built-in agent: rpc's and wire's (prepared before the first frame), and one per
/// ACP session, for the session's working directory.
struct BuiltinSessions {
    /// The process's options; for ACP, with the offline model's script already read (it plays
    /// on across sessions).
    options: ProcessOptions,
    /// Whether a model the client can select takes images (ACP's `initialize` says).
    accepts_images: bool,
    /// rpc's and wire's agent, prepared before the first frame.
    first: Mutex<Option<Prepared>>,
    /// Its session file.
    session_file: Option<PathBuf>,
}

impl BuiltinSessions {
    fn config_root(&self) -> Option<PathBuf> {
        crate::providers::config::config_dir(self.options.selection.config_dir.as_deref()).map(|d| d.join("sessions"))
    }
}

impl BuiltinSessions {
    /// Directories holding session files: those of `cwd` first, then every other one (all of
    /// them when `cwd` is `None`).
    fn session_dirs(&self, cwd: Option<&Path>) -> Vec<PathBuf> {
        let s = &self.options.sessions;
        if s.disabled {
            return Vec::new();
        }
        let (first, root) = match &s.dir {
            Some(d) => (Some(d.clone()), d.parent().map(Path::to_path_buf)),
            None => {
                let root = self.config_root();
                (cwd.zip(root.as_deref()).map(|(c, r)| crate::sessions::cwd_dir(r, c)), root)
            }
        };
        let mut dirs: Vec<PathBuf> = first.into_iter().collect();
        if s.dir.is_none() || cwd.is_none() {
            let others = root.iter().flat_map(|r| std::fs::read_dir(r).into_iter().flatten().flatten()).map(|e| e.path()).filter(|p| p.is_dir());
            for d in others {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        dirs
    }

}

impl SessionFactory<ServedAgent> for BuiltinSessions {
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: Host) -> Result<ServedAgent, SessionError> {
        let mut options = self.options.clone();
        options.cwd = cwd.to_path_buf();
        options.sessions.resume = resume.map(Path::to_path_buf);
        options.sessions.continue_recent = false;
        let prepared = prepare_or_explain(&options).map_err(|e| SessionError::Startup(Box::new(e)))?;
        Ok(ServedAgent::Builtin(prepared.build_in(host)))
    }

    fn make(&self, host: Host) -> Result<ServedAgent, SessionError> {
        let first = self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        match first {
            Some(prepared) => Ok(ServedAgent::Builtin(prepared.build_in(host))),
            None => self.create(&self.options.cwd, None, host),
        }
    }

    fn session_file(&self) -> Option<PathBuf> {
        self.session_file.clone()
    }

    fn start<'a>(&'a self, agent: &'a ServedAgent) -> StartFuture<'a> {
        Box::pin(start_mcp_servers(agent, &self.options))
    }

    fn capabilities(&self) -> Capabilities {
        let mut can = Capabilities::none().with_images(self.accepts_images);
        (can.sessions, can.host_tools, can.dialogs, can.mcp, can.additional_directories, can.auth) = (true, true, true, true, true, true);
        // The built-in agent loads a stored session and clones or names it (`session/fork`,
        // `session/set_title`).
        (can.fork, can.titles) = (true, true);
        can.approval = Some(self.options.approval);
        can
    }

    /// The session file of `session`, looked for in the directories of `cwd` first (in all of
    /// them without one).
    fn find_session_file(&self, session: &str, cwd: Option<&Path>) -> Option<PathBuf> {
        self.session_dirs(cwd)
            .iter()
            .flat_map(|d| crate::sessions::files_in(d))
            .find(|p| {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                if !stem.ends_with(session) {
                    return false;
                }
                match crate::sessions::listing_limited(p, self.options.max_session_bytes) {
                    Some(l) => *l.id == *session,
                    // A file over the size limit is not read to check its id: it is found by
                    // its name (`<time>_<id>`), and loading it says that it is too large.
                    None => stem.strip_suffix(session).is_some_and(|rest| rest.ends_with('_')),
                }
            })
    }

    fn list_sessions(&self, cwd: Option<&Path>) -> Vec<SessionInfo> {
        let mut listings = crate::sessions::listings_in(&self.session_dirs(cwd), self.options.max_session_bytes);
        if let Some(cwd) = cwd {
            listings.retain(|l| Path::new(&l.cwd) == cwd);
        }
        listings.sort_by(|a, b| b.modified.cmp(&a.modified));
        listings
            .into_iter()
            .map(|l| {
                let info = SessionInfo::new(l.cwd.clone(), SessionId(l.id.to_string()));
                let info = match l.name.clone().or_else(|| l.first_message.clone()) {
                    Some(title) => info.with_title(title),
                    None => info,
                };
                match Some(l.modified.clone()).filter(|m| !m.is_empty()) {
                    Some(updated) => info.with_updated_at(updated),
                    None => info,
                }
            })
            .collect()
    }

    fn provider_configured(&self) -> bool {
        // The catalogue is read anew: keys stored or exported since the start count.
        crate::providers::config::load(&self.options.selection).is_ok_and(|c| c.models.iter().any(|m| m.api != crate::providers::Api::Offline))
    }

    fn forget_stored_keys(&self) -> std::io::Result<bool> {
        match crate::providers::config::config_dir(self.options.selection.config_dir.as_deref()) {
            Some(dir) => crate::providers::keys::forget(&dir),
            None => Ok(false),
        }
    }

    fn mcp_startup_timeout(&self) -> Duration {
        self.options.mcp_startup_timeout
    }
}

/// Runs `agentwire --mode acp` on stdin/stdout (no `ready` line: stdout carries only
/// JSON-RPC frames); returns the exit code.
pub async fn run_acp_process(options: ProcessOptions) -> u8 {
    // The script is read once, here: every session's agent shares the model it describes.
    let mut options = options;
    if let Some(path) = options.model_script.take() {
        match OfflineModel::from_script_file(&path) {
            Ok(m) => options.selection.offline = Some(Arc::new(m)),
            Err(e) => {
                tracing::error!("{}", StartupError::ModelScript(e));
                return 1;
            }
        }
    }
    // Startup problems (a bad models file, a session that cannot be resumed) exit 1 before any
    // frame.
    let prepared = match prepare(&options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Any model the client can select (`session/set_config_option`) may be the one an image
    // prompt goes to; a prompt while the current one takes none is refused naming it.
    let accepts_images = prepared.catalogue.models.iter().any(|m| m.info.input.iter().any(|k| matches!(k, crate::protocol::InputKind::Image)));
    drop(prepared);
    serve_process(Dialect::Acp, BuiltinSessions { options, accepts_images, first: Mutex::new(None), session_file: None }).await
}
