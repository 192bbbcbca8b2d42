//! ACP v2's unstable surface through the binary (`session/fork`, `session/set_title`, `usage`
//! on `idle`), with raw frames: every frame both ways is validated against the vendored v2
//! unstable schema (`schema/acp/v2/schema.unstable.json`) and, for the stable methods, the
//! stable one (`schema/acp/v2/schema.json`). Effects are checked in the session files, read back
//! by a new process.

mod common;

use common::acp::*;
use serde_json::{json, Value};

fn start(dir: &std::path::Path, config: &std::path::Path, script: &[Value]) -> Acp {
    let mut acp = Acp::start(dir, config, script, &[]).v2_unstable();
    let init = acp.call("initialize", json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}));
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    acp
}

fn new_session(acp: &mut Acp, cwd: &std::path::Path) -> String {
    let new = acp.call("session/new", json!({"cwd": cwd.display().to_string(), "mcpServers": []}));
    new["result"]["sessionId"].as_str().expect("a session id").to_owned()
}

/// Sends a prompt; returns the frames up to and including its run's `idle` update.
fn prompt_to_idle(acp: &mut Acp, session: &str, text: &str) -> Vec<Value> {
    let id = acp.request("session/prompt", prompt(text, session));
    let (mut frames, answer) = acp.until_response(&id);
    assert!(answer.get("result").is_some(), "{answer}");
    let (after, idle) = acp.until(|f| f["params"]["update"]["sessionUpdate"] == "state_update" && f["params"]["update"]["state"] == "idle");
    frames.extend(after);
    frames.push(idle);
    let idle = last_idle(&frames);
    assert_eq!(idle["stopReason"], "end_turn", "{idle}");
    frames
}

/// The update of the last `idle` among `frames`.
fn last_idle(frames: &[Value]) -> Value {
    frames.iter().rev().find(|f| f["params"]["update"]["state"] == "idle").map(|f| f["params"]["update"].clone()).unwrap_or(Value::Null)
}

/// The texts of a replay's user and agent messages, in order (`user:` / `agent:`).
fn replayed(acp: &mut Acp, session: &str, cwd: &std::path::Path) -> Vec<String> {
    let id = acp.request("session/resume", json!({"sessionId": session, "cwd": cwd.display().to_string(), "replayFrom": {"type": "start"}}));
    let (frames, answer) = acp.until_response(&id);
    assert!(answer.get("result").is_some(), "{answer}");
    updates(&frames)
        .iter()
        .filter_map(|u| {
            let who = match u["sessionUpdate"].as_str()? {
                "user_message" => "user",
                "agent_message" => "agent",
                _ => return None,
            };
            let text: String = u["content"].as_array()?.iter().filter_map(|b| b["text"].as_str()).collect();
            Some(format!("{who}:{text}"))
        })
        .collect()
}

fn listed_title(acp: &mut Acp, session: &str) -> Option<String> {
    let list = acp.call("session/list", json!({}));
    let sessions = list["result"]["sessions"].as_array().unwrap_or_else(|| panic!("a listing: {list}"));
    sessions.iter().find(|s| s["sessionId"] == session).and_then(|s| s["title"].as_str()).map(str::to_owned)
}

#[test]
fn the_unstable_capabilities_are_advertised_where_sessions_are_files() {
    let (dir, config) = dirs();
    let mut acp = Acp::start(dir.path(), config.path(), &[], &[]).v2_unstable();
    let init = acp.call("initialize", json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}));
    let session = &init["result"]["capabilities"]["session"];
    assert_eq!((session["fork"].clone(), session["title"].clone()), (json!({}), json!({})), "{init}");
    // Only what works: no system prompts, archive or status.
    for absent in ["systemPrompt", "archive", "status"] {
        assert!(session.get(absent).is_none(), "{absent}: {init}");
    }
    assert!(acp.close().success());
}

#[test]
fn a_fork_has_the_parents_history_and_then_each_goes_its_own_way() {
    let (dir, config) = dirs();
    let script = [json!({"text": "one"}), json!({"text": "two on the fork"}), json!({"text": "two on the source"})];
    let mut acp = start(dir.path(), config.path(), &script);
    let source = new_session(&mut acp, dir.path());
    prompt_to_idle(&mut acp, &source, "first");
    let fork = acp.call("session/fork", json!({"sessionId": source, "cwd": dir.path().display().to_string(), "mcpServers": []}));
    let forked = fork["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("a forked session: {fork}")).to_owned();
    assert_ne!(forked, source);
    assert!(fork["result"]["configOptions"].as_array().is_some_and(|o| !o.is_empty()), "{fork}");
    // Both sessions are live and independent.
    prompt_to_idle(&mut acp, &forked, "second on the fork");
    prompt_to_idle(&mut acp, &source, "second on the source");
    // Forking what does not exist is -32002.
    let missing = acp.call("session/fork", json!({"sessionId": "never", "cwd": dir.path().display().to_string()}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert!(acp.close().success());

    // A new process reads both back from their files.
    let mut acp = start(dir.path(), config.path(), &[]);
    assert_eq!(replayed(&mut acp, &forked, dir.path()), ["user:first", "agent:one", "user:second on the fork", "agent:two on the fork"]);
    assert_eq!(replayed(&mut acp, &source, dir.path()), ["user:first", "agent:one", "user:second on the source", "agent:two on the source"]);
    assert!(acp.close().success());
}

#[test]
fn a_title_is_stored_and_a_new_process_lists_it() {
    let (dir, config) = dirs();
    let mut acp = start(dir.path(), config.path(), &[json!({"text": "hi"})]);
    let session = new_session(&mut acp, dir.path());
    prompt_to_idle(&mut acp, &session, "hello there");
    assert_eq!(listed_title(&mut acp, &session).as_deref(), Some("hello there"), "untitled, a session lists its first message");
    let id = acp.request("session/set_title", json!({"sessionId": session, "title": "  Refactor the parser  "}));
    let (before, answer) = acp.until_response(&id);
    assert_eq!(answer["result"]["title"], "Refactor the parser", "normalized by trimming: {answer}");
    // The live session tells its client.
    assert!(updates(&before).iter().any(|u| u["sessionUpdate"] == "session_info_update" && u["title"] == "Refactor the parser"), "{before:?}");
    let empty = acp.call("session/set_title", json!({"sessionId": session, "title": "   "}));
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    let missing = acp.call("session/set_title", json!({"sessionId": "never", "title": "x"}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert!(acp.close().success());

    // A new process lists the title, and retitles the session without making it active.
    let mut acp = start(dir.path(), config.path(), &[]);
    assert_eq!(listed_title(&mut acp, &session).as_deref(), Some("Refactor the parser"));
    let renamed = acp.call("session/set_title", json!({"sessionId": session, "title": "Parser, take two"}));
    assert_eq!(renamed["result"]["title"], "Parser, take two", "{renamed}");
    acp.no_frame_within(std::time::Duration::from_millis(300));
    assert_eq!(listed_title(&mut acp, &session).as_deref(), Some("Parser, take two"));
    assert!(acp.close().success());
    let mut acp = start(dir.path(), config.path(), &[]);
    assert_eq!(listed_title(&mut acp, &session).as_deref(), Some("Parser, take two"));
    assert!(acp.close().success());
}

#[test]
fn idle_carries_the_tokens_of_the_run_it_ends() {
    let (dir, config) = dirs();
    std::fs::write(dir.path().join("notes.txt"), "a note\n").unwrap();
    let script = [
        json!({"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "notes.txt"}}], "usage": {"input": 10, "output": 3}}),
        json!({"text": "read it", "usage": {"input": 20, "output": 5}}),
        json!({"text": "again", "usage": {"input": 7, "output": 2}}),
    ];
    let mut acp = start(dir.path(), config.path(), &script);
    let session = new_session(&mut acp, dir.path());
    // Two model calls in one run: summed.
    let frames = prompt_to_idle(&mut acp, &session, "read the notes");
    let usage = &last_idle(&frames)["usage"];
    assert_eq!((usage["inputTokens"].as_u64(), usage["outputTokens"].as_u64(), usage["totalTokens"].as_u64()), (Some(30), Some(8), Some(38)), "{usage}");
    // The next run's own, not cumulative.
    let frames = prompt_to_idle(&mut acp, &session, "again");
    let usage = &last_idle(&frames)["usage"];
    assert_eq!((usage["inputTokens"].as_u64(), usage["outputTokens"].as_u64(), usage["totalTokens"].as_u64()), (Some(7), Some(2), Some(9)), "{usage}");
    // A resume's state snapshot is no new work: no usage.
    let id = acp.request("session/resume", json!({"sessionId": session, "cwd": dir.path().display().to_string()}));
    let (frames, _) = acp.until_response(&id);
    let idle = last_idle(&frames);
    assert_eq!(idle["state"], "idle", "{frames:?}");
    assert!(idle.get("usage").is_none(), "{idle}");
    assert!(acp.close().success());
}

#[test]
fn behind_the_bridge_neither_is_offered_and_both_are_refused() {
    use common::bridge::Bridge;
    // A v2 host in front of an agent driven as a remote core: no stored session to copy or name.
    let mut bridge = Bridge::start_acp_versions(agentwire::protocol::acp_v2::acp_v2_validator(), "acp", &[], &["--agent-acp-version", "1"]);
    bridge.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}}));
    let init = bridge.until(|f| f["id"] == 0).pop().unwrap();
    let session = &init["result"]["capabilities"]["session"];
    assert!(session.is_object() && session.get("fork").is_none() && session.get("title").is_none(), "{init}");
    let cwd = bridge.dir.path().display().to_string();
    bridge.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}));
    let id = bridge.until(|f| f["id"] == 1).pop().unwrap()["result"]["sessionId"].as_str().expect("a session").to_owned();
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/fork", "params": {"sessionId": id, "cwd": cwd}}));
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_title", "params": {"sessionId": id, "title": "t"}}));
    for n in [2, 3] {
        let answer = bridge.until(|f| f["id"] == n).pop().unwrap();
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
    }
    drop(bridge.stdin.take());
    assert!(bridge.exit_within(std::time::Instant::now(), std::time::Duration::from_secs(10), "the bridge at host EOF").success());
}
