//! pi 0.73.1 (npm `@mariozechner/pi-coding-agent`, installed in tests/pi-host by
//! scripts/setup-clients) behind `agentwire bridge --serve acp`, its one model served by the
//! fake OpenAI-compatible server on 127.0.0.1: an ACP host's prompt, streamed reply, `bash`
//! tool call, cancel and EOF; and behind `bridge --serve wire`, a wire host's streamed turn.
//!
//! Opt-in (`AGENTWIRE_BRIDGE_PI=1`, which scripts/test sets after installing pi): a plain
//! `cargo test` needs no node.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::bridge::{running, updates, Bridge};
use common::fake_llm::FakeLlm;
use serde_json::{json, Value};

fn pi() -> Option<PathBuf> {
    std::env::var_os("AGENTWIRE_BRIDGE_PI")?;
    // pi 0.73.1 by name: tests/pi-host pins pi 1.6.0 too, and both declare the bin `pi`.
    let pi = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi-host/bin/pi-0.73.1");
    assert!(pi.exists(), "AGENTWIRE_BRIDGE_PI is set but pi is not installed: run scripts/setup-clients ({})", pi.display());
    Some(pi)
}

/// The bridge in front of `pi --mode rpc --no-session`, its model playing `script`.
fn start(pi: &Path, script: Vec<Value>) -> (Bridge, FakeLlm) {
    start_serving("acp", pi, script)
}

/// The bridge serving `serve` in front of pi, its model playing `script`.
fn start_serving(serve: &str, pi: &Path, script: Vec<Value>) -> (Bridge, FakeLlm) {
    let llm = FakeLlm::from_script(script).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join(".pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let model = json!({"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096, "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0}});
    let models = json!({"providers": {"fake": {"baseUrl": llm.base_url(), "api": "openai-completions", "apiKey": "bridge-key", "models": [model]}}});
    std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
    std::fs::write(agent_dir.join("settings.json"), json!({"defaultProvider": "fake", "defaultModel": "fake-model"}).to_string()).unwrap();
    let env: Vec<(&str, OsString)> = vec![
        ("PI_CODING_AGENT_DIR", agent_dir.into()),
        ("PI_OFFLINE", "1".into()),
        ("HOME", dir.path().into()),
        ("LANG", "C.UTF-8".into()),
    ];
    let agent: Vec<OsString> = vec![pi.into(), "--mode".into(), "rpc".into(), "--no-session".into()];
    (Bridge::spawn(serve, &[], &agent, &env, dir), llm)
}

#[test]
fn pi_streams_a_prompt_as_agent_message_chunks_ending_end_turn() {
    let Some(pi) = pi() else { return eprintln!("skipped: set AGENTWIRE_BRIDGE_PI=1 (scripts/test does)") };
    let (mut bridge, _llm) = start(&pi, vec![json!({"text": "desserts from pi"})]);
    let session = bridge.open();
    let frames = bridge.request(3, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "stressed"}]}));
    let text: String = updates(&frames, "agent_message_chunk").iter().map(|u| u["content"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "desserts from pi", "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn pi_bash_tool_call_arrives_as_tool_call_then_a_completed_update_with_its_output() {
    let Some(pi) = pi() else { return eprintln!("skipped: set AGENTWIRE_BRIDGE_PI=1 (scripts/test does)") };
    let script = vec![json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo from-pi-bash"}}]}), json!({"text": "done"})];
    let (mut bridge, _llm) = start(&pi, script);
    let session = bridge.open();
    let frames = bridge.request(3, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}));
    let calls = updates(&frames, "tool_call");
    assert_eq!(calls.len(), 1, "{frames:#?}");
    assert_eq!((&calls[0]["toolCallId"], &calls[0]["kind"]), (&json!("b1"), &json!("execute")));
    let done: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert_eq!(done.len(), 1, "{frames:#?}");
    assert!(done[0]["content"][0]["content"]["text"].as_str().unwrap().contains("from-pi-bash"), "{:#}", done[0]);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn");
}

#[test]
fn pi_session_cancel_during_a_slow_reply_ends_cancelled_within_5_s() {
    let Some(pi) = pi() else { return eprintln!("skipped: set AGENTWIRE_BRIDGE_PI=1 (scripts/test does)") };
    let (mut bridge, _llm) = start(&pi, vec![json!({"text": "a slow reply that streams one character at a time", "chunkSize": 1, "delayMs": 300})]);
    let session = bridge.open();
    let (frames, after) = bridge.cancel_after_first_chunk(&session);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "cancelled");
    assert!(after < Duration::from_secs(5), "cancelled after {after:?}");
}

#[test]
fn pi_host_eof_ends_the_bridge_and_pi_within_3_s() {
    let Some(pi) = pi() else { return eprintln!("skipped: set AGENTWIRE_BRIDGE_PI=1 (scripts/test does)") };
    let (mut bridge, _llm) = start(&pi, vec![]);
    bridge.open();
    let agent = bridge.agent_pid();
    let closed = Instant::now();
    bridge.stdin.take();
    while bridge.child.try_wait().unwrap().is_none() || running(agent) {
        assert!(closed.elapsed() < Duration::from_secs(3), "the bridge or pi still runs 3 s after host EOF");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pi_behind_serve_wire_streams_content_parts_and_finishes() {
    let Some(pi) = pi() else { return eprintln!("skipped: set AGENTWIRE_BRIDGE_PI=1 (scripts/test does)") };
    let (mut bridge, _llm) = start_serving("wire", &pi, vec![json!({"text": "wired from pi"})]);
    let init = bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    assert_eq!(init.last().unwrap()["result"]["protocol_version"], "1.10", "{init:#?}");
    let frames = bridge.request(2, "prompt", json!({"user_input": "hi"}));
    let events: Vec<&Value> = frames.iter().filter(|f| f["method"] == "event").map(|f| &f["params"]).collect();
    let text: String = events.iter().filter(|e| e["type"] == "ContentPart" && e["payload"]["type"] == "text").map(|e| e["payload"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "wired from pi", "{frames:#?}");
    assert_eq!((events.first().unwrap()["type"].as_str(), events.last().unwrap()["type"].as_str()), (Some("TurnBegin"), Some("TurnEnd")));
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished");
}
