//! pi 1.6.0 (npm `@earendil-works/pi-coding-agent`, run with node 22) behind `agentwire bridge
//! --serve acp` and `--serve wire`, its one model served by the fake OpenAI-compatible server on
//! 127.0.0.1. pi 1.6 answers a prompt with its `disposition`, ends each low-level run with
//! `agent_end` (`willRetry`) and the whole prompt with `agent_settled`: a retried model call
//! stays one host turn, a prompt an extension command handled ends the turn at once.
//!
//! Opt-in: `AGENTWIRE_PI16_CLI` is pi 1.6.0's `dist/bundle/cli.js` and `AGENTWIRE_PI16_NODE`
//! a node >= 22.19 to run it with (scripts/test sets both after installing them into
//! tests/pi-host); a plain `cargo test` needs neither.

mod common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use common::bridge::{updates, Bridge};
use common::fake_llm::{status, FakeLlm, Reply};
use serde_json::{json, Value};

/// pi 1.6.0's cli and the node that runs it, when the environment names them.
fn pi16() -> Option<(PathBuf, PathBuf)> {
    let (cli, node) = (std::env::var_os("AGENTWIRE_PI16_CLI"), std::env::var_os("AGENTWIRE_PI16_NODE"));
    if cli.is_none() && node.is_none() {
        return None;
    }
    let (Some(cli), Some(node)) = (cli, node) else { panic!("set both AGENTWIRE_PI16_CLI (pi 1.6.0's dist/bundle/cli.js) and AGENTWIRE_PI16_NODE (node >= 22.19), or neither") };
    let (cli, node) = (PathBuf::from(cli), PathBuf::from(node));
    assert!(cli.exists(), "AGENTWIRE_PI16_CLI names no file: {}", cli.display());
    assert!(node.exists(), "AGENTWIRE_PI16_NODE names no file: {}", node.display());
    Some((cli, node))
}

const SKIPPED: &str = "skipped: set AGENTWIRE_PI16_CLI and AGENTWIRE_PI16_NODE (scripts/test does)";

/// An extension whose `/hello` command answers without running the model (pi's prompt
/// disposition `handled`).
const HELLO_EXTENSION: &str = r#"export default function (pi) {
  pi.registerCommand("hello", { description: "Say hello", handler: async (args, ctx) => { ctx.ui.notify(`Hello ${args || "world"}!`, "info"); } });
}
"#;

/// The bridge serving `serve` in front of `pi --mode rpc --no-session`, its model playing
/// `replies`. pi's own retry waits 100 ms; the OpenAI SDK's retries are off, so a 500 reaches
/// pi's auto-retry (as in the conformance adapter).
fn start(serve: &str, (cli, node): &(PathBuf, PathBuf), replies: Vec<Reply>) -> (Bridge, FakeLlm) {
    let llm = FakeLlm::start(replies).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join(".pi/agent");
    std::fs::create_dir_all(agent_dir.join("extensions")).unwrap();
    let model = json!({"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096, "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0}});
    let models = json!({"providers": {"fake": {"baseUrl": llm.base_url(), "api": "openai-completions", "apiKey": "bridge-key", "models": [model]}}});
    std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
    let settings = json!({"defaultProvider": "fake", "defaultModel": "fake-model", "retry": {"baseDelayMs": 100, "provider": {"maxRetries": 0}}});
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
    std::fs::write(agent_dir.join("extensions/hello.js"), HELLO_EXTENSION).unwrap();
    let env: Vec<(&str, OsString)> = vec![
        ("PI_CODING_AGENT_DIR", agent_dir.into()),
        ("PI_OFFLINE", "1".into()),
        ("HOME", dir.path().into()),
        ("LANG", "C.UTF-8".into()),
    ];
    let agent: Vec<OsString> = vec![node.into(), cli.into(), "--mode".into(), "rpc".into(), "--no-session".into()];
    (Bridge::spawn(serve, &[], &agent, &env, dir), llm)
}

fn script(entry: Value) -> Reply {
    Reply::Script(entry)
}

/// The ACP prompt `text` (id `id`) in `session`: the frames up to its answer.
fn prompt(bridge: &mut Bridge, id: u64, session: &str, text: &str) -> Vec<Value> {
    bridge.request(id, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
}

fn streamed(frames: &[Value]) -> String {
    updates(frames, "agent_message_chunk").iter().map(|u| u["content"]["text"].as_str().unwrap()).collect()
}

/// The answers among `frames` (frames with an `id` and a result or an error).
fn answers(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f.get("id").is_some() && (f.get("result").is_some() || f.get("error").is_some())).collect()
}

#[test]
fn pi16_retried_model_call_is_one_acp_turn_ending_end_turn_after_the_retry_reply() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let (mut bridge, llm) = start("acp", &pi, vec![status(500, &[], "the model is down"), script(json!({"text": "retried reply"})), script(json!({"text": "second reply"}))]);
    let session = bridge.open();
    let frames = prompt(&mut bridge, 3, &session, "hi");
    // One answer, the turn's end, after the retried call's text.
    assert_eq!(answers(&frames).len(), 1, "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
    assert_eq!(streamed(&frames), "retried reply", "{frames:#?}");
    assert_eq!(llm.seen().len(), 2, "pi asked the model twice (the 500, then the retry)");
    // The next prompt is this turn's own: nothing of the retried run is left to end it early.
    let next = prompt(&mut bridge, 4, &session, "again");
    assert_eq!(next.last().unwrap()["result"]["stopReason"], "end_turn", "{next:#?}");
    assert_eq!(streamed(&next), "second reply", "{next:#?}");
}

#[test]
fn pi16_prompt_an_extension_command_handled_ends_the_turn_at_once() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let (mut bridge, llm) = start("acp", &pi, vec![script(json!({"text": "a model reply"}))]);
    let session = bridge.open();
    let frames = prompt(&mut bridge, 3, &session, "/hello there");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
    assert!(llm.seen().is_empty(), "the command ran no model");
    // The agent is not left busy: a prompt after it runs the model.
    let next = prompt(&mut bridge, 4, &session, "hi");
    assert_eq!(next.last().unwrap()["result"]["stopReason"], "end_turn", "{next:#?}");
    assert_eq!(streamed(&next), "a model reply", "{next:#?}");
}

#[test]
fn pi16_bash_tool_call_and_reply_stream_as_one_turn() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let replies = vec![script(json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo from-pi16-bash"}}]})), script(json!({"text": "done"}))];
    let (mut bridge, _llm) = start("acp", &pi, replies);
    let session = bridge.open();
    let frames = prompt(&mut bridge, 3, &session, "run it");
    let calls = updates(&frames, "tool_call");
    assert_eq!(calls.len(), 1, "{frames:#?}");
    assert_eq!(calls[0]["toolCallId"], "b1");
    let done: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert_eq!(done.len(), 1, "{frames:#?}");
    assert!(done[0]["content"][0]["content"]["text"].as_str().unwrap().contains("from-pi16-bash"), "{:#}", done[0]);
    assert_eq!(streamed(&frames), "done", "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn pi16_session_cancel_during_a_slow_reply_ends_cancelled_and_the_next_prompt_runs() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let slow = script(json!({"text": "a slow reply that streams one character at a time", "chunkSize": 1, "delayMs": 300}));
    let (mut bridge, _llm) = start("acp", &pi, vec![slow, script(json!({"text": "after the cancel"}))]);
    let session = bridge.open();
    let (frames, after) = bridge.cancel_after_first_chunk(&session);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled", "{frames:#?}");
    assert!(after < Duration::from_secs(5), "cancelled after {after:?}");
    let next = prompt(&mut bridge, 4, &session, "hi");
    assert_eq!(next.last().unwrap()["result"]["stopReason"], "end_turn", "{next:#?}");
    assert_eq!(streamed(&next), "after the cancel", "{next:#?}");
}

#[test]
fn pi16_behind_serve_wire_a_retried_model_call_is_one_finished_turn() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let (mut bridge, _llm) = start("wire", &pi, vec![status(500, &[], "the model is down"), script(json!({"text": "wired after a retry"}))]);
    let init = bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    assert_eq!(init.last().unwrap()["result"]["protocol_version"], "1.10", "{init:#?}");
    let frames = bridge.request(2, "prompt", json!({"user_input": "hi"}));
    let events: Vec<&Value> = frames.iter().filter(|f| f["method"] == "event").map(|f| &f["params"]).collect();
    let text: String = events.iter().filter(|e| e["type"] == "ContentPart" && e["payload"]["type"] == "text").map(|e| e["payload"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "wired after a retry", "{frames:#?}");
    assert_eq!(events.iter().filter(|e| e["type"] == "TurnEnd").count(), 1, "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished", "{frames:#?}");
}

#[test]
fn pi16_cancel_of_the_retried_reply_ends_cancelled_and_the_next_prompt_is_its_own() {
    let Some(pi) = pi16() else { return eprintln!("{SKIPPED}") };
    let slow = script(json!({"text": "a slow retried reply, one character at a time", "chunkSize": 1, "delayMs": 300}));
    let (mut bridge, _llm) = start("acp", &pi, vec![status(500, &[], "the model is down"), slow, script(json!({"text": "after the cancel"}))]);
    let session = bridge.open();
    let (frames, after) = bridge.cancel_after_first_chunk(&session);
    assert_eq!(answers(&frames).len(), 1, "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled", "{frames:#?}");
    assert!(after < Duration::from_secs(5), "cancelled after {after:?}");
    let next = prompt(&mut bridge, 4, &session, "hi");
    assert_eq!(next.last().unwrap()["result"]["stopReason"], "end_turn", "{next:#?}");
    assert_eq!(streamed(&next), "after the cancel", "{next:#?}");
}
