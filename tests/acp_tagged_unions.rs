//! The ACP schemas' internally tagged unions (`SessionUpdate`, `ContentBlock`,
//! `ToolCallContent`, …) read their tag first and then only the variant it names
//! (`src/codegen/tagged_enums.rs`): what they accept, what they refuse and how they say it are
//! serde's derive's, and a value reads back as it was written, from text and from a `Value`.

use agentwire::protocol::{acp, acp_v2};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

fn reads_back<T: Serialize + DeserializeOwned>(value: Value) {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{value}: {e}"));
    assert_eq!(serde_json::to_value(&typed).unwrap(), value);
    let from_text: T = serde_json::from_str(&value.to_string()).unwrap_or_else(|e| panic!("{value}: {e}"));
    assert_eq!(serde_json::to_value(&from_text).unwrap(), value);
}

fn refused<T: DeserializeOwned + std::fmt::Debug>(value: Value) -> String {
    serde_json::from_value::<T>(value.clone()).map(|t| panic!("{value} read as {t:?}")).unwrap_err().to_string()
}

#[test]
fn every_variant_shape_reads_back() {
    // A struct variant, one with a nested tagged union, a newtype variant.
    reads_back::<acp::SessionUpdate>(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}));
    reads_back::<acp::SessionUpdate>(json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls", "kind": "read", "status": "pending", "content": [{"type": "content", "content": {"type": "text", "text": "x"}}], "locations": [], "rawInput": {"path": "."}}));
    reads_back::<acp::ContentBlock>(json!({"type": "image", "data": "AA==", "mimeType": "image/png"}));
    reads_back::<acp::ToolCallContent>(json!({"type": "diff", "path": "/a", "oldText": "x", "newText": "y"}));
    reads_back::<acp::RequestPermissionOutcome>(json!({"outcome": "cancelled"}));
    reads_back::<acp::RequestPermissionOutcome>(json!({"outcome": "selected", "optionId": "allow"}));
    reads_back::<acp_v2::SessionUpdate>(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}}));
    reads_back::<acp_v2::McpServer>(json!({"type": "http", "name": "a", "url": "http://127.0.0.1:1/mcp", "headers": []}));
}

#[test]
fn a_tagged_union_inside_an_untagged_one_is_read_from_serdes_buffer() {
    // `IdleStateUpdate` is untagged: serde buffers it and hands `BackgroundWork` (tagged) no
    // text, so that union reads its value whole (the generator decides it from the types).
    reads_back::<acp_v2::IdleStateUpdate>(json!({"stopReason": "end_turn", "background": [{"type": "terminal", "terminalId": "t1"}, {"type": "tool_call", "toolCallId": "c1"}]}));
    reads_back::<acp_v2::StateUpdate>(json!({"state": "idle", "stopReason": "end_turn", "background": [{"type": "terminal", "terminalId": "t1"}]}));
}

#[test]
fn members_the_variant_does_not_name_are_ignored_as_the_derive_ignores_them() {
    let typed: acp::SessionUpdate = serde_json::from_value(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "later": 1})).unwrap();
    assert!(matches!(typed, acp::SessionUpdate::AgentMessageChunk { .. }), "{typed:?}");
}

#[test]
fn a_missing_unknown_or_mistyped_tag_and_a_bad_member_are_refused_by_name() {
    assert_eq!(refused::<acp::SessionUpdate>(json!({"content": {"type": "text", "text": "hi"}})), "missing field `sessionUpdate`");
    let unknown = refused::<acp::SessionUpdate>(json!({"sessionUpdate": "weather"}));
    assert!(unknown.starts_with("unknown variant `weather`, expected one of `user_message_chunk`"), "{unknown}");
    assert_eq!(refused::<acp::ContentBlock>(json!({"type": 7})), "`type` must be a string");
    assert!(refused::<acp::ContentBlock>(json!("text")).contains("ContentBlock"));
    assert_eq!(refused::<acp::ContentBlock>(json!({"type": "text"})), "missing field `text`");
    // Inside a frame, read from its text: the error names the member, not every variant.
    let e = serde_json::from_str::<acp::SessionNotification>(r#"{"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}}}"#).unwrap_err().to_string();
    assert!(e.starts_with("invalid type: integer `5`, expected a string"), "{e}");
}
