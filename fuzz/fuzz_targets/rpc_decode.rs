//! The rpc dialect's inbound decoder on arbitrary bytes: it must never panic, and the error
//! response it returns for a bad line must itself be a valid outbound frame (the host validates
//! what it reads), and a readable string or integer id comes back byte for byte.
#![no_main]

use agentwire::dialect::rpc::{decode_line, Inbound};
use agentwire::protocol::validate::{validator, SchemaDialect, Direction};
use agentwire::transport::InboundLine;
use agentwire::transport::raw_id::{id_kind, restore, IdKind};
use libfuzzer_sys::fuzz_target;

/// The raw token of the line's top-level `id` when the whole line is JSON and the id is a
/// string or an integer (the ids every dialect must echo byte for byte).
fn readable_raw_id(data: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    // Only objects: serde would read a struct from an array too.
    if data.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    let top: Top = serde_json::from_slice(data).ok()?;
    let raw = top.id?.get().to_owned();
    (id_kind(&raw) != IdKind::Other).then_some(raw)
}

/// The id token of an encoded frame, as the writer puts it on the wire.
fn written_id(frame: &impl serde::Serialize) -> Option<String> {
    let text = restore(serde_json::to_string(frame).expect("a frame serializes"));
    readable_raw_id(text.as_bytes())
}

/// The line limit the decoder is told about (only used in its message).
const MAX_LINE_BYTES: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // A leading 0xFF byte makes the rest an oversized line's head, the other decoder path.
    let line = match data.split_first() {
        Some((0xFF, head)) => InboundLine::TooLong { bytes: MAX_LINE_BYTES as u64 + 1, head: head.to_vec() },
        _ => InboundLine::Line(data.to_vec()),
    };
    let expected_id = match &line {
        InboundLine::Line(bytes) => readable_raw_id(bytes),
        InboundLine::TooLong { .. } => None,
    };
    match decode_line(&line, MAX_LINE_BYTES) {
        Err(response) => {
            let frame = serde_json::to_value(&response).expect("an error response serializes");
            if let Err(e) = validator().validate_frame(SchemaDialect::Rpc, Direction::Outbound, &frame, None) {
                panic!("invalid error response {frame}: {e}");
            }
            if let Some(raw) = expected_id {
                assert_eq!(written_id(&response), Some(raw), "the error response echoes the id byte for byte");
            }
        }
        Ok(Inbound::Command { id, .. }) => {
            if let Some(raw) = expected_id {
                assert_eq!(id.as_ref().and_then(|id| written_id(&serde_json::json!({ "id": id }))), Some(raw), "the command keeps the id byte for byte");
            }
        }
        Ok(Inbound::UiResponse(_) | Inbound::HostToolUpdate(_) | Inbound::HostToolResult(_) | Inbound::Chunk(_)) => {}
    }
});
