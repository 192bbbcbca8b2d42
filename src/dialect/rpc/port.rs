//! The core's host port over the JSONL dialect: dialogs and approvals as `extension_ui_request`
//! frames answered by `extension_ui_response`, fire-and-forget UI requests, and host tools as
//! `host_tool_call` (see [`super::host_tools`]). A dialog that times out or is abandoned (abort,
//! stdin EOF) resolves to its fail-closed outcome and the host gets a `cancel` frame so it can
//! close it; after stdin EOF no dialog is sent (nobody could answer it). Answers with unknown ids
//! find nothing and get one `not_found` error from the server.

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::host_tools::HostToolCalls;
use super::RpcHost;
use crate::core::events::NoticeLevel;
use crate::core::port::{Answers, ApprovalAsk, Decision, DialogAsk, DialogKind, DialogOutcome, HostPort, QuestionAsk, ToolAsk, UiNotice};
use crate::jsonrpc::{Peer, Reply};
use crate::protocol::*;
use crate::core::tools::ToolOutput;

/// A fresh 16-hex-digit id for sub-protocol requests.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_owned()
}

/// How a dialog ended, before it is read as an answer of its kind: the host answered
/// (`value`, `confirmed` or `cancelled`), or nobody answered in time, or the run was aborted
/// while waiting (after these two the host was sent a `cancel`), or the host's input ended
/// (stdin EOF) before it answered (a `cancel` sent) or before the dialog was asked (nothing
/// sent): nobody can answer it.
pub type Dialog = Reply<ExtensionUiResponse>;

/// Why a dialog fails closed once the host's input has ended.
const INPUT_ENDED: &str = "the host closed its input (stdin EOF), so nobody can answer a dialog any more";

/// Dialogs waiting for the host, by request id: the runtime's peer, with the host's typed
/// `extension_ui_response` as the answer (closed at stdin EOF, [`Peer::close`]).
pub type UiDialogs = Peer<ExtensionUiResponse>;

/// The approval dialog's options (omp's words).
const APPROVE: &str = "Approve";
const DENY: &str = "Deny";

/// The longest call summary an approval title carries; longer ones (a large `write`) end in `…`.
const SUMMARY_CHARS: usize = 200;

fn short(summary: &str) -> String {
    if summary.chars().count() <= SUMMARY_CHARS {
        return summary.to_owned();
    }
    let mut cut: String = summary.chars().take(SUMMARY_CHARS).collect();
    cut.push('…');
    cut
}

fn timeout_ms(timeout: Duration) -> Option<u64> {
    Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
}

impl RpcHost {
    /// Sends a dialog and waits for the answer, the timeout or `cancel`; `build` gets the new
    /// request id.
    pub(crate) async fn dialog_frame(&self, build: impl FnOnce(&str) -> ExtensionUiRequest, timeout: Duration, cancel: &CancellationToken) -> Dialog {
        let id = new_id();
        if self.dialogs.is_closed() {
            // Nobody can answer: the dialog is not sent.
            return Dialog::InputEnded;
        }
        let pending = self.dialogs.send(Value::String(id.clone()), &build(&id)).await;
        // Settled or not, the dialog is withdrawn once waiting ends: a late answer finds nothing.
        let outcome = pending.wait(Some(timeout), Some(cancel)).await;
        if !matches!(outcome, Dialog::Answered(_)) {
            // omp closes a dialog it gave up on; the host may still be reading stdout.
            let _ = self.out.send(&UiCancelRequest::new(nonempty(&new_id()), nonempty(&id))).await;
        }
        outcome
    }

    async fn fire(&self, request: impl FnOnce(&str) -> ExtensionUiRequest) {
        let _ = self.out.send(&request(&new_id())).await;
    }

    /// The approval dialog omp sends, so an omp host shows it as its own: a `select` titled
    /// `"Allow tool: <name>\nCommand: <summary>"` with the options `Approve` and `Deny`.
    async fn approve_call(&self, ask: ApprovalAsk<'_>) -> Decision {
        let title = format!("Allow tool: {}\nCommand: {}", ask.call.name.as_str(), short(&ask.summary));
        let options = vec![APPROVE.to_owned(), DENY.to_owned()];
        let build = |id: &str| ExtensionUiRequest::from(UiSelectRequest::new(nonempty(id), title.clone(), options.clone()).with_timeout(timeout_ms(ask.timeout)));
        match self.dialog_frame(build, ask.timeout, ask.cancel).await {
            // Fail closed: only an explicit `Approve` that is not also a cancel approves.
            Dialog::Answered(r) if r.value.as_deref() == Some(APPROVE) && r.cancelled != Some(true) => Decision::Approve,
            Dialog::Answered(_) => Decision::Reject { feedback: None },
            Dialog::TimedOut => Decision::TimedOut,
            Dialog::Abandoned => Decision::Abandoned,
            Dialog::InputEnded => Decision::Unanswerable,
        }
    }

    async fn show(&self, ask: DialogAsk<'_>) -> DialogOutcome {
        let timeout = timeout_ms(ask.timeout);
        let build = |id: &str| -> ExtensionUiRequest {
            match ask.kind.clone() {
                DialogKind::Select { title, options } => UiSelectRequest::new(nonempty(id), title, options).with_timeout(timeout).into(),
                DialogKind::Confirm { title, message } => UiConfirmRequest::new(nonempty(id), title, message).with_timeout(timeout).into(),
                DialogKind::Input { title, placeholder } => UiInputRequest::new(nonempty(id), title).with_placeholder(placeholder).with_timeout(timeout).into(),
                DialogKind::Editor { title, prefill } => UiEditorRequest::new(nonempty(id), title).with_prefill(prefill).with_prompt_style(Some(true)).with_timeout(timeout).into(),
            }
        };
        let confirm = matches!(ask.kind, DialogKind::Confirm { .. });
        match self.dialog_frame(build, ask.timeout, ask.cancel).await {
            Dialog::Answered(r) if r.cancelled == Some(true) => DialogOutcome::Dismissed,
            Dialog::Answered(r) if confirm => DialogOutcome::Confirmed(r.confirmed == Some(true)),
            Dialog::Answered(r) => r.value.map_or(DialogOutcome::Dismissed, DialogOutcome::Value),
            Dialog::TimedOut => DialogOutcome::TimedOut,
            Dialog::Abandoned => DialogOutcome::Abandoned,
            Dialog::InputEnded => DialogOutcome::Unsupported(INPUT_ENDED.into()),
        }
    }

    async fn show_notice(&self, notice: UiNotice) {
        match notice {
            UiNotice::Notify { level, message } => {
                let level = match level {
                    NoticeLevel::Info => UiNotifyRequestNotifyType::Info,
                    NoticeLevel::Warning => UiNotifyRequestNotifyType::Warning,
                    NoticeLevel::Error => UiNotifyRequestNotifyType::Error,
                };
                self.fire(|id| UiNotifyRequest::new(nonempty(id), message).with_notify_type(Some(level)).into()).await;
            }
            UiNotice::Status { key, text } => self.fire(|id| UiSetStatusRequest::new(nonempty(id), nonempty(&key)).with_status_text(text).into()).await,
            UiNotice::Widget { key, lines } => self.fire(|id| UiSetWidgetRequest::new(nonempty(id), nonempty(&key)).with_widget_lines(lines).into()).await,
            UiNotice::Title { title } => self.fire(|id| UiSetTitleRequest::new(nonempty(id), title).into()).await,
            UiNotice::EditorText { text } => self.fire(|id| UiSetEditorTextRequest::new(nonempty(id), text).into()).await,
        }
    }
}

impl HostPort for RpcHost {
    fn approve<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        self.approve_call(ask).boxed()
    }

    fn call_tool<'a>(&'a self, ask: ToolAsk<'a>) -> BoxFuture<'a, ToolOutput> {
        HostToolCalls::call(&self.tools, &self.out, ask).boxed()
    }

    fn supports_questions(&self) -> bool {
        // The JSONL dialect has no question request; the model is not offered the tool.
        false
    }

    fn ask_questions<'a>(&'a self, _ask: QuestionAsk<'a>) -> BoxFuture<'a, Option<Answers>> {
        async { None }.boxed()
    }

    fn dialog<'a>(&'a self, ask: DialogAsk<'a>) -> BoxFuture<'a, DialogOutcome> {
        self.show(ask).boxed()
    }

    fn notify(&self, notice: UiNotice) -> BoxFuture<'_, ()> {
        self.show_notice(notice).boxed()
    }
}

use crate::protocol::nonempty;
