//! The limits as flags (issue 15): `--max-session-bytes` (the session loader's size cap) and
//! `--max-outbound-bytes` (the writer's byte budget), through the real binary.

mod common;

use std::process::{Command, Stdio};

use common::{text_reply, tool_reply, Agent};
use serde_json::json;

/// A real session file of a little over `bytes` bytes (a header and one long user message).
fn session_file(dir: &std::path::Path, bytes: usize) -> std::path::PathBuf {
    let path = dir.join("big.jsonl");
    let header = json!({"type":"session","version":3,"id":"01a2093a-0620-7003-8f9f-b3f0e7ef5fde","timestamp":"2026-11-23T16:25:27.328Z","cwd":dir.display().to_string()});
    let entry = json!({"type":"message","id":"4aa8f5c0","parentId":null,"timestamp":"2026-11-23T16:25:27.336Z",
        "message":{"role":"user","content":[{"type":"text","text":"x".repeat(bytes)}],"timestamp":1_795_451_127_336u64}});
    std::fs::write(&path, format!("{header}\n{entry}\n")).unwrap();
    path
}

#[test]
fn a_session_over_the_size_cap_is_refused_at_start_naming_the_path_and_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path(), 5000);
    let run = |cap: &str| {
        Command::new(env!("CARGO_BIN_EXE_agentwire"))
            .args(["--mode", "rpc"])
            .arg("--cwd")
            .arg(dir.path())
            .arg("--config-dir")
            .arg(dir.path())
            .arg("--session")
            .arg(&path)
            .args(["--max-session-bytes", cap])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let refused = run("4096");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&path.display().to_string()) && stderr.contains("4096-byte session size limit"), "{stderr}");
    assert!(refused.stdout.is_empty(), "no ready frame for an agent that did not start");
    // The same file under a cap it fits in loads.
    let loaded = run("8192");
    assert_eq!(loaded.status.code(), Some(0), "{}", String::from_utf8_lossy(&loaded.stderr));
    assert!(String::from_utf8_lossy(&loaded.stdout).starts_with("{\"type\":\"ready\""));
}

#[test]
fn switch_session_and_list_sessions_honour_the_size_cap() {
    let sessions = tempfile::tempdir().unwrap();
    let big = session_file(sessions.path(), 5000);
    let mut a = Agent::start(&["--max-session-bytes", "4096", "--session-dir", sessions.path().to_str().unwrap()], &[]);
    let r = a.request(json!({"id":"sw","type":"switch_session","sessionPath":big.display().to_string()}));
    assert_eq!(r["success"], false, "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.starts_with("Session file too large: ") && error.contains(&big.display().to_string()) && error.contains("4096-byte session size limit"), "{error}");
    assert!(!error.contains("xxxx"), "the content is never quoted: {error}");
    let list = a.request(json!({"id":"ls","type":"list_sessions"}));
    assert_eq!(list["data"]["sessions"], json!([]), "a file over the cap is not read for the listing: {list}");
    // The agent goes on serving.
    assert_eq!(a.request(json!({"id":"st","type":"get_state"}))["success"], true);
}

#[test]
fn a_tiny_outbound_budget_still_delivers_every_frame_whole() {
    // With a one-byte budget every frame is larger than the budget: each waits for an empty queue
    // and goes alone. A budget that made such frames wait forever would hang here.
    let big = "head -c 300000 /dev/zero | tr '\\0' a";
    let mut a = Agent::start(&["--max-outbound-bytes", "1"], &[tool_reply("bash", json!({"command": big})), text_reply(&"streamed ".repeat(200))]);
    a.send(json!({"id":"p","type":"prompt","message":"go"}));
    let frames = a.until_prompt_result("p");
    let end = frames.iter().find(|f| f["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], false, "{end}");
    let last = frames.iter().rev().find(|f| f["type"] == "message_end").unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "streamed ".repeat(200));
    let r = a.request(json!({"id":"b","type":"bash","command": big}));
    assert_eq!((&r["success"], &r["data"]["exitCode"]), (&json!(true), &json!(0)), "{r}");
}
