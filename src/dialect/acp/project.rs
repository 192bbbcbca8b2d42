//! The core's events as `session/update` notifications (one exhaustive `match`: a new
//! [`AgentEvent`] does not compile until this dialect decides what it sends for it), and the
//! replay of a session's messages for `session/load`. A text or thinking delta becomes one chunk;
//! the partial message is never copied.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::{lock, AcpSessionHost, CallInfo};
use crate::core::events::{AgentEvent, EventSink, StreamDelta};
use crate::core::port::FileChange;
use crate::protocol::acp::{ContentBlock, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus, ToolKind};
use crate::protocol::{AgentMessage, AgentToolResult, AssistantContent, StopReason, TextOrImageContent, TodoPhase, TodoStatus, UserContent};

/// A text content block.
pub fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text { annotations: None, meta: None, text: text.into() }
}

fn image_block(data: &str, mime: &str) -> ContentBlock {
    ContentBlock::Image { annotations: None, data: data.to_owned(), meta: None, mime_type: mime.to_owned(), uri: None }
}

/// The ACP kind of a built-in tool.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read" => ToolKind::Read,
        "write" | "edit" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "ls" | "grep" | "find" => ToolKind::Search,
        _ => ToolKind::Other,
    }
}

/// A human title for a tool call: the command for `bash`, the path for file tools.
pub fn tool_title(name: &str, arguments: &Map<String, Value>) -> String {
    let arg = |k: &str| arguments.get(k).and_then(Value::as_str);
    match (name, arg("command"), arg("path"), arg("pattern")) {
        ("bash", Some(c), _, _) => c.to_owned(),
        (_, _, Some(p), _) if name != "grep" && name != "find" => format!("{name} {p}"),
        (_, _, _, Some(p)) => format!("{name} {p}"),
        _ => name.to_owned(),
    }
}

/// The files a tool call touches (absolute paths, as ACP wants).
pub fn tool_locations(cwd: Option<&std::path::Path>, arguments: &Map<String, Value>) -> Vec<ToolCallLocation> {
    let Some(path) = arguments.get("path").and_then(Value::as_str) else { return Vec::new() };
    let full = match cwd {
        Some(cwd) => cwd.join(path),
        None => std::path::PathBuf::from(path),
    };
    let line = arguments.get("offset").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    vec![ToolCallLocation::new(full.display().to_string()).with_line(line)]
}

/// The text parts of a tool result, joined by newlines.
pub fn result_text(content: &[TextOrImageContent]) -> String {
    content.iter().filter_map(|c| if let TextOrImageContent::Text(t) = c { Some(t.text.as_str()) } else { None }).collect::<Vec<_>>().join("\n")
}

/// What a finished tool call shows: a diff for `edit` / `write` that succeeded, the output
/// otherwise (bash output in a fenced block, as terminals render it). A diff's path is absolute
/// (relative to `cwd`), as ACP asks of every path.
pub(super) fn tool_content(info: &CallInfo, cwd: Option<&std::path::Path>, content: &[TextOrImageContent], is_error: bool, change: Option<&FileChange>) -> Vec<ToolCallContent> {
    tool_content_of(&info.name, &info.arguments, cwd, content, is_error, change)
}

/// [`tool_content`] of the call of tool `name` with `arguments` (ACP v2 shows the same). The
/// diff is the whole file's (`change`) when the tool reported it, as the permission showed it;
/// otherwise (a replayed history, a remote agent's call) the call's own fragments.
pub fn tool_content_of(name: &str, arguments: &Map<String, Value>, cwd: Option<&std::path::Path>, content: &[TextOrImageContent], is_error: bool, change: Option<&FileChange>) -> Vec<ToolCallContent> {
    let arg = |k: &str| arguments.get(k).and_then(Value::as_str);
    let absolute = |p: &str| cwd.map_or_else(|| p.to_owned(), |c| c.join(p).display().to_string());
    if let (false, Some(change)) = (is_error, change) {
        return vec![ToolCallContent::Diff { meta: None, new_text: change.new_text.clone(), old_text: change.old_text.clone(), path: change.path.display().to_string() }];
    }
    if !is_error {
        match (name, arg("path")) {
            ("edit", Some(path)) => {
                if let (Some(old), Some(new)) = (arg("oldText"), arg("newText")) {
                    return vec![ToolCallContent::Diff { meta: None, new_text: new.to_owned(), old_text: Some(old.to_owned()), path: absolute(path) }];
                }
            }
            ("write", Some(path)) => {
                if let Some(new) = arg("content") {
                    return vec![ToolCallContent::Diff { meta: None, new_text: new.to_owned(), old_text: None, path: absolute(path) }];
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let text = result_text(content);
    if !text.is_empty() {
        let text = if name == "bash" { format!("```\n{}\n```", text.trim_end_matches('\n')) } else { text };
        out.push(ToolCallContent::Content { content: text_block(text), meta: None });
    }
    for c in content {
        if let TextOrImageContent::Image(i) = c {
            out.push(ToolCallContent::Content { content: image_block(&i.data, &i.mime_type), meta: None });
        }
    }
    out
}

fn status(is_error: bool) -> ToolCallStatus {
    if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    }
}

/// A `tool_call_update` with only the given fields.
pub fn call_update(id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate {
        content: None,
        kind: None,
        locations: None,
        meta: None,
        name: None,
        raw_input: None,
        raw_output: None,
        status: None,
        title: None,
        tool_call_id: ToolCallId(id.to_owned()),
    }
}

fn set_update(update: &mut SessionUpdate, f: impl FnOnce(&mut Option<ToolCallStatus>, &mut Option<Vec<ToolCallContent>>, &mut Option<Value>)) {
    if let SessionUpdate::ToolCallUpdate { status, content, raw_output, .. } = update {
        f(status, content, raw_output);
    }
}

/// What a finished assistant message says of the context window, for `usage_update`: (window
/// size, tokens used); `None` for a message that failed or was aborted, or an unknown window.
pub fn context_usage(m: &crate::protocol::AssistantMessage, window: Option<u64>) -> Option<(u64, u64)> {
    let size = window.filter(|s| *s > 0)?;
    matches!(m.stop_reason, StopReason::Stop | StopReason::Length | StopReason::ToolUse).then(|| (size, m.usage.input + m.usage.cache_read + m.usage.cache_write + m.usage.output))
}

/// The todo list as an ACP plan.
pub fn plan(phases: &[TodoPhase]) -> SessionUpdate {
    SessionUpdate::Plan { entries: plan_entries(phases), meta: None }
}

/// The todo list's tasks as plan entries (an abandoned task is left out).
pub fn plan_entries(phases: &[TodoPhase]) -> Vec<PlanEntry> {
    phases
        .iter()
        .flat_map(|p| p.tasks.iter())
        .filter(|t| !matches!(t.status, TodoStatus::Abandoned))
        .map(|t| {
            let status = match t.status {
                TodoStatus::Completed => PlanEntryStatus::Completed,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Pending | TodoStatus::Blocked | TodoStatus::Abandoned => PlanEntryStatus::Pending,
            };
            PlanEntry::new(t.content.to_string(), PlanEntryPriority::Medium, status)
        })
        .collect()
}

impl AcpSessionHost {
    fn cwd(&self) -> Option<std::path::PathBuf> {
        lock(&self.cwd).clone()
    }

    /// Announces a tool call (`tool_call`), remembering it for its updates.
    async fn announce(&self, id: &str, name: &str, arguments: &Map<String, Value>, state: ToolCallStatus) {
        lock(&self.state).calls.insert(id.to_owned(), CallInfo { name: name.to_owned(), arguments: arguments.clone() });
        let raw_input = (!arguments.is_empty()).then(|| Value::Object(arguments.clone()));
        self.update(SessionUpdate::ToolCall {
            content: Vec::new(),
            kind: Some(tool_kind(name)),
            locations: tool_locations(self.cwd().as_deref(), arguments),
            meta: None,
            name: Some(name.to_owned()),
            raw_input,
            raw_output: None,
            status: Some(state),
            title: tool_title(name, arguments),
            tool_call_id: ToolCallId(id.to_owned()),
        })
        .await;
    }

    /// A tool call's end: status, content and raw output.
    async fn finish(&self, id: &str, content: &[TextOrImageContent], details: Option<&Value>, is_error: bool, change: Option<&FileChange>) {
        let info = lock(&self.state).calls.get(id).cloned().unwrap_or_default();
        let mut update = call_update(id);
        set_update(&mut update, |s, c, raw| {
            *s = Some(status(is_error));
            *c = Some(tool_content(&info, self.cwd().as_deref(), content, is_error, change));
            let raw_output = [("output".to_owned(), Value::String(result_text(content))), ("details".to_owned(), details.cloned().unwrap_or(Value::Null))];
            *raw = Some(Value::Object(Map::from_iter(raw_output)));
        });
        self.update(update).await;
    }

    /// Replays a session's messages as the updates a live run would have sent.
    pub(super) async fn replay(&self, messages: &[AgentMessage]) {
        for message in messages {
            match message {
                AgentMessage::User(u) => match &u.content {
                    UserContent::String(s) => self.update(SessionUpdate::UserMessageChunk { content: text_block(s.clone()), message_id: None, meta: None }).await,
                    UserContent::Array(blocks) => {
                        for b in blocks {
                            let content = match b {
                                TextOrImageContent::Text(t) => text_block(t.text.clone()),
                                TextOrImageContent::Image(i) => image_block(&i.data, &i.mime_type),
                            };
                            self.update(SessionUpdate::UserMessageChunk { content, message_id: None, meta: None }).await;
                        }
                    }
                },
                AgentMessage::Assistant(a) => {
                    for c in &a.content {
                        match c {
                            AssistantContent::Text(t) => self.update(SessionUpdate::AgentMessageChunk { content: text_block(t.text.clone()), message_id: None, meta: None }).await,
                            AssistantContent::Thinking(t) => self.update(SessionUpdate::AgentThoughtChunk { content: text_block(t.thinking.clone()), message_id: None, meta: None }).await,
                            AssistantContent::ToolCall(call) => self.announce(&call.id, &call.name, &call.arguments, ToolCallStatus::Pending).await,
                        }
                    }
                }
                AgentMessage::ToolResult(r) => self.finish(&r.tool_call_id, &r.content, r.details.as_ref(), r.is_error, None).await,
                // A user `!bash` and summaries are shown as the agent's text.
                AgentMessage::BashExecution(b) => {
                    let text = format!("`$ {}`\n```\n{}\n```", b.command, b.output.trim_end_matches('\n'));
                    self.update(SessionUpdate::AgentMessageChunk { content: text_block(text), message_id: None, meta: None }).await;
                }
                AgentMessage::CompactionSummary(s) => {
                    self.update(SessionUpdate::AgentMessageChunk { content: text_block(format!("(Earlier conversation, compacted)\n\n{}", s.summary)), message_id: None, meta: None }).await;
                }
                AgentMessage::BranchSummary(s) => {
                    self.update(SessionUpdate::AgentMessageChunk { content: text_block(format!("(Branch summary)\n\n{}", s.summary)), message_id: None, meta: None }).await;
                }
                // An extension's message and a declared system prompt are context, not conversation.
                AgentMessage::Custom(_) | AgentMessage::System(_) => {}
            }
        }
    }

    async fn project(&self, event: AgentEvent<'_>) {
        match event {
            AgentEvent::RunStart { .. } => lock(&self.state).hit_length = false,
            AgentEvent::TurnStart => {}
            // The client sent the prompt; it is not echoed back (only a replay shows it).
            AgentEvent::MessageStart { .. } => {}
            AgentEvent::MessageDelta { delta, partial: _ } => match delta {
                StreamDelta::TextDelta { delta, .. } => self.update(SessionUpdate::AgentMessageChunk { content: text_block(delta), message_id: None, meta: None }).await,
                StreamDelta::ThinkingDelta { delta, .. } => self.update(SessionUpdate::AgentThoughtChunk { content: text_block(delta), message_id: None, meta: None }).await,
                StreamDelta::ToolCallStart { id, name, .. } => self.announce(&id, &name, &Map::new(), ToolCallStatus::Pending).await,
                StreamDelta::ToolCallEnd { call, .. } => {
                    lock(&self.state).calls.insert(call.id.to_string(), CallInfo { name: call.name.to_string(), arguments: call.arguments.clone() });
                    let mut update = call_update(&call.id);
                    if let SessionUpdate::ToolCallUpdate { title, locations, raw_input, kind, .. } = &mut update {
                        *title = Some(tool_title(&call.name, &call.arguments));
                        *locations = Some(tool_locations(self.cwd().as_deref(), &call.arguments));
                        *raw_input = Some(Value::Object(call.arguments.clone()));
                        *kind = Some(tool_kind(&call.name));
                    }
                    self.update(update).await;
                }
                StreamDelta::TextStart { .. } | StreamDelta::TextEnd { .. } | StreamDelta::ThinkingStart { .. } | StreamDelta::ThinkingEnd { .. } | StreamDelta::ToolCallDelta { .. } => {}
            },
            AgentEvent::MessageEnd { message } => {
                let AgentMessage::Assistant(m) = message else { return };
                if m.stop_reason == StopReason::Length {
                    lock(&self.state).hit_length = true;
                }
                let window = *lock(&self.context_window);
                if let Some((size, used)) = context_usage(m, window) {
                    self.update(SessionUpdate::UsageUpdate { cost: None, meta: None, size, used }).await;
                }
            }
            // Approval comes after ToolStart: a call turns `in_progress` once allowed (see the
            // port) or with its first output.
            AgentEvent::ToolStart { .. } => {}
            AgentEvent::ToolUpdate { call, partial } => {
                let info = lock(&self.state).calls.get(call.id.as_str()).cloned().unwrap_or_default();
                let mut update = call_update(&call.id);
                set_update(&mut update, |s, c, _| {
                    *s = Some(ToolCallStatus::InProgress);
                    *c = Some(tool_content(&CallInfo { name: info.name.clone(), arguments: Map::new() }, None, &partial.content, false, None));
                });
                self.update(update).await;
            }
            AgentEvent::ToolEnd { call, result, is_error, change } => {
                let AgentToolResult { content, details, .. } = result;
                self.finish(&call.id, content, details.as_ref(), is_error, change).await;
            }
            AgentEvent::TurnEnd { .. } | AgentEvent::RunEnd { .. } => {}
            // The core hands the outcome to the waiting `session/prompt` once this returns.
            AgentEvent::PromptSettled { .. } => {}
            AgentEvent::QueueChanged { .. } => {}
            // Compaction, retries, settings: ACP v1 (stable) has no updates for these.
            AgentEvent::CompactionStart { .. } | AgentEvent::CompactionEnd { .. } | AgentEvent::RetryStart { .. } | AgentEvent::RetryEnd { .. } => {}
            AgentEvent::ThinkingLevelChanged { .. } => {}
            AgentEvent::SessionNameChanged { name } => {
                self.update(SessionUpdate::SessionInfoUpdate { meta: None, title: Some(name), updated_at: None }).await;
            }
            AgentEvent::TodosChanged { phases } => self.update(plan(phases)).await,
            AgentEvent::SettingsChanged { settings } => {
                let config_options: Vec<_> = settings.iter().map(super::config::setting).collect();
                lock(&self.state).announced_options = Some(config_options.clone());
                self.update(SessionUpdate::ConfigOptionUpdate { config_options, meta: None }).await;
            }
            // The one notice the core sends (the step limit) is the prompt's `max_turn_requests`.
            AgentEvent::Notice { .. } => {}
        }
    }
}

impl EventSink for AcpSessionHost {
    fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
        self.project(event).boxed()
    }
}
