//! The core's events as ACP v2 `session/update` upserts (one exhaustive `match`, as v1's), and
//! the replay of a session's history for `session/resume` with `replayFrom`.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::{lock, AcpV2SessionHost, CallInfo};
use crate::dialect::acp::compat;
use crate::core::events::{AgentEvent, EventSink, NoticeLevel, StreamDelta};
use crate::core::port::FileChange;
use crate::dialect::acp::project as v1;
use crate::protocol::acp_v2::{ContentBlock, DiffChange, DiffPatch, DiffPatchFormat, MessageId, NoticeSeverity, PlanId, PlanUpdateContent, SessionUpdate, SessionUpdateTitle, ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate};
use crate::protocol::{AgentMessage, AgentToolResult, AssistantContent, StopReason, TextOrImageContent, TodoPhase, UserContent};

/// A tool call status (v2's statuses are an open string union).
pub(super) fn status(status: &str) -> ToolCallStatus {
    ToolCallStatus(status.to_owned())
}

/// A text content block.
pub(super) fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text { annotations: None, meta: None, text: text.into() }
}

fn image_block(data: &str, mime: &str) -> ContentBlock {
    ContentBlock::Image { annotations: None, data: data.to_owned(), meta: None, mime_type: crate::protocol::acp_v2::MediaType(mime.to_owned()), uri: None }
}

/// `path` as Git writes a path in a patch: as it is, or, when it holds a double quote, a
/// backslash, a control character or a byte beyond ASCII, C-quoted (Git's `core.quotePath`
/// default), each such byte as an escape or in octal.
fn git_quoted(path: &str) -> String {
    let plain = |b: u8| b != b'"' && b != b'\\' && (0x20..0x7f).contains(&b);
    if path.bytes().all(plain) {
        return path.to_owned();
    }
    let mut out = String::from("\"");
    for b in path.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b if plain(b) => out.push(char::from(b)),
            b => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// The `git_patch` text of `path` (absolute) going from `old` (`None`: the file is added) to
/// `new`, as `DiffPatchFormat` defines it: one `diff --git` section in Git's `--patch` format,
/// every path absolute and without Git's `a/` / `b/` prefixes, `/dev/null` for the missing
/// side of an added file, paths quoted as Git quotes them, no commit metadata.
pub(super) fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    let name = git_quoted(path);
    let mut text = format!("diff --git {name} {name}\n");
    if old.is_none() {
        // Git names the mode of a file it adds; agentwire's tools write regular files.
        text.push_str("new file mode 100644\n");
    }
    let from = if old.is_some() { name.as_str() } else { "/dev/null" };
    // Without hunks (an empty file added, nothing changed) Git writes no `---` / `+++` lines,
    // and neither does `similar`.
    let hunks = similar::TextDiff::from_lines(old.unwrap_or_default(), new).unified_diff().context_radius(3).header(from, &name).to_string();
    text.push_str(&hunks);
    text
}

/// `path` going from `old` (`None`: a new file) to `new`, as v2's diff content: the change,
/// and its `git_patch`.
pub(super) fn diff(path: &str, old: Option<&str>, new: &str) -> ToolCallContent {
    let text = git_patch(path, old, new);
    // typify names the change's variants by position: read it from its wire form.
    let change: Option<DiffChange> = crate::protocol::decode::from_value(serde_json::json!({"operation": if old.is_some() { "modify" } else { "add" }, "path": path})).ok();
    ToolCallContent::Diff { changes: change.into_iter().collect(), meta: None, patch: Some(DiffPatch::new(DiffPatchFormat("git_patch".to_owned()), text)) }
}

/// v1's content of a finished call (text, images, or a diff for `edit` / `write`) in v2's shapes.
fn tool_content(info: &CallInfo, cwd: Option<&std::path::Path>, content: &[TextOrImageContent], is_error: bool, change: Option<&FileChange>) -> Vec<ToolCallContent> {
    v1::tool_content_of(&info.name, &info.arguments, cwd, content, is_error, change)
        .into_iter()
        .filter_map(|c| match c {
            crate::protocol::acp::ToolCallContent::Diff { new_text, old_text, path, .. } => Some(diff(&path, old_text.as_deref(), &new_text)),
            other => compat::tool_call_content(&other),
        })
        .collect()
}

/// A `tool_call_update` with only the id set.
pub(super) fn call_update(id: &str) -> ToolCallUpdate {
    ToolCallUpdate::new(ToolCallId(id.to_owned()))
}

/// A call's title, kind, locations and raw input.
pub(super) fn described(update: ToolCallUpdate, cwd: Option<&std::path::Path>, name: &str, arguments: &Map<String, Value>) -> ToolCallUpdate {
    let update = update.with_title(v1::tool_title(name, arguments)).with_name(name.to_owned()).with_raw_input(Value::Object(arguments.clone()));
    let update = match compat::tool_kind(&v1::tool_kind(name)) {
        Some(kind) => update.with_kind(kind),
        None => update,
    };
    match compat::tool_locations(&v1::tool_locations(cwd, arguments)) {
        Some(locations) => update.with_locations(locations),
        None => update,
    }
}

pub(super) fn as_update(u: ToolCallUpdate) -> SessionUpdate {
    let ToolCallUpdate { capabilities, content, kind, locations, meta, name, raw_input, raw_output, status, title, tool_call_id } = u;
    SessionUpdate::ToolCallUpdate { capabilities, content, kind, locations, meta, name, raw_input, raw_output, status, title, tool_call_id }
}

/// The todo list as a v2 plan: v1's entries, in v2's shape.
fn plan(phases: &[TodoPhase]) -> SessionUpdate {
    let entries = compat::plan_entries(&v1::plan_entries(phases));
    SessionUpdate::PlanUpdate { meta: None, plan: PlanUpdateContent::Items { entries, meta: None, plan_id: PlanId("todos".to_owned()) } }
}

impl AcpV2SessionHost {
    fn cwd(&self) -> Option<std::path::PathBuf> {
        lock(&self.cwd).clone()
    }

    /// The assistant message being streamed (a new id when none is).
    fn agent_message(&self) -> String {
        if let Some(id) = lock(&self.state).agent_message.clone() {
            return id;
        }
        let id = self.next_message_id();
        lock(&self.state).agent_message = Some(id.clone());
        id
    }

    async fn agent_text(&self, text: String) {
        let id = self.agent_message();
        self.update(SessionUpdate::AgentMessageChunk { content: text_block(text), message_id: MessageId(id), meta: None }).await;
    }

    /// Announces a tool call, remembering it for its updates.
    async fn announce(&self, id: &str, name: &str, arguments: &Map<String, Value>, status: ToolCallStatus) {
        lock(&self.state).calls.insert(id.to_owned(), CallInfo { name: name.to_owned(), arguments: arguments.clone() });
        let update = described(call_update(id), self.cwd().as_deref(), name, arguments).with_status(status);
        self.update(as_update(update)).await;
    }

    /// A tool call's end: status, content and raw output.
    async fn finish(&self, id: &str, content: &[TextOrImageContent], details: Option<&Value>, is_error: bool, change: Option<&FileChange>) {
        let info = lock(&self.state).calls.get(id).cloned().unwrap_or_default();
        let raw_output = [("output".to_owned(), Value::String(v1::result_text(content))), ("details".to_owned(), details.cloned().unwrap_or(Value::Null))];
        let update = call_update(id)
            .with_status(if is_error { status("failed") } else { status("completed") })
            .with_content(tool_content(&info, self.cwd().as_deref(), content, is_error, change))
            .with_raw_output(Value::Object(Map::from_iter(raw_output)));
        self.update(as_update(update)).await;
    }

    /// Replays a session's messages as upserts, each message named by its index in the history;
    /// live messages continue from there.
    pub(super) async fn replay(&self, messages: &[AgentMessage]) {
        for (index, message) in messages.iter().enumerate() {
            let id = MessageId(format!("m{index}"));
            match message {
                AgentMessage::User(u) => {
                    let content = match &u.content {
                        UserContent::String(s) => vec![text_block(s.clone())],
                        UserContent::Array(blocks) => blocks
                            .iter()
                            .map(|b| match b {
                                TextOrImageContent::Text(t) => text_block(t.text.clone()),
                                TextOrImageContent::Image(i) => image_block(&i.data, &i.mime_type),
                            })
                            .collect(),
                    };
                    self.update(SessionUpdate::UserMessage { content: Some(content), message_id: id, meta: None }).await;
                }
                AgentMessage::Assistant(a) => {
                    let text: Vec<ContentBlock> = a.content.iter().filter_map(|c| if let AssistantContent::Text(t) = c { Some(text_block(t.text.clone())) } else { None }).collect();
                    let thinking: Vec<ContentBlock> = a.content.iter().filter_map(|c| if let AssistantContent::Thinking(t) = c { Some(text_block(t.thinking.clone())) } else { None }).collect();
                    if !thinking.is_empty() {
                        self.update(SessionUpdate::AgentThought { content: Some(thinking), message_id: id.clone(), meta: None }).await;
                    }
                    if !text.is_empty() {
                        self.update(SessionUpdate::AgentMessage { content: Some(text), message_id: id, meta: None }).await;
                    }
                    for c in &a.content {
                        if let AssistantContent::ToolCall(call) = c {
                            self.announce(&call.id, &call.name, &call.arguments, status("pending")).await;
                        }
                    }
                }
                AgentMessage::ToolResult(r) => self.finish(&r.tool_call_id, &r.content, r.details.as_ref(), r.is_error, None).await,
                AgentMessage::BashExecution(b) => {
                    let text = format!("`$ {}`\n```\n{}\n```", b.command, b.output.trim_end_matches('\n'));
                    self.update(SessionUpdate::AgentMessage { content: Some(vec![text_block(text)]), message_id: id, meta: None }).await;
                }
                AgentMessage::CompactionSummary(s) => {
                    let text = format!("(Earlier conversation, compacted)\n\n{}", s.summary);
                    self.update(SessionUpdate::AgentMessage { content: Some(vec![text_block(text)]), message_id: id, meta: None }).await;
                }
                AgentMessage::BranchSummary(s) => {
                    let text = format!("(Branch summary)\n\n{}", s.summary);
                    self.update(SessionUpdate::AgentMessage { content: Some(vec![text_block(text)]), message_id: id, meta: None }).await;
                }
                // An extension's message and a declared system prompt are context, not conversation.
                AgentMessage::Custom(_) | AgentMessage::System(_) => {}
            }
        }
        let mut st = lock(&self.state);
        st.next_message = st.next_message.max(messages.len() as u64);
    }

    async fn project(&self, event: AgentEvent<'_>) {
        match event {
            AgentEvent::RunStart { .. } => {
                let mut st = lock(&self.state);
                st.hit_length = false;
                st.run_usage = None;
            }
            AgentEvent::TurnStart => {}
            // The user message was upserted by `session/prompt` with the id it answered.
            AgentEvent::MessageStart { message } => {
                if let AgentMessage::Assistant(_) = message {
                    let id = self.next_message_id();
                    lock(&self.state).agent_message = Some(id);
                }
            }
            AgentEvent::MessageDelta { delta, partial: _ } => match delta {
                StreamDelta::TextDelta { delta, .. } => self.agent_text(delta).await,
                StreamDelta::ThinkingDelta { delta, .. } => {
                    let id = self.agent_message();
                    self.update(SessionUpdate::AgentThoughtChunk { content: text_block(delta), message_id: MessageId(id), meta: None }).await;
                }
                StreamDelta::ToolCallStart { id, name, .. } => self.announce(&id, &name, &Map::new(), status("pending")).await,
                StreamDelta::ToolCallEnd { call, .. } => {
                    lock(&self.state).calls.insert(call.id.to_string(), CallInfo { name: call.name.to_string(), arguments: call.arguments.clone() });
                    let update = described(call_update(&call.id), self.cwd().as_deref(), &call.name, &call.arguments);
                    self.update(as_update(update)).await;
                }
                StreamDelta::TextStart { .. } | StreamDelta::TextEnd { .. } | StreamDelta::ThinkingStart { .. } | StreamDelta::ThinkingEnd { .. } | StreamDelta::ToolCallDelta { .. } => {}
            },
            AgentEvent::MessageEnd { message } => {
                let AgentMessage::Assistant(m) = message else { return };
                {
                    let mut st = lock(&self.state);
                    st.agent_message = None;
                    if m.stop_reason == StopReason::Length {
                        st.hit_length = true;
                    }
                    st.run_usage.get_or_insert_default().add(&m.usage);
                }
                let window = *lock(&self.context_window);
                if let Some((size, used)) = v1::context_usage(m, window) {
                    self.update(SessionUpdate::UsageUpdate { cost: None, meta: None, size, used }).await;
                }
            }
            AgentEvent::ToolStart { .. } => {}
            AgentEvent::ToolUpdate { call, partial } => {
                let info = lock(&self.state).calls.get(call.id.as_str()).cloned().unwrap_or_default();
                let info = CallInfo { name: info.name, arguments: Map::new() };
                let update = call_update(&call.id).with_status(status("in_progress")).with_content(tool_content(&info, None, &partial.content, false, None));
                self.update(as_update(update)).await;
            }
            AgentEvent::ToolEnd { call, result, is_error, change } => {
                let AgentToolResult { content, details, .. } = result;
                self.finish(&call.id, content, details.as_ref(), is_error, change).await;
            }
            // The handler reports the outcome (`PromptSettled`) as the idle `state_update`; the
            // rest has no v2 update.
            AgentEvent::TurnEnd { .. } | AgentEvent::RunEnd { .. } | AgentEvent::PromptSettled { .. } | AgentEvent::QueueChanged { .. } | AgentEvent::ThinkingLevelChanged { .. } => {}
            AgentEvent::CompactionStart { .. } | AgentEvent::CompactionEnd { .. } | AgentEvent::RetryStart { .. } | AgentEvent::RetryEnd { .. } => {}
            AgentEvent::SessionNameChanged { name } => {
                self.update(SessionUpdate::SessionInfoUpdate { meta: None, title: Some(name), updated_at: None }).await;
            }
            AgentEvent::TodosChanged { phases } => self.update(plan(phases)).await,
            AgentEvent::SettingsChanged { settings } => {
                let config_options = settings.iter().filter_map(|s| compat::config_option(&crate::dialect::acp::config::setting(s))).collect();
                self.update(SessionUpdate::ConfigOptionUpdate { config_options, meta: None }).await;
            }
            AgentEvent::Notice { level, message } => {
                let severity = match level {
                    NoticeLevel::Info => "info",
                    NoticeLevel::Warning => "warning",
                    NoticeLevel::Error => "error",
                };
                self.notice(severity, &message).await;
            }
        }
    }

    /// A `notice` update: its first line the title, the rest the description.
    pub(super) async fn notice(&self, severity: &str, message: &str) {
        let (title, rest) = message.split_once('\n').unwrap_or((message, ""));
        let title = if title.trim().is_empty() { "Notice" } else { title };
        let description = Some(rest.trim().to_owned()).filter(|d| !d.is_empty());
        self.update(SessionUpdate::Notice { description, meta: None, severity: NoticeSeverity(severity.to_owned()), title: crate::protocol::nonempty::<SessionUpdateTitle>(title) }).await;
    }
}

impl EventSink for AcpV2SessionHost {
    fn emit<'a>(&'a self, event: AgentEvent<'a>) -> BoxFuture<'a, ()> {
        self.project(event).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patch used to read `--- a//tmp/w/new.txt` with no `diff --git` line and no
    /// `/dev/null`, against `DiffPatchFormat`'s MUSTs.
    #[test]
    fn a_git_patch_has_its_header_absolute_paths_and_dev_null_for_an_added_file() {
        assert_eq!(git_patch("/tmp/w/new.txt", None, "one\ntwo\n"), "diff --git /tmp/w/new.txt /tmp/w/new.txt\nnew file mode 100644\n--- /dev/null\n+++ /tmp/w/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n");
        assert_eq!(git_patch("/tmp/w/f.txt", Some("one\ntwo\nthree\n"), "one\n2\nthree\n"), "diff --git /tmp/w/f.txt /tmp/w/f.txt\n--- /tmp/w/f.txt\n+++ /tmp/w/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
        assert_eq!(git_patch("/tmp/w/empty", None, ""), "diff --git /tmp/w/empty /tmp/w/empty\nnew file mode 100644\n");
        assert_eq!(git_quoted("/tmp/a b/\"q\"\\é\t"), "\"/tmp/a b/\\\"q\\\"\\\\\\303\\251\\t\"");
    }
}
