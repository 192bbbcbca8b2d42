//! The harness's own errors. An input error is a file the harness reads (a transcript, an
//! adapter, a suite or baseline, a recording) that it cannot use; a run error is the agent
//! under test, or the run's own setup, failing before a check could be made. A transcript's
//! frame that differs is neither: it is a [`Mismatch`].

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::protocol::validate::FrameError;

/// A file the harness reads is unreadable or not what it should be; the message starts with
/// the file (and the line, where there is one).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file could not be read (or written, for a file the harness makes).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// A document or line is not JSON, or not of the shape its type needs.
    #[error("{at}: {source}")]
    Json {
        /// The file, and the line where there is one.
        at: String,
        /// The parser's reason.
        source: serde_json::Error,
    },
    /// A document or line does not validate against its schema.
    #[error("{at}: {source}")]
    Schema {
        /// The file, and the line where there is one.
        at: String,
        /// The validator's reason.
        source: FrameError,
    },
    /// The document is well-formed, and what it says does not hold together.
    #[error("{at}: {reason}")]
    Content {
        /// The file, and the line where there is one.
        at: String,
        /// What does not hold.
        reason: String,
    },
    /// `--bin` names no command.
    #[error("empty --bin command")]
    EmptyCommand,
    /// The adapter made of a `--bin` command is not one.
    #[error("{0}")]
    Adapter(serde_json::Error),
}

/// `pattern` does not match a frame: where (a JSON pointer into the frame) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {reason}")]
pub struct Mismatch {
    /// JSON pointer of the value that differs (`/` for the frame itself).
    pub at: String,
    /// How it differs.
    pub reason: String,
}

/// A `{{capture:NAME}}` in a frame to send names nothing captured yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nothing was captured as {0} yet")]
pub struct NotCaptured(pub String);

/// The agent under test (or the run's setup) failed before the transcript's next check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// No frame came within the frame timeout.
    #[error("no frame within {0:?}")]
    Timeout(Duration),
    /// The agent closed its stdout; the last of its stderr, if it wrote any.
    #[error("the agent closed stdout{}", stderr_ending(.0))]
    Closed(String),
    /// The agent wrote a line that is not JSON.
    #[error("the agent wrote a line that is not JSON: {0}")]
    NotJson(String),
    /// One answer of a batch the agent wrote does not validate.
    #[error("the agent wrote a batch answer that does not validate: {error}\n  {frame}")]
    InvalidBatch {
        /// The validator's reason.
        error: Box<FrameError>,
        /// The whole batch.
        frame: Box<Value>,
    },
    /// A frame the agent wrote does not validate.
    #[error("the agent wrote a frame that does not validate: {error}\n  {frame}")]
    InvalidFrame {
        /// The validator's reason.
        error: Box<FrameError>,
        /// The frame.
        frame: Box<Value>,
    },
    /// The agent answered `initialize` with an older ACP version than the transcript's.
    #[error("the agent does not speak ACP v{0}")]
    AcpVersion(u64),
    /// The agent's answer leaves out a capability the transcript requires.
    #[error("the agent does not advertise {0}")]
    NotAdvertised(String),
    /// The transcript writes after closing the agent's stdin.
    #[error("stdin is already closed")]
    StdinClosed,
    /// Writing to the agent's stdin failed.
    #[error("could not write to the agent: {0}")]
    Write(std::io::Error),
    /// The agent could not be started.
    #[error("could not start the agent: {0}")]
    Spawn(std::io::Error),
    /// The fake model server could not be started.
    #[error("could not start the fake LLM server: {0}")]
    FakeLlm(std::io::Error),
    /// A `workFiles` entry names a path outside the work directory.
    #[error("workFiles: {0:?} must be a relative path inside the work directory")]
    WorkFileOutside(String),
    /// A `workFiles` entry could not be written.
    #[error("workFiles: {name}: {source}")]
    WorkFile {
        /// The entry's relative path.
        name: String,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// A file the adapter asks for could not be written.
    #[error("{}: {source}", path.display())]
    AdapterFile {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// The run's temporary directory or model script could not be made.
    #[error("{0}")]
    Setup(#[from] std::io::Error),
}

fn stderr_ending(tail: &str) -> String {
    match tail.is_empty() {
        true => String::new(),
        false => format!("; its stderr ends:\n{tail}"),
    }
}

/// Why `conformance record` made no transcript.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The model script named in the agent's arguments is unusable.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The agent failed, or the recording's setup did.
    #[error(transparent)]
    Agent(#[from] RunError),
}
