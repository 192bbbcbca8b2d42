//! What a JSONL agent's events say, read leniently (pi, oh-my-pi and agentwire differ in fields
//! the bridge does not need): each front maps these steps onto its own frames.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::client::RpcAgentFrame;
use crate::core::model::TokenUsage;

/// One step of a run, as far as a bridged host can be told.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A turn (one model response and its tool calls) began.
    TurnStart,
    /// Streamed reply text.
    Text(String),
    /// Streamed thinking.
    Thinking(String),
    /// A tool call started executing.
    ToolStart {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        args: Map<String, Value>,
    },
    /// Output so far of a running tool.
    ToolProgress {
        /// The call's id.
        id: String,
        /// The output's text.
        text: String,
    },
    /// A tool call ended.
    ToolEnd {
        /// The call's id.
        id: String,
        /// The output's text.
        text: String,
        /// The result as the agent wrote it.
        result: Value,
        /// It failed.
        is_error: bool,
    },
    /// The run began (`agent_start`).
    RunStart,
    /// An assistant message ended, with what the model used (`message_end`'s `usage`).
    Usage(TokenUsage),
    /// The run ended (`agent_end`): its last assistant message's stop reason and error.
    End {
        /// `stop`, `length`, `toolUse`, `error`, `aborted`, …
        stop_reason: Option<String>,
        /// The error message of a run that failed.
        error: Option<String>,
        /// The agent goes on by itself (pi 1.6 `willRetry`: an automatic retry follows).
        will_retry: bool,
    },
    /// The agent has no work left for the prompt (pi 1.6 `agent_settled`): no retry, no queued
    /// message follows.
    RunSettled {
        /// It ended because it was aborted.
        aborted: bool,
    },
    /// A prompt settled (`prompt_result`, agentwire's): alone for a slash command that ran no
    /// model.
    Settled {
        /// `completed`, `error`, `aborted`.
        status: String,
        /// Why it failed.
        error: Option<String>,
    },
}

/// The step `frame` reports, if any. Messages' starts and ends (their text was streamed),
/// queue updates and the agent's notices report none.
pub fn step(frame: &RpcAgentFrame) -> Option<Step> {
    match frame.kind() {
        "turn_start" => Some(Step::TurnStart),
        "agent_start" => Some(Step::RunStart),
        "agent_end" => {
            let end = frame.parse::<AgentEnd>().ok()?;
            let last = end.messages.into_iter().rev().find(|m| m.role == "assistant");
            Some(Step::End { stop_reason: last.as_ref().and_then(|m| m.stop_reason.clone()), error: last.and_then(|m| m.error_message), will_retry: end.will_retry })
        }
        "agent_settled" => Some(Step::RunSettled { aborted: frame.parse::<AgentSettled>().ok()?.aborted }),
        "message_end" => {
            let message = frame.parse::<MessageEnd>().ok()?.message;
            let usage = message.usage.filter(|_| message.role == "assistant")?;
            Some(Step::Usage(TokenUsage { input: usage.input, output: usage.output, cache_read: usage.cache_read, cache_write: usage.cache_write, reasoning: None }))
        }
        "prompt_result" => frame.parse::<PromptResult>().ok().map(|r| Step::Settled { status: r.status, error: r.error.map(|e| e.message) }),
        "message_update" => {
            let update = frame.parse::<MessageUpdate>().ok()?.event?;
            match update.kind.as_str() {
                "text_delta" => Some(Step::Text(update.delta)),
                "thinking_delta" => Some(Step::Thinking(update.delta)),
                _ => None,
            }
        }
        "tool_execution_start" => frame.parse::<ToolStart>().ok().map(|t| Step::ToolStart { id: t.id, name: t.name, args: t.args }),
        "tool_execution_update" => frame.parse::<ToolProgress>().ok().map(|t| Step::ToolProgress { text: result_text(&t.partial), id: t.id }),
        "tool_execution_end" => frame.parse::<ToolEnd>().ok().map(|t| Step::ToolEnd { text: result_text(&t.result), id: t.id, result: t.result, is_error: t.is_error }),
        _ => None,
    }
}

/// The text of a JSONL tool result (`{content: [{type: "text", text}]}`).
fn result_text(result: &Value) -> String {
    result.get("content").and_then(Value::as_array).into_iter().flatten().filter_map(|block| block.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
}

#[derive(Deserialize)]
struct MessageUpdate {
    #[serde(rename = "assistantMessageEvent")]
    event: Option<StreamStep>,
}

#[derive(Deserialize)]
struct StreamStep {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: String,
}

#[derive(Deserialize)]
struct ToolStart {
    #[serde(rename = "toolCallId")]
    id: String,
    #[serde(rename = "toolName")]
    name: String,
    #[serde(default)]
    args: Map<String, Value>,
}

#[derive(Deserialize)]
struct ToolProgress {
    #[serde(rename = "toolCallId")]
    id: String,
    #[serde(rename = "partialResult", default)]
    partial: Value,
}

#[derive(Deserialize)]
struct ToolEnd {
    #[serde(rename = "toolCallId")]
    id: String,
    #[serde(default)]
    result: Value,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// A message as an `agent_end` or `message_end` carries it, as far as a run's end needs it.
#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: String,
    #[serde(rename = "stopReason", default)]
    stop_reason: Option<String>,
    #[serde(rename = "errorMessage", default)]
    error_message: Option<String>,
    #[serde(default)]
    usage: Option<MessageUsage>,
}

/// pi's token counts of a message.
#[derive(Deserialize)]
struct MessageUsage {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(rename = "cacheRead", default)]
    cache_read: u64,
    #[serde(rename = "cacheWrite", default)]
    cache_write: u64,
}

#[derive(Deserialize)]
struct AgentEnd {
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(rename = "willRetry", default)]
    will_retry: bool,
}

#[derive(Deserialize)]
struct AgentSettled {
    #[serde(default)]
    aborted: bool,
}

#[derive(Deserialize)]
struct MessageEnd {
    message: Message,
}

#[derive(Deserialize)]
struct PromptResult {
    status: String,
    #[serde(default)]
    error: Option<PromptResultError>,
}

#[derive(Deserialize)]
struct PromptResultError {
    message: String,
}
