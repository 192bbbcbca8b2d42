//! Which dialect an agent speaks, found by asking it.
//!
//! An ACP `initialize` goes out first, as every dialect answers it at once (nothing waits on a
//! timeout). The first telling frame decides:
//! - a JSONL frame (`ready`, which oh-my-pi and agentwire write first, or pi's `response`
//!   refusing the line) → the pi/omp dialect; a `get_state` follows, and its answer is read
//!   before returning, so the host never sees it;
//! - a JSON-RPC answer to the `initialize` with `protocolVersion` → ACP;
//! - with `protocol_version`, or an error (kimi's wire wants `protocol_version`) → a wire
//!   `initialize` follows, and its answer → the wire dialect.
//!
//! The JSON-RPC agents' `initialize` is the real handshake: the caller gives the capabilities
//! to offer (only what it can carry) and gets the agent's answer back.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncBufRead;

use super::rpc::WithId;
use crate::jsonrpc::{Request, RequestFrame};
use crate::protocol::acp::{methods, InitializeRequest, InitializeResponse};
use crate::protocol::{
    GetStateCommand, ReadyEvent, WireId, WireInitializeParams, WireInitializeRequest,
    WireInitializeResult,
};
use crate::transport::{InboundLine, LineReader, Outbox};

/// How long an agent has to show which dialect it speaks (node agents take seconds to start
/// on a loaded machine).
pub const DETECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The id of the probing `get_state`.
pub const PROBE_GET_STATE_ID: &str = "agentwire-detect";
/// The id of the probing ACP `initialize`.
const PROBE_ACP_ID: &str = "agentwire-detect-acp";
/// The id of the wire `initialize`.
const PROBE_WIRE_ID: &str = "agentwire-detect-wire";

pub use crate::protocol::Dialect;

/// What detection found, with what the agent said while it was asked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Detected {
    /// pi / omp JSONL: its `ready` frame when it wrote one, and its `get_state` data.
    Rpc {
        /// The `ready` frame (oh-my-pi, agentwire), when it fits the schema.
        ready: Option<Box<ReadyEvent>>,
        /// The `get_state` answer's `data`, as written.
        state: Value,
    },
    /// kimi's wire: the agent is initialized.
    Wire(Box<WireInitializeResult>),
    /// ACP: the agent is initialized.
    Acp(Box<InitializeResponse>),
}

impl Detected {
    /// The dialect found.
    pub fn dialect(&self) -> Dialect {
        match self {
            Self::Rpc { .. } => Dialect::Rpc,
            Self::Wire(_) => Dialect::Wire,
            Self::Acp(_) => Dialect::Acp,
        }
    }
}

/// Why detection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// The agent's output ended first.
    #[error("the agent exited (or closed its output) before showing which dialect it speaks")]
    Closed,
    /// Nothing telling came in time.
    #[error("the agent showed no dialect within {0:?} (no `ready` frame, no answer to `get_state` or `initialize`)")]
    Timeout(Duration),
    /// Its input is closed.
    #[error("cannot write to the agent: its input is closed")]
    Write,
    /// It answered, but not in a way any dialect does.
    #[error("the agent's answer fits no dialect: {0}")]
    Unknown(String),
    /// The agent refused the handshake of the dialect it speaks.
    #[error("the agent refused `initialize`: {0}")]
    Refused(String),
    /// Reading its output failed.
    #[error("reading the agent's output: {0}")]
    Io(#[from] std::io::Error),
}

/// What to offer a JSON-RPC agent in `initialize`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Handshake {
    /// The ACP `initialize` params.
    pub acp: InitializeRequest,
    /// The wire `initialize` params.
    pub wire: WireInitializeParams,
}

impl Handshake {
    /// The handshake offering `acp` and `wire`.
    pub fn new(acp: InitializeRequest, wire: WireInitializeParams) -> Self {
        Self { acp, wire }
    }
}


/// Connects to the agent: with `dialect` given, only that dialect's opening is sent (the
/// `get_state`, or the `initialize`); without, the agent is asked which it speaks (see the
/// module docs). `lines` and `out` are the agent's output and input; the client of the dialect
/// found goes on with them.
pub async fn connect<R>(lines: &mut LineReader<R>, out: &Outbox, handshake: &Handshake, dialect: Option<Dialect>, timeout: Duration) -> Result<Detected, DetectError>
where
    R: AsyncBufRead + Unpin,
{
    let Some(dialect) = dialect else {
        return tokio::time::timeout(timeout, probe(lines, out, handshake)).await.map_err(|_| DetectError::Timeout(timeout))?;
    };
    let steps = async {
        match dialect {
            Dialect::Rpc => {
                send_get_state(out).await?;
                rpc_state(lines, None).await
            }
            Dialect::Acp => {
                send_acp_initialize(out, handshake).await?;
                match next_frame(lines).await?.0 {
                    Frame::JsonRpc(answer) => acp_answer(answer),
                    Frame::Rpc(frame) => Err(DetectError::Unknown(frame.to_string())),
                }
            }
            Dialect::Wire => wire_initialize(lines, out, handshake).await,
        }
    };
    tokio::time::timeout(timeout, steps)
        .await
        .map_err(|_| DetectError::Timeout(timeout))?
}

async fn send<T: Serialize + ?Sized>(out: &Outbox, frame: &T) -> Result<(), DetectError> {
    out.send(frame).await.map_err(|_| DetectError::Write)
}

async fn send_get_state(out: &Outbox) -> Result<(), DetectError> {
    send(out, &WithId { id: PROBE_GET_STATE_ID, command: &GetStateCommand::default() }).await
}

async fn send_acp_initialize(out: &Outbox, handshake: &Handshake) -> Result<(), DetectError> {
    let id = Value::from(PROBE_ACP_ID);
    send(
        out,
        &RequestFrame {
            id: &id,
            method: methods::Initialize::METHOD,
            params: &handshake.acp,
        },
    )
    .await
}

async fn probe<R: AsyncBufRead + Unpin>(
    lines: &mut LineReader<R>,
    out: &Outbox,
    handshake: &Handshake,
) -> Result<Detected, DetectError> {
    send_acp_initialize(out, handshake).await?;
    let first = first_answer(lines, &Value::from(PROBE_ACP_ID)).await?;
    go_on(lines, out, handshake, first).await
}

/// The first frame that tells an agent's dialect, once it was sent an ACP `initialize`
/// (every dialect answers one at once: an ACP agent with its own, kimi's wire with an error, a
/// JSONL agent with a refused `response`, or its `ready` frame before).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FirstAnswer {
    /// A JSONL frame: the pi/omp dialect.
    Jsonl(Value),
    /// ACP's answer to the `initialize`: the version it speaks, its result, and the line as the
    /// agent wrote it (a proxy hands it to the host unchanged).
    Acp {
        /// `protocolVersion`.
        version: u64,
        /// The `result`.
        result: Value,
        /// The whole line.
        line: Vec<u8>,
    },
    /// Another JSON-RPC answer to it (an error, or a result without `protocolVersion`: kimi's
    /// wire wants `protocol_version`).
    Other(Result<Value, crate::jsonrpc::Error>),
}

/// Reads the agent's output up to the first telling frame after an ACP `initialize` with id
/// `id` was sent (see [`FirstAnswer`]); JSON-RPC answers to other ids are passed over.
pub async fn first_answer<R: AsyncBufRead + Unpin>(lines: &mut LineReader<R>, id: &Value) -> Result<FirstAnswer, DetectError> {
    loop {
        match next_frame(lines).await? {
            (Frame::Rpc(frame), _) => return Ok(FirstAnswer::Jsonl(frame)),
            // An error whose id is null answers a request the agent could not read, ours (JSON-RPC
            // 2.0 §5: the id is null when it could not be detected): kimi's wire refuses an
            // integer id, as a host's `initialize` has, that way.
            (Frame::JsonRpc(answer), line) if answer.id.as_ref() == Some(id) || (answer.id.as_ref().is_none_or(Value::is_null) && answer.outcome.is_err()) => {
                return Ok(match answer.outcome {
                    Ok(result) => match result.get("protocolVersion").and_then(Value::as_u64) {
                        Some(version) => FirstAnswer::Acp { version, result, line },
                        None => FirstAnswer::Other(Ok(result)),
                    },
                    Err(message) => FirstAnswer::Other(Err(message)),
                });
            }
            (Frame::JsonRpc(_), _) => {}
        }
    }
}

/// What the agent speaks, from its [`FirstAnswer`]: a JSONL agent is asked `get_state` (its
/// answer is read here, so the host never sees it), one that refused ACP's `initialize` is
/// sent the wire's, and ACP's answer is read as v1's.
pub async fn go_on<R: AsyncBufRead + Unpin>(lines: &mut LineReader<R>, out: &Outbox, handshake: &Handshake, first: FirstAnswer) -> Result<Detected, DetectError> {
    match first {
        FirstAnswer::Jsonl(frame) => {
            let ready = (frame.get("type").and_then(Value::as_str) == Some("ready")).then(|| crate::protocol::decode::from_value(frame).ok().map(Box::new)).flatten();
            send_get_state(out).await?;
            rpc_state(lines, ready).await
        }
        FirstAnswer::Acp { result, .. } => acp_answer(JsonRpcAnswer { id: None, outcome: Ok(result) }),
        FirstAnswer::Other(Ok(result)) if result.get("protocol_version").is_some() => wire_result(result),
        FirstAnswer::Other(_) => wire_initialize(lines, out, handshake).await,
    }
}

/// A JSONL `response` to the probing `get_state`.
fn is_state_answer(frame: &Value) -> bool {
    frame.get("type").and_then(Value::as_str) == Some("response")
        && frame.get("id").and_then(Value::as_str) == Some(PROBE_GET_STATE_ID)
}

/// Reads JSONL frames until the `get_state` answer.
async fn rpc_state<R: AsyncBufRead + Unpin>(
    lines: &mut LineReader<R>,
    mut ready: Option<Box<ReadyEvent>>,
) -> Result<Detected, DetectError> {
    loop {
        match next_frame(lines).await?.0 {
            Frame::Rpc(frame) if is_state_answer(&frame) => {
                if frame.get("success").and_then(Value::as_bool) != Some(true) {
                    return Err(DetectError::Refused(
                        frame
                            .get("error")
                            .and_then(Value::as_str)
                            .unwrap_or("get_state failed")
                            .to_owned(),
                    ));
                }
                return Ok(Detected::Rpc {
                    ready,
                    state: frame.get("data").cloned().unwrap_or(Value::Null),
                });
            }
            Frame::Rpc(frame) if frame.get("type").and_then(Value::as_str) == Some("ready") => {
                ready = crate::protocol::decode::from_value(frame).ok().map(Box::new);
            }
            // Anything else before the answer (a refusal of the `initialize` line) is noise.
            Frame::Rpc(_) | Frame::JsonRpc(_) => {}
        }
    }
}

async fn wire_initialize<R: AsyncBufRead + Unpin>(
    lines: &mut LineReader<R>,
    out: &Outbox,
    handshake: &Handshake,
) -> Result<Detected, DetectError> {
    let mut request = WireInitializeRequest::new(handshake.wire.clone());
    request.id = Some(WireId::String(PROBE_WIRE_ID.to_owned()));
    send(out, &request).await?;
    loop {
        if let (Frame::JsonRpc(answer), _) = next_frame(lines).await? {
            if answer.id.as_ref().and_then(Value::as_str) == Some(PROBE_WIRE_ID) {
                return match answer.outcome {
                    Ok(result) => wire_result(result),
                    Err(error) => Err(DetectError::Refused(error.message)),
                };
            }
        }
    }
}

fn wire_result(result: Value) -> Result<Detected, DetectError> {
    crate::protocol::decode::from_value(result.clone())
        .map(|r| Detected::Wire(Box::new(r)))
        .map_err(|e| DetectError::Unknown(format!("wire `initialize` result {result}: {e}")))
}

fn acp_answer(answer: JsonRpcAnswer) -> Result<Detected, DetectError> {
    match answer.outcome {
        Ok(result) => crate::protocol::decode::from_value(result.clone())
            .map(|r| Detected::Acp(Box::new(r)))
            .map_err(|e| DetectError::Unknown(format!("ACP `initialize` result {result}: {e}"))),
        Err(error) => Err(DetectError::Refused(error.message)),
    }
}

/// A JSON-RPC answer: its id and result or error.
struct JsonRpcAnswer {
    id: Option<Value>,
    outcome: Result<Value, crate::jsonrpc::Error>,
}

enum Frame {
    /// A frame with a `type` (the JSONL dialect).
    Rpc(Value),
    /// A JSON-RPC response.
    JsonRpc(JsonRpcAnswer),
}

/// The next frame that tells something, with its line; notifications and lines that are not
/// JSON are passed over.
async fn next_frame<R: AsyncBufRead + Unpin>(
    lines: &mut LineReader<R>,
) -> Result<(Frame, Vec<u8>), DetectError> {
    loop {
        let Some(line) = lines.next_line().await? else {
            return Err(DetectError::Closed);
        };
        let InboundLine::Line(bytes) = line else {
            continue;
        };
        let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::debug!("detect: passing over a line that is not a JSON object");
            continue;
        };
        if frame.get("jsonrpc").is_some() {
            let id = frame.get("id").cloned();
            if let Some(result) = frame.get("result") {
                return Ok((Frame::JsonRpc(JsonRpcAnswer {
                    id,
                    outcome: Ok(result.clone()),
                }), bytes));
            }
            if let Some(error) = frame.get("error") {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_owned();
                // A code that is no integer reads as an internal error: only the message is shown.
                let code = error.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok()).unwrap_or(crate::jsonrpc::ErrorCode::InternalError.code());
                return Ok((Frame::JsonRpc(JsonRpcAnswer {
                    id,
                    outcome: Err(crate::jsonrpc::Error::new(code, message)),
                }), bytes));
            }
            continue;
        }
        if frame.get("type").is_some() {
            return Ok((Frame::Rpc(Value::Object(frame)), bytes));
        }
    }
}
