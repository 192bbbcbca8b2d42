//! `agentwire bridge --serve wire` in front of a JSONL agent (`agentwire --mode rpc` on its
//! offline model), as a kimi wire host sees it; every frame is checked against the wire schema.

mod common;

use std::time::{Duration, Instant};

use common::bridge::{Bridge, TIMEOUT};
use serde_json::{json, Value};

fn events(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["method"] == "event").map(|f| &f["params"]).collect()
}

#[test]
fn a_prompt_is_one_turn_of_content_parts_that_finishes() {
    let mut bridge = Bridge::start_serving("wire", &[json!({"text": "desserts"})], &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    let frames = bridge.request(2, "prompt", json!({"user_input": "stressed"}));
    let events = events(&frames);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!((kinds[0], kinds[1], *kinds.last().unwrap()), ("TurnBegin", "StepBegin", "TurnEnd"), "{kinds:?}");
    let text: String = events.iter().filter(|e| e["type"] == "ContentPart").map(|e| e["payload"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "desserts");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn a_tool_call_is_a_tool_call_then_its_tool_result() {
    let script = [json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo wired-output"}}]}), json!({"text": "done"})];
    let mut bridge = Bridge::start_serving("wire", &script, &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    let frames = bridge.request(2, "prompt", json!({"user_input": "run it"}));
    let events = events(&frames);
    let call = events.iter().find(|e| e["type"] == "ToolCall").expect("a ToolCall");
    assert_eq!((&call["payload"]["id"], &call["payload"]["function"]["name"]), (&json!("b1"), &json!("bash")));
    let result = events.iter().find(|e| e["type"] == "ToolResult").expect("a ToolResult");
    assert_eq!(result["payload"]["tool_call_id"], "b1");
    assert!(result["payload"]["return_value"]["output"].as_str().unwrap().contains("wired-output"), "{result}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn cancel_during_a_slow_reply_ends_the_turn_cancelled() {
    let mut bridge = Bridge::start_serving("wire", &[json!({"text": "a slow reply that takes a long time", "chunkSize": 1, "delayMs": 200})], &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"user_input": "hi"}}));
    loop {
        if bridge.next().expect("a part")["params"]["type"] == "ContentPart" {
            break;
        }
    }
    let asked = Instant::now();
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "cancel", "params": {}}));
    let frames = bridge.until_answer(2);
    assert_eq!(frames.last().unwrap()["result"]["status"], "cancelled", "{frames:#?}");
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert!(asked.elapsed() < TIMEOUT);
}

/// The wire front keeps its own log and plan-mode flag, whatever agent is behind it: `replay`
/// sends back what this session's host was sent, and `set_plan_mode` is acknowledged with a
/// `StatusUpdate`.
#[test]
fn replay_and_plan_mode_are_served_by_the_front() {
    let mut bridge = Bridge::start_serving("wire", &[json!({"text": "logged"})], &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    bridge.request(2, "prompt", json!({"user_input": "hi"}));
    let replay = bridge.request(3, "replay", json!({}));
    let answer = replay.last().unwrap();
    assert_eq!(answer["result"]["status"], "finished", "{answer}");
    assert!(answer["result"]["events"].as_u64().unwrap() > 0, "{replay:#?}");
    assert!(replay.iter().any(|f| f["params"]["payload"]["text"] == "logged"), "the streamed text is replayed: {replay:#?}");
    let plan = bridge.request(4, "set_plan_mode", json!({"enabled": true}));
    assert_eq!(plan.last().unwrap()["result"]["plan_mode"], true, "{plan:#?}");
}

/// A prompt whose `bash` call the agent asks approval for (`--approval dangerous`), the host
/// declaring `supports_question` and answering the bridge's `QuestionRequest` with `choose`:
/// the frames and the labels offered.
fn approve_bash(choose: &str) -> (Vec<Value>, Vec<String>) {
    let script = [json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo approved-run"}}]}), json!({"text": "done"})];
    let mut bridge = Bridge::start_agent("wire", &script, &[], &["--approval", "dangerous"]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10", "capabilities": {"supports_question": true}}));
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"user_input": "run it"}}));
    let (mut frames, mut offered) = (Vec::new(), Vec::new());
    loop {
        let frame = bridge.next().expect("a frame");
        if frame["method"] == "request" && frame["params"]["type"] == "QuestionRequest" {
            let question = &frame["params"]["payload"]["questions"][0];
            offered = question["options"].as_array().unwrap().iter().map(|o| o["label"].as_str().unwrap().to_owned()).collect();
            let answers = json!({question["question"].as_str().unwrap(): choose});
            bridge.send(json!({"jsonrpc": "2.0", "id": frame["id"], "result": {"request_id": frame["params"]["payload"]["id"], "answers": answers}}));
        }
        let done = frame["id"] == json!(2) && frame.get("method").is_none();
        frames.push(frame);
        if done {
            return (frames, offered);
        }
    }
}

#[test]
fn an_approval_the_agent_asks_is_a_question_and_approve_runs_the_tool() {
    let (frames, offered) = approve_bash("Approve");
    assert_eq!(offered, ["Approve", "Deny"]);
    let result = events(&frames).into_iter().find(|e| e["type"] == "ToolResult").cloned().expect("a ToolResult");
    assert!(result["payload"]["return_value"]["output"].as_str().unwrap().contains("approved-run"), "{result}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}

#[test]
fn deny_keeps_the_tool_from_running() {
    let (frames, _) = approve_bash("Deny");
    let result = events(&frames).into_iter().find(|e| e["type"] == "ToolResult").cloned().expect("a ToolResult");
    assert_eq!(result["payload"]["return_value"]["is_error"], true, "{result}");
    assert!(!result["payload"]["return_value"]["output"].as_str().unwrap().contains("approved-run"), "{result}");
}

/// Sends `signal` to the bridge itself (not to its agent).
fn signal_bridge(bridge: &Bridge, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions; the pid is the test's live child.
    assert_eq!(unsafe { libc::kill(i32::try_from(bridge.child.id()).unwrap(), signal) }, 0);
}

#[test]
fn sigint_is_passed_on_to_the_agent() {
    // The bridge only passes SIGINT on: the agent (`agentwire --mode rpc`) exits on it, and the
    // bridge, its agent gone, exits 1.
    let mut bridge = Bridge::start_serving("wire", &[json!({"text": "hi"})], &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    let sent = Instant::now();
    signal_bridge(&bridge, libc::SIGINT);
    let status = bridge.exit_within(sent, TIMEOUT, "SIGINT");
    assert_eq!(status.code(), Some(1), "{status}");
}

#[test]
fn sigterm_ends_the_bridge_and_its_agent() {
    let mut bridge = Bridge::start_serving("wire", &[json!({"text": "hi"})], &[]);
    bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    let agent = bridge.agent_pid();
    let sent = Instant::now();
    signal_bridge(&bridge, libc::SIGTERM);
    let status = bridge.exit_within(sent, Duration::from_secs(3), "SIGTERM");
    assert!(status.code().is_some(), "the bridge handles SIGTERM: {status}");
    while common::bridge::running(agent) {
        assert!(sent.elapsed() < Duration::from_secs(3), "the agent still runs 3 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}
