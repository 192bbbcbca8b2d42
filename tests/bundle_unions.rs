//! The schema's tagged unions (`SessionEntry`, `AgentMessage`, the wire frames and events) read
//! from text: the tag first, then the member straight from the same text. What they answer is
//! what `from_value` answers (the reading they replace, from a `Value` tree), values and error
//! texts alike, repeated keys included; and the unions serde hands its own buffers (inside an
//! untagged enum) still read, from a `Value`.

use agentwire::protocol::*;
use serde_json::Value;

/// `from_text(text)` and `from_value(text as a Value)` give the same answer.
fn same_answer<T: std::fmt::Debug + PartialEq>(text: &str, from_text: fn(&str) -> Result<T, serde_json::Error>, from_value: fn(Value) -> Result<T, serde_json::Error>) {
    let value: Value = serde_json::from_str(text).unwrap();
    let ours = from_text(text).map_err(|e| e.to_string());
    let theirs = from_value(value).map_err(|e| e.to_string());
    assert_eq!(ours, theirs, "{text}");
}

const USER: &str = r#"{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}"#;
const ASSISTANT: &str = r#"{"role":"assistant","content":[{"type":"text","text":"yes"}],"api":"openai-completions","provider":"fake","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#;

fn entry(message: &str) -> String {
    format!(r#"{{"type":"message","id":"0000000a","parentId":null,"timestamp":"2026-11-23T00:00:00.000Z","message":{message}}}"#)
}

#[test]
fn session_entries_read_from_text_answer_as_from_value() {
    let mut cases = vec![
        entry(USER),
        entry(ASSISTANT),
        // The tag twice: the text reading refuses it (the member declares `type`), the `Value`
        // keeps the last one.
        entry(USER).replacen(r#""type":"message""#, r#""type":"message","type":"custom""#, 1),
        entry(USER).replacen(r#""type":"message""#, r#""type":"custom","type":"message""#, 1),
        // The same one level down, in the message's own union.
        entry(&USER.replacen(r#""role":"user""#, r#""role":"user","role":"assistant""#, 1)),
        entry(&ASSISTANT.replacen(r#""role":"assistant""#, r#""role":"custom","role":"assistant""#, 1)),
        // A member's field repeated, and members the schema does not declare.
        entry(USER).replacen(r#""id":"0000000a""#, r#""id":"0000000a","id":"0000000b""#, 1),
        entry(USER).replacen(r#""id":"0000000a""#, r#""id":"0000000a","later":{"x":1},"later":2"#, 1),
        // Invalid members, tags and shapes.
        entry(USER).replacen(r#""id":"0000000a""#, r#""id":5"#, 1),
        entry(&USER.replacen(r#""timestamp":1"#, r#""timestamp":"soon""#, 1)),
        entry(USER).replacen(r#""type":"message""#, r#""type":"nope""#, 1),
        entry(USER).replacen(r#""type":"message""#, r#""type":7"#, 1),
        entry(USER).replacen(r#""type":"message","#, "", 1),
        entry(&USER.replacen(r#""role":"user""#, r#""role":"robot""#, 1)),
        entry(r#""plain""#),
        r#"{"type":"message"}"#.to_owned(),
        r#"{"type":"mess\u0061ge","id":"0000000a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#.to_owned(),
        "[1,2]".to_owned(),
        "\"message\"".to_owned(),
        "null".to_owned(),
    ];
    cases.push(r#"{"type":"model_change","id":"0000000c","parentId":"0000000a","timestamp":"t","provider":"fake","modelId":"m"}"#.to_owned());
    for text in &cases {
        same_answer(text, SessionEntry::from_text, SessionEntry::from_value);
        // Through serde (a field of a struct, a line of a file) the answer is the same one.
        let through_serde = serde_json::from_str::<SessionEntry>(text).ok();
        assert_eq!(through_serde, SessionEntry::from_value(serde_json::from_str(text).unwrap()).ok(), "{text}");
    }
    for message in [USER, ASSISTANT] {
        same_answer(message, AgentMessage::from_text, AgentMessage::from_value);
    }
}

#[test]
fn unions_inside_untagged_enums_read_from_serde_buffers() {
    // `WireInboundFrame` and `WireOutboundFrame` are untagged: serde buffers each frame and
    // hands the buffer to the unions inside (the request's method, the events, content parts),
    // which have no text to read there.
    let examples = [
        (include_str!("../schema/examples/wire-methods.jsonl"), true),
        (include_str!("../schema/examples/wire-events.jsonl"), false),
        (include_str!("../schema/examples/wire-agent-requests.jsonl"), false),
    ];
    let mut read = 0;
    for (lines, inbound) in examples {
        for line in lines.lines().filter(|l| !l.trim().is_empty()) {
            let value: Value = serde_json::from_str(line).unwrap();
            if inbound && value.get("method").is_some() {
                let frame: WireInboundFrame = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
                assert_eq!(serde_json::to_value(&frame).unwrap(), value, "{line}");
                read += 1;
            } else if !inbound {
                let frame: WireOutboundFrame = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
                assert_eq!(serde_json::to_value(&frame).unwrap(), value, "{line}");
                read += 1;
            }
        }
    }
    assert!(read > 30, "only {read} example frames read");
}
