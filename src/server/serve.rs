//! Serving any [`AgentCore`] in any dialect over any `AsyncRead`/`AsyncWrite` (stdio included):
//! [`serve`] (and [`serve_with`] for limits and ACP's advertised capabilities).
//!
//! Like tower-lsp's `LspService::new(|client| Backend { client })`, the caller hands over a
//! function building its agent from the dialect's [`Host`] (where its events go and how it asks
//! the host): once for rpc and wire, once per session for ACP.
//!
//! The end of input means "no more requests", as for the `agentwire` process: every request read
//! is answered, every run goes on to its end, the output is flushed, and `serve` returns.
//! Signals and the process's exit code are the caller's (the `agentwire` binary's runner,
//! `crate::server::run_process`, adds them for the built-in agent).

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::core::{AgentCore, AgentInfo, Capabilities, Host, MakeAgent};
use crate::dialect::acp::{serve_acp, AcpServer, SessionFactory};
use crate::dialect::acp_v2::{serve_acp_v2, AcpV2Server};
use crate::dialect::acp_version::AcpVersion;
use crate::dialect::rpc::{serve_rpc, RpcHost, RpcSession};
use crate::dialect::wire::{serve_wire, WireHost, WireSession};
use crate::jsonrpc::Connection;
use crate::transport::spawn_writer;

pub use crate::protocol::Dialect;

/// Limits and advertisements of [`serve_with`]; the defaults are the `agentwire` binary's.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Longest accepted inbound line (`--max-line-bytes`).
    pub max_line_bytes: usize,
    /// Bytes of frames that may wait for a slow host before the agent pauses
    /// (`--max-outbound-bytes`).
    pub max_outbound_bytes: usize,
    /// What ACP's `initialize` advertises: it answers before any session (and so any agent)
    /// exists. Rpc and wire ask the agent itself ([`AgentCore::capabilities`]).
    pub acp_capabilities: Capabilities,
    /// The name and version the host is told (agentwire's own by default).
    pub info: AgentInfo,
    /// Which generation of the rpc dialect [`Dialect::Rpc`] speaks (the current one by default).
    pub rpc_profile: crate::dialect::rpc::RpcProfile,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_line_bytes: 16 * 1024 * 1024, max_outbound_bytes: crate::transport::writer::DEFAULT_OUTBOUND_BYTES, acp_capabilities: Capabilities::none(), info: AgentInfo::default(), rpc_profile: crate::dialect::rpc::RpcProfile::default() }
    }
}

impl ServeOptions {
    /// The same, advertising `capabilities` in ACP's `initialize`.
    #[must_use]
    pub fn with_acp_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.acp_capabilities = capabilities;
        self
    }

    /// The same, telling the host the agent is `info`.
    #[must_use]
    pub fn with_info(mut self, info: AgentInfo) -> Self {
        self.info = info;
        self
    }

    /// The same, speaking the rpc dialect's `profile`.
    #[must_use]
    pub fn with_rpc_profile(mut self, profile: crate::dialect::rpc::RpcProfile) -> Self {
        self.rpc_profile = profile;
        self
    }

    /// The same, with the longest accepted inbound line.
    #[must_use]
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }
}

/// Serves the agents `make` builds in `dialect`, reading requests from `input` and writing
/// frames to `output`, with the default [`ServeOptions`]. Returns once the input ended, every
/// request read was answered, every run settled and the output was flushed; `Err` when writing
/// the output failed.
pub async fn serve<M, R, W>(dialect: Dialect, make: M, input: R, output: W) -> std::io::Result<()>
where
    M: MakeAgent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(dialect, ServeOptions::default(), make, input, output).await
}

/// [`serve`] with the given limits and ACP advertisement.
pub async fn serve_with<M, R, W>(dialect: Dialect, options: ServeOptions, make: M, input: R, output: W) -> std::io::Result<()>
where
    M: MakeAgent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, writer) = spawn_writer(output, options.max_outbound_bytes);
    let input = tokio::io::BufReader::new(input);
    let max_line_bytes = options.max_line_bytes;
    match dialect {
        Dialect::Rpc => {
            let host = Arc::new(RpcHost::with_profile(out.clone(), options.rpc_profile));
            let agent = make.make(Host::new(host.clone(), host.clone())).map_err(std::io::Error::other)?;
            let session = RpcSession::new(agent, host, max_line_bytes).with_info(options.info);
            let _ = out.send(&session.ready_frame()).await;
            drop(out);
            serve_rpc(session.clone(), input, max_line_bytes).await;
            session.agent().settled().await;
        }
        Dialect::Wire => {
            let host = Arc::new(WireHost::new(out, None));
            let agent = make.make(Host::new(host.clone(), host.clone())).map_err(std::io::Error::other)?;
            let session = WireSession::new(agent, host).with_info(options.info);
            serve_wire(session.clone(), input, max_line_bytes).await;
            session.agent().settled().await;
        }
        Dialect::Acp => {
            let factory: Arc<dyn SessionFactory<M::Agent>> = Arc::new(Made { make, capabilities: options.acp_capabilities });
            let conn = Arc::new(Connection::new(out));
            // The connection's `initialize` picks the version.
            let agents = match crate::dialect::acp_version::route(input, max_line_bytes).await {
                (AcpVersion::V1, input) => {
                    let server = AcpServer::new(conn, factory).with_info(options.info);
                    serve_acp(&server, input, max_line_bytes).await;
                    server.agents()
                }
                (AcpVersion::V2, input) => {
                    let server = AcpV2Server::new(conn, factory).with_info(options.info);
                    serve_acp_v2(&server, input, max_line_bytes).await;
                    server.agents()
                }
            };
            futures_util::future::join_all(agents.iter().map(|a| a.settled())).await;
        }
    }
    // Every frame is queued once the agents and the hosts holding the outbox are gone; the
    // writer then drains and ends.
    writer.await.map_err(std::io::Error::other)?.map(drop)
}

/// ACP sessions of agents built by a function.
struct Made<F> {
    make: F,
    capabilities: Capabilities,
}

impl<M: MakeAgent> SessionFactory<M::Agent> for Made<M> {
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: Host) -> Result<M::Agent, String> {
        // Loading is refused before a factory is asked (no `sessions` capability).
        if let Some(path) = resume {
            return Err(format!("this agent does not load session files ({})", path.display()));
        }
        self.make.make_in(host, cwd).map_err(|e| e.to_string())
    }

    fn capabilities(&self) -> Capabilities {
        // No session is loaded from a file (`create` refuses one): nothing to fork or retitle.
        Capabilities { sessions: false, fork: false, titles: false, auth: false, ..self.capabilities.clone() }
    }

    fn find_session_file(&self, _session: &str, _cwd: Option<&Path>) -> Option<std::path::PathBuf> {
        None
    }

    fn list_sessions(&self, _cwd: Option<&Path>) -> Vec<crate::protocol::acp::SessionInfo> {
        Vec::new()
    }

    fn provider_configured(&self) -> bool {
        false
    }

    fn forget_stored_keys(&self) -> std::io::Result<bool> {
        Ok(false)
    }

    fn mcp_startup_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }

    fn agent_auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        self.make.auth_methods()
    }

    fn agent_authenticate<'a>(&'a self, method: &'a str) -> crate::dialect::acp::AuthFuture<'a> {
        Box::pin(self.make.authenticate(method))
    }

    fn agent_can_logout(&self) -> bool {
        self.make.can_logout()
    }

    fn agent_logout(&self) -> crate::dialect::acp::AuthFuture<'_> {
        Box::pin(self.make.logout())
    }
}
