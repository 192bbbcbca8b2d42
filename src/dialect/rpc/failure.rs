//! The one error response an inbound line gets when it is not a command we act on, written
//! straight into the output batch.
//!
//! Its shape is the generated [`RpcResponse`]'s with `success:false` (`id` when the request had
//! one, `type`, `command`, `success`, `error`, `code`, in that order). Building that struct for
//! every bad line — a dozen optional fields, the command copied into a `String`, boxed, then
//! serialized field by field — cost more than deciding the answer; a host repeating an unknown
//! command (a version mismatch, in a loop) pays it per line. [`RpcFailure`] keeps only the
//! parts and writes the frame's text from them ([`RpcFailure::write_json`]); the generated type
//! stays the definition of the bytes: [`RpcFailure::to_response`] is the frame as that type,
//! its `Serialize` goes through it, and the tests below require the written text to equal the
//! generated type's serialization for every error code and every kind of id.

use std::borrow::Cow;

use serde_json::Value;

use crate::protocol::rpc_reply::{rpc_failure, RpcError};
use crate::protocol::{RpcErrorCode, RpcResponse};
use crate::transport::json::{write_json, write_str};
use crate::transport::{FrameBatch, WriterClosed};

/// A `success:false` response to one inbound line (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcFailure {
    /// The request's `id`, when it could be read (echoed byte for byte: see `transport::raw_id`).
    id: Option<Value>,
    /// The request's `type`; `parse` or `unknown` when it has none (see `decode`).
    command: Command,
    /// What went wrong.
    error: RpcError,
}

/// Where a failure's command text is.
#[derive(Debug, Clone, PartialEq)]
enum Command {
    /// Its own text (a known tag, `parse`, `unknown`, or a copy).
    Text(Cow<'static, str>),
    /// These bytes of the message (an unknown command's message names it: one allocation
    /// for both, per line of a host repeating it).
    InMessage(std::ops::Range<usize>),
}

impl RpcFailure {
    /// The failure of the line with id `id` and command `command`.
    pub fn new(id: Option<Value>, command: impl Into<Cow<'static, str>>, code: RpcErrorCode, message: String) -> Self {
        Self { id, command: Command::Text(command.into()), error: RpcError::new(code, message) }
    }

    /// The `unknown_command` failure for the command `kind`, with the closest known command
    /// when one is near: `Unknown command: <kind>[ (did you mean "<hint>"?)]`.
    pub fn unknown_command(id: Option<Value>, kind: &str, hint: Option<&str>) -> Self {
        const PREFIX: &str = "Unknown command: ";
        let mut message = String::with_capacity(PREFIX.len() + kind.len() + hint.map_or(0, |k| k.len() + 20));
        message.push_str(PREFIX);
        message.push_str(kind);
        if let Some(k) = hint {
            message.push_str(" (did you mean \"");
            message.push_str(k);
            message.push_str("\"?)");
        }
        Self { id, command: Command::InMessage(PREFIX.len()..PREFIX.len() + kind.len()), error: RpcError::new(RpcErrorCode::UnknownCommand, message) }
    }

    /// The request's `id`, when it could be read.
    pub fn id(&self) -> Option<&Value> {
        self.id.as_ref()
    }

    /// The command answered (the frame's `command`).
    pub fn command(&self) -> &str {
        match &self.command {
            Command::Text(text) => text,
            Command::InMessage(range) => &self.error.message[range.clone()],
        }
    }

    /// The error (the frame's `code` and `error`).
    pub fn error(&self) -> &RpcError {
        &self.error
    }

    /// The frame as the generated type.
    pub fn to_response(&self) -> RpcResponse {
        rpc_failure(self.id.clone(), self.command(), self.error.clone())
    }

    /// Appends the frame, with its LF, to `batch` (see [`RpcFailure::write_json`]).
    pub fn push_to(&self, batch: &mut FrameBatch) -> Result<(), WriterClosed> {
        batch.push_with(|out| self.write_json(out))
    }

    /// Appends the frame's compact JSON text (no LF) to `out`: the bytes the transport's encoder
    /// writes for [`RpcFailure::to_response`], from the parts, with no `RpcResponse` built. On
    /// error (an id that does not serialize, which a parsed id never is) `out` may hold part of
    /// the frame; the caller truncates (`FrameBatch::push_with` does).
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let command = self.command();
        out.reserve(command.len() + self.error.message.len() + 80);
        out.push(b'{');
        if let Some(id) = &self.id {
            out.extend_from_slice(b"\"id\":");
            write_json(out, id)?;
            out.push(b',');
        }
        out.extend_from_slice(b"\"type\":\"response\",\"command\":");
        write_str(out, command);
        out.extend_from_slice(b",\"success\":false,\"error\":");
        write_str(out, &self.error.message);
        out.extend_from_slice(b",\"code\":");
        match code_json(self.error.code) {
            Some(text) => out.extend_from_slice(text),
            None => write_json(out, &self.error.code)?,
        }
        out.push(b'}');
        Ok(())
    }
}

/// The JSON text of `code` (`"unknown_command"`): the generated enum's own serialization,
/// kept per code after its first use (serde's path to it cost as much as the rest of the
/// frame's fixed text). `None` past the slots kept (the caller serializes it then).
fn code_json(code: RpcErrorCode) -> Option<&'static [u8]> {
    static TEXTS: [std::sync::OnceLock<Box<[u8]>>; 16] = [const { std::sync::OnceLock::new() }; 16];
    // A fieldless enum: its discriminant only picks the slot.
    let slot = TEXTS.get(code as usize)?;
    if let Some(text) = slot.get() {
        return Some(text);
    }
    let mut text = Vec::new();
    write_json(&mut text, &code).ok()?;
    Some(slot.get_or_init(|| text.into_boxed_slice()))
}

impl serde::Serialize for RpcFailure {
    /// As the generated [`RpcResponse`] (off the hot path: tests, the fuzz target, the bridge).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_response().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::raw_id::{exact_id, marked_id};

    /// Every code the schema has: a match without a catch-all, so a new code fails to compile
    /// here until it is listed (and so checked below).
    fn every_code() -> Vec<RpcErrorCode> {
        let all = [
            RpcErrorCode::ParseError,
            RpcErrorCode::InvalidRequest,
            RpcErrorCode::UnknownCommand,
            RpcErrorCode::InvalidParams,
            RpcErrorCode::Busy,
            RpcErrorCode::NotFound,
            RpcErrorCode::Unsupported,
            RpcErrorCode::Conflict,
            RpcErrorCode::Internal,
            RpcErrorCode::FrameTooLarge,
        ];
        for code in all {
            match code {
                RpcErrorCode::ParseError
                | RpcErrorCode::InvalidRequest
                | RpcErrorCode::UnknownCommand
                | RpcErrorCode::InvalidParams
                | RpcErrorCode::Busy
                | RpcErrorCode::NotFound
                | RpcErrorCode::Unsupported
                | RpcErrorCode::Conflict
                | RpcErrorCode::Internal
                | RpcErrorCode::FrameTooLarge => {}
            }
        }
        all.to_vec()
    }

    /// The ids a failure can carry: none, plain strings and integers, strings needing escapes
    /// (and the line separators), integers beyond i64/u64, raw tokens travelling as marked
    /// strings, and ids of other types (the `invalid_request` answer echoes those too).
    fn every_id() -> Vec<Option<Value>> {
        let mut ids = vec![None];
        for raw in [r#""x1""#, "7", "-3", "0", "18446744073709551615", "-9223372036854775808", r#""a\"b\\c\n\u0001""#, "\"\u{2028}é\u{2029}\"", "18446744073709551616", "1.0e3", r#""\u0041""#, r#""\ud800""#, "1.5", "null", "true", r#"{"k":[1,"\u2028"]}"#, "[]"] {
            ids.push(Some(exact_id(raw)));
        }
        ids.push(Some(marked_id("123")));
        ids
    }

    /// The bytes the batch holds for one frame pushed with `push`.
    fn pushed(frame: &impl serde::Serialize) -> Vec<u8> {
        let mut batch = FrameBatch::default();
        batch.push(frame).unwrap();
        batch.as_bytes().to_vec()
    }

    fn written(failure: &RpcFailure) -> Vec<u8> {
        let mut batch = FrameBatch::default();
        failure.push_to(&mut batch).unwrap();
        batch.as_bytes().to_vec()
    }

    #[test]
    fn the_written_frame_is_the_generated_types_serialization() {
        let commands = ["nope", "parse", "unknown", "get_state", "a\"b\\c\u{1}\u{2028}x", "", "é😀"];
        let messages = ["Unknown command: nope", "", "set_model: /modelId: \"modelId\" is a required property", "tab\there\nnew \u{2029} line \u{7f} \u{1f}"];
        for code in every_code() {
            for id in every_id() {
                for command in commands {
                    for message in messages {
                        let failure = RpcFailure::new(id.clone(), command.to_owned(), code, message.to_owned());
                        let expected = pushed(&failure.to_response());
                        assert_eq!(String::from_utf8(written(&failure)).unwrap(), String::from_utf8(expected).unwrap(), "{failure:?}");
                        // Its `Serialize` is the generated type's.
                        assert_eq!(pushed(&failure), written(&failure));
                    }
                    for hint in [None, Some("get_state")] {
                        let unknown = RpcFailure::unknown_command(id.clone(), command, hint);
                        assert_eq!(unknown.command(), command);
                        assert_eq!(written(&unknown), pushed(&unknown.to_response()), "{unknown:?}");
                    }
                }
            }
        }
        let hinted = RpcFailure::unknown_command(None, "get_stat", Some("get_state"));
        assert_eq!(String::from_utf8(written(&hinted)).unwrap(), "{\"type\":\"response\",\"command\":\"get_stat\",\"success\":false,\"error\":\"Unknown command: get_stat (did you mean \\\"get_state\\\"?)\",\"code\":\"unknown_command\"}\n");
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { failure_persistence: None, ..proptest::test_runner::Config::default() })]

        /// Arbitrary commands and messages (any characters, the separators, controls, quotes).
        #[test]
        fn arbitrary_texts_are_written_as_the_generated_type_writes_them(command in "(?s).{0,40}", message in "(?s)[\u{0}-\u{7f}\u{2028}\u{2029}é😀]{0,60}|.{0,60}", code in 0usize..10, id in proptest::option::of(proptest::prelude::any::<i64>())) {
            let failure = RpcFailure::new(id.map(Value::from), command, every_code()[code], message);
            proptest::prop_assert_eq!(written(&failure), pushed(&failure.to_response()));
        }
    }
}
