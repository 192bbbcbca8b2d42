//! MCP servers as a source of tools, through rmcp (the official Rust MCP SDK): start them
//! (stdio in a process group of its own, or streamable HTTP), list their tools, call them, and
//! shut them down. This layer sits beside `tools/`: it knows no agent and no dialect; the core
//! owns one [`McpServers`] per agent and the dialects only hand it [`McpServerConfig`]s.
//!
//! - Start-up is bounded: a server that cannot start, crashes or never answers `initialize`
//!   is given up after the bound ([`StartFailure`] says which and why) and holds nothing.
//! - Tools are offered as `mcp__<server>__<tool>` ([`exposed_name`]);
//!   `notifications/tools/list_changed` lists them again.
//! - A call maps the result ([`result`]) onto the core's tool output, reports
//!   `notifications/progress` as partial results, and on abort sends `notifications/cancelled`.
//! - [`McpServers::shutdown`] closes every connection and kills each stdio server's process
//!   group, so nothing a server started outlives the agent.

pub mod config;
mod result;

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProgressToken, ServerResult};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use config::{McpConfigError, McpServerConfig};
pub use crate::core::mcp::StartFailure;

use crate::protocol::{AgentToolResult, ToolInfo};
use crate::tools::{text_content, ToolOutput};

/// Default bound on one server's start-up (spawn or connect, `initialize`, the first
/// `tools/list`).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest tool name model APIs accept (OpenAI's function names).
const MAX_TOOL_NAME: usize = 64;

/// How long a closing server may take to exit on its own before its process group is killed.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Bound on listing a server's tools again after `notifications/tools/list_changed`.
const RELIST_TIMEOUT: Duration = Duration::from_secs(5);

/// Lines of a stdio server's stderr kept to explain why it failed.
const STDERR_LINES: usize = 5;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `mcp__<server>__<tool>`: characters outside `[A-Za-z0-9_-]` become `_`, cut to 64 characters.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect::<String>();
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(MAX_TOOL_NAME);
    name
}

/// One tool of a connected server, as offered to the model.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// Name, description and input schema as the model sees them (`mcp__<server>__<tool>`).
    pub info: ToolInfo,
    /// The server's name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The server's `readOnlyHint` annotation: the call changes nothing (a hint; it only
    /// decides whether to ask).
    pub read_only: bool,
}

/// What the rmcp client loop of one server shares with the manager: its tool list (replaced on
/// `list_changed`) and the running calls' progress channels by token.
#[derive(Debug)]
struct Shared {
    server: String,
    tools: Mutex<Vec<McpTool>>,
    progress: Mutex<HashMap<ProgressToken, tokio::sync::mpsc::Sender<String>>>,
    /// The server said its tools changed and they were not listed again since.
    stale: AtomicBool,
    /// Held while the tools are listed again, so a model request waits for a listing in flight.
    relisting: tokio::sync::Mutex<()>,
    /// How many times `tools` was replaced (see [`McpServers::tools_generation`]).
    generation: AtomicU64,
}

impl Shared {
    fn new(server: &str) -> Self {
        Self { server: server.to_owned(), tools: Mutex::new(Vec::new()), progress: Mutex::new(HashMap::new()), stale: AtomicBool::new(false), relisting: tokio::sync::Mutex::new(()), generation: AtomicU64::new(0) }
    }

    /// Lists the tools again if the server said they changed, or waits for a listing in flight
    /// (bounded: a server that does not answer keeps its old list).
    async fn relist_if_stale(&self, peer: &Peer<RoleClient>) {
        // The lock first: a listing in flight (started by the notification) is waited for.
        let _one_at_a_time = self.relisting.lock().await;
        if !self.stale.swap(false, Ordering::AcqRel) {
            return;
        }
        match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await {
            Ok(Ok(tools)) => self.set_tools(tools),
            Ok(Err(e)) => tracing::warn!("MCP server \"{}\": listing its tools again failed: {e}", self.server),
            Err(_) => tracing::warn!("MCP server \"{}\": no answer to tools/list within {}", self.server, humantime::format_duration(RELIST_TIMEOUT)),
        }
    }

    fn set_tools(&self, listed: Vec<rmcp::model::Tool>) {
        let mut tools: Vec<McpTool> = Vec::with_capacity(listed.len());
        for t in listed {
            let name = exposed_name(&self.server, &t.name);
            if tools.iter().any(|known| *known.info.name == name) {
                tracing::warn!("MCP server \"{}\": tool \"{}\" has the same name as another once cut to {name}; only the first is offered", self.server, t.name);
                continue;
            }
            let description = t.description.as_deref().or(t.title.as_deref()).unwrap_or_default().to_owned();
            tools.push(McpTool {
                info: ToolInfo { name: crate::protocol::nonempty(&name), description, parameters: (*t.input_schema).clone(), extra: Map::new() },
                server: self.server.clone(),
                tool: t.name.to_string(),
                read_only: t.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false),
            });
        }
        let mut current = lock(&self.tools);
        *current = tools;
        // Moved while the list is held: whoever reads the count before the list sees a new
        // count with (or after) the new list.
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// The rmcp client handler of one server.
#[derive(Debug, Clone)]
struct Client(Arc<Shared>);

impl ClientHandler for Client {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let Some(tx) = lock(&self.0.progress).get(&params.progress_token).cloned() else { return };
        let amount = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => params.progress.to_string(),
        };
        let line = match params.message {
            Some(message) => format!("{amount}: {message}"),
            None => amount,
        };
        // Progress is advisory: a full channel drops a line rather than stall the client loop.
        let _ = tx.try_send(line);
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // rmcp runs each notification in a task of its own, so the listing can be awaited here;
        // a model request meanwhile waits for it ([`McpServers::settle`]).
        self.0.stale.store(true, Ordering::Release);
        self.0.relist_if_stale(&context.peer).await;
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("agentwire", env!("CARGO_PKG_VERSION")))
    }
}

/// One connected server.
struct Connected {
    shared: Arc<Shared>,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Client>>>,
    /// The stdio server's process group (its pid: it leads the group).
    pgid: Option<u32>,
    /// The server's `tools.listChanged` capability.
    announces_list_changes: bool,
    /// The stdin of a watchdog that kills the process group should agentwire die without
    /// shutting the server down (told "done" on an orderly shutdown).
    watchdog: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
}

/// The MCP servers of one agent.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Connected>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.servers.iter().map(|s| &s.shared.server)).finish()
    }
}

impl McpServers {
    /// Connects every server concurrently, each within `bound`; `cwd` is where stdio servers
    /// run unless their entry says otherwise. Servers that fail are left out and reported.
    pub async fn start(configs: &[McpServerConfig], cwd: &Path, bound: Duration) -> (McpServers, Vec<StartFailure>) {
        let attempts = configs.iter().map(|config| async move {
            let stderr = Arc::new(Mutex::new(VecDeque::new()));
            let pgid = Arc::new(Mutex::new(None));
            let outcome = tokio::time::timeout(bound, connect(config, cwd, stderr.clone(), pgid.clone())).await;
            let reason = match outcome {
                Ok(Ok(connected)) => return Ok(connected),
                Ok(Err(reason)) => reason.to_string(),
                Err(_) => format!("no answer to initialize within {}", humantime::format_duration(bound)),
            };
            // Whatever it started goes with it (the dropped transport kills the child; its
            // children are in its group).
            if let Some(pgid) = *lock(&pgid) {
                kill_group(pgid);
            }
            let last = lock(&stderr).iter().rev().find(|l: &&String| !l.trim().is_empty()).cloned();
            let reason = match last {
                Some(line) => format!("{reason} (stderr: {line})"),
                None => reason,
            };
            let failure = StartFailure { server: config.name().to_owned(), reason };
            tracing::warn!("{failure}");
            Err(failure)
        });
        let mut servers = Vec::new();
        let mut failures = Vec::new();
        for outcome in futures_util::future::join_all(attempts).await {
            match outcome {
                Ok(server) => servers.push(server),
                Err(failure) => failures.push(failure),
            }
        }
        (McpServers { servers }, failures)
    }

    /// Waits until every server whose tools changed has listed them again, so the model is
    /// offered (and the run finds) the current tools.
    pub async fn settle(&self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.shared.relist_if_stale(&s.peer))).await;
    }

    /// Whether no server is connected.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The connected servers' names.
    pub fn names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.shared.server.clone()).collect()
    }

    /// Changes whenever a server's tool list is replaced, so a caller may keep what it built
    /// from [`McpServers::tools`] while this stays the same (read it before the tools).
    pub fn tools_generation(&self) -> u64 {
        self.servers.iter().map(|s| s.shared.generation.load(Ordering::Acquire)).fold(0, u64::wrapping_add)
    }

    /// Every tool of every connected server, as listed last.
    pub fn tools(&self) -> Vec<McpTool> {
        self.servers.iter().flat_map(|s| lock(&s.shared.tools).clone()).collect()
    }

    /// The tool offered as `name`.
    pub fn find(&self, name: &str) -> Option<McpTool> {
        self.servers.iter().find_map(|s| lock(&s.shared.tools).iter().find(|t| *t.info.name == *name).cloned())
    }

    /// Calls `tool` with `arguments`. Progress notifications go to `on_update` as partial
    /// results; `cancel`, or no answer within `timeout`, sends `notifications/cancelled` and
    /// ends the call at once. Every failure (the server's `isError`, a protocol error, a closed
    /// connection, a result that is not a tool result, no answer in time) is a failed call,
    /// never a panic.
    pub async fn call(&self, tool: &McpTool, arguments: &Map<String, Value>, cancel: &CancellationToken, timeout: Duration, mut on_update: impl FnMut(AgentToolResult)) -> ToolOutput {
        let Some(server) = self.servers.iter().find(|s| s.shared.server == tool.server) else {
            return ToolOutput::error(format!("MCP server \"{}\" is not connected", tool.server));
        };
        let mut params = CallToolRequestParams::new(tool.tool.clone());
        params.arguments = Some(arguments.clone());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = match server.peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await {
            Ok(handle) => handle,
            Err(e) => return ToolOutput::error(format!("MCP server \"{}\" could not be asked: {e}", tool.server)),
        };
        let (tx, mut progress) = tokio::sync::mpsc::channel(16);
        let token = handle.progress_token.clone();
        lock(&server.shared.progress).insert(token.clone(), tx);
        let mut lines: Vec<String> = Vec::new();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let answer = loop {
            tokio::select! {
                answer = &mut handle.rx => break Ok(answer),
                () = cancel.cancelled() => break Err("the user aborted the run"),
                () = &mut deadline => break Err("no answer in time"),
                Some(line) = progress.recv() => {
                    lines.push(line);
                    on_update(AgentToolResult { content: vec![text_content(lines.join("\n"))], details: None, structured_content: None });
                }
            }
        };
        lock(&server.shared.progress).remove(&token);
        // A server that announces tool list changes may have changed them during this call,
        // and its notification may still be on its way to `on_tool_list_changed` (rmcp runs
        // each in a task of its own): the next model request lists them again to be sure.
        if server.announces_list_changes {
            server.shared.stale.store(true, Ordering::Release);
        }
        let answer = match answer {
            Ok(answer) => answer,
            Err(reason) => {
                // The server is told, so it can stop the work; the call ends now either way.
                if let Err(e) = handle.cancel(Some(reason.to_owned())).await {
                    tracing::debug!("MCP server \"{}\": could not send notifications/cancelled: {e}", tool.server);
                }
                if cancel.is_cancelled() {
                    return ToolOutput::error(format!("{}: aborted", *tool.info.name));
                }
                return ToolOutput::error(format!("MCP server \"{}\" did not answer {} within {}", tool.server, tool.tool, humantime::format_duration(timeout)));
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => result::to_output(&tool.server, &tool.tool, result),
            Ok(Ok(_)) => ToolOutput::error(format!("MCP server \"{}\" answered {} with something that is not a tool result", tool.server, tool.tool)),
            Ok(Err(e)) => ToolOutput::error(format!("MCP server \"{}\": {}: {e}", tool.server, tool.tool)),
            Err(_) => ToolOutput::error(format!("MCP server \"{}\" closed the connection during {}", tool.server, tool.tool)),
        }
    }

    /// Closes every connection and kills every stdio server's process group (after a short
    /// grace to exit on its own). Idempotent.
    pub async fn shutdown(&self) {
        let closing = self.servers.iter().map(|server| async move {
            let running = server.service.lock().await.take();
            if let Some(mut running) = running {
                let _ = running.close_with_timeout(CLOSE_GRACE).await;
            }
            if let Some(pgid) = server.pgid {
                kill_group(pgid);
            }
            if let Some(mut watchdog) = server.watchdog.lock().await.take() {
                use tokio::io::AsyncWriteExt;
                let _ = watchdog.write_all(b"done\n").await;
            }
        });
        futures_util::future::join_all(closing).await;
    }
}

impl Drop for McpServers {
    /// A last resort when the agent goes without [`McpServers::shutdown`]: no server process
    /// group survives its owner.
    fn drop(&mut self) {
        for server in &self.servers {
            if let Some(pgid) = server.pgid {
                kill_group(pgid);
            }
        }
    }
}

/// SIGKILL to a whole process group (the server and whatever it started). A group that is
/// already gone is fine.
fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
    if pgid > 1 {
        // SAFETY: killpg has no memory effects; a stale group id fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Why one server could not be reached (the reason of its [`StartFailure`]).
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("cannot start {command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("header \"{name}\": {source}")]
    Header { name: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("initialize failed: {0}")]
    Initialize(rmcp::service::ClientInitializeError),
    #[error("initialize failed ({url}): {source}")]
    InitializeHttp { url: String, source: rmcp::service::ClientInitializeError },
    #[error("tools/list failed: {0}")]
    ListTools(rmcp::ServiceError),
}

/// Starts or reaches one server, says `initialize` and lists its tools.
async fn connect(config: &McpServerConfig, cwd: &Path, stderr: Arc<Mutex<VecDeque<String>>>, pgid_out: Arc<Mutex<Option<u32>>>) -> Result<Connected, ConnectError> {
    let shared = Arc::new(Shared::new(config.name()));
    let client = Client(shared.clone());
    let (running, pgid, watchdog) = match config {
        McpServerConfig::Stdio(s) => {
            let mut command = tokio::process::Command::new(&s.command);
            command.args(&s.args).envs(s.env.iter().map(|(k, v)| (k, v))).current_dir(s.cwd.as_deref().unwrap_or(cwd));
            // SAFETY: the closure runs in the forked child before exec and calls only prctl,
            // which is async-signal-safe. Should the agent die without shutting down (SIGKILL),
            // the kernel kills the server too; its own children go with its process group
            // on every orderly path.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
            wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
            let (process, err) = rmcp::transport::TokioChildProcess::builder(wrapped)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|source| ConnectError::Spawn { command: s.command.clone(), source })?;
            let pgid = process.id();
            *lock(&pgid_out) = pgid;
            // Even a SIGKILL of agentwire ends the server's whole group (PR_SET_PDEATHSIG ends
            // only the server itself); the same watchdog guards `bash` commands.
            let watchdog = pgid.and_then(crate::tools::shell::spawn_watchdog);
            if let Some(err) = err {
                tokio::spawn(keep_stderr(shared.server.clone(), err, stderr));
            }
            let running = client.serve(process).await.map_err(ConnectError::Initialize)?;
            (running, pgid, watchdog)
        }
        McpServerConfig::Http(h) => {
            let mut headers = HashMap::new();
            for (name, value) in &h.headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| ConnectError::Header { name: name.clone(), source: e.into() })?;
                let value = reqwest::header::HeaderValue::from_str(value).map_err(|e| ConnectError::Header { name: name.to_string(), source: e.into() })?;
                headers.insert(name, value);
            }
            let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(h.url.as_str()).custom_headers(headers);
            // rmcp's reqwest has no crypto provider of its own (Cargo.toml: ring, not aws-lc):
            // rustls uses the process default. `Err` only says one is installed already.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            let running = client.serve(transport).await.map_err(|source| ConnectError::InitializeHttp { url: h.url.to_string(), source })?;
            (running, None, None)
        }
    };
    let tools = running.peer().list_all_tools().await.map_err(ConnectError::ListTools)?;
    shared.set_tools(tools);
    let peer = running.peer().clone();
    let announces_list_changes = peer.peer_info().and_then(|info| info.capabilities.tools.as_ref().and_then(|t| t.list_changed)).unwrap_or(false);
    Ok(Connected { shared, peer, service: tokio::sync::Mutex::new(Some(running)), pgid, announces_list_changes, watchdog: tokio::sync::Mutex::new(watchdog) })
}

/// Logs a stdio server's stderr (debug) and keeps its last lines to explain a failure.
async fn keep_stderr(server: String, err: tokio::process::ChildStderr, keep: Arc<Mutex<VecDeque<String>>>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!("MCP server \"{server}\" stderr: {line}");
        let mut kept = lock(&keep);
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_cut() {
        assert_eq!(exposed_name("everything", "get-sum"), "mcp__everything__get-sum");
        assert_eq!(exposed_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        let long = exposed_name("s", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__s__xxx"));
    }
}
