//! `agentwire bridge --serve acp` in front of a kimi-wire agent (`agentwire --mode wire` on its
//! offline model): the ACP host's view of prompts, streamed text, tool calls, approvals as
//! permission requests, cancel, the refused methods and host EOF. Every frame the bridge
//! writes is checked against the vendored ACP schema.

mod common;


use common::bridge::{assert_bash_call, assert_streamed, bash_script, slow_script, stubborn_script, updates, Bridge};
use serde_json::json;

#[test]
fn a_prompt_streams_as_agent_message_chunks_and_ends_end_turn() {
    let mut bridge = Bridge::start_wire_agent(&[json!({"text": "desserts are stressed"})], &[], &[]);
    let init = bridge.request(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let capabilities = &init.last().unwrap()["result"]["agentCapabilities"];
    assert_eq!(capabilities["loadSession"], false, "{capabilities}");
    assert!(capabilities["sessionCapabilities"].get("list").is_none(), "{capabilities}");
    let new = bridge.request(2, "session/new", json!({"cwd": "/", "mcpServers": []}));
    let session = new.last().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_streamed(&bridge.prompt(&session, "hi"), "desserts are stressed");
}

#[test]
fn a_bash_tool_call_arrives_as_tool_call_then_a_completed_update_with_its_output() {
    let mut bridge = Bridge::start_wire_agent(&bash_script("bridged-output"), &["--agent-dialect", "wire"], &[]);
    let session = bridge.open();
    assert_bash_call(&bridge.prompt(&session, "run it"), "bridged-output");
}

/// A prompt whose `bash` call the wire agent asks approval for (`--approval dangerous`),
/// the bridge's `session/request_permission` answered with `choose`.
fn approve_bash(choose: &str) -> (Vec<serde_json::Value>, Vec<String>) {
    let mut bridge = Bridge::start_wire_agent(&bash_script("approved-run"), &[], &["--approval", "dangerous"]);
    let session = bridge.open();
    bridge.prompt_choosing(&session, choose)
}

#[test]
fn a_wire_approval_is_a_permission_request_and_approve_runs_the_tool() {
    let (frames, offered) = approve_bash("Allow");
    assert_eq!(offered, ["Allow", "Always allow", "Reject", "Always reject"]);
    let asked = frames.iter().find(|f| f["method"] == "session/request_permission").unwrap();
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "b1", "the approval names the call the host saw");
    let done: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert!(done.len() == 1 && done[0]["content"][0]["content"]["text"].as_str().unwrap().contains("approved-run"), "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn reject_in_the_permission_request_keeps_the_tool_from_running() {
    let (frames, _) = approve_bash("Reject");
    let ended: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "failed").collect();
    assert_eq!(ended.len(), 1, "{frames:#?}");
    assert!(!ended[0]["content"][0]["content"]["text"].as_str().unwrap().contains("approved-run"), "the command ran: {:#}", ended[0]);
    assert!(frames.last().unwrap().get("result").is_some(), "{frames:#?}");
}

/// An editor's "interrupt and send": the prompt right behind `session/cancel` waits for the
/// cancelled one instead of being refused as busy (as agentwire's own ACP mode does).
#[test]
fn a_prompt_right_behind_a_cancel_waits_for_the_cancelled_one() {
    let mut bridge = Bridge::start_wire_agent(&stubborn_script(), &[], &[]);
    let session = bridge.open();
    bridge.assert_prompt_behind_a_cancel_waits(&session);
}

#[test]
fn session_cancel_during_a_slow_reply_ends_the_prompt_cancelled() {
    let mut bridge = Bridge::start_wire_agent(&slow_script(), &[], &[]);
    let session = bridge.open();
    bridge.assert_cancel_ends_cancelled(&session);
}

#[test]
fn what_the_wire_lacks_is_refused_naming_it() {
    let mut bridge = Bridge::start_wire_agent(&[], &[], &[]);
    let session = bridge.open();
    bridge.assert_sessions_refused(&session);
    let image = bridge.prompt_image(&session);
    assert!(image["error"]["message"].as_str().unwrap().contains("images"), "{image}");
    let again = bridge.request(7, "session/new", json!({"cwd": "/", "mcpServers": []})).pop().unwrap();
    assert!(again["error"]["message"].as_str().unwrap().contains("one session per process"), "{again}");
}

#[test]
fn host_eof_ends_the_bridge_and_its_agent_within_3_s() {
    let mut bridge = Bridge::start_wire_agent(&[], &[], &[]);
    bridge.open();
    bridge.assert_host_eof_ends_both_within_3_s();
}

#[test]
fn the_agent_dying_answers_the_prompt_in_flight_with_an_error_and_exits_non_zero() {
    let mut bridge = Bridge::start_wire_agent(&slow_script(), &[], &[]);
    let session = bridge.open();
    bridge.assert_agent_death_fails_the_acp_prompt(&session);
}

/// The slash commands of the wire agent (its `initialize` answer) are offered to the ACP host; typed, they reach the agent
/// as its own prompt text.
#[test]
fn the_agents_slash_commands_are_offered_to_the_host() {
    let mut bridge = Bridge::start_wire_agent(&[], &[], &[]);
    bridge.open();
    let offered = bridge.commands_offered();
    assert!(offered.iter().any(|c| c == "name") && offered.iter().any(|c| c == "model"), "{offered:?}");
}
