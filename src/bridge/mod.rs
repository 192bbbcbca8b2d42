//! `agentwire bridge --serve <dialect> [--agent-dialect <dialect>] -- <agent command…>`: one
//! dialect to the host on stdio, another to an agent subprocess (docs/bridge.md).
//!
//! - [`acp_front`]: what the ACP fronts share (`initialize`, refusals, cancel routing);
//! - [`acp_rpc`]: ACP to the host, the pi/omp JSONL dialect to the agent;
//! - [`acp_wire`]: ACP to the host, kimi's wire dialect to the agent;
//! - [`wire_rpc`]: kimi's wire to the host, the pi/omp JSONL dialect to the agent;
//! - [`rpc_acp`]: the pi/omp JSONL dialect to the host, ACP to the agent;
//! - [`rpc_events`]: a JSONL agent's events, read leniently.
//!
//! Lifecycle: the agent runs in its own process group and dies with us
//! ([`crate::client::process`]). Host EOF → the agent's input closes, it is waited for
//! ([`crate::client::DEFAULT_EXIT_GRACE`]), then killed. SIGINT, SIGTERM and SIGHUP are
//! forwarded to its group; SIGTERM and SIGHUP also end our input. The agent dying → every
//! request in flight is answered with an error, and the bridge exits non-zero.

pub mod acp_front;
pub mod acp_rpc;
pub mod acp_wire;
pub mod rpc_acp;
pub mod rpc_events;
pub mod wire_rpc;

use std::ffi::OsString;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::ChildStdout;
use tokio_util::sync::CancellationToken;

use crate::client::detect::{connect, Handshake, DETECT_TIMEOUT};
use crate::client::rpc::MAX_AGENT_LINE_BYTES;
use crate::client::{spawn_closable_writer, AcpClient, WireClient, AgentProcess, Detected, Dialect, InputCloser, RpcClient, RpcEvents, RpcHostHandler, DEFAULT_EXIT_GRACE};
use crate::jsonrpc::{Connection, Service};
use crate::protocol::acp::{Implementation, InitializeRequest, ProtocolVersion};
use crate::protocol::{WireClientInfo, WireInitializeParams};
use crate::transport::until::UntilCancelled;
use crate::transport::stdio::Stdin;
use crate::transport::{LineReader, Outbox};

/// Bytes of frames that may wait for a slow host or agent.
const OUTBOUND_BUDGET: usize = 16 * 1024 * 1024;
/// How long requests in flight have to be answered once the input ended.
const ANSWER_GRACE: Duration = Duration::from_secs(1);

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
}

impl BridgeOptions {
    /// Serving `serve` in front of `command`.
    pub fn new(serve: Dialect, command: Vec<OsString>) -> Self {
        Self {
            serve,
            agent_dialect: None,
            command,
            max_line_bytes: 16 * 1024 * 1024,
        }
    }
}

/// What the bridge offers a JSON-RPC agent in `initialize`: nothing it cannot carry (no file
/// system, no terminal, no external tools).
fn handshake() -> Handshake {
    let acp = InitializeRequest::new(ProtocolVersion(1)).with_client_info(Implementation::new(
        "agentwire-bridge",
        env!("CARGO_PKG_VERSION"),
    ));
    let wire = WireInitializeParams {
        protocol_version: "1.10".to_owned(),
        client: Some(WireClientInfo {
            name: "agentwire-bridge".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
        external_tools: None,
        hooks: None,
        capabilities: None,
        extra: serde_json::Map::new(),
    };
    Handshake::new(acp, wire)
}

/// Runs the bridge; returns the process exit code.
pub async fn run(options: BridgeOptions) -> u8 {
    let mut agent = match AgentProcess::spawn_argv(&options.command) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("agentwire bridge: {e}");
            return 2;
        }
    };
    let (Some(stdin), Some(stdout)) = (agent.take_stdin(), agent.take_stdout()) else {
        eprintln!("agentwire bridge: the agent's stdio is not piped");
        return 1;
    };
    // The writer ends when the client closes the agent's input (or the agent is gone).
    let (agent_out, closer) = spawn_closable_writer(stdin, OUTBOUND_BUDGET);
    let mut lines = LineReader::new(BufReader::new(stdout), MAX_AGENT_LINE_BYTES);
    let handshake = handshake();
    let detected = connect(&mut lines, &agent_out, &handshake, options.agent_dialect, DETECT_TIMEOUT).await;
    let detected = match detected {
        Ok(detected) => detected,
        Err(e) => {
            eprintln!("agentwire bridge: {}: {e}", agent.program());
            drop(agent_out);
            let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
            return 1;
        }
    };
    tracing::info!("the agent speaks {}", detected.dialect().name());
    let (host_out, host_writer) = crate::transport::stdio::spawn_stdout_writer(OUTBOUND_BUDGET);
    let link = Link { agent, lines, agent_out, max_line_bytes: options.max_line_bytes };
    let code = match (options.serve, detected) {
        (Dialect::Acp, Detected::Rpc { .. }) => {
            // The JSONL client closes the agent's input by dropping the last outbox.
            drop(closer);
            let conn = Arc::new(Connection::new(host_out));
            let dialogs = acp_rpc::AcpDialogs::new(conn.clone());
            link.serve(dialogs.clone(), |client| acp_rpc::AcpOverRpc::new(conn, client, &dialogs)).await
        }
        (Dialect::Wire, Detected::Rpc { .. }) => {
            drop(closer);
            let conn = Arc::new(Connection::new(host_out));
            let dialogs = wire_rpc::WireDialogs::new(conn.clone());
            link.serve(dialogs.clone(), |client| wire_rpc::WireOverRpc::new(conn, client, &dialogs)).await
        }
        (Dialect::Rpc, Detected::Acp(initialized)) => link.serve_rpc_over_acp(host_out, closer, *initialized).await,
        (Dialect::Acp, Detected::Wire(_)) => link.serve_acp_over_wire(host_out, closer).await,
        (serve, detected) => {
            eprintln!(
                "agentwire bridge: serving {} in front of an agent speaking {} is not implemented yet (docs/bridge.md lists the pairs); available: --serve acp or --serve wire in front of an rpc (pi/omp) agent, --serve acp in front of a wire (kimi) agent, --serve rpc in front of an ACP agent",
                serve.name(),
                detected.dialect().name()
            );
            drop(host_out);
            drop(link.agent_out);
            drop(closer);
            let _ = link.agent.shutdown(DEFAULT_EXIT_GRACE).await;
            2
        }
    };
    let _ = tokio::time::timeout(ANSWER_GRACE, host_writer).await;
    code
}

/// A front the bridge serves to the host: a JSON-RPC service that also forwards the
/// agent's events.
trait Front: Service + Send + Sync + 'static {
    /// Forwards the agent's events until its output ends.
    fn pump(&self, events: RpcEvents) -> impl Future<Output = ()> + Send + '_;
}

impl Front for acp_rpc::AcpOverRpc {
    fn pump(&self, events: RpcEvents) -> impl Future<Output = ()> + Send + '_ {
        acp_rpc::AcpOverRpc::pump(self, events)
    }
}

impl Front for wire_rpc::WireOverRpc {
    fn pump(&self, events: RpcEvents) -> impl Future<Output = ()> + Send + '_ {
        wire_rpc::WireOverRpc::pump(self, events)
    }
}

/// The agent process and its detected JSONL connection.
struct Link {
    agent: AgentProcess,
    lines: LineReader<BufReader<ChildStdout>>,
    agent_out: Outbox,
    max_line_bytes: usize,
}

/// The host's input (stdin) and what ends it early: `stop` (a forwarded SIGTERM or SIGHUP,
/// the agent's death) ends it as EOF would; `ended` fires once it ended.
struct HostInput {
    input: UntilCancelled<BufReader<Stdin>>,
    stop: CancellationToken,
    ended: CancellationToken,
}

impl HostInput {
    fn new() -> Self {
        let stop = CancellationToken::new();
        let ended = CancellationToken::new();
        let input = UntilCancelled::new(BufReader::with_capacity(64 * 1024, crate::transport::stdio::stdin()), stop.clone()).noting_end(ended.clone());
        Self { input, stop, ended }
    }
}

/// Runs `serve` (the host's side) while watching the agent and forwarding signals, until it
/// returns, or [`ANSWER_GRACE`] after the host's input ended; returns how the agent died, if
/// it did (then `stop` was cancelled, so the host's input ended and what was in flight got
/// its error).
async fn supervise(agent: &mut AgentProcess, stop: &CancellationToken, ended: &CancellationToken, serve: impl Future<Output = ()>) -> Option<String> {
    let mut agent_died = None;
    let alive = Arc::new(AtomicBool::new(true));
    let signals = forward_signals(agent.id(), alive.clone(), stop.clone());
    tokio::pin!(signals);
    tokio::pin!(serve);
    // The requests in flight at host EOF have this long to be answered (the agent's input is
    // closed then, so its prompts end when it does).
    let answer_grace = async {
        ended.cancelled().await;
        tokio::time::sleep(ANSWER_GRACE).await;
    };
    tokio::pin!(answer_grace);
    loop {
        tokio::select! {
            () = &mut serve => break,
            () = &mut answer_grace => break,
            status = agent.wait(), if agent_died.is_none() => {
                // The agent is gone: its output ended, so every prompt in flight ends with an
                // error; our input ends so the serve loop answers what is left.
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                eprintln!("agentwire bridge: the agent exited ({status})");
                alive.store(false, Ordering::SeqCst);
                agent_died = Some(status);
                stop.cancel();
            }
            () = &mut signals => {}
        }
    }
    alive.store(false, Ordering::SeqCst);
    agent_died
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

impl Link {
    /// Serves the front `make` builds over the agent's client until host EOF, a signal or the
    /// agent's death; returns the exit code.
    async fn serve<F: Front>(self, host: impl RpcHostHandler, make: impl FnOnce(RpcClient) -> F) -> u8 {
        let Link { mut agent, lines, agent_out, max_line_bytes } = self;
        let (client, events) = RpcClient::over(lines, agent_out, host);
        let server = Arc::new(make(client.clone()));
        let HostInput { input, stop, ended } = HostInput::new();
        let pump = tokio::spawn({
            let server = server.clone();
            async move { server.pump(events).await }
        });
        let agent_died = supervise(&mut agent, &stop, &ended, crate::jsonrpc::serve(&*server, input, max_line_bytes)).await;
        client.close();
        drop(client);
        let code = finish(agent, agent_died).await;
        // The agent is gone, so its output has ended and the pump with it.
        let _ = pump.await;
        code
    }

    /// Serves ACP to the host in front of the wire agent (initialized during detection);
    /// returns the exit code.
    async fn serve_acp_over_wire(self, host_out: Outbox, closer: InputCloser) -> u8 {
        let Link { mut agent, lines, agent_out, max_line_bytes } = self;
        let conn = Arc::new(Connection::new(host_out));
        let approvals = acp_wire::WireApprovals::new(conn.clone());
        let (client, events) = WireClient::over(lines.into_inner(), agent_out, closer, approvals.clone());
        let (server, flushes) = acp_wire::AcpOverWire::new(conn, client.clone(), &approvals);
        let server = Arc::new(server);
        let pump = tokio::spawn({
            let server = server.clone();
            async move { server.pump(events, flushes).await }
        });
        let HostInput { input, stop, ended } = HostInput::new();
        let agent_died = supervise(&mut agent, &stop, &ended, crate::jsonrpc::serve(&*server, input, max_line_bytes)).await;
        client.close().await;
        drop(client);
        let code = finish(agent, agent_died).await;
        // The agent is gone, so its output has ended and the pump with it.
        let _ = pump.await;
        code
    }

    /// Serves the JSONL dialect to the host in front of the ACP agent (initialized during
    /// detection); returns the exit code.
    async fn serve_rpc_over_acp(self, host_out: Outbox, closer: InputCloser, initialized: crate::protocol::acp::InitializeResponse) -> u8 {
        let Link { mut agent, lines, agent_out, max_line_bytes } = self;
        let dialogs = rpc_acp::RpcDialogs::new(host_out.clone());
        let (client, updates) = AcpClient::over(lines.into_inner(), agent_out, closer, dialogs.clone(), Some(initialized));
        let cwd = std::env::current_dir().map_or_else(|_| "/".to_owned(), |d| d.to_string_lossy().into_owned());
        let server = match rpc_acp::RpcOverAcp::start(host_out, client.clone(), updates, &dialogs, cwd).await {
            Ok(server) => server,
            Err(e) => {
                eprintln!("agentwire bridge: {}: session/new: {e}", agent.program());
                client.close().await;
                let _ = agent.shutdown(DEFAULT_EXIT_GRACE).await;
                return 1;
            }
        };
        drop(dialogs);
        let HostInput { input, stop, ended } = HostInput::new();
        let agent_died = supervise(&mut agent, &stop, &ended, server.serve(input, max_line_bytes)).await;
        client.close().await;
        drop(server);
        finish(agent, agent_died).await
    }
}

/// Forwards SIGINT, SIGTERM and SIGHUP to the agent's group; SIGTERM and SIGHUP also end our
/// input. Never returns (a select arm that stays pending).
async fn forward_signals(pgid: Option<u32>, alive: Arc<AtomicBool>, stop: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    loop {
        let (sig, ends) = tokio::select! {
            _ = int.recv() => (libc::SIGINT, false),
            _ = term.recv() => (libc::SIGTERM, true),
            _ = hup.recv() => (libc::SIGHUP, true),
        };
        if let (Some(pgid), true) = (
            pgid.and_then(|p| i32::try_from(p).ok()),
            alive.load(Ordering::SeqCst),
        ) {
            // SAFETY: killpg has no memory-safety preconditions; the group is the agent's own
            // and it has not been reaped (`alive`).
            unsafe { libc::killpg(pgid, sig) };
        }
        if ends {
            stop.cancel();
        }
    }
}
