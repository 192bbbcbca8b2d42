//! What the core asks the host, as typed async calls: approvals, host (external) tools,
//! questions, dialogs and fire-and-forget UI. Each dialect implements [`HostPort`] with its own
//! requests (JSONL: `extension_ui_request`, `host_tool_call`; wire: `ApprovalRequest`,
//! `ToolCallRequest`, `QuestionRequest`), correlating every call by a request id of its own and
//! honouring the timeout and cancellation it is given. Whatever cannot be answered resolves to
//! the fail-closed outcome: a timeout, an abort or a client that cannot be asked never approves.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::{AgentToolResult, HostToolDefinition, ToolCall};
use super::events::NoticeLevel;
use super::tools::ToolOutput;

/// The tool that asks the user questions; an agent offers it to the model only when the host
/// port can ask ([`HostPort::supports_questions`]). kimi's name, so prompts written for kimi work.
pub const QUESTION_TOOL: &str = "AskUserQuestion";

/// The result of a call rejected with [`Decision::RejectAndStop`] (kimi's words, so the model and
/// the host read what kimi would send them).
pub const REJECTED_STOP: &str = "The tool call is rejected by the user. Stop what you are doing and wait for the user to tell you how to proceed.";

/// A tool call that needs the user's approval.
#[derive(Debug)]
pub struct ApprovalAsk<'a> {
    /// The call (id, name, arguments).
    pub call: &'a ToolCall,
    /// A one-line summary of what it does: the command line for `bash`, the path for file
    /// tools, the arguments otherwise.
    pub summary: String,
    /// What the call would change in a file (`write`, `edit`), worked out without changing it,
    /// so the user sees what they approve; `None` for other calls.
    pub change: Option<FileChange>,
    /// How long to wait before rejecting.
    pub timeout: Duration,
    /// Cancelled when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// A file's text before and after a tool call that would change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file (absolute).
    pub path: std::path::PathBuf,
    /// Its text now; `None` when it does not exist yet.
    pub old_text: Option<String>,
    /// Its text after the call.
    pub new_text: String,
}

/// The user's decision on an approval. Only the two approve variants let the tool run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run this call.
    Approve,
    /// Run this call and every later call of the same tool in this session.
    ApproveForSession,
    /// Do not run it; optional feedback for the model.
    Reject {
        /// What the user said instead (goes back to the model).
        feedback: Option<String>,
    },
    /// Do not run it, and end the turn once the message's calls are done: the user takes
    /// over (kimi's `reject` without feedback, or an error reply).
    RejectAndStop,
    /// Nobody answered in time.
    TimedOut,
    /// The run was aborted while asking.
    Abandoned,
    /// Nobody can answer: the host's input has ended (stdin EOF). Fails closed at once.
    Unanswerable,
}

/// A call of a tool the host implements.
#[derive(Debug)]
pub struct ToolAsk<'a> {
    /// The tool's definition (as the host registered it).
    pub def: &'a HostToolDefinition,
    /// The model's call.
    pub call: &'a ToolCall,
    /// How long to wait for the result.
    pub timeout: Duration,
    /// Cancelled when the run is aborted.
    pub cancel: &'a CancellationToken,
    /// Partial results the host reports while the tool runs (the core turns them into
    /// `ToolUpdate` events). Sending waits when the core is behind (backpressure).
    pub updates: mpsc::Sender<AgentToolResult>,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct QuestionOption {
    /// What the user picks.
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: Option<String>,
}

/// One multiple-choice question (the user may also answer in their own words).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short header.
    #[serde(default)]
    pub header: Option<String>,
    /// The options.
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    /// Several options may be chosen.
    #[serde(default)]
    pub multi_select: Option<bool>,
}

/// Questions for the user (the `AskUserQuestion` tool), offered only when the port can ask.
#[derive(Debug)]
pub struct QuestionAsk<'a> {
    /// The model's call of the question tool.
    pub call: &'a ToolCall,
    /// The questions.
    pub questions: Vec<Question>,
    /// Cancelled when the run is aborted.
    pub cancel: &'a CancellationToken,
}

/// The user's answers: question text → answer (empty when the client declined).
pub type Answers = Map<String, Value>;

/// A dialog (from slash commands).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialogKind {
    /// Pick one of `options`.
    Select { title: String, options: Vec<String> },
    /// Yes or no.
    Confirm { title: String, message: String },
    /// One line of text.
    Input { title: String, placeholder: Option<String> },
    /// Multi-line text, prefilled.
    Editor { title: String, prefill: Option<String> },
}

/// A dialog to show.
#[derive(Debug)]
pub struct DialogAsk<'a> {
    /// What to ask.
    pub kind: DialogKind,
    /// How long to wait.
    pub timeout: Duration,
    /// Cancelled when the command is aborted.
    pub cancel: &'a CancellationToken,
}

/// How a dialog ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialogOutcome {
    /// A value (select, input, editor).
    Value(String),
    /// A confirm answer.
    Confirmed(bool),
    /// The user dismissed it.
    Dismissed,
    /// Nobody answered in time.
    TimedOut,
    /// Aborted while waiting.
    Abandoned,
    /// This host cannot show dialogs of this kind; the reason says why (and what would help).
    Unsupported(String),
}

/// Fire-and-forget UI: nothing is waited for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiNotice {
    /// A notification.
    Notify { level: NoticeLevel, message: String },
    /// A status-bar entry (`None` clears it).
    Status { key: String, text: Option<String> },
    /// A widget's lines (`None` removes it).
    Widget { key: String, lines: Option<Vec<String>> },
    /// The window title.
    Title { title: String },
    /// Text for the host's input editor.
    EditorText { text: String },
}

/// The host, as the core asks it things. Every call resolves: an unanswerable call resolves
/// to its fail-closed outcome rather than waiting forever.
pub trait HostPort: Send + Sync {
    /// Asks whether a tool call may run.
    fn approve<'a>(&'a self, ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision>;
    /// Runs a host tool and returns its output (an error output when it fails, times out or
    /// is aborted).
    fn call_tool<'a>(&'a self, ask: ToolAsk<'a>) -> BoxFuture<'a, ToolOutput>;
    /// Whether [`HostPort::ask_questions`] can reach the user (the question tool is offered
    /// to the model only then).
    fn supports_questions(&self) -> bool;
    /// Asks the user questions; `None` when the host declined or the call was aborted.
    fn ask_questions<'a>(&'a self, ask: QuestionAsk<'a>) -> BoxFuture<'a, Option<Answers>>;
    /// Shows a dialog and waits for the answer.
    fn dialog<'a>(&'a self, ask: DialogAsk<'a>) -> BoxFuture<'a, DialogOutcome>;
    /// Whether [`HostPort::dialog`] can show dialogs; without them the slash commands that
    /// need one are not offered (and [`UiNotice`]s other than the title are shown as text).
    fn supports_dialogs(&self) -> bool {
        true
    }
    /// Shows something without waiting.
    fn notify(&self, notice: UiNotice) -> BoxFuture<'_, ()>;
    /// File and command access the host offers the built-in tools instead of the disk and the
    /// local shell (an editor's buffers and terminal); `None`, the default, when it offers none.
    fn tools(&self) -> Option<std::sync::Arc<dyn super::tools::HostTools>> {
        None
    }
}

/// The host of an agent nobody answers (a test, a run with no front): every call fails closed,
/// nothing is shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHost;

impl HostPort for NoHost {
    fn approve<'a>(&'a self, _ask: ApprovalAsk<'a>) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Unanswerable })
    }
    fn call_tool<'a>(&'a self, ask: ToolAsk<'a>) -> BoxFuture<'a, ToolOutput> {
        let name = ask.def.name.to_string();
        Box::pin(async move { ToolOutput::error(format!("Host tool \"{name}\" is not available: no host answers")) })
    }
    fn supports_questions(&self) -> bool {
        false
    }
    fn ask_questions<'a>(&'a self, _ask: QuestionAsk<'a>) -> BoxFuture<'a, Option<Answers>> {
        Box::pin(async { None })
    }
    fn dialog<'a>(&'a self, _ask: DialogAsk<'a>) -> BoxFuture<'a, DialogOutcome> {
        Box::pin(async { DialogOutcome::Unsupported("no host answers dialogs".into()) })
    }
    fn supports_dialogs(&self) -> bool {
        false
    }
    fn notify(&self, _notice: UiNotice) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
