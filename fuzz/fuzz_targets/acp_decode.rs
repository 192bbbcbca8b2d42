//! The ACP inbound decoder on arbitrary bytes: it must never panic, and the error it returns
//! for a bad line must be a JSON-RPC 2.0 error frame with an `id` member.
#![no_main]

use agentwire::dialect::acp::decode_acp_line;
use agentwire::transport::InboundLine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A leading 0xFF byte makes the rest an oversized line's head, the other decoder path.
    let line = match data.split_first() {
        Some((0xFF, head)) => InboundLine::TooLong { bytes: u64::MAX, head: head.to_vec() },
        _ => InboundLine::Line(data.to_vec()),
    };
    if let Err(frame) = decode_acp_line(line) {
        let frame = serde_json::to_value(&*frame).expect("an error frame serializes");
        assert_eq!(frame["jsonrpc"], "2.0", "{frame}");
        assert!(frame.get("id").is_some(), "an error frame always has an id member: {frame}");
        assert!(frame["error"]["code"].is_i64(), "{frame}");
        assert!(frame["error"]["message"].is_string(), "{frame}");
    }
});
