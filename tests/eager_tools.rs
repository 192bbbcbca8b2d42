//! A tool call starts as soon as its arguments are complete (issue 25): while the assistant
//! message still streams, once the provider has moved on to the next call. Approvals stay in
//! call order, results in call order, a call whose arguments do not parse fails as before, and
//! abort and steer keep their meaning. Driven through rpc with the offline model's
//! `argumentChunks` and `delayMs`; the kimi wire order is replayed in `tests/conformance.rs`.
//! rpc reports in its own order whatever ran early: pi and omp hosts get the assistant's
//! `message_end` before any `tool_execution_*` frame.

mod common;

use std::time::{Duration, Instant};

use common::{text_reply, types, Agent};
use serde_json::{json, Value};

/// A tool call of the offline model's script streamed in the given argument deltas.
fn call(id: &str, command: &str, chunks: &[&str]) -> Value {
    json!({"id": id, "name": "bash", "arguments": {"command": command}, "argumentChunks": chunks})
}

/// Position of the first frame matching `pred`.
fn position(frames: &[Value], what: &str, pred: impl Fn(&Value) -> bool) -> usize {
    frames.iter().position(pred).unwrap_or_else(|| panic!("no {what} in {:?}", types(frames)))
}

fn assistant_end(f: &Value) -> bool {
    f["type"] == "message_end" && f["message"]["role"] == "assistant"
}

fn tool_event(kind: &'static str, id: &'static str) -> impl Fn(&Value) -> bool {
    move |f: &Value| f["type"] == kind && f["toolCallId"] == id
}

/// Ids of the frames of `kind`, in order.
fn ids(frames: &[Value], kind: &str) -> Vec<String> {
    frames.iter().filter(|f| f["type"] == kind).map(|f| f["toolCallId"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_call_starts_while_the_message_streams_and_results_stay_in_call_order() {
    // c1 is complete when c2 begins; c2's arguments do not parse, so it fails once the message
    // has ended, and the calls after it wait for the end too (calls start in call order); c4 is
    // completed by the message's end.
    let reply = json!({"delayMs": 150, "toolCalls": [
        call("c1", "echo one", &[r#"{"command": "echo one"}"#]),
        {"id": "c2", "name": "bash", "arguments": {}, "argumentChunks": [r#"{"command": "#, r#""echo two"#]},
        call("c3", "echo three", &[r#"{"comm"#, r#"and": "echo three"}"#]),
        call("c4", "echo four", &[r#"{"command": "echo four"}"#]),
    ]});
    let mut a = Agent::start(&[], &[reply, text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"run them"}));
    let frames = a.until_prompt_result("p");
    let end = position(&frames, "assistant message_end", assistant_end);
    let start = |id| position(&frames, "tool_execution_start", tool_event("tool_execution_start", id));
    let finish = |id| position(&frames, "tool_execution_end", tool_event("tool_execution_end", id));
    // c1 starts once c2 begins, runs and ends while the rest of the message streams; rpc
    // reports it right after the assistant's message_end, as pi does, all of it before c2.
    assert_eq!(start("c1"), end + 1, "{:?}", types(&frames));
    assert_eq!(ids(&frames, "tool_execution_start"), ["c1", "c2", "c3", "c4"]);
    assert!(finish("c1") < start("c2"), "{:?}", types(&frames));
    let c2 = &frames[finish("c2")];
    assert_eq!(c2["isError"], true, "{c2}");
    assert!(c2["result"]["content"][0]["text"].as_str().unwrap().contains("echo two"), "the call fails with its raw arguments, as before: {c2}");
    // Results: toolResult messages and turn_end in call order, whatever order the calls ran in.
    let results: Vec<&str> = frames.iter().filter(|f| f["type"] == "message_end" && f["message"]["role"] == "toolResult").map(|f| f["message"]["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(results, ["c1", "c2", "c3", "c4"]);
    let turn_end = frames.iter().find(|f| f["type"] == "turn_end").unwrap();
    let texts: Vec<&str> = turn_end["toolResults"].as_array().unwrap().iter().map(|r| r["content"][0]["text"].as_str().unwrap()).collect();
    assert_eq!([texts[0], texts[2], texts[3]], ["one\n", "three\n", "four\n"]);
    assert_eq!(frames.last().unwrap()["status"], "completed");
}

#[test]
fn approvals_are_asked_in_call_order_while_the_message_streams() {
    let reply = json!({"delayMs": 100, "toolCalls": [
        call("c1", "echo one", &[r#"{"command": "echo one"}"#]),
        call("c2", "echo two", &[r#"{"command": "#, r#""echo two"}"#]),
        call("c3", "echo three", &[r#"{"command": "echo three"}"#]),
    ]});
    let mut a = Agent::start(&["--approval", "dangerous"], &[reply, text_reply("done")]);
    a.send(json!({"id":"p","type":"prompt","message":"run them"}));
    let mut asked = Vec::new();
    let mut frames = Vec::new();
    for _ in 0..3 {
        let got = a.until(|f| f["type"] == "extension_ui_request" && f["method"] == "select");
        frames.extend(got);
        let ask = frames.last().unwrap().clone();
        asked.push(ask["title"].as_str().unwrap().rsplit("Command: ").next().unwrap().to_owned());
        a.send(json!({"type":"extension_ui_response","id":ask["id"],"value":"Approve"}));
    }
    frames.extend(a.until_prompt_result("p"));
    assert_eq!(asked, ["echo one", "echo two", "echo three"]);
    let first_ask = position(&frames, "approval", |f| f["type"] == "extension_ui_request");
    assert!(first_ask < position(&frames, "assistant message_end", assistant_end), "c1 is asked about while the message streams: {:?}", types(&frames));
    assert!(frames.iter().filter(|f| f["type"] == "tool_execution_end").all(|f| f["isError"] == false));
}

/// Gone, or a zombie nobody has reaped yet (it no longer runs).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (a bound for a hang, not a timing assertion: the process would live 300 s) until the
/// process `pid_file` names is gone.
fn wait_gone(pid_file: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    while !is_gone(pid) {
        assert!(Instant::now() < deadline, "process {pid} outlived its cancelled call");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_abort_while_the_first_call_runs_and_the_message_streams_ends_both() {
    let slow_args: Vec<String> = r#"{"command": "echo two"}"#.chars().map(String::from).collect();
    let reply = json!({"delayMs": 200, "toolCalls": [
        call("c1", "sleep 300 & echo $! > c1.pid; wait", &[r#"{"command": "sleep 300 & echo $! > c1.pid; wait"}"#]),
        {"id": "c2", "name": "bash", "arguments": {"command": "echo two"}, "argumentChunks": slow_args},
    ]});
    let mut a = Agent::start(&[], &[reply, text_reply("after abort")]);
    a.send(json!({"id":"p","type":"prompt","message":"run them"}));
    let pid_file = a.dir.path().join("c1.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    // Abort once c1's process runs (its tool frames are held until the message ends).
    while !std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n')) {
        assert!(Instant::now() < deadline, "c1 never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.send(json!({"id":"ab","type":"abort"}));
    let frames = a.until(|f| f["type"] == "response" && f["id"] == "ab");
    // The running call is cancelled and reported, start and end, right after the aborted message
    // ends; the message keeps no tool call (as an abort while streaming always did), so no
    // result is kept.
    let end = position(&frames, "assistant message_end", assistant_end);
    let c1_start = position(&frames, "c1's start", tool_event("tool_execution_start", "c1"));
    assert!(c1_start == end + 1 && c1_start < position(&frames, "c1's end", tool_event("tool_execution_end", "c1")), "{:?}", types(&frames));
    assert_eq!(frames.iter().find(|f| tool_event("tool_execution_end", "c1")(f)).unwrap()["isError"], true);
    let message = &frames[end]["message"];
    assert_eq!(message["stopReason"], "aborted");
    assert!(message["content"].as_array().unwrap().iter().all(|c| c["type"] != "toolCall"), "{message}");
    assert!(!frames.iter().any(|f| tool_event("tool_execution_start", "c2")(f)), "c2 never starts");
    assert!(!frames.iter().any(|f| f["type"] == "message_start" && f["message"]["role"] == "toolResult"));
    assert_eq!(frames.iter().find(|f| f["type"] == "turn_end").unwrap()["toolResults"], json!([]));
    let t: Vec<String> = types(&frames).into_iter().filter(|t| t != "tool_execution_update").collect();
    assert_eq!(t[t.len() - 9..], ["message_end:assistant", "tool_execution_start", "tool_execution_end", "turn_end", "agent_end", "agent_settled", "prompt_result", "session_settled", "response"]);
    assert_eq!(frames[frames.len() - 3]["status"], "aborted");
    wait_gone(&pid_file);
    // The conversation holds the prompt and the aborted message, and goes on.
    let messages = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect::<Vec<_>>(), ["user", "assistant"]);
    a.send(json!({"id":"p2","type":"prompt","message":"again"}));
    assert_eq!(a.until_prompt_result("p2").last().unwrap()["status"], "completed");
}

#[test]
fn a_steer_while_the_first_call_runs_and_the_message_streams_waits_for_the_turn_to_end() {
    let reply = json!({"delayMs": 150, "toolCalls": [
        call("c1", "echo one", &[r#"{"command": "echo one"}"#]),
        call("c2", "echo two", &[r#"{"com"#, r#"mand": "#, r#""echo two"}"#]),
    ]});
    let mut a = Agent::start(&[], &[reply, text_reply("steered")]);
    a.send(json!({"id":"p","type":"prompt","message":"run them"}));
    // c1 is complete (and started) once c2 begins.
    let mut frames = a.until(|f| f["assistantMessageEvent"]["type"] == "toolcall_start" && f["assistantMessageEvent"]["contentIndex"] == 1);
    a.send(json!({"id":"s","type":"steer","message":"and then this"}));
    frames.extend(a.until_prompt_result("p"));
    let t = types(&frames);
    let answered = position(&frames, "steer response", |f| f["type"] == "response" && f["id"] == "s");
    assert!(answered < position(&frames, "assistant message_end", assistant_end), "the steer came while the message streamed: {t:?}");
    // Delivered at the turn boundary, after both calls' results, as before.
    let first_turn_end = t.iter().position(|t| t == "turn_end").unwrap();
    assert_eq!(t[first_turn_end - 4..first_turn_end], ["message_start:toolResult", "message_end:toolResult", "message_start:toolResult", "message_end:toolResult"]);
    assert_eq!(t[first_turn_end + 1..first_turn_end + 4], ["turn_start", "queue_update", "message_start:user"]);
    assert_eq!(frames[first_turn_end + 3]["message"]["content"][0]["text"], "and then this");
    assert_eq!(frames.last().unwrap()["status"], "completed");
}

#[test]
fn a_model_error_after_a_call_started_cancels_it_and_the_retry_starts_afresh() {
    let reply = json!({"delayMs": 200, "error": "503 overloaded", "retryable": true, "toolCalls": [
        call("c1", "sleep 300 & echo $! > c1.pid; wait", &[r#"{"command": "sleep 300 & echo $! > c1.pid; wait"}"#]),
        call("c2", "echo two", &[r#"{"command": "#, r#""echo two"}"#]),
    ]});
    let mut a = Agent::start(&["--retry-base-delay-ms", "1"], &[reply, text_reply("recovered")]);
    a.send(json!({"id":"p","type":"prompt","message":"run them"}));
    let frames = a.until_prompt_result("p");
    let t = types(&frames);
    let failed = position(&frames, "the failed message_end", assistant_end);
    assert_eq!(frames[failed]["message"]["stopReason"], "error");
    let c1_end = position(&frames, "c1's end", tool_event("tool_execution_end", "c1"));
    assert!(position(&frames, "c1's start", tool_event("tool_execution_start", "c1")) == failed + 1 && failed < c1_end, "{t:?}");
    assert_eq!(frames[c1_end]["isError"], true);
    assert!(!frames.iter().any(|f| tool_event("tool_execution_start", "c2")(f)), "c2 never starts: {t:?}");
    assert!(!t.iter().any(|t| t == "message_start:toolResult"), "{t:?}");
    assert!(t.contains(&"auto_retry_start".to_owned()), "{t:?}");
    assert_eq!(frames.last().unwrap()["status"], "completed");
    wait_gone(&a.dir.path().join("c1.pid"));
    let messages = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect::<Vec<_>>(), ["user", "assistant"], "the failed attempt and its call are not kept");
}
