//! What the core tells the host, as typed values: [`AgentEvent`] goes to an [`EventSink`] that a
//! dialect implements. The core never serializes a frame and never sees a dialect's ids: a
//! prompt is known by the [`PromptId`] the core handed out when it accepted it, and each dialect
//! maps that to its own request id.
//!
//! Messages, tool calls and results are the shared data model (`schema/messages.schema.json`,
//! `content.schema.json`); frame types (`*Event`, `*Response`, `Wire*`) belong to the dialects.
//!
//! Streaming: [`AgentEvent::MessageDelta`] carries the delta and a *borrowed* view of the message
//! as it stands after that delta. A dialect that must send snapshots (the JSONL dialect's
//! `partial`) clones it; one that sends deltas (the wire) never copies it, so its cost per delta
//! is constant.

use std::time::Duration;

use futures_util::future::BoxFuture;

use super::error::CoreError;

use crate::protocol::{AgentMessage, AgentToolResult, AssistantMessage, CompactionResult, PromptError, ThinkingLevel, TodoPhase, ToolCall, ToolResultMessage};

/// The core's handle for an accepted prompt; the dialect keeps its own id beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PromptId(pub u64);

/// One step of a streaming assistant message. `index` is the content block's position.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// A text block opened.
    TextStart { index: u32 },
    /// Text appended to the open text block.
    TextDelta { index: u32, delta: String },
    /// The text block closed with this content.
    TextEnd { index: u32, content: String },
    /// A thinking block opened.
    ThinkingStart { index: u32 },
    /// Thinking appended to the open thinking block.
    ThinkingDelta { index: u32, delta: String },
    /// The thinking block closed with this content.
    ThinkingEnd { index: u32, content: String },
    /// A tool call block opened (its id and name are known, its arguments not yet).
    ToolCallStart { index: u32, id: String, name: String },
    /// Raw argument JSON text appended.
    ToolCallDelta { index: u32, delta: String },
    /// The tool call is complete.
    ToolCallEnd { index: u32, call: ToolCall },
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// The host asked (`compact`).
    Manual,
    /// The context estimate crossed the threshold.
    Threshold,
    /// The provider said the context overflowed; the request is retried after it.
    Overflow,
}

/// How a run (or a slash command standing in for one) ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// It finished normally.
    Completed,
    /// It finished because `--max-steps-per-turn` stopped it while the model still wanted tools.
    StepLimit {
        /// Model calls made.
        steps: u32,
    },
    /// It was aborted.
    Aborted,
    /// It failed (the provider's error, already redacted by the provider layer).
    Failed(PromptError),
}

/// Severity of a notice: an [`AgentEvent::Notice`] or a UI notification
/// ([`super::port::UiNotice::Notify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    /// Informational.
    Info,
    /// Something the host should know.
    Warning,
    /// Something failed.
    Error,
}

/// Everything the core reports, in the order it happens.
#[derive(Debug)]
pub enum AgentEvent<'a> {
    /// A run begins (`prompt`: the prompt that started it, if any).
    RunStart { prompt: Option<PromptId> },
    /// A turn begins (one model call and its tool calls).
    TurnStart,
    /// A message begins: a user message (whole), a tool result (whole) or an assistant message
    /// (empty, to be streamed). `steering` marks a user message delivered from a queue.
    MessageStart { message: &'a AgentMessage },
    /// The streaming assistant message changed.
    MessageDelta { delta: StreamDelta, partial: &'a AssistantMessage },
    /// A message is complete (and, except for failed attempts that are retried, saved).
    MessageEnd { message: &'a AgentMessage },
    /// A tool call starts executing.
    ToolStart { call: &'a ToolCall },
    /// A tool call reports progress (cumulative).
    ToolUpdate { call: &'a ToolCall, partial: &'a AgentToolResult },
    /// A tool call finished. `change` is the whole file's text before and after, when the call
    /// changed a file and the tool knows both (the built-in `edit` always, `write` to the disk):
    /// a host shows what was done the way it showed what was asked, not by the call's fragments.
    ToolEnd { call: &'a ToolCall, result: &'a AgentToolResult, is_error: bool, change: Option<&'a crate::core::port::FileChange> },
    /// A turn ended with its assistant message and tool results.
    TurnEnd { message: &'a AgentMessage, tool_results: &'a [ToolResultMessage] },
    /// A run's last event: every message it produced. `continues`: messages queued while it
    /// ran are left, and another run of the same prompt's work starts at once (its `RunStart`
    /// comes next); otherwise `PromptSettled` comes next. A failed model call the agent retries
    /// is retried inside its run, so no `RunEnd` is ever followed by a retry.
    RunEnd { messages: &'a [AgentMessage], continues: bool },
    /// The one end of the work a prompt started, after every retry, compaction and queued
    /// steer or follow-up of it has run (the last run's outcome): exactly one per started or
    /// handled prompt, after its last `RunEnd`, or alone for a slash command that ran no model.
    /// `model_invoked` is false when no model was asked (slash commands, a refused prompt).
    PromptSettled { prompt: Option<PromptId>, outcome: RunOutcome, model_invoked: bool },
    /// The steering / follow-up queues changed.
    QueueChanged { steering: Vec<String>, follow_up: Vec<String> },
    /// A compaction starts.
    CompactionStart { reason: CompactionReason },
    /// A compaction ended: its result, or why it failed; `will_retry` after an overflow.
    CompactionEnd { reason: CompactionReason, result: Result<CompactionResult, CoreError>, aborted: bool, will_retry: bool },
    /// A transient provider failure will be retried after `delay`.
    RetryStart { attempt: u32, max_attempts: u32, delay: Duration, error: String },
    /// Retrying ended (success, or the final error / "Retry cancelled").
    RetryEnd { success: bool, attempt: u32, final_error: Option<String> },
    /// The thinking level changed.
    ThinkingLevelChanged { level: ThinkingLevel },
    /// The session was named.
    SessionNameChanged { name: String },
    /// The todo list changed.
    TodosChanged { phases: &'a [TodoPhase] },
    /// The settings an agent names itself ([`crate::core::AgentCore::settings`]) changed
    /// without the host asking (an ACP agent behind the bridge switched its model or mode on its
    /// own): all of them, as they are now.
    SettingsChanged { settings: &'a [crate::core::Setting] },
    /// Something the host should be told.
    Notice { level: NoticeLevel, message: String },
}

/// Where the core's events go: implemented by each dialect's projection. `emit` returns once the
/// event's frames are queued for the host, so "events before the response" orderings hold.
pub trait EventSink: Send + Sync {
    /// Projects one event onto the dialect's frames and queues them.
    fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()>;
    /// Whether this dialect reads the `partial` message of [`AgentEvent::MessageDelta`] beyond
    /// its text (tool call arguments parsed while they stream cost a parse per delta, so the
    /// core does that work only for dialects that send snapshots). A dialect that sends one
    /// frame per delta wants none.
    fn wants_snapshots(&self) -> bool {
        false
    }
}
