//! opencode 1.18.33 (npm `opencode-ai`, installed pinned in tests/opencode by scripts/test), a
//! third-party ACP agent run as `opencode acp`, behind `agentwire bridge --serve rpc` and
//! `--serve wire`, its one model (a provider `fake` on `@ai-sdk/openai-compatible`, which
//! opencode bundles) served by the fake model server on 127.0.0.1: a prompt answered with the
//! model's streamed reply and ended the front's way, a cancel during a slow reply, and host EOF
//! leaving no process behind.
//!
//! Opt-in: `AGENTWIRE_BRIDGE_OPENCODE=/path/to/opencode` (scripts/test sets it after
//! installing), so a plain `cargo test` needs no node.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::bridge::Bridge;
use common::fake_llm::FakeLlm;
use serde_json::{json, Value};

const SKIP: &str = "skipped: set AGENTWIRE_BRIDGE_OPENCODE=/path/to/opencode (scripts/test does)";

fn opencode() -> Option<PathBuf> {
    let opencode = PathBuf::from(std::env::var_os("AGENTWIRE_BRIDGE_OPENCODE")?);
    assert!(opencode.exists(), "AGENTWIRE_BRIDGE_OPENCODE names no file: {}", opencode.display());
    Some(opencode)
}

/// The bridge serving `serve` in front of `opencode acp`, its model playing `script`: a fresh
/// HOME (and XDG directories in it) whose opencode.json selects the fake server's model, with
/// auto-update, model list fetches, LSP downloads and default plugins off.
fn start(serve: &str, opencode: &Path, script: Vec<Value>) -> (Bridge, FakeLlm) {
    let (dir, env, agent, llm) = set_up(opencode, script);
    (Bridge::spawn(serve, &[], &agent, &env, dir), llm)
}

/// What [`start`] runs: the directory, the environment, the agent's command line and the model.
fn set_up(opencode: &Path, script: Vec<Value>) -> (tempfile::TempDir, Vec<(&'static str, OsString)>, Vec<OsString>, FakeLlm) {
    let llm = FakeLlm::from_script(script).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
    let provider = json!({"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": llm.base_url(), "apiKey": "bridge-key"}, "models": {"fake-model": {"name": "Fake Model", "tool_call": true}}});
    let config = json!({"model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled", "provider": {"fake": provider}});
    std::fs::write(home.join(".config/opencode/opencode.json"), config.to_string()).unwrap();
    let env: Vec<(&str, OsString)> = vec![
        ("XDG_CONFIG_HOME", home.join(".config").into()),
        ("XDG_DATA_HOME", home.join(".local/share").into()),
        ("XDG_CACHE_HOME", home.join(".cache").into()),
        ("XDG_STATE_HOME", home.join(".local/state").into()),
        ("HOME", home.into()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".into()),
    ];
    let agent: Vec<OsString> = vec![opencode.into(), "acp".into()];
    (dir, env, agent, llm)
}

/// A reply streamed one character every 300 ms.
fn slow() -> Vec<Value> {
    vec![json!({"text": "a slow reply from opencode, one character at a time", "chunkSize": 1, "delayMs": 300})]
}

fn is(frame: &Value, kind: &str) -> bool {
    frame["type"] == kind
}

fn text_deltas(frames: &[Value]) -> Vec<&str> {
    frames.iter().filter(|f| is(f, "message_update") && f["assistantMessageEvent"]["type"] == "text_delta").filter_map(|f| f["assistantMessageEvent"]["delta"].as_str()).collect()
}

fn wire_parts(frames: &[Value]) -> Vec<&str> {
    frames.iter().filter(|f| f["params"]["type"] == "ContentPart" && f["params"]["payload"]["type"] == "text").filter_map(|f| f["params"]["payload"]["text"].as_str()).collect()
}

fn wire_initialize(bridge: &mut Bridge) {
    let init = bridge.request(1, "initialize", json!({"protocol_version": "1.10"}));
    assert_eq!(init.last().unwrap()["result"]["protocol_version"], "1.10", "{init:#?}");
}

#[test]
fn opencode_behind_serve_rpc_streams_the_models_reply_ending_agent_end_and_a_successful_response() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &opencode, vec![json!({"text": "piped from opencode"})]);
    bridge.until(|f| is(f, "ready"));
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    let frames = bridge.until(|f| is(f, "agent_end"));
    let deltas = text_deltas(&frames);
    assert_eq!(deltas.concat(), "piped from opencode", "{frames:#?}");
    assert!(deltas.len() > 1, "streamed in several deltas: {frames:#?}");
    assert!(frames.iter().any(|f| is(f, "response") && f["id"] == "p1" && f["success"] == true), "{frames:#?}");
}

#[test]
fn opencode_behind_serve_rpc_bash_call_starts_with_its_arguments_and_ends_with_its_output() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let call = json!({"toolCalls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo from-opencode-bash", "description": "Echoes"}}]});
    let (mut bridge, _llm) = start("rpc", &opencode, vec![call, json!({"text": "ran it"})]);
    bridge.until(|f| is(f, "ready"));
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "run it"}));
    let mut frames = Vec::new();
    loop {
        let frame = bridge.next().unwrap_or_else(|| panic!("no agent_end; seen: {frames:#?}"));
        if is(&frame, "extension_ui_request") {
            bridge.send(json!({"type": "extension_ui_response", "id": frame["id"], "value": "Approve"}));
        }
        let end = is(&frame, "agent_end");
        frames.push(frame);
        if end {
            break;
        }
    }
    let start = frames.iter().find(|f| is(f, "tool_execution_start")).unwrap_or_else(|| panic!("{frames:#?}"));
    // opencode announces the call with `{cwd}` and sends the arguments in an update.
    assert_eq!(start["args"]["command"], "echo from-opencode-bash", "{start}");
    let end = frames.iter().find(|f| is(f, "tool_execution_end")).unwrap_or_else(|| panic!("{frames:#?}"));
    assert_eq!(end["isError"], false, "{end}");
    assert!(end["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("from-opencode-bash"), "{end}");
    assert_eq!(text_deltas(&frames).concat(), "ran it", "{frames:#?}");
}

#[test]
fn opencode_behind_serve_rpc_abort_during_a_slow_reply_ends_aborted_within_5_s() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &opencode, slow());
    bridge.until(|f| is(f, "ready"));
    let (aborted, after) = bridge.rpc_abort_after_first_delta();
    assert!(aborted, "the run did not end aborted");
    assert!(after < Duration::from_secs(5), "aborted after {after:?}");
}

#[test]
fn opencode_behind_serve_rpc_host_eof_ends_the_bridge_and_opencode_within_3_s() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &opencode, vec![]);
    bridge.until(|f| is(f, "ready"));
    bridge.assert_host_eof_ends_both_within_3_s();
}

#[test]
fn opencode_behind_serve_wire_streams_content_parts_and_finishes() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("wire", &opencode, vec![json!({"text": "wired from opencode"})]);
    wire_initialize(&mut bridge);
    let frames = bridge.request(2, "prompt", json!({"user_input": "hi"}));
    let parts = wire_parts(&frames);
    assert_eq!(parts.concat(), "wired from opencode", "{frames:#?}");
    assert!(parts.len() > 1, "streamed in several parts: {frames:#?}");
    let events: Vec<&Value> = frames.iter().filter(|f| f["method"] == "event").map(|f| &f["params"]).collect();
    assert_eq!((events.first().unwrap()["type"].as_str(), events.last().unwrap()["type"].as_str()), (Some("TurnBegin"), Some("TurnEnd")), "{frames:#?}");
    assert_eq!(frames.last().unwrap()["result"]["status"], "finished", "{frames:#?}");
}

#[test]
fn opencode_behind_serve_wire_cancel_during_a_slow_reply_ends_cancelled_within_5_s() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("wire", &opencode, slow());
    wire_initialize(&mut bridge);
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"user_input": "hi"}}));
    while bridge.next().expect("a content part")["params"]["type"] != "ContentPart" {}
    let asked = Instant::now();
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "cancel", "params": {}}));
    let frames = bridge.until_answer(2);
    let after = asked.elapsed();
    assert_eq!(frames.last().unwrap()["result"]["status"], "cancelled", "{frames:#?}");
    assert!(after < Duration::from_secs(5), "cancelled after {after:?}");
}

#[test]
fn opencode_behind_serve_wire_host_eof_ends_the_bridge_and_opencode_within_3_s() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("wire", &opencode, vec![]);
    wire_initialize(&mut bridge);
    bridge.assert_host_eof_ends_both_within_3_s();
}

/// A v2 ACP host in front of opencode, which speaks v1 only (it answers `initialize` with 2 by
/// 1): the bridge finds that out itself and translates, with no option given. Every frame the
/// bridge writes is checked against the v2 schema.
#[test]
fn a_v2_host_in_front_of_opencode_which_speaks_v1_is_translated() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (dir, env, agent, llm) = set_up(&opencode, vec![json!({"text": "v1 agent, v2 host"})]);
    let cwd = dir.path().display().to_string();
    let mut bridge = Bridge::spawn_checked("acp", &[], &agent, &env, dir, agentwire::protocol::acp_v2::acp_v2_validator());
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}}));
    let init = bridge.until(|f| f["id"] == 0).pop().unwrap();
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let session = bridge.until(|f| f["id"] == 1).pop().unwrap()["result"]["sessionId"].as_str().expect("a session").to_owned();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}));
    let frames = bridge.until(|f| f["params"]["update"]["sessionUpdate"] == "state_update" && f["params"]["update"]["state"] == "idle");
    assert_eq!(frames.last().unwrap()["params"]["update"]["stopReason"], "end_turn", "{frames:#?}");
    let text: String = frames.iter().filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk").map(|f| f["params"]["update"]["content"]["text"].as_str().unwrap_or_default()).collect();
    assert_eq!(text, "v1 agent, v2 host");
    drop(llm);
    drop(bridge.stdin.take());
    let status = bridge.exit_within(Instant::now(), Duration::from_secs(10), "host EOF");
    assert!(status.success(), "{status}");
}

/// A v2 host in front of opencode (translated) sees opencode's own auth method
/// (`opencode-login`, whose `auth/login` reaches opencode and is answered by it) and its own
/// `model` and `mode` config options, switches the model, and opencode's answer (its new
/// current model) reaches the host.
#[test]
fn a_v2_host_in_front_of_opencode_sees_its_auth_method_model_and_mode_and_switches_the_model() {
    let Some(opencode) = opencode() else { return eprintln!("{SKIP}") };
    let (dir, env, agent, llm) = set_up(&opencode, vec![json!({"text": "x"})]);
    let cwd = dir.path().display().to_string();
    let mut bridge = Bridge::spawn_checked("acp", &[], &agent, &env, dir, agentwire::protocol::acp_v2::acp_v2_validator());
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}}));
    let init = bridge.until(|f| f["id"] == 0).pop().unwrap();
    let methods = init["result"]["authMethods"].as_array().cloned().unwrap_or_default();
    assert!(methods.iter().any(|m| m["methodId"] == "opencode-login" && m["type"] == "agent"), "opencode's auth method: {init}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 10, "method": "auth/login", "params": {"methodId": "opencode-login"}}));
    let login = bridge.until(|f| f["id"] == 10).pop().unwrap();
    assert!(login["result"].is_object(), "opencode's own answer: {login}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 11, "method": "auth/login", "params": {"methodId": "nope"}}));
    let refused = bridge.until(|f| f["id"] == 11).pop().unwrap();
    assert_eq!((refused["error"]["code"].as_i64(), &refused["error"]["data"]["methodId"]), (Some(-32602), &json!("nope")), "opencode's own error: {refused}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let answer = bridge.until(|f| f["id"] == 1).pop().unwrap();
    let options = answer["result"]["configOptions"].as_array().cloned().unwrap_or_default();
    let find = |options: &[Value], id: &str| options.iter().find(|o| o["configId"] == id).cloned();
    let model = find(&options, "model").unwrap_or_else(|| panic!("opencode's model option: {answer}"));
    assert!(find(&options, "mode").is_some(), "opencode's mode option: {answer}");
    let other = model["options"].as_array().unwrap().iter().map(|v| v["value"].as_str().unwrap().to_owned()).find(|v| *v != model["currentValue"]).unwrap_or_else(|| panic!("a second model: {model}"));
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_config_option", "params": {"sessionId": session, "configId": "model", "type": "select", "value": other}}));
    let set = bridge.until(|f| f["id"] == 2).pop().unwrap();
    let now = set["result"]["configOptions"].as_array().and_then(|o| find(o, "model")).unwrap_or_else(|| panic!("{set}"));
    assert_eq!(now["currentValue"], other.as_str(), "opencode reports the switch: {set}");
    drop(llm);
    drop(bridge.stdin.take());
    let status = bridge.exit_within(Instant::now(), Duration::from_secs(10), "host EOF");
    assert!(status.success(), "{status}");
}
