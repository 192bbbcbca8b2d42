//! An agent speaking the host's own dialect: a validating proxy. Every line passes unchanged,
//! both ways; each is checked against the dialect's schema on the way, and what does not fit
//! is reported on stderr, naming the side that sent it (the session goes on: a proxy that
//! dropped a frame would change what it observes). `--record FILE` writes the session as a
//! conformance transcript (`agentwire conformance run FILE` replays it).

use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use super::{BridgeOptions, HostInput, EOF_GRACE};
use crate::server::supervisor::supervise;
use crate::client::rpc::MAX_AGENT_LINE_BYTES;
use crate::client::{AcpClientSide, AcpV2ClientSide, AgentProcess, Dialect};
use crate::recording::Tap;
use crate::dialect::acp::AcpAgentSide;
use crate::dialect::acp_v2::AcpV2AgentSide;
use crate::dialect::acp_version::AcpVersion;
use crate::jsonrpc::{decode_line, Decoded, Inbound, Line, Side};
use crate::protocol::validate::{validator, Direction, SchemaDialect};
use crate::transport::lines::InboundLine;
use crate::transport::LineReader;

/// Which side sent a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Host,
    Agent,
}

impl Origin {
    fn name(self) -> &'static str {
        match self {
            Self::Host => "the host",
            Self::Agent => "the agent",
        }
    }
}

/// Why a line does not fit the dialect's schema, if it does not. ACP lines go through the
/// JSON-RPC runtime's own decoder, with the rules of the side that reads them.
fn check(dialect: Dialect, acp: AcpVersion, from: Origin, line: &[u8]) -> Option<String> {
    let inbound = || InboundLine::Line(line.to_vec());
    let schema = match (dialect, acp, from) {
        (Dialect::Acp, AcpVersion::V1, Origin::Host) => return problems::<AcpAgentSide>(decode_line::<AcpAgentSide>(inbound())),
        (Dialect::Acp, AcpVersion::V1, Origin::Agent) => return problems::<AcpClientSide>(decode_line::<AcpClientSide>(inbound())),
        (Dialect::Acp, AcpVersion::V2, Origin::Host) => return problems::<AcpV2AgentSide>(decode_line::<AcpV2AgentSide>(inbound())),
        (Dialect::Acp, AcpVersion::V2, Origin::Agent) => return problems::<AcpV2ClientSide>(decode_line::<AcpV2ClientSide>(inbound())),
        (Dialect::Rpc, _, _) => SchemaDialect::Rpc,
        (Dialect::Wire, _, _) => SchemaDialect::Wire,
    };
    let frame: Value = match serde_json::from_slice(line) {
        Ok(frame) => frame,
        Err(e) => return Some(format!("not JSON: {e}")),
    };
    let direction = match from {
        Origin::Host => Direction::Inbound,
        Origin::Agent => Direction::Outbound,
    };
    validator().validate_frame(schema, direction, &frame, None).err().map(|e| e.to_string())
}

/// What the decoder refused or ignored in a line: in a JSON-RPC batch, in any of its members.
fn problems<S: Side>(line: Line<S>) -> Option<String> {
    match line {
        Line::One(decoded) => problem::<S>(decoded),
        Line::Batch(members) => {
            let found: Vec<String> = members.into_iter().filter_map(problem::<S>).collect();
            (!found.is_empty()).then(|| found.join("; "))
        }
    }
}

/// What the decoder refused or ignored in one message. A `_`-prefixed notification is an
/// extension ACP allows (codex-acp's `_auth/status_update`): it passes on unremarked.
fn problem<S: Side>(decoded: Decoded<S>) -> Option<String> {
    match decoded {
        Ok(Inbound::Ignored { method, .. }) if method.starts_with('_') => None,
        Ok(Inbound::Ignored { method, reason }) => Some(format!("{method}: {reason}")),
        Ok(Inbound::Request { .. } | Inbound::Notification(_) | Inbound::Response { .. }) => None,
        Err(frame) => Some(frame.error.message),
    }
}

/// Copies `lines` to `out`, checking each (and recording it on `tap`); returns when the input
/// ends or the output fails.
async fn pump<R, W>(dialect: Dialect, acp: AcpVersion, from: Origin, mut lines: LineReader<R>, mut out: W, tap: Option<&Tap>, mut seen: u64)
where
    R: tokio::io::AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let line = match lines.next_line().await {
            Ok(Some(InboundLine::Line(line))) => line,
            Ok(Some(InboundLine::TooLong { bytes, .. })) => {
                eprintln!("agentwire bridge: {} sent a line of {bytes} bytes, over the limit: it is not passed on", from.name());
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        // Lines are counted per side: `line 3 from the host` is the host's third.
        seen += 1;
        let n = seen;
        if let Some(problem) = check(dialect, acp, from, &line) {
            eprintln!("agentwire bridge: line {n} from {} does not fit the {} schema: {problem}", from.name(), dialect.name());
        }
        match (tap, from) {
            (Some(tap), Origin::Host) => tap.host_line(&line),
            (Some(tap), Origin::Agent) => tap.agent_line(&line),
            (None, _) => {}
        }
        let written = async {
            out.write_all(&line).await?;
            out.write_all(b"\n").await?;
            out.flush().await
        };
        if written.await.is_err() {
            break;
        }
    }
}

/// An agent the host's first line (its `initialize`) went to already, and its answer.
pub(super) struct Opened {
    pub(super) stdin: ChildStdin,
    pub(super) lines: LineReader<BufReader<ChildStdout>>,
    /// The host's first line.
    pub(super) host_line: Vec<u8>,
    /// The agent's answer to it.
    pub(super) answer: Vec<u8>,
}

/// Proxies the host's stdio to `agent` until host EOF (then the agent's input closes and it
/// finishes), a signal or the agent's death; returns the exit code. `opened`: the host's first
/// line was handed to the agent already, and its answer goes to the host first.
pub(super) async fn run(mut agent: AgentProcess, options: &BridgeOptions, host: HostInput, acp: AcpVersion, opened: Option<Opened>) -> u8 {
    let (stdin, agent_lines, opening) = match opened {
        Some(Opened { stdin, lines, host_line, answer }) => (stdin, lines, Some((host_line, answer))),
        None => match (agent.take_stdin(), agent.take_stdout()) {
            (Some(stdin), Some(stdout)) => (stdin, LineReader::new(BufReader::new(stdout), MAX_AGENT_LINE_BYTES), None),
            _ => {
                eprintln!("agentwire bridge: the agent's stdio is not piped");
                return 1;
            }
        },
    };
    let dialect = options.serve;
    let tap = match &options.record {
        Some(path) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
            match Tap::create(path, transcript_dialect(dialect), &cwd) {
                Ok(tap) => Some(tap),
                Err(e) => {
                    eprintln!("agentwire bridge: --record {}: {e}", path.display());
                    drop((stdin, agent_lines));
                    let _ = agent.shutdown(crate::client::DEFAULT_EXIT_GRACE).await;
                    return 2;
                }
            }
        }
        None => None,
    };
    let HostInput { input, stdin: host_stdin, .. } = host;
    let mut host_lines = LineReader::new(input, options.max_line_bytes);
    let seen = match &opening {
        Some((host_line, answer)) => {
            // The host's first line went to the agent as it asked which dialect and version it
            // speaks: it is read here (and not sent again), and the agent's answer is the host's.
            let _ = host_lines.next_line().await;
            let host_line = host_line.strip_suffix(b"\n").unwrap_or(host_line.as_slice());
            for (from, line) in [(Origin::Host, host_line), (Origin::Agent, answer.as_slice())] {
                if let Some(problem) = check(dialect, acp, from, line) {
                    eprintln!("agentwire bridge: line 1 from {} does not fit the {} schema: {problem}", from.name(), dialect.name());
                }
            }
            if let Some(tap) = &tap {
                tap.host_line(host_line);
                tap.agent_line(answer);
            }
            let mut stdout = tokio::io::stdout();
            let written = async {
                stdout.write_all(answer).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                let _ = agent.shutdown(crate::client::DEFAULT_EXIT_GRACE).await;
                return 1;
            }
            1
        }
        None => 0,
    };
    let to_agent = async {
        pump(dialect, acp, Origin::Host, host_lines, stdin, tap.as_ref(), seen).await;
        // The host's input ended here (the agent's closes as `stdin` drops).
        if let Some(tap) = &tap {
            if let Err(e) = tap.finish() {
                eprintln!("agentwire bridge: --record: {e}");
            }
        }
    };
    let to_host = pump(dialect, acp, Origin::Agent, agent_lines, tokio::io::stdout(), tap.as_ref(), seen);
    let serve = async {
        tokio::join!(to_agent, to_host);
    };
    let agent_died = supervise(&mut agent, &host_stdin, EOF_GRACE, serve).await;
    let status = agent.shutdown(crate::client::DEFAULT_EXIT_GRACE).await;
    if let Some(tap) = &tap {
        // What came after the host's input ended, and how the agent ended (a replay expects the
        // same exit; one killed by a signal has no code to expect).
        if let Some(code) = status.as_ref().ok().and_then(std::process::ExitStatus::code) {
            tap.agent_exit(code);
        }
        if let Err(e) = tap.finish() {
            eprintln!("agentwire bridge: --record: {e}");
            return 1;
        }
    }
    match (agent_died, status) {
        (Some(_), _) => 1,
        (None, Ok(_)) => 0,
        (None, Err(e)) => {
            eprintln!("agentwire bridge: {e}");
            1
        }
    }
}

fn transcript_dialect(dialect: Dialect) -> crate::protocol::TranscriptHeaderDialect {
    match dialect {
        Dialect::Rpc => crate::protocol::TranscriptHeaderDialect::Rpc,
        Dialect::Wire => crate::protocol::TranscriptHeaderDialect::Wire,
        Dialect::Acp => crate::protocol::TranscriptHeaderDialect::Acp,
    }
}
