//! The dialects: each is a projection of the agent core onto one protocol. A dialect decodes
//! its inbound lines, implements its generated handler trait by calling the core, projects the
//! core's [`crate::agent::AgentEvent`]s onto its generated frame types with an exhaustive match,
//! and answers the core's [`crate::agent::HostPort`] questions with its own requests. Adding a
//! dialect is adding one module here (see `docs/architecture.md`).
//!
//! - [`rpc`]: the pi / omp JSONL RPC dialect.
//! - [`wire`]: the kimi-cli JSON-RPC 2.0 wire dialect.
//! - [`acp`]: the Agent Client Protocol (agent side), for Zed and other ACP editors.
//!
//! [`peek_id_and_type`] serves both: an oversized line's error still carries its id.
//! [`HostRequests`] is every dialect's table of requests waiting for the host, closed when the
//! host's input ends (nobody can answer them then; the ports fail closed).

pub mod acp;
pub mod pending;
pub mod rpc;
pub mod wire;

pub use pending::HostRequests;

use crate::transport::raw_id::{exact_id, id_kind, IdKind};

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
    use super::peek_id_and_type;
    use serde_json::json;

    #[test]
    fn reads_id_and_type_from_a_cut_off_object() {
        assert_eq!(peek_id_and_type(br#"{"id":"p1","type":"prompt","message":"aaaaaaaa"#), (Some(json!("p1")), Some("prompt".into())));
        assert_eq!(peek_id_and_type(br#" { "type" : "prompt", "images":[{"data":"x\"}"}], "id": 7, "message":"#), (Some(json!(7)), Some("prompt".into())));
        assert_eq!(peek_id_and_type(br#"{"message":"aaaa"#), (None, None));
        assert_eq!(peek_id_and_type(br#"{"id":{"x":1},"type":"a"}"#), (None, Some("a".into())));
        assert_eq!(peek_id_and_type(b"[1,2"), (None, None));
        assert_eq!(peek_id_and_type(br#"{"jsonrpc":"2.0","id":"w1","method":"prompt","params":{"user_input":"xx"#), (Some(json!("w1")), None));
        assert_eq!(super::raw_id(br#"{"id": 18446744073709551616 , "deep":[[[1e400]]]}"#).as_deref(), Some("18446744073709551616"));
    }
}
