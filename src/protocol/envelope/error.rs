//! The one JSON-RPC error object, `{code, message, data}`, shared by every JSON-RPC dialect.
//! This is the *wire* error (what a peer reads); the library's own failures are `thiserror`
//! types elsewhere (rmcp's `ErrorData` vs `RmcpError` split).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON-RPC error code: the standard ones, the implementation-defined ones the dialects
/// give a meaning, and [`ErrorCode::Other`] for everything else. Converts to and from the
/// integer written on the wire (`Other(-32601)` never occurs: a known integer always reads
/// as its named code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "i32", into = "i32")]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the text is not JSON.
    ParseError,
    /// -32600: not a JSON-RPC message.
    InvalidRequest,
    /// -32601: the method is unknown (or not offered).
    MethodNotFound,
    /// -32602: the params do not fit the method.
    InvalidParams,
    /// -32603: an unexpected failure.
    InternalError,
    /// -32000: ACP's "authentication required". kimi's wire dialect uses the same number for
    /// "the request conflicts with the turn state" (see `dialect::wire::codes`).
    AuthRequired,
    /// -32002: ACP's "resource not found" (an unknown session). kimi's wire dialect uses the
    /// same number for "the input needs a capability the model lacks".
    ResourceNotFound,
    /// -32800: the request was cancelled (`$/cancel_request`, LSP's number).
    RequestCancelled,
    /// Any other code.
    Other(i32),
}

impl ErrorCode {
    /// The integer written on the wire.
    pub const fn code(self) -> i32 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::AuthRequired => -32000,
            Self::ResourceNotFound => -32002,
            Self::RequestCancelled => -32800,
            Self::Other(code) => code,
        }
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        match code {
            -32700 => Self::ParseError,
            -32600 => Self::InvalidRequest,
            -32601 => Self::MethodNotFound,
            -32602 => Self::InvalidParams,
            -32603 => Self::InternalError,
            -32000 => Self::AuthRequired,
            -32002 => Self::ResourceNotFound,
            -32800 => Self::RequestCancelled,
            other => Self::Other(other),
        }
    }
}

impl From<ErrorCode> for i32 {
    fn from(code: ErrorCode) -> Self {
        code.code()
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// One `fn name(message) -> Error` per named code.
macro_rules! constructors {
    ($($(#[$doc:meta])* $name:ident => $code:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(message: impl Into<String>) -> Self {
                Self::new(ErrorCode::$code, message)
            }
        )*
    };
}

/// A JSON-RPC error object. `data` absent is `None`; whether an absent `data` is written as
/// `null` (kimi) or left out (ACP) is the dialect's `jsonrpc::Policy`, applied when the error
/// frame is written.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{message} ({code})")]
pub struct Error {
    /// The code.
    pub code: ErrorCode,
    /// What went wrong, for people.
    pub message: String,
    /// Details for programs (`{"field": …}`, `{"path": …, "reason": …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Error {
    /// An error without `data`.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), data: None }
    }
    /// The same error with `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    /// The same error with `data` an object of string members (`{"path": "/cwd", "reason": …}`).
    #[must_use]
    pub fn with_details<'a>(self, details: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let map: Map<String, Value> = details.into_iter().map(|(k, v)| (k.to_owned(), Value::String(v.to_owned()))).collect();
        self.with_data(Value::Object(map))
    }
    /// The same error with `data: {"path", "reason"}`: the JSON pointer into `params` of the
    /// value at fault and why (agentwire's -32602 convention).
    #[must_use]
    pub fn at(self, path: impl Into<String>, reason: impl Into<String>) -> Self {
        let map: Map<String, Value> = [("path", path.into()), ("reason", reason.into())].into_iter().map(|(k, v)| (k.to_owned(), Value::String(v))).collect();
        self.with_data(Value::Object(map))
    }
    constructors! {
        /// -32700: the text is not JSON.
        parse_error => ParseError,
        /// -32600: not a JSON-RPC message.
        invalid_request => InvalidRequest,
        /// -32601: the method is unknown (or not offered).
        method_not_found => MethodNotFound,
        /// -32602: the params do not fit the method.
        invalid_params => InvalidParams,
        /// -32603: an unexpected failure.
        internal => InternalError,
        /// -32000 (ACP: authentication required).
        auth_required => AuthRequired,
        /// -32002 (ACP: the resource, e.g. a session, does not exist).
        resource_not_found => ResourceNotFound,
        /// -32800: the request was cancelled.
        request_cancelled => RequestCancelled,
    }
}

/// Why an inbound notification is ignored: never answered, never executed, reported with its
/// method (`jsonrpc::Inbound::Ignored`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IgnoredNotification {
    /// Not a notification this side acts on.
    #[error("unknown notification")]
    Unknown,
    /// The dialect takes no notifications at all (kimi's wire: every request carries an id).
    #[error("{0}")]
    Unsupported(&'static str),
    /// The params do not fit the schema.
    #[error(transparent)]
    Invalid(#[from] crate::protocol::validate::FrameError),
    /// The params do not read as the typed notification.
    #[error(transparent)]
    Params(#[from] serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_integers() {
        for code in [-32700, -32600, -32601, -32602, -32603, -32000, -32002, -32800, -32001, 7] {
            assert_eq!(i32::from(ErrorCode::from(code)), code);
        }
        assert_eq!(ErrorCode::from(-32601), ErrorCode::MethodNotFound);
        assert_eq!(ErrorCode::from(-32001), ErrorCode::Other(-32001));
        let e = Error::invalid_params("bad").with_details([("path", "/cwd")]);
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"code":-32602,"message":"bad","data":{"path":"/cwd"}}"#);
        let back: Error = serde_json::from_str(r#"{"code":-32000,"message":"m"}"#).unwrap();
        assert_eq!((back.code, back.data), (ErrorCode::AuthRequired, None));
        assert_eq!(Error::internal("x").to_string(), "x (-32603)");
    }
}
