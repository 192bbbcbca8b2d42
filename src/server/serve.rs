//! Serving any [`AgentCore`] in any dialect over any `AsyncRead`/`AsyncWrite` (stdio included):
//! [`serve`] (and [`serve_with`] for limits and ACP's advertised capabilities).
//!
//! Like tower-lsp's `LspService::new(|client| Backend { client })`, the caller hands over a
//! function building its agent from the dialect's [`Host`] (where its events go and how it asks
//! the host): once for rpc and wire, once per session for ACP.
//!
//! The end of input means "no more requests", as for the `agentwire` process: every request read
//! is answered, every run goes on to its end, the output is flushed, and `serve` returns.
//! Signals and the process's exit code are the caller's (the `agentwire` binary adds them with
//! [`crate::server::supervisor`]).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite};

use crate::core::port::UiNotice;
use crate::core::{AgentCore, AgentEvent, AgentInfo, AuthFuture, Capabilities, EventSink, Host, HostPort, MakeAgent, SessionError, SessionFactory};
use crate::dialect::acp::{serve_acp, AcpServer};
use crate::dialect::acp_v2::{serve_acp_v2, AcpV2Server};
use crate::dialect::acp_version::AcpVersion;
use crate::dialect::rpc::{serve_rpc, RpcHost, RpcSession};
use crate::dialect::wire::{serve_wire, WireHost, WireSession};
use crate::jsonrpc::Connection;
use crate::transport::{spawn_writer, Outbox};

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
    /// The ACP version, when the connection's first line was read already to choose it
    /// ([`acp_version`]); `None`: read it.
    pub(crate) acp_version: Option<AcpVersion>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_line_bytes: 16 * 1024 * 1024, max_outbound_bytes: crate::transport::writer::DEFAULT_OUTBOUND_BYTES, acp_capabilities: Capabilities::none(), info: AgentInfo::default(), rpc_profile: crate::dialect::rpc::RpcProfile::default(), acp_version: None }
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

    /// The same, serving ACP in `version`: the connection's first line was read already to
    /// choose it ([`acp_version`]).
    #[must_use]
    pub fn with_acp_version(mut self, version: AcpVersion) -> Self {
        self.acp_version = Some(version);
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
    let factory: Arc<dyn SessionFactory<M::Agent>> = Arc::new(Made { make, capabilities: options.acp_capabilities.clone() });
    let serving = OnceLock::new();
    let served = serve_sessions(dialect, options, factory, Box::new(tokio::io::BufReader::new(input)), out, &serving).await;
    // Every frame is queued once the agents and the hosts holding the outbox are gone; the
    // writer then drains and ends.
    drop(serving);
    served.map_err(std::io::Error::other)?;
    writer.await.map_err(std::io::Error::other)?.map(drop)
}

/// What a front reads its requests from.
pub type Input = Box<dyn AsyncBufRead + Unpin + Send>;

/// Reads the first line of an ACP connection: the version the connection is served in (its
/// `initialize` picks it, see [`crate::dialect::acp_version`]), that line, and the whole input
/// to serve. The one place the version is chosen: the fronts and the bridge ask here.
pub async fn acp_version(input: Input, max_line_bytes: usize) -> (AcpVersion, Vec<u8>, Input) {
    let (version, line, routed) = crate::dialect::acp_version::route_keeping(input, max_line_bytes).await;
    (version, line, Box::new(routed))
}

/// The one serve path: the agents `factory` builds, served in `dialect` on `input`, their
/// frames queued on `out`. What is served is set in `serving` as soon as it is (the process
/// cancels its work from there on a signal). Returns once the input ended, every request read
/// was answered and every run settled; `Err` when the agent of an rpc or wire connection could
/// not be built.
pub(crate) async fn serve_sessions<A: AgentCore>(dialect: Dialect, options: ServeOptions, factory: Arc<dyn SessionFactory<A>>, input: Input, out: Outbox, serving: &OnceLock<Serving<A>>) -> Result<(), SessionError> {
    let max_line_bytes = options.max_line_bytes;
    match dialect {
        Dialect::Rpc => {
            let host = Arc::new(RpcHost::with_profile(out.clone(), options.rpc_profile));
            let agent = factory.make(Host::new(host.clone(), host.clone()))?;
            let session = RpcSession::new(agent, host.clone(), max_line_bytes).with_info(options.info);
            let _ = out.send(&session.ready_frame()).await;
            drop(out);
            let _ = serving.set(Serving::Rpc(session.clone()));
            // Requests sent meanwhile wait in the input: the first prompt already sees what the
            // start brought (the MCP servers' tools).
            for (level, message) in factory.start(session.agent()).await {
                host.emit(AgentEvent::Notice { level, message }).await;
            }
            serve_rpc(session, input, max_line_bytes).await;
        }
        Dialect::Wire => {
            let host = Arc::new(WireHost::new(out, factory.session_file()));
            let agent = factory.make(Host::new(host.clone(), host.clone()))?;
            let session = WireSession::new(agent, host.clone()).with_info(options.info);
            let _ = serving.set(Serving::Wire(session.clone()));
            // The wire's own notices are `Notification` events.
            for (level, message) in factory.start(session.agent()).await {
                host.notify(UiNotice::Notify { level, message }).await;
            }
            serve_wire(session, input, max_line_bytes).await;
        }
        Dialect::Acp => {
            let conn = Arc::new(Connection::new(out));
            let (version, input) = match options.acp_version {
                Some(version) => (version, input),
                None => {
                    let (version, _, input) = acp_version(input, max_line_bytes).await;
                    (version, input)
                }
            };
            match version {
                AcpVersion::V1 => {
                    let server = Arc::new(AcpServer::new(conn, factory).with_info(options.info));
                    let _ = serving.set(Serving::AcpV1(server.clone()));
                    serve_acp(&server, input, max_line_bytes).await;
                }
                AcpVersion::V2 => {
                    let server = Arc::new(AcpV2Server::new(conn, factory).with_info(options.info));
                    let _ = serving.set(Serving::AcpV2(server.clone()));
                    serve_acp_v2(&server, input, max_line_bytes).await;
                }
            }
        }
    }
    if let Some(serving) = serving.get() {
        futures_util::future::join_all(serving.agents().iter().map(|a| a.settled())).await;
    }
    Ok(())
}

/// What a connection is served by, once its front is chosen: the agents it serves.
pub(crate) enum Serving<A> {
    Rpc(RpcSession<A>),
    Wire(WireSession<A>),
    AcpV1(Arc<AcpServer<A>>),
    AcpV2(Arc<AcpV2Server<A>>),
}

impl<A: AgentCore> Serving<A> {
    /// The agents served: the one of rpc and wire, ACP's live sessions'.
    pub(crate) fn agents(&self) -> Vec<AgentRef<'_, A>> {
        match self {
            Self::Rpc(session) => vec![AgentRef::Borrowed(session.agent())],
            Self::Wire(session) => vec![AgentRef::Borrowed(session.agent())],
            Self::AcpV1(server) => server.agents().into_iter().map(AgentRef::Shared).collect(),
            Self::AcpV2(server) => server.agents().into_iter().map(AgentRef::Shared).collect(),
        }
    }
}

/// An agent [`Serving`] lists: rpc's and wire's is the session's own, ACP's are shared.
pub(crate) enum AgentRef<'a, A> {
    Borrowed(&'a A),
    Shared(Arc<A>),
}

impl<A> std::ops::Deref for AgentRef<'_, A> {
    type Target = A;

    fn deref(&self) -> &A {
        match self {
            Self::Borrowed(a) => a,
            Self::Shared(a) => a,
        }
    }
}

/// ACP sessions of agents built by a function.
struct Made<F> {
    make: F,
    capabilities: Capabilities,
}

impl<M: MakeAgent> SessionFactory<M::Agent> for Made<M> {
    fn create(&self, cwd: &Path, resume: Option<&Path>, host: Host) -> Result<M::Agent, SessionError> {
        // Loading is refused before a factory is asked (no `sessions` capability).
        if let Some(path) = resume {
            return Err(SessionError::NoSessionFiles(path.to_path_buf()));
        }
        Ok(self.make.make_in(host, cwd)?)
    }

    fn make(&self, host: Host) -> Result<M::Agent, SessionError> {
        Ok(self.make.make(host)?)
    }

    fn capabilities(&self) -> Capabilities {
        // No session is loaded from a file (`create` refuses one): nothing to fork or retitle.
        Capabilities { sessions: false, fork: false, titles: false, auth: false, ..self.capabilities.clone() }
    }

    fn agent_auth_methods(&self) -> Vec<crate::core::AuthMethod> {
        self.make.auth_methods()
    }

    fn agent_authenticate<'a>(&'a self, method: &'a str) -> AuthFuture<'a> {
        Box::pin(self.make.authenticate(method))
    }

    fn agent_can_logout(&self) -> bool {
        self.make.can_logout()
    }

    fn agent_logout(&self) -> AuthFuture<'_> {
        Box::pin(self.make.logout())
    }
}
