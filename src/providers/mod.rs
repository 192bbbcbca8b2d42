//! Model providers: what streams an assistant reply for a conversation.
//!
//! - [`offline`]: the built-in deterministic model (`agentwire/offline`), the default when no
//!   provider is configured; optionally scripted with `--model-script FILE`.
//!
//! A provider turns a request into a stream of [`ModelChunk`]s; the agent loop turns those into
//! `message_update` events and the final assistant message.

pub mod offline;

use crate::protocol::{AgentMessage, Model, ThinkingLevel, ToolInfo};

/// What the model is asked.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The conversation so far.
    pub messages: Vec<AgentMessage>,
    /// Tools offered.
    pub tools: Vec<ToolInfo>,
    /// Requested thinking level.
    pub thinking: ThinkingLevel,
}

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChunk {
    /// Reasoning text.
    Thinking(String),
    /// Answer text.
    Text(String),
    /// A tool call starts.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Raw JSON argument text of the current tool call.
    ToolCallArgs(String),
    /// The reply failed (after whatever streamed before).
    Error(String),
    /// The reply finished.
    Done {
        /// `length` when cut by the token limit; otherwise `stop` (tool calls make it `toolUse`).
        length_limited: bool,
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
    },
}

/// The model object describing the offline model.
pub fn offline_model_info() -> Model {
    serde_json::from_value(serde_json::json!({
        "id": "offline", "name": "agentwire offline model", "api": "offline", "provider": "agentwire", "baseUrl": "",
        "reasoning": true, "input": ["text", "image"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128_000, "maxTokens": 8192
    }))
    .expect("the offline model object matches the schema")
}
