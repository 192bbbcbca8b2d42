//! What a JSONL agent's events say, read leniently (pi, oh-my-pi and agentwire differ in fields
//! the bridge does not need): each front maps these steps onto its own frames.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::client::RpcAgentFrame;

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
    /// The run ended (`agent_end`).
    End,
}

/// The step `frame` reports, if any. Messages' starts and ends (their text was streamed),
/// queue updates and the agent's notices report none.
pub fn step(frame: &RpcAgentFrame) -> Option<Step> {
    match frame.kind() {
        "turn_start" => Some(Step::TurnStart),
        "agent_end" => Some(Step::End),
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
