//! kimi-cli 1.50.0 (PyPI `kimi-cli`, installed pinned into target/kimi-venv by scripts/test),
//! run as `kimi --wire --work-dir DIR`, behind `agentwire bridge --serve acp` and `--serve rpc`,
//! its one model (provider type `kimi`, an OpenAI-compatible Chat Completions client) served by
//! the fake model server on 127.0.0.1: a prompt answered with the model's streamed reply and
//! ended the front's way, a cancel during a slow reply, a `Shell` call approved through the
//! front, and host EOF leaving no process behind.
//!
//! Opt-in: `AGENTWIRE_BRIDGE_KIMI=/path/to/kimi` (scripts/test sets it after installing), so a
//! plain `cargo test` needs no python.

mod common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use common::bridge::{assert_streamed, updates, Bridge};
use common::fake_llm::FakeLlm;
use serde_json::{json, Value};

const SKIP: &str = "skipped: set AGENTWIRE_BRIDGE_KIMI=/path/to/kimi (scripts/test does)";

fn kimi() -> Option<PathBuf> {
    let kimi = PathBuf::from(std::env::var_os("AGENTWIRE_BRIDGE_KIMI")?);
    assert!(kimi.exists(), "AGENTWIRE_BRIDGE_KIMI names no file: {}", kimi.display());
    Some(kimi)
}

/// The bridge serving `serve` in front of `kimi --wire`, its model playing `script`: a fresh
/// HOME whose `.kimi/config.toml` points the default model at the fake server, and a work dir.
fn start(serve: &str, kimi: &std::path::Path, script: Vec<Value>) -> (Bridge, FakeLlm) {
    let llm = FakeLlm::from_script(script).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".kimi")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let config = format!(
        "default_model = \"fake\"\n\n[models.fake]\nprovider = \"fakeprov\"\nmodel = \"fake-model\"\nmax_context_size = 131072\n\n\
         [providers.fakeprov]\ntype = \"kimi\"\nbase_url = \"{}\"\napi_key = \"bridge-key\"\n",
        llm.base_url()
    );
    std::fs::write(home.join(".kimi/config.toml"), config).unwrap();
    let env: Vec<(&str, OsString)> = vec![
        ("HOME", home.into()),
        ("KIMI_DISABLE_TELEMETRY", "1".into()),
        ("KIMI_CLI_NO_AUTO_UPDATE", "1".into()),
        ("LANG", "C.UTF-8".into()),
    ];
    let agent: Vec<OsString> = vec![kimi.into(), "--wire".into(), "--work-dir".into(), work.into()];
    (Bridge::spawn(serve, &[], &agent, &env, dir), llm)
}

/// A reply streamed one character every 300 ms.
fn slow() -> Vec<Value> {
    vec![json!({"text": "a slow reply from kimi, one character at a time", "chunkSize": 1, "delayMs": 300})]
}

fn is(frame: &Value, kind: &str) -> bool {
    frame["type"] == kind
}

fn rpc_text(frames: &[Value]) -> String {
    frames.iter().filter(|f| is(f, "message_update") && f["assistantMessageEvent"]["type"] == "text_delta").filter_map(|f| f["assistantMessageEvent"]["delta"].as_str()).collect()
}

#[test]
fn kimi_behind_serve_acp_streams_the_models_reply_ending_end_turn() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, llm) = start("acp", &kimi, vec![json!({"text": "desserts from kimi, streamed"})]);
    let session = bridge.open();
    let frames = bridge.prompt(&session, "stressed");
    assert_streamed(&frames, "desserts from kimi, streamed");
    assert_eq!(llm.seen().len(), 1, "one model request");
}

#[test]
fn kimi_behind_serve_acp_session_cancel_during_a_slow_reply_ends_cancelled_within_5_s() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("acp", &kimi, slow());
    let session = bridge.open();
    bridge.assert_cancel_ends_cancelled(&session);
}

#[test]
fn kimi_behind_serve_acp_asks_the_host_before_its_shell_runs_and_runs_it_when_allowed() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let call = json!({"toolCalls": [{"id": "call_sh_1", "name": "Shell", "arguments": {"command": "echo from-kimi-shell"}}]});
    let (mut bridge, _llm) = start("acp", &kimi, vec![call, json!({"text": "ran it"})]);
    let session = bridge.open();
    let (frames, offered) = bridge.prompt_choosing(&session, "Allow");
    assert!(!offered.is_empty(), "kimi asked no approval: {frames:#?}");
    let calls = updates(&frames, "tool_call");
    assert_eq!(calls.len(), 1, "{frames:#?}");
    let done: Vec<_> = updates(&frames, "tool_call_update").into_iter().filter(|u| u["status"] == "completed").collect();
    assert_eq!(done.len(), 1, "{frames:#?}");
    assert!(done[0].to_string().contains("from-kimi-shell"), "{:#}", done[0]);
    assert_eq!(frames.last().unwrap()["result"]["stopReason"], "end_turn", "{frames:#?}");
}

#[test]
fn kimi_behind_serve_acp_host_eof_ends_the_bridge_and_kimi_within_3_s() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("acp", &kimi, vec![]);
    bridge.open();
    bridge.assert_host_eof_ends_both_within_3_s();
}

#[test]
fn kimi_behind_serve_rpc_streams_the_models_reply_ending_agent_end_and_a_successful_response() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &kimi, vec![json!({"text": "piped from kimi"})]);
    bridge.until(|f| is(f, "ready"));
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    let frames = bridge.until(|f| is(f, "agent_end"));
    assert_eq!(rpc_text(&frames), "piped from kimi", "{frames:#?}");
    let deltas = frames.iter().filter(|f| is(f, "message_update") && f["assistantMessageEvent"]["type"] == "text_delta").count();
    assert!(deltas > 1, "streamed in several deltas: {frames:#?}");
    assert!(frames.iter().any(|f| is(f, "response") && f["id"] == "p1" && f["success"] == true), "{frames:#?}");
}

#[test]
fn kimi_behind_serve_rpc_asks_approval_as_the_extension_ui_select_its_ready_frame_announces() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let call = json!({"toolCalls": [{"id": "call_sh_1", "name": "Shell", "arguments": {"command": "echo from-kimi-shell"}}]});
    let (mut bridge, _llm) = start("rpc", &kimi, vec![call, json!({"text": "ran it"})]);
    let ready = bridge.until(|f| is(f, "ready")).pop().unwrap();
    assert_eq!(ready["capabilities"]["extensionUi"], true, "{ready}");
    bridge.send(json!({"id": "p1", "type": "prompt", "message": "run it"}));
    let asked = bridge.until(|f| is(f, "extension_ui_request")).pop().unwrap();
    assert_eq!((&asked["method"], &asked["options"]), (&json!("select"), &json!(["Approve", "Deny"])), "{asked}");
    bridge.send(json!({"type": "extension_ui_response", "id": asked["id"], "value": "Approve"}));
    let frames = bridge.until(|f| is(f, "agent_end"));
    let end = frames.iter().find(|f| is(f, "tool_execution_end")).unwrap_or_else(|| panic!("{frames:#?}"));
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(end["result"]["content"][0]["text"], "from-kimi-shell\n", "{end}");
    assert_eq!(rpc_text(&frames), "ran it", "{frames:#?}");
}

#[test]
fn kimi_behind_serve_rpc_abort_during_a_slow_reply_ends_aborted_within_5_s() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &kimi, slow());
    bridge.until(|f| is(f, "ready"));
    let (aborted, after) = bridge.rpc_abort_after_first_delta();
    assert!(aborted, "the run did not end aborted");
    assert!(after < Duration::from_secs(5), "aborted after {after:?}");
}

#[test]
fn kimi_behind_serve_rpc_host_eof_ends_the_bridge_and_kimi_within_3_s() {
    let Some(kimi) = kimi() else { return eprintln!("{SKIP}") };
    let (mut bridge, _llm) = start("rpc", &kimi, vec![]);
    bridge.until(|f| is(f, "ready"));
    bridge.assert_host_eof_ends_both_within_3_s();
}
