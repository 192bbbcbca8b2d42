//! The `agentwire` process: the built-in agent, built for the chosen dialect and served on
//! stdin/stdout with the process's signals, end of input and exit codes (see the module docs of
//! `crate::server`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::core::events::NoticeLevel;
use crate::core::port::UiNotice;
use crate::agent::{Agent, AgentConfig, ApprovalPolicy, Capabilities, EventSink, HostPort, RetryPolicy};
use crate::protocol::acp::{SessionId, SessionInfo};
use crate::dialect::rpc::{serve_rpc, RpcHost, RpcSession};
use crate::dialect::wire::{serve_wire, WireHost, WireSession};
use crate::dialect::acp::{serve_acp, AcpServer, SessionFactory};
use crate::dialect::acp_v2::{serve_acp_v2, AcpV2Server};
use crate::dialect::acp_version::AcpVersion;
use crate::providers::offline::OfflineModel;
use crate::sessions::Session;
use crate::transport::until::UntilCancelled;
use tokio_util::sync::CancellationToken;

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
fn initial_session(options: &ProcessOptions) -> Result<(Option<PathBuf>, Option<PathBuf>, Session), String> {
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

/// Reads the models and the session; `Err` is the exit code after the reason was printed.
fn prepare(options: &ProcessOptions) -> Result<Prepared, u8> {
    prepare_or_explain(options).map_err(|e| {
        tracing::error!("{e}");
        1
    })
}

/// [`prepare`], with the reason it failed.
fn prepare_or_explain(options: &ProcessOptions) -> Result<Prepared, String> {
    let mut selection = options.selection.clone();
    if let Some(path) = &options.model_script {
        match OfflineModel::from_script_file(path) {
            Ok(m) => selection.offline = Some(Arc::new(m)),
            Err(e) => return Err(format!("--model-script: {e}")),
        }
    }
    // A bad models file or an unknown --provider/--model is a startup error we were explicitly
    // pointed at: say so on stderr and exit 1.
    let catalogue = crate::providers::config::load(&selection).map_err(|e| e.to_string())?;
    let (session_dir, sessions_root, session) = initial_session(options).map_err(|e| format!("cannot resume the session: {e}"))?;
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
    fn build(self, host: Arc<impl EventSink + HostPort + 'static>) -> Agent {
        self.build_in(crate::core::Host::new(host.clone(), host))
    }

    fn build_in(self, host: crate::core::Host) -> Agent {
        Agent::new(self.config, self.catalogue, self.session, host.sink().clone(), host.port().clone())
    }
}

/// How long the end of input's final flush waits for a slow host to read what is left.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// From a signal to the exit: the process answers what was read, flushes and exits within this
/// (a host is promised 1.5 s; the rest is room for the runtime to stop).
const SIGNAL_EXIT: Duration = Duration::from_millis(1300);

/// Of [`SIGNAL_EXIT`], the part the cancelled work has to write its answers; the rest is for
/// the flush.
const SIGNAL_ANSWERS: Duration = Duration::from_millis(1000);

/// After `--eof-timeout` cancelled the work, or the host went away: how long the cancelled work
/// has to end before the process exits anyway.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// stdin as the serve loops read it, and the tokens the runner drives it by.
struct Input {
    /// Cancelled by the runner (a signal, `--eof-timeout`): the input ends for the serve loop
    /// even while a read of stdin is blocked.
    stop: CancellationToken,
    /// Cancelled when stdin itself ended (EOF or a read error): `--eof-timeout` counts from here.
    ended: CancellationToken,
}

impl Input {
    fn new() -> Self {
        Self { stop: CancellationToken::new(), ended: CancellationToken::new() }
    }

    /// stdin, ending when `stop` is cancelled and noting its own end.
    fn reader(&self) -> UntilCancelled<tokio::io::BufReader<crate::transport::stdio::Stdin>> {
        UntilCancelled::new(tokio::io::BufReader::with_capacity(64 * 1024, crate::transport::stdio::stdin()), self.stop.clone()).noting_end(self.ended.clone())
    }
}

/// Why the process stops waiting.
enum Ending {
    /// Everything asked is done (after stdin EOF): exit 0.
    Finished,
    /// A signal: exit 128+n.
    Signal(u8),
    /// `--eof-timeout` passed after stdin EOF.
    EofTimeout,
    /// stdout failed (EPIPE): nobody reads our answers any more.
    HostGone,
}

/// Cancels every agent's work ([`Agent::shutdown`]: the run aborted, `bash` process groups
/// terminated, later requests started cancelled).
async fn cancel_all(agents: Vec<Agent>) {
    futures_util::future::join_all(agents.iter().map(Agent::shutdown)).await;
}

/// The one process runner of all three dialects. `serve` is the dialect's
/// loop: it reads requests until its input ends and returns once every request it read is
/// answered. `agents` lists the agents whose runs the end of input waits for and whose work a
/// signal cancels. Returns the exit code:
/// - stdin EOF: the loop stops reading; every request read is answered, every run goes on to
///   its end (queued messages delivered), then the output is flushed: 0. `eof_timeout` bounds
///   that wait: past it, the work is cancelled as `abort` would, and answered.
/// - SIGINT / SIGTERM / SIGHUP: the input ends (even while a read is blocked), the work is
///   cancelled and answered in the dialect's terms, the output flushed: 130 / 143 / 129 within
///   [`SIGNAL_EXIT`].
/// - stdout fails or its pipe reports an error (the host is gone): the work is cancelled, child
///   process groups stopped: 0.
async fn run_process(
    agents: impl Fn() -> Vec<Agent>,
    serve: impl std::future::Future<Output = ()>,
    writer: tokio::task::JoinHandle<std::io::Result<u64>>,
    input: Input,
    eof_timeout: Option<Duration>,
) -> u8 {
    let mut writer = writer;
    let host_gone = crate::transport::hangup::watch_stdout_hangup();
    // Everything asked is done: each request read answered, then each run ended.
    // Boxed so it can be dropped (with the session it owns) before the final flush.
    let mut finished = Box::pin(async {
        serve.await;
        futures_util::future::join_all(agents().iter().map(Agent::settled)).await;
        // Nothing is left to ask them: the MCP servers go before the process does.
        futures_util::future::join_all(agents().iter().map(Agent::close_mcp)).await;
    });
    let eof_expired = async {
        input.ended.cancelled().await;
        match eof_timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let ending = tokio::select! {
        biased;
        code = signalled() => Ending::Signal(code),
        _ = &mut writer => Ending::HostGone,
        () = host_gone.cancelled() => Ending::HostGone,
        () = &mut finished => Ending::Finished,
        () = eof_expired => Ending::EofTimeout,
    };
    let now = tokio::time::Instant::now();
    let (code, flush_by) = match ending {
        Ending::Finished => (0, now + FLUSH_GRACE),
        Ending::Signal(code) => {
            // The input ends even while a read of stdin is blocked; the cancelled work answers.
            input.stop.cancel();
            let answered = async {
                cancel_all(agents()).await;
                (&mut finished).await;
            };
            let _ = tokio::time::timeout_at(now + SIGNAL_ANSWERS, answered).await;
            (code, now + SIGNAL_EXIT)
        }
        Ending::EofTimeout => {
            tracing::info!("--eof-timeout passed after stdin EOF: cancelling what is still running");
            let answered = async {
                cancel_all(agents()).await;
                (&mut finished).await;
            };
            let _ = tokio::time::timeout(CANCEL_GRACE, answered).await;
            (0, tokio::time::Instant::now() + FLUSH_GRACE)
        }
        Ending::HostGone => {
            // Nobody can read an answer: stop the work (child process groups included) and go.
            let _ = tokio::time::timeout(CANCEL_GRACE, cancel_all(agents())).await;
            return 0;
        }
    };
    // The agents and the session hold the dialect's outbox: once they are gone, the writer
    // drains and ends.
    drop(finished);
    drop(agents);
    let _ = tokio::time::timeout_at(flush_by, writer).await;
    code
}

/// Connects the servers of `--mcp-config` (rpc and wire). A config file that cannot be read or
/// is malformed, and a server that cannot start, are logged and returned for the dialect to
/// tell its host; the agent works on without them.
async fn start_mcp_servers(agent: &Agent, options: &ProcessOptions) -> Vec<(NoticeLevel, String)> {
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
    let prepared = match prepare(&options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (out, writer) = crate::transport::stdio::spawn_stdout_writer(options.max_outbound_bytes);
    let host = Arc::new(RpcHost::with_profile(out.clone(), options.rpc_profile));
    let agent = prepared.build(host.clone());
    let session = RpcSession::new(agent.clone(), host, options.max_line_bytes);
    let _ = out.send(&session.ready_frame()).await;
    drop(out);
    // Commands sent meanwhile wait in stdin: the first prompt already sees the servers' tools.
    for (level, message) in start_mcp_servers(&agent, &options).await {
        agent.notice(level, message).await;
    }
    let input = Input::new();
    let serve = serve_rpc(session, input.reader(), options.max_line_bytes);
    run_process(move || vec![agent.clone()], serve, writer, input, options.eof_timeout).await
}

/// Runs `agentwire --mode wire` on stdin/stdout; returns the exit code.
pub async fn run_wire_process(options: ProcessOptions) -> u8 {
    let prepared = match prepare(&options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (out, writer) = crate::transport::stdio::spawn_stdout_writer(options.max_outbound_bytes);
    let host = Arc::new(WireHost::new(out, prepared.session.path().map(Path::to_path_buf)));
    let agent = prepared.build(host.clone());
    // The wire's own notices are `Notification` events.
    for (level, message) in start_mcp_servers(&agent, &options).await {
        host.notify(UiNotice::Notify { level, message }).await;
    }
    let session = WireSession::new(agent.clone(), host);
    let input = Input::new();
    let serve = serve_wire(session, input.reader(), options.max_line_bytes);
    run_process(move || vec![agent.clone()], serve, writer, input, options.eof_timeout).await
}

/// Builds one agent per ACP session, for the session's working directory.
struct AcpSessions {
    /// The process's options, with the offline model's script already read (it plays on
    /// across sessions).
    options: ProcessOptions,
    accepts_images: bool,
}

impl AcpSessions {
    fn config_root(&self) -> Option<PathBuf> {
        crate::providers::config::config_dir(self.options.selection.config_dir.as_deref()).map(|d| d.join("sessions"))
    }
}

impl AcpSessions {
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

impl SessionFactory<Agent> for AcpSessions {
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: crate::core::Host) -> Result<Agent, String> {
        let mut options = self.options.clone();
        options.cwd = cwd.to_path_buf();
        options.sessions.resume = resume.map(Path::to_path_buf);
        options.sessions.continue_recent = false;
        Ok(prepare_or_explain(&options)?.build_in(host))
    }

    /// The session file of `session`, looked for in the directories of `cwd` first (in all of
    /// them without one).
    fn capabilities(&self) -> Capabilities {
        let mut can = Capabilities::none().with_images(self.accepts_images);
        (can.sessions, can.host_tools, can.dialogs, can.mcp, can.additional_directories, can.auth) = (true, true, true, true, true, true);
        // The built-in agent loads a stored session and clones or names it (`session/fork`,
        // `session/set_title`).
        (can.fork, can.titles) = (true, true);
        can.approval = Some(self.options.approval);
        can
    }

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
    // Startup problems (a bad models file, an unreadable script) exit 1 before any frame.
    let prepared = match prepare(&options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Any model the client can select (`session/set_config_option`) may be the one an image
    // prompt goes to; a prompt while the current one takes none is refused naming it.
    let accepts_images = prepared.catalogue.models.iter().any(|m| m.info.input.iter().any(|k| matches!(k, crate::protocol::InputKind::Image)));
    let mut options = options;
    if let Some(path) = options.model_script.take() {
        match OfflineModel::from_script_file(&path) {
            Ok(m) => options.selection.offline = Some(Arc::new(m)),
            Err(e) => {
                tracing::error!("--model-script: {e}");
                return 1;
            }
        }
    }
    let (out, writer) = crate::transport::stdio::spawn_stdout_writer(options.max_outbound_bytes);
    let conn = Arc::new(crate::jsonrpc::Connection::new(out));
    let (eof_timeout, max_line_bytes) = (options.eof_timeout, options.max_line_bytes);
    let factory: Arc<dyn SessionFactory<Agent>> = Arc::new(AcpSessions { options, accepts_images });
    drop(prepared);
    let input = Input::new();
    let reader = input.reader();
    // The connection's `initialize` picks the version; until then there are no sessions.
    let front: Arc<std::sync::OnceLock<AcpFront>> = Arc::default();
    let serving = front.clone();
    let serve = async move {
        match crate::dialect::acp_version::route(reader, max_line_bytes).await {
            (AcpVersion::V1, input) => {
                let server = serving.get_or_init(|| AcpFront::V1(AcpServer::new(conn, factory)));
                if let AcpFront::V1(server) = server {
                    serve_acp(server, input, max_line_bytes).await;
                }
            }
            (AcpVersion::V2, input) => {
                let server = serving.get_or_init(|| AcpFront::V2(AcpV2Server::new(conn, factory)));
                if let AcpFront::V2(server) = server {
                    serve_acp_v2(server, input, max_line_bytes).await;
                }
            }
        }
    };
    run_process(move || front.get().map(AcpFront::agents).unwrap_or_default(), serve, writer, input, eof_timeout).await
}

/// The ACP front a connection speaks.
enum AcpFront {
    V1(AcpServer<Agent>),
    V2(AcpV2Server<Agent>),
}

impl AcpFront {
    fn agents(&self) -> Vec<Agent> {
        let agents = match self {
            Self::V1(server) => server.agents(),
            Self::V2(server) => server.agents(),
        };
        agents.iter().map(|a| Agent::clone(a)).collect()
    }
}

/// The first of SIGINT, SIGTERM and SIGHUP, as the exit code it asks for (128+n).
async fn signalled() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
    }
}
