//! OpenAI-compatible Chat Completions, streaming.
//!
//! Request: `POST {baseUrl}/chat/completions` with `model`, `messages` (system, user parts with
//! `data:` image URLs, assistant text + `tool_calls`, `tool` results), `tools`, `stream: true`,
//! `stream_options.include_usage`, `max_completion_tokens` and `reasoning_effort` for reasoning
//! models. Response: SSE `data:` chunks with `choices[0].delta` (`content`, `reasoning_content` /
//! `reasoning`, `tool_calls` with incrementally streamed `arguments`), a `finish_reason`, a
//! usage-only chunk, then `[DONE]`. A stream that ends without a finish reason is an error
//! (retryable), never a finished message.

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{send_chunk, Endpoint, ChunkStream, ModelChunk, ModelRequest, Provider, ProviderError, TokenUsage};
use crate::protocol::{AgentMessage, AssistantContent, StopReason, TextOrImageContent, ThinkingLevel, UserContent};

/// A provider speaking OpenAI's Chat Completions.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    /// Where the model is.
    pub endpoint: Endpoint,
}

/// Text of a user-side content.
fn parts(content: &[TextOrImageContent]) -> Vec<Value> {
    content
        .iter()
        .map(|c| match c {
            TextOrImageContent::Text(t) => json!({"type": "text", "text": t.text}),
            TextOrImageContent::Image(i) => json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", *i.mime_type, i.data)}}),
        })
        .collect()
}

/// The text of a tool result (an image as `[image]`).
pub(super) fn text_of(content: &[TextOrImageContent]) -> String {
    let mut out = String::new();
    for c in content {
        match c {
            TextOrImageContent::Text(t) => out.push_str(&t.text),
            TextOrImageContent::Image(_) => out.push_str("[image]"),
        }
    }
    out
}

/// A user turn's content: text alone as a plain string, parts only when there is an image. Local
/// servers render messages through the model's chat template, and many templates (llama.cpp's
/// server with SmolLM2's, for one) concatenate `content` as a string: an array of parts there
/// fails the request mid-stream.
fn user_content(content: &UserContent) -> Value {
    match content {
        UserContent::String(s) => json!(s),
        UserContent::Array(blocks) if blocks.iter().all(|b| matches!(b, TextOrImageContent::Text(_))) => json!(text_of(blocks)),
        UserContent::Array(blocks) => Value::Array(parts(blocks)),
    }
}

/// The conversation as Chat Completions messages.
pub fn messages(system: &str, history: &[AgentMessage]) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": system})];
    for m in history {
        match m {
            AgentMessage::User(u) => out.push(json!({"role": "user", "content": user_content(&u.content)})),
            AgentMessage::Assistant(a) => {
                let text: String = a.content.iter().filter_map(|c| if let AssistantContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect();
                let calls: Vec<Value> = a
                    .content
                    .iter()
                    .filter_map(|c| if let AssistantContent::ToolCall(tc) = c { Some(tc) } else { None })
                    .map(|tc| json!({"id": tc.id.as_str(), "type": "function", "function": {"name": tc.name.as_str(), "arguments": Value::Object(tc.arguments.clone()).to_string()}}))
                    .collect();
                // A failed or aborted reply without text says nothing the model needs.
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() && a.stop_reason != StopReason::Aborted {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
            AgentMessage::ToolResult(r) => out.push(json!({"role": "tool", "tool_call_id": r.tool_call_id.as_str(), "content": text_of(&r.content)})),
            AgentMessage::BashExecution(_) | AgentMessage::CompactionSummary(_) | AgentMessage::BranchSummary(_) | AgentMessage::System(_) => {
                if let Some(text) = super::note_text(m) {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
            AgentMessage::Custom(c) => out.push(json!({"role": "user", "content": user_content(&c.content)})),
        }
    }
    out
}

/// The `reasoning_effort` (Chat Completions) or `reasoning.effort` (Responses) for a level.
pub(super) fn effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium | ThinkingLevel::Auto => Some("medium"),
        ThinkingLevel::High => Some("high"),
        ThinkingLevel::Xhigh | ThinkingLevel::Max => Some("xhigh"),
    }
}

impl OpenAiProvider {
    /// The request body for a request.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": self.endpoint.model,
            "messages": messages(&request.system, &request.messages),
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": self.endpoint.max_tokens,
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name.as_str(), "description": t.description, "parameters": Value::Object(t.parameters.clone())}}))
                .collect();
            body["tools"] = Value::Array(tools);
        }
        if self.endpoint.reasoning {
            if let Some(e) = effort(request.thinking) {
                body["reasoning_effort"] = json!(e);
            }
        }
        body
    }
}

impl Provider for OpenAiProvider {
    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let mut builder = self.endpoint.post("/chat/completions", &self.body(&request));
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(key);
        }
        self.endpoint.spawn(builder, run)
    }
}

#[derive(Default)]
struct ToolState {
    /// The provider's index of the call currently streaming.
    current: Option<u64>,
}

async fn run(builder: reqwest::RequestBuilder, tx: mpsc::Sender<ModelChunk>) -> Result<(), ProviderError> {
    let tx = &tx;
    let mut stream = super::sse::open(builder).await?;
    let mut finish: Option<String> = None;
    let mut usage = TokenUsage::default();
    let mut response_id = None;
    let mut thinking_announced = false;
    let mut tools = ToolState::default();
    let mut done = false;
    while let Some(event) = stream.next().await {
        let event = event?;
        if event.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| ProviderError::transient(format!("malformed stream chunk: {e}")))?;
        if let Some(err) = chunk.get("error") {
            let message = err.get("message").and_then(Value::as_str).unwrap_or("the provider reported an error");
            return Err(ProviderError::transient(message.to_owned()));
        }
        if response_id.is_none() {
            response_id = chunk.get("id").and_then(Value::as_str).map(str::to_owned);
            if let Some(id) = &response_id {
                send_chunk(tx, ModelChunk::ResponseId(id.clone())).await?;
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let prompt = u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
            let cached = u.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
            usage = TokenUsage {
                input: prompt.saturating_sub(cached),
                output: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
                cache_read: cached,
                cache_write: 0,
                reasoning: u.pointer("/completion_tokens_details/reasoning_tokens").and_then(Value::as_u64),
            };
        }
        let Some(choice) = chunk.pointer("/choices/0") else { continue };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                // The signature names the field the reasoning came from (as pi records it),
                // from the block's start on.
                if !thinking_announced {
                    thinking_announced = true;
                    send_chunk(tx, ModelChunk::ThinkingSignature(field.to_owned())).await?;
                }
                send_chunk(tx, ModelChunk::Thinking(text.to_owned())).await?;
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            send_chunk(tx, ModelChunk::Text(text.to_owned())).await?;
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if tools.current != Some(index) {
                tools.current = Some(index);
                let id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{index}"), str::to_owned);
                let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_owned();
                send_chunk(tx, ModelChunk::ToolCallStart { id, name }).await?;
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str).filter(|a| !a.is_empty()) {
                send_chunk(tx, ModelChunk::ToolCallArgs(args.to_owned())).await?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            finish = Some(reason.to_owned());
        }
    }
    match finish {
        Some(reason) => {
            send_chunk(tx, ModelChunk::Done { length_limited: reason == "length", usage, response_id }).await?;
            Ok(())
        }
        None if done => Err(ProviderError::transient("the stream ended without a finish reason")),
        None => Err(ProviderError::transient("the stream was cut off before the response was complete")),
    }
}

