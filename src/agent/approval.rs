//! Approvals: whether a tool call needs the user's yes (the `--approval` policy), remembering
//! "approve for session" per session and per tool, and asking the host through the port.
//! Fail closed: only an explicit approve lets the call run. A `write` or `edit` is asked about
//! with the change it would make (the file's text before and after, worked out without writing).
//!
//! MCP tools: under `dangerous` a tool whose server annotates it `readOnlyHint: true` runs at
//! once and any other asks (annotations are hints; they decide only whether to ask).
//!
//! Path policy (docs/reliability.md, "Paths outside the working directory"): under `dangerous`,
//! a built-in file tool (`read`, `ls`, `grep`, `find`, as well as `write` and `edit`, which
//! always ask) whose path lies outside the working directory once symlinks are followed asks
//! too, and the question says the path is outside and where it really is. `never` asks nothing;
//! `always` asks everything, with the same note.

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::port::{ApprovalAsk, Decision};
use super::{Agent, ApprovalPolicy};
use crate::protocol::ToolCall;
use crate::tools::{self, ToolOutput};

/// A one-line summary of a call for the approval question: the command line for `bash`, the
/// path for file tools, the arguments otherwise. A path outside the working directory (`outside`:
/// where it really is) is said first, so that a title cut short still says it.
pub fn summary(call: &ToolCall, outside: Option<&Path>) -> String {
    let plain = match call.arguments.get("command").or_else(|| call.arguments.get("path")).and_then(Value::as_str) {
        Some(d) => d.to_owned(),
        None => serde_json::to_string(&call.arguments).unwrap_or_default(),
    };
    match (outside, tools::target_path(call.name.as_str(), &call.arguments)) {
        (Some(real), Some(path)) if Path::new(&path) == real => format!("outside the working directory: {path}"),
        (Some(real), Some(path)) => format!("outside the working directory: {} (via {path})", real.display()),
        _ => plain,
    }
}

pub use crate::core::port::REJECTED_STOP;

/// Why a call may not run: the tool result that says so, and whether the turn ends after the
/// message's calls (the user takes over).
pub(super) struct Refused {
    pub output: ToolOutput,
    pub ends_turn: bool,
}

impl From<ToolOutput> for Refused {
    fn from(output: ToolOutput) -> Self {
        Self { output, ends_turn: false }
    }
}

/// Where a call goes, as far as asking is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKind {
    /// A built-in tool: `bash`, `write`, `edit` and paths outside the working directory ask.
    Builtin,
    /// The host's own tool (or the question tool): the host decides for itself.
    Host,
    /// An MCP server's tool: asks unless the server annotates it `readOnlyHint: true`.
    Mcp { read_only: bool },
}

impl Agent {
    /// `Ok` when the call may run; otherwise why not.
    pub(super) async fn approve_call(&self, call: &ToolCall, kind: CallKind, cancel: &CancellationToken) -> Result<(), Refused> {
        let name = call.name.to_string();
        // The policy can change at run time (ACP `session/set_mode`). Host tools' paths are the
        // host's business; `never` does not even look.
        let policy = self.state().approval;
        let outside = match (policy, kind) {
            (ApprovalPolicy::Never, _) | (_, CallKind::Host | CallKind::Mcp { .. }) => None,
            (ApprovalPolicy::Dangerous | ApprovalPolicy::Always, CallKind::Builtin) => {
                let roots = self.state().extra_roots.clone();
                tools::target_path(&name, &call.arguments).and_then(|path| tools::outside_roots(&self.inner.config.cwd, &roots, &path))
            }
        };
        let needs_approval = match (policy, kind) {
            (ApprovalPolicy::Never, _) => false,
            (ApprovalPolicy::Dangerous, CallKind::Builtin) => tools::is_dangerous(&name) || outside.is_some(),
            (ApprovalPolicy::Dangerous, CallKind::Host) => false,
            // Annotations are hints: they decide only whether to ask, never more.
            (ApprovalPolicy::Dangerous, CallKind::Mcp { read_only }) => !read_only,
            (ApprovalPolicy::Always, _) => true,
        };
        if !needs_approval {
            return Ok(());
        }
        let session = {
            let st = self.state();
            if st.approved_tools.contains(&name) {
                return Ok(());
            }
            st.session.id().to_owned()
        };
        // The user sees what a file tool would write before approving it.
        let change = match kind {
            CallKind::Builtin => tools::files::planned_change(&self.tool_context(cancel), &name, &call.arguments).await,
            CallKind::Host | CallKind::Mcp { .. } => None,
        };
        let ask = ApprovalAsk { call, summary: summary(call, outside.as_deref()), change, timeout: self.inner.config.approval_timeout, cancel };
        match self.port().approve(ask).await {
            Decision::Approve => Ok(()),
            Decision::ApproveForSession => {
                // Only for the session it was asked in: a session adopted meanwhile asks again.
                let mut st = self.state();
                if st.session.id() == session {
                    st.approved_tools.insert(name);
                }
                Ok(())
            }
            Decision::Reject { feedback: None } => Err(ToolOutput::error(format!("Tool call denied by user: {name}")).into()),
            Decision::Reject { feedback: Some(feedback) } => Err(ToolOutput::error(format!("Tool call denied by user: {name}. The user said: {feedback}")).into()),
            Decision::RejectAndStop => Err(Refused { output: ToolOutput::error(REJECTED_STOP), ends_turn: true }),
            Decision::TimedOut => Err(ToolOutput::error(format!("Tool call not approved in time: {name}")).into()),
            Decision::Abandoned => Err(ToolOutput::error(format!("Tool call abandoned: {name}")).into()),
            Decision::Unanswerable => Err(ToolOutput::error(format!("Tool call not approved: {name}. The host closed its input, so nobody can approve it")).into()),
        }
    }
}
