//! What a tool produced ([`ToolOutput`]), and the file and command access a host may lend the
//! built-in tools ([`HostTools`]).
//!
//! File and command access through the host instead of the local disk and shell. A host that
//! offers it (an ACP client advertising `fs.readTextFile`, `fs.writeTextFile` or `terminal`)
//! makes the built-in `read`, `write` and `edit` see and change the editor's buffers, unsaved
//! edits included, and `bash` run in the editor's terminal. Each method returns `None` when the
//! host does not offer that access: the tool then uses the disk or the local shell.

use std::path::Path;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::{AgentToolResult, TextContent, TextOrImageContent};

/// What a tool produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Content for the model.
    pub content: Vec<TextOrImageContent>,
    /// Structured details for hosts (diffs, exit codes); not sent to the model.
    pub details: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// The file the call changed, whole, before and after (see `AgentEvent::ToolEnd`); not
    /// kept in the session.
    pub change: Option<crate::core::port::FileChange>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![text_content(text)], details: None, is_error: false, change: None }
    }
    /// A failed result with a message for the model.
    pub fn error(text: impl Into<String>) -> Self {
        Self { content: vec![text_content(text)], details: None, is_error: true, change: None }
    }
    /// The same result with details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
    /// The same result with the file it changed.
    #[must_use]
    pub fn with_change(mut self, change: crate::core::port::FileChange) -> Self {
        self.change = Some(change);
        self
    }
    /// As the protocol's tool result payload.
    pub fn to_result(&self) -> AgentToolResult {
        AgentToolResult { content: self.content.clone(), details: self.details.clone(), structured_content: None }
    }
}


/// A text content block.
pub fn text_content(text: impl Into<String>) -> TextOrImageContent {
    TextOrImageContent::Text(TextContent::new(text))
}

/// How a command run by the host ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostCommandOutcome {
    /// The output (stdout and stderr as the host's terminal merged them).
    pub output: String,
    /// The host kept only the tail of the output.
    pub truncated: bool,
    /// Exit code; `None` when killed by a signal, cancelled or timed out.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, as the host names it.
    pub signal: Option<String>,
    /// Killed because the run was cancelled.
    pub cancelled: bool,
    /// Killed after the timeout.
    pub timed_out: bool,
}

/// Why the host could not do what a tool asked; the model reads its message. The dialect that
/// reaches the host says why in its own terms (its own error type, boxed here, so the core
/// stays dialect-neutral).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HostError(Box<dyn std::error::Error + Send + Sync>);

impl HostError {
    /// The host's failure `error` (a typed error, or a message).
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(error.into())
    }
}

/// What the host can do for the built-in tools. Errors are readable messages for the model.
pub trait HostTools: Send + Sync + std::fmt::Debug {
    /// The text of the file at the absolute `path`, as the host sees it (`cancel` abandons the
    /// request).
    fn read_text_file<'a>(&'a self, _path: &'a Path, _cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<String, HostError>>> {
        None
    }

    /// Replaces the text of the file at the absolute `path` (creating it).
    fn write_text_file<'a>(&'a self, _path: &'a Path, _content: &'a str, _cancel: &'a CancellationToken) -> Option<BoxFuture<'a, Result<(), HostError>>> {
        None
    }

    /// Runs the shell `command` in `cwd`, killing it on `cancel` or after `timeout`.
    fn run_command<'a>(&'a self, _command: &'a str, _cwd: &'a Path, _timeout: Option<Duration>, _cancel: CancellationToken) -> Option<BoxFuture<'a, Result<HostCommandOutcome, HostError>>> {
        None
    }
}
