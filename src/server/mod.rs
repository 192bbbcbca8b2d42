//! Server dispatch for the JSONL dialect: reads lines, decodes them (one error response per
//! bad line, id echoed), dispatches commands to the handler and writes every response through
//! the single writer.
//!
//! Ordering: commands are handled in arrival order on the reader task, so cheap commands answer
//! in order. Commands that wait on the run or on external work (`abort`, `abort_and_prompt`,
//! `new_session`, `bash`) are spawned, so the reader keeps reading the UI and host-tool answers
//! a run may be waiting for. A run starts only after the response of the command that started
//! it is queued ([`Agent::release_gates`]).
//!
//! stdin EOF: stop reading, abort the run the way `abort` would (every pending dialog and host
//! tool resolves), wait for in-flight commands (bounded), flush, exit 0. SIGINT / SIGTERM: the
//! same, then exit 130 / 143.
//!
//! [`wire`] serves the JSON-RPC dialect as an adapter over the same agent.

pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufRead;
use tokio::task::JoinSet;

use crate::agent::{Agent, AgentConfig, ApprovalPolicy, RetryPolicy};
use crate::dialect::rpc::{decode_line, Inbound};
use crate::protocol::{dispatch_rpc_command, RpcCommand};
use crate::providers::offline::OfflineModel;
use crate::sessions::Session;
use crate::transport::{spawn_writer, LineReader, Outbox};

/// How long shutdown waits for in-flight commands before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Frames that may wait for a slow host before senders block.
const OUTBOX_CAPACITY: usize = 1024;

/// Options of `agentwire --mode rpc`.
#[derive(Debug, Clone)]
pub struct RpcOptions {
    /// Working directory for tools and `bash`.
    pub cwd: PathBuf,
    /// Longest accepted inbound line.
    pub max_line_bytes: usize,
    /// Script for the offline model.
    pub model_script: Option<PathBuf>,
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
fn initial_session(options: &RpcOptions) -> Result<(Option<PathBuf>, Option<PathBuf>, Session), String> {
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
            let (session, warnings) = Session::load(&path)?;
            for w in warnings {
                eprintln!("agentwire: {}:{}: {}", path.display(), w.line, w.reason);
            }
            session
        }
        None => Session::create(dir.as_deref(), &options.cwd, None),
    };
    Ok((dir, root, session))
}

fn is_detached(command: &RpcCommand) -> bool {
    matches!(command, RpcCommand::Abort(_) | RpcCommand::AbortAndPrompt(_) | RpcCommand::NewSession(_) | RpcCommand::Bash(_))
}

/// Commands whose response a run waits for before writing more (see `Agent::release_gates`).
fn opens_gates(tag: &str) -> bool {
    matches!(tag, "prompt" | "steer" | "follow_up" | "abort_and_prompt" | "abort_retry")
}

/// The one error frame for a sub-protocol answer nobody is waiting for, carrying its id.
async fn unknown_answer(out: &Outbox, id: String, command: &str) {
    let what = if command == "extension_ui_response" {
        "extension UI request id (never sent, already answered, timed out or withdrawn)"
    } else {
        "host tool call id (never made, finished, cancelled or timed out)"
    };
    let error = crate::protocol::RpcError::not_found(format!("Unknown {what}: {id}"));
    let _ = out.send(&crate::protocol::envelope::rpc_failure(Some(serde_json::Value::String(id)), command, error)).await;
}

/// Serves one JSONL session on `input`; returns when input ends and everything is answered.
pub async fn serve_rpc<R: AsyncBufRead + Unpin>(agent: Agent, input: R, out: Outbox, max_line_bytes: usize) {
    let mut reader = LineReader::new(input, max_line_bytes);
    let mut detached: JoinSet<()> = JoinSet::new();
    let agent = Arc::new(agent);
    loop {
        let line = match reader.next_line().await {
            Ok(Some(line)) => line,
            // A read error is the end of the input as far as the host is concerned.
            Ok(None) | Err(_) => break,
        };
        match decode_line(line, max_line_bytes) {
            Err(response) => {
                let _ = out.send(&*response).await;
            }
            // A sub-protocol answer nobody waits for gets one `not_found` error carrying its id:
            // the host learns its answer was too late (or wrong) instead of wondering.
            Ok(Inbound::UiResponse(r)) => {
                let id = r.id.to_string();
                if !agent.ui_response(r) {
                    unknown_answer(&out, id, "extension_ui_response").await;
                }
            }
            Ok(Inbound::HostToolUpdate(u)) => {
                let id = u.id.to_string();
                if !agent.host_tool_update(u).await {
                    unknown_answer(&out, id, "host_tool_update").await;
                }
            }
            Ok(Inbound::HostToolResult(r)) => {
                let id = r.id.to_string();
                if !agent.host_tool_result(r) {
                    unknown_answer(&out, id, "host_tool_result").await;
                }
            }
            Ok(Inbound::Command { id, command }) => {
                let tag = command.tag();
                if is_detached(&command) {
                    let (agent, out) = (agent.clone(), out.clone());
                    detached.spawn(async move {
                        let response = dispatch_rpc_command(&*agent, id, command).await;
                        let _ = out.send(&response).await;
                        if opens_gates(tag) {
                            agent.release_gates();
                        }
                    });
                } else {
                    let response = dispatch_rpc_command(&*agent, id, command).await;
                    let _ = out.send(&response).await;
                    if opens_gates(tag) {
                        agent.release_gates();
                    }
                }
            }
        }
        // Reap finished detached commands so the set does not grow with the session.
        while detached.try_join_next().is_some() {}
    }
    agent.shutdown().await;
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while detached.join_next().await.is_some() {} }).await;
}

/// Builds the agent for either dialect, writing its frames to `out`; `Err` is the exit code
/// after the reason was printed.
fn build_agent(options: &RpcOptions, out: Outbox) -> Result<Agent, u8> {
    let mut selection = options.selection.clone();
    if let Some(path) = &options.model_script {
        match OfflineModel::from_script_file(path) {
            Ok(m) => selection.offline = Some(Arc::new(m)),
            Err(e) => {
                eprintln!("agentwire: --model-script: {e}");
                return Err(1);
            }
        }
    }
    // A bad models file or an unknown --provider/--model is a startup error we were explicitly
    // pointed at: say so on stderr and exit 1.
    let catalogue = crate::providers::config::load(&selection).map_err(|e| {
        eprintln!("agentwire: {e}");
        1
    })?;
    let (session_dir, sessions_root, session) = initial_session(options).map_err(|e| {
        eprintln!("agentwire: cannot resume the session: {e}");
        1
    })?;
    let config = AgentConfig {
        cwd: options.cwd.clone(),
        approval: options.approval,
        approval_timeout: options.approval_timeout,
        host_tool_timeout: options.host_tool_timeout,
        retry: options.retry,
        compaction: options.compaction,
        session_dir,
        sessions_root,
        max_line_bytes: options.max_line_bytes,
        max_steps_per_turn: options.max_steps_per_turn,
    };
    Ok(Agent::new(config, out, catalogue, session))
}

/// Runs `agentwire --mode rpc` on stdin/stdout; returns the exit code.
pub async fn run_rpc_process(options: RpcOptions) -> u8 {
    let (out, writer) = spawn_writer(tokio::io::stdout(), OUTBOX_CAPACITY);
    let agent = match build_agent(&options, out.clone()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let _ = out.send(&agent.ready_frame()).await;
    let stdin = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    let mut writer = writer;
    let code = tokio::select! {
        biased;
        code = signalled() => {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, agent.shutdown()).await;
            code
        }
        () = serve_rpc(agent.clone(), stdin, out.clone(), options.max_line_bytes) => 0,
        // stdout closed (EPIPE): nobody can read our answers any more; stop quietly.
        _ = &mut writer => {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, agent.shutdown()).await;
            return 0;
        }
    };
    drop(agent);
    drop(out);
    // Everything queued is written before exit; a host that went away just ends the writer.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
    code
}

/// Runs `agentwire --mode wire` on stdin/stdout; returns the exit code.
pub async fn run_wire_process(options: RpcOptions) -> u8 {
    let (out, writer) = spawn_writer(tokio::io::stdout(), OUTBOX_CAPACITY);
    // The agent speaks JSONL into an in-process pipe that the wire adapter reads and translates.
    let (agent_side, adapter_side) = tokio::io::duplex(1 << 20);
    let (agent_out, agent_writer) = spawn_writer(agent_side, OUTBOX_CAPACITY);
    let agent = match build_agent(&options, agent_out) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let stdin = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    let frames = tokio::io::BufReader::new(adapter_side);
    let code = tokio::select! {
        biased;
        code = signalled() => {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, agent.shutdown()).await;
            code
        }
        () = wire::serve_wire(agent.clone(), stdin, frames, out.clone()) => 0,
    };
    drop(agent);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, agent_writer).await;
    drop(out);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
    code
}

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
