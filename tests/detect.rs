//! `client::detect::connect` finds each dialect by asking the agent (`agentwire --mode rpc|wire|
//! acp` as the agents), and the JSON-RPC agents' `initialize` answer comes back with it; the
//! bridge refuses a pair it cannot serve, naming both dialects.

use std::process::{Command, Stdio};
use std::time::Duration;

use agentwire::client::detect::{connect, Handshake};
use agentwire::client::rpc::MAX_AGENT_LINE_BYTES;
use agentwire::client::{AgentProcess, Detected, Dialect};
use agentwire::protocol::acp::{InitializeRequest, ProtocolVersion};
use agentwire::protocol::WireInitializeParams;
use agentwire::transport::{spawn_writer, LineReader};
use tokio::io::BufReader;

fn handshake() -> Handshake {
    let wire = WireInitializeParams { protocol_version: "1.10".into(), client: None, external_tools: None, hooks: None, capabilities: None, extra: Default::default() };
    Handshake::new(InitializeRequest::new(ProtocolVersion(1)), wire)
}

/// What `connect` finds for `agentwire --mode <mode>`, told `given` or not.
async fn found(mode: &str, given: Option<Dialect>) -> Detected {
    let dir = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentwire"));
    command.args(["--mode", mode, "--no-session", "--config-dir"]).arg(dir.path()).arg("--cwd").arg(dir.path());
    let mut agent = AgentProcess::spawn_command(command).unwrap();
    let (out, _writer) = spawn_writer(agent.take_stdin().unwrap(), 1 << 20);
    let mut lines = LineReader::new(BufReader::new(agent.take_stdout().unwrap()), MAX_AGENT_LINE_BYTES);
    let detected = connect(&mut lines, &out, &handshake(), given, Duration::from_secs(30)).await.unwrap();
    drop(out);
    agent.shutdown(Duration::from_secs(5)).await.unwrap();
    detected
}

#[tokio::test]
async fn a_jsonl_agent_is_found_by_its_ready_frame_and_get_state() {
    let Detected::Rpc { ready, state } = found("rpc", None).await else { panic!("not rpc") };
    assert!(ready.is_some(), "agentwire writes ready first");
    assert!(state.get("sessionId").is_some(), "the get_state data: {state}");
}

#[tokio::test]
async fn an_acp_agent_is_found_by_its_initialize_answer() {
    let Detected::Acp(init) = found("acp", None).await else { panic!("not acp") };
    assert_eq!(init.protocol_version, ProtocolVersion(1));
    assert!(init.agent_capabilities.load_session);
}

#[tokio::test]
async fn a_wire_agent_is_found_by_its_wire_initialize_answer() {
    let Detected::Wire(init) = found("wire", None).await else { panic!("not wire") };
    assert_eq!(init.protocol_version, "1.10");
}

#[tokio::test]
async fn a_given_dialect_is_connected_without_probing() {
    assert_eq!(found("wire", Some(Dialect::Wire)).await.dialect(), Dialect::Wire);
    assert_eq!(found("acp", Some(Dialect::Acp)).await.dialect(), Dialect::Acp);
    assert_eq!(found("rpc", Some(Dialect::Rpc)).await.dialect(), Dialect::Rpc);
}

#[test]
fn record_is_refused_for_an_agent_of_another_dialect_naming_both() {
    // A translated session is no transcript of either side: only a proxied one is recorded.
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_agentwire");
    let out = Command::new(bin)
        .args(["bridge", "--serve", "wire", "--record"])
        .arg(dir.path().join("t.jsonl"))
        .args(["--", bin, "--mode", "acp", "--no-session", "--config-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--record needs the agent to speak the served dialect (wire); it speaks acp"), "{stderr}");
    assert!(out.stdout.is_empty());
}
