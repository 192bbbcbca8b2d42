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
    if let Some(plain) = plain_id(raw) {
        return plain;
    }
    if let Ok(v) = serde_json::from_str::<Value>(raw) {
        if serde_json::to_string(&v).is_ok_and(|s| s == raw) && !v.as_str().is_some_and(|s| s.contains('\u{FDD0}')) {
            return v;
        }
    }
    marked_id(raw)
}

/// Whether `raw` is an id as hosts nearly always write one — a string without escapes, or an
/// integer within i64/u64 with no sign or zero that would not survive — so that its parsed
/// value prints back as exactly `raw` without parsing and printing it to check.
fn is_plain_id(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    match bytes.first() {
        Some(b'"') => {
            let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else { return false };
            !inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) && !inner.contains('\u{FDD0}')
        }
        Some(b'1'..=b'9') => bytes.iter().all(u8::is_ascii_digit) && raw.parse::<u64>().is_ok(),
        Some(b'-') => bytes.len() > 1 && bytes[1] != b'0' && bytes[1..].iter().all(u8::is_ascii_digit) && raw.parse::<i64>().is_ok(),
        Some(b'0') => bytes.len() == 1,
        _ => false,
    }
}

/// The value of a plain id (see [`is_plain_id`]).
fn plain_id(raw: &str) -> Option<Value> {
    if !is_plain_id(raw) {
        return None;
    }
    match raw.strip_prefix('"') {
        Some(inner) => Some(Value::String(inner[..inner.len() - 1].to_owned())),
        None => serde_json::from_str(raw).ok(),
    }
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

/// Restores the marked ids (see [`restore`]) in the frame encoded at `buf[from..]`.
pub fn restore_in(buf: &mut Vec<u8>, from: usize) {
    if !USED.load(Ordering::Relaxed) {
        return;
    }
    // The encoder wrote valid UTF-8 (JSON text); anything else is left alone.
    let Ok(text) = std::str::from_utf8(&buf[from..]) else { return };
    if !text.contains(marker()) {
        return;
    }
    let restored = restore(text.to_owned());
    buf.truncate(from);
    buf.extend_from_slice(restored.as_bytes());
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

/// The top-level `id` and `type` of an object whose text was cut short (an oversized line keeps
/// only its head) or that the full parser rejects (nested too deep, `1e400`, a lone surrogate):
/// scanned key by key until the text runs out, so an error frame can still carry the request
/// id. `id` is a string or an integer token, kept byte-exact
/// ([`crate::transport::raw_id::exact_id`]); anything unreadable is `None`.
pub fn peek_id_and_type(head: &[u8]) -> (Option<serde_json::Value>, Option<String>) {
    let (raw, kind) = peek_raw_id_and_type(head);
    let id = raw.filter(|r| id_kind(r) != IdKind::Other).map(|r| exact_id(&r));
    (id, kind)
}

/// The raw token of the top-level `id` of a JSON object's text (the last one, as parsers keep).
pub fn raw_id(text: &[u8]) -> Option<String> {
    peek_raw_id_and_type(text).0
}

fn peek_raw_id_and_type(head: &[u8]) -> (Option<String>, Option<String>) {
    let s = head;
    let ws = |mut i: usize| {
        while s.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    // The end (exclusive) of the string starting at `i` (a quote), if complete.
    let string_end = |i: usize| -> Option<usize> {
        let mut j = i + 1;
        while j < s.len() {
            match s[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    };
    // The end of the value starting at `i`, if complete.
    let value_end = |i: usize| -> Option<usize> {
        let mut depth = 0usize;
        let mut j = i;
        while j < s.len() {
            match s[j] {
                b'"' => {
                    j = string_end(j)?;
                    if depth == 0 {
                        return Some(j);
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                b',' | b'}' | b']' if depth == 0 => return Some(j),
                _ => {}
            }
            j += 1;
        }
        None
    };
    let (mut id, mut kind) = (None, None);
    let mut i = ws(0);
    if s.get(i) != Some(&b'{') {
        return (None, None);
    }
    i = ws(i + 1);
    while s.get(i) == Some(&b'"') {
        let Some(key_end) = string_end(i) else { break };
        let key: Option<String> = std::str::from_utf8(&s[i..key_end]).ok().and_then(|k| serde_json::from_str(k).ok());
        i = ws(key_end);
        if s.get(i) != Some(&b':') {
            break;
        }
        i = ws(i + 1);
        let Some(end) = value_end(i) else { break };
        let token = std::str::from_utf8(&s[i..end]).ok().map(str::trim_end);
        match (key.as_deref(), token) {
            (Some("id"), Some(t)) => id = Some(t.to_owned()),
            (Some("type"), Some(t)) => kind = serde_json::from_str::<String>(t).ok().or(kind),
            _ => {}
        }
        i = ws(end);
        if s.get(i) != Some(&b',') {
            break;
        }
        i = ws(i + 1);
    }
    (id, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_that_do_not_survive_a_round_trip_are_restored_byte_for_byte() {
        for raw in ["\"p1\"", "7", "-3"] {
            assert_eq!(serde_json::to_string(&exact_id(raw)).unwrap(), raw, "plain ids stay plain values");
        }
        for raw in ["18446744073709551616", "1.0e3", "\"\\u0041\"", "\"\\ud800\"", "\"a\\/b\""] {
            let frame = serde_json::json!({"id": exact_id(raw), "type": "response", "text": "x"});
            assert_eq!(restore(serde_json::to_string(&frame).unwrap()), format!("{{\"id\":{raw},\"type\":\"response\",\"text\":\"x\"}}"));
        }
        // The shortcut agrees with the round trip wherever it answers.
        for raw in ["\"p1\"", "\"\"", "\"é\"", "7", "0", "-3", "18446744073709551615", "-9223372036854775808", "\"a\\nb\"", "-0", "007", "1.0", "18446744073709551616", "-9223372036854775809", "\"\u{FDD0}\""] {
            if let Some(v) = plain_id(raw) {
                assert_eq!(serde_json::to_string(&v).unwrap(), raw, "{raw}");
            }
        }
        assert!(plain_id("\"a\\nb\"").is_none() && plain_id("-0").is_none() && plain_id("007").is_none() && plain_id("18446744073709551616").is_none());
        assert_eq!((id_kind("\"x\""), id_kind("-12345678901234567890"), id_kind("1.5"), id_kind("{}")), (IdKind::String, IdKind::Integer, IdKind::Other, IdKind::Other));
    }

    #[test]
    fn reads_id_and_type_from_a_cut_off_object() {
        assert_eq!(peek_id_and_type(br#"{"id":"p1","type":"prompt","message":"aaaaaaaa"#), (Some(json!("p1")), Some("prompt".into())));
        assert_eq!(peek_id_and_type(br#" { "type" : "prompt", "images":[{"data":"x\"}"}], "id": 7, "message":"#), (Some(json!(7)), Some("prompt".into())));
        assert_eq!(peek_id_and_type(br#"{"message":"aaaa"#), (None, None));
        assert_eq!(peek_id_and_type(br#"{"id":{"x":1},"type":"a"}"#), (None, Some("a".into())));
        assert_eq!(peek_id_and_type(b"[1,2"), (None, None));
        assert_eq!(peek_id_and_type(br#"{"jsonrpc":"2.0","id":"w1","method":"prompt","params":{"user_input":"xx"#), (Some(json!("w1")), None));
        assert_eq!(raw_id(br#"{"id": 18446744073709551616 , "deep":[[[1e400]]]}"#).as_deref(), Some("18446744073709551616"));
    }
}
