//! The core's host port over ACP v2: approvals as `session/request_permission` with a
//! `tool_call` subject (the call, with a diff for `edit` / `write`) and v1's four standard
//! options, under the same fail-closed rules as v1 ([`crate::dialect::acp::port`]). While a
//! request waits the session reports `requires_action`, and `running` once it is answered.
//!
//! v2 has no host tools, and agentwire asks no elicitations: questions are not offered to the
//! model, and slash-command dialogs are refused with a reason.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::project::{call_update, described, diff, text_block};
use super::{lock, AcpV2SessionHost};
use crate::core::port::{ApprovalAsk, Decision, UiNotice};
use crate::dialect::acp::port::{chosen, settled, AcpPort, Shown};
use crate::protocol::acp_v2::{methods, CancelRequestNotification, MessageId, RequestId, PermissionOption, PermissionOptionId, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, RequestPermissionSubject, SessionId, SessionUpdate};


impl AcpV2SessionHost {
    async fn ask_permission(&self, ask: ApprovalAsk<'_>) -> Decision {
        let tool = ask.call.name.to_string();
        if let Some(given) = lock(&self.state).standing.given(&tool) {
            return given;
        }
        let cwd = lock(&self.cwd).clone();
        let mut tool_call = described(call_update(&ask.call.id), cwd.as_deref(), &tool, &ask.call.arguments);
        // A `write` or `edit` shows the change it would make.
        if let Some(change) = ask.change {
            tool_call = tool_call.with_content(vec![diff(&change.path.display().to_string(), change.old_text.as_deref(), &change.new_text)]);
        }
        let title = super::super::acp::project::tool_title(&tool, &ask.call.arguments);
        let options = crate::dialect::acp::port::OPTIONS.iter().map(|(id, name)| PermissionOption::new(PermissionOptionKind((*id).to_owned()), *name, PermissionOptionId((*id).to_owned()))).collect();
        let params = RequestPermissionRequest::new(options, SessionId(self.session_id()), format!("Allow {title}?")).with_subject(RequestPermissionSubject::ToolCall { meta: None, tool_call });
        let first = {
            let mut st = lock(&self.state);
            st.waiting += 1;
            st.waiting == 1
        };
        if first {
            self.state("requires_action", None, None).await;
        }
        let pending = self.conn.peer().request::<methods::SessionRequestPermission>(&params).await;
        let id = pending.id().clone();
        let reply = pending.wait(Some(ask.timeout), Some(ask.cancel)).await;
        let last = {
            let mut st = lock(&self.state);
            st.waiting = st.waiting.saturating_sub(1);
            st.waiting == 0
        };
        // Withdrawn once the run was cancelled, the client closes its dialog and answers
        // `cancelled`, which nobody waits for any more; the run reports `idle` itself.
        let answer = match settled::<methods::CancelRequest>(&self.conn, reply, id, |id| crate::protocol::decode::from_value::<RequestId>(id).map(CancelRequestNotification::new)).await {
            Ok(answer) => answer,
            Err(decision) => return decision,
        };
        if last {
            self.state("running", None, None).await;
        }
        let outcome = answer.and_then(|v| crate::protocol::decode::from_value::<RequestPermissionResponse>(v).ok()).map(|r| match r.outcome {
            RequestPermissionOutcome::Selected { option_id, .. } => Some(option_id.0),
            RequestPermissionOutcome::Cancelled { .. } => None,
        });
        let chosen = match chosen(outcome) {
            Ok(chosen) => chosen,
            Err(decision) => return decision,
        };
        let decision = lock(&self.state).standing.decide(&tool, &chosen);
        // Allowed: the call runs now.
        if matches!(decision, Decision::Approve | Decision::ApproveForSession) {
            self.update(super::project::as_update(call_update(&ask.call.id).with_status(super::project::status("in_progress")))).await;
        }
        decision
    }
}

impl AcpPort for AcpV2SessionHost {
    fn request_permission<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        self.ask_permission(ask).boxed()
    }

    /// A notification as a `notice`; status, widgets and the last prompt as agent text.
    fn show(&self, notice: UiNotice) -> BoxFuture<'_, ()> {
        async move {
            match Shown::of(notice) {
                Shown::Notification(message) => self.notice("info", &message).await,
                Shown::Text(text) => {
                    let id = self.next_message_id();
                    self.update(SessionUpdate::AgentMessageChunk { content: text_block(text), message_id: MessageId(id), meta: None }).await;
                }
                Shown::Nothing => {}
            }
        }
        .boxed()
    }
}
