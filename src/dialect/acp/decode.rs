//! ACP's inbound side: its rules for the runtime's one envelope decoder
//! ([`crate::jsonrpc::decode`]) and its typed requests and notifications.
//!
//! Rules: ids are strings or integers (echoed as sent, byte for byte), or `null`; malformed
//! JSON is -32700 with `id: null`; something that is not a JSON-RPC 2.0 object (`jsonrpc`
//! other than "2.0", a bad id or method, an empty batch) is -32600, with the id when it could
//! be read; a batch is split by the runtime and each member read by these rules; a request for a method agentwire does not implement is -32601 with its id; params
//! failing the vendored schema are -32602 with `data.path` (the JSON pointer of the failing
//! value) and `data.reason`. Notifications are never answered, known or not.

use serde_json::Value;

use crate::jsonrpc::{Decoded, Error, Inbound, Policy, Side};
use crate::protocol::acp::{AcpAgentNotification, AcpAgentRequest, AcpReader};
use crate::transport::InboundLine;

/// The agent side of ACP: it answers the client's [`AcpAgentRequest`]s and acts on its
/// [`AcpAgentNotification`]s. (A client would implement the opposite side.)
#[derive(Debug)]
pub enum AcpAgentSide {}

/// A decoded inbound ACP frame.
pub type AcpInbound = Inbound<AcpAgentRequest, AcpAgentNotification>;

impl Side for AcpAgentSide {
    type Request = AcpAgentRequest;
    type Notification = AcpAgentNotification;
    // ACP is JSON-RPC 2.0 to the letter.
    const POLICY: Policy = Policy::STRICT;

    fn request(method: &str, frame: Value) -> Result<AcpAgentRequest, Error> {
        AcpReader::Agent.request(method, frame, AcpAgentRequest::from_params)
    }

    fn notification(method: &str, frame: Value) -> Result<AcpAgentNotification, crate::jsonrpc::IgnoredNotification> {
        AcpReader::Agent.notification(method, frame, AcpAgentNotification::from_params)
    }
}

/// Decodes one line; `Err` is the error response to write for it.
pub fn decode_acp_line(line: InboundLine) -> Decoded<AcpAgentSide> {
    crate::jsonrpc::decode::<AcpAgentSide>(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::acp::acp_validator;
    use serde_json::json;

    fn err(text: &str) -> Value {
        let e = serde_json::to_value(*decode_acp_line(InboundLine::Line(text.as_bytes().to_vec())).expect_err(text)).unwrap();
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
