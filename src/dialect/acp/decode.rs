//! ACP's inbound side: one line → a request, a notification, a response to one of the agent's
//! requests, or the error response that line gets.
//!
//! Rules: ids are strings or integers (echoed as sent); malformed JSON is -32700 with `id: null`;
//! something that is not a JSON-RPC 2.0 object (a batch, `jsonrpc` other than "2.0", a bad id or
//! method) is -32600, with the id when it could be read; a request for a method agentwire does
//! not implement is -32601 with its id; params failing the vendored schema are -32602 with
//! `data.path` (the JSON pointer of the failing value) and `data.reason`. Notifications are
//! never answered, known or not.

use serde_json::{json, Value};

use crate::protocol::acp::{acp_validator, codes, error_frame, AcpAgentNotification, AcpAgentRequest, AcpError, AcpMethodInfo};
use crate::transport::InboundLine;

/// A decoded inbound ACP frame.
#[derive(Debug, Clone, PartialEq)]
pub enum AcpInbound {
    /// A request to answer.
    Request {
        /// Its id as sent.
        id: Value,
        /// Its method.
        method: String,
        /// The validated, typed request.
        request: Box<AcpAgentRequest>,
    },
    /// A notification agentwire acts on.
    Notification(AcpAgentNotification),
    /// A notification agentwire does not know, or whose params are invalid: never answered.
    Ignored {
        /// Its method.
        method: String,
        /// Why it is ignored.
        reason: String,
    },
    /// The client's answer to one of the agent's requests.
    ClientResponse {
        /// The id of the agent's request.
        id: Value,
        /// `result`, or the error the client answered with.
        outcome: Result<Value, AcpError>,
    },
}

fn invalid(id: Option<&Value>, message: &str) -> Box<Value> {
    Box::new(error_frame(id, &AcpError::new(codes::INVALID_REQUEST, message)))
}

/// Decodes one line; `Err` is the error response to write for it.
pub fn decode_acp_line(line: InboundLine) -> Result<AcpInbound, Box<Value>> {
    let bytes = match line {
        InboundLine::Line(b) => b,
        InboundLine::TooLong { bytes, head } => {
            let (id, _) = crate::dialect::peek_id_and_type(&head);
            return Err(invalid(id.as_ref(), &format!("Request of {bytes} bytes exceeds the line limit; it was skipped")));
        }
    };
    let Some(value) = std::str::from_utf8(&bytes).ok().and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return Err(Box::new(error_frame(None, &AcpError::new(codes::PARSE_ERROR, "Parse error: invalid JSON"))));
    };
    let map = match &value {
        Value::Array(_) => return Err(invalid(None, "Invalid request: batches are not supported")),
        Value::Object(m) => m,
        _ => return Err(invalid(None, "Invalid request: not a JSON-RPC object")),
    };
    let id = match map.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Null)) => Some(id),
        Some(id) if id.is_i64() || id.is_u64() => Some(id),
        Some(_) => return Err(invalid(None, "Invalid request: `id` must be a string, an integer or null")),
    };
    if map.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(id, "Invalid request: `jsonrpc` must be \"2.0\""));
    }
    let method = match map.get("method") {
        None => return decode_response(&value, id),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(invalid(id, "Invalid request: `method` must be a string")),
    };
    let params = map.get("params").cloned().unwrap_or(Value::Null);
    let info = AcpMethodInfo::agent(&method);
    let Some(id) = id.cloned() else {
        // A notification: acted on when known and valid, never answered.
        return Ok(match info.filter(|i| i.result.is_none()) {
            None => AcpInbound::Ignored { reason: "unknown notification".into(), method },
            Some(_) => match acp_validator().validate_agent_params(&method, &params) {
                Err(e) => AcpInbound::Ignored { reason: e.to_string(), method },
                Ok(()) => match AcpAgentNotification::from_params(&method, params) {
                    Some(Ok(n)) => AcpInbound::Notification(n),
                    Some(Err(e)) => AcpInbound::Ignored { reason: e.to_string(), method },
                    None => AcpInbound::Ignored { reason: "unknown notification".into(), method },
                },
            },
        });
    };
    if info.and_then(|i| i.result).is_none() {
        let e = AcpError::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}"));
        return Err(Box::new(error_frame(Some(&id), &e)));
    }
    let invalid_params = |path: String, reason: String| {
        let e = AcpError::new(codes::INVALID_PARAMS, format!("Invalid params for `{method}`: {}: {reason}", if path.is_empty() { "/" } else { &path }))
            .with_data(json!({"path": path, "reason": reason}));
        Box::new(error_frame(Some(&id), &e))
    };
    if let Err(e) = acp_validator().validate_agent_params(&method, &params) {
        let path = e.path.strip_prefix("/params").unwrap_or(&e.path).to_owned();
        return Err(invalid_params(path, e.message));
    }
    match AcpAgentRequest::from_params(&method, params) {
        Some(Ok(request)) => Ok(AcpInbound::Request { id, method, request: Box::new(request) }),
        Some(Err(e)) => Err(invalid_params(String::new(), e.to_string())),
        None => Err(Box::new(error_frame(Some(&id), &AcpError::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))))),
    }
}

fn decode_response(value: &Value, id: Option<&Value>) -> Result<AcpInbound, Box<Value>> {
    let Some(id) = id.cloned() else { return Err(invalid(None, "Invalid request: no `method` and no `id`")) };
    match (value.get("result"), value.get("error")) {
        (Some(result), None) => Ok(AcpInbound::ClientResponse { id, outcome: Ok(result.clone()) }),
        (None, Some(error)) => match serde_json::from_value::<AcpError>(error.clone()) {
            Ok(e) => Ok(AcpInbound::ClientResponse { id, outcome: Err(e) }),
            Err(_) => Err(invalid(Some(&id), "Invalid response: `error` needs a code and a message")),
        },
        _ => Err(invalid(Some(&id), "Invalid response: exactly one of `result` and `error`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> Value {
        let e = *decode_acp_line(InboundLine::Line(text.as_bytes().to_vec())).expect_err(text);
        acp_validator().validate_outbound(&e, None).unwrap_or_else(|v| panic!("{e}: {v}"));
        e
    }

    #[test]
    fn envelope_errors() {
        assert_eq!(err("{nope")["error"]["code"], -32700);
        assert_eq!(err("{nope")["id"], Value::Null);
        assert_eq!(err("[1]")["error"]["code"], -32600);
        let e = err(r#"{"jsonrpc":"1.0","id":3,"method":"initialize"}"#);
        assert_eq!((&e["id"], &e["error"]["code"]), (&json!(3), &json!(-32600)));
        let e = err(r#"{"jsonrpc":"2.0","id":"x","method":"session/fork","params":{}}"#);
        assert_eq!((&e["id"], &e["error"]["code"]), (&json!("x"), &json!(-32601)));
        let e = err(r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text"}]}}"#);
        assert_eq!((&e["error"]["code"], &e["error"]["data"]["path"]), (&json!(-32602), &json!("/prompt/0/text")));
        let e = err(r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"mcpServers":[]}}"#);
        assert_eq!((&e["error"]["code"], &e["error"]["data"]["path"]), (&json!(-32602), &json!("/cwd")));
    }

    #[test]
    fn notifications_are_never_answered() {
        let d = |t: &str| decode_acp_line(InboundLine::Line(t.as_bytes().to_vec())).unwrap();
        assert!(matches!(d(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#), AcpInbound::Notification(_)));
        assert!(matches!(d(r#"{"jsonrpc":"2.0","method":"nope/nope"}"#), AcpInbound::Ignored { .. }));
        assert!(matches!(d(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#), AcpInbound::Ignored { .. }));
    }
}
