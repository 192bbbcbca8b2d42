//! The core's host port over the wire: approvals as `ApprovalRequest` (answered
//! `approve` / `approve_for_session` / `reject`, settled with an `ApprovalResponse` event),
//! external tools as `ToolCallRequest`, questions as `QuestionRequest`, and the dialogs of slash
//! commands as `QuestionRequest` too when the client declared `supports_question` (refused with
//! a reason otherwise). Every request has its own id and its own waiter; a timeout, an abort or
//! an answer that does not parse settles it fail-closed, and so does the client's input ending
//! (stdin EOF): nobody can answer then, and nothing is asked after it.

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{lock, ReturnExtras, WireHost};
use crate::core::events::NoticeLevel;
use crate::core::port::{Answers, ApprovalAsk, Decision, DialogAsk, DialogKind, DialogOutcome, HostPort, Question, QuestionAsk, ToolAsk, UiNotice};
use crate::jsonrpc::Reply;
use crate::protocol::*;
use crate::core::tools::ToolOutput;

/// kimi's words for a rejection without feedback; the model hears them too (the core's
/// [`Decision::RejectAndStop`] result).
const REJECTED_STOP: &str = crate::core::port::REJECTED_STOP;

/// kimi's words for an external tool call the client can no longer answer (its input
/// ended), so a client written against kimi recognizes it.
const CONNECTION_CLOSED: &str = "Wire connection closed before tool result was received.";

/// Questions as the client gets them: every optional field present with its default, as kimi
/// sends them, so clients need not guess.
fn wire_question(q: Question) -> WireQuestion {
    WireQuestion {
        question: q.question,
        header: Some(q.header.unwrap_or_default()),
        options: q.options.into_iter().map(|o| WireQuestionOption { label: o.label, description: Some(o.description.unwrap_or_default()) }).collect(),
        multi_select: Some(q.multi_select.unwrap_or(false)),
        body: Some(String::new()),
        other_label: Some(String::new()),
        other_description: Some(String::new()),
    }
}

impl WireHost {
    async fn approve_call(&self, ask: ApprovalAsk<'_>) -> Decision {
        if self.conn.peer().is_closed() {
            // Nobody can answer; nothing is asked and nothing settled. kimi rejects approvals
            // after EOF, and a rejection ends its turn.
            lock(&self.returns).insert(ask.call.id.to_string(), ReturnExtras::failed(REJECTED_STOP, "Rejected by user"));
            return Decision::RejectAndStop;
        }
        let id = uuid::Uuid::new_v4().to_string();
        let tool = ask.call.name.to_string();
        let (action, description, display) = match ask.call.arguments.get("command").and_then(Value::as_str) {
            Some(c) => ("run command", format!("Run command `{c}`"), WireDisplayBlock::Shell(WireShellDisplay::new("bash", c))),
            None => {
                let args = Value::Object(ask.call.arguments.clone());
                ("use tool", format!("Use tool `{tool}` with {args}"), WireDisplayBlock::Brief(WireBriefDisplay::new(ask.summary.clone())))
            }
        };
        let payload = WireApprovalRequestPayload {
            id: id.clone(),
            tool_call_id: ask.call.id.to_string(),
            sender: tool,
            action: action.into(),
            description,
            source_kind: Some("foreground_turn".into()),
            source_id: None,
            agent_id: None,
            subagent_type: None,
            source_description: None,
            display: vec![display],
        };
        let waited = self.request(&id, WireApprovalRequest::new(payload).into()).await.wait(Some(ask.timeout), Some(ask.cancel)).await;
        // Fail closed: only the two exact approve answers let the tool run.
        let (decision, word, feedback) = match waited {
            Reply::Answered(Ok(value)) => match crate::protocol::decode::from_value::<WireApprovalResult>(value) {
                Ok(r) => {
                    let feedback = r.feedback.unwrap_or_default();
                    match r.response {
                        WireApprovalDecision::Approve => (Decision::Approve, "approve", feedback),
                        WireApprovalDecision::ApproveForSession => (Decision::ApproveForSession, "approve_for_session", feedback),
                        // With feedback the model hears it and the turn goes on; without, the
                        // user takes over and the turn ends, as in kimi.
                        WireApprovalDecision::Reject if !feedback.trim().is_empty() => (Decision::Reject { feedback: Some(feedback.clone()) }, "reject", feedback),
                        WireApprovalDecision::Reject => (Decision::RejectAndStop, "reject", feedback),
                    }
                }
                Err(_) => (Decision::RejectAndStop, "reject", String::new()),
            },
            // An error reply is a rejection without feedback, as in kimi.
            Reply::Answered(Err(_)) => (Decision::RejectAndStop, "reject", String::new()),
            Reply::TimedOut => (Decision::TimedOut, "reject", String::new()),
            Reply::Abandoned => (Decision::Abandoned, "reject", String::new()),
            // EOF rejects as kimi does, and like any rejection without feedback it ends the turn.
            Reply::InputEnded => (Decision::RejectAndStop, "reject", String::new()),
        };
        let response = match word {
            "approve" => WireApprovalDecision::Approve,
            "approve_for_session" => WireApprovalDecision::ApproveForSession,
            _ => WireApprovalDecision::Reject,
        };
        // The refused call's ToolResult in kimi's words.
        match &decision {
            Decision::Reject { feedback: Some(said) } => {
                let extras = ReturnExtras::failed(format!("The tool call is rejected by the user. User feedback: {said}"), format!("Rejected: {said}"));
                lock(&self.returns).insert(ask.call.id.to_string(), extras);
            }
            Decision::RejectAndStop => {
                lock(&self.returns).insert(ask.call.id.to_string(), ReturnExtras::failed(REJECTED_STOP, "Rejected by user"));
            }
            Decision::Approve | Decision::ApproveForSession | Decision::Reject { feedback: None } | Decision::TimedOut | Decision::Abandoned | Decision::Unanswerable => {}
        }
        let settled = WireApprovalResponsePayload { request_id: id, response, feedback: Some(feedback) };
        self.event(WireApprovalResponseEvent::new(settled).into()).await;
        decision
    }

    async fn external_tool(&self, ask: ToolAsk<'_>) -> ToolOutput {
        // kimi uses the tool call id as the request id.
        let id = ask.call.id.to_string();
        let arguments = Value::Object(ask.call.arguments.clone()).to_string();
        let payload = WireToolCallRequestPayload { id: id.clone(), name: ask.def.name.to_string(), arguments: Some(arguments) };
        let pending = self.request(&id, WireToolCallRequest::new(payload).into()).await;
        let name = ask.def.name.to_string();
        match pending.wait(Some(ask.timeout), Some(ask.cancel)).await {
            Reply::Answered(Ok(value)) => match crate::protocol::decode::from_value::<WireToolCallResult>(value) {
                Ok(r) => {
                    let rv = r.return_value;
                    let text = match &rv.output {
                        WireUserInput::String(s) => s.clone(),
                        WireUserInput::Array(parts) => parts.iter().filter_map(|p| if let WireContentPart::Text(t) = p { Some(t.text.as_str()) } else { None }).collect::<Vec<_>>().join("\n"),
                    };
                    let text = if text.is_empty() { rv.message.clone() } else { text };
                    lock(&self.returns).insert(id, ReturnExtras { message: rv.message, display: rv.display, output: None });
                    ToolOutput { is_error: rv.is_error, ..ToolOutput::text(text) }
                }
                Err(e) => ToolOutput::error(format!("External tool \"{name}\" answered with an invalid result: {e}")),
            },
            // As kimi answers a failed external tool: `output:""`, the client's words in
            // `message`; the loop goes on.
            Reply::Answered(Err(e)) => {
                lock(&self.returns).insert(id, ReturnExtras::failed(e.message.clone(), "External tool error"));
                ToolOutput::error(e.message)
            }
            Reply::TimedOut => ToolOutput::error(format!("External tool \"{name}\" did not answer within {} ms", ask.timeout.as_millis())),
            Reply::Abandoned => ToolOutput::error(format!("External tool \"{name}\" was aborted")),
            Reply::InputEnded => {
                lock(&self.returns).insert(id, ReturnExtras::failed(CONNECTION_CLOSED, "External tool error"));
                ToolOutput::error(CONNECTION_CLOSED)
            }
        }
    }

    /// Sends a `QuestionRequest` and waits for the answers (`None`: declined or aborted).
    async fn question_request(&self, tool_call_id: String, questions: Vec<WireQuestion>, timeout: Option<Duration>, cancel: &CancellationToken) -> Result<Option<Answers>, DialogOutcome> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let payload = WireQuestionRequestPayload { id: id.clone(), tool_call_id, questions };
        match self.request(&id, WireQuestionRequest::new(payload).into()).await.wait(timeout, Some(cancel)).await {
            Reply::Answered(Ok(value)) => Ok(crate::protocol::decode::from_value::<WireQuestionResult>(value)
                .ok()
                .map(|r| r.answers.into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<String, Value>>())),
            // An error reply is a declined question, as in kimi: the model goes on.
            Reply::Answered(Err(_)) => Ok(None),
            Reply::TimedOut => Err(DialogOutcome::TimedOut),
            Reply::Abandoned => Err(DialogOutcome::Abandoned),
            // A question pending at EOF is answered with nothing (kimi); a dialog fails closed.
            Reply::InputEnded => Err(DialogOutcome::Unsupported("the client closed its input (stdin EOF), so nobody can answer a dialog any more".into())),
        }
    }

    async fn ask(&self, ask: QuestionAsk<'_>) -> Option<Answers> {
        let questions = ask.questions.into_iter().map(wire_question).collect();
        self.question_request(ask.call.id.to_string(), questions, None, ask.cancel).await.ok().flatten()
    }

    /// A slash command's dialog as one question.
    async fn show(&self, ask: DialogAsk<'_>) -> DialogOutcome {
        if !self.questions_supported() {
            return DialogOutcome::Unsupported(
                "This command needs a dialog, and this client does not answer questions: declare capabilities.supports_question in initialize to get dialogs as QuestionRequest".into(),
            );
        }
        let (question, options, body) = match &ask.kind {
            DialogKind::Select { title, options } => (title.clone(), options.clone(), String::new()),
            DialogKind::Confirm { title, message } => (format!("{title}: {message}"), vec!["Yes".to_owned(), "No".to_owned()], String::new()),
            DialogKind::Input { title, placeholder } => (title.clone(), Vec::new(), placeholder.clone().unwrap_or_default()),
            DialogKind::Editor { title, prefill } => (title.clone(), Vec::new(), prefill.clone().unwrap_or_default()),
        };
        let wire = dialog_question(question.clone(), &options, body);
        let tool_call_id = format!("dialog-{}", uuid::Uuid::new_v4().simple());
        let answers = match self.question_request(tool_call_id, vec![wire], Some(ask.timeout), ask.cancel).await {
            Ok(a) => a,
            Err(outcome) => return outcome,
        };
        let answer = answers.and_then(|a| a.get(&question).and_then(Value::as_str).map(str::to_owned));
        match (answer, &ask.kind) {
            (None, _) => DialogOutcome::Dismissed,
            (Some(a), DialogKind::Confirm { .. }) => DialogOutcome::Confirmed(a == "Yes"),
            (Some(a), DialogKind::Select { .. } | DialogKind::Input { .. } | DialogKind::Editor { .. }) => DialogOutcome::Value(a),
        }
    }

    async fn show_notice(&self, notice: UiNotice) {
        match notice {
            UiNotice::Notify { level, message } => {
                let severity = match level {
                    NoticeLevel::Info => "info",
                    NoticeLevel::Warning => "warning",
                    NoticeLevel::Error => "error",
                };
                let created_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
                let payload = WireNotificationPayload {
                    id: uuid::Uuid::new_v4().simple().to_string(),
                    category: "agent".into(),
                    type_: "notice".into(),
                    source_kind: "agent".into(),
                    source_id: "agentwire".into(),
                    title: "agentwire".into(),
                    body: message,
                    severity: severity.into(),
                    created_at,
                    payload: Map::new(),
                };
                self.event(WireNotificationEvent::new(payload).into()).await;
            }
            // The wire has no status bar, widgets, title or editor: nothing to show them in.
            UiNotice::Status { .. } | UiNotice::Widget { .. } | UiNotice::Title { .. } | UiNotice::EditorText { .. } => {}
        }
    }
}

impl HostPort for WireHost {
    fn approve<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        self.approve_call(ask).boxed()
    }

    fn call_tool<'a>(&'a self, ask: ToolAsk<'a>) -> BoxFuture<'a, ToolOutput> {
        self.external_tool(ask).boxed()
    }

    fn supports_questions(&self) -> bool {
        self.questions_supported()
    }

    fn ask_questions<'a>(&'a self, ask: QuestionAsk<'a>) -> BoxFuture<'a, Option<Answers>> {
        self.ask(ask).boxed()
    }

    fn dialog<'a>(&'a self, ask: DialogAsk<'a>) -> BoxFuture<'a, DialogOutcome> {
        self.show(ask).boxed()
    }

    fn notify(&self, notice: UiNotice) -> BoxFuture<'_, ()> {
        self.show_notice(notice).boxed()
    }
}

/// A dialog as one wire question: a choice among `options`, or free text (`body` prefilled)
/// when there are none. Confirms ask "Yes" / "No".
pub fn dialog_question(question: String, options: &[String], body: String) -> WireQuestion {
    let free_text = options.is_empty();
    WireQuestion {
        question,
        header: Some(String::new()),
        options: options.iter().map(|label| WireQuestionOption { label: label.clone(), description: Some(String::new()) }).collect(),
        multi_select: Some(false),
        body: Some(body),
        other_label: Some(if free_text { "Answer".into() } else { String::new() }),
        other_description: Some(String::new()),
    }
}
