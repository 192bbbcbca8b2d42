//! Builds the assistant message from model chunks and reports each step as a
//! [`StreamDelta`]: a block is closed as soon as the next one starts, every open block is closed
//! before the message ends (abort included), and the message passed with each step is the
//! message after applying that step, never ahead of it.

use serde_json::{Map, Value};

use super::events::{AgentEvent, EventSink, StreamDelta};
use crate::protocol::{nonempty, now_ms};
use crate::protocol::*;
use super::model::ModelChunk;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
    ToolCall,
}

/// The partial assistant message and the block currently streaming.
#[derive(Debug)]
pub struct MessageBuilder {
    message: AssistantMessage,
    open: Open,
    tool_calls: u32,
    cost: ModelCost,
    started: std::time::Instant,
    /// A thinking signature announced before its block's first delta (the OpenAI-compatible
    /// provider names the reasoning field up front), for the block to start with.
    pending_signature: Option<String>,
}

fn zero_usage() -> Usage {
    Usage {
        input: 0,
        output: 0,
        cache_read: 0,
        cache_write: 0,
        total_tokens: 0,
        reasoning: None,
        cost: UsageCost { input: 0.0, output: 0.0, cache_read: 0.0, cache_write: 0.0, total: 0.0, total_from_provider: None },
    }
}

impl MessageBuilder {
    /// An empty message of `model`.
    pub fn new(model: &Model) -> Self {
        Self {
            message: AssistantMessage {
                role: Default::default(),
                content: Vec::new(),
                api: model.api.to_string(),
                provider: model.provider.to_string(),
                model: model.id.to_string(),
                usage: zero_usage(),
                stop_reason: StopReason::Stop,
                timestamp: now_ms(),
                response_id: None,
                error_message: None,
                duration: None,
                ttft: None,
                completed_at: None,
                error_id: None,
                error_status: None,
                context_snapshot: Map::new(),
                response_model: None,
                provider_thinking_level: None,
                thinking_level: None,
                diagnostics: None,
                deferred: None,
                raw_stop_reason: None,
                end_turn: None,
                duration_ms: None,
            },
            open: Open::None,
            tool_calls: 0,
            cost: model.cost.clone(),
            started: std::time::Instant::now(),
            pending_signature: None,
        }
    }

    /// An empty message of an agent that names no model: `name` is its api, provider and
    /// model, and it costs nothing.
    pub fn named(name: &str) -> Self {
        let message = AssistantMessage::new(Vec::new(), name, name, name, zero_usage(), StopReason::Stop, now_ms());
        let cost = ModelCost { input: 0.0, output: 0.0, cache_read: 0.0, cache_write: 0.0 };
        Self { message, open: Open::None, tool_calls: 0, cost, started: std::time::Instant::now(), pending_signature: None }
    }

    /// The message as it stands.
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// The message, once streaming is over.
    pub fn into_message(self) -> AssistantMessage {
        self.message
    }

    fn index(&self) -> u32 {
        u32::try_from(self.message.content.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }

    /// Applies one chunk, emitting each resulting step (with the message as it stands right
    /// after that step) to `sink`, in order.
    ///
    /// Returns the tool call this chunk completed while the message goes on (the provider moved
    /// on to the next block), with its position among the message's tool calls, when its
    /// arguments are valid JSON: it can start now. A call that the message's end completes, or
    /// whose arguments do not parse, is not returned; it starts (or fails) once the message has
    /// ended.
    pub async fn apply(&mut self, chunk: ModelChunk, sink: &dyn EventSink) -> Option<(usize, ToolCall)> {
        if self.message.ttft.is_none() && !matches!(chunk, ModelChunk::Error(_) | ModelChunk::Done { .. } | ModelChunk::ResponseId(_) | ModelChunk::TextSignature(_) | ModelChunk::ToolCallSignature(_)) {
            self.message.ttft = Some(self.started.elapsed().as_secs_f64() * 1000.0);
        }
        let mut ready = None;
        match chunk {
            ModelChunk::ResponseId(id) => self.message.response_id = Some(id),
            ModelChunk::ThinkingSignature(signature) => {
                // Belongs to the thinking block streaming now, or the last one; before any
                // thinking block, to the first (its `thinking_start` snapshot carries it, as pi's).
                match self.message.content.iter_mut().rev().find(|c| matches!(c, AssistantContent::Thinking(_))) {
                    Some(AssistantContent::Thinking(t)) => t.thinking_signature.get_or_insert_with(String::new).push_str(&signature),
                    _ => self.pending_signature.get_or_insert_with(String::new).push_str(&signature),
                }
            }
            ModelChunk::Text(delta) => {
                if self.open != Open::Text {
                    ready = self.close(sink).await;
                    self.message.content.push(AssistantContent::Text(TextContent { type_: Default::default(), text: String::new(), text_signature: None }));
                    self.open = Open::Text;
                    self.step(sink, StreamDelta::TextStart { index: self.index() }).await;
                }
                if let Some(AssistantContent::Text(t)) = self.message.content.last_mut() {
                    t.text.push_str(&delta);
                }
                self.step(sink, StreamDelta::TextDelta { index: self.index(), delta }).await;
            }
            ModelChunk::Thinking(delta) => {
                if self.open != Open::Thinking {
                    ready = self.close(sink).await;
                    self.message.content.push(AssistantContent::Thinking(ThinkingContent {
                        type_: Default::default(),
                        thinking: String::new(),
                        thinking_signature: self.pending_signature.take(),
                        redacted: None,
                    }));
                    self.open = Open::Thinking;
                    self.step(sink, StreamDelta::ThinkingStart { index: self.index() }).await;
                }
                if let Some(AssistantContent::Thinking(t)) = self.message.content.last_mut() {
                    t.thinking.push_str(&delta);
                }
                // An empty delta only opens the block: reasoning the provider keeps to itself
                // (an encrypted reasoning item without a summary) still needs a block to carry
                // its signature.
                if !delta.is_empty() {
                    self.step(sink, StreamDelta::ThinkingDelta { index: self.index(), delta }).await;
                }
            }
            ModelChunk::TextSignature(signature) => {
                if let Some(AssistantContent::Text(t)) = self.message.content.iter_mut().rev().find(|c| matches!(c, AssistantContent::Text(_))) {
                    t.text_signature.get_or_insert_with(String::new).push_str(&signature);
                }
            }
            ModelChunk::ToolCallSignature(signature) => {
                if let Some(AssistantContent::ToolCall(tc)) = self.message.content.iter_mut().rev().find(|c| matches!(c, AssistantContent::ToolCall(_))) {
                    tc.thought_signature.get_or_insert_with(String::new).push_str(&signature);
                }
            }
            ModelChunk::ToolCallStart { id, name } => {
                ready = self.close(sink).await;
                self.message.content.push(AssistantContent::ToolCall(ToolCall {
                    type_: Default::default(),
                    id: nonempty(&id),
                    name: nonempty(&name),
                    arguments: Map::new(),
                    thought_signature: None,
                    partial_args: Some(String::new()),
                    stream_index: Some(self.tool_calls),
                }));
                self.tool_calls += 1;
                self.open = Open::ToolCall;
                self.step(sink, StreamDelta::ToolCallStart { index: self.index(), id, name }).await;
            }
            ModelChunk::ToolCallArgs(delta) => {
                if let Some(AssistantContent::ToolCall(tc)) = self.message.content.last_mut() {
                    let raw = tc.partial_args.get_or_insert_with(String::new);
                    raw.push_str(&delta);
                    // Arguments appear in the snapshot once the text so far parses as an
                    // object; only worth the parse when someone reads snapshots.
                    if sink.wants_snapshots() {
                        if let Ok(Value::Object(args)) = serde_json::from_str::<Value>(raw) {
                            tc.arguments = args;
                        }
                    }
                    self.step(sink, StreamDelta::ToolCallDelta { index: self.index(), delta }).await;
                }
            }
            ModelChunk::Error(error) => {
                self.close(sink).await;
                self.message.stop_reason = StopReason::Error;
                self.message.error_message = Some(error.message);
                self.message.error_status = error.http_status;
                self.message.completed_at = Some(now_ms());
            }
            ModelChunk::Done { length_limited, usage, response_id } => {
                self.close(sink).await;
                let per_token = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
                let cost = UsageCost {
                    input: per_token(self.cost.input, usage.input),
                    output: per_token(self.cost.output, usage.output),
                    cache_read: per_token(self.cost.cache_read, usage.cache_read),
                    cache_write: per_token(self.cost.cache_write, usage.cache_write),
                    total: 0.0,
                    total_from_provider: None,
                };
                self.message.usage = Usage {
                    input: usage.input,
                    output: usage.output,
                    cache_read: usage.cache_read,
                    cache_write: usage.cache_write,
                    total_tokens: usage.input + usage.output + usage.cache_read + usage.cache_write,
                    reasoning: usage.reasoning,
                    cost: UsageCost { total: cost.input + cost.output + cost.cache_read + cost.cache_write, ..cost },
                };
                if response_id.is_some() {
                    self.message.response_id = response_id;
                }
                self.message.duration = Some(self.started.elapsed().as_secs_f64() * 1000.0);
                self.message.stop_reason = if self.tool_calls > 0 {
                    StopReason::ToolUse
                } else if length_limited {
                    StopReason::Length
                } else {
                    StopReason::Stop
                };
                self.message.completed_at = Some(now_ms());
            }
        }
        ready
    }

    /// Ends the message as aborted: open blocks are closed first.
    pub async fn abort(&mut self, sink: &dyn EventSink) {
        // The closing events' snapshots already say why the block ends (as pi's do).
        self.message.stop_reason = StopReason::Aborted;
        self.message.error_message = Some("Request was aborted".to_owned());
        self.close(sink).await;
        self.message.usage = zero_usage();
        self.message.completed_at = Some(now_ms());
        // An aborted message is kept as history without tool calls: none of them will run, and a
        // call without its result would make the next request invalid.
        self.message.content.retain(|c| !matches!(c, AssistantContent::ToolCall(_)));
    }

    async fn step(&self, sink: &dyn EventSink, delta: StreamDelta) {
        sink.emit(AgentEvent::MessageDelta { delta, partial: &self.message }).await;
    }

    /// Closes the open block; a closed tool call whose arguments parsed is returned with its
    /// position among the message's tool calls.
    async fn close(&mut self, sink: &dyn EventSink) -> Option<(usize, ToolCall)> {
        let open = std::mem::replace(&mut self.open, Open::None);
        let index = self.index();
        let mut complete = None;
        let delta = match (open, self.message.content.last_mut()) {
            (Open::Text, Some(AssistantContent::Text(t))) => StreamDelta::TextEnd { index, content: t.text.clone() },
            (Open::Thinking, Some(AssistantContent::Thinking(t))) => StreamDelta::ThinkingEnd { index, content: t.thinking.clone() },
            (Open::ToolCall, Some(AssistantContent::ToolCall(tc))) => {
                let raw = tc.partial_args.take().unwrap_or_default();
                tc.stream_index = None;
                let parsed = match serde_json::from_str::<Value>(&raw) {
                    Ok(Value::Object(args)) => Some(args),
                    _ if raw.trim().is_empty() => Some(Map::new()),
                    _ => None,
                };
                // Unparsable arguments: keep the text so the tool call fails with a clear message.
                tc.arguments = parsed.clone().unwrap_or_else(|| [("_raw".to_owned(), Value::from(raw))].into_iter().collect());
                if parsed.is_some() {
                    // This call is the `tool_calls`-th of the message (the counter counts it already).
                    complete = Some((self.tool_calls.saturating_sub(1) as usize, tc.clone()));
                }
                StreamDelta::ToolCallEnd { index, call: tc.clone() }
            }
            _ => return None,
        };
        self.step(sink, delta).await;
        complete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use futures_util::future::BoxFuture;
    use std::sync::Mutex;

    /// Keeps every step with a copy of the message it came with.
    #[derive(Default)]
    struct Steps(Mutex<Vec<(StreamDelta, AssistantMessage)>>);

    impl EventSink for Steps {
        fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
            if let AgentEvent::MessageDelta { delta, partial } = event {
                self.0.lock().unwrap().push((delta, partial.clone()));
            }
            Box::pin(async {})
        }
        fn wants_snapshots(&self) -> bool {
            true
        }
    }

    fn tags(steps: &Steps) -> Vec<&'static str> {
        steps
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(d, _)| match d {
                StreamDelta::TextStart { .. } => "text_start",
                StreamDelta::TextDelta { .. } => "text_delta",
                StreamDelta::TextEnd { .. } => "text_end",
                StreamDelta::ThinkingStart { .. } => "thinking_start",
                StreamDelta::ThinkingDelta { .. } => "thinking_delta",
                StreamDelta::ThinkingEnd { .. } => "thinking_end",
                StreamDelta::ToolCallStart { .. } => "toolcall_start",
                StreamDelta::ToolCallDelta { .. } => "toolcall_delta",
                StreamDelta::ToolCallEnd { .. } => "toolcall_end",
            })
            .collect()
    }

    #[tokio::test]
    async fn blocks_close_when_the_next_starts_and_snapshots_match_the_deltas() {
        let steps = Steps::default();
        let mut b = MessageBuilder::named("offline");
        for c in [
            ModelChunk::Thinking("hm".into()),
            ModelChunk::Text("He".into()),
            ModelChunk::Text("llo".into()),
            ModelChunk::ToolCallStart { id: "c1".into(), name: "ls".into() },
            ModelChunk::ToolCallArgs("{\"path\"".into()),
            ModelChunk::ToolCallArgs(":\".\"}".into()),
            ModelChunk::Done { length_limited: false, usage: crate::core::model::TokenUsage { input: 10, output: 5, cache_read: 0, cache_write: 0, reasoning: None }, response_id: None },
        ] {
            b.apply(c, &steps).await;
        }
        assert_eq!(
            tags(&steps),
            ["thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_delta", "text_end", "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end"]
        );
        let recorded = steps.0.lock().unwrap();
        assert!(matches!(&recorded[4].1.content[1], AssistantContent::Text(t) if t.text == "He"), "snapshot equals the state after this delta");
        assert!(matches!(&recorded[9].1.content[2], AssistantContent::ToolCall(tc) if tc.arguments["path"] == "."), "arguments appear once they parse");
        let m = b.message();
        assert_eq!(m.stop_reason, StopReason::ToolUse);
        assert!(matches!(&m.content[2], AssistantContent::ToolCall(tc) if tc.arguments["path"] == "." && tc.partial_args.is_none()));
    }

    #[tokio::test]
    async fn a_tool_call_is_ready_when_the_next_block_starts_and_its_arguments_parse() {
        let steps = Steps::default();
        let mut b = MessageBuilder::named("offline");
        let mut ready = Vec::new();
        for c in [
            ModelChunk::ToolCallStart { id: "c1".into(), name: "ls".into() },
            ModelChunk::ToolCallArgs("{\"path\"".into()),
            ModelChunk::ToolCallArgs(":\".\"}".into()),
            ModelChunk::ToolCallStart { id: "c2".into(), name: "ls".into() },
            ModelChunk::ToolCallArgs("{\"path\":".into()),
            ModelChunk::Text("unparsable arguments before this text".into()),
            ModelChunk::ToolCallStart { id: "c3".into(), name: "ls".into() },
            ModelChunk::Thinking("no arguments at all parse as {}".into()),
            ModelChunk::ToolCallStart { id: "c4".into(), name: "ls".into() },
            ModelChunk::ToolCallArgs("{}".into()),
            ModelChunk::Done { length_limited: false, usage: crate::core::model::TokenUsage::default(), response_id: None },
        ] {
            if let Some((index, call)) = b.apply(c, &steps).await {
                assert!(call.partial_args.is_none() && call.stream_index.is_none(), "a ready call is final: {call:?}");
                ready.push((index, call.id.to_string(), Value::Object(call.arguments)));
            }
        }
        // c2 does not parse; c4 is completed by the message's end, which starts it itself.
        assert_eq!(ready, [(0, "c1".to_owned(), serde_json::json!({"path": "."})), (2, "c3".to_owned(), serde_json::json!({}))]);
    }

    #[tokio::test]
    async fn abort_closes_the_open_block_and_drops_tool_calls() {
        let steps = Steps::default();
        let mut b = MessageBuilder::named("offline");
        b.apply(ModelChunk::Text("partial".into()), &steps).await;
        steps.0.lock().unwrap().clear();
        b.abort(&steps).await;
        assert_eq!(tags(&steps), ["text_end"]);
        assert_eq!(b.message().stop_reason, StopReason::Aborted);
        let steps = Steps::default();
        let mut b = MessageBuilder::named("offline");
        b.apply(ModelChunk::ToolCallStart { id: "c".into(), name: "ls".into() }, &steps).await;
        b.apply(ModelChunk::ToolCallArgs("{\"pa".into()), &steps).await;
        steps.0.lock().unwrap().clear();
        b.abort(&steps).await;
        assert_eq!(tags(&steps), ["toolcall_end"]);
        assert!(b.message().content.is_empty());
    }

    #[tokio::test]
    async fn a_signature_and_response_id_named_up_front_show_from_the_first_snapshot_and_abort_says_why() {
        let steps = Steps::default();
        let mut b = MessageBuilder::named("offline");
        for c in [ModelChunk::ResponseId("chatcmpl-1".into()), ModelChunk::ThinkingSignature("reasoning_content".into()), ModelChunk::Thinking("hm".into())] {
            b.apply(c, &steps).await;
        }
        b.abort(&steps).await;
        let recorded = steps.0.lock().unwrap();
        let (start, snapshot) = &recorded[0];
        assert!(matches!(start, StreamDelta::ThinkingStart { .. }));
        assert!(matches!(&snapshot.content[0], AssistantContent::Thinking(t) if t.thinking_signature.as_deref() == Some("reasoning_content")), "pi's thinking_start carries the signature");
        assert_eq!(snapshot.response_id.as_deref(), Some("chatcmpl-1"));
        let (end, snapshot) = recorded.last().unwrap();
        assert!(matches!(end, StreamDelta::ThinkingEnd { .. }));
        assert_eq!(snapshot.stop_reason, StopReason::Aborted, "the closing event's snapshot already says aborted (pi)");
        assert_eq!(b.message().response_id.as_deref(), Some("chatcmpl-1"), "an aborted message keeps the response id");
    }
}
