//! Google's Gemini API, streaming.
//!
//! Request: `POST {baseUrl}/v1beta/models/{model}:streamGenerateContent?alt=sse` (the base URL is
//! the host, `https://generativelanguage.googleapis.com`) with the key in `x-goog-api-key`,
//! `systemInstruction`, `contents` (role `user` / `model`; parts `text`, `inlineData`,
//! `functionCall {name, args}`, `functionResponse {name, response}`), `tools` as
//! `functionDeclarations` (JSON Schema in `parametersJsonSchema`), and `generationConfig`
//! (`maxOutputTokens`; `thinkingConfig {includeThoughts, thinkingBudget}` for a reasoning model).
//!
//! Response: SSE `data:` chunks, each a `GenerateContentResponse`: `candidates[0].content.parts`
//! (thought parts, `thought: true`, are thinking; function calls come whole), a `finishReason`
//! and `usageMetadata` on the last. A `thoughtSignature` on a part is kept with its block (the
//! thinking, text or tool call) and goes back on the same part of the next request: Gemini
//! requires it on function calls. A stream that ends without a finish reason is an error.

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::anthropic::budget;
use super::openai::text_of;
use super::{send_chunk, ChunkStream, Endpoint, ModelChunk, ModelRequest, Provider, ProviderError, TokenUsage};
use crate::protocol::{AgentMessage, AssistantContent, StopReason, TextOrImageContent, UserContent};

/// The `api` name of messages this provider wrote: only their signatures go back.
const API: &str = "google-generative-ai";

/// A provider speaking Google's Gemini API.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    /// Where the model is.
    pub endpoint: Endpoint,
}

fn parts(content: &[TextOrImageContent]) -> Vec<Value> {
    content
        .iter()
        .map(|c| match c {
            TextOrImageContent::Text(t) => json!({"text": t.text}),
            TextOrImageContent::Image(i) => json!({"inlineData": {"mimeType": i.mime_type.as_str(), "data": i.data}}),
        })
        .collect()
}

fn user_parts(content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::String(s) => vec![json!({"text": s})],
        UserContent::Array(blocks) => parts(blocks),
    }
}

fn push_user(out: &mut Vec<Value>, new: Vec<Value>) {
    super::push_user_turn(out, "parts", new);
}

/// `part` with `signature` attached, when there is one.
fn signed(mut part: Value, signature: Option<&String>) -> Value {
    if let Some(sig) = signature {
        part["thoughtSignature"] = json!(sig);
    }
    part
}

/// The conversation as Gemini contents.
pub fn contents(history: &[AgentMessage]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in history {
        match m {
            AgentMessage::User(u) => push_user(&mut out, user_parts(&u.content)),
            AgentMessage::Custom(c) => push_user(&mut out, user_parts(&c.content)),
            AgentMessage::Assistant(a) => {
                // Signatures are Gemini's own: another provider's would be rejected.
                let ours = a.api == API;
                let model_parts: Vec<Value> = a
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        // Thoughts go back only to carry their signature; Gemini does not read
                        // their text.
                        AssistantContent::Thinking(t) => {
                            t.thinking_signature.as_ref().filter(|_| ours).map(|sig| json!({"thought": true, "text": t.thinking, "thoughtSignature": sig}))
                        }
                        AssistantContent::Text(t) if !t.text.is_empty() => Some(signed(json!({"text": t.text}), t.text_signature.as_ref().filter(|_| ours))),
                        AssistantContent::Text(_) => None,
                        AssistantContent::ToolCall(tc) if a.stop_reason != StopReason::Aborted => Some(signed(
                            json!({"functionCall": {"name": tc.name.as_str(), "args": Value::Object(tc.arguments.clone())}}),
                            tc.thought_signature.as_ref().filter(|_| ours),
                        )),
                        AssistantContent::ToolCall(_) => None,
                    })
                    .collect();
                if !model_parts.is_empty() {
                    out.push(json!({"role": "model", "parts": model_parts}));
                }
            }
            AgentMessage::ToolResult(r) => {
                let text = text_of(&r.content);
                let response = if r.is_error { json!({"error": text}) } else { json!({"output": text}) };
                push_user(&mut out, vec![json!({"functionResponse": {"name": r.tool_name.as_str(), "response": response}})]);
            }
            AgentMessage::BashExecution(_) | AgentMessage::CompactionSummary(_) | AgentMessage::BranchSummary(_) | AgentMessage::System(_) => {
                if let Some(text) = super::note_text(m) {
                    push_user(&mut out, vec![json!({"text": text})]);
                }
            }
        }
    }
    out
}

impl GeminiProvider {
    /// The request body.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "contents": contents(&request.messages),
            "systemInstruction": {"parts": [{"text": request.system}]},
            "generationConfig": {"maxOutputTokens": self.endpoint.max_tokens},
        });
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name.as_str(), "description": t.description, "parametersJsonSchema": Value::Object(t.parameters.clone())}))
                .collect();
            body["tools"] = json!([{"functionDeclarations": declarations}]);
        }
        if let Some(b) = budget(request.thinking).filter(|_| self.endpoint.reasoning) {
            body["generationConfig"]["thinkingConfig"] = json!({"includeThoughts": true, "thinkingBudget": b});
        }
        body
    }
}

impl Provider for GeminiProvider {
    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let path = format!("/v1beta/models/{}:streamGenerateContent?alt=sse", self.endpoint.model);
        let mut builder = self.endpoint.post(&path, &self.body(&request));
        if let Some(key) = &self.endpoint.api_key {
            builder = builder.header("x-goog-api-key", key);
        }
        self.endpoint.spawn(builder, run)
    }
}

/// An error the stream reports in place of a chunk (`{"error": {code, message, status}}`).
fn stream_error(error: &Value) -> ProviderError {
    let code = error.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
    let status = error.get("status").and_then(Value::as_str).unwrap_or_default();
    let message = error.get("message").and_then(Value::as_str).unwrap_or("the provider reported an error");
    let mut e = ProviderError::fatal(match code {
        Some(c) => format!("{c} {message}"),
        None => message.to_owned(),
    });
    e.http_status = code;
    e.retryable = code.is_some_and(super::status_is_retryable) || matches!(status, "UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "INTERNAL");
    e
}

fn usage_of(u: &Value) -> TokenUsage {
    let count = |k: &str| u.get(k).and_then(Value::as_u64);
    let cached = count("cachedContentTokenCount").unwrap_or(0);
    let thoughts = count("thoughtsTokenCount");
    TokenUsage {
        input: count("promptTokenCount").unwrap_or(0).saturating_sub(cached),
        // Thought tokens are counted apart from the candidates' and billed as output.
        output: count("candidatesTokenCount").unwrap_or(0) + thoughts.unwrap_or(0),
        cache_read: cached,
        cache_write: 0,
        reasoning: thoughts,
    }
}

async fn run(builder: reqwest::RequestBuilder, tx: mpsc::Sender<ModelChunk>) -> Result<(), ProviderError> {
    let tx = &tx;
    let mut stream = super::sse::open(builder).await?;
    let mut usage = TokenUsage::default();
    let mut response_id: Option<String> = None;
    let mut finish: Option<String> = None;
    let mut calls = 0u32;
    while let Some(event) = stream.next().await {
        let event = event?;
        let chunk: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(_) if event.data.trim().is_empty() => continue,
            Err(e) => return Err(ProviderError::transient(format!("malformed stream chunk: {e}"))),
        };
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if response_id.is_none() {
            if let Some(id) = chunk.get("responseId").and_then(Value::as_str) {
                response_id = Some(id.to_owned());
                send_chunk(tx, ModelChunk::ResponseId(id.to_owned())).await?;
            }
        }
        if let Some(u) = chunk.get("usageMetadata") {
            usage = usage_of(u);
        }
        if let Some(reason) = chunk.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            return Err(ProviderError::fatal(format!("the prompt was blocked: {reason}")));
        }
        let Some(candidate) = chunk.pointer("/candidates/0") else { continue };
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_owned);
            if let Some(call) = part.get("functionCall") {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                // The Gemini API names no call ids (Vertex may): make one per reply.
                let id = call.get("id").and_then(Value::as_str).filter(|i| !i.is_empty()).map_or_else(|| format!("{name}_{calls}"), str::to_owned);
                calls += 1;
                send_chunk(tx, ModelChunk::ToolCallStart { id, name }).await?;
                let args = call.get("args").filter(|a| a.is_object()).map_or_else(|| "{}".to_owned(), Value::to_string);
                send_chunk(tx, ModelChunk::ToolCallArgs(args)).await?;
                if let Some(sig) = signature {
                    send_chunk(tx, ModelChunk::ToolCallSignature(sig)).await?;
                }
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
                match (thought, text.is_empty()) {
                    (true, _) => {
                        send_chunk(tx, ModelChunk::Thinking(text.to_owned())).await?;
                        if let Some(sig) = signature {
                            send_chunk(tx, ModelChunk::ThinkingSignature(sig)).await?;
                        }
                    }
                    (false, empty) => {
                        if !empty {
                            send_chunk(tx, ModelChunk::Text(text.to_owned())).await?;
                        }
                        if let Some(sig) = signature {
                            send_chunk(tx, ModelChunk::TextSignature(sig)).await?;
                        }
                    }
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            finish = Some(reason.to_owned());
        }
    }
    match finish.as_deref() {
        Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => {
            send_chunk(tx, ModelChunk::Done { length_limited: false, usage, response_id }).await?;
            Ok(())
        }
        Some("MAX_TOKENS") => {
            send_chunk(tx, ModelChunk::Done { length_limited: true, usage, response_id }).await?;
            Ok(())
        }
        // SAFETY, RECITATION, MALFORMED_FUNCTION_CALL, …: the reply is not an answer.
        Some(other) => Err(ProviderError::fatal(format!("the model stopped: {other}"))),
        None => Err(ProviderError::transient("the stream was cut off before the response was complete")),
    }
}
