//! `agentwire bridge --serve <dialect> [--agent-dialect <dialect>] [--record FILE] -- <agent
//! command…>`: one dialect to the host on stdio, an agent subprocess behind it (docs/bridge.md).
//!
//! Composition, with no code per pair of dialects: the agent is driven by its dialect's remote
//! agent (`crate::dialect::{rpc,wire,acp}::remote`), which implements the core, and the host
//! is served by the front of its dialect ([`crate::server::serve_with`]), as for the built-in
//! agent. An agent speaking the host's own dialect is proxied instead ([`proxy`]): its frames
//! pass unchanged, checked against the schema, and `--record` writes them as a conformance
//! transcript.
//!
//! Lifecycle: the agent runs in its own process group and dies with us
//! ([`crate::client::process`]). Host EOF → what was asked is finished (bounded), the agent's
//! input closes, it is waited for ([`crate::client::DEFAULT_EXIT_GRACE`]), then killed. SIGINT,
//! SIGTERM and SIGHUP are forwarded to its group; SIGTERM and SIGHUP also end our input. The
//! agent dying → every request in flight is answered with an error, and the bridge exits
//! non-zero.

pub mod proxy;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::BufReader;

use crate::core::{AgentInfo, Capabilities};
use crate::client::detect::{connect, first_answer, go_on, DetectError, FirstAnswer, Handshake, DETECT_TIMEOUT};
use crate::client::rpc::MAX_AGENT_LINE_BYTES;
use crate::client::{spawn_closable_writer, AgentProcess, Detected, Dialect, DEFAULT_EXIT_GRACE};
use crate::dialect::acp::remote::AcpAgents;
use crate::dialect::acp_v2::remote::AcpV2Agents;
use crate::dialect::acp_version::AcpVersion;
use crate::dialect::rpc::remote::RpcAgents;
use crate::dialect::wire::remote::WireAgents;
use crate::protocol::acp::{Implementation, InitializeRequest, ProtocolVersion};
use crate::protocol::{WireClientInfo, WireInitializeParams};
use crate::dialect::remote::RemoteAgents;
use crate::server::served::Remotes;
use crate::server::supervisor::{supervise, Stdin};
use crate::server::{Input, ServeOptions};
use crate::transport::LineReader;

/// Bytes of frames that may wait for a slow agent.
const OUTBOUND_BUDGET: usize = 16 * 1024 * 1024;
/// How long what was asked may take to finish once the host's input ended.
const EOF_GRACE: Duration = Duration::from_secs(10);

/// What `agentwire bridge` was asked to do.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// The dialect spoken to the host on stdio.
    pub serve: Dialect,
    /// The agent's dialect; detected when `None`.
    pub agent_dialect: Option<Dialect>,
    /// The agent's command line.
    pub command: Vec<OsString>,
    /// Longest host line accepted.
    pub max_line_bytes: usize,
    /// Where a proxied session is recorded as a conformance transcript.
    pub record: Option<PathBuf>,
    /// The ACP version spoken to an ACP agent; the host's own when `None` (ACP hosts), else 1.
    pub agent_acp_version: Option<u16>,
}

impl BridgeOptions {
    /// Serving `serve` in front of `command`.
    pub fn new(serve: Dialect, command: Vec<OsString>) -> Self {
        Self { serve, agent_dialect: None, command, max_line_bytes: 16 * 1024 * 1024, record: None, agent_acp_version: None }
    }
}

/// What the bridge offers a JSON-RPC agent in `initialize`: nothing it cannot carry (no file
/// system, no terminal, no external tools).
fn handshake() -> Handshake {
    let acp = InitializeRequest::new(ProtocolVersion(1)).with_client_info(Implementation::new("agentwire-bridge", env!("CARGO_PKG_VERSION")));
    let wire = WireInitializeParams {
        protocol_version: "1.10".to_owned(),
        client: Some(WireClientInfo { name: "agentwire-bridge".to_owned(), version: Some(env!("CARGO_PKG_VERSION").to_owned()) }),
        external_tools: None,
        hooks: None,
        capabilities: None,
        extra: serde_json::Map::new(),
    };
    Handshake::new(acp, wire)
}

fn spawn(options: &BridgeOptions) -> Option<AgentProcess> {
    match AgentProcess::spawn_argv(&options.command) {
        Ok(agent) => Some(agent),
        Err(e) => {
            eprintln!("agentwire bridge: {e}");
            None
        }
    }
}

/// Runs the bridge; returns the process exit code.
///
/// The agent is started once. What it speaks is learnt from its answer to an ACP
/// `initialize`, which every dialect answers at once ([`crate::client::detect`]): an ACP host's
/// own `initialize` when it asks for the version the agent is to speak (the agent's answer is
/// then the host's, in a proxy, or tells that it speaks v1 only), else the bridge's.
pub async fn run(options: BridgeOptions) -> u8 {
    if options.record.is_some() && options.agent_dialect.is_some_and(|d| d != options.serve) {
        eprintln!("agentwire bridge: --record needs the agent to speak the served dialect ({}): a translated session is no transcript of either side", options.serve.name());
        return 2;
    }
    let Some(agent) = spawn(&options) else { return 2 };
    // An ACP host's version is read off its first line.
    let mut host = HostInput::new();
    let (host_acp, first_line) = match options.serve {
        Dialect::Acp => host.route(options.max_line_bytes).await,
        Dialect::Rpc | Dialect::Wire => (AcpVersion::V1, Vec::new()),
    };
    let forced = options.agent_acp_version.map(|v| if v >= 2 { AcpVersion::V2 } else { AcpVersion::V1 });
    if options.record.is_some() && options.serve == Dialect::Acp && (host_acp == AcpVersion::V2 || forced == Some(AcpVersion::V2)) {
        eprintln!("agentwire bridge: --record writes ACP v1 transcripts; this session speaks ACP v2");
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        return 2;
    }
    if forced.is_some() && options.agent_dialect.is_some_and(|d| d != Dialect::Acp) {
        eprintln!("agentwire bridge: --agent-acp-version is for an ACP agent; --agent-dialect says {}", options.agent_dialect.map_or("", Dialect::name));
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        return 2;
    }
    if options.agent_dialect == Some(options.serve) && options.serve != Dialect::Acp {
        return proxy::run(agent, &options, host, host_acp, None).await;
    }
    let served_acp = options.serve == Dialect::Acp;
    let agent_acp = forced.unwrap_or(if served_acp { host_acp } else { AcpVersion::V1 });
    if served_acp && agent_acp == host_acp && matches!(options.agent_dialect, None | Some(Dialect::Acp)) {
        if let Some(id) = crate::dialect::acp_version::initialize_id(&first_line) {
            return through_host_initialize(agent, &options, host, HostOpening { version: host_acp, line: first_line, id }, forced).await;
        }
        if options.agent_dialect == Some(Dialect::Acp) {
            // No `initialize` to answer: what the host sends goes to the agent as it is.
            return proxy::run(agent, &options, host, host_acp, None).await;
        }
    }
    if agent_acp == AcpVersion::V2 {
        return bridge_v2_agent(agent, &options, host).await;
    }
    let mut agent = agent;
    let (Some(stdin), Some(stdout)) = (agent.take_stdin(), agent.take_stdout()) else {
        eprintln!("agentwire bridge: the agent's stdio is not piped");
        return 1;
    };
    // The writer ends when the remote agent closes the agent's input (or the agent is gone).
    let (agent_out, closer) = spawn_closable_writer(stdin, OUTBOUND_BUDGET);
    let mut lines = LineReader::new(BufReader::new(stdout), MAX_AGENT_LINE_BYTES);
    let detected = match connect(&mut lines, &agent_out, &handshake(), options.agent_dialect, DETECT_TIMEOUT).await {
        Ok(detected) => detected,
        Err(e) => {
            eprintln!("agentwire bridge: {}: {e}", agent.program());
            drop(agent_out);
            let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
            return 1;
        }
    };
    compose_detected(agent, &options, host, host_acp, Connection { lines, out: agent_out, closer }, detected).await
}

/// The agent's output and input once it was spoken to.
struct Connection {
    lines: AgentLines,
    out: crate::transport::Outbox,
    closer: crate::client::InputCloser,
}

type AgentLines = LineReader<BufReader<tokio::process::ChildStdout>>;

/// An ACP host's first line, its `initialize`.
struct HostOpening {
    version: AcpVersion,
    line: Vec<u8>,
    id: serde_json::Value,
}

/// The agent asked with the host's own `initialize`: an answer in the host's version makes a
/// proxy that hands it to the host; a v1 answer to a v2 host (a v1-only agent, opencode say)
/// makes v2's front over v1's remote agent, with that answer as its handshake; a JSONL or wire
/// agent is connected in its dialect (it refused the line) and composed.
async fn through_host_initialize(mut agent: AgentProcess, options: &BridgeOptions, host: HostInput, opening: HostOpening, forced: Option<AcpVersion>) -> u8 {
    use tokio::io::AsyncWriteExt;
    let (Some(mut stdin), Some(stdout)) = (agent.take_stdin(), agent.take_stdout()) else {
        eprintln!("agentwire bridge: the agent's stdio is not piped");
        return 1;
    };
    let mut lines = LineReader::new(BufReader::new(stdout), MAX_AGENT_LINE_BYTES);
    let mut line = opening.line.clone();
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    let asked = async {
        stdin.write_all(&line).await.map_err(|_| DetectError::Write)?;
        stdin.flush().await.map_err(|_| DetectError::Write)?;
        first_answer(&mut lines, &opening.id).await
    };
    let first = match tokio::time::timeout(DETECT_TIMEOUT, asked).await.unwrap_or(Err(DetectError::Timeout(DETECT_TIMEOUT))) {
        Ok(first) => first,
        Err(e) => {
            eprintln!("agentwire bridge: {}: {e}", agent.program());
            drop(stdin);
            let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
            return 1;
        }
    };
    let end = |agent: AgentProcess, message: String| async move {
        eprintln!("agentwire bridge: {}: {message}", agent.program());
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        1
    };
    match first {
        FirstAnswer::Acp { version, line: answer, .. } if (version >= 2) == (opening.version == AcpVersion::V2) => {
            tracing::info!("the agent speaks the host's ACP v{version}: proxied");
            proxy::run(agent, options, host, opening.version, Some(proxy::Opened { stdin, lines, host_line: opening.line, answer })).await
        }
        FirstAnswer::Acp { version, .. } if opening.version == AcpVersion::V1 => {
            drop(stdin);
            end(agent, format!("answered a v1 `initialize` with protocol version {version}")).await
        }
        FirstAnswer::Acp { version, .. } if forced == Some(AcpVersion::V2) => {
            drop(stdin);
            end(agent, format!("does not speak ACP v2 (--agent-acp-version 2): it answered protocol version {version}")).await
        }
        FirstAnswer::Acp { result, .. } => {
            tracing::info!("the agent speaks ACP v1 only: v2 is translated");
            if options.record.is_some() {
                drop(stdin);
                eprintln!("agentwire bridge: --record needs the agent to speak the host's ACP version; it speaks v1");
                let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
                return 2;
            }
            let initialized = match crate::protocol::decode::from_value::<crate::protocol::acp::InitializeResponse>(result) {
                Ok(initialized) => Box::new(initialized),
                Err(e) => {
                    drop(stdin);
                    return end(agent, format!("its ACP v1 `initialize` answer does not fit the schema: {e}")).await;
                }
            };
            let (out, closer) = spawn_closable_writer(stdin, OUTBOUND_BUDGET);
            serve_v1_agent(agent, options, host, V1Connection { lines, out, closer, initialized }).await
        }
        first @ (FirstAnswer::Jsonl(_) | FirstAnswer::Other(_)) => {
            if options.agent_dialect == Some(Dialect::Acp) {
                drop(stdin);
                return end(agent, "did not answer `initialize` as an ACP agent (--agent-dialect acp)".to_owned()).await;
            }
            let (out, closer) = spawn_closable_writer(stdin, OUTBOUND_BUDGET);
            let detected = match tokio::time::timeout(DETECT_TIMEOUT, go_on(&mut lines, &out, &handshake(), first)).await.unwrap_or(Err(DetectError::Timeout(DETECT_TIMEOUT))) {
                Ok(detected) => detected,
                Err(e) => {
                    drop(out);
                    return end(agent, e.to_string()).await;
                }
            };
            compose_detected(agent, options, host, opening.version, Connection { lines, out, closer }, detected).await
        }
    }
}

/// Serves the host in front of an agent whose dialect was found on `connection`.
async fn compose_detected(agent: AgentProcess, options: &BridgeOptions, host: HostInput, host_acp: AcpVersion, connection: Connection, detected: Detected) -> u8 {
    tracing::info!("the agent speaks {}", detected.dialect().name());
    let Connection { lines, out, closer } = connection;
    if options.record.is_some() && (detected.dialect() != options.serve || options.serve == Dialect::Acp) {
        eprintln!("agentwire bridge: --record needs the agent to speak the served dialect ({}); it speaks {}", options.serve.name(), detected.dialect().name());
        drop((out, closer));
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        return 2;
    }
    if detected.dialect() == options.serve && options.serve != Dialect::Acp {
        // Detection spoke to the agent; a proxy must hand it the host's own first frames, so it
        // starts afresh.
        drop((out, closer, lines));
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        let Some(agent) = spawn(options) else { return 2 };
        return proxy::run(agent, options, host, host_acp, None).await;
    }
    match detected {
        Detected::Rpc { state, .. } => {
            // The JSONL client closes the agent's input by dropping the last outbox.
            drop(closer);
            let agents = RpcAgents::connect(lines, out);
            // Known before the host asks (ACP offers them right after `session/new`).
            let _ = tokio::time::timeout(Duration::from_secs(3), agents.learn(&state)).await;
            let capabilities = Capabilities::none().with_images(true);
            compose(agent, options, host, capabilities, RemoteAgents::Rpc(agents)).await
        }
        Detected::Wire(initialized) => {
            let agents = WireAgents::connect(lines.into_inner(), out, closer, &initialized);
            compose(agent, options, host, Capabilities::none(), RemoteAgents::Wire(agents)).await
        }
        Detected::Acp(initialized) => serve_v1_agent(agent, options, host, V1Connection { lines, out, closer, initialized }).await,
    }
}

/// An ACP agent's connection after v1's `initialize`.
struct V1Connection {
    lines: AgentLines,
    out: crate::transport::Outbox,
    closer: crate::client::InputCloser,
    initialized: Box<crate::protocol::acp::InitializeResponse>,
}

/// The host's front over v1's remote agent on `connection`.
async fn serve_v1_agent(agent: AgentProcess, options: &BridgeOptions, host: HostInput, connection: V1Connection) -> u8 {
    let V1Connection { lines, out, closer, initialized } = connection;
    let images = initialized.agent_capabilities.prompt_capabilities.image;
    let cwd = std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.to_string_lossy().into_owned());
    let agents = AcpAgents::connect(lines.into_inner(), out, closer, Some(*initialized), cwd);
    if let Err(e) = agents.open_first().await {
        eprintln!("agentwire bridge: {}: session/new: {e}", agent.program());
        agents.close().await;
        let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
        return 1;
    }
    compose(agent, options, host, Capabilities { mcp: true, ..Capabilities::none().with_images(images) }, RemoteAgents::Acp(agents)).await
}

fn v2_initialize() -> crate::protocol::acp_v2::InitializeRequest {
    crate::protocol::acp_v2::InitializeRequest::new(crate::protocol::acp_v2::Implementation::new("agentwire-bridge", env!("CARGO_PKG_VERSION")), crate::protocol::acp_v2::ProtocolVersion(2))
}

/// Serves the front of `options.serve` in front of the remote `agents` until host
/// EOF, a signal or the agent's death; then closes the agent's input and ends it.
/// Returns the exit code.
async fn compose(mut agent: AgentProcess, options: &BridgeOptions, host: HostInput, capabilities: Capabilities, agents: RemoteAgents) -> u8 {
    let mut serve_options = ServeOptions::default()
        .with_max_line_bytes(options.max_line_bytes)
        .with_acp_capabilities(capabilities)
        .with_info(AgentInfo::new("agentwire-bridge", env!("CARGO_PKG_VERSION")));
    if let Some(version) = host.acp {
        serve_options = serve_options.with_acp_version(version);
    }
    let HostInput { input, stdin, .. } = host;
    let close = agents.clone();
    let serve = async {
        if let Err(e) = crate::server::serve_with(options.serve, serve_options, Remotes(agents), input, tokio::io::stdout()).await {
            tracing::warn!("writing to the host failed: {e}");
        }
    };
    let agent_died = supervise(&mut agent, &stdin, EOF_GRACE, serve).await;
    close.close().await;
    finish(agent, agent_died).await
}

/// The host's input (stdin) and what ends it early ([`Stdin::stop`]: a forwarded SIGTERM or
/// SIGHUP, the agent's death). An ACP host's first line may have been read already to learn its
/// version ([`HostInput::route`]): it is read again from here, first.
struct HostInput {
    input: Input,
    stdin: Stdin,
    /// The ACP version the host's first line chose, once read.
    acp: Option<AcpVersion>,
}

impl HostInput {
    fn new() -> Self {
        let stdin = Stdin::new();
        Self { input: Box::new(stdin.reader()), stdin, acp: None }
    }

    /// Reads the host's first line: the ACP version it asks for, and the line.
    async fn route(&mut self, max_line_bytes: usize) -> (AcpVersion, Vec<u8>) {
        let input = std::mem::replace(&mut self.input, Box::new(tokio::io::empty()));
        let (version, line, routed) = crate::server::acp_version(input, max_line_bytes).await;
        self.input = routed;
        self.acp = Some(version);
        (version, line)
    }
}

/// Why an ACP agent spoken to in v2 (`--agent-acp-version 2`) does not speak it.
#[derive(Debug, thiserror::Error)]
enum NotV2 {
    #[error("it answered protocol version {0}")]
    Version(u16),
    #[error(transparent)]
    Failed(crate::client::CallError),
    #[error("no answer to initialize in {} s", .0.as_secs())]
    Silent(Duration),
}

/// An ACP agent spoken to in v2: `initialize` with version 2 (it must answer 2), then its
/// remote agent served to the host.
async fn bridge_v2_agent(mut agent: AgentProcess, options: &BridgeOptions, host: HostInput) -> u8 {
    let (Some(stdin), Some(stdout)) = (agent.take_stdin(), agent.take_stdout()) else {
        eprintln!("agentwire bridge: the agent's stdio is not piped");
        return 1;
    };
    let (agent_out, closer) = spawn_closable_writer(stdin, OUTBOUND_BUDGET);
    let cwd = std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.to_string_lossy().into_owned());
    let agents = AcpV2Agents::connect(BufReader::new(stdout), agent_out, closer, None, cwd);
    let refused = match tokio::time::timeout(DETECT_TIMEOUT, agents.client().initialize(&v2_initialize())).await {
        Ok(Ok(answer)) if answer.protocol_version.0 == 2 => Ok(answer),
        // A v1 agent answers 1 in v1's shape, which does not read as v2's.
        Ok(Ok(answer)) => Err(NotV2::Version(answer.protocol_version.0)),
        Ok(Err(e)) => Err(NotV2::Failed(e)),
        Err(_) => Err(NotV2::Silent(DETECT_TIMEOUT)),
    };
    let initialized = match refused {
        Ok(answer) => answer,
        Err(e) => {
            eprintln!("agentwire bridge: {}: does not speak ACP v2 (--agent-acp-version 2): {e}", agent.program());
            agents.close().await;
            let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
            return 1;
        }
    };
    let images = initialized.capabilities.session.as_ref().and_then(|s| s.prompt.as_ref()).is_some_and(|p| p.image.is_some());
    compose(agent, options, host, Capabilities { mcp: true, ..Capabilities::none().with_images(images) }, RemoteAgents::AcpV2(agents)).await
}

/// Ends the agent (bounded, then its group killed); the bridge's exit code.
async fn finish(agent: AgentProcess, agent_died: Option<String>) -> u8 {
    match (agent_died, agent.shutdown(DEFAULT_EXIT_GRACE).await) {
        (Some(_), _) => 1,
        (None, Ok(_)) => 0,
        (None, Err(e)) => {
            eprintln!("agentwire bridge: {e}");
            1
        }
    }
}
