//! OpenAI Responses, streaming.
//!
//! Request: `POST {baseUrl}/responses` (the base URL as OpenAI's SDKs take it, ending in `/v1`)
//! with `model`, `instructions` (the system prompt), `input` items (user messages with
//! `input_text` / `input_image` parts, assistant text, `function_call` and
//! `function_call_output` items, and the reasoning items of earlier replies sent back whole),
//! `tools` as functions, `max_output_tokens`, `stream: true` and `store: false`. A reasoning
//! model also gets `reasoning: {effort, summary: "auto"}` and
//! `include: ["reasoning.encrypted_content"]`: with nothing stored at OpenAI, the encrypted
//! reasoning item is how the model's reasoning reaches the next turn.
//!
//! Response events: `response.created` (the id), `response.output_item.added` /
//! `response.output_item.done` per output item (reasoning, message, function call),
//! `response.reasoning_summary_text.delta` (thinking), `response.output_text.delta` (text),
//! `response.function_call_arguments.delta`, and `response.completed` / `response.incomplete`
//! with usage; `response.failed`, an `error` event or a stream without a final event is an error.
//!
//! A finished reasoning item is kept as the thinking block's signature, as its JSON text (the
//! schema's `thinkingSignature`), so it survives in the session file and goes back as it came.

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::openai::{effort, text_of};
use super::{send_chunk, ChunkStream, Endpoint, ModelChunk, ModelRequest, Provider, ProviderError, TokenUsage};
use crate::protocol::{AgentMessage, AssistantContent, StopReason, TextOrImageContent, UserContent};

/// The `api` name of messages this provider wrote: only their reasoning items go back.
const API: &str = "openai-responses";

/// A provider speaking OpenAI's Responses API.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesProvider {
    /// Where the model is.
    pub endpoint: Endpoint,
}

fn input_parts(content: &[TextOrImageContent]) -> Vec<Value> {
    content
        .iter()
        .map(|c| match c {
            TextOrImageContent::Text(t) => json!({"type": "input_text", "text": t.text}),
            TextOrImageContent::Image(i) => json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", *i.mime_type, i.data)}),
        })
        .collect()
}

fn user_item(content: &UserContent) -> Value {
    match content {
        UserContent::String(s) => json!({"role": "user", "content": [{"type": "input_text", "text": s}]}),
        UserContent::Array(blocks) => json!({"role": "user", "content": input_parts(blocks)}),
    }
}

/// The reasoning item kept in a thinking block's signature, when it is one (a signature from
/// another API is a plain string, never a reasoning item).
fn reasoning_item(signature: &str) -> Option<Value> {
    serde_json::from_str::<Value>(signature).ok().filter(|v| v["type"] == "reasoning")
}

/// The conversation as Responses input items.
pub fn input(history: &[AgentMessage]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in history {
        match m {
            AgentMessage::User(u) => out.push(user_item(&u.content)),
            AgentMessage::Custom(c) => out.push(user_item(&c.content)),
            AgentMessage::Assistant(a) => {
                let ours = a.api == API;
                for c in &a.content {
                    match c {
                        AssistantContent::Thinking(t) if ours => {
                            if let Some(item) = t.thinking_signature.as_deref().and_then(reasoning_item) {
                                out.push(item);
                            }
                        }
                        AssistantContent::Thinking(_) => {}
                        AssistantContent::Text(t) if !t.text.is_empty() => out.push(json!({"role": "assistant", "content": t.text})),
                        AssistantContent::Text(_) => {}
                        // An aborted reply's calls never ran: no result will follow them.
                        AssistantContent::ToolCall(tc) if a.stop_reason != StopReason::Aborted => out.push(json!({
                            "type": "function_call", "call_id": tc.id.as_str(), "name": tc.name.as_str(), "arguments": Value::Object(tc.arguments.clone()).to_string()
                        })),
                        AssistantContent::ToolCall(_) => {}
                    }
                }
            }
            AgentMessage::ToolResult(r) => out.push(json!({"type": "function_call_output", "call_id": r.tool_call_id.as_str(), "output": text_of(&r.content)})),
            AgentMessage::BashExecution(_) | AgentMessage::CompactionSummary(_) | AgentMessage::BranchSummary(_) | AgentMessage::System(_) => {
                if let Some(text) = super::note_text(m) {
                    out.push(json!({"role": "user", "content": [{"type": "input_text", "text": text}]}));
                }
            }
        }
    }
    out
}

impl OpenAiResponsesProvider {
    /// The request body.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": self.endpoint.model,
            "instructions": request.system,
            "input": input(&request.messages),
            "max_output_tokens": self.endpoint.max_tokens,
            "stream": true,
            "store": false,
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name.as_str(), "description": t.description, "parameters": Value::Object(t.parameters.clone())}))
                .collect();
            body["tools"] = Value::Array(tools);
        }
        if self.endpoint.reasoning {
            if let Some(e) = effort(request.thinking) {
                body["reasoning"] = json!({"effort": e, "summary": "auto"});
            }
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        body
    }
}

impl Provider for OpenAiResponsesProvider {
    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let mut builder = self.endpoint.post("/responses", &self.body(&request));
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(key);
        }
        self.endpoint.spawn(builder, run)
    }
}

/// The output item streaming now.
#[derive(Debug, Default)]
struct Item {
    /// A reasoning item whose summary streamed some text.
    thought: bool,
    /// The summary part the last reasoning delta belonged to (parts are joined by a blank line).
    summary_index: Option<u64>,
    /// A function call whose arguments streamed as deltas.
    arguments_streamed: bool,
}

/// The error of an `error` event or a failed response: server-side and rate-limit codes are
/// transient, anything else (an invalid request) is not.
fn stream_error(error: &Value) -> ProviderError {
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    let message = error.get("message").and_then(Value::as_str).unwrap_or("the provider reported an error");
    let mut e = ProviderError::fatal(if code.is_empty() { message.to_owned() } else { format!("{code}: {message}") });
    e.retryable = matches!(code, "server_error" | "rate_limit_exceeded" | "server_is_overloaded" | "slow_down") || message.to_ascii_lowercase().contains("overloaded");
    e
}

fn usage_of(response: &Value) -> TokenUsage {
    let u = response.get("usage").cloned().unwrap_or(Value::Null);
    let count = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let cached = count("/input_tokens_details/cached_tokens").unwrap_or(0);
    TokenUsage {
        input: count("/input_tokens").unwrap_or(0).saturating_sub(cached),
        output: count("/output_tokens").unwrap_or(0),
        cache_read: cached,
        cache_write: 0,
        reasoning: count("/output_tokens_details/reasoning_tokens"),
    }
}

async fn run(builder: reqwest::RequestBuilder, tx: mpsc::Sender<ModelChunk>) -> Result<(), ProviderError> {
    let tx = &tx;
    let mut stream = super::sse::open(builder).await?;
    let mut item = Item::default();
    let mut response_id: Option<String> = None;
    while let Some(event) = stream.next().await {
        let event = event?;
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(_) if event.data.trim().is_empty() => continue,
            Err(e) => return Err(ProviderError::transient(format!("malformed stream event: {e}"))),
        };
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        let text = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        match kind {
            "response.created" => {
                if let Some(id) = data.pointer("/response/id").and_then(Value::as_str) {
                    response_id = Some(id.to_owned());
                    send_chunk(tx, ModelChunk::ResponseId(id.to_owned())).await?;
                }
            }
            "response.output_item.added" => {
                item = Item::default();
                let added = &data["item"];
                if added["type"] == "function_call" {
                    let id = added.get("call_id").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let name = added.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                    send_chunk(tx, ModelChunk::ToolCallStart { id, name }).await?;
                }
            }
            // Summaries of OpenAI's own models; the full reasoning text of open-weight ones served
            // through the same API.
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let part = data.get("summary_index").and_then(Value::as_u64);
                if item.thought && part.is_some() && item.summary_index != part {
                    send_chunk(tx, ModelChunk::Thinking("\n\n".to_owned())).await?;
                }
                item.summary_index = part;
                item.thought = true;
                send_chunk(tx, ModelChunk::Thinking(text("delta"))).await?;
            }
            "response.output_text.delta" | "response.refusal.delta" => send_chunk(tx, ModelChunk::Text(text("delta"))).await?,
            "response.function_call_arguments.delta" => {
                item.arguments_streamed = true;
                send_chunk(tx, ModelChunk::ToolCallArgs(text("delta"))).await?;
            }
            "response.output_item.done" => {
                let done = &data["item"];
                match done["type"].as_str() {
                    Some("reasoning") => {
                        // Without encrypted content (nothing stored, nothing to send back) the
                        // summary is all there is.
                        if done.get("encrypted_content").and_then(Value::as_str).is_some() {
                            if !item.thought {
                                send_chunk(tx, ModelChunk::Thinking(String::new())).await?;
                            }
                            send_chunk(tx, ModelChunk::ThinkingSignature(done.to_string())).await?;
                        }
                    }
                    Some("function_call") if !item.arguments_streamed => {
                        if let Some(args) = done.get("arguments").and_then(Value::as_str).filter(|a| !a.is_empty()) {
                            send_chunk(tx, ModelChunk::ToolCallArgs(args.to_owned())).await?;
                        }
                    }
                    _ => {}
                }
                item = Item::default();
            }
            "response.completed" | "response.incomplete" => {
                let response = &data["response"];
                let length_limited = response.pointer("/incomplete_details/reason").and_then(Value::as_str) == Some("max_output_tokens");
                let id = response.get("id").and_then(Value::as_str).map(str::to_owned).or(response_id);
                send_chunk(tx, ModelChunk::Done { length_limited, usage: usage_of(response), response_id: id }).await?;
                return Ok(());
            }
            "response.failed" => return Err(stream_error(data.pointer("/response/error").unwrap_or(&Value::Null))),
            "error" => return Err(stream_error(data.get("error").filter(|e| e.is_object()).unwrap_or(&data))),
            _ => {}
        }
    }
    Err(ProviderError::transient("the stream was cut off before the response was complete"))
}
