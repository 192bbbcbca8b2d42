//! Model providers: what streams an assistant reply for a conversation.
//!
//! - [`offline`]: the built-in deterministic model (`agentwire/offline`), optionally scripted.
//! - [`openai`]: OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM,
//!   llama.cpp, LM Studio).
//! - [`openai_responses`]: OpenAI Responses (reasoning summaries, encrypted reasoning items).
//! - [`anthropic`]: Anthropic Messages.
//! - [`gemini`]: Google's Gemini API (`generativelanguage.googleapis.com`).
//! - [`config`]: the models file and the built-in provider entries.
//!
//! A provider turns a [`ModelRequest`] into a [`ChunkStream`]: [`ModelChunk`]s ending in `Done`
//! or `Error`. Dropping the stream aborts its task, which drops the HTTP request at once. The
//! providers never retry: the agent loop is the one retry layer (see `agent::run`).

pub mod anthropic;
pub mod config;
pub mod gemini;
pub mod keys;
pub mod offline;
pub mod openai;
pub mod openai_responses;
pub mod redact;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::protocol::{AgentMessage, Model, ThinkingLevel, ToolInfo};

/// What the model is asked.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<AgentMessage>,
    /// Tools offered.
    pub tools: Vec<ToolInfo>,
    /// Effective thinking level (already clamped to what the model supports).
    pub thinking: ThinkingLevel,
    /// What the request is for.
    pub purpose: Purpose,
}

pub use crate::core::model::{ModelChunk, ProviderError, TokenUsage};

/// Why the model is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Purpose {
    /// A turn of the conversation.
    #[default]
    Turn,
    /// Summarising older messages for compaction (no tools; the summary is the answer).
    Compaction,
}

impl ProviderError {
    /// This error with the secrets of `endpoint` and key-shaped tokens redacted (see
    /// [`redact`]); every error an HTTP provider reports goes through here.
    pub fn redacted(mut self, endpoint: &Endpoint) -> Self {
        let mut secrets: Vec<&str> = endpoint.headers.iter().map(|(_, v)| v.as_str()).collect();
        secrets.extend(endpoint.api_key.as_deref());
        self.message = redact::redact(&self.message, &secrets);
        self
    }

    /// A failure that retrying will not fix.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: false, http_status: None, retry_after: None, context_overflow: false }
    }
    /// A transient failure.
    pub fn transient(message: impl Into<String>) -> Self {
        Self { retryable: true, ..Self::fatal(message) }
    }
}

/// A streaming reply; dropping it cancels the request.
#[derive(Debug)]
pub struct ChunkStream {
    rx: mpsc::Receiver<ModelChunk>,
    task: tokio::task::JoinHandle<()>,
}

impl ChunkStream {
    /// Runs `produce` as a task feeding the stream.
    pub fn spawn<F, Fut>(produce: F) -> Self
    where
        F: FnOnce(mpsc::Sender<ModelChunk>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(64);
        Self { rx, task: tokio::spawn(produce(tx)) }
    }

    /// The next chunk; `None` when the producer ended without `Done` / `Error`.
    pub async fn next(&mut self) -> Option<ModelChunk> {
        self.rx.recv().await
    }
}

impl Drop for ChunkStream {
    fn drop(&mut self) {
        // Aborting drops the in-flight HTTP request (and its connection) immediately.
        self.task.abort();
    }
}

/// Something that streams replies.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// Starts a request.
    fn stream(&self, request: ModelRequest) -> ChunkStream;
}

/// Where and how to reach one model of a provider (shared by the HTTP providers).
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Base URL, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com`.
    pub base_url: String,
    /// API key (a bearer token for OpenAI-compatible servers, `x-api-key` for Anthropic).
    pub api_key: Option<String>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Model id.
    pub model: String,
    /// Output token limit per response.
    pub max_tokens: u64,
    /// Whether the model takes thinking parameters.
    pub reasoning: bool,
}

impl Endpoint {
    /// A POST to `path` under the base URL, with the extra headers, as JSON.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> reqwest::RequestBuilder {
        let mut builder = http_client().post(format!("{}{path}", self.base_url.trim_end_matches('/'))).json(body);
        for (k, v) in &self.headers {
            builder = builder.header(k, v);
        }
        builder
    }
}

/// The text that a history message other than a prompt, a reply or a tool result gives the
/// model, as a user turn: a command the user ran, a summary. `None` for the others, and for a
/// command kept out of the context.
pub fn note_text(message: &AgentMessage) -> Option<String> {
    match message {
        AgentMessage::BashExecution(b) if b.exclude_from_context != Some(true) => {
            Some(format!("I ran `{}` (exit code {}):\n```\n{}\n```", b.command, b.exit_code.map_or("none".to_owned(), |c| c.to_string()), b.output))
        }
        AgentMessage::CompactionSummary(c) => Some(format!("<summary>\n{}\n</summary>", c.summary)),
        AgentMessage::BranchSummary(b) => Some(format!("<summary>\n{}\n</summary>", b.summary)),
        // A declared system prompt is not replayed as a note: the request carries the agent's own.
        AgentMessage::BashExecution(_) | AgentMessage::User(_) | AgentMessage::Assistant(_) | AgentMessage::ToolResult(_) | AgentMessage::Custom(_) | AgentMessage::System(_) => None,
    }
}

impl Endpoint {
    /// Streams the reply of `builder`'s request as `run` reads it; an error `run` returns ends
    /// the stream, with this endpoint's secrets redacted.
    pub fn spawn<Fut>(&self, builder: reqwest::RequestBuilder, run: fn(reqwest::RequestBuilder, mpsc::Sender<ModelChunk>) -> Fut) -> ChunkStream
    where
        Fut: std::future::Future<Output = Result<(), ProviderError>> + Send + 'static,
    {
        let endpoint = self.clone();
        ChunkStream::spawn(move |tx| async move {
            if let Err(e) = run(builder, tx.clone()).await {
                let _ = tx.send(ModelChunk::Error(e.redacted(&endpoint))).await;
            }
        })
    }
}

/// Appends `new` items to the user turn that ends `turns` (under `field`: `content` for
/// Anthropic, `parts` for Gemini), or starts one: both APIs want turns to alternate, so tool
/// results and the next user text share one user turn.
pub fn push_user_turn(turns: &mut Vec<serde_json::Value>, field: &str, mut new: Vec<serde_json::Value>) {
    if let Some(last) = turns.last_mut().filter(|m| m["role"] == "user") {
        if let Some(items) = last[field].as_array_mut() {
            items.append(&mut new);
            return;
        }
    }
    turns.push(serde_json::json!({"role": "user", field: new}));
}

/// Sends a chunk to the agent; fails (ending the producer) once the receiver is gone.
pub async fn send_chunk(tx: &mpsc::Sender<ModelChunk>, chunk: ModelChunk) -> Result<(), ProviderError> {
    // The receiver is dropped when the run was aborted; stop quietly.
    tx.send(chunk).await.map_err(|_| ProviderError::fatal("aborted"))
}

/// The wire API of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// The built-in offline model.
    Offline,
    /// OpenAI-compatible Chat Completions.
    OpenAiCompletions,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    AnthropicMessages,
    /// Google's Gemini API.
    GoogleGenerativeAi,
}

impl Api {
    /// The `api` string reported in messages and `Model`.
    pub fn name(self) -> &'static str {
        match self {
            Api::Offline => "offline",
            Api::OpenAiCompletions => "openai-completions",
            Api::OpenAiResponses => "openai-responses",
            Api::AnthropicMessages => "anthropic-messages",
            Api::GoogleGenerativeAi => "google-generative-ai",
        }
    }
}

/// A usable model: its description and how to reach it.
#[derive(Clone)]
pub struct ModelSpec {
    /// The `Model` object hosts see.
    pub info: Model,
    /// The wire API.
    pub api: Api,
    /// Levels the model accepts beyond `high` (`xhigh`).
    pub supports_xhigh: bool,
    /// The provider implementation.
    pub provider: Arc<dyn Provider>,
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of debug output.
        f.debug_struct("ModelSpec").field("provider", &self.info.provider.as_str()).field("id", &self.info.id.as_str()).finish_non_exhaustive()
    }
}

/// The model object describing the offline model.
pub fn offline_model_info() -> Model {
    crate::protocol::decode::from_value(serde_json::json!({
        "id": "offline", "name": "agentwire offline model", "api": "offline", "provider": "agentwire", "baseUrl": "",
        // It reads only the text of a prompt (`offline::user_text`), so it declares text only.
        "reasoning": true, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128_000, "maxTokens": 8192
    }))
    .expect("the offline model object matches the schema")
}

/// The shared HTTP client, built on first use (TLS set-up and system certificates stay off the
/// start-up path). It never retries: the agent loop is the single retry layer. Timeouts guard
/// connects and stalls; a long answer may stream for minutes, so there is no total timeout.
pub fn http_client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        // reqwest is built without a crypto provider of its own (Cargo.toml): rustls uses the
        // process default, ring. `Err` only says one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(300))
            .user_agent(concat!("agentwire/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default()
    })
}

/// Classifies an HTTP error status: 429, 408, 409 and 5xx are transient; 400/401/403/404 are not.
pub fn status_is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

/// Builds the error for a non-success HTTP response, quoting what the server said.
pub fn http_error(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let detail = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(500).collect());
    let lower = detail.to_ascii_lowercase();
    let context_overflow = lower.contains("context length") || lower.contains("context window") || lower.contains("too many tokens") || lower.contains("prompt is too long");
    ProviderError {
        message: format!("{status} {}", detail.trim()),
        retryable: status_is_retryable(status) || lower.contains("overloaded"),
        http_status: Some(status),
        retry_after,
        context_overflow,
    }
}

/// Parses a `Retry-After` header given in seconds (HTTP dates are not worth the bytes here).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<f64>().ok().filter(|s| *s >= 0.0).map(Duration::from_secs_f64)
}

/// An error for a failed connection or body read.
pub fn transport_error(e: &reqwest::Error) -> ProviderError {
    // reqwest's message can contain the URL but never headers, so a key (always sent in a
    // header) cannot leak through it.
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "connection error"
    };
    ProviderError::transient(format!("{what}: {e}"))
}
