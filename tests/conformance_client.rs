//! `agentwire conformance client --dialect acp` judging two clients: a deliberately faulty one
//! (tests/fixtures/faulty_acp_client.py) fails exactly the requirements it breaks, and our own
//! Rust `AcpClient` (examples/host.rs) passes. Real clients (acpx, the official TypeScript SDK's
//! example client) are judged in scripts/test.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let path = deps.parent().unwrap().join("examples").join(name);
    assert!(path.exists(), "build the examples first (cargo test builds them): {}", path.display());
    path
}

/// Runs the harness on `client`; the per-requirement verdicts (JSON lines) and the exit code.
fn judge(client: &[String], scenarios: &[&str]) -> (Vec<Value>, Option<i32>) {
    judge_in("acp", client, scenarios)
}

/// [`judge`] in a dialect.
fn judge_in(dialect: &str, client: &[String], scenarios: &[&str]) -> (Vec<Value>, Option<i32>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentwire"));
    command.args(["conformance", "client", "--dialect", dialect, "--format", "json", "--wait", "10", "--timeout", "40"]);
    for s in scenarios {
        command.args(["--scenario", s]);
    }
    let out = command.arg("--").args(client).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (lines, out.status.code())
}

fn verdict<'a>(lines: &'a [Value], id: &str) -> &'a str {
    lines.iter().find(|l| l["requirement"] == id).unwrap_or_else(|| panic!("no {id} in {lines:#?}"))["verdict"].as_str().unwrap_or("none")
}

#[test]
fn a_faulty_client_fails_the_requirements_it_breaks() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faulty_acp_client.py");
    let client = vec!["python3".to_owned(), script.display().to_string(), "{{agent}}".to_owned()];
    let (lines, code) = judge(&client, &[]);
    // A null result where WriteTextFileResponse is due; the first option chosen whatever its
    // kind (fail-open); a hang when an update comes before the session/new response.
    assert_eq!(verdict(&lines, "ACP-CLIENT-FS-2"), "fail", "{lines:#?}");
    assert_eq!(verdict(&lines, "ACP-CLIENT-SCHEMA-1"), "fail", "{lines:#?}");
    assert_eq!(verdict(&lines, "ACP-CLIENT-PERM-2"), "fail", "{lines:#?}");
    assert_eq!(verdict(&lines, "ACP-CLIENT-ORDER-1"), "fail", "{lines:#?}");
    // What it does right stays right.
    for id in ["ACP-CLIENT-INIT-1", "ACP-CLIENT-EXT-1", "ACP-CLIENT-EXT-2", "ACP-CLIENT-PERM-1", "ACP-CLIENT-FS-1", "ACP-CLIENT-EOF-1", "ACP-CLIENT-EOF-2"] {
        assert_eq!(verdict(&lines, id), "pass", "{id}: {lines:#?}");
    }
    let null = lines.iter().find(|l| l["requirement"] == "ACP-CLIENT-FS-2").unwrap()["findings"][0]["detail"].as_str().unwrap();
    assert!(null.contains(r#""result":null"#), "the frame is quoted: {null}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

#[test]
fn our_rust_acp_client_passes() {
    let client = vec![example("host").display().to_string(), "--dialect".into(), "acp".into(), "--".into(), "sh".into(), "-c".into(), "{{agent}}".into()];
    let (lines, code) = judge(&client, &[]);
    for l in &lines {
        assert!(l["verdict"] != "fail" && l["verdict"] != "not testable", "{l}");
    }
    // It answers permission requests `cancelled` and advertises no fs or terminal methods.
    assert_eq!(verdict(&lines, "ACP-CLIENT-PERM-1"), "pass");
    assert_eq!(verdict(&lines, "ACP-CLIENT-FS-2"), "n/a");
    assert_eq!(code, Some(0), "{lines:#?}");
}

#[test]
fn a_client_command_without_the_agent_placeholder_is_refused_with_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentwire")).args(["conformance", "client", "--dialect", "acp", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("{{agent}}"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// tests/fixtures/acp_client_faults.py with one fault, judged on the scenarios that show it.
fn judge_fault(fault: &str, scenarios: &[&str]) -> (Vec<Value>, Option<i32>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp_client_faults.py");
    judge(&["python3".to_owned(), script.display().to_string(), fault.to_owned(), "{{agent}}".to_owned()], scenarios)
}

#[test]
fn the_fault_free_client_passes_with_no_client_capabilities() {
    let (lines, code) = judge_fault("none", &[]);
    for l in &lines {
        assert!(l["verdict"] != "fail" && l["verdict"] != "not testable", "{l}");
    }
    // Its initialize leaves clientCapabilities out, as the schema allows.
    assert_eq!(verdict(&lines, "ACP-CLIENT-INIT-1"), "pass");
    for id in ["ACP-CLIENT-ORDER-2", "ACP-CLIENT-RPC-1", "ACP-CLIENT-PERM-3", "ACP-CLIENT-CANCEL-1", "ACP-CLIENT-CANCEL-3"] {
        assert_eq!(verdict(&lines, id), "pass", "{id}: {lines:#?}");
    }
    assert_eq!(verdict(&lines, "ACP-CLIENT-VERSION-1"), "n/a", "it asks for v1: {lines:#?}");
    assert_eq!(code, Some(0), "{lines:#?}");
}

#[test]
fn a_permission_request_answered_with_an_error_fails_perm_3() {
    let (lines, _) = judge_fault("perm-error", &["permission"]);
    assert_eq!(verdict(&lines, "ACP-CLIENT-PERM-3"), "fail", "{lines:#?}");
    // The request was answered: the JSON-RPC requirement holds.
    assert_eq!(verdict(&lines, "ACP-CLIENT-PERM-1"), "pass", "{lines:#?}");
}

#[test]
fn a_permission_request_answered_twice_fails_rpc_1() {
    let (lines, code) = judge_fault("double-answer", &["permission"]);
    assert_eq!(verdict(&lines, "ACP-CLIENT-RPC-1"), "fail", "{lines:#?}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

#[test]
fn session_cancel_sent_as_a_request_fails_cancel_3() {
    let (lines, code) = judge_fault("cancel-request", &["cancel"]);
    assert_eq!(verdict(&lines, "ACP-CLIENT-CANCEL-3"), "fail", "{lines:#?}");
    assert_eq!(code, Some(1), "a CAPABILITY failure fails the run");
}

#[test]
fn a_prompt_before_the_session_new_response_fails_order_2() {
    let (lines, code) = judge_fault("early-prompt", &["initialize"]);
    assert_eq!(verdict(&lines, "ACP-CLIENT-ORDER-2"), "fail", "{lines:#?}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

/// tests/fixtures/rpc_client_faults.py with one fault, judged in the rpc dialect.
fn judge_rpc_fault(fault: &str, scenarios: &[&str]) -> (Vec<Value>, Option<i32>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpc_client_faults.py");
    judge_in("rpc", &["python3".to_owned(), script.display().to_string(), fault.to_owned(), "{{agent}}".to_owned()], scenarios)
}

#[test]
fn the_fault_free_rpc_host_passes_every_rpc_requirement() {
    let (lines, code) = judge_rpc_fault("none", &[]);
    assert!(lines.iter().all(|l| l["requirement"].as_str().is_some_and(|r| r.starts_with("RPC-CLIENT-"))), "only rpc requirements: {lines:#?}");
    for l in &lines {
        assert_eq!(l["verdict"], "pass", "{l}");
    }
    assert_eq!(code, Some(0), "{lines:#?}");
}

#[test]
fn an_rpc_host_that_splits_records_at_u2028_fails_frame_2() {
    let (lines, code) = judge_rpc_fault("splitlines", &["framing"]);
    assert_eq!(verdict(&lines, "RPC-CLIENT-FRAME-2"), "fail", "{lines:#?}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

#[test]
fn an_rpc_host_that_answers_a_fire_and_forget_request_fails_ui_1() {
    let (lines, code) = judge_rpc_fault("answer-notify", &["extension-ui"]);
    assert_eq!(verdict(&lines, "RPC-CLIENT-UI-1"), "fail", "{lines:#?}");
    assert_eq!(verdict(&lines, "RPC-CLIENT-UI-2"), "pass", "{lines:#?}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

/// tests/fixtures/wire_client_faults.py with one fault, judged in the wire dialect.
fn judge_wire_fault(fault: &str, scenarios: &[&str]) -> (Vec<Value>, Option<i32>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire_client_faults.py");
    judge_in("wire", &["python3".to_owned(), script.display().to_string(), fault.to_owned(), "{{agent}}".to_owned()], scenarios)
}

#[test]
fn the_fault_free_wire_host_passes_every_wire_requirement() {
    let (lines, code) = judge_wire_fault("none", &[]);
    assert!(lines.iter().all(|l| l["requirement"].as_str().is_some_and(|r| r.starts_with("WIRE-CLIENT-"))), "only wire requirements: {lines:#?}");
    for l in &lines {
        assert_eq!(l["verdict"], "pass", "{l}");
    }
    assert_eq!(code, Some(0), "{lines:#?}");
}

#[test]
fn a_wire_host_that_answers_a_request_twice_fails_req_1() {
    let (lines, code) = judge_wire_fault("double-answer", &["approval"]);
    assert_eq!(verdict(&lines, "WIRE-CLIENT-REQ-1"), "fail", "{lines:#?}");
    assert_eq!(code, Some(1), "a MANDATORY failure fails the run");
}

#[test]
fn a_wire_host_that_answers_an_event_fails_event_1() {
    let (lines, _) = judge_wire_fault("answer-event", &["extensions"]);
    assert_eq!(verdict(&lines, "WIRE-CLIENT-EVENT-1"), "fail", "{lines:#?}");
}

#[test]
fn a_client_that_goes_on_in_v2_after_a_v1_answer_fails_version_1() {
    let (lines, _) = judge_fault("v2-after-v1", &["version-downgrade"]);
    assert_eq!(verdict(&lines, "ACP-CLIENT-VERSION-1"), "fail", "{lines:#?}");
    let detail = lines.iter().find(|l| l["requirement"] == "ACP-CLIENT-VERSION-1").unwrap()["findings"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("mcpServers"), "the v1 violation is quoted: {detail}");
}
