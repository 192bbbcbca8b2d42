//! `agentwire bridge --serve acp` in front of a JSONL agent (`agentwire --mode rpc` on its
//! offline model): the ACP host's view of prompts, streamed text, tool calls, cancel, the
//! refused methods, host EOF and the agent dying. Every frame the bridge writes is checked
//! against the vendored ACP schema.

mod common;


use common::bridge::{assert_bash_call, assert_streamed, bash_script, slow_script, stubborn_script, updates, Bridge};
use serde_json::json;

#[test]
fn a_prompt_streams_as_agent_message_chunks_and_ends_end_turn() {
    let mut bridge = Bridge::start(&[json!({"text": "desserts are stressed"})], &[]);
    let session = bridge.open();
    assert_streamed(&bridge.prompt(&session, "hi"), "desserts are stressed");
}

#[test]
fn the_dialect_can_be_given_instead_of_detected() {
    let mut bridge = Bridge::start(&[json!({"text": "given"})], &["--agent-dialect", "rpc"]);
    let session = bridge.open();
    let frames = bridge.request(3, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}));
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn a_bash_tool_call_arrives_as_tool_call_then_a_completed_update_with_its_output() {
    let mut bridge = Bridge::start(&bash_script("bridged-output"), &[]);
    let session = bridge.open();
    assert_bash_call(&bridge.prompt(&session, "run it"), "bridged-output");
}

/// An editor's "interrupt and send": the prompt right behind `session/cancel` waits for the
/// cancelled one instead of being refused as busy (as agentwire's own ACP mode does).
#[test]
fn a_prompt_right_behind_a_cancel_waits_for_the_cancelled_one() {
    let mut bridge = Bridge::start(&stubborn_script(), &[]);
    let session = bridge.open();
    bridge.assert_prompt_behind_a_cancel_waits(&session);
}

#[test]
fn session_cancel_during_a_slow_reply_ends_the_prompt_cancelled() {
    let mut bridge = Bridge::start(&slow_script(), &[]);
    let session = bridge.open();
    bridge.assert_cancel_ends_cancelled(&session);
}

#[test]
fn what_the_jsonl_agent_lacks_is_refused_naming_it_and_images_are_carried() {
    let mut bridge = Bridge::start(&[], &[]);
    let session = bridge.open();
    bridge.assert_sessions_refused(&session);
    // The JSONL dialect carries images to the agent (whose offline model takes none, and says so).
    let answer = bridge.prompt_image(&session);
    assert!(answer.get("result").is_some() || answer["error"]["message"].as_str().is_some_and(|m| m.contains("image")), "{answer}");
}

#[test]
fn host_eof_ends_the_bridge_and_its_agent_within_3_s() {
    let mut bridge = Bridge::start(&[], &[]);
    bridge.open();
    bridge.assert_host_eof_ends_both_within_3_s();
}

#[test]
fn the_agent_dying_answers_the_prompt_in_flight_with_an_error_and_exits_non_zero() {
    let mut bridge = Bridge::start(&slow_script(), &[]);
    let session = bridge.open();
    bridge.assert_agent_death_fails_the_acp_prompt(&session);
}

/// Runs a prompt whose `bash` call the agent asks approval for (`--approval dangerous`),
/// answering the bridge's `session/request_permission` with the option named `choose`; the
/// frames and the options offered.
fn approve_bash(choose: &str) -> (Vec<serde_json::Value>, Vec<String>) {
    let mut bridge = Bridge::start_agent("acp", &bash_script("approved-run"), &[], &["--approval", "dangerous"]);
    let session = bridge.open();
    bridge.prompt_choosing(&session, choose)
}

#[test]
fn an_approval_the_agent_asks_is_a_permission_request_and_approve_runs_the_tool() {
    let (frames, offered) = approve_bash("Allow");
    assert_eq!(offered, ["Allow", "Always allow", "Reject", "Always reject"]);
    let done: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert!(done.len() == 1 && done[0]["content"][0]["content"]["text"].as_str().unwrap().contains("approved-run"), "{frames:#?}");
}

#[test]
fn deny_in_the_permission_request_keeps_the_tool_from_running() {
    let (frames, _) = approve_bash("Reject");
    let ended: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "failed").collect();
    assert_eq!(ended.len(), 1, "{frames:#?}");
    assert!(!ended[0]["content"][0]["content"]["text"].as_str().unwrap().contains("approved-run"), "the command ran: {:#}", ended[0]);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

/// The slash commands of the JSONL agent (`get_commands`) are offered to the ACP host; typed, they reach the agent
/// as its own prompt text.
#[test]
fn the_agents_slash_commands_are_offered_to_the_host() {
    let mut bridge = Bridge::start(&[], &[]);
    bridge.open();
    let offered = bridge.commands_offered();
    assert!(offered.iter().any(|c| c == "name") && offered.iter().any(|c| c == "model"), "{offered:?}");
}

/// An editor's model and thinking pickers drive the JSONL agent: `session/new` offers the
/// agent's model and thinking levels as config options, and choosing a level sets the agent's.
#[test]
fn the_agents_model_and_thinking_level_are_config_options() {
    let mut bridge = Bridge::start(&[], &[]);
    bridge.request(1, "initialize", serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let new = bridge.request(2, "session/new", serde_json::json!({"cwd": "/", "mcpServers": []}));
    let result = &new.last().unwrap()["result"];
    let option = |options: &serde_json::Value, id: &str| options.as_array().unwrap().iter().find(|o| o["id"] == id).cloned().unwrap_or_else(|| panic!("no {id}: {options}"));
    assert_eq!(option(&result["configOptions"], "model")["currentValue"], "agentwire/offline", "{result}");
    let thinking = option(&result["configOptions"], "thought_level");
    assert!(thinking["options"].as_array().unwrap().iter().any(|o| o["value"] == "high"), "{thinking}");
    let session = result["sessionId"].as_str().unwrap();
    let set = bridge.request(3, "session/set_config_option", serde_json::json!({"sessionId": session, "configId": "thought_level", "value": "high"}));
    let answer = set.last().unwrap();
    assert_eq!(option(&answer["result"]["configOptions"], "thought_level")["currentValue"], "high", "{answer}");
}
