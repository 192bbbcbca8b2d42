//! `agentwire bridge --serve acp` starts the agent once: what the agent speaks (dialect and ACP
//! version) is learnt from its answer to the host's own `initialize`, which a proxy hands back
//! to the host unchanged. The agent is a wrapper script that counts its starts.

mod common;

use std::ffi::OsString;

use agentwire::protocol::acp::acp_validator;
use agentwire::protocol::acp_v2::acp_v2_validator;
use common::bridge::Bridge;
use serde_json::{json, Value};

/// The bridge (with `extra` arguments) in front of `agentwire --mode <mode>` started through a
/// script that appends a line to `starts` each time (and what the agent reads to `starts.in`);
/// the host's frames checked against `v2`'s schema or v1's.
fn counted(mode: &str, v2: bool, extra: &[&str]) -> (Bridge, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let bin = env!("CARGO_BIN_EXE_agentwire");
    let mut agent: Vec<OsString> = vec!["sh".into(), "-c".into(), "echo start >> \"$0\"; tee -a \"$0.in\" | \"$@\"".into(), starts.clone().into(), bin.into()];
    agent.extend(["--mode".into(), mode.into(), "--no-session".into(), "--cwd".into(), dir.path().into(), "--config-dir".into(), dir.path().into()]);
    let host = if v2 { acp_v2_validator() } else { acp_validator() };
    (Bridge::spawn_checked("acp", extra, &agent, &[], dir, host), starts)
}

/// Host EOF: the bridge ends, exit 0; how many times the agent was started, and what it read.
fn finish_reading(mut bridge: Bridge, starts: &std::path::Path) -> (usize, String) {
    drop(bridge.stdin.take());
    let status = bridge.exit_within(std::time::Instant::now(), std::time::Duration::from_secs(10), "the bridge at host EOF");
    assert!(status.success(), "{status}");
    (std::fs::read_to_string(starts).unwrap().lines().count(), std::fs::read_to_string(starts.with_extension("in")).unwrap_or_default())
}

fn finish(bridge: Bridge, starts: &std::path::Path) -> usize {
    finish_reading(bridge, starts).0
}

/// The host's `initialize` in ACP `version` (1 or 2), and its answer.
fn initialize(bridge: &mut Bridge, version: u64) -> Value {
    let params = match version {
        1 => json!({"protocolVersion": 1, "clientCapabilities": {}}),
        _ => json!({"protocolVersion": version, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    };
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}));
    bridge.until(|f| f["id"] == 0).pop().unwrap()
}

fn session_new(bridge: &mut Bridge) -> Value {
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    bridge.until(|f| f["id"] == 1).pop().unwrap()
}

#[test]
fn a_v1_host_in_front_of_an_acp_agent_starts_it_once_and_gets_its_own_answer() {
    let (mut bridge, starts) = counted("acp", false, &[]);
    let init = initialize(&mut bridge, 1);
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    assert_eq!(init["result"]["agentInfo"]["name"], "agentwire", "the agent's own answer: {init}");
    assert!(session_new(&mut bridge)["result"]["sessionId"].is_string());
    assert_eq!(finish(bridge, &starts), 1);
}

#[test]
fn a_v2_host_in_front_of_a_v2_agent_starts_it_once() {
    let (mut bridge, starts) = counted("acp", true, &[]);
    let init = initialize(&mut bridge, 2);
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    assert!(session_new(&mut bridge)["result"]["sessionId"].is_string());
    assert_eq!(finish(bridge, &starts), 1);
}

#[test]
fn a_v2_host_in_front_of_an_rpc_agent_starts_it_once() {
    let (mut bridge, starts) = counted("rpc", true, &[]);
    let init = initialize(&mut bridge, 2);
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    assert!(session_new(&mut bridge)["result"]["sessionId"].is_string());
    assert_eq!(finish(bridge, &starts), 1);
}

#[test]
fn a_v1_host_with_agent_acp_version_2_speaks_v2_to_the_agent_once_started() {
    let (mut bridge, starts) = counted("acp", false, &["--agent-acp-version", "2"]);
    let init = initialize(&mut bridge, 1);
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    // The v1 front's own answer: the agent behind is spoken to in v2 by its remote agent.
    assert_eq!(init["result"]["agentInfo"]["name"], "agentwire-bridge", "{init}");
    assert!(session_new(&mut bridge)["result"]["sessionId"].is_string());
    let (started, read) = finish_reading(bridge, &starts);
    assert_eq!(started, 1);
    let first: Value = serde_json::from_str(read.lines().next().unwrap()).unwrap();
    assert_eq!(first["params"]["protocolVersion"], 2, "the agent is asked for v2: {read}");
}
