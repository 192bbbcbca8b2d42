//! The core's error: what kind of failure a request met, and why, in words. Each dialect maps
//! the kind onto its own wire code in one place (`dialect::rpc::errors`, `dialect::wire::errors`).

/// Why the core refused or failed a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// An argument is missing, malformed or out of range.
    #[error("{0}")]
    InvalidParams(String),
    /// The thing named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The agent is doing something that conflicts with the request.
    #[error("{0}")]
    Busy(String),
    /// The request contradicts the session's state (already compacted, nothing to compact).
    #[error("{0}")]
    Conflict(String),
    /// This build or configuration cannot do it.
    #[error("{0}")]
    Unsupported(String),
    /// The session file could not be written (the message names the file and the OS reason);
    /// what was asked for happened in memory, but it is not on disk yet.
    #[error("{0}")]
    SessionWrite(String),
    /// An unexpected failure (I/O, a provider).
    #[error("{0}")]
    Internal(String),
    /// The agent behind (one driven over a JSON-RPC connection, behind the bridge) refused
    /// with an error of its own; a front speaking the agent's protocol passes it back as it
    /// came, code and data included.
    #[error("{}", .0.message)]
    Refused(Refusal),
}

/// An agent's own JSON-RPC error ([`CoreError::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// Its code.
    pub code: i32,
    /// Its message.
    pub message: String,
    /// Its data, if any.
    pub data: Option<serde_json::Value>,
}

impl Refusal {
    /// The error `code` with `message` and `data`.
    pub fn new(code: i32, message: impl Into<String>, data: Option<serde_json::Value>) -> Self {
        Self { code, message: message.into(), data }
    }
}

/// A core result.
pub type CoreResult<T> = Result<T, CoreError>;
