//! The JSON-RPC 2.0 wire dialect's inbound side: its rules for the runtime's one envelope
//! decoder ([`crate::jsonrpc::decode`]) and its typed requests.
//!
//! Rules (JSON-RPC 2.0 as written, where kimi-cli is looser): string **and integer** ids, echoed with
//! their type; error responses carry the id whenever it could be read, `null` otherwise;
//! notifications are never answered, within a batch too; a batch is answered as JSON-RPC 2.0
//! defines it (one array of its requests' answers; kimi answers it with one -32600, but its
//! clients never send one); `{}` is -32600; a `jsonrpc` other
//! than "2.0" is -32600 (missing is accepted); unknown methods -32601; params failing the schema
//! -32602 with `data.field` naming the field (an unknown content-part type included: kimi
//! crashes there); malformed JSON -32700 (with the id when it can still be read); a response
//! with both `result` and `error` is -32600 "Invalid response". Errors always carry `data`
//! (`null` when there is none), as kimi writes them.

use std::convert::Infallible;

use serde_json::Value;

use crate::jsonrpc::{Decoded, Error, Inbound, Policy, Side, Words};
use crate::protocol::validate::{validator, SchemaDialect, Direction};
use crate::protocol::{UnionInfo, WireRequest};
use crate::transport::InboundLine;

/// The agent side of the wire: it answers the client's [`WireRequest`]s and acts on no
/// notification.
#[derive(Debug)]
pub enum WireSide {}

/// A decoded inbound wire frame.
pub type WireInbound = Inbound<WireRequest, Infallible>;

/// kimi's envelope rules: `jsonrpc` may be missing, a `null` id makes a notification, the id
/// of an unparsable line is still echoed, errors always carry `data`, and kimi's words.
const KIMI: Policy = Policy {
    jsonrpc_required: false,
    null_id_is_request: false,
    parse_error_echoes_id: true,
    null_data: true,
    words: Words {
        parse_error: "Invalid JSON format",
        empty_batch: "Invalid request",
        not_an_object: "Invalid request",
        empty_object: "Invalid request",
        bad_id: "Invalid request: `id` must be a string or an integer",
        no_method_no_id: "Invalid request",
        bad_response: "Invalid response",
        bad_error: "Invalid response",
    },
};

impl Side for WireSide {
    type Request = WireRequest;
    type Notification = Infallible;
    const POLICY: Policy = KIMI;

    fn request(method: &str, frame: Value) -> Result<WireRequest, Error> {
        let methods = UnionInfo::get("WireRequest");
        if methods.is_none_or(|u| u.member(method).is_none()) {
            let hint = methods.and_then(|u| crate::protocol::validate::closest_tag(u, method)).map(|m| format!(" (did you mean \"{m}\"?)")).unwrap_or_default();
            return Err(Error::method_not_found(format!("Unexpected method received: {method}{hint}")));
        }
        let invalid_params = |field: &str, reason: &str| Error::invalid_params(format!("Invalid parameters for method `{method}`")).with_details([("field", field), ("reason", reason)]);
        if let Err(e) = validator().validate_frame(SchemaDialect::Wire, Direction::Inbound, &frame, None) {
            // Every violation goes into `reason`, so one reply names all the problems.
            let reason = std::iter::once(e.message).chain(e.also).collect::<Vec<_>>().join("; ");
            return Err(invalid_params(&e.path.trim_start_matches('/').replace('/', "."), &reason));
        }
        WireRequest::from_value(frame).map_err(|e| invalid_params("", &e.to_string()))
    }

    fn notification(_method: &str, _frame: Value) -> Result<Infallible, crate::jsonrpc::IgnoredNotification> {
        Err(crate::jsonrpc::IgnoredNotification::Unsupported("the wire dialect has no notifications (requests need an id)"))
    }
}

/// Decodes one line; `Err` is the error response to write for it.
pub fn decode_wire_line(line: InboundLine) -> Decoded<WireSide> {
    crate::jsonrpc::decode::<WireSide>(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(text: &str) -> Result<WireInbound, Value> {
        decode_wire_line(InboundLine::Line(text.as_bytes().to_vec())).map_err(|e| {
            let v = serde_json::to_value(*e).unwrap();
            validator().validate_frame(SchemaDialect::Wire, Direction::Outbound, &v, None).unwrap_or_else(|err| panic!("{v}: {err}"));
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
        assert!(matches!(decode(r#"{"jsonrpc":"2.0","method":"prompt","params":{"user_input":"x"}}"#), Ok(WireInbound::Ignored { method, .. }) if method == "prompt"));
        assert!(matches!(decode(r#"{"jsonrpc":"2.0","method":"no_such"}"#), Ok(WireInbound::Ignored { .. })), "unknown notifications are not answered either");
    }

    #[test]
    fn envelope_errors_use_kimi_codes_and_echo_readable_ids() {
        assert_eq!(err("{not json"), json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON format","data":null}}));
        // A batch is split into its members (JSON-RPC 2.0); only an empty one is an error.
        let line = |t: &str| crate::jsonrpc::decode_line::<WireSide>(InboundLine::Line(t.as_bytes().to_vec()));
        match line(r#"[{"jsonrpc":"2.0","id":"b","method":"cancel"}, 7]"#) {
            crate::jsonrpc::Line::Batch(members) => {
                assert!(matches!(members[0], Ok(WireInbound::Request { request: WireRequest::Cancel(_), .. })));
                assert_eq!(members[1].as_ref().expect_err("7 is no request").error.code, crate::jsonrpc::ErrorCode::InvalidRequest);
            }
            crate::jsonrpc::Line::One(one) => panic!("not split: {one:?}"),
        }
        match line("[]") {
            crate::jsonrpc::Line::One(Err(e)) => assert_eq!((e.error.code, e.error.message.as_str()), (crate::jsonrpc::ErrorCode::InvalidRequest, "Invalid request")),
            other => panic!("{other:?}"),
        }
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
            WireInbound::Response { id, outcome: Ok(r) } => assert_eq!((id, r["response"].clone()), (json!("a1"), json!("approve"))),
            other => panic!("{other:?}"),
        }
        match decode(r#"{"jsonrpc":"2.0","id":"t1","error":{"code":-32000,"message":"ticket db offline"}}"#).unwrap() {
            WireInbound::Response { outcome: Err(e), .. } => assert_eq!((i32::from(e.code), e.message.as_str()), (-32000, "ticket db offline")),
            other => panic!("{other:?}"),
        }
        let e = err(r#"{"jsonrpc":"2.0","id":"x","result":{},"error":{"code":1,"message":"m"}}"#);
        assert_eq!((&e["id"], &e["error"]["message"]), (&json!("x"), &json!("Invalid response")));
    }
}
