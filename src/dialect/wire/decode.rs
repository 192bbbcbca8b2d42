//! The JSON-RPC 2.0 wire dialect's inbound side: one line → a request, a notification, a
//! response to one of the agent's requests, or the error response that line gets.
//!
//! Rules (`../shared/protocol-notes.md` §3.1–3.2, "We:"): string **and integer** ids, echoed with
//! their type; error responses carry the id whenever it could be read, `null` otherwise;
//! notifications are never answered; batches get one -32600; `{}` is -32600; a `jsonrpc` other
//! than "2.0" is -32600 (missing is accepted); unknown methods -32601; params failing the schema
//! -32602 with `data.field` naming the field (an unknown content-part type included: kimi
//! crashes there); malformed JSON -32700 with `id: null`; a response with both `result` and
//! `error` is -32600 "Invalid response".

use serde_json::{json, Value};

use crate::protocol::envelope::{wire_codes, WireError};
use crate::protocol::validate::{validator, Dialect, Direction};
use crate::protocol::{lit, UnionInfo, WireErrorResponse, WireErrorResponseId, WireRequest};
use crate::transport::raw_id::{exact_id, id_kind, marked_id, IdKind};
use crate::transport::InboundLine;

/// A decoded inbound wire frame.
#[derive(Debug, Clone, PartialEq)]
pub enum WireInbound {
    /// A request to answer, with its id as sent (string or integer).
    Request {
        /// The request id.
        id: Value,
        /// The validated request.
        request: WireRequest,
    },
    /// A notification (no id): never answered, never executed.
    Notification {
        /// Its method.
        method: String,
    },
    /// The client's answer to one of the agent's requests.
    ClientResponse {
        /// The id of the agent's request.
        id: Value,
        /// `result`, or the error the client answered with.
        outcome: Result<Value, WireError>,
    },
}

/// The error response for a request id (`None`: the id could not be read).
pub fn error_response(id: Option<&Value>, error: &WireError) -> WireErrorResponse {
    let id = match id {
        Some(Value::String(s)) => WireErrorResponseId::String(s.clone()),
        Some(Value::Number(n)) if n.is_i64() => WireErrorResponseId::Integer(n.as_i64().unwrap_or_default()),
        // Beyond i64 (read from a frame's head): echoed as written.
        Some(Value::Number(n)) if n.is_u64() => WireErrorResponseId::String(marked_id(&n.to_string()).as_str().unwrap_or_default().to_owned()),
        _ => WireErrorResponseId::Null,
    };
    WireErrorResponse { jsonrpc: lit::Lit20, id, error: error.to_object() }
}

fn readable_id(v: &Value) -> Option<&Value> {
    v.get("id").filter(|id| id.is_string() || id.is_i64())
}

fn invalid(id: Option<&Value>, message: &str) -> Box<WireErrorResponse> {
    Box::new(error_response(id, &WireError::new(wire_codes::INVALID_REQUEST, message)))
}

/// Decodes one line; `Err` is the error response to write for it.
pub fn decode_wire_line(line: InboundLine) -> Result<WireInbound, Box<WireErrorResponse>> {
    let bytes = match line {
        InboundLine::Line(b) => b,
        InboundLine::TooLong { bytes, head } => {
            // Not a parse error: the line was never read whole. The id comes from its head.
            let (id, _) = crate::dialect::peek_id_and_type(&head);
            return Err(invalid(id.as_ref(), &format!("Request of {bytes} bytes exceeds the line limit; it was skipped")));
        }
    };
    let Some(mut value) = std::str::from_utf8(&bytes).ok().and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        // Malformed for the parser (nested too deep, `1e400`, a lone surrogate): the id is
        // still answered when the top-level `id` can be read.
        let (id, _) = crate::dialect::peek_id_and_type(&bytes);
        return Err(Box::new(error_response(id.as_ref(), &WireError::new(wire_codes::PARSE_ERROR, "Invalid JSON format"))));
    };
    // The id is echoed byte for byte (see `transport::raw_id`), integers beyond i64 included.
    if let Some(raw) = value.get("id").and_then(|_| crate::dialect::raw_id(&bytes)) {
        let id = match id_kind(&raw) {
            IdKind::Integer if raw.parse::<i64>().is_err() => Some(marked_id(&raw)),
            IdKind::String | IdKind::Integer => Some(exact_id(&raw)),
            IdKind::Other => None,
        };
        if let (Some(id), Value::Object(map)) = (id, &mut value) {
            map.insert("id".to_owned(), id);
        }
    }
    let map = match &value {
        Value::Array(_) => return Err(invalid(None, "Batch requests are not supported")),
        Value::Object(m) if m.is_empty() => return Err(invalid(None, "Invalid request")),
        Value::Object(m) => m,
        _ => return Err(invalid(None, "Invalid request")),
    };
    let id = readable_id(&value);
    if map.get("id").is_some_and(|i| id.is_none() && !i.is_null()) {
        return Err(invalid(None, "Invalid request: `id` must be a string or an integer"));
    }
    if map.get("jsonrpc").is_some_and(|v| v != "2.0") {
        return Err(invalid(id, "Invalid request: `jsonrpc` must be \"2.0\""));
    }
    let method = match map.get("method") {
        None => return decode_response(&value, id),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(invalid(id, "Invalid request: `method` must be a string")),
    };
    let Some(id) = id.cloned() else { return Ok(WireInbound::Notification { method }) };
    let methods = UnionInfo::get("WireRequest");
    if methods.is_none_or(|u| u.member(&method).is_none()) {
        let hint = methods.and_then(|u| crate::protocol::validate::closest_tag(u, &method)).map(|m| format!(" (did you mean \"{m}\"?)")).unwrap_or_default();
        let e = WireError::new(wire_codes::METHOD_NOT_FOUND, format!("Unexpected method received: {method}{hint}"));
        return Err(Box::new(error_response(Some(&id), &e)));
    }
    let invalid_params = |field: String, reason: String| {
        let e = WireError::new(wire_codes::INVALID_PARAMS, format!("Invalid parameters for method `{method}`")).with_data(json!({"field": field, "reason": reason}));
        Box::new(error_response(Some(&id), &e))
    };
    if let Err(e) = validator().validate_frame(Dialect::Wire, Direction::Inbound, &value, None) {
        // Every violation goes into `reason`, so one reply names all the problems.
        let reason = std::iter::once(e.message).chain(e.also).collect::<Vec<_>>().join("; ");
        return Err(invalid_params(e.path.trim_start_matches('/').replace('/', "."), reason));
    }
    let request = WireRequest::from_value(value.clone()).map_err(|e| invalid_params(String::new(), e.to_string()))?;
    Ok(WireInbound::Request { id, request })
}

fn decode_response(value: &Value, id: Option<&Value>) -> Result<WireInbound, Box<WireErrorResponse>> {
    let Some(id) = id.cloned() else { return Err(invalid(None, "Invalid request")) };
    match (value.get("result"), value.get("error")) {
        (Some(result), None) => Ok(WireInbound::ClientResponse { id, outcome: Ok(result.clone()) }),
        (None, Some(error)) => {
            let code = error.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok());
            let message = error.get("message").and_then(Value::as_str);
            match (code, message) {
                (Some(code), Some(message)) => {
                    let e = WireError::new(code, message).with_data(error.get("data").cloned().unwrap_or(Value::Null));
                    Ok(WireInbound::ClientResponse { id, outcome: Err(e) })
                }
                _ => Err(invalid(Some(&id), "Invalid response")),
            }
        }
        _ => Err(invalid(Some(&id), "Invalid response")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<WireInbound, Value> {
        decode_wire_line(InboundLine::Line(text.as_bytes().to_vec())).map_err(|e| {
            let v = serde_json::to_value(*e).unwrap();
            validator().validate_frame(Dialect::Wire, Direction::Outbound, &v, None).unwrap_or_else(|err| panic!("{v}: {err}"));
            v
        })
    }

    fn err(text: &str) -> Value {
        decode(text).expect_err(text)
    }

    #[test]
    fn requests_with_string_and_integer_ids_decode() {
        match decode(r#"{"jsonrpc":"2.0","id":7,"method":"prompt","params":{"user_input":"hi"}}"#).unwrap() {
            WireInbound::Request { id, request: WireRequest::Prompt(_) } => assert_eq!(id, json!(7)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(decode(r#"{"id":"c","method":"cancel"}"#), Ok(WireInbound::Request { request: WireRequest::Cancel(_), .. })), "jsonrpc may be missing");
        assert!(matches!(decode(r#"{"jsonrpc":"2.0","method":"prompt","params":{"user_input":"x"}}"#), Ok(WireInbound::Notification { method }) if method == "prompt"));
        assert!(matches!(decode(r#"{"jsonrpc":"2.0","method":"no_such"}"#), Ok(WireInbound::Notification { .. })), "unknown notifications are not answered either");
    }

    #[test]
    fn envelope_errors_use_kimi_codes_and_echo_readable_ids() {
        assert_eq!(err("{not json"), json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON format","data":null}}));
        assert_eq!(err(r#"[{"jsonrpc":"2.0","id":"b","method":"cancel"}]"#)["error"]["message"], "Batch requests are not supported");
        for line in ["42", "null", "\"s\"", "{}"] {
            let e = err(line);
            assert_eq!((&e["id"], &e["error"]["code"]), (&Value::Null, &json!(-32600)), "{line}");
        }
        let e = err(r#"{"jsonrpc":"1.0","id":"v1","method":"cancel"}"#);
        assert_eq!((&e["id"], &e["error"]["code"]), (&json!("v1"), &json!(-32600)));
        let e = err(r#"{"jsonrpc":"2.0","id":5,"method":5}"#);
        assert_eq!((&e["id"], &e["error"]["code"]), (&json!(5), &json!(-32600)));
        let e = err(r#"{"jsonrpc":"2.0","id":"u","method":"shutdown"}"#);
        assert_eq!(e["error"], json!({"code":-32601,"message":"Unexpected method received: shutdown","data":null}));
        let e = err(r#"{"jsonrpc":"2.0","id":"b","method":"set_plan_mode","params":{"enabled":"maybe"}}"#);
        assert_eq!((&e["id"], &e["error"]["code"], &e["error"]["message"], &e["error"]["data"]["field"]), (&json!("b"), &json!(-32602), &json!("Invalid parameters for method `set_plan_mode`"), &json!("params.enabled")));
        // kimi crashes on an unknown content part type; here it is -32602.
        let e = err(r#"{"jsonrpc":"2.0","id":"p","method":"prompt","params":{"user_input":[{"type":"no_such_part"}]}}"#);
        assert_eq!((&e["error"]["code"], &e["error"]["data"]["field"]), (&json!(-32602), &json!("params.user_input.0.type")));
    }

    #[test]
    fn client_responses_are_matched_by_id() {
        match decode(r#"{"jsonrpc":"2.0","id":"a1","result":{"request_id":"a1","response":"approve"}}"#).unwrap() {
            WireInbound::ClientResponse { id, outcome: Ok(r) } => assert_eq!((id, r["response"].clone()), (json!("a1"), json!("approve"))),
            other => panic!("{other:?}"),
        }
        match decode(r#"{"jsonrpc":"2.0","id":"t1","error":{"code":-32000,"message":"ticket db offline"}}"#).unwrap() {
            WireInbound::ClientResponse { outcome: Err(e), .. } => assert_eq!((e.code, e.message.as_str()), (-32000, "ticket db offline")),
            other => panic!("{other:?}"),
        }
        let e = err(r#"{"jsonrpc":"2.0","id":"x","result":{},"error":{"code":1,"message":"m"}}"#);
        assert_eq!((&e["id"], &e["error"]["message"]), (&json!("x"), &json!("Invalid response")));
    }
}
