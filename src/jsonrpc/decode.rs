//! Envelope decoding, once for every JSON-RPC dialect: one inbound line → a request, a
//! notification, a response to one of our requests, or the error frame that line gets. What
//! differs between dialects (the words of each envelope error, whether `jsonrpc` may be
//! missing, whether a `null` id makes a request) is the dialect's [`Policy`]; the typed
//! request and notification, with the dialect's own params errors, come from its [`Side`].
//!
//! Ids are echoed byte for byte (`transport::raw_id`): a string or an integer of any size is an
//! id; anything else is refused (-32600). Malformed JSON is -32700; a non-object, a bad
//! `jsonrpc` / `id` / `method` is -32600 with the id when it could be read. Notifications
//! are never answered.
//!
//! **Batches** are JSON-RPC 2.0's: [`decode_line`] splits a JSON array into its members, each
//! decoded as a line of its own (its id read from its own bytes); an empty array is one
//! -32600, and a member that is not an object (`[17, true, null]`) is a -32600 of its own.

use serde_json::{Map, Value};

use crate::protocol::envelope::{Error, ErrorCode, ErrorFrame, IgnoredNotification};
use crate::transport::raw_id::{exact_id, id_kind, marked_id, peek_id_and_type, raw_id, IdKind};
use crate::transport::InboundLine;

/// The words of each envelope error, as the dialect's reference peer writes them.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// -32700 (the line is not JSON).
    pub parse_error: &'static str,
    /// -32600 for an empty batch (`[]`).
    pub empty_batch: &'static str,
    /// -32600 for JSON that is not an object.
    pub not_an_object: &'static str,
    /// -32600 for `{}`.
    pub empty_object: &'static str,
    /// -32600 for an id that is neither a string nor an integer.
    pub bad_id: &'static str,
    /// -32600 for a frame with neither `method` nor `id`.
    pub no_method_no_id: &'static str,
    /// -32600 for a response with both or neither of `result` and `error`.
    pub bad_response: &'static str,
    /// -32600 for a response whose `error` lacks an integer `code` or a string `message`.
    pub bad_error: &'static str,
}

/// A dialect's envelope rules.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// A frame without `"jsonrpc":"2.0"` is refused (ACP); kimi accepts it missing.
    pub jsonrpc_required: bool,
    /// `"id": null` makes a request (answered with `id: null`; ACP's schema allows it);
    /// otherwise it makes a notification (kimi).
    pub null_id_is_request: bool,
    /// A line the parser rejects still has its top-level id read and echoed (kimi).
    pub parse_error_echoes_id: bool,
    /// An error without `data` is written with `"data": null` (kimi) instead of without it.
    pub null_data: bool,
    /// The words of the envelope errors.
    pub words: Words,
}

impl Words {
    /// Plain JSON-RPC 2.0 wording, each naming what is wrong.
    pub const PLAIN: Words = Words {
        parse_error: "Parse error: invalid JSON",
        empty_batch: "Invalid request: an empty batch",
        not_an_object: "Invalid request: not a JSON-RPC object",
        empty_object: "Invalid request: `jsonrpc` must be \"2.0\"",
        bad_id: "Invalid request: `id` must be a string, an integer or null",
        no_method_no_id: "Invalid request: no `method` and no `id`",
        bad_response: "Invalid response: exactly one of `result` and `error`",
        bad_error: "Invalid response: `error` needs a code and a message",
    };
}

impl Policy {
    /// JSON-RPC 2.0 as the specification has it: `"jsonrpc": "2.0"` required, a `null` id is
    /// a request's id (discouraged, not forbidden), an unparsable line is answered with
    /// `id: null`, an absent `data` is left out; [`Words::PLAIN`].
    pub const STRICT: Policy = Policy { jsonrpc_required: true, null_id_is_request: true, parse_error_echoes_id: false, null_data: false, words: Words::PLAIN };

    /// The error frame for `error`, answering `id` (`None`: unreadable, written `null`).
    pub fn error_frame(&self, id: Option<&Value>, error: Error) -> Box<ErrorFrame> {
        Box::new(ErrorFrame { id: id.cloned(), error, null_data: self.null_data })
    }
}

/// One side of a connection: what it accepts from its peer. The agent side of a dialect
/// decodes the client's requests; a client of the same dialect would implement the opposite
/// side with the agent's requests (the old ACP crate's `Side`).
pub trait Side {
    /// The typed requests this side answers.
    type Request: Send;
    /// The typed notifications this side acts on.
    type Notification: Send;
    /// The envelope rules.
    const POLICY: Policy;
    /// The typed request of `method` from the whole `frame` (validated by the side); `Err`
    /// is answered with the request's id (-32601 unknown method, -32602 bad params).
    fn request(method: &str, frame: Value) -> Result<Self::Request, Error>;
    /// The typed notification of `method`; `Err` says why it is ignored (never answered).
    fn notification(method: &str, frame: Value) -> Result<Self::Notification, IgnoredNotification>;
}

/// A decoded inbound frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound<R, N> {
    /// A request to answer, with its id as sent.
    Request {
        /// The request id.
        id: Value,
        /// The typed request.
        request: R,
    },
    /// A notification to act on.
    Notification(N),
    /// A notification that is unknown or does not fit: never answered, never executed.
    Ignored {
        /// Its method.
        method: String,
        /// Why it is ignored.
        reason: String,
    },
    /// The peer's answer to one of our requests.
    Response {
        /// The id of our request.
        id: Value,
        /// `result`, or the error the peer answered with.
        outcome: Result<Value, Error>,
    },
}

/// What a side decodes a line into.
pub type Decoded<S> = Result<Inbound<<S as Side>::Request, <S as Side>::Notification>, Box<ErrorFrame>>;

/// What one inbound line holds: one message, or a JSON-RPC 2.0 batch of them.
pub enum Line<S: Side> {
    /// One message (or the error frame the line gets).
    One(Decoded<S>),
    /// A non-empty batch: each member decoded on its own, in order. The answers to its
    /// requests and its members' error frames go back in one array; notifications and
    /// responses get nothing.
    Batch(Vec<Decoded<S>>),
}

impl<S: Side> std::fmt::Debug for Line<S>
where
    S::Request: std::fmt::Debug,
    S::Notification: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::One(decoded) => f.debug_tuple("One").field(decoded).finish(),
            Self::Batch(members) => f.debug_tuple("Batch").field(members).finish(),
        }
    }
}

/// Decodes one line with the rules of side `S`: a JSON array is a batch (see the module
/// documentation), anything else one message as [`decode`] reads it.
pub fn decode_line<S: Side>(line: InboundLine) -> Line<S> {
    let bytes = match line {
        InboundLine::Line(b) if b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'[') => b,
        other => return Line::One(decode::<S>(other)),
    };
    // The members' own texts, so each id is echoed byte for byte as in a line of its own.
    let members = std::str::from_utf8(&bytes).ok().and_then(|t| serde_json::from_str::<Vec<&serde_json::value::RawValue>>(t).ok());
    match members {
        // Not JSON (or nested too deep for the parser): a parse error, as any such line.
        None => Line::One(decode::<S>(InboundLine::Line(bytes))),
        Some(members) if members.is_empty() => {
            let policy = &S::POLICY;
            Line::One(Err(policy.error_frame(None, Error::invalid_request(policy.words.empty_batch))))
        }
        Some(members) => Line::Batch(members.into_iter().map(|m| decode_member::<S>(m.get().as_bytes().to_vec())).collect()),
    }
}

/// One member of a batch: a message like a line's, except that an array in a batch is no
/// batch of its own (JSON-RPC 2.0 does not nest them) but an invalid request.
fn decode_member<S: Side>(bytes: Vec<u8>) -> Decoded<S> {
    if bytes.first() == Some(&b'[') {
        let policy = &S::POLICY;
        return Err(policy.error_frame(None, Error::invalid_request(policy.words.not_an_object)));
    }
    decode::<S>(InboundLine::Line(bytes))
}

/// Decodes one line holding one message with the rules of side `S`; `Err` is the error frame to
/// write for it. A JSON array is refused here (-32600): [`decode_line`] reads batches.
pub fn decode<S: Side>(line: InboundLine) -> Decoded<S> {
    let policy = &S::POLICY;
    let words = &policy.words;
    let invalid = |id: Option<&Value>, message: &str| policy.error_frame(id, Error::invalid_request(message));
    let bytes = match line {
        InboundLine::Line(b) => b,
        InboundLine::TooLong { bytes, head } => {
            // Not a parse error: the line was never read whole. The id comes from its head.
            let (id, _) = peek_id_and_type(&head);
            return Err(invalid(id.as_ref(), &format!("Request of {bytes} bytes exceeds the line limit; it was skipped")));
        }
    };
    let Some(mut value) = std::str::from_utf8(&bytes).ok().and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        // Malformed for the parser (nested too deep, `1e400`, a lone surrogate): the id may
        // still be readable from the text.
        let id = if policy.parse_error_echoes_id { peek_id_and_type(&bytes).0 } else { None };
        return Err(policy.error_frame(id.as_ref(), Error::parse_error(words.parse_error)));
    };
    let map = match &mut value {
        Value::Array(_) => return Err(invalid(None, words.not_an_object)),
        Value::Object(m) if m.is_empty() => return Err(invalid(None, words.empty_object)),
        Value::Object(m) => m,
        _ => return Err(invalid(None, words.not_an_object)),
    };
    let id = match read_id(map, &bytes, policy) {
        Ok(id) => id,
        Err(()) => return Err(invalid(None, words.bad_id)),
    };
    if (policy.jsonrpc_required || map.contains_key("jsonrpc")) && map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id.as_ref(), "Invalid request: `jsonrpc` must be \"2.0\""));
    }
    let method = match map.get("method") {
        None => return response(map, id, policy),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(invalid(id.as_ref(), "Invalid request: `method` must be a string")),
    };
    let Some(id) = id else {
        return Ok(match S::notification(&method, value) {
            Ok(n) => Inbound::Notification(n),
            Err(reason) => Inbound::Ignored { method, reason: reason.to_string() },
        });
    };
    match S::request(&method, value) {
        Ok(request) => Ok(Inbound::Request { id, request }),
        Err(e) => Err(policy.error_frame(Some(&id), e)),
    }
}

/// The frame's id, put back in the frame as read: `Ok(None)` for none (or a `null` that makes
/// no request), `Err` for one that is neither a string nor an integer.
fn read_id(map: &mut Map<String, Value>, bytes: &[u8], policy: &Policy) -> Result<Option<Value>, ()> {
    match map.get("id") {
        None => return Ok(None),
        Some(Value::Null) => return Ok(policy.null_id_is_request.then_some(Value::Null)),
        // Ids as peers nearly always write them print back as their token from the parsed
        // value: a string in a line without any escape (and without the marker's character),
        // a non-zero integer within i64. Only other ids need their raw token read again from
        // the line (a scan of the whole frame, and a second parse of the token).
        Some(Value::String(s)) if !bytes.contains(&b'\\') && !s.contains('\u{FDD0}') => return Ok(map.get("id").cloned()),
        Some(Value::Number(n)) if n.as_i64().is_some_and(|v| v != 0) => return Ok(map.get("id").cloned()),
        Some(_) => {}
    }
    // The id is echoed byte for byte, big integers and escaped strings included. An integer
    // beyond i64 travels as a marked string, so typed frames with i64 ids still read it.
    let id = match raw_id(bytes) {
        Some(raw) => match id_kind(&raw) {
            IdKind::Integer if raw.parse::<i64>().is_err() => marked_id(&raw),
            IdKind::String | IdKind::Integer => exact_id(&raw),
            IdKind::Other => return Err(()),
        },
        None => map.get("id").filter(|id| id.is_string() || id.is_i64()).cloned().ok_or(())?,
    };
    map.insert("id".to_owned(), id.clone());
    Ok(Some(id))
}

fn response<R, N>(map: &Map<String, Value>, id: Option<Value>, policy: &Policy) -> Result<Inbound<R, N>, Box<ErrorFrame>> {
    let words = &policy.words;
    let invalid = |id: Option<&Value>, message: &str| policy.error_frame(id, Error::invalid_request(message));
    let Some(id) = id else { return Err(invalid(None, words.no_method_no_id)) };
    match (map.get("result"), map.get("error")) {
        (Some(result), None) => Ok(Inbound::Response { id, outcome: Ok(result.clone()) }),
        (None, Some(error)) => {
            let code = error.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok());
            match (code, error.get("message").and_then(Value::as_str)) {
                (Some(code), Some(message)) => {
                    let e = Error { code: ErrorCode::from(code), message: message.to_owned(), data: error.get("data").cloned() };
                    Ok(Inbound::Response { id, outcome: Err(e) })
                }
                _ => Err(invalid(Some(&id), words.bad_error)),
            }
        }
        _ => Err(invalid(Some(&id), words.bad_response)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A side answering any method `echo` and acting on the notification `note`.
    enum Strict {}
    enum Lenient {}

    fn request(method: &str, frame: Value) -> Result<Value, Error> {
        match method {
            "echo" => Ok(frame.get("params").cloned().unwrap_or(Value::Null)),
            other => Err(Error::method_not_found(format!("no {other}"))),
        }
    }

    fn notification(method: &str, _frame: Value) -> Result<String, IgnoredNotification> {
        (method == "note").then(|| method.to_owned()).ok_or(IgnoredNotification::Unknown)
    }

    impl Side for Strict {
        type Request = Value;
        type Notification = String;
        const POLICY: Policy = Policy::STRICT;
        fn request(method: &str, frame: Value) -> Result<Value, Error> {
            request(method, frame)
        }
        fn notification(method: &str, frame: Value) -> Result<String, IgnoredNotification> {
            notification(method, frame)
        }
    }

    impl Side for Lenient {
        type Request = Value;
        type Notification = String;
        const POLICY: Policy = Policy { jsonrpc_required: false, null_id_is_request: false, parse_error_echoes_id: true, null_data: true, words: Words::PLAIN };
        fn request(method: &str, frame: Value) -> Result<Value, Error> {
            request(method, frame)
        }
        fn notification(method: &str, frame: Value) -> Result<String, IgnoredNotification> {
            notification(method, frame)
        }
    }

    fn line(text: &str) -> InboundLine {
        InboundLine::Line(text.as_bytes().to_vec())
    }

    /// The error frame as written on the wire (marked ids restored).
    fn written<S: Side<Request = Value, Notification = String>>(text: &str) -> String {
        let frame = decode::<S>(line(text)).expect_err(text);
        crate::transport::raw_id::restore(serde_json::to_string(&*frame).unwrap())
    }

    #[test]
    fn each_policy_rule_decides_what_it_names() {
        // `jsonrpc` missing: refused by the strict side, accepted by the lenient one.
        assert!(written::<Strict>(r#"{"id":1,"method":"echo"}"#).contains("-32600"));
        assert!(matches!(decode::<Lenient>(line(r#"{"id":1,"method":"echo"}"#)), Ok(Inbound::Request { .. })));
        // `"id": null` is a request's id, or a notification.
        assert!(matches!(decode::<Strict>(line(r#"{"jsonrpc":"2.0","id":null,"method":"echo"}"#)), Ok(Inbound::Request { id: Value::Null, .. })));
        assert!(matches!(decode::<Lenient>(line(r#"{"jsonrpc":"2.0","id":null,"method":"note"}"#)), Ok(Inbound::Notification(_))));
        // The id of a line the parser rejects, and `data` written as null or left out.
        assert_eq!(written::<Strict>(r#"{"jsonrpc":"2.0","id":"p","x":1e400}"#), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON"}}"#);
        assert_eq!(written::<Lenient>(r#"{"jsonrpc":"2.0","id":"p","x":1e400}"#), r#"{"jsonrpc":"2.0","id":"p","error":{"code":-32700,"message":"Parse error: invalid JSON","data":null}}"#);
    }

    #[test]
    fn ids_are_kept_exactly_and_side_errors_carry_them() {
        for raw in ["18446744073709551616", "-9223372036854775809", r#""\u0041""#, "7", r#""s""#] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"nope"}}"#);
            assert_eq!(written::<Strict>(&text), format!(r#"{{"jsonrpc":"2.0","id":{raw},"error":{{"code":-32601,"message":"no nope"}}}}"#));
        }
        for bad in ["1.5", "[1]", "{}", "true"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"echo"}}"#);
            assert!(written::<Strict>(&text).starts_with(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600"#), "{bad}");
        }
        match decode::<Strict>(line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"auth","data":{"k":1}}}"#)) {
            Ok(Inbound::Response { id, outcome: Err(e) }) => assert_eq!((id, e.code, e.data.is_some()), (Value::from(3), ErrorCode::AuthRequired, true)),
            other => panic!("{other:?}"),
        }
        assert!(written::<Strict>(r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"m"}}"#).contains(r#""id":3"#));
    }
}
