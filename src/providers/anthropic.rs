//! Anthropic Messages, streaming.
//!
//! Request: `POST {baseUrl}/v1/messages` with `x-api-key`, `anthropic-version`, `model`,
//! `system`, `messages` (tool calls as `tool_use` blocks, results as `tool_result` blocks in user
//! turns, thinking blocks sent back with their signatures), `tools` with `input_schema`,
//! `max_tokens`, `stream: true` and `thinking: {type: enabled, budget_tokens}` per level.
//! Response events: `message_start` (id, input usage incl. cache), `content_block_start` (text,
//! thinking, tool_use), `content_block_delta` (`text_delta`, `thinking_delta`,
//! `signature_delta`, `input_json_delta`), `message_delta` (stop reason, output usage),
//! `message_stop`; an `error` event or a stream without `message_stop` is an error.

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{send_chunk, Endpoint, ChunkStream, ModelChunk, ModelRequest, Provider, ProviderError, TokenUsage};
use crate::protocol::{AgentMessage, AssistantContent, StopReason, TextOrImageContent, ThinkingLevel, UserContent};

/// The `anthropic-version` header value.
const VERSION: &str = "2023-06-01";

/// A provider speaking Anthropic's Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    /// Where the model is.
    pub endpoint: Endpoint,
}

/// Thinking budget in tokens per level.
pub fn budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium | ThinkingLevel::Auto => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Xhigh | ThinkingLevel::Max => Some(32000),
    }
}

fn blocks(content: &[TextOrImageContent]) -> Vec<Value> {
    content
        .iter()
        .map(|c| match c {
            TextOrImageContent::Text(t) => json!({"type": "text", "text": t.text}),
            TextOrImageContent::Image(i) => json!({"type": "image", "source": {"type": "base64", "media_type": i.mime_type.as_str(), "data": i.data}}),
        })
        .collect()
}

fn push_user(out: &mut Vec<Value>, new: Vec<Value>) {
    super::push_user_turn(out, "content", new);
}

/// The conversation as Messages API turns.
pub fn messages(history: &[AgentMessage]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in history {
        match m {
            AgentMessage::User(u) => push_user(
                &mut out,
                match &u.content {
                    UserContent::String(s) => vec![json!({"type": "text", "text": s})],
                    UserContent::Array(b) => blocks(b),
                },
            ),
            AgentMessage::Assistant(a) => {
                let content: Vec<Value> = a
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        AssistantContent::Text(t) if !t.text.is_empty() => Some(json!({"type": "text", "text": t.text})),
                        AssistantContent::Thinking(t) => {
                            t.thinking_signature.as_ref().map(|sig| json!({"type": "thinking", "thinking": t.thinking, "signature": sig}))
                        }
                        AssistantContent::ToolCall(tc) if a.stop_reason != StopReason::Aborted => {
                            Some(json!({"type": "tool_use", "id": tc.id.as_str(), "name": tc.name.as_str(), "input": Value::Object(tc.arguments.clone())}))
                        }
                        _ => None,
                    })
                    .collect();
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                }
            }
            AgentMessage::ToolResult(r) => push_user(
                &mut out,
                vec![json!({"type": "tool_result", "tool_use_id": r.tool_call_id.as_str(), "content": blocks(&r.content), "is_error": r.is_error})],
            ),
            AgentMessage::BashExecution(_) | AgentMessage::CompactionSummary(_) | AgentMessage::BranchSummary(_) | AgentMessage::System(_) => {
                if let Some(text) = super::note_text(m) {
                    push_user(&mut out, vec![json!({"type": "text", "text": text})]);
                }
            }
            AgentMessage::Custom(c) => push_user(
                &mut out,
                match &c.content {
                    UserContent::String(s) => vec![json!({"type": "text", "text": s})],
                    UserContent::Array(b) => blocks(b),
                },
            ),
        }
    }
    out
}

impl AnthropicProvider {
    /// The request body.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": self.endpoint.model,
            "system": request.system,
            "messages": messages(&request.messages),
            "max_tokens": self.endpoint.max_tokens,
            "stream": true,
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name.as_str(), "description": t.description, "input_schema": Value::Object(t.parameters.clone())}))
                .collect();
            body["tools"] = Value::Array(tools);
        }
        if let Some(b) = budget(request.thinking).filter(|_| self.endpoint.reasoning) {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": b});
            // max_tokens must leave room for the answer after the thinking budget.
            body["max_tokens"] = json!(self.endpoint.max_tokens.max(b + 1024));
        }
        body
    }
}

impl Provider for AnthropicProvider {
    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let mut builder = self.endpoint.post("/v1/messages", &self.body(&request)).header("anthropic-version", VERSION);
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.header("x-api-key", key);
        }
        self.endpoint.spawn(builder, run)
    }
}

async fn run(builder: reqwest::RequestBuilder, tx: mpsc::Sender<ModelChunk>) -> Result<(), ProviderError> {
    let tx = &tx;
    let mut stream = super::sse::open(builder).await?;
    let mut usage = TokenUsage::default();
    let mut response_id = None;
    let mut stop_reason: Option<String> = None;
    while let Some(event) = stream.next().await {
        let event = event?;
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(_) if event.data.trim().is_empty() => continue,
            Err(e) => return Err(ProviderError::transient(format!("malformed stream event: {e}"))),
        };
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                response_id = data.pointer("/message/id").and_then(Value::as_str).map(str::to_owned);
                let u = data.pointer("/message/usage").cloned().unwrap_or(Value::Null);
                usage.input = u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
                usage.cache_read = u.get("cache_read_input_tokens").and_then(Value::as_u64).unwrap_or(0);
                usage.cache_write = u.get("cache_creation_input_tokens").and_then(Value::as_u64).unwrap_or(0);
                usage.output = u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
            }
            "content_block_start" => {
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                        let name = block.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                        send_chunk(tx, ModelChunk::ToolCallStart { id, name }).await?;
                    }
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            send_chunk(tx, ModelChunk::Text(t.to_owned())).await?;
                        }
                    }
                    Some("thinking") => {
                        if let Some(t) = block.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            send_chunk(tx, ModelChunk::Thinking(t.to_owned())).await?;
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => send_chunk(tx, ModelChunk::Text(text("text"))).await?,
                    Some("thinking_delta") => send_chunk(tx, ModelChunk::Thinking(text("thinking"))).await?,
                    Some("signature_delta") => send_chunk(tx, ModelChunk::ThinkingSignature(text("signature"))).await?,
                    Some("input_json_delta") => send_chunk(tx, ModelChunk::ToolCallArgs(text("partial_json"))).await?,
                    _ => {}
                }
            }
            "message_delta" => {
                stop_reason = data.pointer("/delta/stop_reason").and_then(Value::as_str).map(str::to_owned).or(stop_reason);
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    usage.output = out;
                }
            }
            "message_stop" => {
                send_chunk(tx, ModelChunk::Done { length_limited: stop_reason.as_deref() == Some("max_tokens"), usage, response_id }).await?;
                return Ok(());
            }
            "error" => {
                let kind = data.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or("the provider reported an error");
                let mut e = ProviderError::fatal(format!("{kind}: {message}"));
                e.retryable = matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error");
                return Err(e);
            }
            _ => {}
        }
    }
    Err(ProviderError::transient("the stream was cut off before message_stop"))
}

