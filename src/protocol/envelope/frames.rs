//! Typed JSON-RPC 2.0 frames (request, notification, success, error), serialized once,
//! straight into the frame's bytes (no `serde_json::Value` tree in between), and the method
//! traits tying a method's name to its params and result (lsp-types' `Request` /
//! `Notification`, one zero-sized type per method).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use super::error::Error;

/// A request method: its name, params and result types. The generator emits one
/// uninhabited type per method implementing it.
pub trait Request {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// What the request carries.
    type Params;
    /// What a successful answer carries.
    type Result;
}

/// A notification method: its name and params type.
pub trait Notification {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// What the notification carries.
    type Params;
}

/// `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
#[derive(Debug)]
pub struct RequestFrame<'a, P: ?Sized> {
    /// The request id (exact: see `transport::raw_id`).
    pub id: &'a Value,
    /// The method.
    pub method: &'a str,
    /// The params.
    pub params: &'a P,
}

impl<P: Serialize + ?Sized> Serialize for RequestFrame<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        frame(serializer, Some(self.id), Some(self.method), ("params", self.params))
    }
}

/// Writes `{"jsonrpc":"2.0"[,"id"][,"method"],<member>}`, the members in that order.
fn frame<S: Serializer, T: Serialize + ?Sized>(serializer: S, id: Option<&Value>, method: Option<&str>, (key, value): (&str, &T)) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("jsonrpc", "2.0")?;
    if let Some(id) = id {
        map.serialize_entry("id", id)?;
    }
    if let Some(method) = method {
        map.serialize_entry("method", method)?;
    }
    map.serialize_entry(key, value)?;
    map.end()
}

/// `{"jsonrpc":"2.0","method":…,"params":…}`.
#[derive(Debug)]
pub struct NotificationFrame<'a, P: ?Sized> {
    /// The method.
    pub method: &'a str,
    /// The params.
    pub params: &'a P,
}

impl<P: Serialize + ?Sized> Serialize for NotificationFrame<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        frame(serializer, None, Some(self.method), ("params", self.params))
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`.
#[derive(Debug)]
pub struct SuccessFrame<'a, R: ?Sized> {
    /// The id of the request answered.
    pub id: &'a Value,
    /// The result.
    pub result: &'a R,
}

impl<R: Serialize + ?Sized> Serialize for SuccessFrame<'_, R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        frame(serializer, Some(self.id), None, ("result", self.result))
    }
}

/// `{"jsonrpc":"2.0","id":…|null,"error":{code,message,data}}`: an error response, with the
/// request id when it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorFrame {
    /// The id of the request answered (`None`: it could not be read; written as `null`).
    pub id: Option<Value>,
    /// The error.
    pub error: Error,
    /// Write an absent `data` as `null` (kimi's shape) instead of leaving it out (ACP's).
    pub null_data: bool,
}

struct ErrorObject<'a>(&'a Error, bool);

impl Serialize for ErrorObject<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Self(e, null_data) = self;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", &e.code)?;
        map.serialize_entry("message", &e.message)?;
        match &e.data {
            Some(data) => map.serialize_entry("data", data)?,
            None if *null_data => map.serialize_entry("data", &Value::Null)?,
            None => {}
        }
        map.end()
    }
}

impl Serialize for ErrorFrame {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        frame(serializer, Some(self.id.as_ref().unwrap_or(&Value::Null)), None, ("error", &ErrorObject(&self.error, self.null_data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_written_in_envelope_order() {
        let id = Value::from(7);
        assert_eq!(serde_json::to_string(&RequestFrame { id: &id, method: "m", params: &[1] }).unwrap(), r#"{"jsonrpc":"2.0","id":7,"method":"m","params":[1]}"#);
        assert_eq!(serde_json::to_string(&NotificationFrame { method: "n", params: &"x" }).unwrap(), r#"{"jsonrpc":"2.0","method":"n","params":"x"}"#);
        assert_eq!(serde_json::to_string(&SuccessFrame { id: &id, result: &true }).unwrap(), r#"{"jsonrpc":"2.0","id":7,"result":true}"#);
        let acp = ErrorFrame { id: Some(id.clone()), error: Error::internal("no"), null_data: false };
        assert_eq!(serde_json::to_string(&acp).unwrap(), r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"no"}}"#);
        let kimi = ErrorFrame { id: None, error: Error::internal("no"), null_data: true };
        assert_eq!(serde_json::to_string(&kimi).unwrap(), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"no","data":null}}"#);
    }
}
