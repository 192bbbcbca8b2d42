//! The JSONL dialect's command replies (`response` frames) and their error, kept apart from the
//! library's own errors: [`RpcError`] is a failed command (`success:false`, human `error`,
//! machine `code`). The JSON-RPC dialects' error object is [`super::envelope::Error`].

use serde_json::Value;

use super::generated::{RpcErrorCode, RpcResponse};

/// A failed JSONL-dialect command: what goes into `error` and `code` of its response.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct RpcError {
    /// Machine-readable class.
    pub code: RpcErrorCode,
    /// Human-readable reason.
    pub message: String,
}

impl RpcError {
    /// An error of the given class.
    pub fn new(code: RpcErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
    /// `invalid_params`: a field is missing or has the wrong type or value.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(RpcErrorCode::InvalidParams, message)
    }
    /// `not_found`: the thing named does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RpcErrorCode::NotFound, message)
    }
    /// `unsupported`: the command needs a capability this build or configuration lacks.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(RpcErrorCode::Unsupported, message)
    }
    /// `busy`: the agent is doing something that conflicts with the command.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(RpcErrorCode::Busy, message)
    }
    /// `internal`: an unexpected failure inside the agent.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(RpcErrorCode::Internal, message)
    }
}

/// `deserialize_with` helper for optional any-value fields: a present key (even `null`) is
/// `Some`, so `"data": null` survives a round trip; an absent key is `None` (via `default`).
pub fn deserialize_present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// Builds the response frame for a command's outcome. `data: None` leaves the key out;
/// `Some(None)`-style nulls are produced by serializing `Option::None` to `null`.
///
/// `data` is serialized once, straight from the typed value into JSON text (no `Value` tree
/// in between: for `get_state` that tree cost more than everything else a response does).
pub fn rpc_response<T: serde::Serialize>(id: Option<Value>, command: &'static str, outcome: Result<Option<T>, RpcError>) -> RpcReply {
    let outcome = outcome.and_then(|data| match data {
        None => Ok(None),
        Some(d) => serde_json::value::to_raw_value(&d)
            .map(Some)
            .map_err(|e| RpcError::internal(format!("could not serialize the {command} result: {e}"))),
    });
    RpcReply { id, command, outcome }
}

/// What the generated `dispatch_rpc_command_to` does with a command's typed outcome: each
/// command's data has its own type, so the dispatch hands it over generically and the answer
/// decides where it goes (an [`RpcReply`], or straight into a server's output batch).
pub trait RpcAnswer {
    /// What answering produces.
    type Output;
    /// Answers the command `command` with request id `id`; `Ok(None)` leaves `data` out.
    fn answer<T: serde::Serialize>(self, id: Option<Value>, command: &'static str, outcome: Result<Option<T>, RpcError>) -> Self::Output;
}

/// The answer as an [`RpcReply`] ([`rpc_response`]).
#[derive(Debug, Clone, Copy)]
pub struct ToReply;

impl RpcAnswer for ToReply {
    type Output = RpcReply;
    fn answer<T: serde::Serialize>(self, id: Option<Value>, command: &'static str, outcome: Result<Option<T>, RpcError>) -> RpcReply {
        rpc_response(id, command, outcome)
    }
}

/// A response frame as [`rpc_response`] builds it: serializes exactly like the [`RpcResponse`]
/// with the same fields (`id`, `type`, `command`, `success`, `data` | `error` + `code`).
#[derive(Debug, Clone)]
pub struct RpcReply {
    /// The request's id, echoed.
    pub id: Option<Value>,
    /// The command answered.
    pub command: &'static str,
    /// The serialized `data` (absent when `None`), or the error.
    pub outcome: Result<Option<Box<serde_json::value::RawValue>>, RpcError>,
}

impl serde::Serialize for RpcReply {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let e = match &self.outcome {
            Ok(data) => return RpcSuccess { id: self.id.as_ref(), command: self.command, data: data.as_deref() }.serialize(serializer),
            Err(e) => e,
        };
        // A struct, not a map: the same JSON, and the keys go out as the static names they are.
        let mut frame = serializer.serialize_struct("RpcResponse", 5 + usize::from(self.id.is_some()))?;
        if let Some(id) = &self.id {
            frame.serialize_field("id", id)?;
        }
        frame.serialize_field("type", "response")?;
        frame.serialize_field("command", self.command)?;
        frame.serialize_field("success", &false)?;
        frame.serialize_field("error", &e.message)?;
        frame.serialize_field("code", &e.code)?;
        frame.end()
    }
}

/// A `success:true` response frame whose `data` is serialized only when the frame is written
/// (straight into the output: `get_messages` of a big session is never held twice). Serializes
/// exactly as [`RpcReply`] with the same fields.
#[derive(Debug)]
pub struct RpcSuccess<'a, T: ?Sized> {
    /// The request's id, echoed.
    pub id: Option<&'a Value>,
    /// The command answered.
    pub command: &'a str,
    /// The data (absent when `None`).
    pub data: Option<&'a T>,
}

impl<T: serde::Serialize + ?Sized> serde::Serialize for RpcSuccess<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // A struct, not a map: the same JSON, and the keys go out as the static names they are.
        let mut frame = serializer.serialize_struct("RpcResponse", 3 + usize::from(self.id.is_some()) + usize::from(self.data.is_some()))?;
        if let Some(id) = self.id {
            frame.serialize_field("id", id)?;
        }
        frame.serialize_field("type", "response")?;
        frame.serialize_field("command", self.command)?;
        frame.serialize_field("success", &true)?;
        if let Some(data) = self.data {
            frame.serialize_field("data", data)?;
        }
        frame.end()
    }
}

/// A `success:false` response.
pub fn rpc_failure(id: Option<Value>, command: &str, error: RpcError) -> RpcResponse {
    RpcResponse { id, error: Some(error.message), code: Some(error.code), ..RpcResponse::new(command, false) }
}
