//! The JSONL RPC dialect's inbound side: one line → a command, a sub-protocol answer, or the
//! one error response that line gets.
//!
//! Rules (where agentwire is stricter or more helpful than pi and omp):
//! - the request's `id` is echoed whenever the line was an object with an `id` key, whatever
//!   else is wrong (pi and omp drop it for unknown commands, and their hosts wait forever);
//! - `command` is always a string: the request's `type`, `parse` for lines that are not JSON
//!   objects (and oversized lines), `unknown` for objects without a string `type`;
//! - every frame is validated against the schema before anything acts on it, and the error
//!   names the field (`set_model: /modelId: "modelId" is a required property`).
//!
//! A line is read once, as a host's commands are small and frequent: into a borrowed [`Doc`] that
//! the generated validators check,
//! then from its text straight into the member struct its `type` names
//! (`RpcCommand::from_tagged_str`), with no `serde_json::Value` tree. The few lines that path
//! cannot answer the same way (see [`decode_doc`]) take the `Value` path, which defines the
//! answers. Lines of the form hosts write most, `{"id":…,"type":"…"}`, are read by a byte scan:
//! an unknown `type` is answered from it, and a command with no other member is a copy of the
//! one its kind decoded to the first time (`bare_command`).

use std::borrow::Cow;

use serde_json::Value;

pub use super::failure::RpcFailure;
use crate::protocol::doc::{Doc, Parsed};
use crate::protocol::program::Check;
use crate::protocol::validate::{validator, SchemaDialect, Direction};
use crate::protocol::{ExtensionUiResponse, HostToolResult, HostToolUpdate, RequestId, RpcChunk, RpcCommand, RpcErrorCode, UnionInfo};
use crate::transport::raw_id::{exact_id, id_kind, IdKind};
use crate::transport::InboundLine;

/// A decoded inbound frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A command, with its raw `id` (echoed verbatim in the response).
    Command {
        /// The request's `id`, any JSON value, when it had one.
        id: Option<Value>,
        /// The validated command.
        command: RpcCommand,
    },
    /// An answer to an extension UI dialog (never answered itself).
    UiResponse(ExtensionUiResponse),
    /// Progress of a host tool call (never answered itself).
    HostToolUpdate(HostToolUpdate),
    /// Result of a host tool call (never answered itself).
    HostToolResult(HostToolResult),
    /// A slice of a chunked frame (omp protocol v2; see `super::chunks`).
    Chunk(RpcChunk),
}

/// Decodes one line; `Err` is the response to write for it.
pub fn decode_line(line: &InboundLine, max_line_bytes: usize) -> Result<Inbound, RpcFailure> {
    let bytes = match line {
        InboundLine::Line(bytes) => bytes,
        InboundLine::TooLong { bytes, head } => {
            // The id (and command) are read from the line's head when they come first.
            let (id, kind) = crate::dialect::peek_id_and_type(&head);
            return Err(failure(
                id,
                kind.map_or(Cow::Borrowed("parse"), Cow::Owned),
                RpcErrorCode::FrameTooLarge,
                format!("Frame of {bytes} bytes exceeds the {max_line_bytes}-byte line limit; it was skipped"),
            ));
        }
    };
    let escapes = bytes.contains(&b'\\');
    if let Some((kind, end)) = (!escapes).then(|| plain_type(&bytes)).flatten() {
        // The form hosts write most, `{"id":…,"type":"…"}` and nothing else, is read by a byte
        // scan; a glance after the type (`}` or `,"id"` must follow) keeps lines with more
        // members from a scan bound to fail.
        match may_end_plain(&bytes[end..]).then(|| scan_plain_head(&bytes)).flatten() {
            Some((id, kind)) => match known_tag(kind) {
                None => return Err(unknown_command(id, kind)),
                Some(kind) => {
                    if let Some(command) = bare_command(kind, id.as_ref()) {
                        return Ok(Inbound::Command { id, command });
                    }
                }
            },
            // Only a line that looks like an unknown command tries the serde read of its head
            // (a known one would be read twice).
            None if known_tag(kind).is_none() => {
                if let Some(unknown) = unknown_command_fast(&bytes) {
                    return Err(unknown);
                }
            }
            None => {}
        }
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        // Invalid UTF-8 elsewhere in the line does not hide a readable top-level id (found by
        // the `rpc_decode` fuzz target).
        let (id, _) = crate::dialect::peek_id_and_type(&bytes);
        failure(id, "parse", RpcErrorCode::ParseError, format!("Failed to parse command: invalid UTF-8 at byte {}", e.valid_up_to()))
    })?;
    if let Some(decoded) = decode_doc(text, escapes) {
        return decoded;
    }
    decode_value(text, &bytes, escapes)
}

/// The main path: the line read once into a [`Doc`] (strings borrowed from it, no `Value`
/// tree), checked, then parsed from its text straight into the member its tag names. `None`
/// leaves the line to [`decode_value`], which gives the answer this path cannot give the same
/// way: lines that are not JSON objects or lack a known `type`, keys given twice (the typed
/// parse from text refuses them where the `Value` takes the last one), ids that need their raw
/// token echoed, and lines the typed parse refuses (its error texts are the `Value` parse's).
fn decode_doc(text: &str, escapes: bool) -> Option<Result<Inbound, RpcFailure>> {
    let Ok(Parsed { doc, same_as_value: true }) = Doc::parse(text) else { return None };
    let members = doc.as_object()?;
    // The ids `decode_value` echoes as parsed, without their raw token: a string with no escape
    // in its token (and no U+FDD0, which `exact_id` would mark), a non-zero integer.
    let id = match members.get("id") {
        None => None,
        Some(Doc::String(s)) if !escapes || matches!(s, std::borrow::Cow::Borrowed(t) if !t.contains('\u{FDD0}')) => Some(Value::String(s.as_ref().to_owned())),
        Some(Doc::Number(n)) if prints_back(n) => Some(Value::Number(n.clone())),
        Some(_) => return None,
    };
    let tag = known(members.get("type")?.as_str()?)?;
    let kind = tag.name;
    if let Err(e) = validator().validate_doc_with(tag.check(), &doc, kind) {
        return Some(Err(invalid(id, kind, &e)));
    }
    let parsed = match kind {
        "extension_ui_response" => serde_json::from_str(text).map(Inbound::UiResponse),
        "host_tool_update" => serde_json::from_str(text).map(Inbound::HostToolUpdate),
        "host_tool_result" => serde_json::from_str(text).map(Inbound::HostToolResult),
        "rpc_chunk" => serde_json::from_str(text).map(Inbound::Chunk),
        _ => RpcCommand::from_tagged_str(kind, text).map(|command| Inbound::Command { id, command }),
    };
    parsed.ok().map(Ok)
}

/// The answer to a frame the schema check refused.
fn invalid(id: Option<Value>, kind: &'static str, e: &crate::protocol::validate::FrameError) -> RpcFailure {
    // A sub-protocol answer without a usable id cannot be matched to anything.
    let code = if is_subprotocol(kind) && e.path == "/id" { RpcErrorCode::InvalidRequest } else { RpcErrorCode::InvalidParams };
    failure(id, kind, code, e.text())
}

/// The path through a `Value` tree, for the lines [`decode_doc`] leaves (see there).
fn decode_value(text: &str, bytes: &[u8], escapes: bool) -> Result<Inbound, RpcFailure> {
    // A line the parser rejects (nested too deep, `1e400`, a lone surrogate) still has its id
    // answered when the top-level `id` can be read.
    let mut value: Value = serde_json::from_str(text).map_err(|e| {
        let (id, _) = crate::dialect::peek_id_and_type(bytes);
        failure(id, "parse", RpcErrorCode::ParseError, format!("Failed to parse command: {e}"))
    })?;
    // The id is echoed byte for byte (see `transport::raw_id`).
    // Ids as hosts nearly always write them — a string in a line without any escape, a
    // non-zero integer — print back as their token; only other ids need the token itself.
    let mut id = value.get("id").cloned();
    let plain = match &id {
        Some(Value::String(_)) => !escapes,
        Some(Value::Number(n)) => prints_back(n),
        _ => false,
    };
    let raw_id = if plain || id.is_none() { None } else { crate::dialect::raw_id(bytes) };
    if let (Some(raw), Value::Object(map)) = (&raw_id, &mut value) {
        if id_kind(raw) != IdKind::Other {
            let exact = exact_id(raw);
            map.insert("id".to_owned(), exact.clone());
            id = Some(exact);
        }
    }
    let Value::Object(map) = &value else {
        return Err(failure(
            None,
            "parse",
            RpcErrorCode::ParseError,
            format!("Failed to parse command: expected a JSON object, got {}", json_kind(&value)),
        ));
    };
    let Some(Value::String(kind)) = map.get("type") else {
        let message = match map.get("type") {
            None => "Missing `type`: every command needs a string `type`".to_owned(),
            Some(other) => format!("`type` must be a string, got {}", json_kind(other)),
        };
        return Err(failure(id, "unknown", RpcErrorCode::InvalidRequest, message));
    };
    if let Some(bad) = id.as_ref().filter(|_| raw_id.as_deref().is_some_and(|r| id_kind(r) == IdKind::Other)) {
        return Err(failure(
            id.clone(),
            kind.clone(),
            RpcErrorCode::InvalidRequest,
            format!("`id` must be a string or an integer, got {}", json_kind(bad)),
        ));
    }
    // The schema's own tag from here on (the line's text is moved into the typed parse).
    let Some(kind) = known_tag(kind) else {
        return Err(unknown_command(id, kind));
    };
    if let Err(e) = validator().validate_frame(SchemaDialect::Rpc, Direction::Inbound, &value, None) {
        return Err(invalid(id, kind, &e));
    }
    let parse_error = |e: serde_json::Error| failure(id.clone(), kind, RpcErrorCode::InvalidParams, format!("{kind}: {e}"));
    match kind {
        "extension_ui_response" => crate::protocol::decode::from_value(value).map(Inbound::UiResponse).map_err(parse_error),
        "host_tool_update" => crate::protocol::decode::from_value(value).map(Inbound::HostToolUpdate).map_err(parse_error),
        "host_tool_result" => crate::protocol::decode::from_value(value).map(Inbound::HostToolResult).map_err(parse_error),
        "rpc_chunk" => crate::protocol::decode::from_value(value).map(Inbound::Chunk).map_err(parse_error),
        _ => RpcCommand::from_value(value).map(|command| Inbound::Command { id: id.clone(), command }).map_err(parse_error),
    }
}

/// The shape of a bare command's `id`, which is all that can change whether it is valid: any
/// string, and any integer within `int64`, is a valid `RequestId`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IdShape {
    Absent,
    String,
    Integer,
}

/// A command with no member but `id` and `type` (`get_state`, `get_messages`, `abort`, …), as
/// [`decode_doc`] decodes it, without reading the line again. Such a line can only be as valid
/// as the kind's bare frame with an id of the same shape, so the first of each (kind, shape)
/// goes the full path on a sample line, and its command is kept: a later one is a copy with
/// its own id set. `None` when the full path must answer (the bare frame is invalid, the kind
/// is not a command, the id is an integer out of `int64`).
fn bare_command(kind: &'static str, id: Option<&Value>) -> Option<RpcCommand> {
    type Kept = Vec<(&'static str, IdShape, Option<RpcCommand>)>;
    thread_local! {
        static KEPT: std::cell::RefCell<Kept> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let (shape, request_id) = match id {
        None => (IdShape::Absent, None),
        Some(Value::String(s)) => (IdShape::String, Some(RequestId::String(s.clone()))),
        Some(Value::Number(n)) => (IdShape::Integer, Some(RequestId::Int64(n.as_i64()?))),
        Some(_) => return None,
    };
    KEPT.with_borrow_mut(|kept| {
        // Tags are the union's own `&'static str`s (`known_tag`), so their addresses identify them.
        let found = kept.iter().find(|(k, s, _)| std::ptr::eq(*k, kind) && *s == shape);
        let template = match found {
            Some((_, _, template)) => template.as_ref()?,
            None => {
                let sample = match shape {
                    IdShape::Absent => format!(r#"{{"type":"{kind}"}}"#),
                    IdShape::String => format!(r#"{{"id":"s","type":"{kind}"}}"#),
                    IdShape::Integer => format!(r#"{{"id":1,"type":"{kind}"}}"#),
                };
                let command = match decode_doc(&sample, false) {
                    Some(Ok(Inbound::Command { command, .. })) => Some(command),
                    _ => None,
                };
                kept.push((kind, shape, command));
                kept.last().and_then(|(_, _, c)| c.as_ref())?
            }
        };
        let mut command = template.clone();
        *command.id_mut()? = request_id;
        Some(command)
    })
}

/// The union of every inbound frame (the commands and the sub-protocol answers).
fn inbound_union() -> &'static UnionInfo {
    static INBOUND: std::sync::OnceLock<&'static UnionInfo> = std::sync::OnceLock::new();
    INBOUND.get_or_init(|| UnionInfo::get("RpcInboundFrame").expect("the schema defines RpcInboundFrame"))
}

/// A tag of the inbound union, with the check of the member it selects.
struct KnownTag {
    /// The union's own copy of the tag.
    name: &'static str,
    /// The member's check, found on first use.
    check: std::sync::OnceLock<Check>,
}

impl KnownTag {
    /// The check of a frame with this tag: the member's, which reports what the whole union's
    /// check reports for it, without finding the member again on every line.
    fn check(&self) -> Check {
        *self.check.get_or_init(|| {
            let union = validator().def_check("RpcInboundFrame").expect("the schema defines RpcInboundFrame");
            union.member(self.name).unwrap_or(union)
        })
    }
}

/// The tag of an inbound frame, the union's own copy.
fn known_tag(kind: &str) -> Option<&'static str> {
    known(kind).map(|tag| tag.name)
}

/// An inbound frame's tag. Every line asks, so the tags are kept by length: a lookup compares
/// only the few of the same length (a scan of ~70 names, or a binary search comparing bytes at
/// every step, cost several times more).
fn known(kind: &str) -> Option<&'static KnownTag> {
    static BY_LENGTH: std::sync::OnceLock<Vec<Vec<KnownTag>>> = std::sync::OnceLock::new();
    let by_length = BY_LENGTH.get_or_init(|| {
        let mut by_length: Vec<Vec<KnownTag>> = Vec::new();
        for (tag, _) in inbound_union().members {
            if by_length.len() <= tag.len() {
                by_length.resize_with(tag.len() + 1, Vec::new);
            }
            by_length[tag.len()].push(KnownTag { name: tag, check: std::sync::OnceLock::new() });
        }
        by_length
    });
    by_length.get(kind.len())?.iter().find(|tag| tag.name.as_bytes() == kind.as_bytes())
}

/// The `type` of a line as hosts write it (`"type":"…"`, no escapes), read without parsing the
/// line: it only chooses which path reads the line, and is never trusted as the frame's type.
/// Lines are short: plain loops beat setting up a vector search. Also where the string ended
/// (the index after its closing quote).
fn plain_type(bytes: &[u8]) -> Option<(&str, usize)> {
    const KEY: &[u8] = b"\"type\":\"";
    let mut from = 0;
    let at = loop {
        let quote = from + bytes[from..].iter().position(|&b| b == b'"')?;
        if bytes[quote..].starts_with(KEY) {
            break quote + KEY.len();
        }
        from = quote + 1;
    };
    let len = bytes[at..].iter().position(|&b| b == b'"')?;
    Some((std::str::from_utf8(&bytes[at..at + len]).ok()?, at + len + 1))
}

/// Whether `rest`, what follows a line's `type` string, can end the plain form: `}`, or `,`
/// and then the `"id"` key (whitespace allowed between tokens).
fn may_end_plain(rest: &[u8]) -> bool {
    let mut tokens = Tokens { bytes: rest, at: 0 };
    tokens.eat(b'}').is_some() || (tokens.eat(b',').is_some() && tokens.eat(b'"').is_some() && rest[tokens.at..].starts_with(b"id\""))
}

/// The `unknown_command` error for `kind`, with the closest known command when one is near
/// (`closest_tag` remembers the names asked).
fn unknown_command(id: Option<Value>, kind: &str) -> RpcFailure {
    RpcFailure::unknown_command(id, kind, crate::protocol::validate::closest_tag(inbound_union(), kind))
}

/// The top level of a line, read without building its `Value` tree: the `id` value, the `type`
/// string (borrowed from the line: the caller checked it has no `\`; a `type` that is not a
/// string fails the read, and the full path answers), the other members parsed (so the line is
/// accepted exactly when the `Value` parse accepts it) and dropped, and whether `id` or `type`
/// came twice.
#[derive(Default)]
struct Head<'a> {
    id: Option<Value>,
    kind: Option<&'a str>,
    repeated: bool,
}

impl<'de> serde::Deserialize<'de> for Head<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Head<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Head<'de>, A::Error> {
                let mut head = Head::default();
                // Keys without escapes borrow from the line (the caller checked for `\`).
                while let Some(key) = map.next_key::<&'de str>()? {
                    match key {
                        "id" => {
                            head.repeated |= head.id.is_some();
                            head.id = Some(map.next_value()?);
                        }
                        "type" => {
                            head.repeated |= head.kind.is_some();
                            head.kind = Some(map.next_value()?);
                        }
                        _ => {
                            map.next_value::<Value>()?;
                        }
                    }
                }
                Ok(head)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A line's bytes read token by token, for [`scan_plain_head`].
struct Tokens<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Tokens<'a> {
    /// Skips JSON whitespace (the four bytes serde_json skips).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next token is the byte `b`.
    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip_whitespace();
        (self.bytes.get(self.at) == Some(&b)).then(|| self.at += 1)
    }

    /// The next token is a string with no escape and no control byte (which serde_json
    /// refuses): its bytes, not yet checked to be UTF-8 (a key is compared as bytes).
    fn string_bytes(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = &self.bytes[self.at..];
        let len = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.at += len + 1;
        Some(&rest[..len])
    }

    /// [`Tokens::string_bytes`], valid UTF-8: its text.
    fn string(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.string_bytes()?).ok()
    }

    /// The next token is a non-zero integer within u64 (positive) or i64 (negative), written
    /// as serde_json writes it (no leading zero, no `+`): its value, which prints back as
    /// exactly that token. Other numbers (`0`, `-0`, `1.5`, `1e3`, out of range) are `None`.
    fn integer(&mut self) -> Option<Value> {
        self.skip_whitespace();
        let negative = self.bytes.get(self.at) == Some(&b'-');
        let from = self.at + usize::from(negative);
        let digits = self.bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let token = &self.bytes[from..from + digits];
        if !matches!(token.first(), Some(b'1'..=b'9')) || digits > 20 {
            return None;
        }
        let magnitude = token.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))?;
        self.at = from + digits;
        if negative {
            // −2^63 is the most negative i64 (2^63 itself does not fit in one).
            let value = 0i64.checked_sub_unsigned(magnitude)?;
            Some(Value::from(value))
        } else {
            Some(Value::from(magnitude))
        }
    }
}

/// The line when it has the form hosts write — `{"id":…,"type":"…"}`, the two members in
/// either order, `id` optional and a string or a non-zero integer, whitespace between tokens
/// as JSON allows, nothing after the object but whitespace — read with a few byte comparisons:
/// its `id` (as the `Value` parse gives it) and `type`. Every line of that form is a JSON
/// object the `Value` parse accepts with exactly these members and values. `None` for any other
/// form, including a repeated member and a `type` or `id` string with an escape or a control
/// byte; the serde read takes those.
fn scan_plain_head(bytes: &[u8]) -> Option<(Option<Value>, &str)> {
    let mut tokens = Tokens { bytes, at: 0 };
    let (mut id, mut kind) = (None, None);
    tokens.eat(b'{')?;
    loop {
        let key = tokens.string_bytes()?;
        tokens.eat(b':')?;
        match key {
            b"id" if id.is_none() => {
                tokens.skip_whitespace();
                id = Some(if bytes.get(tokens.at) == Some(&b'"') { Value::String(tokens.string()?.to_owned()) } else { tokens.integer()? });
            }
            b"type" if kind.is_none() => kind = Some(tokens.string()?),
            _ => return None,
        }
        tokens.skip_whitespace();
        match bytes.get(tokens.at) {
            Some(b',') => tokens.at += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    tokens.at += 1;
    tokens.skip_whitespace();
    (tokens.at == bytes.len()).then_some(())?;
    Some((id, kind?))
}

/// The answer to a command no frame has, decided without the `Value` tree, the schema check
/// and the typed parse: a host sending an unknown command (a version mismatch, in a loop) costs
/// little. Only the plain case is taken here — no `\` in the line, `type` a string, `id`
/// absent or a string or non-zero integer, neither member twice — and the answer is the one the
/// full path gives; anything else (`None`) goes the full path. The form hosts write is read by
/// [`scan_plain_head`] before this is asked; other plain lines (more members, odd spacing of
/// values) are read here by [`Head`].
fn unknown_command_fast(bytes: &[u8]) -> Option<RpcFailure> {
    let head: Head = serde_json::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
    let Head { id, kind: Some(kind), repeated: false } = head else { return None };
    if known_tag(kind).is_some() {
        return None;
    }
    // The ids `decode_line` echoes as parsed (see there); others need their raw token.
    let plain = match &id {
        None | Some(Value::String(_)) => true,
        Some(Value::Number(n)) => prints_back(n),
        Some(_) => false,
    };
    plain.then(|| unknown_command(id, kind))
}

/// Whether an integer id prints back as its token from the parsed value: a non-zero integer
/// (`0` may have been `-0`; anything else outside i64/u64 is not an integer to `Number`).
fn prints_back(n: &serde_json::Number) -> bool {
    n.as_u64().is_some_and(|v| v > 0) || n.as_i64().is_some_and(|v| v < 0)
}

fn is_subprotocol(kind: &str) -> bool {
    matches!(kind, "extension_ui_response" | "host_tool_update" | "host_tool_result")
}

/// The error response for an inbound frame.
pub(super) fn failure(id: Option<Value>, command: impl Into<Cow<'static, str>>, code: RpcErrorCode, message: String) -> RpcFailure {
    RpcFailure::new(id, command, code, message)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use serde_json::json;

    fn decode(text: &str) -> Result<Inbound, Value> {
        decode_line(&InboundLine::Line(text.as_bytes().to_vec()), 1024).map_err(|r| {
            let v = serde_json::to_value(r).unwrap();
            // Every error frame is itself a valid outbound frame.
            validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &v, None).unwrap_or_else(|e| panic!("{v}: {e}"));
            v
        })
    }

    fn err(text: &str) -> Value {
        decode(text).expect_err(text)
    }

    #[test]
    fn valid_commands_and_subprotocol_frames_decode() {
        match decode(r#"{"id":7,"type":"set_model","provider":"openai","modelId":"gpt"}"#).unwrap() {
            Inbound::Command { id, command: RpcCommand::SetModel(c) } => {
                assert_eq!(id, Some(json!(7)));
                assert_eq!(c.model_id.as_str(), "gpt");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(decode(r#"{"type":"extension_ui_response","id":"u1","confirmed":true}"#), Ok(Inbound::UiResponse(_))));
        assert!(matches!(decode(r#"{"type":"host_tool_result","id":"h","result":{"content":[]}}"#), Ok(Inbound::HostToolResult(_))));
        // Duplicate keys: the last one wins, as in JSON.parse.
        assert!(matches!(decode(r#"{"id":"dup","type":"get_state","type":"get_messages"}"#), Ok(Inbound::Command { command: RpcCommand::GetMessages(_), .. })));
    }

    #[test]
    fn unparsable_lines_get_one_parse_error_without_id() {
        for line in ["{not json", "null", "42", "[]", "\"s\"", "true", "{\"type\":\"get_state\"} trailing", "{}{}"] {
            let e = err(line);
            assert_eq!((e.get("id"), &e["command"], &e["code"]), (None, &json!("parse"), &json!("parse_error")), "{line}: {e}");
            assert!(e["error"].as_str().unwrap().starts_with("Failed to parse command: "), "{e}");
        }
        let e = decode_line(&InboundLine::Line(vec![b'{', 0xFF, b'}']), 1024).unwrap_err();
        assert_eq!(e.error().message, "Failed to parse command: invalid UTF-8 at byte 1");
        let e = serde_json::to_value(decode_line(&InboundLine::TooLong { bytes: 5000, head: b"[1,".to_vec() }, 1024).unwrap_err()).unwrap();
        assert_eq!(e, json!({"type":"response","command":"parse","success":false,"error":"Frame of 5000 bytes exceeds the 1024-byte line limit; it was skipped","code":"frame_too_large"}));
    }

    #[test]
    fn the_id_is_echoed_whenever_it_can_be_read() {
        let e = err(r#"{"id":"x1","type":"does_not_exist"}"#);
        assert_eq!(e, json!({"id":"x1","type":"response","command":"does_not_exist","success":false,"error":"Unknown command: does_not_exist","code":"unknown_command"}));
        let e = err(r#"{"id":"x2"}"#);
        assert_eq!((&e["id"], &e["command"], &e["code"]), (&json!("x2"), &json!("unknown"), &json!("invalid_request")));
        let e = err(r#"{"id":3,"type":17}"#);
        assert_eq!((&e["id"], &e["command"], e["error"].as_str().unwrap()), (&json!(3), &json!("unknown"), "`type` must be a string, got a number"));
        let e = err(r#"{"id":{"k":1},"type":"get_state"}"#);
        assert_eq!((&e["id"], &e["code"]), (&json!({"k":1}), &json!("invalid_request")));
        let e = err(r#"{"id":"r","type":"response","command":"x","success":true}"#);
        assert_eq!((&e["id"], &e["code"]), (&json!("r"), &json!("unknown_command")));
    }

    /// The short path for unknown commands (`unknown_command_fast`) answers exactly as the full
    /// path does, and leaves every other line to it: the answers below are the ones the decoder
    /// gave before the short path existed (escapes, repeated members, odd ids, numbers out of
    /// range, trailing text, whitespace, a `type` that is not a string).
    #[test]
    fn unknown_commands_get_the_answer_of_the_full_path() {
        for (line, expected) in [
            (r#"{"id":7,"type":"nope"}"#, r#"{"id":7,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"type":"get_stat"}"#, r#"{"type":"response","command":"get_stat","success":false,"error":"Unknown command: get_stat (did you mean \"get_state\"?)","code":"unknown_command"}"#),
            (r#"{"id":"x","type":"nope","extra":[1,{"a":null}]}"#, r#"{"id":"x","type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":1,"type":"nope","x":1e400}"#, r#"{"id":1,"type":"response","command":"parse","success":false,"error":"Failed to parse command: number out of range at line 1 column 31","code":"parse_error"}"#),
            (r#"{"id":0,"type":"nope"}"#, r#"{"id":0,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":-3,"type":"nope"}"#, r#"{"id":-3,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":1.5,"type":"nope"}"#, r#"{"id":1.5,"type":"response","command":"nope","success":false,"error":"`id` must be a string or an integer, got a number","code":"invalid_request"}"#),
            (r#"{"type":"nope","type":"get_stat"}"#, r#"{"type":"response","command":"get_stat","success":false,"error":"Unknown command: get_stat (did you mean \"get_state\"?)","code":"unknown_command"}"#),
            (r#"{"id":1,"id":2,"type":"nope"}"#, r#"{"id":2,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":18446744073709551615,"type":"nope"}"#, r#"{"id":18446744073709551615,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":"x","type":"response"}"#, r#"{"id":"x","type":"response","command":"response","success":false,"error":"Unknown command: response","code":"unknown_command"}"#),
            (r#"{ "id" : 5 , "type" : "nope" }"#, r#"{"id":5,"type":"response","command":"nope","success":false,"error":"Unknown command: nope","code":"unknown_command"}"#),
            (r#"{"id":5,"type":"nope"} trailing"#, r#"{"id":5,"type":"response","command":"parse","success":false,"error":"Failed to parse command: trailing characters at line 1 column 24","code":"parse_error"}"#),
            (r#"{"id":[1],"type":"nope"}"#, r#"{"id":[1],"type":"response","command":"nope","success":false,"error":"`id` must be a string or an integer, got an array","code":"invalid_request"}"#),
            (r#"{"id":null,"type":"nope"}"#, r#"{"id":null,"type":"response","command":"nope","success":false,"error":"`id` must be a string or an integer, got null","code":"invalid_request"}"#),
            (r#"{"id":6,"type":17}"#, r#"{"id":6,"type":"response","command":"unknown","success":false,"error":"`type` must be a string, got a number","code":"invalid_request"}"#),
        ] {
            let expected: Value = serde_json::from_str(expected).unwrap();
            assert_eq!(serde_json::to_value(decode_line(&InboundLine::Line(line.as_bytes().to_vec()), 1024).unwrap_err()).unwrap(), expected, "{line}");
        }
        // A repeated `type`: the last one wins, as in the full parse.
        assert!(matches!(decode(r#"{"type":"nope","type":"get_state"}"#), Ok(Inbound::Command { command: RpcCommand::GetState(_), .. })));
    }

    /// The byte scanner takes the form hosts write and nothing else.
    #[test]
    fn the_scanner_reads_the_plain_form_only() {
        for (line, id, kind) in [
            (r#"{"id":7,"type":"nope"}"#, Some(json!(7)), "nope"),
            (r#"{"type":"nope","id":"x é"}"#, Some(json!("x é")), "nope"),
            (" {\t\"id\" : -3 ,\r\n\"type\":\"get_stat\" } ", Some(json!(-3)), "get_stat"),
            (r#"{"type":"nope"}"#, None, "nope"),
            (r#"{"id":18446744073709551615,"type":"n"}"#, Some(json!(u64::MAX)), "n"),
            (r#"{"id":-9223372036854775808,"type":"n"}"#, Some(json!(i64::MIN)), "n"),
        ] {
            assert_eq!(scan_plain_head(line.as_bytes()), Some((id, kind)), "{line}");
        }
        for line in [
            r#"{"id":0,"type":"nope"}"#,
            r#"{"id":-0,"type":"nope"}"#,
            r#"{"id":01,"type":"nope"}"#,
            r#"{"id":1.5,"type":"nope"}"#,
            r#"{"id":1e3,"type":"nope"}"#,
            r#"{"id":18446744073709551616,"type":"nope"}"#,
            r#"{"id":-9223372036854775809,"type":"nope"}"#,
            r#"{"id":1,"id":2,"type":"nope"}"#,
            r#"{"type":"nope","type":"x"}"#,
            r#"{"id":1,"type":"nope","x":1}"#,
            r#"{"id":1}"#,
            r#"{"id":null,"type":"nope"}"#,
            r#"{"id":1,"type":"nope"} x"#,
            r#"{"id":1,"type":"nope",}"#,
            r#"{"id":1,"type":"nope""#,
            "{\"type\":\"a\u{1}b\"}",
            "{\"type\":\"a\tb\"}",
            r#"{"type":"a\u0041"}"#,
            "{}",
            "",
        ] {
            assert_eq!(scan_plain_head(line.as_bytes()), None, "{line}");
        }
        assert_eq!(scan_plain_head(b"{\"type\":\"\xff\"}"), None, "invalid UTF-8");
    }

    /// What the byte scanner takes, the `Value` parse takes too, with the same members.
    fn scanned_agrees_with_the_value_parse(line: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        if let Some((id, kind)) = scan_plain_head(line.as_bytes()) {
            let value: Value = serde_json::from_str(line).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{line}: {e}")))?;
            let map = value.as_object().expect("an object");
            proptest::prop_assert_eq!(map.len(), 1 + usize::from(id.is_some()), "{}", line);
            proptest::prop_assert_eq!(map.get("type"), Some(&json!(kind)), "{}", line);
            proptest::prop_assert_eq!(map.get("id"), id.as_ref(), "{}", line);
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { failure_persistence: None, ..proptest::test_runner::Config::default() })]

        /// Lines assembled from the tokens the scanner looks at and the ones it must refuse.
        #[test]
        fn the_scanner_never_reads_what_the_value_parse_reads_otherwise(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "{", "}", ",", ":", " ", "\t", "\r\n", "\"id\"", "\"type\"", "\"x\"", "\"nope\"", "\"é\u{2028}\"", "\"a\u{1}\"", "\"\"",
                "1", "7", "-", "0", "-0", "01", "1.5", "1e3", "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
                "null", "true", "[1]", "{\"a\":1}", "x",
                // Whole members, so that repeated and extra members come up often.
                "\"id\":7", "\"id\":\"s\"", "\"type\":\"nope\"", "\"x\":1", "{\"id\":1,", "{\"type\":\"n\",",
            ]), 0..14),
        ) {
            scanned_agrees_with_the_value_parse(&pieces.concat())?;
        }

        /// Lines in the plain form with arbitrary ids and commands.
        #[test]
        fn plain_lines_are_scanned_as_parsed(id in proptest::option::of(proptest::prop_oneof![proptest::prelude::any::<i64>().prop_map(|n| n.to_string()), proptest::prelude::any::<u64>().prop_map(|n| n.to_string()), "\"[^\"\\\\]{0,12}\""]), kind in "[^\"\\\\]{0,16}", spaces in proptest::collection::vec("[ \t\r\n]{0,2}", 12), id_first in proptest::prelude::any::<bool>()) {
            let s = |i: usize| spaces[i].as_str();
            let id_text = id.clone().unwrap_or_default();
            let id_member = id.map(|id| format!("\"id\"{}:{}{id}", s(0), s(1)));
            let type_member = format!("\"type\"{}:{}\"{kind}\"", s(2), s(3));
            let members = match (id_member, id_first) {
                (None, _) => type_member,
                (Some(id), true) => format!("{id}{},{}{type_member}", s(4), s(5)),
                (Some(id), false) => format!("{type_member}{},{}{id}", s(4), s(5)),
            };
            let line = format!("{}{{{}{members}{}}}{}", s(6), s(7), s(8), s(9));
            scanned_agrees_with_the_value_parse(&line)?;
            // Without control bytes in its strings and with a non-zero id, the scanner takes it.
            let plain = !kind.bytes().any(|b| b < 0x20) && !id_text.bytes().any(|b| b < 0x20) && id_text != "0";
            proptest::prop_assert!(!plain || scan_plain_head(line.as_bytes()).is_some(), "{}", line);
        }
    }

    /// The `Doc` path (`decode_doc`) answers every line exactly as the `Value` path does, or
    /// leaves it to it: the lines below (odd ids, escapes, repeated keys, numbers a typed
    /// field refuses, invalid params) and every inbound line of the rpc conformance corpus.
    #[test]
    fn the_doc_path_answers_as_the_value_path() {
        let mut lines: Vec<String> = [
            r#"{"id":1,"type":"get_state"}"#,
            r#"{"type":"get_state"}"#,
            r#"{"id":"s","type":"set_thinking_level","level":"hgh"}"#,
            r#"{"id":"s","type":"set_thinking_level","level":"high"}"#,
            r#"{"id":"p","type":"prompt","message":"line\none \"quoted\" \u00e9"}"#,
            r#"{"id":"p\u0041","type":"prompt","message":"x\ny"}"#,
            r#"{"id":"p","type":"prompt","message":"x","message":"y"}"#,
            r#"{"id":"p","id":"q","type":"get_state"}"#,
            r#"{"id":0,"type":"get_state"}"#,
            r#"{"id":-4,"type":"get_state"}"#,
            r#"{"id":1.0,"type":"get_state"}"#,
            r#"{"id":18446744073709551616,"type":"get_state"}"#,
            r#"{"id":"\ufdd0x","type":"get_state"}"#,
            "{\"id\":\"\u{FDD0}x\",\"type\":\"get_state\",\"x\":\"\\n\"}",
            r#"{"id":null,"type":"get_state"}"#,
            r#"{"id":7,"type":"set_model","provider":"openai"}"#,
            r#"{"id":7,"type":"set_model","provider":"openai","modelId":"gpt","extra":1}"#,
            r#"{"id":8,"type":"get_messages_page","limit":1.0}"#,
            r#"{"id":8,"type":"get_messages_page","limit":-1}"#,
            r#"{"id":9,"type":"bash","command":"echo \"hi\""}"#,
            r#"{"type":"extension_ui_response","id":"u1","confirmed":true}"#,
            r#"{"type":"extension_ui_response","confirmed":true}"#,
            r#"{"type":"host_tool_result","id":"h","result":{"content":[]}}"#,
            r#"{"$serde_json::private::RawValue":"{\"type\":\"get_state\"}"}"#,
            r#"{"id":1,"type":"nope"}"#,
            r#"{"id":1,"type":"get_state"} x"#,
            r#"[{"id":1,"type":"get_state"}]"#,
        ]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
        for entry in std::fs::read_dir(&corpus).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("rpc-") && name.ends_with(".jsonl")) {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                if v["kind"] == "in" {
                    lines.push(v.get("raw").and_then(Value::as_str).map_or_else(|| v["frame"].to_string(), str::to_owned));
                }
            }
        }
        assert!(lines.len() > 100, "{}", lines.len());
        let mut taken = 0;
        for line in &lines {
            let escapes = line.contains('\\');
            if let Some(doc) = decode_doc(line, escapes) {
                taken += 1;
                assert_eq!(doc, decode_value(line, line.as_bytes(), escapes), "{line}");
            }
        }
        // The common lines take the `Doc` path (an escape elsewhere in the line included).
        for line in [r#"{"id":1,"type":"get_state"}"#, r#"{"id":"s","type":"set_thinking_level","level":"hgh"}"#, r#"{"id":"p","type":"prompt","message":"a\nb"}"#] {
            assert!(decode_doc(line, line.contains('\\')).is_some(), "{line}");
        }
        assert!(taken > lines.len() / 2, "{taken} of {}", lines.len());
    }

    /// Bare commands (`bare_command`) decode as the `Value` path decodes them, for every inbound
    /// tag and every id shape, the first time (the kind's sample goes the full path) and again
    /// (a kept copy under the line's id); kinds whose bare frame is invalid get its error.
    #[test]
    fn bare_commands_decode_as_the_value_path() {
        let mut kept = 0;
        for (tag, _) in inbound_union().members {
            for id in ["", r#""id":"s","#, r#""id":"x é","#, r#""id":7,"#, r#""id":-3,"#, r#""id":9223372036854775807,"#, r#""id":9223372036854775808,"#, r#""id":"","#] {
                for line in [format!(r#"{{{id}"type":"{tag}"}}"#), format!(r#"{{ "type" : "{tag}" {} }}"#, id.strip_suffix(',').map(|m| format!(", {m}")).unwrap_or_default())] {
                    for _ in 0..2 {
                        let got = decode_line(&InboundLine::Line(line.clone().into_bytes()), 1024);
                        assert_eq!(got, decode_value(&line, line.as_bytes(), false), "{line}");
                    }
                    kept += usize::from(bare_command(known_tag(tag).unwrap(), scan_plain_head(line.as_bytes()).unwrap().0.as_ref()).is_some());
                }
            }
        }
        // Most commands have no required member, so most bare lines take the kept copy.
        assert!(kept > 200, "{kept}");
    }

    #[test]
    fn invalid_fields_are_named_and_nothing_is_dispatched() {
        let e = err(r#"{"id":"m","type":"set_model","provider":"openai"}"#);
        assert_eq!(e["error"], r#"set_model: /modelId: "modelId" is a required property"#);
        assert_eq!(e["code"], "invalid_params");
        let e = err(r#"{"id":"q","type":"set_steering_mode","mode":"bogus"}"#);
        assert_eq!(e["error"], r#"set_steering_mode: /mode: "bogus" is not one of "all" or "one-at-a-time""#);
        let e = err(r#"{"id":"b","type":"bash"}"#);
        assert_eq!(e["error"], r#"bash: /command: "command" is a required property"#);
        let e = err(r#"{"type":"extension_ui_response","confirmed":true}"#);
        assert_eq!((&e["command"], &e["code"]), (&json!("extension_ui_response"), &json!("invalid_request")));
    }
}
