//! abort, abort_and_prompt and signals while a run streams (stdin EOF: `tests/lifecycle.rs`).

mod common;

use common::{types, Agent};
use serde_json::json;

fn slow() -> serde_json::Value {
    json!({"text": "one two three four five six seven eight nine ten", "chunkSize": 4, "delayMs": 50})
}

#[test]
fn abort_ends_the_run_before_its_response() {
    let mut a = Agent::start(&[], &[slow()]);
    a.send(json!({"id":"p","type":"prompt","message":"go"}));
    a.until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    a.send(json!({"id":"ab","type":"abort"}));
    let frames = a.until(|f| f["id"] == "ab" && f["type"] == "response");
    let t = types(&frames);
    let tail: Vec<&str> = t.iter().map(String::as_str).filter(|t| !t.starts_with("mu:text_delta")).collect();
    assert_eq!(tail[tail.len() - 8..], ["mu:text_end", "message_end:assistant", "turn_end", "agent_end", "agent_settled", "prompt_result", "session_settled", "response"]);
    let end = frames.iter().find(|f| f["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["stopReason"], "aborted");
    assert_eq!(frames.iter().find(|f| f["type"] == "prompt_result").unwrap()["status"], "aborted");
    // Idle abort answers at once; the partial text stays in the conversation.
    assert_eq!(a.request(json!({"id":"ab2","type":"abort"}))["success"], true);
    let text = a.request(json!({"id":"t","type":"get_last_assistant_text"}))["data"]["text"].clone();
    assert!(text.as_str().unwrap().starts_with("one"), "{text}");
}

#[test]
fn abort_and_prompt_replaces_the_running_prompt() {
    let mut a = Agent::start(&[], &[slow(), json!({"text":"fresh answer"})]);
    a.send(json!({"id":"p1","type":"prompt","message":"first"}));
    a.until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    a.send(json!({"id":"p2","type":"abort_and_prompt","message":"second"}));
    let frames = a.until_prompt_result("p2");
    let t = types(&frames);
    let aborted = frames.iter().position(|f| f["type"] == "prompt_result" && f["id"] == "p1").unwrap();
    let response = frames.iter().position(|f| f["id"] == "p2" && f["type"] == "response").unwrap();
    let start = t.iter().rposition(|t| t == "agent_start").unwrap();
    assert!(aborted < response && response < start, "{t:?}");
}

#[test]
fn sigterm_aborts_flushes_and_exits_143() {
    let mut a = Agent::start(&[], &[slow()]);
    a.send(json!({"id":"p","type":"prompt","message":"go"}));
    a.until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    unsafe { libc::kill(a.pid() as i32, libc::SIGTERM) };
    // stdin stays open: the signal alone ends the process.
    let (rest, code) = a.wait_exit();
    assert_eq!(code, 143);
    assert_eq!(rest[rest.len() - 3..].iter().map(|f| f["type"].as_str().unwrap()).collect::<Vec<_>>(), ["agent_settled", "prompt_result", "session_settled"]);
}

/// Issue 15, defect 3: a host that writes `prompt` and many `abort_and_prompt`s back to back
/// without waiting gets every message it was told was accepted into the session, each once
/// (`abort_and_prompt` is answered off the reader task, so concurrent ones may take turns in
/// another order than they were written; a host that needs order waits for each response).
#[test]
fn back_to_back_abort_and_prompt_loses_no_acknowledged_message() {
    const N: usize = 200;
    let script: Vec<serde_json::Value> = (0..=N).map(|_| slow()).collect();
    let mut a = Agent::start(&[], &script);
    let mut burst = json!({"id":"p","type":"prompt","message":"m0"}).to_string();
    for i in 1..=N {
        burst.push('\n');
        burst.push_str(&json!({"id": format!("a{i}"), "type":"abort_and_prompt","message": format!("m{i}")}).to_string());
    }
    a.send_raw(&burst);
    // Each command starts a run of its own (after aborting the previous one): N + 1 responses,
    // all successes, and N + 1 prompt results.
    let (mut responses, mut results) = (0, 0);
    while responses < N + 1 || results < N + 1 {
        let f = a.next();
        if f["type"] == "response" {
            assert_eq!(f["success"], true, "{f}");
            responses += 1;
        } else if f["type"] == "prompt_result" {
            results += 1;
        }
    }
    let messages = a.request(json!({"id":"m","type":"get_messages"}))["data"]["messages"].clone();
    let users: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: Vec<String> = (0..=N).map(|i| format!("m{i}")).collect();
    let mut users = users;
    users.sort();
    expected.sort();
    assert_eq!(users, expected, "each acknowledged message reached the session, once");
}
