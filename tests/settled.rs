//! "Settled" in every front, through the real binary: each accepted prompt gets exactly one
//! terminal signal, after everything its work caused (retries, a queued follow-up or steer, a
//! run continued for messages left queued): rpc `agent_settled` (pi 1.6) and `prompt_result`
//! with `sessionSettled`, then `session_settled` (omp 18.3); the `prompt` / `steer` /
//! `follow_up` responses' `data.disposition`; wire's prompt result; ACP v1's `PromptResponse`;
//! ACP v2's `idle`. A slash command is `handled`: no run, no `agent_settled`.

mod common;

use std::time::Duration;

use common::acp::{self, Acp};
use common::fake_llm::*;
use common::wire::{kinds, Wire};
use common::{text_reply, types, Agent};
use serde_json::{json, Value};

/// A scripted reply streaming slowly enough to send something while it runs.
fn slow(text: &str) -> Value {
    json!({"text": text, "chunkSize": 4, "delayMs": 40})
}

/// A slow scripted reply that calls `ls` (a step of its own).
fn slow_tool_call() -> Value {
    json!({"text": "Listing the files first, then more.", "chunkSize": 4, "delayMs": 40, "toolCalls": [{"id": "call_ls", "name": "ls", "arguments": {"path": "."}}]})
}

fn count(frames: &[Value], kind: &str) -> usize {
    frames.iter().filter(|f| f["type"] == kind).count()
}

/// Frames up to and including the `session_settled` that ends the stretch of activity.
fn until_session_settled(a: &mut Agent) -> Vec<Value> {
    a.until(|f| f["type"] == "session_settled")
}

/// Asserts the tail of one prompt's work: the last `agent_end` (terminal, no retry), then
/// `agent_settled`, `prompt_result` for `id` (settled session), `session_settled`, and that each
/// of those came exactly once.
fn assert_settled_once(frames: &[Value], id: &str, aborted: bool) {
    let t = types(frames);
    assert_eq!(&t[t.len() - 4..], ["agent_end", "agent_settled", "prompt_result", "session_settled"], "{t:?}");
    for kind in ["agent_settled", "prompt_result", "session_settled"] {
        assert_eq!(count(frames, kind), 1, "one {kind}: {t:?}");
    }
    let n = frames.len();
    assert_eq!(frames[n - 4]["willRetry"], false);
    assert_eq!(frames[n - 4]["isTerminal"], true);
    assert_eq!(frames[n - 3], json!({"type": "agent_settled", "aborted": aborted}));
    assert_eq!((&frames[n - 2]["id"], &frames[n - 2]["sessionSettled"], &frames[n - 2]["agentInvoked"]), (&json!(id), &json!(true), &json!(true)));
}

#[test]
fn rpc_a_prompt_with_a_queued_follow_up_settles_once_after_it() {
    let mut a = Agent::start(&[], &[slow("working on the first"), text_reply("and the follow-up")]);
    let started = a.request(json!({"id": "p", "type": "prompt", "message": "go"}));
    assert_eq!(started["data"], json!({"disposition": "started"}));
    a.until(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant");
    let queued = a.request(json!({"id": "f", "type": "follow_up", "message": "then this"}));
    assert_eq!(queued["data"], json!({"disposition": "queued"}));
    let frames = until_session_settled(&mut a);
    assert_settled_once(&frames, "p", false);
    let users: Vec<&str> = frames.iter().filter(|f| f["type"] == "message_start" && f["message"]["role"] == "user").filter_map(|f| f["message"]["content"][0]["text"].as_str()).collect();
    assert_eq!(users, ["then this"], "the follow-up ran before the prompt settled");
    a.expect_silence(Duration::from_millis(300));
}

/// A run stopped by `--max-steps-per-turn` with a follow-up still queued: the follow-up is the
/// next run of the same work (`agent_end` with `isTerminal: false`, a second `agent_start`),
/// and the prompt settles once, after it; before, the follow-up started a run nobody's prompt
/// owned, with a `prompt_result` of its own.
#[test]
fn rpc_a_follow_up_left_by_a_stopped_run_continues_the_same_work() {
    let mut a = Agent::start(&["--max-steps-per-turn", "1"], &[slow_tool_call(), text_reply("the follow-up's answer")]);
    a.request(json!({"id": "p", "type": "prompt", "message": "go"}));
    a.until(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant");
    assert_eq!(a.request(json!({"id": "f", "type": "follow_up", "message": "then this"}))["data"], json!({"disposition": "queued"}));
    let frames = until_session_settled(&mut a);
    assert_settled_once(&frames, "p", false);
    let t = types(&frames);
    assert_eq!(count(&frames, "agent_start"), 1, "the second run's start (the first came before the follow-up): {t:?}");
    assert_eq!(count(&frames, "agent_end"), 2, "{t:?}");
    let first_end = frames.iter().find(|f| f["type"] == "agent_end").unwrap();
    assert_eq!((&first_end["isTerminal"], &first_end["willRetry"]), (&json!(false), &json!(false)));
    assert_eq!(frames[frames.len() - 2]["status"], "completed");
    a.expect_silence(Duration::from_millis(300));
}

#[test]
fn rpc_a_slash_command_is_handled_without_a_run_or_agent_settled() {
    let mut a = Agent::start(&[], &[]);
    let handled = a.request(json!({"id": "h", "type": "prompt", "message": "/status"}));
    assert_eq!(handled["data"], json!({"disposition": "handled"}));
    let frames = a.until_prompt_result("h");
    let result = frames.last().unwrap();
    assert_eq!((&result["agentInvoked"], &result["sessionSettled"], &result["status"]), (&json!(false), &json!(true), &json!("completed")));
    for kind in ["agent_start", "agent_end", "agent_settled"] {
        assert_eq!(count(&frames, kind), 0, "{kind}: {:?}", types(&frames));
    }
    a.expect_silence(Duration::from_millis(300));
}

#[test]
fn rpc_an_aborted_prompt_settles_once_aborted() {
    let mut a = Agent::start(&[], &[json!({"text": "a long answer that streams slowly, chunk by chunk, for quite a while", "chunkSize": 2, "delayMs": 50})]);
    a.request(json!({"id": "p", "type": "prompt", "message": "go"}));
    a.until(|f| f["type"] == "message_update");
    a.send(json!({"id": "a", "type": "abort"}));
    let frames = until_session_settled(&mut a);
    assert_settled_once(&frames, "p", true);
    assert_eq!(frames[frames.len() - 2]["status"], "aborted");
    // `abort` answers after the work settled.
    assert_eq!(a.next()["id"], "a");
    a.expect_silence(Duration::from_millis(300));
}

/// A failed model call retried: the retry happens inside the run, so one `agent_end` (no
/// `willRetry`) and one `agent_settled`, after the retried call succeeded.
#[test]
fn rpc_a_retried_prompt_settles_once_after_the_retry() {
    let fake = FakeLlm::start(vec![status(503, &[], "unavailable"), openai_text(&["finally"])]).unwrap();
    let config = tempfile::tempdir().unwrap();
    fake.write_models(config.path()).unwrap();
    let dir = config.path().to_str().unwrap().to_owned();
    let mut a = Agent::start(&["--config-dir", &dir, "--provider", "fake", "--model", "fake-model", "--retry-base-delay-ms", "10"], &[]);
    a.request(json!({"id": "p", "type": "prompt", "message": "go"}));
    let frames = until_session_settled(&mut a);
    assert_eq!(count(&frames, "auto_retry_start"), 1);
    assert_eq!(count(&frames, "agent_end"), 1);
    assert_settled_once(&frames, "p", false);
    assert_eq!(frames[frames.len() - 2]["status"], "completed");
}

/// `abort_and_prompt`: the aborted prompt settles (aborted) without ending the stretch of
/// activity (`sessionSettled: false`, no `session_settled`); the new prompt ends it.
#[test]
fn rpc_abort_and_prompt_settles_each_prompt_once_and_the_session_after_the_second() {
    let mut a = Agent::start(&[], &[json!({"text": "a long answer that streams slowly, chunk by chunk, for quite a while", "chunkSize": 2, "delayMs": 50}), text_reply("the second")]);
    a.request(json!({"id": "p1", "type": "prompt", "message": "go"}));
    a.until(|f| f["type"] == "message_update");
    a.send(json!({"id": "p2", "type": "abort_and_prompt", "message": "instead"}));
    let first = a.until_prompt_result("p1");
    let result = first.last().unwrap();
    assert_eq!((&result["status"], &result["sessionSettled"]), (&json!("aborted"), &json!(false)));
    assert_eq!(count(&first, "agent_settled"), 1);
    assert_eq!(first[first.len() - 2], json!({"type": "agent_settled", "aborted": true}));
    assert_eq!(count(&first, "session_settled"), 0);
    let second = until_session_settled(&mut a);
    assert_settled_once(&second, "p2", false);
    a.expect_silence(Duration::from_millis(300));
}

fn wire_prompt(id: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "prompt", "params": {"user_input": text}})
}

/// Frames up to the first one `pred` picks.
fn wire_until(w: &mut Wire, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let f = w.next();
        let done = pred(&f);
        out.push(f);
        if done {
            return out;
        }
    }
}

/// Frames up to the response to `id`, and then 300 ms more to catch anything extra.
fn wire_until_answered(w: &mut Wire, id: &str) -> Vec<Value> {
    let mut frames = w.until_id(json!(id));
    while let Ok(f) = w.rx.recv_timeout(Duration::from_millis(300)) {
        w.checker.check(&f, Some(agentwire::protocol::validate::Direction::Outbound)).unwrap_or_else(|e| panic!("invalid wire frame: {e}\n{f}"));
        frames.push(f);
    }
    frames
}

/// Wire: a steer sent while the prompt runs is part of that prompt's turn: one `TurnBegin`,
/// one `TurnEnd`, one result, after the steer's answer.
#[test]
fn wire_a_prompt_with_a_queued_steer_answers_once_after_it() {
    let mut w = Wire::start(&[slow("working on the first"), text_reply("the steer's answer")]);
    w.send(wire_prompt("p", "go"));
    wire_until(&mut w, |f| f["params"]["type"] == "ContentPart");
    w.send(json!({"jsonrpc": "2.0", "id": "s", "method": "steer", "params": {"user_input": "this too"}}));
    let frames = wire_until_answered(&mut w, "p");
    let k = kinds(&frames);
    assert_eq!(k.iter().filter(|k| *k == "TurnEnd").count(), 1, "{k:?}");
    assert_eq!(frames.iter().filter(|f| f.get("method").is_none() && f["id"] == "p").count(), 1);
    let result = frames.iter().position(|f| f.get("method").is_none() && f["id"] == "p").unwrap();
    let before: String = frames[..result].iter().filter(|f| f["params"]["type"] == "ContentPart").filter_map(|f| f["params"]["payload"]["text"].as_str()).collect();
    assert!(before.contains("the steer's answer"), "the result comes after the steer's run: {before:?} {k:?}");
    assert_eq!(frames[result]["result"]["status"], "finished");
}

/// Wire: a run stopped by `--max-steps-per-turn` with a steer left queued continues the turn:
/// the prompt is answered once, after the steer's run; before, it was answered after the first
/// run and the steer opened a turn of its own.
#[test]
fn wire_a_steer_left_by_a_stopped_run_continues_the_turn() {
    let mut w = Wire::start_with(&["--max-steps-per-turn", "1"], &[slow_tool_call(), text_reply("the steer's answer")]);
    w.send(wire_prompt("p", "go"));
    wire_until(&mut w, |f| f["params"]["type"] == "ContentPart");
    w.send(json!({"jsonrpc": "2.0", "id": "s", "method": "steer", "params": {"user_input": "this too"}}));
    let frames = wire_until_answered(&mut w, "p");
    let k = kinds(&frames);
    assert_eq!(k.iter().filter(|k| *k == "TurnBegin").count(), 0, "no second turn: {k:?}");
    assert_eq!(k.iter().filter(|k| *k == "TurnEnd").count(), 1, "{k:?}");
    let result = frames.iter().position(|f| f.get("method").is_none() && f["id"] == "p").unwrap();
    let before: String = frames[..result].iter().filter(|f| f["params"]["type"] == "ContentPart").filter_map(|f| f["params"]["payload"]["text"].as_str()).collect();
    assert!(before.contains("the steer's answer"), "the result comes after the steer's run: {before:?} {k:?}");
}

/// ACP v1: one `PromptResponse` per prompt: a prompt, a slash command, a cancelled prompt.
#[test]
fn acp_v1_answers_each_prompt_once() {
    let (dir, config) = acp::dirs();
    let mut a = Acp::start(dir.path(), config.path(), &[text_reply("hello"), acp::slow_reply()], &[]);
    let session = a.init_and_new(dir.path());
    for (text, reason) in [("hi", "end_turn"), ("/status", "end_turn")] {
        let response = a.call("session/prompt", acp::prompt(text, &session));
        assert_eq!(response["result"]["stopReason"], reason, "{text}: {response}");
        a.no_frame_within(Duration::from_millis(300));
    }
    let id = a.start_streaming(&session);
    a.notify("session/cancel", json!({"sessionId": session}));
    let (_, response) = a.until_response(&id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    a.no_frame_within(Duration::from_millis(300));
}

fn acp_v2_idles(frames: &[Value]) -> Vec<String> {
    acp::updates(frames).iter().filter(|u| u["sessionUpdate"] == "state_update" && u["state"] == "idle").map(|u| u["stopReason"].as_str().unwrap_or_default().to_owned()).collect()
}

/// ACP v2: one `idle` per prompt, after its answer: a prompt, a slash command, a cancelled one.
#[test]
fn acp_v2_goes_idle_once_per_prompt() {
    let (dir, config) = acp::dirs();
    let mut a = Acp::start(dir.path(), config.path(), &[text_reply("hello"), acp::slow_reply()], &[]).v2();
    let init = a.call("initialize", json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}));
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let new = a.call("session/new", json!({"cwd": dir.path().display().to_string(), "mcpServers": []}));
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    for (text, reason) in [("hi", "end_turn"), ("/status", "end_turn")] {
        let id = a.request("session/prompt", acp::prompt(text, &session));
        let (mut frames, _) = a.until_response(&id);
        loop {
            let f = a.next();
            let idle = f["params"]["update"]["state"] == "idle";
            frames.push(f);
            if idle {
                break;
            }
        }
        assert_eq!(acp_v2_idles(&frames), [reason], "{text}: {frames:#?}");
        a.no_frame_within(Duration::from_millis(300));
    }
    let id = a.request("session/prompt", acp::prompt("go", &session));
    let (mut frames, _) = a.until_response(&id);
    frames.push(a.until_method("session/update").1);
    a.notify("session/cancel", json!({"sessionId": session}));
    loop {
        let f = a.next();
        let idle = f["params"]["update"]["state"] == "idle";
        frames.push(f);
        if idle {
            break;
        }
    }
    assert_eq!(acp_v2_idles(&frames), ["cancelled"]);
    a.no_frame_within(Duration::from_millis(300));
}
