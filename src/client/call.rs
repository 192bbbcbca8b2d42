//! How one of our requests to a JSON-RPC agent (ACP, kimi's wire) ended, as the caller sees
//! it: the typed result, or a [`CallError`] naming the method.

use serde::de::DeserializeOwned;

use crate::jsonrpc::{Error, Reply};

/// Why a request to a JSON-RPC agent got no result, or not the one asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The agent answered with an error.
    #[error("`{method}` failed: {error}")]
    Rejected {
        /// The method.
        method: &'static str,
        /// The agent's error.
        error: Error,
    },
    /// The agent's output ended before it answered (or before the request could be sent).
    #[error("the agent closed its output before answering `{method}`")]
    Closed {
        /// The method.
        method: &'static str,
    },
    /// The request or its result does not have the method's shape.
    #[error("`{method}`: unexpected data: {source}")]
    Data {
        /// The method.
        method: &'static str,
        /// What did not fit.
        #[source]
        source: serde_json::Error,
    },
    /// The agent's `initialize` answer does not offer the method (ACP's capabilities).
    #[error("`{method}` is not offered by the agent: its initialize answer leaves out {capability}")]
    NotOffered {
        /// The method.
        method: &'static str,
        /// The capability that would offer it.
        capability: &'static str,
    },
}

/// The typed result of `method` from how waiting for its answer ended.
pub(crate) fn settle<T: DeserializeOwned>(method: &'static str, reply: Reply) -> Result<T, CallError> {
    match reply {
        Reply::Answered(Ok(result)) => crate::protocol::decode::from_value(result).map_err(|source| CallError::Data { method, source }),
        Reply::Answered(Err(error)) => Err(CallError::Rejected { method, error }),
        Reply::TimedOut | Reply::Abandoned | Reply::InputEnded => Err(CallError::Closed { method }),
    }
}
