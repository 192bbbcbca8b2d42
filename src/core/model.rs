//! What a model streams, as plain values: the chunks of a reply ([`ModelChunk`]), its token
//! counts and why it failed. Providers produce them; the core's message builder
//! ([`super::stream::MessageBuilder`]) turns them into events, for the built-in agent's runs and
//! for [`super::Runs`] alike.

use std::time::Duration;

/// Token counts of one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Input tokens, cache reads and writes excluded.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Of the output, the reasoning tokens, when the provider counts them apart.
    pub reasoning: Option<u64>,
}

/// Why a request failed, and whether trying again may help.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    /// What the server (or the connection) said; never contains the API key.
    pub message: String,
    /// 429, 5xx, overloaded, connection failures, streams cut before their end.
    pub retryable: bool,
    /// HTTP status, when there was one.
    pub http_status: Option<u16>,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
    /// The context window was exceeded (compaction may help).
    pub context_overflow: bool,
}

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChunk {
    /// Reasoning text.
    Thinking(String),
    /// Signature of the current thinking block (Anthropic, Gemini), the provider field the
    /// reasoning came from (OpenAI-compatible), or the whole encrypted reasoning item as JSON
    /// text (OpenAI Responses), which goes back to the provider with the next request.
    ThinkingSignature(String),
    /// Answer text.
    Text(String),
    /// Signature of the last text block (Gemini's `thoughtSignature` on a text part).
    TextSignature(String),
    /// A tool call starts.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Raw JSON argument text of the current tool call.
    ToolCallArgs(String),
    /// Signature of the current tool call (Gemini's `thoughtSignature` on a function call,
    /// which must go back with the call).
    ToolCallSignature(String),
    /// The provider's response id, as soon as the stream names it (an aborted message keeps it,
    /// as pi's and omp's do).
    ResponseId(String),
    /// The reply failed (after whatever streamed before).
    Error(ProviderError),
    /// The reply finished.
    Done {
        /// Cut by the output token limit.
        length_limited: bool,
        /// Token usage.
        usage: TokenUsage,
        /// The provider's response id.
        response_id: Option<String>,
    },
}

