//! All nine `agentwire bridge --serve X --agent-dialect Y -- agentwire --mode Y` pairs, through
//! one scenario table: a prompt answered with the offline model's reply and ended the front's
//! way (rpc `agent_end`, wire `finished`, ACP `end_turn`), a cancel that ends a slow reply within
//! 3 s, and host EOF leaving no process behind. Every frame the bridge writes is checked against
//! the served dialect's schema (tests/common/bridge.rs).

mod common;

use std::time::{Duration, Instant};

use common::bridge::{slow_script, Bridge};
use serde_json::{json, Value};

const DIALECTS: [&str; 3] = ["rpc", "wire", "acp"];
const REPLY: &str = "desserts are stressed";

fn start(serve: &str, agent: &str, script: &[Value]) -> Bridge {
    Bridge::start_mode(serve, agent, script, &["--agent-dialect", agent], &[])
}

fn is(frame: &Value, kind: &str) -> bool {
    frame["type"] == kind
}

/// The host's side of one front dialect.
struct Front {
    serve: &'static str,
    /// Opens what a prompt needs (`initialize`, a session); the ACP session id.
    open: fn(&mut Bridge) -> String,
    /// Prompts "hi": the streamed reply, and whether it ended the front's way.
    prompt: fn(&mut Bridge, &str) -> (String, bool),
    /// Prompts, cancels at the first streamed text: whether it ended cancelled, and how long
    /// after the cancel.
    cancel: fn(&mut Bridge, &str) -> (bool, Duration),
}

fn open_acp(bridge: &mut Bridge) -> String {
    bridge.open()
}

fn open_wire(bridge: &mut Bridge) -> String {
    let init = bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    assert!(init.last().unwrap().get("result").is_some(), "{init:#?}");
    String::new()
}

fn open_rpc(bridge: &mut Bridge) -> String {
    // The front's `ready` (agentwire's own, passed on by the proxy) says the agent is up.
    bridge.until(|f| is(f, "ready"));
    String::new()
}

fn acp_text(frames: &[Value]) -> String {
    frames.iter().filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk").filter_map(|f| f["params"]["update"]["content"]["text"].as_str()).collect()
}

fn prompt_acp(bridge: &mut Bridge, session: &str) -> (String, bool) {
    let frames = bridge.prompt(session, "hi");
    (acp_text(&frames), frames.last().unwrap()["result"]["stopReason"] == "end_turn")
}

fn cancel_acp(bridge: &mut Bridge, session: &str) -> (bool, Duration) {
    let (frames, after) = bridge.cancel_after_first_chunk(session);
    (frames.last().unwrap()["result"]["stopReason"] == "cancelled", after)
}

fn wire_text(frames: &[Value]) -> String {
    frames.iter().filter(|f| f["params"]["type"] == "ContentPart" && f["params"]["payload"]["type"] == "text").filter_map(|f| f["params"]["payload"]["text"].as_str()).collect()
}

fn prompt_wire(bridge: &mut Bridge, _: &str) -> (String, bool) {
    let frames = bridge.request(2, "prompt", json!({"user_input": "hi"}));
    (wire_text(&frames), frames.last().unwrap()["result"]["status"] == "finished")
}

fn cancel_wire(bridge: &mut Bridge, _: &str) -> (bool, Duration) {
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"user_input": "hi"}}));
    while bridge.next().expect("a content part")["params"]["type"] != "ContentPart" {}
    let asked = Instant::now();
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "cancel", "params": {}}));
    let frames = bridge.until_answer(2);
    (frames.last().unwrap()["result"]["status"] == "cancelled", asked.elapsed())
}

fn rpc_text(frames: &[Value]) -> String {
    frames.iter().filter(|f| is(f, "message_update") && f["assistantMessageEvent"]["type"] == "text_delta").filter_map(|f| f["assistantMessageEvent"]["delta"].as_str()).collect()
}

fn prompt_rpc(bridge: &mut Bridge, _: &str) -> (String, bool) {
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    let frames = bridge.until(|f| is(f, "agent_end"));
    let answered = frames.iter().any(|f| is(f, "response") && f["id"] == "p1" && f["success"] == true);
    (rpc_text(&frames), answered)
}

fn cancel_rpc(bridge: &mut Bridge, _: &str) -> (bool, Duration) {
    bridge.rpc_abort_after_first_delta()
}

const FRONTS: [Front; 3] = [
    Front { serve: "rpc", open: open_rpc, prompt: prompt_rpc, cancel: cancel_rpc },
    Front { serve: "wire", open: open_wire, prompt: prompt_wire, cancel: cancel_wire },
    Front { serve: "acp", open: open_acp, prompt: prompt_acp, cancel: cancel_acp },
];

/// Runs `scenario` for every pair, each in a thread of its own.
fn every_pair(scenario: fn(&Front, &'static str)) {
    std::thread::scope(|scope| {
        for front in &FRONTS {
            for agent in DIALECTS {
                scope.spawn(move || scenario(front, agent));
            }
        }
    });
}

#[test]
fn every_pair_answers_a_prompt_with_the_agents_reply_ended_the_fronts_way() {
    every_pair(|front, agent| {
        let mut bridge = start(front.serve, agent, &[json!({"text": REPLY})]);
        let session = (front.open)(&mut bridge);
        let (text, ended) = (front.prompt)(&mut bridge, &session);
        assert_eq!(text, REPLY, "--serve {} before {agent}", front.serve);
        assert!(ended, "--serve {} before {agent}: not ended the front's way", front.serve);
    });
}

#[test]
fn every_pair_cancels_a_slow_reply_within_3_s() {
    every_pair(|front, agent| {
        let mut bridge = start(front.serve, agent, &slow_script());
        let session = (front.open)(&mut bridge);
        let (cancelled, after) = (front.cancel)(&mut bridge, &session);
        assert!(cancelled, "--serve {} before {agent}: not ended cancelled", front.serve);
        assert!(after < Duration::from_secs(3), "--serve {} before {agent}: cancelled after {after:?}", front.serve);
    });
}

#[test]
fn every_pair_ends_with_its_agent_at_host_eof() {
    every_pair(|front, agent| {
        let mut bridge = start(front.serve, agent, &[json!({"text": REPLY})]);
        (front.open)(&mut bridge);
        bridge.assert_host_eof_ends_both_within_3_s();
    });
}

/// `bridge --serve acp --record FILE -- agentwire --mode acp`: the proxied session (initialize,
/// session/new, a prompt) replays with `agentwire conformance run FILE`.
#[test]
fn the_acp_proxy_records_a_session_that_conformance_run_replays() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("recorded.jsonl");
    let bin = env!("CARGO_BIN_EXE_agentwire");
    let agent: Vec<std::ffi::OsString> = vec![bin.into(), "--mode".into(), "acp".into(), "--config-dir".into(), dir.path().join("config").into()];
    let cwd = dir.path().to_str().unwrap().to_owned();
    let extra = ["--agent-dialect", "acp", "--record", record.to_str().unwrap()];
    let mut bridge = Bridge::spawn("acp", &extra, &agent, &[], dir);
    bridge.request(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let new = bridge.request(2, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    let session = new.last().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    let frames = bridge.prompt(&session, "hello");
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
    drop(bridge.stdin.take());
    let status = bridge.exit_within(Instant::now(), Duration::from_secs(5), "host EOF");
    assert!(status.success(), "{status}");
    let transcript = std::fs::read_to_string(&record).unwrap();
    assert!(!transcript.contains(&session), "the session id is a capture: {transcript}");
    let run = std::process::Command::new(bin).args(["conformance", "run"]).arg(&record).output().unwrap();
    assert!(run.status.success(), "{}\n{}\n{transcript}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
}

/// What the model used travels with the reply: the wire agent's `StatusUpdate.token_usage`
/// becomes the usage of the assistant message a pi-style host reads, and a JSONL agent's
/// `message_end` usage the wire host's `StatusUpdate`.
#[test]
fn the_models_usage_reaches_the_host_through_the_remote_agent() {
    let mut bridge = start("rpc", "wire", &[json!({"text": REPLY})]);
    open_rpc(&mut bridge);
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    let frames = bridge.until(|f| is(f, "agent_end"));
    let end = frames.iter().find(|f| is(f, "message_end") && f["message"]["role"] == "assistant").unwrap_or_else(|| panic!("{frames:#?}"));
    let usage = &end["message"]["usage"];
    assert!(usage["input"].as_u64() > Some(0) && usage["output"].as_u64() > Some(0), "{usage}");

    let mut bridge = start("wire", "rpc", &[json!({"text": REPLY})]);
    open_wire(&mut bridge);
    let frames = bridge.request(2, "prompt", json!({"user_input": "hi"}));
    let used = frames.iter().find_map(|f| (f["params"]["type"] == "StatusUpdate").then(|| &f["params"]["payload"]["token_usage"]).filter(|u| !u.is_null()));
    assert!(used.is_some_and(|u| u["input_other"].as_u64() > Some(0) && u["output"].as_u64() > Some(0)), "{frames:#?}");
}

/// The same-dialect proxy passes a frame that does not fit the schema on unchanged (the agent
/// answers it), and says on stderr which side sent it and what is wrong.
#[test]
fn the_proxy_passes_a_bad_frame_on_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_agentwire");
    let mut child = std::process::Command::new(bin)
        .args(["bridge", "--serve", "acp", "--agent-dialect", "acp", "--", bin, "--mode", "acp", "--no-session", "--config-dir"])
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#, "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"mcpServers":[]}}"#, "\n",
    );
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), lines.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let answer: Value = stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|f| f["id"] == 2).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(answer["error"]["code"], -32602, "the agent answered it: {answer}");
    assert!(stderr.contains("line 2 from the host does not fit the acp schema"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
}
