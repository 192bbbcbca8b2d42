//! The core's host port over ACP: approvals as `session/request_permission` with the four
//! standard options, and for a `write` or `edit` the change it would make as a `diff` content
//! block (path, the file's text now, absent for a new file, and after). Only `allow_once` /
//! `allow_always` let the tool run: a rejection, a `cancelled` outcome, an unknown option, an error answer, a timeout, an abort or the client's
//! input ending (stdin EOF) all reject (fail closed). `allow_always` becomes the core's approval for the session and tool;
//! `reject_always` is remembered here and rejects later calls of that tool without asking.
//!
//! ACP v1 has no host tools, questions or dialogs in this direction: host tools are never
//! registered, questions are not offered to the model, and slash-command dialogs are refused
//! with a reason.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;

use super::project::{call_update, tool_kind, tool_locations, tool_title};
use super::{lock, AcpSessionHost};
use crate::core::port::{Answers, ApprovalAsk, Decision, DialogAsk, DialogOutcome, FileChange, HostPort, QuestionAsk, ToolAsk, UiNotice};
use crate::jsonrpc::Reply;
use crate::protocol::acp::{methods, CancelRequestNotification, PermissionOption, RequestId, PermissionOptionId, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionUpdate, ToolCallContent, ToolCallId, ToolCallUpdate};
use crate::core::tools::ToolOutput;

/// The four standard options, v1 and v2 alike: id (which is also its kind) and label.
pub const OPTIONS: [(&str, &str); 4] = [("allow_once", "Allow"), ("allow_always", "Always allow"), ("reject_once", "Reject"), ("reject_always", "Always reject")];

/// The v1 kind of the standard option `id`.
pub(crate) fn kind(id: &str) -> PermissionOptionKind {
    match id {
        "allow_once" => PermissionOptionKind::AllowOnce,
        "allow_always" => PermissionOptionKind::AllowAlways,
        "reject_always" => PermissionOptionKind::RejectAlways,
        _ => PermissionOptionKind::RejectOnce,
    }
}

/// A session's standing answers: the tools the user answered `allow_always` or
/// `reject_always` for (the core remembers the first too; kept here so the answer survives the
/// core forgetting it on a session switch).
#[derive(Debug, Default)]
pub struct Standing {
    allowed: std::collections::HashSet<String>,
    rejected: std::collections::HashSet<String>,
}

impl Standing {
    /// The answer already given for every call of `tool`, if any.
    pub fn given(&self, tool: &str) -> Option<Decision> {
        if self.rejected.contains(tool) {
            return Some(Decision::Reject { feedback: Some(format!("The user always rejects `{tool}` in this session.")) });
        }
        self.allowed.contains(tool).then_some(Decision::ApproveForSession)
    }

    /// The decision the option `chosen` means for a call of `tool`, remembered when it stands
    /// for the session. Only `allow_once` and `allow_always` let it run: anything else rejects.
    pub fn decide(&mut self, tool: &str, chosen: &str) -> Decision {
        match chosen {
            "allow_once" => Decision::Approve,
            "allow_always" => {
                self.allowed.insert(tool.to_owned());
                Decision::ApproveForSession
            }
            "reject_always" => {
                self.rejected.insert(tool.to_owned());
                Decision::Reject { feedback: None }
            }
            _ => Decision::Reject { feedback: None },
        }
    }
}

/// The client's answer to a permission request (`None` when it answered an error), or the
/// decision that stands without one: timed out; abandoned once the run was cancelled
/// (`session/cancel`, `session/close`), the request then withdrawn on the wire too with the
/// protocol's `$/cancel_request` `C` (v2's SHOULD; v1 has the method, and after `session/cancel`
/// its client answers `cancelled` by itself, but after `session/close` nothing else would close
/// the client's dialog); nobody left to answer (the client's input ended).
pub(crate) async fn settled<C>(conn: &crate::jsonrpc::Connection, reply: Reply, id: Value, withdraw: impl FnOnce(Value) -> serde_json::Result<C::Params>) -> Result<Option<Value>, Decision>
where
    C: crate::jsonrpc::Notification,
    C::Params: serde::Serialize,
{
    match reply {
        Reply::Answered(answer) => Ok(answer.ok()),
        Reply::TimedOut => Err(Decision::TimedOut),
        Reply::Abandoned => {
            match withdraw(id) {
                Ok(params) => conn.peer().notify::<C>(&params).await,
                Err(e) => tracing::warn!("cannot name request for $/cancel_request: {e}"),
            }
            Err(Decision::Abandoned)
        }
        Reply::InputEnded => Err(Decision::Unanswerable),
    }
}

/// The option the client chose (`Some(None)`: it answered `cancelled`; `None`: an unknown
/// outcome or an unreadable answer, which is no approval), or the decision that stands.
pub(crate) fn chosen(outcome: Option<Option<String>>) -> Result<String, Decision> {
    match outcome {
        Some(Some(option)) => Ok(option),
        Some(None) => Err(Decision::Abandoned),
        None => Err(Decision::Reject { feedback: None }),
    }
}

/// A file change as ACP's `diff` tool call content (`oldText` absent for a new file).
fn diff(change: FileChange) -> ToolCallContent {
    ToolCallContent::Diff { meta: None, new_text: change.new_text, old_text: change.old_text, path: change.path.display().to_string() }
}

impl AcpSessionHost {
    async fn ask_permission(&self, ask: ApprovalAsk<'_>) -> Decision {
        let tool = ask.call.name.to_string();
        if let Some(given) = lock(&self.state).standing.given(&tool) {
            return given;
        }
        let tool_call = ToolCallUpdate::new(ToolCallId(ask.call.id.to_string()))
            .with_kind(tool_kind(&tool))
            .with_locations(tool_locations(lock(&self.cwd).as_deref(), &ask.call.arguments))
            .with_name(tool.clone())
            .with_raw_input(Value::Object(ask.call.arguments.clone()))
            .with_title(tool_title(&tool, &ask.call.arguments))
            .with_content(ask.change.map(|change| vec![diff(change)]));
        let options = OPTIONS.iter().map(|(id, name)| PermissionOption::new(kind(id), *name, PermissionOptionId((*id).to_owned()))).collect();
        let params = RequestPermissionRequest::new(options, SessionId(self.session_id()), tool_call);
        let pending = self.conn.peer().request::<methods::SessionRequestPermission>(&params).await;
        let id = pending.id().clone();
        let reply = pending.wait(Some(ask.timeout), Some(ask.cancel)).await;
        let answer = match settled::<methods::CancelRequest>(&self.conn, reply, id, |id| crate::protocol::decode::from_value::<RequestId>(id).map(CancelRequestNotification::new)).await {
            Ok(answer) => answer,
            Err(decision) => return decision,
        };
        let outcome = answer.and_then(|v| crate::protocol::decode::from_value::<RequestPermissionResponse>(v).ok()).map(|r| match r.outcome {
            RequestPermissionOutcome::Selected { option_id, .. } => Some(option_id.0),
            RequestPermissionOutcome::Cancelled => None,
        });
        let chosen = match chosen(outcome) {
            Ok(chosen) => chosen,
            Err(decision) => return decision,
        };
        let decision = lock(&self.state).standing.decide(&tool, &chosen);
        if matches!(decision, Decision::Approve | Decision::ApproveForSession) {
            let mut update = call_update(&ask.call.id);
            if let SessionUpdate::ToolCallUpdate { status, .. } = &mut update {
                *status = Some(crate::protocol::acp::ToolCallStatus::InProgress);
            }
            self.update(update).await;
        }
        decision
    }
}

/// A session host of either ACP version as the core's host port: both ask approvals as
/// `session/request_permission`, have no host tools (none are ever registered), offer the model
/// no questions, refuse slash-command dialogs with a reason (only commands that work without
/// one are offered), and show the core's notices as the version can.
pub(crate) trait AcpPort: Send + Sync {
    /// Asks the client with `session/request_permission`.
    fn request_permission<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision>;
    /// Shows a notice of the core's.
    fn show(&self, notice: UiNotice) -> BoxFuture<'_, ()>;
    /// The client's tools for the built-in ones, when it lends any.
    fn client_tools(&self) -> Option<std::sync::Arc<dyn crate::core::tools::HostTools>> {
        None
    }
}

impl<T: AcpPort> HostPort for T {
    fn tools(&self) -> Option<std::sync::Arc<dyn crate::core::tools::HostTools>> {
        self.client_tools()
    }

    fn approve<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        self.request_permission(ask)
    }

    fn call_tool<'a>(&'a self, ask: ToolAsk<'a>) -> BoxFuture<'a, ToolOutput> {
        // ACP has no host tools; none are ever registered, so this is not reached.
        let name = ask.def.name.to_string();
        async move { ToolOutput::error(format!("Host tool \"{name}\" is not available over ACP")) }.boxed()
    }

    fn supports_questions(&self) -> bool {
        false
    }

    fn ask_questions<'a>(&'a self, _ask: QuestionAsk<'a>) -> BoxFuture<'a, Option<Answers>> {
        async { None }.boxed()
    }

    fn dialog<'a>(&'a self, _ask: DialogAsk<'a>) -> BoxFuture<'a, DialogOutcome> {
        // Only commands that work without a dialog are offered (`supports_dialogs`), so this is
        // reached by one typed by hand; the agent says what to do instead.
        async { DialogOutcome::Unsupported("ACP clients show no dialogs".into()) }.boxed()
    }

    fn supports_dialogs(&self) -> bool {
        false
    }

    fn notify(&self, notice: UiNotice) -> BoxFuture<'_, ()> {
        self.show(notice)
    }
}

/// How a notice of the core's is shown as agent message text: a notification's message (v2
/// sends it as a `notice` instead), the status, a widget's lines, the last prompt; nothing
/// for the title (it goes out as `session_info_update`) or for empty text.
pub(crate) enum Shown {
    /// A notification's message.
    Notification(String),
    /// Text to show.
    Text(String),
    /// Nothing to show.
    Nothing,
}

impl Shown {
    /// What `notice` shows.
    pub(crate) fn of(notice: UiNotice) -> Self {
        let text = match notice {
            UiNotice::Notify { message, .. } => return Self::Notification(message),
            UiNotice::Status { text, .. } => text.unwrap_or_default(),
            UiNotice::Widget { lines: Some(lines), .. } => lines.join("\n"),
            UiNotice::Widget { key, lines: None } => format!("No {key}."),
            UiNotice::EditorText { text } => format!("Last prompt:\n\n{text}"),
            UiNotice::Title { .. } => return Self::Nothing,
        };
        if text.is_empty() {
            Self::Nothing
        } else {
            Self::Text(text)
        }
    }
}

impl AcpPort for AcpSessionHost {
    fn request_permission<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        self.ask_permission(ask).boxed()
    }

    fn client_tools(&self) -> Option<std::sync::Arc<dyn crate::core::tools::HostTools>> {
        lock(&self.tools).clone()
    }

    /// Every notice but the title is shown as agent message text: ACP v1 has no status bar,
    /// widgets or editor access.
    fn show(&self, notice: UiNotice) -> BoxFuture<'_, ()> {
        async move {
            let text = match Shown::of(notice) {
                Shown::Notification(text) | Shown::Text(text) => text,
                Shown::Nothing => return,
            };
            if text.is_empty() {
                return;
            }
            let text = format!("\n\n> {}\n", text.replace('\n', "\n> "));
            self.update(SessionUpdate::AgentMessageChunk { content: super::project::text_block(text), message_id: None, meta: None }).await;
        }
        .boxed()
    }
}
