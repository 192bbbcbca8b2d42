//! A host of the pi/omp JSONL dialect: commands out with an id, their `response` back, the
//! agent's events as a stream, and its dialogs answered through a [`RpcHostHandler`].
//!
//! The same shape as the TypeScript and Python `AgentClient`s: `request(command)` resolves
//! with the command's typed `data` (or the agent's refusal), [`RpcEvents`] yields every frame
//! that is not an answer, and dialogs the handler does not answer are dismissed (`cancelled`),
//! so an agent never waits on a host that cannot ask anyone.
//!
//! Events are kept as the agent wrote them ([`RpcAgentFrame`]): pi, oh-my-pi and agentwire
//! differ in fields the schema does not know, and a host must not lose an event because a
//! peer added one. [`RpcAgentFrame::typed`] parses one into the generated [`RpcEvent`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{ExtensionUiResponse, RpcErrorCode, RpcEvent, RpcMethod, RpcResponse};
use crate::transport::{spawn_writer, InboundLine, LineReader, Outbox};

/// Longest line read from an agent (pi's `get_messages` of a long session is large).
pub const MAX_AGENT_LINE_BYTES: usize = 256 * 1024 * 1024;
/// Bytes of our frames that may wait for a slow agent.
const OUTBOUND_BUDGET: usize = 16 * 1024 * 1024;

/// Why a command got no answer, or not the one asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent's output ended (it exited or closed stdout) before it answered.
    #[error("the agent closed its output before answering `{command}`")]
    Closed {
        /// The command's `type`.
        command: &'static str,
    },
    /// The command could not be written (the agent's input is closed).
    #[error("cannot send `{command}`: the agent's input is closed")]
    Write {
        /// The command's `type`.
        command: &'static str,
    },
    /// The agent answered `success: false`.
    #[error("`{command}` failed: {message}")]
    Rejected {
        /// The command's `type`.
        command: &'static str,
        /// The agent's reason.
        message: String,
        /// Its error class, when the agent gave one (agentwire does, pi does not).
        code: Option<RpcErrorCode>,
    },
    /// The answer's `data` does not have the command's result shape.
    #[error("`{command}`: unexpected response data: {source}")]
    Data {
        /// The command's `type`.
        command: &'static str,
        /// What did not fit.
        #[source]
        source: serde_json::Error,
    },
}

/// One frame from the agent that is not an answer to our commands: an event, a notice (an
/// `extension_ui_request` that needs no answer), or anything else it writes.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcAgentFrame {
    frame: Value,
}

impl RpcAgentFrame {
    /// The frame's `type` (`""` when it has none).
    pub fn kind(&self) -> &str {
        self.frame
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The frame as written.
    pub fn json(&self) -> &Value {
        &self.frame
    }

    /// The frame, owned.
    pub fn into_json(self) -> Value {
        self.frame
    }

    /// The frame as one of the schema's events, when it is one and fits it.
    pub fn typed(&self) -> Option<RpcEvent> {
        crate::protocol::decode::from_ref(&self.frame).ok()
    }

    /// Parses the frame into any shape (a host's own lenient view of an event).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        crate::protocol::decode::from_ref(&self.frame)
    }
}

/// The stream of the agent's frames; ends when the agent's output ends.
#[derive(Debug)]
pub struct RpcEvents {
    rx: mpsc::UnboundedReceiver<RpcAgentFrame>,
}

impl RpcEvents {
    /// The next frame, `None` once the agent's output ended.
    pub async fn next(&mut self) -> Option<RpcAgentFrame> {
        self.rx.recv().await
    }

    /// The next frame already received, without waiting.
    pub fn try_next(&mut self) -> Option<RpcAgentFrame> {
        self.rx.try_recv().ok()
    }
}

/// A dialog the agent opens (`extension_ui_request` with `select`, `confirm`, `input` or
/// `editor`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct RpcDialog {
    /// The request id the answer names.
    pub id: String,
    /// `select`, `confirm`, `input` or `editor`.
    pub method: String,
    /// The dialog's title.
    #[serde(default)]
    pub title: String,
    /// The question (confirm).
    #[serde(default)]
    pub message: Option<String>,
    /// The choices (select).
    #[serde(default)]
    pub options: Vec<String>,
    /// The placeholder (input) or prefilled text (editor).
    #[serde(default)]
    pub placeholder: Option<String>,
    /// Prefilled text (editor).
    #[serde(default)]
    pub prefill: Option<String>,
}

/// The host's answer to a dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DialogAnswer {
    /// The chosen option or the text entered (select, input, editor).
    Value(String),
    /// Yes or no (confirm).
    Confirmed(bool),
    /// Dismissed: nobody answered.
    Cancelled,
}

/// What the host does when the agent asks something. Every method has a default, so a host
/// implements only what it can show.
pub trait RpcHostHandler: Send + Sync + 'static {
    /// A dialog; the default dismisses it (a host without a user cannot answer).
    fn dialog(&self, dialog: RpcDialog) -> BoxFuture<'_, DialogAnswer> {
        let _ = dialog;
        Box::pin(async { DialogAnswer::Cancelled })
    }
}

/// The handler that answers nothing (every dialog dismissed).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHost;

impl RpcHostHandler for NoHost {}

type Waiters = Arc<Mutex<Option<HashMap<String, oneshot::Sender<RpcResponse>>>>>;

/// The agent's input, until [`RpcClient::close`] drops it (the writer ends when the last
/// [`Outbox`] goes, and only then does the agent see EOF).
#[derive(Debug, Clone, Default)]
struct Input(Arc<Mutex<Option<Outbox>>>);

impl Input {
    fn get(&self) -> Option<Outbox> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn close(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A connection to an agent speaking the JSONL dialect.
#[derive(Debug, Clone)]
pub struct RpcClient {
    input: Input,
    waiting: Waiters,
    next_id: Arc<AtomicU64>,
}

/// `command` with our correlation id in front of its own fields.
#[derive(Serialize)]
pub(crate) struct WithId<'a, C> {
    pub(crate) id: &'a str,
    #[serde(flatten)]
    pub(crate) command: &'a C,
}

impl RpcClient {
    /// Connects to an agent reading `input` (its stdout) and writing `output` (its stdin).
    pub fn connect<R, W>(input: R, output: W, host: impl RpcHostHandler) -> (Self, RpcEvents)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, _writer) = spawn_writer(output, OUTBOUND_BUDGET);
        Self::over(LineReader::new(input, MAX_AGENT_LINE_BYTES), out, host)
    }

    /// Connects over a line reader and an outbox already in use (after dialect detection).
    pub fn over<R>(
        lines: LineReader<R>,
        out: Outbox,
        host: impl RpcHostHandler,
    ) -> (Self, RpcEvents)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
    {
        let waiting: Waiters = Arc::new(Mutex::new(Some(HashMap::new())));
        let input = Input(Arc::new(Mutex::new(Some(out))));
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(read_frames(
            lines,
            input.clone(),
            waiting.clone(),
            tx,
            Arc::new(host),
        ));
        (
            Self {
                input,
                waiting,
                next_id: Arc::new(AtomicU64::new(1)),
            },
            RpcEvents { rx },
        )
    }

    /// Sends `command` and waits for its response, as written.
    pub async fn send<C: RpcMethod + Serialize>(
        &self,
        command: &C,
    ) -> Result<RpcResponse, ClientError> {
        let id = format!("agentwire-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        match self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            Some(waiting) => waiting.insert(id.clone(), tx),
            None => {
                return Err(ClientError::Closed {
                    command: C::COMMAND,
                })
            }
        };
        let sent = match self.input.get() {
            Some(out) => out.send(&WithId { id: &id, command }).await.is_ok(),
            None => false,
        };
        if !sent {
            self.forget(&id);
            return Err(ClientError::Write {
                command: C::COMMAND,
            });
        }
        rx.await.map_err(|_| ClientError::Closed {
            command: C::COMMAND,
        })
    }

    /// Sends `command` and returns its typed `data`, or the agent's refusal.
    pub async fn request<C>(&self, command: &C) -> Result<C::Data, ClientError>
    where
        C: RpcMethod + Serialize,
        C::Data: DeserializeOwned,
    {
        let response = self.send(command).await?;
        if !response.success {
            return Err(ClientError::Rejected {
                command: C::COMMAND,
                message: response
                    .error
                    .unwrap_or_else(|| "no reason given".to_owned()),
                code: response.code,
            });
        }
        crate::protocol::decode::from_value::<C::Data>(response.data.unwrap_or(Value::Null)).map_err(|source| {
            ClientError::Data {
                command: C::COMMAND,
                source,
            }
        })
    }

    /// Closes the agent's input (it sees EOF once what is queued is written). Commands sent
    /// afterwards fail with [`ClientError::Write`]; answers still arrive.
    pub fn close(&self) {
        self.input.close();
    }

    /// Whether the agent's output has ended.
    pub fn is_closed(&self) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    fn forget(&self, id: &str) {
        if let Some(waiting) = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            waiting.remove(id);
        }
    }
}

/// Routes the agent's lines: answers to their waiters, dialogs to the host, the rest to the
/// event stream. At the end every waiter learns the agent is gone.
async fn read_frames<R: AsyncBufRead + Unpin>(
    mut lines: LineReader<R>,
    input: Input,
    waiting: Waiters,
    events: mpsc::UnboundedSender<RpcAgentFrame>,
    host: Arc<dyn RpcHostHandler>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        let InboundLine::Line(bytes) = line else {
            tracing::warn!("skipping an agent line over {MAX_AGENT_LINE_BYTES} bytes");
            continue;
        };
        let Ok(frame) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::warn!(
                "skipping an agent line that is not JSON: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            );
            continue;
        };
        match frame.get("type").and_then(Value::as_str) {
            Some("response") => {
                let id = frame.get("id").and_then(Value::as_str).map(str::to_owned);
                let waiter = id.and_then(|id| {
                    waiting
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .as_mut()
                        .and_then(|w| w.remove(&id))
                });
                match (waiter, crate::protocol::decode::from_ref::<RpcResponse>(&frame)) {
                    (Some(waiter), Ok(response)) => {
                        let _ = waiter.send(response);
                    }
                    (Some(waiter), Err(_)) => {
                        // A peer's response with fields the schema lacks: keep what a host needs.
                        let lenient: LenientResponse =
                            crate::protocol::decode::from_ref::<LenientResponse>(&frame).unwrap_or_default();
                        let response = RpcResponse::new(lenient.command, lenient.success)
                            .with_data(lenient.data)
                            .with_error(lenient.error);
                        let _ = waiter.send(response);
                    }
                    (None, _) => {
                        let _ = events.send(RpcAgentFrame { frame });
                    }
                }
            }
            Some("extension_ui_request")
                if matches!(
                    frame.get("method").and_then(Value::as_str),
                    Some("select" | "confirm" | "input" | "editor")
                ) =>
            {
                match crate::protocol::decode::from_ref::<RpcDialog>(&frame) {
                    Ok(dialog) => {
                        let (host, input) = (host.clone(), input.clone());
                        tokio::spawn(async move {
                            let id = dialog.id.clone();
                            let answer = host.dialog(dialog).await;
                            let Ok(id) = id.parse() else { return };
                            let response = ExtensionUiResponse::new(id);
                            let response = match answer {
                                DialogAnswer::Value(v) => response.with_value(v),
                                DialogAnswer::Confirmed(c) => response.with_confirmed(c),
                                DialogAnswer::Cancelled => response.with_cancelled(true),
                            };
                            if let Some(out) = input.get() {
                                let _ = out.send(&response).await;
                            }
                        });
                    }
                    Err(e) => tracing::warn!("skipping a dialog request that does not fit: {e}"),
                }
            }
            _ => {
                let _ = events.send(RpcAgentFrame { frame });
            }
        }
    }
    // Dropping the waiters' senders tells every pending command the agent is gone.
    waiting.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// The parts of a `response` a host needs, from any peer.
#[derive(Debug, Default, Deserialize)]
struct LenientResponse {
    #[serde(default)]
    command: String,
    #[serde(default)]
    success: bool,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}
