//! Byte-exact request ids. An id is echoed exactly as the host wrote it: `18446744073709551616`
//! (beyond u64), `1.0e3`, `"\u0041"` or `"\ud800"` (a lone surrogate no Rust string can hold)
//! must come back as those very bytes, or a host matching responses by text never sees its
//! answer. serde_json's `Value` cannot hold such tokens, and the frame types carry ids as
//! `Value`, so an id whose token does not survive a round trip travels as a string holding a
//! per-process marker and the raw token; [`restore`] (called by the writer on every encoded
//! frame) puts the raw token back. The marker starts with a noncharacter and carries a random
//! nonce, so no text a host sends can forge one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use serde_json::Value;

static USED: AtomicBool = AtomicBool::new(false);

fn marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| format!("\u{FDD0}agentwire-raw-id-{}:", uuid::Uuid::new_v4().simple()))
}

/// The value standing for the raw id token `raw`: the parsed value when it serializes back to
/// exactly `raw`, else a marked string that [`restore`] turns back into `raw`.
pub fn exact_id(raw: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(raw) {
        if serde_json::to_string(&v).is_ok_and(|s| s == raw) && !v.as_str().is_some_and(|s| s.contains('\u{FDD0}')) {
            return v;
        }
    }
    marked_id(raw)
}

/// A marked string for `raw` even when its value would round-trip (for dialects whose id
/// types are narrower than JSON's, such as the wire's i64 integers).
pub fn marked_id(raw: &str) -> Value {
    USED.store(true, Ordering::Relaxed);
    Value::String(format!("{}{raw}", marker()))
}

/// What kind of JSON token `raw` is, as far as ids care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A string token.
    String,
    /// An integer token (any size).
    Integer,
    /// Anything else (a float, an object, `null`, …).
    Other,
}

/// The kind of the raw token `raw`.
pub fn id_kind(raw: &str) -> IdKind {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if raw.starts_with('"') {
        IdKind::String
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        IdKind::Integer
    } else {
        IdKind::Other
    }
}

/// Whether any marked id was made in this process (frames need [`restore`] only then).
pub fn in_use() -> bool {
    USED.load(Ordering::Relaxed)
}

/// `text` (one encoded frame) with every marked id replaced by its raw token.
pub fn restore(text: String) -> String {
    if !USED.load(Ordering::Relaxed) {
        return text;
    }
    let marker = marker();
    let mut text = text;
    let mut from = 0;
    while let Some(at) = text[from..].find(marker).map(|i| i + from) {
        // The marker opens a JSON string: `"` marker escaped-raw `"`.
        let Some(open) = at.checked_sub(1).filter(|&o| text.as_bytes()[o] == b'"') else { break };
        let bytes = text.as_bytes();
        let mut j = at + marker.len();
        while j < bytes.len() && bytes[j] != b'"' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        let Some(decoded) = text.get(open..=j).and_then(|token| serde_json::from_str::<String>(token).ok()) else { break };
        let raw = decoded[marker.len()..].to_owned();
        text.replace_range(open..=j, &raw);
        from = open + raw.len();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_do_not_survive_a_round_trip_are_restored_byte_for_byte() {
        for raw in ["\"p1\"", "7", "-3"] {
            assert_eq!(serde_json::to_string(&exact_id(raw)).unwrap(), raw, "plain ids stay plain values");
        }
        for raw in ["18446744073709551616", "1.0e3", "\"\\u0041\"", "\"\\ud800\"", "\"a\\/b\""] {
            let frame = serde_json::json!({"id": exact_id(raw), "type": "response", "text": "x"});
            assert_eq!(restore(serde_json::to_string(&frame).unwrap()), format!("{{\"id\":{raw},\"type\":\"response\",\"text\":\"x\"}}"));
        }
        assert_eq!((id_kind("\"x\""), id_kind("-12345678901234567890"), id_kind("1.5"), id_kind("{}")), (IdKind::String, IdKind::Integer, IdKind::Other, IdKind::Other));
    }
}
